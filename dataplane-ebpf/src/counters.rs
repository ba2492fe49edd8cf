//! The lossless counters per port (per CPU), which the buffer model, the
//! PFC sender and the trimmer all count into.

use aya_ebpf::{macros::map, maps::PerCpuArray};
use dataplane_common::{buffer::LosslessCounters, maps::MAX_PORTS};

/// Lossless counters per port (per CPU).
#[map]
static LOSSLESS_COUNTERS: PerCpuArray<LosslessCounters> =
    PerCpuArray::with_max_entries(MAX_PORTS, 0);

/// Port `port`'s counters on this CPU.
#[inline(always)]
pub(crate) fn lossless(port: u16) -> Option<&'static mut LosslessCounters> {
    // SAFETY: per-CPU slot, only this program on this CPU touches it.
    LOSSLESS_COUNTERS
        .get_ptr_mut(u32::from(port))
        .map(|p| unsafe { &mut *p })
}
