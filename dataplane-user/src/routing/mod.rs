//! Routes from the kernel: with `[routing] source = "kernel"` the
//! controller follows one kernel table's IPv4/IPv6 routes, the neighbour
//! table and nexthop objects over netlink (a dump at start, then events)
//! and writes them into the data plane's tables.
//!
//! | module | concern |
//! |---|---|
//! | [`kernel`] | the kernel's state as plain data (routes, neighbours, nexthop objects) |
//! | [`decode`] | netlink bytes -> events (never panics; malformed messages counted) |
//! | [`rib`] | the controller's mirror of the kernel |
//! | [`want`] | pure mapping: kernel state + ports + policy -> routes, next hops, groups |
//! | [`tables`] | ids, values and the ordered difference (no dangling reference) |
//! | [`sync`] | the sync engine: events in, table writes out, local repair, listing |
//! | [`netlink`] | the NETLINK_ROUTE socket: dumps, event groups |
//! | [`writer`] | the eBPF maps as a [`sync::Writer`] |
//! | [`export`] | learned routes as plan entries (`dataplane p4 entries --learned`) |
//! | [`run`] | the sync in the running controller; the listing for `dataplane routes` |

pub mod decode;
pub mod export;
pub mod kernel;
pub mod netlink;
pub mod rib;
pub mod run;
pub mod sync;
pub mod tables;
pub mod want;
pub mod writer;

pub use sync::{Listing, RouteSync, Writer};

/// Where a running controller leaves its routes for `dataplane routes`.
pub fn listing_path(instance: &str) -> std::path::PathBuf {
    std::path::Path::new(crate::sys::RUN_DIR).join(format!("{instance}.routes.json"))
}
