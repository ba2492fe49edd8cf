//! The slow-machine factor: `DATAPLANE_TEST_SLOW` (a number of at least
//! 1, default 1) scales the waits of timing-sensitive tests. `cargo xtask
//! test --kernel` sets it inside the emulated guest (TCG runs the kernel
//! and the tests several times slower than the host), so a test waits
//! longer there instead of being skipped; the checks do not change.

use std::time::Duration;

/// The environment variable the tests read.
pub const ENV: &str = "DATAPLANE_TEST_SLOW";

/// The factor from `DATAPLANE_TEST_SLOW`; 1 when unset. A value that is not
/// a number >= 1 is a panic naming it (a typo must not shorten waits).
pub fn factor() -> f64 {
    match std::env::var(ENV) {
        Err(_) => 1.0,
        Ok(v) => match v.trim().parse::<f64>() {
            Ok(f) if f >= 1.0 && f.is_finite() => f,
            _ => panic!("{ENV}={v:?}: expected a number >= 1 (the slow-machine factor)"),
        },
    }
}

/// `d` scaled by the slow-machine factor.
pub fn scaled(d: Duration) -> Duration {
    d.mul_f64(factor())
}

/// A link speed of `mbps` Mb/s on a machine the slow-machine factor
/// describes: divided by it (at least 1 Mb/s). An emulated guest delivers
/// frames to a veth's receiver several times slower than the host, so at
/// the host's speeds a burst overflows the veth's ring (failed XDP
/// transmits: loss the data plane counts, not a PFC failure); at speeds
/// divided by the factor the fabric runs as on the host, in stretched time.
pub fn rate_mbps(mbps: u32) -> u32 {
    ((f64::from(mbps) / factor()).round() as u32).max(1)
}
