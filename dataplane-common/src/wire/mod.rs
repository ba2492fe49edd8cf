//! Wire formats, one file per protocol.
//!
//! Every reader goes through [`Packet::read`], which returns `None` when the
//! frame is shorter than the bytes asked for. Nothing here indexes a slice
//! directly, so nothing here can panic; the eBPF implementation of [`Packet`]
//! compares against `data_end` before every load, which is what the verifier
//! needs to see.

pub mod bth;
pub mod dcbx;
pub mod ethernet;
pub mod farnote;
pub mod ipv4;
pub mod ipv6;
pub mod lldp;
pub mod macctl;
pub mod tlv;
pub mod udp;
pub mod uet;

/// A frame that can be read at byte offsets.
pub trait Packet {
    /// Length of the frame in bytes.
    fn len(&self) -> usize;

    /// True for an empty frame.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `N` bytes at `off`, or `None` when the frame ends before `off + N`.
    fn read<const N: usize>(&self, off: usize) -> Option<[u8; N]>;

    /// One byte at `off`.
    #[inline(always)]
    #[allow(clippy::manual_map)] // explicit match: simplest code for the verifier
    fn u8_at(&self, off: usize) -> Option<u8> {
        match self.read::<1>(off) {
            Some(b) => Some(b[0]),
            None => None,
        }
    }

    /// A big-endian 16-bit field at `off`.
    #[inline(always)]
    #[allow(clippy::manual_map)]
    fn be16_at(&self, off: usize) -> Option<u16> {
        match self.read::<2>(off) {
            Some(b) => Some(u16::from_be_bytes(b)),
            None => None,
        }
    }
}

/// A frame that can also be written at byte offsets.
pub trait PacketMut: Packet {
    /// Writes `bytes` at `off`; false (nothing written) when the frame ends
    /// before `off + N`.
    fn write<const N: usize>(&mut self, off: usize, bytes: &[u8; N]) -> bool;
}

impl PacketMut for [u8] {
    #[inline(always)]
    fn write<const N: usize>(&mut self, off: usize, bytes: &[u8; N]) -> bool {
        let Some(end) = off.checked_add(N) else {
            return false;
        };
        match self.get_mut(off..end) {
            Some(d) => {
                d.copy_from_slice(bytes);
                true
            }
            None => false,
        }
    }
}

impl Packet for [u8] {
    #[inline(always)]
    fn len(&self) -> usize {
        <[u8]>::len(self)
    }

    #[inline(always)]
    fn read<const N: usize>(&self, off: usize) -> Option<[u8; N]> {
        let end = off.checked_add(N)?;
        let bytes = self.get(off..end)?;
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        Some(out)
    }
}

/// One's-complement sum helpers for incremental checksum updates (RFC 1624).
pub mod csum {
    /// Folds a 32-bit one's-complement accumulator to 16 bits.
    #[inline(always)]
    pub fn fold(mut sum: u32) -> u16 {
        sum = (sum & 0xffff) + (sum >> 16);
        sum = (sum & 0xffff) + (sum >> 16);
        sum as u16
    }

    /// Full Internet checksum of `data` (even or odd length).
    pub fn internet(data: &[u8]) -> u16 {
        let mut sum: u32 = 0;
        let mut chunks = data.chunks_exact(2);
        for c in &mut chunks {
            sum += u32::from(u16::from_be_bytes([c[0], c[1]]));
        }
        if let [last] = chunks.remainder() {
            sum += u32::from(u16::from_be_bytes([*last, 0]));
        }
        !fold(sum)
    }

    /// RFC 1624 eqn. 3: new checksum after a 16-bit field changed from `old`
    /// to `new`.
    #[inline(always)]
    pub fn update16(check: u16, old: u16, new: u16) -> u16 {
        let sum = u32::from(!check) + u32::from(!old) + u32::from(new);
        !fold(sum)
    }
}
