//! `dataplane-pfcbench`: how long from the data plane's PFC decision to the
//! frame being handed to the wire, with the controller's own mechanism
//! (ring buffer -> poll wake-up -> AF_PACKET send).
//!
//! A PG is put into headroom, then a lossless packet through `xdp_forward`
//! (BPF_PROG_TEST_RUN) makes the model decide XOFF; a thread blocked in
//! poll(2) on the ring buffer wakes, sends the 802.1Qbb frame with the
//! controller's `PfcPort`, and records now - decision time (both
//! CLOCK_MONOTONIC). Results: `pfc.emit_latency_p50_us`,
//! `pfc.emit_latency_p99_us` in target/bench/results.json. The headroom
//! formula's `response_us` should cover the p99.
//!
//! Then the same decisions with the data plane sending the frames itself
//! (`pfc_tx = "dataplane"`): `xdp_forward` runs in live-frames mode on b0,
//! the packet is broadcast to `PFC_BCAST`, `xdp_devmap_pfc` writes the
//! 802.1Qbb frame for b0 and records when it handed it to the port
//! (`PfcEvent::sent_ns`, CLOCK_MONOTONIC like the decision). Results:
//! `pfc.dp.emit_latency_p50_us`, `pfc.dp.emit_latency_p99_us`, with the
//! userspace p99 as baseline.

use dataplane_common::names;
use std::os::fd::{AsFd, AsRawFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use aya::maps::{Array, MapData, RingBuf};
use clap::Parser;
use dataplane_common::buffer::{PfcEvent, TcRow, PFC_EV_SENT};
use dataplane_common::build::{self, Ip, L2};
use dataplane_common::wire::bth::{Bth, OP_WRITE_MIDDLE};
use dataplane_user::lossless::emitter::percentile;
use dataplane_user::lossless::pfc::PfcPort;
use dataplane_user::object::load_object;
use dataplane_user::tables::apply_config_text;
use testbed::bench::{machine, merge_results, Record};
use testbed::netns::Netns;
use testbed::testrun::run_xdp;

#[derive(Parser)]
struct Args {
    /// PFC decisions to measure.
    #[arg(long, default_value_t = 2000)]
    samples: usize,
    #[arg(long, default_value = "target/bench/results.json")]
    out: PathBuf,
}

const CONFIG: &str = r#"
[switch]
name = "pfcbench"

[buffer]
pool_size = 16777216

[[port]]
name = "b0"
mac = "02:00:00:00:0b:00"
pfc_enable = "3"

[[port]]
name = "b1"
mac = "02:00:00:00:0b:01"
pfc_enable = "3"

[[nexthop]]
name = "n"
port = "b1"
mac = "02:00:00:00:0c:01"

[[route]]
prefix = "198.18.1.0/24"
nexthop = "n"
"#;

fn main() -> Result<()> {
    let args = Args::parse();
    let ns = Netns::create("pfcb")?;
    let _in = ns.enter()?;
    ns.add_ports(&["b0", "b1"])?;
    let mut bpf = load_object()?;
    let (_, ix) = apply_config_text(&mut bpf, CONFIG, "pfcbench")?;
    let mut ring: RingBuf<MapData> = RingBuf::try_from(
        bpf.take_map(names::map::PFC_EVENTS)
            .context(names::map::PFC_EVENTS)?,
    )?;
    let port = PfcPort::open("b0", ix[0].config.mac)?;

    let lat: Arc<Mutex<Vec<u64>>> = Arc::new(Mutex::new(Vec::new()));
    let dp_lat: Arc<Mutex<Vec<u64>>> = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let (lat2, dp_lat2, stop2) = (lat.clone(), dp_lat.clone(), stop.clone());
    let ns_name = ns.name.clone();
    let sender = std::thread::spawn(move || -> Result<()> {
        // this thread must live in the namespace too (the socket is bound
        // to b0 already; poll/send need nothing else)
        let _ = ns_name;
        let fd = ring.as_raw_fd();
        while !stop2.load(Ordering::Relaxed) {
            let mut pfd = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: poll on one valid fd.
            let n = unsafe { libc::poll(&mut pfd, 1, 100) };
            if n <= 0 {
                continue;
            }
            while let Some(item) = ring.next() {
                // SAFETY: the data plane writes PfcEvent records.
                let ev: PfcEvent =
                    unsafe { std::ptr::read_unaligned(item.as_ptr() as *const PfcEvent) };
                drop(item);
                if ev.flags & PFC_EV_SENT != 0 {
                    // the data plane sent it: its own record of when
                    dp_lat2
                        .lock()
                        .unwrap()
                        .push(ev.sent_ns.saturating_sub(ev.time_ns));
                    continue;
                }
                port.xoff(1 << (ev.prio & 7), ev.quanta)?;
                let now = dataplane_user::sys::monotonic_ns();
                lat2.lock().unwrap().push(now.saturating_sub(ev.time_ns));
            }
        }
        Ok(())
    });

    let frame = {
        let l2 = L2::new([2, 0, 0, 0, 0xb, 0], [2, 0, 0, 0, 0, 1]);
        let ip = Ip::v4([198, 18, 0, 1], [198, 18, 1, 1]).dscp(3).ecn(2);
        let bth = Bth::request(OP_WRITE_MIDDLE, 0x11, 7);
        build::rocev2_frame(&l2, &ip, 49152, &bth, None, &[0; 64])
    };
    eprintln!(
        "pfcbench: {} XOFF decisions, one per ms, sent by the controller",
        args.samples
    );
    decisions(&mut bpf, &frame, ix[0].ifindex, args.samples, false)?;
    // the data plane's own path: b0's peer takes redirected frames (GRO)
    for p in ["b0-peer", "b1-peer"] {
        testbed::netns::exec(&ns.name, &["ethtool", "-K", p, "gro", "on"])?;
    }
    let (plan_dp, _) = dataplane_user::tables::apply_config_text(
        &mut bpf,
        &CONFIG.replace("[buffer]", "[buffer]\npfc_tx = \"dataplane\""),
        "pfcbench",
    )?;
    let path = dataplane_user::lossless::pfc_path::select(&mut bpf, &plan_dp, &ix)?;
    eprintln!(
        "pfcbench: {} XOFF decisions, one per ms, sent by the data plane ({})",
        args.samples,
        path.name()
    );
    decisions(&mut bpf, &frame, ix[0].ifindex, args.samples, true)?;
    eprintln!(
        "pfcbench: {} XON decisions of the timer, one per ms, sent by the data plane",
        args.samples
    );
    let timer_lat = timer_decisions(&mut bpf, &plan_dp, &ix, args.samples)?;
    std::thread::sleep(Duration::from_millis(50));
    stop.store(true, Ordering::Relaxed);
    sender
        .join()
        .map_err(|_| anyhow::anyhow!("sender thread panicked"))??;
    let lat = lat.lock().unwrap().clone();
    if lat.len() < args.samples * 9 / 10 {
        bail!(
            "only {} of {} PFC decisions reached the wire",
            lat.len(),
            args.samples
        );
    }
    let dp_lat = dp_lat.lock().unwrap().clone();
    if dp_lat.len() < args.samples * 9 / 10 {
        bail!(
            "only {} of {} PFC decisions were sent by the data plane",
            dp_lat.len(),
            args.samples
        );
    }
    let p50 = percentile(&lat, 50.0).unwrap_or(0) as f64 / 1000.0;
    let p99 = percentile(&lat, 99.0).unwrap_or(0) as f64 / 1000.0;
    let max = lat.iter().copied().max().unwrap_or(0) as f64 / 1000.0;
    let m = machine();
    let note = format!(
        "{} XOFF decisions (xdp_forward via BPF_PROG_TEST_RUN) -> ring buffer -> poll(2) wake-up -> AF_PACKET send of an 802.1Qbb frame on a veth; time from the data plane's bpf_ktime_get_ns to sendto() return; max {max:.1} us",
        lat.len()
    );
    let records = vec![
        Record {
            figure: "pfc.emit_latency_p50_us".into(),
            value: p50,
            unit: "us".into(),
            baseline: None,
            ratio: None,
            machine: m.clone(),
            note: Some(note.clone()),
        },
        Record {
            figure: "pfc.emit_latency_p99_us".into(),
            value: p99,
            unit: "us".into(),
            baseline: None,
            ratio: None,
            machine: m.clone(),
            note: Some(note),
        },
    ];
    let us = |p| percentile(&dp_lat, p).unwrap_or(0) as f64 / 1000.0;
    let (dp50, dp99) = (us(50.0), us(99.0));
    let dpmax = dp_lat.iter().copied().max().unwrap_or(0) as f64 / 1000.0;
    let dp_note = format!(
        "{} XOFF decisions (xdp_forward in live-frames mode on a veth) -> devmap broadcast -> xdp_devmap_pfc writes the 802.1Qbb frame; time from the decision's bpf_ktime_get_ns to the frame handed to the port; max {dpmax:.1} us; baseline: the controller's path p99 in the same run",
        dp_lat.len()
    );
    if timer_lat.len() < args.samples * 9 / 10 {
        bail!(
            "only {} of {} timer decisions were sent by the data plane",
            timer_lat.len(),
            args.samples
        );
    }
    let tus = |p| percentile(&timer_lat, p).unwrap_or(0) as f64 / 1000.0;
    let (t50, t99) = (tus(50.0), tus(99.0));
    println!("PFC timer path (XON with no packet arriving) over {} frames: p50 {t50:.1} us, p99 {t99:.1} us (tick, then the timer thread's AF_PACKET send)", timer_lat.len());
    let mut records = records;
    for (fig, v) in [
        ("pfc.dp.timer_latency_p50_us", t50),
        ("pfc.dp.timer_latency_p99_us", t99),
    ] {
        records.push(Record {
            figure: fig.into(),
            value: v,
            unit: "us".into(),
            baseline: None,
            ratio: None,
            machine: m.clone(),
            note: Some(format!("{} XON decisions of xdp_lossless_tick (the PG quiet, its peer paused), each followed by the timer thread's send of what it queued (AF_PACKET); decision (the tick's clock read) to sendto() return", timer_lat.len())),
        });
    }
    for (fig, v) in [
        ("pfc.dp.emit_latency_p50_us", dp50),
        ("pfc.dp.emit_latency_p99_us", dp99),
    ] {
        records.push(Record {
            figure: fig.into(),
            value: v,
            unit: "us".into(),
            baseline: Some("pfc.emit_latency_p99_us".into()),
            ratio: (p99 > 0.0).then(|| v / p99),
            machine: m.clone(),
            note: Some(dp_note.clone()),
        });
    }
    println!("PFC decision-to-wire latency over {} frames: p50 {p50:.1} us, p99 {p99:.1} us, max {max:.1} us (sent by the controller)", lat.len());
    println!("PFC decision-to-wire latency over {} frames: p50 {dp50:.1} us, p99 {dp99:.1} us, max {dpmax:.1} us (sent by the data plane)", dp_lat.len());
    println!("machine: {m}");
    merge_results(&args.out, &records)?;
    println!("written to {}", args.out.display());
    Ok(())
}

/// `n` XOFF decisions, one per ms: the ingress PG (b0 = slot 0, TC3) put in
/// headroom with its PFC state reset, then a lossless frame through
/// `xdp_forward` (`live`: in live-frames mode, so its redirect happens).
fn decisions(bpf: &mut aya::Ebpf, frame: &[u8], ifindex: u32, n: usize, live: bool) -> Result<()> {
    let prog: &aya::programs::Xdp = bpf
        .program("xdp_forward")
        .context("xdp_forward")?
        .try_into()?;
    let fd = prog.fd()?.as_fd().as_raw_fd();
    let md = testbed::testrun::XdpMd::new(frame.len(), ifindex);
    for i in 0..n {
        {
            let mut rows: Array<&mut MapData, TcRow> = Array::try_from(
                bpf.map_mut(names::map::TC_ROWS)
                    .context(names::map::TC_ROWS)?,
            )?;
            let mut row = TcRow::ZERO;
            row.pg[0].headroom_used = 1000;
            rows.set(3, row, 0)?;
        }
        if live {
            dataplane_user::sys::prog_test_run(
                fd,
                frame,
                Some(md.as_bytes()),
                1,
                dataplane_user::sys::TEST_RUN_XDP_LIVE_FRAMES,
            )
            .context("xdp_forward in live-frames mode")?;
        } else {
            let r = run_xdp(bpf, "xdp_forward", frame, ifindex, 1)?;
            if r.action != testbed::testrun::XDP_REDIRECT {
                bail!(
                    "frame not routed: {}",
                    testbed::testrun::action_name(r.action)
                );
            }
        }
        std::thread::sleep(Duration::from_millis(1));
        if i % 500 == 499 {
            eprintln!("  {}/{}", i + 1, n);
        }
    }
    Ok(())
}

/// `n` XON decisions of the timer: the ingress PG (b0, TC3) empty but its
/// peer paused, then one tick (it decides XON and queues it) and the send
/// of what it queued, as the controller's timer thread does. Returns the
/// decision-to-sent latencies.
fn timer_decisions(
    bpf: &mut aya::Ebpf,
    plan: &dataplane_config::Plan,
    ports: &[dataplane_user::ports::Resolved],
    n: usize,
) -> Result<Vec<u64>> {
    let tick: &aya::programs::Xdp = bpf
        .program(names::prog::XDP_LOSSLESS_TICK)
        .context("tick")?
        .try_into()?;
    let tick_fd = tick.fd()?.as_fd().as_raw_fd();
    let mut tx = dataplane_user::lossless::pfc_path::TimerTx::open(bpf, plan, ports)?;
    for i in 0..n {
        {
            let mut rows: Array<&mut MapData, TcRow> = Array::try_from(
                bpf.map_mut(names::map::TC_ROWS)
                    .context(names::map::TC_ROWS)?,
            )?;
            let mut row = TcRow::ZERO;
            row.pfc[0].xoff = 1;
            row.pfc[0].refresh_due_ns = u64::MAX;
            rows.set(3, row, 0)?;
        }
        let r = dataplane_user::sys::prog_test_run(tick_fd, &[0u8; 64], None, 1, 0)?;
        if r.retval != 3 {
            bail!("the tick queued no XON (returned {})", r.retval);
        }
        if tx.send_all() != 1 {
            bail!("the tick queued other than one XON");
        }
        std::thread::sleep(Duration::from_millis(1));
        if i % 500 == 499 {
            eprintln!("  {}/{}", i + 1, n);
        }
    }
    Ok(tx.emitter.latencies_ns.clone())
}
