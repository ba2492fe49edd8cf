//! The forwarding stage of `xdp_forward`: route lookup, next hop (or group
//! member), MAC rewrite, TTL / hop-limit decrement, redirect.

use aya_ebpf::{
    bindings::xdp_action,
    macros::map,
    maps::{lpm_trie::Key, DevMap, HashMap, LpmTrie, PerCpuArray},
};
use dataplane_common::{
    classify::Class,
    maps::{PortConfig, MAX_PORTS},
    parse::{Parsed, L3},
    route::{
        count_not_routed, ipv4_ttl_decrement, pre_route, FwdCounters, NextHop, NotRouted, RouteEntry, MAX_NEXTHOPS,
        ROUTE_GROUP, ROUTE_LOCAL, ROUTE_NEXTHOP,
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
    FWD_COUNTERS.get_ptr_mut(u32::from(port_id)).map(|p| unsafe { &mut *p })
}

/// Routes a classified frame. Returns the XDP action.
#[inline(always)]
pub fn forward(pkt: &XdpPacket, p: &Parsed, cfg: &PortConfig, class: &Class) -> u32 {
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
        return xdp_action::XDP_DROP;
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
                return xdp_action::XDP_DROP;
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
            return xdp_action::XDP_DROP;
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
    let len = pkt.frame_len();
    // the buffer model: ECN mark, WRED / no-buffer drop, PFC decisions.
    // (After the rewrite: the other order makes the verifier's path count
    // explode; a dropped frame's bytes do not matter.)
    if let crate::lossless::Egress::Drop = crate::lossless::egress(pkt, p, cfg.port_id, nh.port_id, class, len) {
        return xdp_action::XDP_DROP;
    }
    crate::balance::sent(nh.port_id, len);
    match TX_PORTS.redirect(u32::from(nh.port_id), 0) {
        Ok(action) => {
            rx.rx_routed += 1;
            if let Some(tx) = fwd_counters(nh.port_id) {
                let tc = (class.tc & 7) as usize;
                tx.tx_tc_pkts[tc] += 1;
                tx.tx_tc_bytes[tc] += len;
            }
            action
        }
        Err(_) => {
            rx.drop_redirect += 1;
            xdp_action::XDP_DROP
        }
    }
}
