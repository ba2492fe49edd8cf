//! Map-value layouts of load balancing: size asserts and aya::Pod.

use super::*;

const _: () = assert!(NBUCKETS.is_power_of_two() && NBUCKETS <= 256);
const _: () = assert!(
    DRE_SHIFT == 2 && DRE_MAX_STEPS == 32,
    "dre_decay's factors are powers of 3/4 up to 31 steps"
);
const _: () = assert!(MAX_MEMBERS.is_power_of_two() && MAX_MEMBERS <= 32);
const _: () = assert!(core::mem::size_of::<Member>() == 4);
const _: () = assert!(core::mem::size_of::<Group>() == 8 + 4 * MAX_MEMBERS + NBUCKETS);
const _: () = assert!(core::mem::size_of::<Flowlet>() == 16);
const _: () = assert!(core::mem::size_of::<FlowletSlot>() == 24);
const _: () = assert!(FLOWLET_SLOTS.is_power_of_two());
const _: () = assert!(core::mem::size_of::<PortRate>() == 32);
const _: () = assert!(core::mem::size_of::<FlowWays>() == 24 * FLOW_WAYS);
const _: () = assert!(FLOW_SETS.is_power_of_two());

#[cfg(feature = "user")]
mod pod {
    // SAFETY: repr(C), only integer fields and arrays of integers, no padding
    // (asserted above), every bit pattern valid.
    unsafe impl aya::Pod for super::Member {}
    unsafe impl aya::Pod for super::Group {}
    unsafe impl aya::Pod for super::Flowlet {}
    unsafe impl aya::Pod for super::FlowletSlot {}
    unsafe impl aya::Pod for super::PortRate {}
    unsafe impl aya::Pod for super::FlowWays {}
}
