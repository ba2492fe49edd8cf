//! Network-namespace test fabrics.
//!
//! Every namespace is created by a guard and removed when the guard drops,
//! on success, failure and panic; a namespace left by a killed run (its
//! creator's pid is gone) is removed by the next run. Names are
//! `dpt-<tag>-<pid>` so they never collide with anything the host owns.
//! Addresses come from 198.18.0.0/15 and 2001:db8::/32 only.

pub mod controller;
pub mod fabric;
pub mod host;
pub mod lbfabric;
pub mod netns;
pub mod pins;
pub mod plot;
pub mod raw;
pub mod rocehost;
pub mod scenario;
pub mod scenes;
pub mod topo;
