//! What the controller reports: counters read from the pins, stats
//! tables, Prometheus metrics, drop events, watermarks.

pub mod btf;
pub mod counters;
pub mod events;
pub mod metrics;
pub mod netdev;
pub mod serve;
pub mod snapshot;
pub mod stats;
pub mod watermarks;
pub mod xmit;
