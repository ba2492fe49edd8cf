//! L3 forwarding decisions: what happens to a classified frame, and the
//! header rewrites of a routed one.
//!
//! The lookup is two kernel tables per family whose values are
//! [`RouteEntry`]: an exact-match hash of the host routes (/32, /128: the
//! common case of a fabric that routes every GPU NIC's address) consulted
//! first, and an LPM trie of every shorter prefix ([`is_host_route`] says
//! which table a prefix lives in, [`lookup`] combines them). Next hops are
//! [`NextHop`] entries written by the controller from its static neighbour
//! configuration.

use crate::parse::{Parsed, L3};
use crate::reason::Reason;
use crate::wire::csum;

/// The route points at one next hop (`id` = next-hop index).
pub const ROUTE_NEXTHOP: u8 = 1;
/// The route points at a next-hop group (`id` = group index).
pub const ROUTE_GROUP: u8 = 2;
/// An address of the switch itself: handed to the kernel.
pub const ROUTE_LOCAL: u8 = 3;

/// Value of the LPM tries.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct RouteEntry {
    /// [`ROUTE_NEXTHOP`], [`ROUTE_GROUP`] or [`ROUTE_LOCAL`].
    pub kind: u8,
    /// The route's prefix length plus one ([`route_plen`]); 0: not known
    /// (an entry an older controller wrote). The prefix a far-side
    /// notification names.
    pub plen: u8,
    /// Next-hop or group index.
    pub id: u16,
}

/// [`RouteEntry::plen`] of a prefix of `len` bits.
#[inline(always)]
pub const fn route_plen(len: u8) -> u8 {
    if len > 128 {
        129
    } else {
        len + 1
    }
}

/// Route table capacity, per table: the LPM trie and the host table of a
/// family hold up to this many each (both hold entries on demand: an
/// empty table costs nothing).
pub const ROUTES_V4_CAPACITY: u32 = 131072;
pub const ROUTES_V6_CAPACITY: u32 = 32768;

/// Whether a prefix of `len` bits over `addr_bytes`-byte addresses is a
/// host route: it lives in the exact-match host table (keyed by the
/// address), never in the LPM trie.
#[inline(always)]
pub const fn is_host_route(len: u8, addr_bytes: usize) -> bool {
    len as usize == addr_bytes * 8
}

/// The route of a destination, as a word ([`route_word`]), from its
/// host-table entry (`host`, asked only when the table may hold one:
/// `hosts_in_use`) and the trie's longest match (`lpm`, asked only on a
/// miss): a host route is the longest prefix there can be, so the host
/// table's entry wins, and the result equals one LPM lookup over both
/// tables.
///
/// Words, not `Option`s: in the program the paths (table skipped, missed,
/// hit) then meet as one scalar and the verifier meets one state after
/// them (with `Option`s the skip doubled the states of everything after
/// it: kernel 6.1 refused `xdp_forward` at its million-instruction limit).
#[inline(always)]
pub fn lookup(hosts_in_use: bool, host: impl FnOnce() -> u32, lpm: impl FnOnce() -> u32) -> u32 {
    let mut w = 0;
    if hosts_in_use {
        w = host();
    }
    if w == 0 {
        w = lpm();
    }
    w
}

/// A route as one word, 0 for none (every [`RouteEntry::kind`] is
/// non-zero).
#[inline(always)]
pub fn route_word(r: Option<RouteEntry>) -> u32 {
    match r {
        Some(r) => u32::from(r.kind) | u32::from(r.plen) << 8 | u32::from(r.id) << 16,
        None => 0,
    }
}

/// The route a [`route_word`] holds (an entry of kind 0 reads as none).
#[inline(always)]
pub fn route_of_word(w: u32) -> Option<RouteEntry> {
    (w & 0xff != 0).then_some(RouteEntry {
        kind: w as u8,
        plen: (w >> 8) as u8,
        id: (w >> 16) as u16,
    })
}

/// `HOST_ROUTES` index of the IPv4 host table's word (1: it may hold
/// routes; 0: it holds none and a packet skips its lookup, a hash miss).
pub const HOST_ROUTES_V4: u32 = 0;
/// `HOST_ROUTES` index of the IPv6 host table's word.
pub const HOST_ROUTES_V6: u32 = 1;

/// Next hops the data plane can send to.
pub const MAX_NEXTHOPS: u32 = 256;
/// Next-hop groups.
pub const MAX_GROUPS: u32 = 64;

/// [`NextHop::valid`]: usable.
pub const NH_VALID: u8 = 1;
/// [`NextHop::valid`]: the neighbour is not resolved yet; frames go to the
/// kernel (which resolves it and routes them), counted `pass_unresolved`.
pub const NH_UNRESOLVED: u8 = 2;

/// What to do with a frame routed to a next hop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NhVerdict {
    Send,
    /// To the kernel: the neighbour is being resolved.
    Unresolved,
    /// No usable next hop.
    Drop,
}

/// The next hop's verdict (`None`: no entry).
#[inline(always)]
pub fn nexthop_verdict(nh: Option<&NextHop>) -> NhVerdict {
    match nh {
        Some(n) if n.valid == NH_VALID => NhVerdict::Send,
        Some(n) if n.valid == NH_UNRESOLVED => NhVerdict::Unresolved,
        _ => NhVerdict::Drop,
    }
}

/// A resolved neighbour: where and how to send.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct NextHop {
    /// Neighbour MAC (destination of the rewritten frame).
    pub dst_mac: [u8; 6],
    /// The egress port's own MAC (source of the rewritten frame).
    pub src_mac: [u8; 6],
    /// Egress interface index (devmap value).
    pub ifindex: u32,
    /// Egress port id (counters, rate estimator, devmap key).
    pub port_id: u16,
    /// [`NH_VALID`] when usable, [`NH_UNRESOLVED`] while the neighbour
    /// resolves; anything else: not usable.
    pub valid: u8,
    pub _pad: u8,
}

/// Why a frame is not routed by the data plane: the subset of
/// [`Reason`] that routing's pre-checks give (same codes).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotRouted {
    /// Not IPv4/IPv6 (ARP, LLDP, ...): the kernel's.
    NotIp = Reason::NotIp as u8,
    /// Not addressed to the ingress port's MAC (broadcast, multicast,
    /// another host): the kernel's.
    NotForUs = Reason::NotForUs as u8,
    /// TTL / hop limit would expire: the kernel answers with ICMP.
    TtlExpired = Reason::TtlExpired as u8,
    /// An address of the switch (BGP, ping, ...): the kernel's.
    Local = Reason::Local as u8,
}

impl From<NotRouted> for Reason {
    fn from(n: NotRouted) -> Reason {
        match n {
            NotRouted::NotIp => Reason::NotIp,
            NotRouted::NotForUs => Reason::NotForUs,
            NotRouted::TtlExpired => Reason::TtlExpired,
            NotRouted::Local => Reason::Local,
        }
    }
}

/// Pre-route decision from the parsed headers.
#[inline(always)]
pub fn pre_route(
    p: &Parsed,
    dst_mac: &[u8; 6],
    port_mac: &[u8; 6],
    ttl: u8,
) -> Result<(), NotRouted> {
    if !matches!(p.l3, L3::Ipv4 | L3::Ipv6) || p.qinq {
        return Err(NotRouted::NotIp);
    }
    if mac_u64(dst_mac) != mac_u64(port_mac) {
        return Err(NotRouted::NotForUs);
    }
    if ttl <= 1 {
        return Err(NotRouted::TtlExpired);
    }
    Ok(())
}

/// A MAC as an integer. (Comparing `[u8; 6]` directly lets LLVM load 8
/// bytes and mask two, a read of uninitialised stack the verifier refuses.)
#[inline(always)]
pub fn mac_u64(m: &[u8; 6]) -> u64 {
    u64::from(m[0]) << 40
        | u64::from(m[1]) << 32
        | u64::from(m[2]) << 24
        | u64::from(m[3]) << 16
        | u64::from(m[4]) << 8
        | u64::from(m[5])
}

/// New TTL and header checksum after decrementing an IPv4 TTL (RFC 1624:
/// the TTL is the high byte of the 16-bit word TTL|protocol).
#[inline(always)]
pub fn ipv4_ttl_decrement(ttl: u8, proto: u8, check: u16) -> (u8, u16) {
    let new_ttl = ttl.wrapping_sub(1);
    let old = u16::from_be_bytes([ttl, proto]);
    let new = u16::from_be_bytes([new_ttl, proto]);
    (new_ttl, csum::update16(check, old, new))
}

/// IPv4 address (network order bytes) as a 16-byte key for hashing:
/// IPv4-mapped IPv6 (::ffff:a.b.c.d).
#[inline(always)]
pub fn v4_mapped(a: [u8; 4]) -> [u8; 16] {
    [
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a[0], a[1], a[2], a[3],
    ]
}

/// Forwarding counters per port (per-CPU array indexed by port id). The
/// `rx_*` / `pass_*` / `drop_*` fields count on the ingress port, `tx_*` on
/// the egress port.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FwdCounters {
    pub tx_tc_pkts: [u64; 8],
    pub tx_tc_bytes: [u64; 8],
    /// Frames routed (redirected) from this ingress port.
    pub rx_routed: u64,
    /// Handed to the kernel: not IP / not for our MAC / TTL expiring /
    /// addressed to the switch.
    pub pass_not_ip: u64,
    pub pass_not_for_us: u64,
    pub pass_ttl_expired: u64,
    pub pass_local: u64,
    /// Dropped: no route / the group has no live member / the next hop is
    /// not usable / the egress port is not in the devmap.
    pub drop_no_route: u64,
    pub drop_no_member: u64,
    pub drop_no_neighbour: u64,
    pub drop_redirect: u64,
    /// Handed to the kernel: the next hop's neighbour is not resolved.
    pub pass_unresolved: u64,
    /// Packet trimming of this egress port's queues (SONiC's Trim/pkts,
    /// TrimSent/pkts, TrimDrop/pkts).
    pub trim: crate::trim::TrimCounters,
}

impl FwdCounters {
    pub const ZERO: FwdCounters = FwdCounters {
        tx_tc_pkts: [0; 8],
        tx_tc_bytes: [0; 8],
        rx_routed: 0,
        pass_not_ip: 0,
        pass_not_for_us: 0,
        pass_ttl_expired: 0,
        pass_local: 0,
        drop_no_route: 0,
        drop_no_member: 0,
        drop_no_neighbour: 0,
        drop_redirect: 0,
        pass_unresolved: 0,
        trim: crate::trim::TrimCounters::ZERO,
    };

    /// Adds `o` field by field (summing per-CPU copies).
    pub fn accumulate(&mut self, o: &FwdCounters) {
        let mut i = 0;
        while i < 8 {
            self.tx_tc_pkts[i] += o.tx_tc_pkts[i];
            self.tx_tc_bytes[i] += o.tx_tc_bytes[i];
            i += 1;
        }
        self.rx_routed += o.rx_routed;
        self.pass_not_ip += o.pass_not_ip;
        self.pass_not_for_us += o.pass_not_for_us;
        self.pass_ttl_expired += o.pass_ttl_expired;
        self.pass_local += o.pass_local;
        self.drop_no_route += o.drop_no_route;
        self.drop_no_member += o.drop_no_member;
        self.drop_no_neighbour += o.drop_no_neighbour;
        self.drop_redirect += o.drop_redirect;
        self.pass_unresolved += o.pass_unresolved;
        self.trim.accumulate(&o.trim);
    }
}

/// Counts a frame the data plane does not route.
#[inline(always)]
pub fn count_not_routed(c: &mut FwdCounters, why: NotRouted) {
    match why {
        NotRouted::NotIp => c.pass_not_ip += 1,
        NotRouted::NotForUs => c.pass_not_for_us += 1,
        NotRouted::TtlExpired => c.pass_ttl_expired += 1,
        NotRouted::Local => c.pass_local += 1,
    }
}

const _: () = assert!(core::mem::size_of::<FwdCounters>() == 8 * (16 + 10 + 3 * 8));
const _: () = assert!(core::mem::size_of::<RouteEntry>() == 4);
const _: () = assert!(core::mem::size_of::<NextHop>() == 20);

#[cfg(feature = "user")]
mod pod {
    // SAFETY: repr(C), integer fields only, no padding (asserted above).
    unsafe impl aya::Pod for super::RouteEntry {}
    unsafe impl aya::Pod for super::NextHop {}
    unsafe impl aya::Pod for super::FwdCounters {}
}
