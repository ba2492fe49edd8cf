//! The forwarding stage of `xdp_forward`: route lookup, next hop (or group
//! member), MAC rewrite, TTL / hop-limit decrement, redirect.

use aya_ebpf::{
    bindings::xdp_action, helpers::bpf_ktime_get_ns, maps::lpm_trie::Key, programs::XdpContext,
};
use dataplane_common::{
    classify::Class,
    maps::PortConfig,
    parse::{Parsed, L3},
    reason::Reason,
    route::{
        count_not_routed, ipv4_ttl_decrement, lookup, nexthop_verdict, pre_route, route_of_word,
        route_word, FwdCounters, NextHop, NhVerdict, NotRouted, HOST_ROUTES_V4, HOST_ROUTES_V6,
        ROUTE_GROUP, ROUTE_LOCAL, ROUTE_NEXTHOP,
    },
    wire::{ipv4, ipv6, Packet},
};

use crate::packet::XdpPacket;
use crate::stages::{enter_egress, EgressCtx};
use crate::tables::{
    fwd_counters, hosts_in_use, HOSTS_V4, HOSTS_V6, ROUTES_V4, ROUTES_V6, TX_PORTS,
};

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
    // SAFETY (host tables): read-only use; hash-map updates replace
    // entries whole.
    let route = match p.l3 {
        L3::Ipv4 => match pkt.read::<4>(l3 + ipv4::DST_OFF) {
            Some(dst) => route_of_word(lookup(
                hosts_in_use(HOST_ROUTES_V4),
                || route_word(unsafe { HOSTS_V4.get(&dst) }.copied()),
                || route_word(ROUTES_V4.get(Key::new(32, dst)).copied()),
            )),
            None => None,
        },
        _ => match pkt.read::<16>(l3 + ipv6::DST_OFF) {
            Some(dst) => route_of_word(lookup(
                hosts_in_use(HOST_ROUTES_V6),
                || route_word(unsafe { HOSTS_V6.get(&dst) }.copied()),
                || route_word(ROUTES_V6.get(Key::new(128, dst)).copied()),
            )),
            None => None,
        },
    };
    let Some(route) = route else {
        rx.drop_no_route += 1;
        return crate::snapshot::drop_frame(ctx, cfg.port_id, Reason::NoRoute.code());
    };
    if route.kind == ROUTE_LOCAL {
        count_not_routed(rx, NotRouted::Local);
        return xdp_action::XDP_PASS;
    }
    // the packet's one clock reading: member pick, buffer model, rate
    // estimator
    // SAFETY: helper without preconditions.
    let now = unsafe { bpf_ktime_get_ns() };
    let nh_id = match route.kind {
        ROUTE_NEXTHOP => route.id,
        ROUTE_GROUP => match crate::balance::pick(pkt, p, route.id, now) {
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
    let entry = crate::tables::nexthop(nh_id);
    let nh: NextHop = match (nexthop_verdict(entry), entry) {
        (NhVerdict::Send, Some(nh)) => *nh,
        (NhVerdict::Unresolved, _) => {
            // the kernel routes it and resolves the neighbour
            rx.pass_unresolved += 1;
            return xdp_action::XDP_PASS;
        }
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
        trimmed: 0,
        plen: route.plen,
        _pad: 0,
        now,
    };
    // the egress stage only for ports in the buffer model (a tail call
    // saved for the others)
    if crate::lossless::modelled(ec.in_port, ec.out_port) {
        enter_egress(ctx, &ec);
        // the egress stage is not installed: send without the buffer model
        if let Some(c) = crate::counters::lossless(ec.out_port) {
            c.count_busy(dataplane_common::buffer::Busy::Stage);
        }
    }
    finish_counted(&ec, Some(rx))
}

/// Rate estimator and counters of a routed packet that was redirected.
#[inline(always)]
pub fn sent(ec: &EgressCtx) {
    sent_counted(ec, fwd_counters(ec.in_port))
}

/// [`sent`] with the ingress port's counters already at hand.
#[inline(always)]
fn sent_counted(ec: &EgressCtx, rx: Option<&mut FwdCounters>) {
    let len = u64::from(ec.len);
    // only what leaves counts as load
    crate::balance::sent(ec.out_port, len, ec.now);
    if let Some(rx) = rx {
        rx.rx_routed += 1;
    }
    if let Some(tx) = fwd_counters(ec.out_port) {
        let tc = (ec.tc & 7) as usize;
        tx.tx_tc_pkts[tc] += 1;
        tx.tx_tc_bytes[tc] += len;
    }
}

/// Rate estimator, redirect and counters of a routed packet.
#[inline(always)]
pub fn finish(ec: &EgressCtx) -> u32 {
    finish_counted(ec, fwd_counters(ec.in_port))
}

/// [`finish`] with the ingress port's counters already at hand.
#[inline(always)]
fn finish_counted(ec: &EgressCtx, rx: Option<&mut FwdCounters>) -> u32 {
    match TX_PORTS.redirect(u32::from(ec.out_port), 0) {
        Ok(action) => {
            sent_counted(ec, rx);
            action
        }
        Err(_) => {
            if let Some(rx) = rx {
                rx.drop_redirect += 1;
            }
            xdp_action::XDP_DROP
        }
    }
}
