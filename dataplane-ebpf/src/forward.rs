//! The forwarding stage of `xdp_forward`: route lookup, next hop (or group
//! member), MAC rewrite, TTL / hop-limit decrement, redirect.

use aya_ebpf::{
    bindings::xdp_action,
    macros::map,
    maps::{lpm_trie::Key, DevMap, HashMap, LpmTrie, PerCpuArray, ProgramArray},
    programs::XdpContext,
};
use dataplane_common::{
    classify::Class,
    maps::{PortConfig, MAX_PORTS},
    parse::{Parsed, L3},
    reason::Reason,
    route::{
        count_not_routed, ipv4_ttl_decrement, pre_route, FwdCounters, NextHop, NotRouted,
        RouteEntry, MAX_NEXTHOPS, ROUTE_GROUP, ROUTE_LOCAL, ROUTE_NEXTHOP,
    },
    wire::{ipv4, ipv6, Packet},
};

use crate::packet::XdpPacket;

/// IPv4 routes (longest prefix match).
#[map]
static ROUTES_V4: LpmTrie<[u8; 4], RouteEntry> = LpmTrie::with_max_entries(16384, 0);

/// IPv6 routes (longest prefix match).
#[map]
static ROUTES_V6: LpmTrie<[u8; 16], RouteEntry> = LpmTrie::with_max_entries(16384, 0);

/// Next hops by index. A hash map so an update replaces an entry whole.
#[map]
pub(crate) static NEXTHOPS: HashMap<u32, NextHop> = HashMap::with_max_entries(MAX_NEXTHOPS, 0);

/// Egress ports for XDP_REDIRECT, indexed by port id.
#[map]
static TX_PORTS: DevMap = DevMap::with_max_entries(MAX_PORTS, 0);

/// Forwarding counters per port (per CPU).
#[map]
static FWD_COUNTERS: PerCpuArray<FwdCounters> = PerCpuArray::with_max_entries(MAX_PORTS, 0);

#[inline(always)]
fn fwd_counters(port_id: u16) -> Option<&'static mut FwdCounters> {
    // SAFETY: per-CPU slot, only this program on this CPU touches it.
    FWD_COUNTERS
        .get_ptr_mut(u32::from(port_id))
        .map(|p| unsafe { &mut *p })
}

/// Routes a classified frame. Returns the XDP action.
#[inline(always)]
pub fn forward(
    ctx: &XdpContext,
    pkt: &XdpPacket,
    p: &Parsed,
    cfg: &PortConfig,
    class: &Class,
) -> u32 {
    let Some(rx) = fwd_counters(cfg.port_id) else {
        return xdp_action::XDP_PASS;
    };
    let l3 = p.l3_off as usize;
    let (Some(dst_mac), Some(ttl)) = (
        pkt.read::<6>(0),
        match p.l3 {
            L3::Ipv4 => pkt.u8_at(l3 + ipv4::TTL_OFF),
            L3::Ipv6 => pkt.u8_at(l3 + ipv6::HOP_LIMIT_OFF),
            _ => Some(0),
        },
    ) else {
        return xdp_action::XDP_PASS;
    };
    if let Err(why) = pre_route(p, &dst_mac, &cfg.mac, ttl) {
        count_not_routed(rx, why);
        return xdp_action::XDP_PASS;
    }
    let route = match p.l3 {
        L3::Ipv4 => match pkt.read::<4>(l3 + ipv4::DST_OFF) {
            Some(dst) => ROUTES_V4.get(Key::new(32, dst)).copied(),
            None => None,
        },
        _ => match pkt.read::<16>(l3 + ipv6::DST_OFF) {
            Some(dst) => ROUTES_V6.get(Key::new(128, dst)).copied(),
            None => None,
        },
    };
    let Some(route) = route else {
        rx.drop_no_route += 1;
        return crate::snapshot::drop_frame(ctx, cfg.port_id, Reason::NoRoute.code());
    };
    let nh_id = match route.kind {
        ROUTE_NEXTHOP => route.id,
        ROUTE_LOCAL => {
            count_not_routed(rx, NotRouted::Local);
            return xdp_action::XDP_PASS;
        }
        ROUTE_GROUP => match crate::balance::pick(pkt, p, route.id) {
            Some(nh) => nh,
            None => {
                rx.drop_no_member += 1;
                return crate::snapshot::drop_frame(ctx, cfg.port_id, Reason::NoLiveMember.code());
            }
        },
        _ => {
            rx.drop_no_route += 1;
            return xdp_action::XDP_DROP;
        }
    };
    // SAFETY: read-only use; hash-map updates replace entries whole.
    let nh: NextHop = match unsafe { NEXTHOPS.get(&u32::from(nh_id)) } {
        Some(nh) if nh.valid != 0 => *nh,
        _ => {
            rx.drop_no_neighbour += 1;
            return crate::snapshot::drop_frame(ctx, cfg.port_id, Reason::NoNeighbour.code());
        }
    };
    // rewrite: MACs, then TTL / hop limit
    let mut macs = [0u8; 12];
    macs[..6].copy_from_slice(&nh.dst_mac);
    macs[6..].copy_from_slice(&nh.src_mac);
    if !pkt.write(0, &macs) {
        return xdp_action::XDP_PASS;
    }
    match p.l3 {
        L3::Ipv4 => {
            let Some(c) = pkt.read::<2>(l3 + ipv4::CHECKSUM_OFF) else {
                return xdp_action::XDP_PASS;
            };
            let (t, check) = ipv4_ttl_decrement(ttl, p.ip_proto, u16::from_be_bytes(c));
            pkt.write(l3 + ipv4::TTL_OFF, &[t]);
            pkt.write(l3 + ipv4::CHECKSUM_OFF, &check.to_be_bytes());
        }
        _ => {
            pkt.write(l3 + ipv6::HOP_LIMIT_OFF, &[ttl - 1]);
        }
    }
    let ec = EgressCtx {
        in_port: cfg.port_id,
        out_port: nh.port_id,
        len: pkt.frame_len() as u32,
        l3_off: p.l3_off,
        l3: p.l3 as u8,
        ecn: p.ecn,
        tc: class.tc & 7,
        lossless: u8::from(class.lossless),
        cnp: u8::from(class.cnp),
        _pad: [0; 3],
    };
    // The egress stage (buffer model, redirect) is its own program, entered
    // by tail call, so the verifier checks each half on its own: together
    // their paths multiply past its limit.
    if let Some(slot) = EGRESS_CTX.get_ptr_mut(0) {
        // SAFETY: per-CPU slot, read by the tail-called program on this CPU.
        unsafe { *slot = ec };
        // SAFETY: tail call with our own context; returns only on failure.
        unsafe { EGRESS_STAGE.tail_call(ctx, 0) };
    }
    // the egress stage is not installed: send without the buffer model
    if let Some(c) = crate::lossless::counters(ec.out_port) {
        c.model_busy += 1;
    }
    finish(&ec)
}

/// What the ingress half hands to the egress half.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct EgressCtx {
    pub in_port: u16,
    pub out_port: u16,
    pub len: u32,
    pub l3_off: u16,
    /// `L3` as u8.
    pub l3: u8,
    pub ecn: u8,
    pub tc: u8,
    pub lossless: u8,
    pub cnp: u8,
    pub _pad: [u8; 3],
}

/// Per-CPU hand-over slot between `xdp_forward` and `xdp_forward_egress`.
#[map]
pub(crate) static EGRESS_CTX: PerCpuArray<EgressCtx> = PerCpuArray::with_max_entries(1, 0);

/// Entry 0: `xdp_forward_egress`; entry 1: `xdp_forward_pfc_rx`; entry 2:
/// `xdp_drop_snapshot`; installed by the controller.
#[map]
static EGRESS_STAGE: ProgramArray = ProgramArray::with_max_entries(3, 0);

/// Hands a frame to be dropped to `xdp_drop_snapshot`; returns if that
/// stage is not installed.
#[inline(always)]
pub fn tail_call_snapshot(ctx: &XdpContext) {
    // SAFETY: tail call with our own context; returns only on failure.
    unsafe { EGRESS_STAGE.tail_call(ctx, 2) };
}

/// Hands a MAC control frame to `xdp_forward_pfc_rx`; returns if that
/// stage is not installed.
#[inline(always)]
pub fn tail_call_pfc_rx(ctx: &XdpContext) {
    // SAFETY: tail call with our own context; returns only on failure.
    unsafe { EGRESS_STAGE.tail_call(ctx, 1) };
}

/// Rate estimator, redirect and counters of a routed packet.
#[inline(always)]
pub fn finish(ec: &EgressCtx) -> u32 {
    let len = u64::from(ec.len);
    match TX_PORTS.redirect(u32::from(ec.out_port), 0) {
        Ok(action) => {
            // only what leaves counts as load
            crate::balance::sent(ec.out_port, len);
            if let Some(rx) = fwd_counters(ec.in_port) {
                rx.rx_routed += 1;
            }
            if let Some(tx) = fwd_counters(ec.out_port) {
                let tc = (ec.tc & 7) as usize;
                tx.tx_tc_pkts[tc] += 1;
                tx.tx_tc_bytes[tc] += len;
            }
            action
        }
        Err(_) => {
            if let Some(rx) = fwd_counters(ec.in_port) {
                rx.drop_redirect += 1;
            }
            xdp_action::XDP_DROP
        }
    }
}
