//! MAC control frames (EtherType 0x8808): IEEE 802.1Qbb priority flow
//! control and IEEE 802.3x PAUSE.
//!
//! ```text
//! PFC:   opcode 0x0101 | class-enable vector (16) | time[0..8] (8 x 16)
//! PAUSE: opcode 0x0001 | time (16)
//! ```
//! Padded to the 60-byte minimum frame (64 with FCS).

pub const OPCODE_PAUSE: u16 = 0x0001;
pub const OPCODE_PFC: u16 = 0x0101;
/// Reserved multicast address for MAC control frames.
pub const DST_MAC: [u8; 6] = [0x01, 0x80, 0xc2, 0x00, 0x00, 0x01];
/// Bytes after the Ethernet header a PFC frame needs: opcode, vector, 8 times.
pub const PFC_LEN: usize = 2 + 2 + 16;
/// Bytes after the Ethernet header a PAUSE frame needs: opcode, time.
pub const PAUSE_LEN: usize = 2 + 2;
/// Minimum frame without FCS.
pub const MIN_FRAME: usize = 60;

/// A decoded MAC control frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MacCtl {
    pub opcode: u16,
    /// PFC: class-enable vector (bit i = priority i). PAUSE: 0.
    pub class_enable: u16,
    /// PFC: pause time per priority in quanta. PAUSE: `times[0]` only.
    pub times: [u16; 8],
}

impl MacCtl {
    #[inline(always)]
    pub fn is_pfc(&self) -> bool {
        self.opcode == OPCODE_PFC
    }

    #[inline(always)]
    pub fn is_pause(&self) -> bool {
        self.opcode == OPCODE_PAUSE
    }

    /// What this frame asks of priority `prio` (0..8), in quanta: a PFC
    /// frame's time for it when its class-enable bit is set, a PAUSE
    /// frame's one time for every priority; `None` when it does not
    /// concern `prio`. 0 quanta is XON. (The switch's PFC reception and the
    /// lab's hosts both honour frames by this.)
    #[inline(always)]
    pub fn quanta_for_prio(&self, prio: usize) -> Option<u16> {
        let prio = prio & 7;
        if self.is_pfc() {
            if self.class_enable & (1 << prio) != 0 {
                Some(self.times[prio])
            } else {
                None
            }
        } else if self.is_pause() {
            Some(self.times[0])
        } else {
            None
        }
    }
}

/// Pause quanta (512 bit times each) that cover `nanos` at `speed_mbps`,
/// rounded up and capped at 65535.
pub fn quanta_for(nanos: u64, speed_mbps: u64) -> u16 {
    // one quantum = 512 bits / (speed_mbps * 1e6 bit/s) = 512_000 / speed_mbps ns
    if speed_mbps == 0 {
        return u16::MAX;
    }
    let q = nanos.saturating_mul(speed_mbps).div_ceil(512_000);
    if q > u64::from(u16::MAX) {
        u16::MAX
    } else {
        q as u16
    }
}

/// Duration in nanoseconds of `quanta` pause quanta at `speed_mbps`.
pub fn quanta_to_nanos(quanta: u16, speed_mbps: u64) -> u64 {
    if speed_mbps == 0 {
        return 0;
    }
    u64::from(quanta) * 512_000 / speed_mbps
}

/// EtherType of MAC control frames.
pub const ETHERTYPE: u16 = 0x8808;

/// The whole 60-byte 802.1Qbb frame (no FCS) from `src`: destination
/// [`DST_MAC`], EtherType 0x8808, opcode 0x0101, `class_enable`, the eight
/// pause times, zero padding. The one writer of PFC frames: the data
/// plane's emitters (devmap program, timer program) and the controller's
/// AF_PACKET fallback all send these bytes.
#[inline(always)]
pub fn pfc_frame_bytes(src: [u8; 6], class_enable: u16, times: [u16; 8]) -> [u8; MIN_FRAME] {
    let mut f = [0u8; MIN_FRAME];
    let mut i = 0;
    while i < 6 {
        f[i] = DST_MAC[i];
        f[6 + i] = src[i];
        i += 1;
    }
    let et = ETHERTYPE.to_be_bytes();
    f[12] = et[0];
    f[13] = et[1];
    let op = OPCODE_PFC.to_be_bytes();
    f[14] = op[0];
    f[15] = op[1];
    let ce = class_enable.to_be_bytes();
    f[16] = ce[0];
    f[17] = ce[1];
    let mut p = 0;
    while p < 8 {
        let t = times[p].to_be_bytes();
        f[18 + 2 * p] = t[0];
        f[19 + 2 * p] = t[1];
        p += 1;
    }
    f
}

/// The frame of one PFC decision: class-enable bit `prio` set, its pause
/// time `quanta` (0 = XON), every other time 0.
#[inline(always)]
pub fn pfc_decision_frame(src: [u8; 6], prio: u8, quanta: u16) -> [u8; MIN_FRAME] {
    let prio = (prio & 7) as usize;
    let mut times = [0u16; 8];
    times[prio] = quanta;
    pfc_frame_bytes(src, 1 << prio, times)
}
