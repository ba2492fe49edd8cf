//! The rig of `dataplane-fwdbench`: the live-frames generator, the
//! counting sinks, and the minimal forwarder (the physical limit).

use super::*;
use aya::maps::{Array, DevMap, PerCpuArray};
use aya::programs::{TestRun, TestRunAttrs, TestRunOptions, Xdp, XdpMode};
use aya::Ebpf;
use dataplane_common::build::{self, Ip, L2};
use dataplane_common::wire::bth::{Bth, OP_WRITE_MIDDLE};
use dataplane_user::object::load_object;
use testbed::testrun::XdpMd;

/// The eight flows, one frame each, from `src` to the switch port `dst`.
fn frames(dst: [u8; 6], src: [u8; 6]) -> Vec<Vec<u8>> {
    let l2 = L2::new(dst, src);
    (0..FLOWS)
        .map(|i| {
            let ip = Ip::v4(SRC, DST).dscp(26).ecn(2);
            let bth = Bth::request(OP_WRITE_MIDDLE, 0x100 + u32::from(i), 1);
            // 58 bytes of headers (Eth, IPv4, UDP, BTH, ICRC) + payload
            let f = build::rocev2_frame(
                &l2,
                &ip,
                49152 + 101 * i,
                &bth,
                None,
                &[0x5a; FRAME_LEN - 58],
            );
            debug_assert_eq!(f.len(), FRAME_LEN);
            f
        })
        .collect()
}

/// The live-frames generator: `xdp_bench_tx` sends its frame out of g0.
pub(crate) struct Generator {
    bpf: Ebpf,
    frames: Vec<Vec<u8>>,
    ctxs: Vec<XdpMd>,
    repeat: u32,
    batch: u32,
}

impl Generator {
    /// `quiet` is an interface of `ns` that carries no traffic: the program
    /// stays attached there for the generator's life. Every BPF_PROG_RUN of
    /// an XDP program that is not attached anywhere adds it to the kernel's
    /// XDP dispatcher and removes it again, each costing a synchronize_rcu
    /// (measured: ~24 ms per call, i.e. 10 kpps); attached, it stays in.
    pub(crate) fn new(
        ns: &Netns,
        (g0, src, dst): (&str, [u8; 6], [u8; 6]),
        quiet: &str,
        repeat: u32,
        batch: u32,
    ) -> Result<Generator> {
        let mut bpf = load_object()?;
        let g0_ifindex = {
            let _in = ns.enter()?;
            let g0_ifindex = sys::ifindex(g0).ok_or_else(|| anyhow!("no {g0} in {}", ns.name))?;
            let qx = sys::ifindex(quiet).ok_or_else(|| anyhow!("no {quiet} in {}", ns.name))?;
            let p: &mut Xdp = bpf
                .program_mut("xdp_bench_tx")
                .ok_or_else(|| anyhow!("no program xdp_bench_tx"))?
                .try_into()?;
            p.attach_to_if_index(qx, XdpMode::Driver)
                .with_context(|| format!("attaching xdp_bench_tx to {quiet}"))?;
            g0_ifindex
        };
        let frames = frames(dst, src);
        let ctxs = frames
            .iter()
            .map(|f| XdpMd::new(f.len(), g0_ifindex))
            .collect();
        Ok(Generator {
            bpf,
            frames,
            ctxs,
            repeat,
            batch,
        })
    }

    /// Sends for `dur` (the calling thread must be in the generator's
    /// namespace); returns (frames offered, time taken).
    pub(crate) fn run(&self, dur: Duration) -> Result<(u64, Duration)> {
        let prog: &Xdp = self
            .bpf
            .program("xdp_bench_tx")
            .ok_or_else(|| anyhow!("no program xdp_bench_tx"))?
            .try_into()
            .context("xdp_bench_tx is not XDP")?;
        let start = Instant::now();
        let mut calls: u64 = 0;
        while start.elapsed() < dur {
            check_interrupt()?;
            for (frame, md) in self.frames.iter().zip(&self.ctxs) {
                let ctx = md.as_bytes();
                prog.test_run(TestRunOptions {
                    data_in: Some(frame),
                    ctx_in: Some(ctx),
                    repeat: self.repeat,
                    attrs: TestRunAttrs::new().xdp_live_frames(self.batch),
                    ..Default::default()
                })
                .context("BPF_PROG_RUN (live frames) of xdp_bench_tx")?;
                calls += 1;
            }
        }
        Ok((calls * u64::from(self.repeat), start.elapsed()))
    }
}

/// `xdp_bench_sink` attached to one interface, with its own counters.
pub(crate) struct Sink {
    bpf: Ebpf,
    pub(crate) name: &'static str,
}

impl Sink {
    pub(crate) fn attach(ns: &Netns, name: &'static str) -> Result<Sink> {
        let mut bpf = load_object()?;
        {
            let _in = ns.enter()?;
            let ix =
                sys::ifindex(name).ok_or_else(|| anyhow!("no interface {name} in {}", ns.name))?;
            let p: &mut Xdp = bpf
                .program_mut("xdp_bench_sink")
                .ok_or_else(|| anyhow!("no program xdp_bench_sink"))?
                .try_into()?;
            // a bpf_link: detached when `bpf` drops, from any namespace
            p.attach_to_if_index(ix, XdpMode::Driver)
                .with_context(|| format!("attaching xdp_bench_sink to {name}"))?;
        }
        Ok(Sink { bpf, name })
    }

    /// Frames counted so far, summed over CPUs.
    pub(crate) fn frames(&self) -> Result<u64> {
        let m: PerCpuArray<_, u64> = PerCpuArray::try_from(
            self.bpf
                .map(names::map::BENCH_SINK)
                .ok_or_else(|| anyhow!("no map BENCH_SINK"))?,
        )?;
        Ok(m.get(&0, 0).context("reading BENCH_SINK")?.iter().sum())
    }
}

/// The minimal forwarder attached to sw0 while this lives.
pub(crate) struct Limit {
    _bpf: Ebpf,
}

impl Limit {
    pub(crate) fn attach(sw: &Netns) -> Result<Limit> {
        let mut bpf = load_object()?;
        let _in = sw.enter()?;
        let ifindex = |n: &str| sys::ifindex(n).ok_or_else(|| anyhow!("no {n} in {}", sw.name));
        let (sw0, up1) = (ifindex("sw0")?, ifindex("up1")?);
        let mut macs = [0u8; 12];
        macs[..6].copy_from_slice(&MAC_S1);
        macs[6..].copy_from_slice(&MAC_UP1);
        let no = |n: &str| anyhow!("no map {n}");
        Array::<_, [u8; 12]>::try_from(
            bpf.map_mut(names::map::BENCH_FWD_MACS)
                .ok_or_else(|| no(names::map::BENCH_FWD_MACS))?,
        )?
        .set(0, macs, 0)?;
        DevMap::try_from(
            bpf.map_mut(names::map::BENCH_FWD_TX)
                .ok_or_else(|| no(names::map::BENCH_FWD_TX))?,
        )?
        .set(0, up1, None, 0)?;
        let p: &mut Xdp = bpf
            .program_mut(names::prog::XDP_BENCH_FORWARD)
            .ok_or_else(|| anyhow!("no program xdp_bench_forward"))?
            .try_into()?;
        p.attach_to_if_index(sw0, XdpMode::Driver)
            .context("attaching xdp_bench_forward to sw0")?;
        Ok(Limit { _bpf: bpf })
    }
}
