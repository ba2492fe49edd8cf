//! Running the compiled programs on frames with BPF_PROG_TEST_RUN (aya's
//! `TestRun`): the engine of the fixture table and the benchmarks.

use dataplane_common::names;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use aya::programs::{TestRun, TestRunOptions, Xdp};
use aya::Ebpf;

/// `struct xdp_md` as BPF_PROG_TEST_RUN takes it for ctx_in.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct XdpMd {
    pub data: u32,
    pub data_end: u32,
    pub data_meta: u32,
    pub ingress_ifindex: u32,
    pub rx_queue_index: u32,
    pub egress_ifindex: u32,
}

impl XdpMd {
    /// The context of a `len`-byte frame received on `ifindex`.
    pub fn new(len: usize, ifindex: u32) -> XdpMd {
        XdpMd {
            data: 0,
            data_end: len as u32,
            ingress_ifindex: ifindex,
            ..Default::default()
        }
    }

    /// Its bytes, for `ctx_in`.
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: repr(C) plain integers, no padding.
        unsafe {
            std::slice::from_raw_parts(
                self as *const XdpMd as *const u8,
                std::mem::size_of::<XdpMd>(),
            )
        }
    }
}

/// What one run returned.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// XDP action.
    pub action: u32,
    /// The frame as the program left it.
    pub out: Vec<u8>,
    /// Kernel-measured time per repetition.
    pub per_run: Duration,
}

pub const XDP_ABORTED: u32 = 0;
pub const XDP_DROP: u32 = 1;
pub const XDP_PASS: u32 = 2;
pub const XDP_TX: u32 = 3;
pub const XDP_REDIRECT: u32 = 4;

/// Name of an XDP action.
pub fn action_name(a: u32) -> &'static str {
    match a {
        XDP_ABORTED => "XDP_ABORTED",
        XDP_DROP => "XDP_DROP",
        XDP_PASS => "XDP_PASS",
        XDP_TX => "XDP_TX",
        XDP_REDIRECT => "XDP_REDIRECT",
        _ => "XDP_?",
    }
}

/// Runs XDP program `prog` of `bpf` on `frame` as if received on
/// `ingress_ifindex` (which must exist in the calling thread's namespace),
/// `repeat` times. With `repeat > 1` the kernel reuses the buffer, so a
/// program that rewrites the frame sees its own output on later runs.
pub fn run_xdp(
    bpf: &Ebpf,
    prog: &str,
    frame: &[u8],
    ingress_ifindex: u32,
    repeat: u32,
) -> Result<RunResult> {
    let p: &Xdp = bpf
        .program(prog)
        .ok_or_else(|| anyhow!("no program {prog}"))?
        .try_into()
        .with_context(|| format!("{prog} is not XDP"))?;
    let md = XdpMd::new(frame.len(), ingress_ifindex);
    let ctx = md.as_bytes();
    let mut out = vec![0u8; frame.len() + 256];
    let r = p
        .test_run(TestRunOptions {
            data_in: Some(frame),
            data_out: Some(&mut out),
            ctx_in: Some(ctx),
            repeat,
            ..Default::default()
        })
        .with_context(|| {
            format!(
                "BPF_PROG_TEST_RUN of {prog} ({} byte frame, ifindex {ingress_ifindex})",
                frame.len()
            )
        })?;
    out.truncate(r.data_size_out as usize);
    Ok(RunResult {
        action: r.return_value,
        out,
        per_run: r.duration,
    })
}

/// Empties the buffer model (every egress queue, PG row and the pool's
/// use): a fixture or corpus case starts from an idle switch, as each STF
/// test starts a fresh bmv2.
pub fn reset_model(bpf: &mut Ebpf) -> Result<()> {
    use aya::maps::{Array, MapData};
    use dataplane_common::buffer::TcRow;
    use dataplane_common::lossless::{EgressQueue, SharedPool};
    let map = |bpf: &mut Ebpf, n: &str| -> Result<()> {
        bpf.map_mut(n)
            .map(|_| ())
            .ok_or_else(|| anyhow!("no map {n} in the object"))
    };
    map(bpf, "QUEUES")?;
    {
        let mut q: Array<&mut MapData, EgressQueue> =
            Array::try_from(bpf.map_mut(names::map::QUEUES).expect("checked"))?;
        for i in 0..q.len() {
            q.set(i, EgressQueue::ZERO, 0)?;
        }
    }
    map(bpf, "TC_ROWS")?;
    {
        let mut r: Array<&mut MapData, TcRow> =
            Array::try_from(bpf.map_mut(names::map::TC_ROWS).expect("checked"))?;
        for i in 0..r.len() {
            r.set(i, TcRow::ZERO, 0)?;
        }
    }
    map(bpf, "POOL")?;
    let mut p: Array<&mut MapData, SharedPool> =
        Array::try_from(bpf.map_mut(names::map::POOL).expect("checked"))?;
    let cur = p.get(&0, 0)?;
    p.set(
        0,
        SharedPool {
            size: cur.size,
            used: 0,
        },
        0,
    )?;
    Ok(())
}

/// Every port counter and forwarding counter by `#<port id>:<name>` (and,
/// with `lossless`, the lossless stage's counters but the derived
/// `tx_pfc[..]` sums), the global ones by `global:<name>`: what a fixture
/// compares before and after a run.
pub fn counter_snapshot(
    bpf: &Ebpf,
    lossless: bool,
) -> Result<std::collections::BTreeMap<String, u64>> {
    use aya::maps::{MapData, PerCpuArray};
    use dataplane_common::buffer::LosslessCounters;
    use dataplane_common::maps::{GlobalCounters, PortCounters, MAX_PORTS};
    use dataplane_common::route::FwdCounters;
    let get = |n: &str| {
        bpf.map(n)
            .ok_or_else(|| anyhow!("no map {n} in the object"))
    };
    let pc: PerCpuArray<&MapData, PortCounters> = PerCpuArray::try_from(get("PORT_COUNTERS")?)?;
    let fc: PerCpuArray<&MapData, FwdCounters> = PerCpuArray::try_from(get("FWD_COUNTERS")?)?;
    let lc: PerCpuArray<&MapData, LosslessCounters> =
        PerCpuArray::try_from(get("LOSSLESS_COUNTERS")?)?;
    let mut all = std::collections::BTreeMap::new();
    for id in 0..MAX_PORTS as u16 {
        let mut fields: Vec<(String, u64)> = dataplane_user::telemetry::stats::port_fields(
            &dataplane_user::telemetry::counters::read_port_counters(&pc, id)?,
        )
        .into_iter()
        .chain(dataplane_user::telemetry::stats::fwd_fields(
            &dataplane_user::telemetry::counters::read_fwd_counters(&fc, id)?,
        ))
        .collect();
        if lossless {
            let mut l = LosslessCounters::ZERO;
            for c in lc.get(&u32::from(id), 0)?.iter() {
                l.accumulate(c);
            }
            fields.extend(
                dataplane_user::telemetry::stats::lossless_fields(&l)
                    .into_iter()
                    .filter(|(n, _)| !n.starts_with("tx_pfc[")),
            );
        }
        for (n, v) in fields {
            all.insert(format!("#{id}:{n}"), v);
        }
    }
    let gm: PerCpuArray<&MapData, GlobalCounters> = PerCpuArray::try_from(get("GLOBAL_COUNTERS")?)?;
    let g = dataplane_user::telemetry::counters::read_global_counters(&gm)?;
    all.insert("global:unknown_port".into(), g.unknown_port);
    all.insert("global:bad_port_id".into(), g.bad_port_id);
    Ok(all)
}

/// Attaches XDP program `prog` to `dev` (an idle interface of the calling
/// thread's namespace) for the life of `bpf`. Each BPF_PROG_TEST_RUN of an
/// XDP program attached nowhere adds it to the kernel's XDP dispatcher and
/// removes it again (a synchronize_rcu, milliseconds per call); attached,
/// it stays in. The kernel's timing covers only the runs either way.
pub fn park(bpf: &mut Ebpf, prog: &str, dev: &str) -> Result<()> {
    use aya::programs::XdpMode;
    let ix = dataplane_user::sys::ifindex(dev).ok_or_else(|| anyhow!("no interface {dev}"))?;
    let p: &mut Xdp = bpf
        .program_mut(prog)
        .ok_or_else(|| anyhow!("no program {prog}"))?
        .try_into()?;
    p.attach_to_if_index(ix, XdpMode::Driver)
        .with_context(|| format!("attaching {prog} to the idle {dev}"))?;
    Ok(())
}

/// Parks each of `progs` (see [`park`]) on an idle veth of its own, made in
/// `ns` and named `{prefix}{i}`. Benchmarks that time short calls need it:
/// a call that swaps the program into the dispatcher starts after an RCU
/// wait, with cold caches, and its few hundred runs time the warm-up.
pub fn park_all(
    ns: &crate::netns::Netns,
    bpf: &mut Ebpf,
    progs: &[&str],
    prefix: &str,
) -> Result<()> {
    for (i, prog) in progs.iter().enumerate() {
        let dev = format!("{prefix}{i}");
        ns.add_ports(&[&dev])?;
        park(bpf, prog, &dev)?;
    }
    Ok(())
}
