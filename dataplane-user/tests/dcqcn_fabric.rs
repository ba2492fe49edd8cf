//! DCQCN end to end through the switch: a sender at 100 Mb/s into a
//! 10 Mb/s egress; the switch's buffer model marks CE once the queue passes
//! WRED min; the receiver (notification point) answers CE with CNPs, routed
//! back by the switch; the sender (reaction point) cuts its rate.
//! Properties, not exact counts: CNPs follow CE marks, the sender's rate
//! falls after the first CNP.

use std::time::Duration;

use dataplane_common::dcqcn::DcqcnParams;
use testbed::controller::Controller;
use testbed::netns::{veth, Netns};
use testbed::rocehost::{run_dcqcn_sender, run_np_receiver, SenderSpec};

const BIN: &str = env!("CARGO_BIN_EXE_dataplane");

#[test]
fn cnps_follow_ce_marks_and_the_sender_slows_down() {
    let sw = Netns::create("dqsw").unwrap();
    let h0 = Netns::create("dqh0").unwrap();
    let h1 = Netns::create("dqh1").unwrap();
    veth(&sw, "sw-s0", "02:00:00:00:20:00", &h0, "eth0", "02:00:00:00:20:10").unwrap();
    veth(&sw, "sw-r", "02:00:00:00:20:01", &h1, "eth0", "02:00:00:00:20:11").unwrap();
    let instance = format!("dq{}", std::process::id());
    let cfg = format!(
        r#"
[switch]
name = "{instance}"
[buffer]
pool_size = 4194304
[wred_profile.MARK]
ecn = "ecn_all"
green_min_threshold = 20000
green_max_threshold = 200000
green_drop_probability = 100
wred_green_enable = false
[[port]]
name = "sw-s0"
speed = "100M"
pfc_enable = ""
lossy_wred_profile = "MARK"
[[port]]
name = "sw-r"
speed = "10M"
pfc_enable = ""
lossy_wred_profile = "MARK"
[[nexthop]]
name = "h0"
port = "sw-s0"
mac = "02:00:00:00:20:10"
[[nexthop]]
name = "h1"
port = "sw-r"
mac = "02:00:00:00:20:11"
[[route]]
prefix = "198.18.0.0/24"
nexthop = "h0"
[[route]]
prefix = "198.18.1.0/24"
nexthop = "h1"
"#
    );
    let _ctl = Controller::start(std::path::Path::new(BIN), &sw, &instance, &cfg, "switch").unwrap();
    let line = 100_000_000u64;
    let params = DcqcnParams::scaled(line);
    let spec = SenderSpec {
        ifname: "eth0".into(),
        src_mac: [2, 0, 0, 0, 0x20, 0x10],
        dst_mac: [2, 0, 0, 0, 0x20, 0x00],
        src_ip: [198, 18, 0, 1],
        dst_ip: [198, 18, 1, 1],
        dscp: 3,
        ecn: 2,
        prio: 3,
        rate_mbps: 100,
        payload: 1024,
        message_pkts: 1,
        dest_qp: 0x1234,
        udp_sport: 49152,
        honour_pfc: false,
    };
    let run = Duration::from_secs(3);
    let (np, rp) = std::thread::scope(|s| {
        let np = s.spawn(|| {
            let _in = h1.enter().unwrap();
            run_np_receiver("eth0", [2, 0, 0, 0, 0x20, 0x11], [2, 0, 0, 0, 0x20, 0x01], [198, 18, 1, 1], 48, params.cnp_interval_ns, run + Duration::from_millis(300))
                .unwrap()
        });
        std::thread::sleep(Duration::from_millis(200));
        let rp = s.spawn(|| {
            let _in = h0.enter().unwrap();
            run_dcqcn_sender(&spec, &params, run).unwrap()
        });
        (np.join().unwrap(), rp.join().unwrap())
    });
    println!("receiver: {np:?}\nsender: {rp:?}");
    assert!(np.ce_pkts > 0, "the switch marked nothing");
    assert!(np.cnps_sent > 0, "no CNP for CE-marked frames");
    assert!(np.first_cnp_ms >= np.first_ce_ms, "a CNP before any CE mark");
    assert!(rp.cnps > 0, "the sender never saw a CNP (routed back by the switch)");
    assert!(rp.rate_before_mbps > 20.0, "the sender did not start fast: {:.1} Mb/s", rp.rate_before_mbps);
    assert!(
        rp.rate_after_mbps < 0.6 * rp.rate_before_mbps,
        "rate did not fall after CNPs: {:.1} -> {:.1} Mb/s",
        rp.rate_before_mbps,
        rp.rate_after_mbps
    );
    assert!(rp.final_rate_bps < line);
}
