//! The one reason table: why a frame left the plain forwarding path.
//!
//! One code space (a `u8`) for counters, drop events, metric names, the P4
//! programs' CPU and drop codes and the conformance corpus:
//!
//! | codes | meaning |
//! |-------|---------|
//! | 0..16 | malformed: the [`ParseError`] of that value (`malformed.<name>`) |
//! | 16..32 | handed to the kernel (XDP_PASS / P4 CPU port) |
//! | 32..40 | dropped by forwarding |
//! | 40..48 | dropped by the buffer model or the PFC watchdog |
//!
//! Codes are stable and the table is append-only, like [`ParseError`]: a
//! value, once given, keeps its meaning and name.

use crate::parse::{ParseError, PARSE_ERROR_COUNT};

/// A reason that is not a parse error (those are [`ParseError`], codes
/// 0..[`PARSE_ERROR_COUNT`]).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// Classified, then handed to the kernel: the port does not forward.
    Classified = 16,
    /// Not a port of this data plane (P4: no port entry).
    UnknownPort = 17,
    /// Not IPv4/IPv6 (ARP, LLDP, QinQ, ...).
    NotIp = 18,
    /// Not addressed to the ingress port's MAC.
    NotForUs = 19,
    /// TTL / hop limit would expire (the kernel answers with ICMP).
    TtlExpired = 20,
    /// Addressed to the switch itself.
    Local = 21,
    /// An 802.3x/802.1Qbb MAC-control frame, consumed by the port.
    MacControl = 22,
    /// The next hop's neighbour (ARP/ND) is not resolved yet: the kernel
    /// routes the frame and resolves it.
    Unresolved = 23,
    /// No route for the destination.
    NoRoute = 32,
    /// The route's group has no live member.
    NoLiveMember = 33,
    /// The next hop is not usable (unknown, or its port is not ours).
    NoNeighbour = 34,
    /// The redirect to the egress port failed (not in the devmap).
    RedirectFailed = 35,
    /// WRED dropped it (non-ECT, above the drop curve).
    Wred = 40,
    /// The shared buffer is full (lossy queue).
    SharedBufferFull = 41,
    /// Lossless priority group past its headroom.
    HeadroomExhausted = 42,
    /// The PFC watchdog drops a storming lossless queue's traffic.
    PfcWatchdog = 43,
}

const _: () = assert!(PARSE_ERROR_COUNT <= Reason::Classified as usize);

impl Reason {
    /// Every reason, in code order.
    pub const ALL: [Reason; 16] = [
        Reason::Classified,
        Reason::UnknownPort,
        Reason::NotIp,
        Reason::NotForUs,
        Reason::TtlExpired,
        Reason::Local,
        Reason::MacControl,
        Reason::Unresolved,
        Reason::NoRoute,
        Reason::NoLiveMember,
        Reason::NoNeighbour,
        Reason::RedirectFailed,
        Reason::Wred,
        Reason::SharedBufferFull,
        Reason::HeadroomExhausted,
        Reason::PfcWatchdog,
    ];

    /// The code (`u8`) carried by events, P4 headers and counters.
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// Stable snake_case name (stats, metrics labels, events, the corpus).
    pub const fn name(self) -> &'static str {
        match self {
            Reason::Classified => "classified",
            Reason::UnknownPort => "unknown_port",
            Reason::NotIp => "not_ip",
            Reason::NotForUs => "not_for_us",
            Reason::TtlExpired => "ttl_expired",
            Reason::Local => "local",
            Reason::MacControl => "mac_control",
            Reason::Unresolved => "unresolved",
            Reason::NoRoute => "no_route",
            Reason::NoLiveMember => "no_live_member",
            Reason::NoNeighbour => "no_neighbour",
            Reason::RedirectFailed => "redirect_failed",
            Reason::Wred => "wred",
            Reason::SharedBufferFull => "shared_buffer_full",
            Reason::HeadroomExhausted => "headroom_exhausted",
            Reason::PfcWatchdog => "pfc_watchdog",
        }
    }

    /// The reason of a code, if it is one of this table's (not a parse
    /// error).
    pub const fn from_code(code: u8) -> Option<Reason> {
        let mut i = 0;
        while i < Reason::ALL.len() {
            if Reason::ALL[i] as u8 == code {
                return Some(Reason::ALL[i]);
            }
            i += 1;
        }
        None
    }
}

/// Stable name of any code: a parse error's name (`eth_truncated`, ...),
/// a [`Reason`]'s, or `unknown`.
pub const fn code_name(code: u8) -> &'static str {
    if (code as usize) < ParseError::ALL.len() {
        return ParseError::ALL[code as usize].name();
    }
    match Reason::from_code(code) {
        Some(r) => r.name(),
        None => "unknown",
    }
}

/// The code of a parse error (malformed frame).
pub const fn malformed(e: ParseError) -> u8 {
    e as u8
}

/// Any code of the table: a parse error (malformed frame) or a [`Reason`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    Malformed(ParseError),
    Other(Reason),
}

impl Why {
    /// The code of the table.
    pub const fn code(self) -> u8 {
        match self {
            Why::Malformed(e) => malformed(e),
            Why::Other(r) => r.code(),
        }
    }

    /// `malformed` for a parse error (its name is [`ParseError::name`]),
    /// else the reason's name.
    pub const fn name(self) -> &'static str {
        match self {
            Why::Malformed(_) => "malformed",
            Why::Other(r) => r.name(),
        }
    }

    /// The reason named `name` (`malformed` needs the parse error, which
    /// `malformed_as` gives by name).
    pub fn from_name(name: &str, malformed_as: Option<&str>) -> Option<Why> {
        if name == "malformed" {
            let e = malformed_as?;
            return ParseError::ALL
                .iter()
                .find(|p| p.name() == e)
                .map(|p| Why::Malformed(*p));
        }
        Reason::ALL
            .iter()
            .find(|r| r.name() == name)
            .map(|r| Why::Other(*r))
    }
}
