//! What every role of the host emulator shares: frame constants, the MAC
//! control and RoCEv2 frame readers (the data plane's parser), the kernel
//! receive clock.

use dataplane_common::wire::bth::{self};
use dataplane_common::wire::macctl::MacCtl;

/// EtherType of MAC control frames.
pub const ETH_P_MAC_CONTROL: u16 = 0x8808;

/// RoCEv2 UDP destination port.
pub(crate) const ROCEV2_PORT: u16 = 4791;

pub use dataplane_user::sys::realtime_ns;

/// A MAC control frame (PFC or PAUSE), read by the data plane's own
/// parser; `None` for anything else.
pub(crate) fn mac_ctl(f: &[u8]) -> Option<MacCtl> {
    use dataplane_common::parse::{parse as parse_frame, L3};
    let p = parse_frame(f).ok()?;
    (p.l3 == L3::MacControl).then_some(p.mac_ctl)
}

/// The fields of a RoCEv2 frame over IPv4 the emulator acts on.
pub(crate) struct Seen {
    pub(crate) ecn: u8,
    pub(crate) op: u8,
    pub(crate) qp: u32,
    pub(crate) psn: u32,
    pub(crate) src: [u8; 4],
    pub(crate) sport: u16,
    /// AETH syndrome of an ACK/NAK, else 0.
    pub(crate) syndrome: u8,
    /// Payload bytes after BTH, RETH or AETH, up to the ICRC.
    pub(crate) payload: usize,
    /// A data frame the emulator sent again (its payload is
    /// [`RETX_FILL`], an original's [`ORIGINAL_FILL`]).
    pub(crate) retx: bool,
}

/// The payload byte of an emulated data frame sent the first time.
pub(crate) const ORIGINAL_FILL: u8 = 0x5a;
/// The payload byte of one sent again (go-back-N): the receiver tells a
/// late original (overtaken) from a retransmission.
pub(crate) const RETX_FILL: u8 = 0xa5;

/// A RoCEv2-over-IPv4 frame, read by the data plane's own parser
/// (`dataplane_common::parse`); `None` for anything else, malformed
/// frames included.
pub(crate) fn parse(f: &[u8]) -> Option<Seen> {
    use dataplane_common::parse::{parse as parse_frame, L3};
    let p = parse_frame(f).ok()?;
    if !p.roce || p.l3 != L3::Ipv4 {
        return None;
    }
    let l3 = usize::from(p.l3_off);
    let b = usize::from(p.l4_off) + 8;
    let op = p.bth.opcode;
    let hdr =
        12 + if op == bth::OP_WRITE_FIRST || op == bth::OP_WRITE_ONLY {
            16
        } else {
            0
        } + if op == bth::OP_ACK { 4 } else { 0 };
    let end = (usize::from(p.l4_off) + usize::from(p.ip_payload_len)).min(f.len());
    Some(Seen {
        ecn: p.ecn,
        op,
        qp: p.bth.dest_qp,
        psn: p.bth.psn,
        src: f.get(l3 + 12..l3 + 16)?.try_into().ok()?,
        sport: p.sport,
        syndrome: if op == bth::OP_ACK {
            f.get(b + 12).copied().unwrap_or(0)
        } else {
            0
        },
        payload: end.saturating_sub(b + hdr + 4),
        retx: end > b + hdr + 4 && f.get(b + hdr) == Some(&RETX_FILL),
    })
}

/// AETH syndrome of an ACK with no credit count (0b000_11111).
pub const AETH_ACK: u8 = 0x1f;

/// AETH syndrome of a NAK, PSN sequence error (0b011_00000).
pub const AETH_NAK_SEQ: u8 = 0x60;

/// Largest PSN the emulator uses (PSNs are 24 bits; a run stays below).
pub const PSN_MASK: u32 = 0x00ff_ffff;

/// What every emulated NIC is: its name and interface, addresses, line
/// rate and packet size (the RoCEv2 and the UET hosts add their transport's
/// options to it).
#[derive(Clone, Debug)]
pub struct NicCfg {
    pub name: String,
    pub ifname: String,
    pub mac: [u8; 6],
    pub gw_mac: [u8; 6],
    pub ip: [u8; 4],
    /// Line rate, bit/s (frame bytes without preamble and FCS, as the
    /// switch's buffer model counts them).
    pub line_bps: u64,
    /// Payload bytes per full packet.
    pub mtu_payload: usize,
}

impl NicCfg {
    /// A NIC on `eth0` with 1 KB packets.
    pub fn new(name: &str, mac: [u8; 6], gw_mac: [u8; 6], ip: [u8; 4], line_bps: u64) -> NicCfg {
        NicCfg {
            name: name.into(),
            ifname: "eth0".into(),
            mac,
            gw_mac,
            ip,
            line_bps,
            mtu_payload: 1024,
        }
    }

    /// The NIC of fabric host `h` (its link speed, addresses, gateway).
    pub fn of(h: &crate::topo::HostNode) -> NicCfg {
        NicCfg::new(
            &h.name,
            h.mac,
            h.gw_mac,
            h.ipv4,
            u64::from(h.mbps) * 1_000_000,
        )
    }
}

/// A host NIC's raw socket on `ifname` (calling thread's namespace): its
/// own frames not looped back, and, as root, an 8 MB receive buffer past
/// `net.core.rmem_max` (a host thread held up by the other emulators must
/// not lose frames in its socket).
pub(crate) fn open_nic_socket(ifname: &str) -> anyhow::Result<crate::raw::RawSocket> {
    let sock = crate::raw::RawSocket::open(ifname, libc::ETH_P_ALL as u16, true)?;
    sock.setsockopt_int(libc::SOL_PACKET, libc::PACKET_IGNORE_OUTGOING, 1)?;
    if sock
        .setsockopt_int(libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, 8 << 20)
        .is_err()
    {
        sock.setsockopt_int(libc::SOL_SOCKET, libc::SO_RCVBUF, 8 << 20)?;
    }
    let _ = sock.stats();
    Ok(sock)
}

/// A host's link: received frames are handed to the host at its line rate
/// (serialisation delay, FIFO). The switches' buffer model queues but XDP
/// forwards at once, so what the model queued waits here, as it would
/// have in the switch's queue.
pub(crate) struct LineRx {
    q: std::collections::VecDeque<(u64, Vec<u8>)>,
    free_ns: u64,
    bps: u64,
}

impl LineRx {
    pub(crate) fn new(bps: u64) -> LineRx {
        LineRx {
            q: std::collections::VecDeque::new(),
            free_ns: 0,
            bps: bps.max(1),
        }
    }

    /// Frame `f` arrived at `now`.
    pub(crate) fn push(&mut self, now: u64, f: &[u8]) {
        let ser = (f.len() as u64 * 8 * 1_000_000_000).div_ceil(self.bps);
        self.free_ns = self.free_ns.max(now) + ser;
        self.q.push_back((self.free_ns, f.to_vec()));
    }

    /// The next frame delivered by `now`.
    pub(crate) fn pop(&mut self, now: u64) -> Option<Vec<u8>> {
        if self.q.front().is_some_and(|x| x.0 <= now) {
            return self.q.pop_front().map(|x| x.1);
        }
        None
    }

    /// When the next frame is delivered.
    pub(crate) fn next_due(&self) -> Option<u64> {
        self.q.front().map(|x| x.0)
    }
}
