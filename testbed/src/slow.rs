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
