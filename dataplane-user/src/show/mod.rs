//! `dataplane show ...`: SONiC's show layouts (sonic-utilities), one file
//! per target, each a pure renderer.

pub mod pfcwd;
