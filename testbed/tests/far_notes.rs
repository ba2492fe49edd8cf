//! Far-side notifications the data plane sends, taken off the wire on the
//! peer of the port the packet came in by (`xdp_forward` attached natively
//! to b0, frames sent into b0 by its veth peer): a lossless packet that
//! finds its egress queue (b1, TC3) over the ECN threshold makes b0 send
//! one, naming the packet's route (198.18.1.0/24), its class and the
//! queue's drain time at b1's line rate, while the packet goes on to b1.
//! Held to the bytes of `FarNote`, then read by tshark (an independent
//! Ethernet decoder). Reconfigured without `far_notify` on b0, the switch
//! sends none.

mod common;

use aya::maps::{Array, MapData, PerCpuArray};
use aya::programs::{Xdp, XdpMode};
use dataplane_common::lb::{drain_time_ns, FarCounters, NOTIFY_TTL_NS};
use dataplane_common::lossless::EgressQueue;
use dataplane_common::maps::NUM_TC;
use dataplane_common::names;
use dataplane_common::wire::farnote::{FarNote, ETHERTYPE_FAR_NOTE, FAR_NOTE_LEN};
use dataplane_user::lossless::pfc_path::{select, PfcPath};
use dataplane_user::object::load_object;
use dataplane_user::tables::apply_config_text;
use testbed::raw::RawSocket;

const MAC0: [u8; 6] = [0x02, 0, 0, 0, 0x0f, 0x00];
/// What b1's queue holds before the packet: 15x its ECN threshold (the
/// `LOW` profile's 100 kB), so that the queue is still over it after a
/// second of draining at b1's 10 Mb/s (a slow machine, an emulated one).
const PRELOAD: u32 = 1_500_000;

fn config(far_notify: bool) -> String {
    format!(
        r#"
[switch]
name = "farnote"

[buffer]
pool_size = 16777216
pfc_tx = "dataplane"

[wred_profile.LOW]
green_min_threshold = 100000
green_max_threshold = 4000000

[[port]]
name = "b0"
mac = "02:00:00:00:0f:00"
pfc_enable = "3"
far_notify = {far_notify}

[[port]]
name = "b1"
mac = "02:00:00:00:0f:01"
pfc_enable = "3"
# a slow port: the preloaded queue drains by 1.25 MB a second, so it is
# still over the threshold when the packet comes, however slow the machine
speed = "10M"
wred_profile = "LOW"

[[nexthop]]
name = "n"
port = "b1"
mac = "02:00:00:00:0e:01"

[[route]]
prefix = "198.18.1.0/24"
nexthop = "n"
"#
    )
}

/// b1's TC3 queue holding PRELOAD bytes from b0 (port id 0) as of now.
fn preload(bpf: &mut aya::Ebpf) {
    let mut q: Array<&mut MapData, EgressQueue> =
        Array::try_from(bpf.map_mut(names::map::QUEUES).unwrap()).unwrap();
    let mut e = EgressQueue::ZERO;
    e.bytes = PRELOAD;
    e.ingress[0] = PRELOAD;
    e.last_ns = dataplane_user::sys::monotonic_ns();
    q.set((NUM_TC + 3) as u32, e, 0).unwrap();
}

fn far(bpf: &aya::Ebpf) -> FarCounters {
    let m: PerCpuArray<&MapData, FarCounters> =
        PerCpuArray::try_from(bpf.map(names::map::FAR_COUNTERS).unwrap()).unwrap();
    m.get(&0, 0)
        .unwrap()
        .iter()
        .fold(FarCounters::default(), |a, c| a.plus(c))
}

/// A switch of b0 and b1 with `xdp_forward` on b0 and the data plane's
/// PFC path (which carries notifications too).
fn switch(far_notify: bool) -> aya::Ebpf {
    let mut bpf = load_object().unwrap();
    let (plan, ix) = apply_config_text(&mut bpf, &config(far_notify), "farnote").unwrap();
    let path = select(&mut bpf, &plan, &ix).unwrap();
    assert_eq!(path, PfcPath::DataPlane, "{}", path.describe());
    let fwd: &mut Xdp = bpf.program_mut("xdp_forward").unwrap().try_into().unwrap();
    fwd.attach("b0", XdpMode::Driver)
        .expect("xdp_forward on b0 in driver mode");
    bpf
}

fn frame() -> Vec<u8> {
    common::lossless_write_to(MAC0, [198, 18, 1, 9])
}

#[test]
fn a_queue_over_the_threshold_notifies_the_ingress_peer() {
    let ns = common::two_port_ns("farnote");
    let _in = ns.enter().unwrap();
    let mut bpf = switch(true);
    let rx0 = RawSocket::open_sender("b0-peer", false).unwrap();
    let tap0 = RawSocket::open("b0-peer", libc::ETH_P_ALL as u16, true).unwrap();
    let tap1 = RawSocket::open("b1-peer", libc::ETH_P_ALL as u16, true).unwrap();

    preload(&mut bpf);
    let before = dataplane_user::sys::monotonic_ns();
    assert!(rx0.send(&frame()).unwrap(), "b0-peer refused the frame");
    let got = common::next_frame(&tap0, ETHERTYPE_FAR_NOTE).unwrap_or_else(|| {
        panic!(
            "no far-side notification on b0's peer (the data plane counted {:?})",
            far(&bpf)
        )
    });
    let after = dataplane_user::sys::monotonic_ns();
    assert_eq!(got.len(), 60, "{got:02x?}");
    let note = FarNote::decode(&got[14..14 + FAR_NOTE_LEN].try_into().unwrap())
        .unwrap_or_else(|e| panic!("{}: {got:02x?}", e.describe()));
    // the queue after the packet: PRELOAD less what drained at 10 Mb/s
    // between `before` and `after`, plus the packet
    let len = frame().len() as u32;
    let most = drain_time_ns(PRELOAD + len, 10);
    // 10 Mb/s: a byte every 800 ns
    let drained = (after - before) / 800;
    let least = drain_time_ns((PRELOAD as u64).saturating_sub(drained) as u32, 10);
    assert!(
        (least..=most).contains(&u64::from(note.drain_ns)),
        "drain {} ns, expected {least}..={most}",
        note.drain_ns
    );
    let want = FarNote::for_route(
        4,
        v4([198, 18, 1, 9]),
        24,
        3,
        note.drain_ns.into(),
        NOTIFY_TTL_NS,
    );
    assert_eq!(note, want);
    assert_eq!(got, want.frame(MAC0).to_vec(), "the frame's bytes");
    let data = common::next_frame(&tap1, 0x0800).expect("the packet did not reach b1's peer");
    assert_eq!(
        &data[0..6],
        &[2, 0, 0, 0, 0x0e, 1],
        "rewritten destination MAC"
    );
    assert_eq!(far(&bpf).sent, 1);

    // tshark, an independent decoder of the frame's Ethernet header
    let dir = std::env::temp_dir().join(format!("dp-farnote-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("far.pcap");
    common::write_pcap(&pcap, &[got]).unwrap();
    let t = std::process::Command::new("tshark")
        .args(["-n", "-r"])
        .arg(&pcap)
        .args([
            "-T", "fields", "-e", "eth.dst", "-e", "eth.src", "-e", "eth.type",
        ])
        .args(["-e", "data.data", "-e", "frame.len"])
        .output()
        .expect("tshark (installed by `cargo xtask setup`)");
    let _ = std::fs::remove_dir_all(&dir);
    let text = String::from_utf8_lossy(&t.stdout);
    let row: Vec<&str> = text.trim_end().split('\t').collect();
    assert_eq!(row.len(), 5, "tshark: {text}");
    assert_eq!(row[0], "01:80:c2:00:00:0e", "{row:?}");
    assert_eq!(row[1], "02:00:00:00:0f:00", "source = b0's MAC: {row:?}");
    assert_eq!(row[2], "0x88b6", "{row:?}");
    // version 1, IPv4, /24, TC3, then the drain time
    assert!(row[3].starts_with("01041803"), "payload {}", row[3]);
    assert!(
        row[3].contains("c6120100"),
        "prefix 198.18.1.0 in {}",
        row[3]
    );
    assert_eq!(row[4], "60", "{row:?}");

    // the same switch reconfigured without far_notify on b0: nothing is
    // sent (one object for both checks: loading it takes kernel 6.1's
    // verifier about 100 s under TCG)
    apply_config_text(&mut bpf, &config(false), "farnote").unwrap();
    preload(&mut bpf);
    assert!(rx0.send(&frame()).unwrap());
    assert!(
        common::next_frame(&tap1, 0x0800).is_some(),
        "the packet did not reach b1's peer"
    );
    assert!(
        common::next_frame(&tap0, ETHERTYPE_FAR_NOTE).is_none(),
        "a notification toward a port without far_notify"
    );
    assert_eq!(far(&bpf).sent, 1, "no more than the first");
}

fn v4(a: [u8; 4]) -> [u8; 16] {
    let mut d = [0; 16];
    d[..4].copy_from_slice(&a);
    d
}
