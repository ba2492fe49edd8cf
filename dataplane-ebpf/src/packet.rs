//! Bounds-checked reads of the frame an XDP program sees.

use aya_ebpf::programs::XdpContext;
use dataplane_common::wire::{Packet, PacketMut};

/// The frame between `data` and `data_end`.
pub struct XdpPacket {
    start: usize,
    end: usize,
}

impl XdpPacket {
    #[inline(always)]
    pub fn new(ctx: &XdpContext) -> Self {
        XdpPacket {
            start: ctx.data(),
            end: ctx.data_end(),
        }
    }

    /// Writes `bytes` at `off`; false (nothing written) when the frame is
    /// shorter than `off + N`.
    #[inline(always)]
    pub fn write<const N: usize>(&self, off: usize, bytes: &[u8; N]) -> bool {
        let p = self.start + (off & 0x3ff);
        if p + N > self.end {
            return false;
        }
        // SAFETY: [p, p + N) lies inside the frame, checked just above.
        unsafe { core::ptr::write_unaligned(p as *mut [u8; N], *bytes) };
        true
    }

    /// The address of the frame's first byte.
    #[inline(always)]
    pub fn start(&self) -> usize {
        self.start
    }

    /// Frame length for byte counters.
    #[inline(always)]
    pub fn frame_len(&self) -> u64 {
        (self.end - self.start) as u64
    }
}

impl PacketMut for XdpPacket {
    #[inline(always)]
    fn write<const N: usize>(&mut self, off: usize, bytes: &[u8; N]) -> bool {
        XdpPacket::write(self, off, bytes)
    }
}

impl Packet for XdpPacket {
    #[inline(always)]
    fn len(&self) -> usize {
        self.end - self.start
    }

    #[inline(always)]
    fn read<const N: usize>(&self, off: usize) -> Option<[u8; N]> {
        // Offsets come from header fields masked to small ranges; the mask
        // keeps the verifier's view of the offset bounded as well.
        let p = self.start + (off & 0x3ff);
        if p + N > self.end {
            return None;
        }
        // SAFETY: [p, p + N) lies inside the frame, checked just above.
        Some(unsafe { core::ptr::read_unaligned(p as *const [u8; N]) })
    }
}
