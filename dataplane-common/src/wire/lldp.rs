//! IEEE 802.1AB LLDP: the LLDPDU's TLV chain, its mandatory TLVs, and the
//! frame the controller sends (with the 802.1Qaz DCBX TLVs of
//! [`super::dcbx`]).
//!
//! ```text
//! Ethernet: dst 01:80:C2:00:00:0E | src | 0x88CC
//! TLV:      type (7 bits) | length (9 bits) | value (length bytes)
//! LLDPDU:   Chassis ID (1) | Port ID (2) | TTL (3) | optional TLVs ... | End (0)
//! ```
//!
//! Decoding follows 802.1AB's receive rules: a frame whose TLV chain does
//! not hold together (a TLV running past the end of the frame, a missing or
//! malformed mandatory TLV) is discarded whole with an [`LldpError`]; a
//! malformed optional TLV is discarded alone and counted in
//! [`Lldpdu::tlv_errors`] by its [`TlvError`]; a TLV we do not know is
//! skipped and counted in [`Lldpdu::unrecognized`]. Every read is
//! length-checked first; nothing here indexes out of bounds or panics.

use super::dcbx::{self, Dcbx, OrgReject, TlvError, TLV_ERROR_COUNT};
pub use super::tlv::{Writer, MAX_TLV, TLV_ORG};
use super::{ethernet as eth, Packet};

/// EtherType of LLDP.
pub const ETHERTYPE: u16 = 0x88cc;
/// Nearest-bridge group address: the one DCBX uses (never forwarded by a
/// bridge).
pub const DST_MAC: [u8; 6] = [0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e];

pub const TLV_END: u8 = 0;
pub const TLV_CHASSIS_ID: u8 = 1;
pub const TLV_PORT_ID: u8 = 2;
pub const TLV_TTL: u8 = 3;
pub const TLV_PORT_DESC: u8 = 4;
pub const TLV_SYSTEM_NAME: u8 = 5;
pub const TLV_SYSTEM_DESC: u8 = 6;
pub const TLV_SYSTEM_CAPS: u8 = 7;
pub const TLV_MGMT_ADDR: u8 = 8;

/// Chassis ID subtype "MAC address".
pub const CHASSIS_MAC: u8 = 4;
/// Port ID subtype "interface name".
pub const PORT_IFNAME: u8 = 5;

/// Longest ID or name string a TLV carries (chassis/port ID: 1..=255 bytes
/// after the subtype).
pub const MAX_ID: usize = 255;

/// Why a whole LLDPDU was discarded. The discriminant indexes counters:
/// never reorder, only append.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LldpError {
    /// Shorter than the Ethernet header, or its EtherType is not 0x88CC.
    NotLldp = 0,
    /// Fewer than the 2 bytes of a TLV header where one should start.
    TlvHeaderTruncated = 1,
    /// A TLV's length runs past the end of the frame.
    TlvBeyondFrame = 2,
    /// The first TLV is not a Chassis ID.
    NoChassisId = 3,
    /// Chassis ID length outside 2..=256.
    BadChassisId = 4,
    /// The second TLV is not a Port ID.
    NoPortId = 5,
    /// Port ID length outside 2..=256.
    BadPortId = 6,
    /// The third TLV is not a TTL.
    NoTtl = 7,
    /// TTL length other than 2.
    BadTtl = 8,
}

/// Counters per [`LldpError`] (room to append).
pub const LLDP_ERROR_COUNT: usize = 12;
const _: () = assert!(LldpError::ALL.len() <= LLDP_ERROR_COUNT);

impl LldpError {
    pub const ALL: [LldpError; 9] = [
        LldpError::NotLldp,
        LldpError::TlvHeaderTruncated,
        LldpError::TlvBeyondFrame,
        LldpError::NoChassisId,
        LldpError::BadChassisId,
        LldpError::NoPortId,
        LldpError::BadPortId,
        LldpError::NoTtl,
        LldpError::BadTtl,
    ];

    /// Stable snake_case name (metrics label, `show dcbx`).
    pub const fn name(self) -> &'static str {
        match self {
            LldpError::NotLldp => "not_lldp",
            LldpError::TlvHeaderTruncated => "tlv_header_truncated",
            LldpError::TlvBeyondFrame => "tlv_beyond_frame",
            LldpError::NoChassisId => "no_chassis_id",
            LldpError::BadChassisId => "bad_chassis_id",
            LldpError::NoPortId => "no_port_id",
            LldpError::BadPortId => "bad_port_id",
            LldpError::NoTtl => "no_ttl",
            LldpError::BadTtl => "bad_ttl",
        }
    }
}

/// An ID TLV (chassis, port) or a name string: subtype and up to 255
/// bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Id {
    /// Chassis/port ID subtype; 0 for a plain string (system name).
    pub subtype: u8,
    len: u8,
    bytes: [u8; MAX_ID],
}

impl Default for Id {
    fn default() -> Self {
        Id::EMPTY
    }
}

impl Id {
    pub const EMPTY: Id = Id {
        subtype: 0,
        len: 0,
        bytes: [0; MAX_ID],
    };

    /// `subtype` and the first 255 bytes of `b`.
    pub fn new(subtype: u8, b: &[u8]) -> Id {
        let mut id = Id {
            subtype,
            ..Id::EMPTY
        };
        let n = b.len().min(MAX_ID);
        id.bytes[..n].copy_from_slice(&b[..n]);
        id.len = n as u8;
        id
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A decoded LLDPDU: the mandatory TLVs, the system name, the DCBX TLVs,
/// and what was discarded on the way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lldpdu {
    pub chassis: Id,
    pub port: Id,
    /// Seconds the peer's information stays valid (0: the peer shuts down).
    pub ttl: u16,
    /// System Name TLV (empty when absent).
    pub system_name: Id,
    pub dcbx: Dcbx,
    /// Optional TLVs discarded as malformed, by [`TlvError`].
    pub tlv_errors: [u16; TLV_ERROR_COUNT],
    /// TLVs skipped as unknown (type, OUI or subtype).
    pub unrecognized: u16,
}

impl Default for Lldpdu {
    fn default() -> Self {
        Lldpdu {
            chassis: Id::EMPTY,
            port: Id::EMPTY,
            ttl: 0,
            system_name: Id::EMPTY,
            dcbx: Dcbx::default(),
            tlv_errors: [0; TLV_ERROR_COUNT],
            unrecognized: 0,
        }
    }
}

impl Lldpdu {
    /// Counts a discarded optional TLV.
    pub fn count(&mut self, e: TlvError) {
        let c = &mut self.tlv_errors[e as usize];
        *c = c.saturating_add(1);
    }

    /// Optional TLVs discarded in this LLDPDU.
    pub fn discarded(&self) -> u32 {
        self.tlv_errors.iter().map(|&c| u32::from(c)).sum()
    }
}

/// One TLV of the chain: type, value offset in the frame, value length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tlv {
    pub kind: u8,
    pub off: usize,
    pub len: usize,
}

/// The TLV starting at `off`, length-checked against the frame.
pub fn tlv_at<P: Packet + ?Sized>(p: &P, off: usize) -> Result<Tlv, LldpError> {
    let Some(h) = p.be16_at(off) else {
        return Err(LldpError::TlvHeaderTruncated);
    };
    let t = Tlv {
        kind: (h >> 9) as u8,
        off: off + 2,
        len: usize::from(h & 0x1ff),
    };
    if t.off + t.len > p.len() {
        return Err(LldpError::TlvBeyondFrame);
    }
    Ok(t)
}

/// Decodes an LLDP frame (Ethernet header included).
pub fn decode(frame: &[u8]) -> Result<Lldpdu, LldpError> {
    if frame.be16_at(eth::ETHERTYPE_OFF) != Some(ETHERTYPE) {
        return Err(LldpError::NotLldp);
    }
    let mut du = Lldpdu::default();
    let mut off = eth::HEADER_LEN;
    du.chassis = id_tlv(frame, &mut off, TLV_CHASSIS_ID)
        .map_err(|e| e.unwrap_or(LldpError::NoChassisId))?
        .ok_or(LldpError::BadChassisId)?;
    du.port = id_tlv(frame, &mut off, TLV_PORT_ID)
        .map_err(|e| e.unwrap_or(LldpError::NoPortId))?
        .ok_or(LldpError::BadPortId)?;
    let t = tlv_at(frame, off)?;
    if t.kind != TLV_TTL {
        return Err(LldpError::NoTtl);
    }
    let Some(ttl) = frame.be16_at(t.off).filter(|_| t.len == 2) else {
        return Err(LldpError::BadTtl);
    };
    du.ttl = ttl;
    off = t.off + t.len;
    // optional TLVs up to End (or the end of the frame)
    while off < frame.len() {
        let t = tlv_at(frame, off)?;
        off = t.off + t.len;
        let Some(value) = frame.get(t.off..off) else {
            return Err(LldpError::TlvBeyondFrame);
        };
        match t.kind {
            TLV_END => break,
            TLV_SYSTEM_NAME => du.system_name = Id::new(0, value),
            TLV_PORT_DESC | TLV_SYSTEM_DESC | TLV_SYSTEM_CAPS | TLV_MGMT_ADDR => {}
            TLV_ORG => match dcbx::decode_org(value, &mut du.dcbx) {
                Ok(()) => {}
                Err(OrgReject::Unrecognized) => du.unrecognized = du.unrecognized.saturating_add(1),
                Err(OrgReject::Invalid(e, n)) => (0..n).for_each(|_| du.count(e)),
            },
            // a repeated mandatory TLV or a reserved type
            _ => du.unrecognized = du.unrecognized.saturating_add(1),
        }
    }
    dcbx::drop_duplicates(&mut du.dcbx);
    Ok(du)
}

/// The ID TLV of `kind` at `*off`: `Err(None)` when the TLV there is of
/// another kind, `Ok(None)` when its length is outside 2..=256.
fn id_tlv(frame: &[u8], off: &mut usize, kind: u8) -> Result<Option<Id>, Option<LldpError>> {
    let t = tlv_at(frame, *off).map_err(Some)?;
    if t.kind != kind {
        return Err(None);
    }
    *off = t.off + t.len;
    if !(2..=MAX_ID + 1).contains(&t.len) {
        return Ok(None);
    }
    match frame.get(t.off..t.off + t.len) {
        Some([subtype, rest @ ..]) => Ok(Some(Id::new(*subtype, rest))),
        _ => Ok(None),
    }
}

/// Largest frame [`encode`] writes (a full application table included).
pub const MAX_FRAME: usize = 1514;
/// Minimum Ethernet frame without FCS (the frame is zero-padded to it;
/// zero bytes read as End TLVs).
pub const MIN_FRAME: usize = 60;

/// Writes the LLDP frame of `du` from `src` into `buf`: Ethernet header,
/// Chassis ID, Port ID, TTL, System Name (when set), the DCBX TLVs that
/// are present, End. Returns the frame's length, or `None` when `buf` is
/// too small. ([`decode`] of the result gives `du` back, counts aside.)
pub fn encode(du: &Lldpdu, src: [u8; 6], buf: &mut [u8]) -> Option<usize> {
    let mut w = Writer::new(buf);
    w.put(&DST_MAC);
    w.put(&src);
    w.put(&ETHERTYPE.to_be_bytes());
    for (kind, id) in [(TLV_CHASSIS_ID, &du.chassis), (TLV_PORT_ID, &du.port)] {
        w.header(kind, 1 + id.as_bytes().len());
        w.put(&[id.subtype]);
        w.put(id.as_bytes());
    }
    w.tlv(TLV_TTL, &du.ttl.to_be_bytes());
    if !du.system_name.is_empty() {
        w.tlv(TLV_SYSTEM_NAME, du.system_name.as_bytes());
    }
    dcbx::encode_tlvs(&du.dcbx, &mut w);
    w.tlv(TLV_END, &[]);
    w.pad_to(MIN_FRAME);
    w.finish()
}
