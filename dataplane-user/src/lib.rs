//! The `dataplane` controller as a library: a validated plan
//! (`dataplane_config`) becomes the eBPF data plane's tables; the lossless
//! control loop (buffer-model timer, PFC emission, watchdog) runs beside
//! it; telemetry reads it back.
//!
//! | module | concern |
//! |---|---|
//! | [`object`] | the eBPF object: load, map layouts, adopt pinned maps |
//! | [`ports`] | planned ports bound to interfaces; the port table |
//! | [`tables`] | plan -> tables: forwarding, groups, and the writer of all |
//! | [`attach`] | attaching through pinned links, pinning, `down` |
//! | [`lossless`] | buffer-model tables and timer, PFC emission, watchdog |
//! | [`telemetry`] | counters, stats, metrics, drop events, watermarks |
//! | [`show`] | `show` / `clear` targets in SONiC's layouts (pure renderers + readers) |
//! | [`dcbx`] | DCBX with the hosts: LLDP sockets, agent thread, state |
//! | [`links`] | link-state notifications (netlink) |
//! | [`routing`] | routes, neighbours, nexthop objects from the kernel (netlink) -> tables |
//! | [`sys`] | interfaces, namespaces, bpffs, the instance lock |
//! | [`probe`] | kernel feature probes and what they mean for a config (`up`, `doctor`) |
//! | [`doctor`] | checks a machine before deploying (`dataplane doctor`) |
//! | [`service`] | the systemd unit and its install (`dataplane install-service`) |
//! | [`log`] | levels, plain or JSON lines |

pub mod attach;
pub mod dcbx;
pub mod doctor;
pub mod links;
pub mod log;
pub mod lossless;
pub mod object;
pub mod ports;
pub mod probe;
pub mod routing;
pub mod service;
pub mod show;
pub mod sys;
pub mod tables;
pub mod telemetry;

pub use telemetry::snapshot::snapshot;
