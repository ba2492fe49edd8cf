//! The buffer model on two CPUs at once: two threads, each pinned to its
//! own CPU, run the full pipeline (`xdp_forward` and its egress stage)
//! through BPF_PROG_TEST_RUN, each from its own ingress port to its own
//! egress queue, then both concurrently; afterwards the model's books
//! must balance.
//!
//! * `model.one_cpu_pps`, `model.two_cpu_pps` (ratio: the scaling):
//!   packets per second of one alone and of the two together, from the
//!   kernel's own time per run (the syscall around it not counted), the
//!   same packets in both phases;
//! * the books ([`dataplane_common::buffer::books`]): every queue's bytes
//!   are its per-slot bytes, every PG holds exactly what the queues hold
//!   for it, the pool's use is the PGs' shared use; and for each egress
//!   port, bytes forwarded (admitted) = bytes drained + bytes queued;
//!   `model_busy` (a lock not taken in time) must be 0. A failed check
//!   fails the bench.
//!
//! The egress ports run at [`EGRESS_MBPS`], about what one CPU offers, so
//! the queues build and drain and the admission paths (shared, headroom,
//! XOFF, and with nobody honouring it the odd headroom drop) all run under
//! contention while most packets are forwarded.

use std::os::fd::{AsFd, AsRawFd};
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use aya::maps::{Array, MapData, PerCpuArray};
use aya::programs::Xdp;
use aya::Ebpf;
use dataplane_common::buffer::{books, LosslessCounters, TcRow, NUM_TC};
use dataplane_common::build::{self, Ip, L2};
use dataplane_common::lossless::{EgressQueue, SharedPool, MODEL_PORTS};
use dataplane_common::names;
use dataplane_common::route::FwdCounters;
use dataplane_common::wire::bth::{Bth, OP_WRITE_MIDDLE};
use dataplane_user::object::load_object;
use dataplane_user::sys::prog_test_run;
use dataplane_user::tables::apply_config_text;
use dataplane_user::telemetry::counters::read_fwd_counters;
use testbed::bench::Record;
use testbed::config_text::ConfigText;
use testbed::netns::Netns;
use testbed::testrun::{XdpMd, XDP_PASS, XDP_REDIRECT};

/// The egress ports' speed: about what one CPU offers in 60-byte frames,
/// so the queues build and drain, the PGs go into headroom and XOFF is
/// decided now and then, while most packets are forwarded.
const EGRESS_MBPS: u32 = 800;
/// Runs per call (the frames carry TTL 255).
const REPEAT: u32 = 250;
/// The two flows: ingress port, its MAC (also the next hop's, so a
/// rewritten frame stays routable), egress port, destination network.
const FLOWS: [(&str, [u8; 6], &str, u8); 2] = [
    ("s0", [2, 0, 0, 0, 0xc, 0], "s2", 2),
    ("s1", [2, 0, 0, 0, 0xc, 1], "s3", 3),
];

fn config() -> String {
    let mut c = ConfigText::new("dataplane-bench (2-CPU stress)");
    c.switch("stress", 7, "");
    c.raw("[buffer]\npool_size = 1048576\n\n");
    for (i, (ing, mac, eg, _)) in FLOWS.iter().enumerate() {
        c.port(
            ing,
            *mac,
            100_000,
            "pfc_enable = \"3\"\nheadroom_xoff = 65536\n",
        );
        c.port(
            eg,
            [2, 0, 0, 0, 0xc, 2 + i as u8],
            EGRESS_MBPS,
            "pfc_enable = \"3\"\n",
        );
    }
    for (ing, mac, eg, net) in FLOWS {
        let nh = format!("to_{ing}");
        c.nexthop(&nh, eg, mac);
        c.route_nexthop(&format!("198.18.{net}.0/24"), &nh);
    }
    c.0
}

/// A 60-byte lossless (DSCP 3) RoCEv2 frame of flow `i`, TTL 255.
fn frame(i: usize) -> Vec<u8> {
    let (_, mac, _, net) = FLOWS[i];
    let l2 = L2::new(mac, [2, 0, 0, 0, 0, 1]);
    let ip = Ip::v4([198, 18, 0, 1], [198, 18, net, 1])
        .dscp(3)
        .ecn(2)
        .ttl(255);
    let bth = Bth::request(OP_WRITE_MIDDLE, 0x11 + i as u32, 7);
    build::rocev2_frame(&l2, &ip, 49152, &bth, None, &[0x5a; 2])
}

/// Runs flow `i` for `packets` on `cpu` through program `fd`: (kernel time
/// of the runs in ns, calls whose last run did not return `expect`).
fn drive(
    fd: i32,
    i: usize,
    ifindex: u32,
    cpu: usize,
    packets: u64,
    expect: u32,
) -> Result<(f64, u64)> {
    testbed::bench::pin_to_cpu(cpu)?;
    let f = frame(i);
    let md = XdpMd::new(f.len(), ifindex);
    let (mut ns, mut other) = (0f64, 0u64);
    let mut done = 0;
    while done < packets {
        let r = prog_test_run(fd, &f, Some(md.as_bytes()), REPEAT, 0)
            .with_context(|| format!("BPF_PROG_TEST_RUN on CPU {cpu}"))?;
        // the kernel times every run; a drop (headroom exhausted) is one
        if r.retval != expect {
            other += 1;
        }
        ns += f64::from(r.duration_ns) * f64::from(REPEAT);
        done += u64::from(REPEAT);
    }
    Ok((ns, other))
}

struct Ports {
    ifindex: [u32; 2],
    /// Port ids of the egress ports.
    egress: [u16; 2],
}

fn setup(ns: &Netns, bpf: &mut Ebpf) -> Result<Ports> {
    ns.add_ports(&["s0", "s1", "s2", "s3"])?;
    let (_, ports) = apply_config_text(bpf, &config(), "stress")?;
    testbed::testrun::park_all(
        ns,
        bpf,
        &[names::prog::XDP_FORWARD, names::prog::XDP_CLASSIFY],
        "sq",
    )?;
    Ok(Ports {
        ifindex: [ports[0].ifindex, ports[2].ifindex],
        egress: [ports[1].config.port_id, ports[3].config.port_id],
    })
}

/// What the books say after the runs; `Err` names the first imbalance.
fn check_books(bpf: &Ebpf, ports: &Ports) -> Result<(u64, u64)> {
    let map = |n: &str| bpf.map(n).ok_or_else(|| anyhow!("no map {n}"));
    let q: Array<&MapData, EgressQueue> = Array::try_from(map(names::map::QUEUES)?)?;
    let r: Array<&MapData, TcRow> = Array::try_from(map(names::map::TC_ROWS)?)?;
    let p: Array<&MapData, SharedPool> = Array::try_from(map(names::map::POOL)?)?;
    let queues: Vec<EgressQueue> = (0..(MODEL_PORTS * NUM_TC) as u32)
        .map(|i| q.get(&i, 0))
        .collect::<Result<_, _>>()?;
    let rows: Vec<TcRow> = (0..NUM_TC as u32)
        .map(|i| r.get(&i, 0))
        .collect::<Result<_, _>>()?;
    let pool = p.get(&0, 0)?;
    books(&queues, &rows, &pool)
        .map_err(|e| anyhow!("the buffer model's books do not balance: {e:?}"))?;
    let fwd: PerCpuArray<&MapData, FwdCounters> =
        PerCpuArray::try_from(map(names::map::FWD_COUNTERS)?)?;
    for &port in &ports.egress {
        let tx: u64 = read_fwd_counters(&fwd, port)?.tx_tc_bytes.iter().sum();
        let q = &queues[usize::from(port) * NUM_TC + 3];
        if tx != q.tx_bytes + u64::from(q.bytes) {
            bail!(
                "port {port}: {tx} bytes forwarded (admitted) but {} drained + {} queued",
                q.tx_bytes,
                q.bytes
            );
        }
    }
    let lc: PerCpuArray<&MapData, LosslessCounters> =
        PerCpuArray::try_from(map(names::map::LOSSLESS_COUNTERS)?)?;
    let (mut busy, mut drops) = (0, 0);
    for port in 0..MODEL_PORTS as u32 {
        for c in lc.get(&port, 0)?.iter() {
            busy += c.model_busy;
            drops += c.drop_headroom.iter().sum::<u64>();
        }
    }
    if busy > 0 {
        bail!("model_busy = {busy}: a lock was not taken within its spin bound");
    }
    Ok((pool.used.into(), drops))
}

/// One CPU with `packets`, then two CPUs at once with half each, through
/// program `fd`: (pps alone, pps together, calls not returning `expect`).
fn phases(
    fd: i32,
    ports: &Ports,
    packets: u64,
    expect: u32,
    name: &str,
) -> Result<(f64, f64, u64)> {
    eprintln!("stress {name}: {packets} packets on one CPU, then {packets} over two CPUs at once");
    let t = Instant::now();
    let (one_ns, o1) = drive(fd, 0, ports.ifindex[0], 0, packets, expect)?;
    eprintln!("  one CPU: {:.1} s", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let half = packets / 2;
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| drive(fd, 0, ports.ifindex[0], 0, half, expect));
        let b = s.spawn(|| drive(fd, 1, ports.ifindex[1], 1, half, expect));
        (a.join(), b.join())
    });
    let ((a_ns, oa), (b_ns, ob)) = (
        a.map_err(|_| anyhow!("stress thread panicked"))??,
        b.map_err(|_| anyhow!("stress thread panicked"))??,
    );
    eprintln!("  two CPUs: {:.1} s", t.elapsed().as_secs_f64());
    let one = packets as f64 / one_ns * 1e9;
    let two = half as f64 / a_ns * 1e9 + half as f64 / b_ns * 1e9;
    Ok((one, two, o1 + oa + ob))
}

/// Runs the stress with `packets` in each phase; the calling thread is in
/// `ns`.
pub fn measure(ns: &Netns, packets: u64, machine: &str) -> Result<Vec<Record>> {
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    if cpus < 2 {
        eprintln!("stress: {cpus} CPU, the 2-CPU stress needs 2: skipped");
        return Ok(Vec::new());
    }
    let mut bpf = load_object()?;
    let ports = setup(ns, &mut bpf)?;
    let fd = |name: &str| -> Result<i32> {
        let p: &Xdp = bpf
            .program(name)
            .ok_or_else(|| anyhow!("no program {name}"))?
            .try_into()?;
        Ok(p.fd()?.as_fd().as_raw_fd())
    };
    // the machine's own scaling first: xdp_classify shares nothing
    // written between CPUs (per-CPU counters only)
    let (c1, c2, _) = phases(
        fd(names::prog::XDP_CLASSIFY)?,
        &ports,
        packets,
        XDP_PASS,
        "xdp_classify",
    )?;
    let (one, two, other) = phases(
        fd(names::prog::XDP_FORWARD)?,
        &ports,
        packets,
        XDP_REDIRECT,
        "xdp_forward",
    )?;
    let (pool_used, drops) = check_books(&bpf, &ports)?;
    let note = format!(
        "xdp_forward (+ egress stage, buffer model) through BPF_PROG_TEST_RUN, 60-byte lossless RoCEv2 frames, \
         {packets} packets per phase ({REPEAT} runs per call), one thread pinned per CPU, each from its own ingress \
         port to its own {EGRESS_MBPS} Mb/s egress queue; rate from the kernel's time per run; afterwards the books balance \
         (queues = per-slot bytes, PGs = what the queues hold, pool = PGs' shared use, forwarded = drained + \
         queued per egress port; pool in use {pool_used} B), model_busy 0; {drops} headroom drops and {other} calls \
         not redirected on the way (nobody honours the XOFFs); the machine's own scaling in the same run: \
         xdp_classify (nothing shared written) {:.2}x",
        c2 / c1
    );
    let limit = format!(
        "xdp_classify on the same frames and CPUs, {packets} packets per phase: what two CPUs give a program that \
         shares nothing it writes (the machine's limit for model.two_cpu_pps's ratio)"
    );
    Ok(vec![
        Record {
            figure: "stress.classify_one_cpu_pps".into(),
            value: c1,
            unit: "pps".into(),
            baseline: None,
            ratio: None,
            machine: machine.into(),
            note: Some(limit.clone()),
        },
        Record::against(
            "stress.classify_two_cpu_pps".into(),
            c2,
            "pps",
            ("stress.classify_one_cpu_pps", c1),
            machine,
            limit,
        ),
        Record {
            figure: "model.one_cpu_pps".into(),
            value: one,
            unit: "pps".into(),
            baseline: None,
            ratio: None,
            machine: machine.into(),
            note: Some(note.clone()),
        },
        Record::against(
            "model.two_cpu_pps".into(),
            two,
            "pps",
            ("model.one_cpu_pps", one),
            machine,
            note,
        ),
    ])
}
