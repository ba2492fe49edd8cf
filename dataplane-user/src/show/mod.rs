//! `dataplane show <target>`: one pure renderer per target (data in, a
//! table and JSON out).

pub mod dcbx;
