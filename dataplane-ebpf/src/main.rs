//! The data plane's eBPF programs, named after their hook and stage.
//!
//! They are thin glue: read the frame through bounds-checked views, look up
//! the port's configuration, call the pure decisions of `dataplane-common`,
//! bump per-CPU counters, return the verdict. No panics (the verifier would
//! refuse them), nothing large on the stack.
#![no_std]
#![no_main]
#![feature(core_intrinsics)]
#![allow(internal_features)]

mod balance;
mod counters;
mod far;
mod forward;
mod lossless;
mod packet;
mod pfc_tx;
mod probe;
mod snapshot;
mod stages;
mod tables;
mod trim;
mod xmit;

use aya_ebpf::{
    bindings::xdp_action,
    macros::{map, xdp},
    maps::{Array, DevMap, HashMap, PerCpuArray},
    programs::XdpContext,
};
use dataplane_common::{
    maps::{
        port_index_word, port_of_index_word, GlobalCounters, PortConfig, PortCounters, MAX_PORTS,
        PORT_F_FORWARD, PORT_INDEX_ENTRIES,
    },
    parse::parse,
    verdict::{account, decide, Action, Outcome},
    wire::{farnote::ETHERTYPE_FAR_NOTE, Packet},
};
use packet::XdpPacket;

/// Port configuration keyed by ifindex: the programs read it through
/// [`port_config`], only for an ifindex past `PORT_INDEX` (the controller's
/// telemetry reads it by ifindex).
#[map]
static PORT_CONFIG: HashMap<u32, PortConfig> = HashMap::with_max_entries(MAX_PORTS, 0);

/// Port id + 1 by ingress ifindex below `PORT_INDEX_ENTRIES` (0: none).
#[map]
static PORT_INDEX: Array<u32> = Array::with_max_entries(PORT_INDEX_ENTRIES, 0);

/// Port configuration by port id, two slots each; `PORT_SLOT` names the
/// live one (`dataplane_common::slots`).
#[map]
static PORTS: Array<PortConfig> = Array::with_max_entries(2 * MAX_PORTS, 0);

#[map]
static PORT_SLOT: Array<u32> = Array::with_max_entries(MAX_PORTS, 0);

/// The configuration of the port with `ifindex`: its id from `PORT_INDEX`
/// (an inlined array lookup) or, for a large ifindex, `PORT_CONFIG` (a
/// hash); its configuration from `PORTS`. The two paths meet as one word,
/// so the verifier meets one state after them.
#[inline(always)]
pub(crate) fn port_config(ifindex: u32) -> Option<&'static PortConfig> {
    let w = if ifindex < PORT_INDEX_ENTRIES {
        PORT_INDEX.get(ifindex).copied().unwrap_or(0)
    } else {
        // SAFETY: read-only; hash-map updates replace entries whole.
        unsafe { PORT_CONFIG.get(&ifindex) }.map_or(0, |c| port_index_word(c.port_id))
    };
    tables::live(&PORTS, &PORT_SLOT, port_of_index_word(w)?)
}

/// Per-port receive counters (per CPU), indexed by `PortConfig::port_id`.
#[map]
static PORT_COUNTERS: PerCpuArray<PortCounters> = PerCpuArray::with_max_entries(MAX_PORTS, 0);

/// Switch-wide counters (per CPU).
#[map]
static GLOBAL_COUNTERS: PerCpuArray<GlobalCounters> = PerCpuArray::with_max_entries(1, 0);

#[inline(always)]
fn bump_global(f: impl FnOnce(&mut GlobalCounters)) {
    if let Some(g) = GLOBAL_COUNTERS.get_ptr_mut(0) {
        // SAFETY: per-CPU slot, only this program on this CPU touches it.
        f(unsafe { &mut *g });
    }
}

/// The classification stage both ingress programs start with: port entry,
/// parse, decide, count. `Err(action)` when the port has no entry.
struct Ingress {
    cfg: &'static PortConfig,
    pkt: XdpPacket,
    parsed: Result<dataplane_common::parse::Parsed, dataplane_common::parse::ParseError>,
    decision: dataplane_common::verdict::Decision,
}

#[inline(always)]
fn ingress(ctx: &XdpContext) -> Result<Ingress, u32> {
    let ifindex = ctx.ingress_ifindex() as u32;
    let Some(cfg) = port_config(ifindex) else {
        bump_global(|g| g.unknown_port += 1);
        return Err(xdp_action::XDP_PASS);
    };
    let pkt = XdpPacket::new(ctx);
    let parsed = parse(&pkt);
    let decision = decide(&parsed, cfg);
    match PORT_COUNTERS.get_ptr_mut(u32::from(cfg.port_id)) {
        // SAFETY: per-CPU slot, only this program on this CPU touches it.
        Some(c) => account(unsafe { &mut *c }, &decision, pkt.frame_len()),
        None => bump_global(|g| g.bad_port_id += 1),
    }
    Ok(Ingress {
        cfg,
        pkt,
        parsed,
        decision,
    })
}

#[inline(always)]
fn verdict(a: Action) -> u32 {
    match a {
        Action::Pass => xdp_action::XDP_PASS,
        Action::Drop => xdp_action::XDP_DROP,
    }
}

/// Ingress hook, classification stage: parse, classify, count, verdict.
#[xdp]
pub fn xdp_classify(ctx: XdpContext) -> u32 {
    match ingress(&ctx) {
        Ok(i) => malformed_or(&ctx, &i),
        Err(action) => action,
    }
}

/// The verdict of a classified frame; a malformed frame the port drops goes
/// with a snapshot.
#[inline(always)]
fn malformed_or(ctx: &XdpContext, i: &Ingress) -> u32 {
    match (i.decision.action, i.decision.outcome) {
        (Action::Drop, Outcome::Malformed(e)) => snapshot::drop_frame(ctx, i.cfg.port_id, e as u8),
        (a, _) => verdict(a),
    }
}

/// Snapshot stage, entered by tail call from a program dropping a frame.
#[xdp]
pub fn xdp_drop_snapshot(ctx: XdpContext) -> u32 {
    snapshot::snapshot(&ctx)
}

/// Ingress hook, forwarding pipeline: classify (as `xdp_classify`), then
/// route, balance over next-hop groups, rewrite and redirect.
#[xdp]
pub fn xdp_forward(ctx: XdpContext) -> u32 {
    let Ingress {
        cfg,
        pkt,
        parsed,
        decision,
    } = match ingress(&ctx) {
        Ok(i) => i,
        Err(action) => return action,
    };
    if let Outcome::MacControl(_) = &decision.outcome {
        // honoured by `xdp_forward_pfc_rx` (its own program: the model's
        // stack would not fit beside this one's); counted above already
        stages::tail_call_pfc_rx(&ctx);
        return xdp_action::XDP_DROP;
    }
    if let Ok(p) = &parsed {
        if p.ethertype == ETHERTYPE_FAR_NOTE && !p.qinq {
            // a far-side notification: recorded by `xdp_forward_far_rx`
            // (counted above as a non-IP frame)
            stages::tail_call_far_rx(&ctx);
            return xdp_action::XDP_DROP;
        }
    }
    let (Ok(p), Outcome::Classified { class, .. }) = (&parsed, decision.outcome) else {
        return malformed_or(
            &ctx,
            &Ingress {
                cfg,
                pkt,
                parsed,
                decision,
            },
        );
    };
    if cfg.flags & PORT_F_FORWARD == 0 {
        return xdp_action::XDP_PASS;
    }
    forward::forward(&ctx, &pkt, p, cfg, &class)
}

/// PFC / PAUSE reception of the forwarding pipeline, entered by tail call
/// from `xdp_forward` (which already counted the frame): the paused queues
/// stop draining in the buffer model. The frame is consumed.
#[xdp]
pub fn xdp_forward_pfc_rx(ctx: XdpContext) -> u32 {
    let ifindex = ctx.ingress_ifindex() as u32;
    if let Some(cfg) = port_config(ifindex) {
        let pkt = XdpPacket::new(&ctx);
        if let Ok(p) = parse(&pkt) {
            if p.l3 == dataplane_common::parse::L3::MacControl {
                lossless::pfc_rx(cfg.port_id, &p.mac_ctl);
            }
        }
    }
    xdp_action::XDP_DROP
}

/// Far-side notification reception of the forwarding pipeline, entered
/// by tail call from `xdp_forward` (which already counted the frame):
/// `far::rx` records it for place mode. The frame is consumed.
#[xdp]
pub fn xdp_forward_far_rx(ctx: XdpContext) -> u32 {
    let ifindex = ctx.ingress_ifindex() as u32;
    if let Some(cfg) = port_config(ifindex) {
        let pkt = XdpPacket::new(&ctx);
        if let Ok(p) = parse(&pkt) {
            far::rx(&pkt, p.l3_off as usize, cfg.port_id);
        }
    }
    xdp_action::XDP_DROP
}

/// Egress half of the forwarding pipeline, entered by tail call from
/// `xdp_forward` with the routed frame: buffer model (ECN mark, WRED /
/// no-buffer / watchdog drop, PFC decisions), then redirect.
#[xdp]
pub fn xdp_forward_egress(ctx: XdpContext) -> u32 {
    // a reference to the per-CPU slot, not a copy: the stack is this
    // program's tightest budget (kernel 6.1 counts 512 bytes with the
    // buffer model's loop callback)
    let Some(ec) = stages::EGRESS_CTX.get(0) else {
        return xdp_action::XDP_DROP;
    };
    let pkt = XdpPacket::new(&ctx);
    let out = lossless::egress(&pkt, ec);
    let drop = match out.verdict {
        lossless::Egress::Drop(reason) => Some(reason),
        lossless::Egress::Forward => None,
        lossless::Egress::Trim => {
            if !out.pfc {
                stages::tail_call_trim(&ctx);
            }
            // with a PFC frame to send, or without the trimming stage
            if let Some(c) = counters::lossless(ec.out_port) {
                c.drop_shared_full[(ec.tc & 7) as usize] += 1;
            }
            Some(dataplane_common::reason::Reason::SharedBufferFull.code())
        }
    };
    trim::count(ec, drop.is_none());
    if let (true, Some(ev)) = (out.pfc, pfc_tx::decision()) {
        // the decision's PFC frame leaves with (or instead of) the packet
        if let Ok(action) = pfc_tx::broadcast(&ctx, &ev, ec, drop.is_some()) {
            if drop.is_none() {
                forward::sent(ec);
            }
            return action;
        }
    }
    if let Some(reason) = drop {
        return snapshot::drop_frame(&ctx, ec.in_port, reason);
    }
    if out.note_ns != 0 && far::listens(&ctx) {
        // the notification leaves by the ingress port, the packet as ever
        if let Ok(action) = pfc_tx::broadcast_note(&ctx, ec, out.note_ns) {
            forward::sent(ec);
            return action;
        }
    }
    forward::finish(ec)
}

/// Packet trimming (tail call from `xdp_forward_egress`): cuts a packet the
/// model could not admit to a trimming queue, rewrites its headers and
/// offers it to the egress stage again for the trim queue.
#[xdp]
pub fn xdp_forward_trim(ctx: XdpContext) -> u32 {
    trim::stage(&ctx)
}

/// Egress program of every `PFC_BCAST` entry (a devmap program): of the
/// copies of a packet that carries a PFC decision, passes the packet's own,
/// turns the one for its ingress port into the 802.1Qbb frame, drops the
/// rest.
#[xdp(map = "devmap")]
pub fn xdp_devmap_pfc(ctx: XdpContext) -> u32 {
    pfc_tx::devmap_copy(&ctx)
}

/// Timer of the buffer model, run by the controller with BPF_PROG_RUN:
/// drains quiet queues, decides XON / refreshes. Its frame is ignored; it
/// returns `XDP_TX` when it queued PFC frames (the controller's timer thread
/// then sends them).
#[xdp]
pub fn xdp_lossless_tick(_ctx: XdpContext) -> u32 {
    lossless::tick()
}

/// Benchmark baseline: returns at once.
#[xdp]
pub fn xdp_bench_bare(_ctx: XdpContext) -> u32 {
    xdp_action::XDP_PASS
}

/// Benchmark unit: one clock read, the pipeline's `bpf_ktime_get_ns` (the
/// verdict depends on it so the call stays).
#[xdp]
pub fn xdp_bench_clock(_ctx: XdpContext) -> u32 {
    // SAFETY: helper without preconditions.
    match unsafe { aya_ebpf::helpers::bpf_ktime_get_ns() } {
        0 => xdp_action::XDP_DROP,
        _ => xdp_action::XDP_PASS,
    }
}

/// Benchmark unit: one helper call that does almost nothing
/// (`bpf_get_prandom_u32`): the cost of a call and its return on this
/// kernel and CPU (its mitigations).
#[xdp]
pub fn xdp_bench_helper(_ctx: XdpContext) -> u32 {
    // SAFETY: helper without preconditions.
    match unsafe { aya_ebpf::helpers::bpf_get_prandom_u32() } {
        u32::MAX => xdp_action::XDP_DROP,
        _ => xdp_action::XDP_PASS,
    }
}

/// Benchmark unit: one hash-map lookup (`PORT_CONFIG` by the ingress
/// ifindex, the lookup a port past `PORT_INDEX` takes).
#[xdp]
pub fn xdp_bench_lookup(ctx: XdpContext) -> u32 {
    let ifindex = ctx.ingress_ifindex() as u32;
    // SAFETY: read-only, as in `ingress`.
    match unsafe { PORT_CONFIG.get(&ifindex) } {
        Some(c) if c.port_id == u16::MAX => xdp_action::XDP_DROP,
        _ => xdp_action::XDP_PASS,
    }
}

/// Benchmark: the shared parser only. The verdict depends on the parsed
/// fields so the compiler cannot drop the work.
#[xdp]
pub fn xdp_bench_parse(ctx: XdpContext) -> u32 {
    let pkt = XdpPacket::new(&ctx);
    match parse(&pkt) {
        Ok(p) => {
            let x = u32::from(p.dscp)
                ^ u32::from(p.pcp)
                ^ u32::from(p.l4_off)
                ^ u32::from(p.dport)
                ^ p.bth.dest_qp
                ^ p.bth.psn
                ^ u32::from(p.mac_ctl.class_enable);
            if x == u32::MAX {
                xdp_action::XDP_DROP
            } else {
                xdp_action::XDP_PASS
            }
        }
        Err(_) => xdp_action::XDP_DROP,
    }
}

/// Counter of `xdp_bench_sink` (per CPU, entry 0: frames, 1: bytes).
#[map]
static BENCH_SINK: PerCpuArray<u64> = PerCpuArray::with_max_entries(2, 0);

/// Benchmark traffic generator: run with BPF_PROG_RUN in live-frames mode,
/// it sends its input frame out of the ctx's ingress interface.
#[xdp]
pub fn xdp_bench_tx(_ctx: XdpContext) -> u32 {
    xdp_action::XDP_TX
}

/// Benchmark receiver: counts frames and bytes, drops them.
#[xdp]
pub fn xdp_bench_sink(ctx: XdpContext) -> u32 {
    if let Some(c) = BENCH_SINK.get_ptr_mut(0) {
        // SAFETY: per-CPU slot.
        unsafe { *c += 1 };
    }
    if let Some(c) = BENCH_SINK.get_ptr_mut(1) {
        // SAFETY: per-CPU slot.
        unsafe { *c += (ctx.data_end() - ctx.data()) as u64 };
    }
    xdp_action::XDP_DROP
}

/// The minimal forwarder's rewrite (entry 0): destination then source MAC.
#[map]
static BENCH_FWD_MACS: Array<[u8; 12]> = Array::with_max_entries(1, 0);

/// The minimal forwarder's one egress port (entry 0).
#[map]
static BENCH_FWD_TX: DevMap = DevMap::with_max_entries(1, 0);

/// Benchmark limit: the least an L3 forwarder does on this kernel (an IPv4
/// EtherType check, the MAC rewrite, a devmap redirect to one fixed port),
/// the physical limit the pipeline's forwarding rate is compared with.
#[xdp]
pub fn xdp_bench_forward(ctx: XdpContext) -> u32 {
    let pkt = XdpPacket::new(&ctx);
    if pkt.read::<2>(12) != Some([0x08, 0x00]) {
        return xdp_action::XDP_PASS;
    }
    let Some(macs) = BENCH_FWD_MACS.get(0) else {
        return xdp_action::XDP_PASS;
    };
    if !pkt.write(0, macs) {
        return xdp_action::XDP_PASS;
    }
    BENCH_FWD_TX.redirect(0, 0).unwrap_or(xdp_action::XDP_DROP)
}

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}
