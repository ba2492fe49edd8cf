//! The event queue: the timing wheel (`WheelQueue`) gives events in the
//! radix heap's order (`RadixQueue`, which the simulator used before):
//! earliest first, the last pushed first at one time; near the clock, far
//! beyond the wheel's span, in bursts at one instant and interleaved with
//! pops, and pops bounded by a window's end.

use dataplane_common::rand::SplitMix64;
use dataplane_sim::queue::RadixQueue;
use dataplane_sim::wheel::{WheelQueue, SPAN};

#[test]
fn wheel_pops_in_the_radix_heaps_order() {
    for seed in 1..=4u64 {
        let mut rng = SplitMix64(seed);
        let mut wheel = WheelQueue::new();
        let mut radix = RadixQueue::new();
        let mut now = 0u64;
        let mut id = 0u64;
        let mut popped = 0;
        for step in 0..200_000 {
            let r = rng.next_u64();
            if r % 100 < 52 || wheel.is_empty() {
                // a push: at the clock (ties), just ahead, about a link's
                // delay, at the wheel's edge, or far beyond it
                let ahead = match (r >> 8) % 8 {
                    0 | 1 => 0,
                    2 | 3 => (r >> 16) % 64,
                    4 => 1000 + (r >> 16) % 100,
                    5 => SPAN - 2 + (r >> 16) % 4,
                    6 => SPAN + (r >> 16) % 100_000,
                    _ => (r >> 16) % 8,
                };
                wheel.push(now + ahead, id);
                radix.push(now + ahead, id);
                id += 1;
            } else if r % 100 < 76 {
                // what the engine prefetches is what it pops next
                let near = wheel.peek_near();
                let (a, b) = (wheel.pop(), radix.pop());
                assert_eq!(a, b, "seed {seed} step {step}");
                if let Some(v) = near {
                    assert_eq!(a.map(|e| e.1), Some(v), "seed {seed} step {step}");
                }
                now = a.expect("not empty").0;
                popped += 1;
            } else {
                // a partition's window: the earliest only if before `end`
                let end = now + (r >> 8) % (2 * SPAN);
                let next = wheel.peek_time().expect("not empty");
                match wheel.pop_before(end) {
                    Some(a) => {
                        assert!(next < end && a.0 == next, "seed {seed} step {step}");
                        assert_eq!(Some(a), radix.pop(), "seed {seed} step {step}");
                        now = a.0;
                        popped += 1;
                    }
                    None => assert!(next >= end, "seed {seed} step {step}: {next} < {end}"),
                }
            }
            assert_eq!(wheel.len(), radix.len());
        }
        while let Some(b) = radix.pop() {
            assert_eq!(wheel.pop(), Some(b), "seed {seed} draining");
            popped += 1;
        }
        assert!(wheel.is_empty() && wheel.pop().is_none());
        assert_eq!(popped, id);
    }
}
