//! The lossless stage: egress queue model, WRED/ECN, ingress accounting,
//! PFC generation, headroom, PFC watchdog.
#![cfg(feature = "user")]

#[path = "../common/mod.rs"]
mod common;

use common::*;
use dataplane_common::build::{self, Ip};
use dataplane_common::lossless::*;
use dataplane_common::rand::XorShift32;
use dataplane_common::wire::{csum, ipv4, ipv6, macctl};

const G100: u32 = 100_000;
const G25: u32 = 25_000;
const G800: u32 = 800_000;

fn queue_with(slots: &[(usize, u32)]) -> EgressQueue {
    let mut q = EgressQueue::ZERO;
    for &(s, b) in slots {
        assert_eq!(q.enqueue(s, b), b);
    }
    q
}

fn drain(q: &mut EgressQueue, now: u64, speed: u32) -> (u32, [u32; MODEL_PORTS]) {
    let mut rel = [0xdead_beef; MODEL_PORTS];
    let d = q.drain(now, speed, &mut rel);
    (d, rel)
}

fn assert_invariant(q: &EgressQueue) {
    let sum: u64 = q.ingress.iter().map(|&b| u64::from(b)).sum();
    assert_eq!(u64::from(q.bytes), sum, "bytes == sum of ingress slots");
}

mod queue;

mod release;

mod wred;

mod ce;

fn lossless_profile() -> BufferProfile {
    BufferProfile {
        size: 1000,
        xon: 0,
        xoff: 5000,
        xon_offset: DEFAULT_XON_OFFSET,
        static_th: 0,
        dynamic_th: 0,
        mode: TH_DYNAMIC,
        lossless: 1,
        _pad: 0,
    }
}

mod ingress;

mod pfc;

mod headroom_calc;

mod watchdog;

#[test]
fn layouts() {
    use core::mem::size_of;
    assert_eq!(size_of::<EgressQueue>(), 104);
    assert_eq!(size_of::<WredProfile>(), 12);
    assert_eq!(size_of::<BufferProfile>(), 24);
    assert_eq!(size_of::<SharedPool>(), 8);
    assert_eq!(size_of::<PgState>(), 16);
    assert_eq!(size_of::<PfcTxState>(), 24);
    assert_eq!(size_of::<PfcWdConfig>(), 12);
    assert_eq!(size_of::<PfcWd>(), 32);
}

mod watermark;
