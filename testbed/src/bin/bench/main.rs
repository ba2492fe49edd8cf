//! `dataplane-bench`: per-packet cost of the pipeline stages through
//! BPF_PROG_TEST_RUN, written to target/bench/results.json.
//!
//! Figures (64-byte RoCEv2 frame; `_1k` for a 1 KB one):
//! * `cost.bare.ns_per_pkt`: an XDP program that only returns (baseline);
//! * `cost.parse.ns_per_pkt`: the shared parser alone;
//! * `cost.classify.ns_per_pkt`: parse + port lookup + classify + per-CPU
//!   counters (the production `xdp_classify`);
//! * `cost.full_pipeline.ns_per_pkt`: `xdp_forward` routing through a
//!   bandwidth-mode group and the buffer model;
//! * `cost.unit.<unit>.ns_per_pkt`: what one operation the pipeline repeats
//!   costs on this kernel and CPU, a one-operation program's median less the
//!   bare program's in the same rounds: `clock` (`bpf_ktime_get_ns`, once a
//!   routed packet), `helper` (a helper call doing almost nothing:
//!   `bpf_get_prandom_u32`), `lookup` (a hash-map hit: `PORT_CONFIG`);
//! * `cost.stage.<stage>.ns_per_pkt`: the pipeline's cost stage by stage
//!   ([`stages`]).
//!
//! The kernel times `repeat` runs of the same buffer and reports the mean;
//! none of these programs rewrites the frame, so reuse is harmless. Rounds
//! interleave the programs so drift hits all of them alike; the median round
//! is reported and ratios are taken within this one run. Every timed
//! program is parked on an idle veth first (`testbed::testrun::park_all`),
//! so it runs warm, as on a port: unparked, each call waited for the kernel
//! to patch the program into its XDP dispatcher, and the full pipeline's
//! 250 runs a call timed cold caches (249 ns against 202 ns parked, same
//! build; a stage moved by up to 100 ns from run to run).

mod stages;
mod stress;

use std::path::PathBuf;

use anyhow::Result;
use clap::Parser;
use dataplane_common::build::{self, Ip, L2};
use dataplane_common::wire::bth::{Bth, OP_WRITE_MIDDLE};
use dataplane_user::object::load_object;
use dataplane_user::tables::apply_config_text;
use testbed::bench::{machine, merge_results, Record};
use testbed::netns::Netns;
use testbed::testrun::{park_all, run_xdp};

#[derive(Parser)]
struct Args {
    /// Repetitions per kernel call.
    #[arg(long, default_value_t = 200_000)]
    repeat: u32,
    /// Interleaved rounds (median reported).
    #[arg(long, default_value_t = 15)]
    rounds: usize,
    /// Packets per phase of the 2-CPU stress of the buffer model (0: skip).
    #[arg(long, default_value_t = 10_000_000)]
    stress_packets: u64,
    /// Results file (records are merged by figure name).
    #[arg(long, default_value = "target/bench/results.json")]
    out: PathBuf,
    /// Profiling aid: run only these stage probes (comma list of probe
    /// names, e.g. nexthop_v4,nexthop_v4_model) in a loop for
    /// `--profile-seconds`, print each one's median ns and write nothing
    /// (for `perf record -a` to see where one probe's time goes).
    #[arg(long, value_delimiter = ',')]
    profile: Vec<String>,
    #[arg(long, default_value_t = 20)]
    profile_seconds: u64,
}

const B0_MAC: [u8; 6] = [2, 0, 0, 0, 0xb, 0];
const FULL_REPEAT: u32 = 250;
/// Calls of the full pipeline per round (the round's figure is their
/// median): each is FULL_REPEAT runs, about 0.1 ms.
const FULL_CALLS: usize = 61;
const FULL_PIPELINE_CONFIG: &str = r#"
[switch]
name = "bench"

[buffer]
pool_size = 16777216

[[port]]
name = "b0"
mac = "02:00:00:00:0b:00"
pfc_enable = "3,4"

[[port]]
name = "b1"
mac = "02:00:00:00:0b:01"
pfc_enable = "3,4"

[[nexthop]]
name = "loop"
port = "b1"
mac = "02:00:00:00:0b:00"

[[group]]
name = "g"
mode = "bandwidth"
members = [{ nexthop = "loop" }]

[[route]]
prefix = "198.18.1.0/24"
group = "g"
"#;

fn roce_frame(total: usize) -> Vec<u8> {
    let l2 = L2::new([2, 0, 0, 0, 0, 2], [2, 0, 0, 0, 0, 1]);
    let ip = Ip::v4([198, 18, 0, 1], [198, 18, 1, 1]).dscp(26).ecn(2);
    let bth = Bth::request(OP_WRITE_MIDDLE, 0x11, 7);
    // 14 + 20 + 8 + 12 + 4 = 58 bytes of headers; 64-byte wire frame = 60 + FCS
    build::rocev2_frame(
        &l2,
        &ip,
        49152,
        &bth,
        None,
        &vec![0x5a; total.saturating_sub(58)],
    )
}

fn main() -> Result<()> {
    let args = Args::parse();
    let ns = Netns::create("bench")?;
    let _in = ns.enter()?;
    // no IPv6 chatter (DAD, MLD, router solicitations) from the veths'
    // peers into the parked programs while they are timed
    ns.disable_ipv6()?;
    ns.add_ports(&["b0", "b1"])?;
    if !args.profile.is_empty() {
        return stages::profile(&ns, &args.profile, args.profile_seconds);
    }
    let mut bpf = load_object()?;
    let (_, ix) = apply_config_text(&mut bpf, FULL_PIPELINE_CONFIG, "bench")?;
    let ifindex = ix[0].ifindex;
    // the full pipeline: a frame routed via a bandwidth-mode group through
    // the buffer model. Its next hop's MAC is the ingress port's own, so the
    // rewritten frame (the kernel reuses the buffer across repeats) is
    // routed again; TTL 255 lasts FULL_REPEAT runs.
    let full_frame = {
        let l2 = L2::new(B0_MAC, [2, 0, 0, 0, 0, 1]);
        let ip = Ip::v4([198, 18, 0, 1], [198, 18, 1, 1])
            .dscp(3)
            .ecn(2)
            .ttl(255);
        let bth = Bth::request(OP_WRITE_MIDDLE, 0x11, 7);
        build::rocev2_frame(&l2, &ip, 49152, &bth, None, &[0x5a; 2])
    };
    let mut full: Vec<f64> = Vec::new();
    // frame sizes without FCS: 60 bytes = a 64-byte frame on the wire
    let frames = [("", roce_frame(60)), ("_1k", roce_frame(1024))];
    let progs = [
        ("bare", "xdp_bench_bare"),
        ("parse", "xdp_bench_parse"),
        ("classify", "xdp_classify"),
    ];
    let units = [
        ("clock", "xdp_bench_clock"),
        ("helper", "xdp_bench_helper"),
        ("lookup", "xdp_bench_lookup"),
    ];
    // every program timed here runs warm, as on a port (see `park_all`)
    let timed: Vec<&str> = progs
        .iter()
        .chain(&units)
        .map(|(_, p)| *p)
        .chain(["xdp_forward"])
        .collect();
    park_all(&ns, &mut bpf, &timed, "q")?;
    let mut unit_samples: Vec<Vec<f64>> = vec![Vec::new(); units.len()];
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); frames.len() * progs.len()];
    eprintln!(
        "bench: {} rounds x {} programs x {} frames, {} runs per call",
        args.rounds,
        progs.len(),
        frames.len(),
        args.repeat
    );
    for round in 0..args.rounds {
        for (fi, (_, frame)) in frames.iter().enumerate() {
            for (pi, (_, prog)) in progs.iter().enumerate() {
                let r = run_xdp(&bpf, prog, frame, ifindex, args.repeat)?;
                samples[fi * progs.len() + pi].push(r.per_run.as_nanos() as f64);
            }
        }
        for (ui, (_, prog)) in units.iter().enumerate() {
            let r = run_xdp(&bpf, prog, &frames[0].1, ifindex, args.repeat)?;
            if r.action != testbed::testrun::XDP_PASS {
                anyhow::bail!(
                    "{prog} returned {}",
                    testbed::testrun::action_name(r.action)
                );
            }
            unit_samples[ui].push(r.per_run.as_nanos() as f64);
        }
        let mut calls = Vec::with_capacity(FULL_CALLS);
        for _ in 0..FULL_CALLS {
            let r = run_xdp(&bpf, "xdp_forward", &full_frame, ifindex, FULL_REPEAT)?;
            if r.action != testbed::testrun::XDP_REDIRECT {
                anyhow::bail!(
                    "full pipeline frame was not routed ({})",
                    testbed::testrun::action_name(r.action)
                );
            }
            calls.push(r.per_run.as_nanos() as f64);
        }
        full.push(stages::median(&calls));
        eprintln!("  round {}/{} done", round + 1, args.rounds);
    }
    let median = |v: &Vec<f64>| stages::median(v);
    let m = machine();
    let mut records = Vec::new();
    for (fi, (suffix, frame)) in frames.iter().enumerate() {
        let bare = median(&samples[fi * progs.len()]);
        for (pi, (stage, _)) in progs.iter().enumerate() {
            let v = median(&samples[fi * progs.len() + pi]);
            let is_base = pi == 0;
            records.push(Record {
                figure: format!("cost.{stage}{suffix}.ns_per_pkt"),
                value: v,
                unit: "ns/pkt".into(),
                baseline: if is_base {
                    None
                } else {
                    Some(format!("cost.bare{suffix}.ns_per_pkt"))
                },
                ratio: if is_base || bare <= 0.0 {
                    None
                } else {
                    Some(v / bare)
                },
                machine: m.clone(),
                note: Some(format!(
                    "{}-byte RoCEv2 frame, BPF_PROG_TEST_RUN repeat {} of the program parked on an idle veth, median of {} rounds",
                    frame.len(),
                    args.repeat,
                    args.rounds
                )),
            });
        }
    }
    {
        let bare = median(&samples[0]);
        let v = median(&full);
        records.push(Record {
            figure: "cost.full_pipeline.ns_per_pkt".into(),
            value: v,
            unit: "ns/pkt".into(),
            baseline: Some("cost.bare.ns_per_pkt".into()),
            ratio: Some(v / bare),
            machine: m.clone(),
            note: Some(format!(
                "{}-byte RoCEv2 frame through xdp_forward + tail call xdp_forward_egress: classify, LPM route, bandwidth-mode group, \
                 buffer model (drain, WRED/ECN, PG admission, PFC evaluation, model lock), rewrite, redirect; repeat {FULL_REPEAT} \
                 (TTL 255), parked on an idle veth (warm), median of {} rounds of the median of {FULL_CALLS} calls",
                full_frame.len(),
                args.rounds
            )),
        });
    }
    {
        let bare = median(&samples[0]);
        for ((unit, prog), v) in units.iter().zip(&unit_samples) {
            let d = median(v) - bare;
            records.push(Record {
                figure: format!("cost.unit.{unit}.ns_per_pkt"),
                value: d,
                unit: "ns/pkt".into(),
                baseline: Some("cost.bare.ns_per_pkt".into()),
                ratio: (bare > 0.0).then(|| d / bare),
                machine: m.clone(),
                note: Some(format!(
                    "{prog} ({:.1} ns) less xdp_bench_bare, medians of the same {} rounds, repeat {}",
                    median(v),
                    args.rounds,
                    args.repeat
                )),
            });
        }
    }
    records.extend(stages::measure(&ns, args.rounds, &m)?);
    if args.stress_packets > 0 {
        records.extend(stress::measure(&ns, args.stress_packets, &m)?);
    }
    println!(
        "{:<32} {:>10} {:>8}   baseline",
        "figure", "ns/pkt", "ratio"
    );
    for r in &records {
        println!(
            "{:<32} {:>10.1} {:>8}   {}",
            r.figure,
            r.value,
            r.ratio
                .map(|x| format!("{x:.2}x"))
                .unwrap_or_else(|| "-".into()),
            r.baseline.clone().unwrap_or_else(|| "(baseline)".into())
        );
    }
    println!("machine: {}", m);
    merge_results(&args.out, &records)?;
    println!("written to {}", args.out.display());
    Ok(())
}
