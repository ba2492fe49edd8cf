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

use dataplane_common::names;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use aya::maps::{Array, MapData, RingBuf};
use clap::Parser;
use dataplane_common::buffer::{PfcEvent, TcRow};
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
    let stop = Arc::new(AtomicBool::new(false));
    let (lat2, stop2) = (lat.clone(), stop.clone());
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
    eprintln!("pfcbench: {} XOFF decisions, one per ms", args.samples);
    for i in 0..args.samples {
        {
            // the ingress PG (b0 = slot 0, TC3) in headroom, PFC state reset
            let mut rows: Array<&mut MapData, TcRow> = Array::try_from(
                bpf.map_mut(names::map::TC_ROWS)
                    .context(names::map::TC_ROWS)?,
            )?;
            let mut row = TcRow::ZERO;
            row.pg[0].headroom_used = 1000;
            rows.set(3, row, 0)?;
        }
        let r = run_xdp(&bpf, "xdp_forward", &frame, ix[0].ifindex, 1)?;
        if r.action != testbed::testrun::XDP_REDIRECT {
            bail!(
                "frame not routed: {}",
                testbed::testrun::action_name(r.action)
            );
        }
        std::thread::sleep(Duration::from_millis(1));
        if i % 500 == 499 {
            eprintln!("  {}/{}", i + 1, args.samples);
        }
    }
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
    println!("PFC decision-to-wire latency over {} frames: p50 {p50:.1} us, p99 {p99:.1} us, max {max:.1} us", lat.len());
    println!("machine: {m}");
    merge_results(&args.out, &records)?;
    println!("written to {}", args.out.display());
    Ok(())
}
