// Over 800 lines: one table of 90 cases (input, expected output, counter deltas) and its runner; the rows are the file.
//! The fixture table, run through the compiled eBPF programs with
//! BPF_PROG_TEST_RUN.
//!
//! Each fixture: a configuration (TOML, applied by the controller's own
//! validation and table writer), an ingress port, an input frame, the
//! expected XDP verdict, the expected output frame and the exact counter
//! deltas (every counter not listed must stay unchanged). RoCEv2 and PFC
//! fixtures are also decoded by scapy, independently of our parser, and the
//! two must agree (ICRC included).
//!
//! Needs root (BPF, netns). Ports are veth devices in a namespace this test
//! creates and always removes.

mod common;

use dataplane_common::names;
use std::collections::BTreeMap;
use std::process::ExitCode;

use aya::maps::MapData;
use aya::Ebpf;
use common::*;
use dataplane_common::build::{self, Ip, L2};
use dataplane_common::lossless::EgressQueue;
use dataplane_common::parse::{parse, ParseError};
use dataplane_common::wire::{bth, uet};
use dataplane_config::Config;
use dataplane_user::object::load_object;
use dataplane_user::tables::apply_config_text;
use testbed::netns::Netns;
use testbed::testrun::{action_name, run_xdp, XDP_DROP, XDP_PASS};

/// p0: DSCP trust with NVIDIA's RoCE map (26 -> 3, 48 -> 6), lossless 3,
///     malformed frames passed.
/// p1: dot1p trust, lossless 3 and 4, malformed frames dropped.
/// p2: DSCP trust with SONiC's AZURE map, default_tc 2, CNPs to TC7 (switch
///     wide cnp_tc is 6; p2 is in the second config where it is 7).
/// px: an interface with no port entry.
const CONFIG_MAIN: &str = r#"
[switch]
name = "fixtures"
cnp_tc = 6

[dscp_to_tc_map.ROCE]
default = 0
"26" = 3
"48" = 6

[[port]]
name = "p0"
trust = "dscp"
dscp_to_tc_map = "ROCE"
pfc_enable = "3"

[[port]]
name = "p1"
trust = "dot1p"
pfc_enable = "3,4"
malformed = "drop"

[[port]]
name = "p2"
trust = "dscp"
dscp_to_tc_map = "AZURE"
default_tc = 2
pfc_enable = "3,4"
"#;

/// The same ports, CNPs to TC7 and p0 switched to dot1p trust: a config
/// change must take effect for the next frame.
const CONFIG_ALT: &str = r#"
[switch]
name = "fixtures"
cnp_tc = 7

[[port]]
name = "p0"
trust = "dot1p"
pfc_enable = ""

[[port]]
name = "p2"
trust = "dscp"
default_tc = 2
"#;

/// Routing: p0 is the downlink; n1 on p1, n2 on p2, n3 on p3 (whose peer
/// is down, so n3's member is not live); a hash group over n1 and n2.
const CONFIG_ROUTE: &str = r#"
[switch]
name = "fixtures"
hash_seed = 7

[buffer]
pool_size = 8388608

[wred_profile.LOSSY]
ecn = "ecn_all"
green_min_threshold = 100000
green_max_threshold = 200000
green_drop_probability = 100
wred_green_enable = true

[[port]]
name = "p0"
mac = "02:00:00:00:0f:00"
dscp_to_tc_map = "AZURE"
[[port]]
name = "p1"
mac = "02:00:00:00:0f:01"
lossy_wred_profile = "LOSSY"
# slow, so a received pause (65535 quanta = 3.4 s at 10 Mb/s) outlasts the check
speed = "10M"
[[port]]
name = "p2"
mac = "02:00:00:00:0f:02"
[[port]]
name = "p3"
mac = "02:00:00:00:0f:03"

[[nexthop]]
name = "n1"
port = "p1"
mac = "02:00:00:00:01:01"
[[nexthop]]
name = "n2"
port = "p2"
mac = "02:00:00:00:01:02"
[[nexthop]]
name = "n3"
port = "p3"
mac = "02:00:00:00:01:03"

[[group]]
name = "up"
mode = "hash"
members = [{ nexthop = "n1" }, { nexthop = "n2", weight = 1 }]

[[group]]
name = "dead"
mode = "hash"
members = [{ nexthop = "n3" }]

[[route]]
prefix = "198.18.1.0/24"
nexthop = "n1"
[[route]]
prefix = "198.18.1.128/25"
nexthop = "n2"
[[route]]
prefix = "198.18.0.254/32"
local = true
[[route]]
prefix = "2001:db8:0:1::/64"
nexthop = "n2"
[[route]]
prefix = "198.18.2.0/24"
group = "up"
[[route]]
prefix = "198.18.3.0/24"
group = "dead"

# least-loaded flowlets for RoCEv2, the entropy value's hash for UET
[[group]]
name = "uet"
mode = "bandwidth"
uet_entropy = true
members = [{ nexthop = "n1" }, { nexthop = "n2" }]

[[route]]
prefix = "198.18.4.0/24"
group = "uet"
"#;

/// Trimming: a 64 KiB pool and lossy threshold 2^-8 x free (256 bytes), so
/// a 300-byte packet fails admission to the shared buffer and a 128-byte
/// one does not; p1's queues 0-2 trim (SONiC's design: size 128, DSCP 48,
/// queue 6). No lossless class (no headroom to reserve).
const CONFIG_TRIM: &str = r#"
[switch]
name = "fixtures"

[buffer]
pool_size = 65536
lossy_dynamic_th = -8

[switch_trimming]
size = 128
dscp_value = 48
queue_index = 6

[buffer_profile.q_lossy_trim_profile]
packet_discard_action = "trim"

[[port]]
name = "p0"
mac = "02:00:00:00:0f:00"
pfc_enable = ""
headroom_xoff = 2048
headroom_xon = 1024
[[port]]
name = "p1"
mac = "02:00:00:00:0f:01"
pfc_enable = ""
headroom_xoff = 2048
headroom_xon = 1024
buffer_queue = { "0-2" = "q_lossy_trim_profile" }

[[nexthop]]
name = "n1"
port = "p1"
mac = "02:00:00:00:01:01"

[[route]]
prefix = "198.18.1.0/24"
nexthop = "n1"
[[route]]
prefix = "2001:db8:0:1::/64"
nexthop = "n1"
"#;

const SW_P0: [u8; 6] = [2, 0, 0, 0, 0x0f, 0];
const SW_P1: [u8; 6] = [2, 0, 0, 0, 0x0f, 1];
const SW_P2: [u8; 6] = [2, 0, 0, 0, 0x0f, 2];
const NH1: [u8; 6] = [2, 0, 0, 0, 1, 1];
const NH2: [u8; 6] = [2, 0, 0, 0, 1, 2];

fn routed_fixture(
    name: &'static str,
    frame: Vec<u8>,
    expect: Expect,
    out: Option<Vec<u8>>,
) -> Fixture {
    Fixture {
        name,
        config: CONFIG_ROUTE,
        port: "p0",
        frame,
        expect,
        decode: false,
        prog: "xdp_forward",
        out,
        preload: None,
        pg_headroom: None,
        expect_paused: None,
    }
}

/// Deltas of a frame routed from p0 out of `egress` in class `tc`.
fn routed(tc: usize, frame: &[u8], egress: &str, flags: &[&str]) -> Vec<(String, i128)> {
    let mut v = classified(tc, frame, flags);
    v.push(("rx_routed".into(), 1));
    v.push((format!("{egress}:tx_tc_pkts[{tc}]"), 1));
    v.push((format!("{egress}:tx_tc_bytes[{tc}]"), frame.len() as i128));
    v
}

fn routing_table() -> Vec<Fixture> {
    use testbed::testrun::XDP_REDIRECT;
    let redirect = |deltas| Expect::Run {
        verdict: XDP_REDIRECT,
        deltas,
        global: vec![],
    };
    let in_l2 = L2::new(SW_P0, MAC_HOST);
    let to = |dst: [u8; 4], ttl: u8, dscp: u8| Ip::v4(V4_SRC, dst).dscp(dscp).ecn(2).ttl(ttl);
    let roce_to = |l2: &L2, ip: &Ip| {
        build::rocev2_frame(
            l2,
            ip,
            49152,
            &write_first(0x42, 9),
            Some(RETH),
            &[0x11; 64],
        )
    };
    // expected frames are built from scratch (checksum computed in full),
    // not by applying our incremental update
    let a = roce_to(&in_l2, &to([198, 18, 1, 5], 64, 3));
    let a_out = roce_to(&L2::new(NH1, SW_P1), &to([198, 18, 1, 5], 63, 3));
    let b = roce_to(&in_l2, &to([198, 18, 1, 200], 9, 3));
    let b_out = roce_to(&L2::new(NH2, SW_P2), &to([198, 18, 1, 200], 8, 3));
    let v6dst = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9];
    let c = roce_to(&in_l2, &Ip::v6(V6_SRC, v6dst).dscp(4).ecn(2).ttl(2));
    let c_out = roce_to(
        &L2::new(NH2, SW_P2),
        &Ip::v6(V6_SRC, v6dst).dscp(4).ecn(2).ttl(1),
    );
    let ttl1 = roce_to(&in_l2, &to([198, 18, 1, 5], 1, 3));
    let local = roce_to(&in_l2, &to([198, 18, 0, 254], 64, 3));
    let noroute = roce_to(&in_l2, &to([198, 18, 9, 9], 64, 3));
    let not_us = roce_to(&L2::new(NH1, MAC_HOST), &to([198, 18, 1, 5], 64, 3));
    let bcast_arp = build::frame(&L2::new([0xff; 6], MAC_HOST), 0x0806, &[0; 28]);
    let dead = roce_to(&in_l2, &to([198, 18, 3, 1], 64, 3));
    let pfc = build::pfc_frame(MAC_HOST, 0x08, [0, 0, 0, 100, 0, 0, 0, 0]);
    let short = cut(a.clone(), 40);
    // a group route: the member is the one the shared pure functions pick
    let g = roce_to(&in_l2, &to([198, 18, 2, 7], 64, 3));
    let plan = Config::parse(CONFIG_ROUTE, "fixture")
        .unwrap()
        .validate("fixture")
        .unwrap();
    let group = dataplane_config::group_value(&plan, &plan.groups[0], &|_| true, None).unwrap();
    let key = dataplane_common::lb::FlowKey::ipv4(V4_SRC, [198, 18, 2, 7], 17, 49152, 4791, 0x42);
    let slot = dataplane_common::lb::pick_hash(
        &group,
        dataplane_common::lb::flow_hash(&key, plan.hash_seed),
    )
    .unwrap();
    let (g_mac, g_src, g_port) = if slot.id == 0 {
        (NH1, SW_P1, "p1")
    } else {
        (NH2, SW_P2, "p2")
    };
    let g_out = roce_to(&L2::new(g_mac, g_src), &to([198, 18, 2, 7], 63, 3));
    // the entropy group (bandwidth mode): an entropy value whose bucket is
    // not the member bandwidth mode would choose with equal loads, so the row
    // fails if UET is not placed by its entropy value's hash
    let ug = dataplane_config::group_value(&plan, &plan.groups[2], &|_| true, None).unwrap();
    let uet_hash = |ev: u16| {
        use dataplane_common::lb::{flow_hash, FlowKey};
        let key = FlowKey::ipv4(V4_SRC, [198, 18, 4, 7], 17, ev, uet::UET_PORT, 0);
        flow_hash(&key, plan.hash_seed)
    };
    let ev = (1u16..2000)
        .find(|&ev| {
            let h = uet_hash(ev);
            let by_load = dataplane_common::lb::pick_least_loaded(&ug, &[0; 16], h);
            dataplane_common::lb::pick_hash(&ug, h) != by_load
        })
        .expect("an entropy value the two placements disagree on");
    let uet_pkt = |l2: &L2, ttl: u8| {
        let pds = uet::Pds::request(uet::TYPE_RUD_REQ, 3, 0, 1, 7, 9);
        build::udp_frame(l2, &to([198, 18, 4, 7], ttl, 3), ev, uet::UET_PORT, &pds)
    };
    let u_in = uet_pkt(&in_l2, 64);
    let u_id = dataplane_common::lb::pick_hash(&ug, uet_hash(ev))
        .unwrap()
        .id;
    let (u_mac, u_src, u_port) = if u_id == 0 {
        (NH1, SW_P1, "p1")
    } else {
        (NH2, SW_P2, "p2")
    };
    let u_out = uet_pkt(&L2::new(u_mac, u_src), 63);
    // ---- lossless stage ---------------------------------------------------
    let ecn_to = |dst: [u8; 4], dscp: u8, ecn: u8| Ip::v4(V4_SRC, dst).dscp(dscp).ecn(ecn);
    let e_in = roce_to(&in_l2, &ecn_to([198, 18, 1, 5], 3, 2));
    let e_out = roce_to(&L2::new(NH1, SW_P1), &ecn_to([198, 18, 1, 5], 3, 3).ttl(63));
    let e6dst = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 7];
    let e6_in = roce_to(&in_l2, &Ip::v6(V6_SRC, e6dst).dscp(4).ecn(1));
    let e6_out = roce_to(
        &L2::new(NH2, SW_P2),
        &Ip::v6(V6_SRC, e6dst).dscp(4).ecn(3).ttl(63),
    );
    let nect_in = roce_to(&in_l2, &ecn_to([198, 18, 1, 5], 3, 0));
    let nect_out = roce_to(&L2::new(NH1, SW_P1), &ecn_to([198, 18, 1, 5], 3, 0).ttl(63));
    let cnp_in = build::cnp_frame(&in_l2, &ecn_to([198, 18, 1, 5], 48, 2), 49152, 0x42);
    let cnp_out = build::cnp_frame(
        &L2::new(NH1, SW_P1),
        &ecn_to([198, 18, 1, 5], 48, 2).ttl(63),
        49152,
        0x42,
    );
    let lossy_in = roce_to(&in_l2, &ecn_to([198, 18, 1, 5], 0, 0));
    let lossy_ect_in = roce_to(&in_l2, &ecn_to([198, 18, 1, 5], 0, 2));
    let lossy_ect_out = roce_to(&L2::new(NH1, SW_P1), &ecn_to([198, 18, 1, 5], 0, 3).ttl(63));
    let pfc_p1 = build::pfc_frame(NH1, 0x08, [0, 0, 0, 0xffff, 0, 0, 0, 0]);
    let xon_p1 = build::pfc_frame(NH1, 0x08, [0; 8]);
    let pause_p1 = build::pause_frame(NH1, 0xffff);
    let lossless =
        |name: &'static str, frame: Vec<u8>, expect: Expect, out: Option<Vec<u8>>, preload| {
            Fixture {
                preload,
                ..routed_fixture(name, frame, expect, out)
            }
        };
    let on_p1 = |name: &'static str, frame: Vec<u8>, deltas, preload, paused| Fixture {
        port: "p1",
        preload,
        expect_paused: Some(("p1", 3, paused)),
        ..routed_fixture(name, frame, drop_(deltas), None)
    };
    let mut t = vec![
        lossless(
            "ecn_ect0_above_max_marked_ce_checksum_valid",
            e_in.clone(),
            redirect({
                let mut v = routed(3, &e_in, "p1", &["rx_roce", "rx_lossless"]);
                v.push(("p1:ecn_marked[3]".into(), 1));
                v
            }),
            Some(e_out),
            Some(("p1", 3, 3_000_000, false)),
        ),
        lossless(
            "ecn_ipv6_ect1_above_max_marked_ce",
            e6_in.clone(),
            redirect({
                let mut v = routed(4, &e6_in, "p2", &["rx_roce", "rx_lossless"]);
                v.push(("p2:ecn_marked[4]".into(), 1));
                v
            }),
            Some(e6_out),
            Some(("p2", 4, 3_000_000, false)),
        ),
        lossless(
            "ecn_not_ect_lossless_untouched_not_dropped",
            nect_in.clone(),
            redirect(routed(3, &nect_in, "p1", &["rx_roce", "rx_lossless"])),
            Some(nect_out),
            Some(("p1", 3, 3_000_000, false)),
        ),
        lossless(
            "ecn_below_min_not_marked",
            e_in.clone(),
            redirect(routed(3, &e_in, "p1", &["rx_roce", "rx_lossless"])),
            Some(roce_to(
                &L2::new(NH1, SW_P1),
                &ecn_to([198, 18, 1, 5], 3, 2).ttl(63),
            )),
            Some(("p1", 3, 1_000_000, false)),
        ),
        lossless(
            "cnp_never_marked",
            cnp_in.clone(),
            redirect(routed(6, &cnp_in, "p1", &["rx_roce", "rx_cnp"])),
            Some(cnp_out),
            Some(("p1", 6, 3_000_000, false)),
        ),
        lossless(
            "lossy_non_ect_above_max_wred_dropped",
            lossy_in.clone(),
            Expect::Run {
                verdict: XDP_DROP,
                deltas: {
                    let mut v = classified(1, &lossy_in, &["rx_roce"]);
                    v.push(("p1:wred_drop[1]".into(), 1));
                    v
                },
                global: vec![],
            },
            Some(roce_to(
                &L2::new(NH1, SW_P1),
                &ecn_to([198, 18, 1, 5], 0, 0).ttl(63),
            )),
            Some(("p1", 1, 300_000, false)),
        ),
        lossless(
            "lossy_ect_above_max_marked",
            lossy_ect_in.clone(),
            redirect({
                let mut v = routed(1, &lossy_ect_in, "p1", &["rx_roce"]);
                v.push(("p1:ecn_marked[1]".into(), 1));
                v
            }),
            Some(lossy_ect_out),
            Some(("p1", 1, 300_000, false)),
        ),
        Fixture {
            pg_headroom: Some(("p0", 3, 1000)),
            ..routed_fixture(
                "pg_in_headroom_asks_for_xoff",
                e_in.clone(),
                redirect({
                    let mut v = routed(3, &e_in, "p1", &["rx_roce", "rx_lossless"]);
                    v.push(("tx_pfc_xoff[3]".into(), 1));
                    v
                }),
                Some(roce_to(
                    &L2::new(NH1, SW_P1),
                    &ecn_to([198, 18, 1, 5], 3, 2).ttl(63),
                )),
            )
        },
        on_p1(
            "pfc_rx_pauses_queue",
            pfc_p1.clone(),
            d(&[("rx_pfc[3]", 1), ("rx_pfc_xoff[3]", 1), ("verdict_drop", 1)]),
            None,
            true,
        ),
        on_p1(
            "pfc_rx_xon_resumes_queue",
            xon_p1.clone(),
            d(&[("rx_pfc[3]", 1), ("verdict_drop", 1)]),
            Some(("p1", 3, 5000, true)),
            false,
        ),
        on_p1(
            "pause_8023x_pauses_every_queue",
            pause_p1.clone(),
            d(&[("rx_pause", 1), ("verdict_drop", 1)]),
            None,
            true,
        ),
    ];
    t.extend(vec![
        routed_fixture(
            "route_v4_to_nexthop_rewrites_macs_ttl_checksum",
            a.clone(),
            redirect(routed(3, &a, "p1", &["rx_roce", "rx_lossless"])),
            Some(a_out),
        ),
        routed_fixture(
            "route_v4_longest_prefix_wins",
            b.clone(),
            redirect(routed(3, &b, "p2", &["rx_roce", "rx_lossless"])),
            Some(b_out),
        ),
        routed_fixture(
            "route_v6_hop_limit_decremented",
            c.clone(),
            redirect(routed(4, &c, "p2", &["rx_roce", "rx_lossless"])),
            Some(c_out),
        ),
        routed_fixture(
            "route_group_hash_member",
            g.clone(),
            redirect(routed(3, &g, g_port, &["rx_roce", "rx_lossless"])),
            Some(g_out),
        ),
        routed_fixture(
            "route_entropy_group_uet_by_entropy_hash",
            u_in.clone(),
            redirect(routed(3, &u_in, u_port, &["rx_uet", "rx_lossless"])),
            Some(u_out),
        ),
        routed_fixture(
            "route_ttl_1_to_kernel",
            ttl1.clone(),
            pass({
                let mut v = classified(3, &ttl1, &["rx_roce", "rx_lossless"]);
                v.push(("pass_ttl_expired".into(), 1));
                v
            }),
            None,
        ),
        routed_fixture(
            "route_own_address_to_kernel",
            local.clone(),
            pass({
                let mut v = classified(3, &local, &["rx_roce", "rx_lossless"]);
                v.push(("pass_local".into(), 1));
                v
            }),
            None,
        ),
        routed_fixture(
            "route_none_dropped",
            noroute.clone(),
            Expect::Run {
                verdict: XDP_DROP,
                deltas: {
                    let mut v = classified(3, &noroute, &["rx_roce", "rx_lossless"]);
                    v.push(("drop_no_route".into(), 1));
                    v
                },
                global: vec![],
            },
            None,
        ),
        routed_fixture(
            "route_other_mac_to_kernel",
            not_us.clone(),
            pass({
                let mut v = classified(3, &not_us, &["rx_roce", "rx_lossless"]);
                v.push(("pass_not_for_us".into(), 1));
                v
            }),
            None,
        ),
        routed_fixture(
            "route_arp_to_kernel",
            bcast_arp.clone(),
            pass({
                let mut v = classified(0, &bcast_arp, &["rx_non_ip"]);
                v.push(("pass_not_ip".into(), 1));
                v
            }),
            None,
        ),
        routed_fixture(
            "route_group_without_live_member_dropped",
            dead.clone(),
            Expect::Run {
                verdict: XDP_DROP,
                deltas: {
                    let mut v = classified(3, &dead, &["rx_roce", "rx_lossless"]);
                    v.push(("drop_no_member".into(), 1));
                    v
                },
                global: vec![],
            },
            None,
        ),
        routed_fixture(
            "forward_pfc_still_consumed",
            pfc,
            drop_(d(&[
                ("rx_pfc[3]", 1),
                ("rx_pfc_xoff[3]", 1),
                ("verdict_drop", 1),
            ])),
            None,
        ),
        routed_fixture(
            "forward_malformed_passed",
            short,
            pass(malformed(ParseError::Ipv4LenExceedsFrame, false)),
            None,
        ),
    ]);
    t
}

/// Packet trimming end to end: the buffer model refuses a 300-byte packet
/// of a trimming queue, the trimming stage cuts it to 128 bytes, rewrites
/// it, and the trim queue takes it. Expected frames are built from scratch
/// (full checksums), not by the rewrite under test.
fn trim_table() -> Vec<Fixture> {
    use testbed::testrun::XDP_REDIRECT;
    let trim_fixture = |name, frame: Vec<u8>, expect, out| Fixture {
        config: CONFIG_TRIM,
        ..routed_fixture(name, frame, expect, out)
    };
    let in_l2 = L2::new(SW_P0, MAC_HOST);
    let out_l2 = L2::new(NH1, SW_P1);
    let dst4 = [198, 18, 1, 9];
    let dst6 = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9];
    let pds = uet::Pds::request(uet::TYPE_RUD_REQ, 3, uet::FLAG_AR, 77, 7, 9);
    let body = |n: usize| -> Vec<u8> {
        let mut b = pds.to_vec();
        b.extend((0..n - pds.len()).map(|i| i as u8));
        b
    };
    // 300-byte frames in class 1 (AZURE: DSCP 10 -> 1), ECN 2
    let v4 = |l2: &L2, dscp: u8, ttl: u8, n: usize| {
        let ip = Ip::v4(V4_SRC, dst4).dscp(dscp).ecn(2).ttl(ttl);
        build::udp_frame(l2, &ip, 0x4242, uet::UET_PORT, &body(n))
    };
    let v6 = |l2: &L2, dscp: u8, ttl: u8, n: usize| {
        let ip = Ip::v6(V6_SRC, dst6).dscp(dscp).ecn(2).ttl(ttl);
        build::udp_frame(l2, &ip, 0x4242, uet::UET_PORT, &body(n))
    };
    let u4 = v4(&in_l2, 10, 64, 300 - 42);
    let u4_out = v4(&out_l2, 48, 63, 128 - 42);
    let u6 = v6(&in_l2, 10, 64, 300 - 62);
    let u6_out = v6(&out_l2, 48, 63, 128 - 62);
    // TCP is not trimmed (its checksum covers the cut payload); queue 5 does
    // not trim (AZURE: DSCP 46 -> 5)
    let tcp_to = |l2: &L2, ttl: u8| {
        let ip = Ip::v4(V4_SRC, dst4).dscp(10).ttl(ttl);
        build::frame(l2, 0x0800, &build::ip_packet(&ip, 6, &[0; 266]))
    };
    let tcp = tcp_to(&in_l2, 64);
    let q5 = v4(&in_l2, 46, 64, 300 - 42);
    // a dropped frame is left as the forwarding stage rewrote it
    let trimmed = |frame: &[u8]| {
        let mut v = classified(1, frame, &["rx_uet"]);
        v.extend(d(&[
            ("rx_routed", 1),
            ("p1:tx_tc_pkts[6]", 1),
            ("p1:tx_tc_bytes[6]", 128),
            ("p1:trim[1]", 1),
            ("p1:trim_sent[1]", 1),
        ]));
        Expect::Run {
            verdict: XDP_REDIRECT,
            deltas: v,
            global: vec![],
        }
    };
    let dropped = |tc: usize, frame: &[u8], flags: &[&str]| {
        let mut v = classified(tc, frame, flags);
        v.push((format!("p1:drop_shared_full[{tc}]"), 1));
        Expect::Run {
            verdict: XDP_DROP,
            deltas: v,
            global: vec![],
        }
    };
    vec![
        trim_fixture(
            "trim_uet_v4_shared_full_cut_to_128_on_queue_6",
            u4.clone(),
            trimmed(&u4),
            Some(u4_out),
        ),
        trim_fixture(
            "trim_uet_v6_shared_full_cut_udp_checksum_recomputed",
            u6.clone(),
            trimmed(&u6),
            Some(u6_out),
        ),
        trim_fixture(
            "trim_tcp_not_trimmed_shared_full_drop",
            tcp.clone(),
            dropped(1, &tcp, &[]),
            Some(tcp_to(&out_l2, 63)),
        ),
        trim_fixture(
            "trim_queue_without_trim_profile_drops",
            q5.clone(),
            dropped(5, &q5, &["rx_uet"]),
            Some(v4(&out_l2, 46, 63, 300 - 42)),
        ),
    ]
}

#[derive(Clone)]
enum Expect {
    /// Verdict, port counter deltas (by stable name), global deltas.
    Run {
        verdict: u32,
        deltas: Vec<(String, i128)>,
        global: Vec<(&'static str, i128)>,
    },
    /// BPF_PROG_TEST_RUN refuses the input (frames under 14 bytes).
    KernelRejects,
}

#[derive(Clone)]
struct Fixture {
    name: &'static str,
    config: &'static str,
    port: &'static str,
    frame: Vec<u8>,
    expect: Expect,
    /// Also decode with scapy and compare with our parser.
    decode: bool,
    /// The program run: `xdp_classify` or `xdp_forward`.
    prog: &'static str,
    /// Expected output frame; `None`: unchanged.
    out: Option<Vec<u8>>,
    /// Buffer-model state before the run: (egress port, TC, queue bytes,
    /// paused); the model is reset after the fixture.
    preload: Option<(&'static str, usize, u32, bool)>,
    /// Ingress PG headroom use before the run: (ingress port, TC, bytes).
    pg_headroom: Option<(&'static str, usize, u32)>,
    /// After the run: (port, TC, paused?) of a queue.
    expect_paused: Option<(&'static str, usize, bool)>,
}

fn d(pairs: &[(&str, i128)]) -> Vec<(String, i128)> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// Deltas of a classified frame passed to the kernel.
fn classified(tc: usize, frame: &[u8], flags: &[&str]) -> Vec<(String, i128)> {
    let mut v = vec![
        (format!("rx_tc_pkts[{tc}]"), 1),
        (format!("rx_tc_bytes[{tc}]"), frame.len() as i128),
        ("verdict_pass".into(), 1),
    ];
    v.extend(flags.iter().map(|f| (f.to_string(), 1)));
    v
}

fn malformed(e: ParseError, dropped: bool) -> Vec<(String, i128)> {
    vec![
        (format!("malformed.{}", e.name()), 1),
        (
            (if dropped {
                "verdict_drop"
            } else {
                "verdict_pass"
            })
            .into(),
            1,
        ),
    ]
}

fn pass(deltas: Vec<(String, i128)>) -> Expect {
    Expect::Run {
        verdict: XDP_PASS,
        deltas,
        global: vec![],
    }
}

fn drop_(deltas: Vec<(String, i128)>) -> Expect {
    Expect::Run {
        verdict: XDP_DROP,
        deltas,
        global: vec![],
    }
}

fn cut(mut f: Vec<u8>, n: usize) -> Vec<u8> {
    f.truncate(n);
    f
}

fn edit(mut f: Vec<u8>, edits: &[(usize, u8)]) -> Vec<u8> {
    for &(i, b) in edits {
        f[i] = b;
    }
    f
}

fn fix(name: &'static str, port: &'static str, frame: Vec<u8>, expect: Expect) -> Fixture {
    Fixture {
        name,
        config: CONFIG_MAIN,
        port,
        frame,
        expect,
        decode: false,
        prog: "xdp_classify",
        out: None,
        preload: None,
        pg_headroom: None,
        expect_paused: None,
    }
}

fn decoded(mut f: Fixture) -> Fixture {
    f.decode = true;
    f
}

fn alt(mut f: Fixture) -> Fixture {
    f.config = CONFIG_ALT;
    f
}

// IPv4 offsets in an untagged frame: IP at 14, UDP at 34, BTH at 42.
const IP: usize = 14;
const UDP: usize = 34;

fn table() -> Vec<Fixture> {
    let l2 = l2();
    let tagged = |pcp| l2.clone().vlan(pcp, 100);
    let roce = roce4(&l2, 26, 0x00_1234, 64);
    let roce_v6 = roce6(&l2, 26, 0x00_4321, 64);
    let roce_opts = build::rocev2_frame(
        &l2,
        &v4(26).options(&[0x94, 0x04, 0x00, 0x00]), // router alert, IHL 6
        49152,
        &write_first(0x77, 1),
        Some(RETH),
        &[1; 32],
    );
    let roce_big_opts = build::rocev2_frame(
        &l2,
        &v4(26).options(&[1; 40]),
        49152,
        &write_first(0x78, 2),
        None,
        &[2; 8],
    ); // IHL 15
    let cnp = build::cnp_frame(&l2, &v4(48), 49152, 0x00_1234);
    let cnp_dscp26 = build::cnp_frame(&l2, &v4(26), 49152, 0x00_0042);
    let cnp_v6 = build::cnp_frame(&l2, &v6(48), 49152, 0x00_0043);
    let roce_vlan3 = roce4(&tagged(3), 0, 0x10, 128);
    let roce_vlan4 = roce4(&tagged(4), 0, 0x11, 128);
    let roce_vlan5 = roce4(&tagged(5), 26, 0x12, 128);
    let roce_v6_vlan = roce6(&tagged(3), 26, 0x13, 256);
    let udp_dns = build::udp_frame(&l2, &v4(26), 40000, 53, &[0; 30]);
    let tcp46 = build::frame(
        &l2,
        0x0800,
        &build::ip_packet(&Ip::v4(V4_SRC, V4_DST).dscp(46), 6, &[0; 20]),
    );
    let plain0 = build::frame(
        &l2,
        0x0800,
        &build::ip_packet(&Ip::v4(V4_SRC, V4_DST), 6, &[0; 20]),
    );
    let v6_tcp = build::frame(
        &l2,
        0x86dd,
        &build::ip_packet(&Ip::v6(V6_SRC, V6_DST).dscp(4), 6, &[0; 20]),
    );
    let arp = build::frame(&l2, 0x0806, &[0; 28]);
    let arp_vlan3 = build::frame(&tagged(3), 0x0806, &[0; 28]);
    let qinq = roce4(
        &L2::new(MAC_SW, MAC_HOST).tag(0x88a8, 4, 10).vlan(3, 100),
        26,
        0x14,
        64,
    );
    // IPv4 fragment (offset 185 * 8) of a RoCEv2 datagram: no UDP header here
    let frag = edit(roce.clone(), &[(IP + 6, 0x00), (IP + 7, 0xb9)]);
    let frag = fix_ip_csum(frag);
    let pfc_34 = build::pfc_frame(MAC_HOST, 0x18, [0, 0, 0, 0xffff, 0x1000, 0, 0, 0]);
    let pfc_xon = build::pfc_frame(MAC_HOST, 0x08, [0; 8]);
    let pfc_all = build::pfc_frame(MAC_HOST, 0xff, [7; 8]);
    let pause = build::pause_frame(MAC_HOST, 0xffff);
    // UET: entropy 0x1234 in the UDP source port, then the PDS header
    let uet_pds = |ip: &Ip, pds: &[u8]| build::udp_frame(&l2, ip, 0x1234, uet::UET_PORT, pds);
    let uet_hdr = |t: u8, n: usize| {
        let mut h = vec![0x5a; n];
        let pro = (u16::from(t) << 11).to_be_bytes();
        h[..2.min(n)].copy_from_slice(&pro[..2.min(n)]);
        h
    };
    let uet_rud_hdr = uet::Pds::request(uet::TYPE_RUD_REQ, 3, uet::FLAG_AR, 0x10_0001, 7, 9);
    let uet_rud = uet_pds(&v4(26), &[&uet_rud_hdr[..], &[0xab; 64]].concat());
    let uet_ack_hdr = uet_hdr(uet::TYPE_ACK, 12);
    let uet_ack_v6 = uet_pds(&v6(48), &uet_ack_hdr);
    let macctl_other = {
        let mut f = build::pause_frame(MAC_HOST, 1);
        f[15] = 0x02; // opcode 0x0002 (not PAUSE, not PFC)
        f
    };
    let v4_hdr_only = |edits: &[(usize, u8)]| edit(plain0.clone(), edits);
    let v6_hdr = build::frame(
        &l2,
        0x86dd,
        &build::ip_packet(
            &Ip::v6(V6_SRC, V6_DST),
            17,
            &[0x13, 0x88, 0x12, 0xb7, 0, 8, 0, 0],
        ),
    );

    let mut t = vec![
        // ---- classification: DSCP trust -------------------------------
        decoded(fix(
            "rocev2_v4_dscp26_to_tc3_lossless",
            "p0",
            roce.clone(),
            pass(classified(3, &roce, &["rx_roce", "rx_lossless"])),
        )),
        decoded(fix(
            "rocev2_v6_dscp26_to_tc3_lossless",
            "p0",
            roce_v6.clone(),
            pass(classified(3, &roce_v6, &["rx_roce", "rx_lossless"])),
        )),
        decoded(fix(
            "rocev2_v4_options_ihl6",
            "p0",
            roce_opts.clone(),
            pass(classified(3, &roce_opts, &["rx_roce", "rx_lossless"])),
        )),
        decoded(fix(
            "rocev2_v4_options_ihl15",
            "p0",
            roce_big_opts.clone(),
            pass(classified(3, &roce_big_opts, &["rx_roce", "rx_lossless"])),
        )),
        decoded(fix(
            "cnp_v4_to_cnp_tc6",
            "p0",
            cnp.clone(),
            pass(classified(6, &cnp, &["rx_roce", "rx_cnp"])),
        )),
        decoded(fix(
            "cnp_with_roce_dscp_still_cnp_tc",
            "p0",
            cnp_dscp26.clone(),
            pass(classified(6, &cnp_dscp26, &["rx_roce", "rx_cnp"])),
        )),
        decoded(fix(
            "cnp_v6_to_cnp_tc6",
            "p2",
            cnp_v6.clone(),
            pass(classified(6, &cnp_v6, &["rx_roce", "rx_cnp"])),
        )),
        fix(
            "udp_not_rocev2_dscp26_tc3",
            "p0",
            udp_dns.clone(),
            pass(classified(3, &udp_dns, &["rx_lossless"])),
        ),
        fix(
            "ipv4_later_fragment_not_rocev2",
            "p0",
            frag.clone(),
            pass(classified(3, &frag, &["rx_lossless"])),
        ),
        fix(
            "azure_dscp46_to_tc5",
            "p2",
            tcp46.clone(),
            pass(classified(5, &tcp46, &[])),
        ),
        fix(
            "azure_dscp0_to_tc1",
            "p2",
            plain0.clone(),
            pass(classified(1, &plain0, &[])),
        ),
        fix(
            "roce_map_unlisted_dscp_to_default_0",
            "p0",
            plain0.clone(),
            pass(classified(0, &plain0, &[])),
        ),
        fix(
            "azure_ipv6_dscp4_tc4_lossless",
            "p2",
            v6_tcp.clone(),
            pass(classified(4, &v6_tcp, &["rx_lossless"])),
        ),
        fix(
            "non_ip_untagged_default_tc",
            "p0",
            arp.clone(),
            pass(classified(0, &arp, &["rx_non_ip"])),
        ),
        fix(
            "non_ip_untagged_port_default_tc2",
            "p2",
            arp.clone(),
            pass(classified(2, &arp, &["rx_non_ip"])),
        ),
        fix(
            "non_ip_tagged_dscp_trust_falls_back_to_pcp",
            "p0",
            arp_vlan3.clone(),
            pass(classified(3, &arp_vlan3, &["rx_non_ip", "rx_lossless"])),
        ),
        decoded(fix(
            "qinq_counted_and_passed_outer_pcp",
            "p1",
            qinq.clone(),
            pass(classified(
                4,
                &qinq,
                &["rx_non_ip", "rx_qinq", "rx_lossless"],
            )),
        )),
        // ---- classification: dot1p trust ----------------------------------
        decoded(fix(
            "dot1p_pcp3_tc3_lossless",
            "p1",
            roce_vlan3.clone(),
            pass(classified(3, &roce_vlan3, &["rx_roce", "rx_lossless"])),
        )),
        decoded(fix(
            "dot1p_pcp4_tc4_lossless",
            "p1",
            roce_vlan4.clone(),
            pass(classified(4, &roce_vlan4, &["rx_roce", "rx_lossless"])),
        )),
        decoded(fix(
            "dot1p_pcp5_tc5_lossy_ignores_dscp",
            "p1",
            roce_vlan5.clone(),
            pass(classified(5, &roce_vlan5, &["rx_roce"])),
        )),
        decoded(fix(
            "dot1p_vlan_ipv6_rocev2",
            "p1",
            roce_v6_vlan.clone(),
            pass(classified(3, &roce_v6_vlan, &["rx_roce", "rx_lossless"])),
        )),
        fix(
            "dot1p_untagged_default_tc0",
            "p1",
            roce.clone(),
            pass(classified(0, &roce, &["rx_roce"])),
        ),
        decoded(fix(
            "dscp_trust_vlan_rocev2_uses_dscp",
            "p0",
            roce_vlan3.clone(),
            pass(classified(0, &roce_vlan3, &["rx_roce"])),
        )),
        // ---- MAC control: consumed, counted per priority ------------------
        decoded(fix(
            "pfc_prio3_4_consumed",
            "p0",
            pfc_34.clone(),
            drop_(d(&[
                ("rx_pfc[3]", 1),
                ("rx_pfc[4]", 1),
                ("rx_pfc_xoff[3]", 1),
                ("rx_pfc_xoff[4]", 1),
                ("verdict_drop", 1),
            ])),
        )),
        decoded(fix(
            "pfc_xon_prio3_consumed",
            "p1",
            pfc_xon.clone(),
            drop_(d(&[("rx_pfc[3]", 1), ("verdict_drop", 1)])),
        )),
        decoded(fix(
            "pfc_all_priorities",
            "p2",
            pfc_all.clone(),
            drop_(d(&[
                ("rx_pfc[0]", 1),
                ("rx_pfc[1]", 1),
                ("rx_pfc[2]", 1),
                ("rx_pfc[3]", 1),
                ("rx_pfc[4]", 1),
                ("rx_pfc[5]", 1),
                ("rx_pfc[6]", 1),
                ("rx_pfc[7]", 1),
                ("rx_pfc_xoff[0]", 1),
                ("rx_pfc_xoff[1]", 1),
                ("rx_pfc_xoff[2]", 1),
                ("rx_pfc_xoff[3]", 1),
                ("rx_pfc_xoff[4]", 1),
                ("rx_pfc_xoff[5]", 1),
                ("rx_pfc_xoff[6]", 1),
                ("rx_pfc_xoff[7]", 1),
                ("verdict_drop", 1),
            ])),
        )),
        decoded(fix(
            "pause_8023x_consumed",
            "p0",
            pause.clone(),
            drop_(d(&[("rx_pause", 1), ("verdict_drop", 1)])),
        )),
        fix(
            "mac_control_other_opcode_consumed",
            "p0",
            macctl_other,
            drop_(d(&[("rx_mac_ctl_other", 1), ("verdict_drop", 1)])),
        ),
        // ---- malformed at every header boundary (p0 passes, p1 drops) -----
        Fixture {
            name: "eth_13_bytes_refused_by_kernel",
            config: CONFIG_MAIN,
            port: "p0",
            frame: cut(arp.clone(), 13),
            expect: Expect::KernelRejects,
            decode: false,
            prog: "xdp_classify",
            out: None,
            preload: None,
            pg_headroom: None,
            expect_paused: None,
        },
        fix(
            "vlan_truncated_pass",
            "p0",
            cut(roce_vlan3.clone(), 16),
            pass(malformed(ParseError::VlanTruncated, false)),
        ),
        fix(
            "vlan_truncated_drop",
            "p1",
            cut(roce_vlan3.clone(), 17),
            drop_(malformed(ParseError::VlanTruncated, true)),
        ),
        fix(
            "ipv4_truncated",
            "p0",
            cut(roce.clone(), IP + 19),
            pass(malformed(ParseError::Ipv4Truncated, false)),
        ),
        fix(
            "ipv4_bad_version",
            "p0",
            v4_hdr_only(&[(IP, 0x55)]),
            pass(malformed(ParseError::Ipv4BadVersion, false)),
        ),
        fix(
            "ipv4_bad_ihl",
            "p1",
            v4_hdr_only(&[(IP, 0x44)]),
            drop_(malformed(ParseError::Ipv4BadIhl, true)),
        ),
        fix(
            "ipv4_options_truncated",
            "p0",
            cut(roce_big_opts.clone(), IP + 59),
            pass(malformed(ParseError::Ipv4OptionsTruncated, false)),
        ),
        fix(
            "ipv4_total_len_below_header",
            "p0",
            v4_hdr_only(&[(IP + 2, 0), (IP + 3, 19)]),
            pass(malformed(ParseError::Ipv4BadTotalLen, false)),
        ),
        fix(
            "ipv4_total_len_beyond_frame",
            "p1",
            v4_hdr_only(&[(IP + 2, 0x05), (IP + 3, 0xdc)]),
            drop_(malformed(ParseError::Ipv4LenExceedsFrame, true)),
        ),
        fix(
            "ipv4_truncated_rocev2_frame",
            "p0",
            cut(roce.clone(), 60),
            pass(malformed(ParseError::Ipv4LenExceedsFrame, false)),
        ),
        fix(
            "ipv6_truncated",
            "p0",
            cut(roce_v6.clone(), IP + 39),
            pass(malformed(ParseError::Ipv6Truncated, false)),
        ),
        fix(
            "ipv6_bad_version",
            "p1",
            edit(roce_v6.clone(), &[(IP, 0x45)]),
            drop_(malformed(ParseError::Ipv6BadVersion, true)),
        ),
        fix(
            "ipv6_payload_beyond_frame",
            "p0",
            cut(roce_v6.clone(), 100),
            pass(malformed(ParseError::Ipv6LenExceedsFrame, false)),
        ),
        fix(
            "udp_truncated",
            "p0",
            fix_ip_csum(edit(udp_dns.clone(), &[(IP + 2, 0), (IP + 3, 24)])),
            pass(malformed(ParseError::UdpTruncated, false)),
        ),
        fix(
            "udp_len_below_8",
            "p0",
            edit(udp_dns.clone(), &[(UDP + 4, 0), (UDP + 5, 4)]),
            pass(malformed(ParseError::UdpBadLen, false)),
        ),
        fix(
            "udp_len_beyond_ip_payload",
            "p1",
            edit(udp_dns.clone(), &[(UDP + 4, 0x01), (UDP + 5, 0)]),
            drop_(malformed(ParseError::UdpBadLen, true)),
        ),
        fix(
            "ipv6_udp_len_beyond_payload",
            "p0",
            edit(v6_hdr.clone(), &[(IP + 40 + 5, 9)]),
            pass(malformed(ParseError::UdpBadLen, false)),
        ),
        fix(
            "bth_truncated_udp_4791_short",
            "p0",
            build::udp_frame(&l2, &v4(26), 49152, 4791, &[0; 15]),
            pass(malformed(ParseError::BthTruncated, false)),
        ),
        fix(
            "bth_truncated_drop",
            "p1",
            build::udp_frame(&l2, &v4(26), 49152, 4791, &[0; 8]),
            drop_(malformed(ParseError::BthTruncated, true)),
        ),
        fix(
            "mac_control_no_opcode",
            "p0",
            cut(pause.clone(), 15),
            pass(malformed(ParseError::MacCtlTruncated, false)),
        ),
        fix(
            "pfc_truncated_times",
            "p1",
            cut(pfc_34.clone(), 30),
            drop_(malformed(ParseError::MacCtlTruncated, true)),
        ),
        fix(
            "pause_truncated_time",
            "p0",
            cut(pause.clone(), 17),
            pass(malformed(ParseError::MacCtlTruncated, false)),
        ),
        // ---- UET over UDP 4793: classes and the PDS boundary ---------------
        fix(
            "uet_rud_request_v4_dscp26_lossless_class",
            "p0",
            uet_rud.clone(),
            pass(classified(3, &uet_rud, &["rx_uet", "rx_lossless"])),
        ),
        fix(
            "uet_ack_v6_dscp48_lossy_class",
            "p0",
            uet_ack_v6.clone(),
            pass(classified(6, &uet_ack_v6, &["rx_uet"])),
        ),
        fix(
            "uet_truncated_udp_4793_empty",
            "p0",
            uet_pds(&v4(26), &[]),
            pass(malformed(ParseError::UetTruncated, false)),
        ),
        fix(
            "uet_truncated_v6_half_prologue",
            "p0",
            uet_pds(&v6(26), &uet_ack_hdr[..1]),
            pass(malformed(ParseError::UetTruncated, false)),
        ),
        fix(
            "uet_truncated_request_11_of_12_dropped",
            "p1",
            uet_pds(&v4(26), &uet_rud_hdr[..11]),
            drop_(malformed(ParseError::UetTruncated, true)),
        ),
        fix(
            "uet_truncated_nack_15_of_16",
            "p0",
            uet_pds(&v6(26), &uet_hdr(uet::TYPE_NACK, 15)),
            pass(malformed(ParseError::UetTruncated, false)),
        ),
        fix(
            "uet_truncated_ack_cc_31_of_32_dropped",
            "p1",
            uet_pds(&v4(26), &uet_hdr(uet::TYPE_ACK_CC, 31)),
            drop_(malformed(ParseError::UetTruncated, true)),
        ),
        // ---- no port entry ------------------------------------------------
        Fixture {
            name: "unconfigured_interface_passes_untouched",
            config: CONFIG_MAIN,
            port: "px",
            frame: roce.clone(),
            expect: Expect::Run {
                verdict: XDP_PASS,
                deltas: vec![],
                global: vec![("unknown_port", 1)],
            },
            decode: false,
            prog: "xdp_classify",
            out: None,
            preload: None,
            pg_headroom: None,
            expect_paused: None,
        },
        // ---- a config change applies to the next frame ---------------------
        alt(fix(
            "alt_config_cnp_tc7",
            "p2",
            cnp.clone(),
            pass(classified(7, &cnp, &["rx_roce", "rx_cnp"])),
        )),
        alt(fix(
            "alt_config_p0_now_dot1p",
            "p0",
            roce_vlan5.clone(),
            pass(classified(5, &roce_vlan5, &["rx_roce"])),
        )),
        alt(fix(
            "alt_config_p0_no_lossless",
            "p0",
            roce_vlan3.clone(),
            pass(classified(3, &roce_vlan3, &["rx_roce"])),
        )),
        Fixture {
            name: "alt_config_p1_removed_is_unknown",
            config: CONFIG_ALT,
            port: "p1",
            frame: roce.clone(),
            expect: Expect::Run {
                verdict: XDP_PASS,
                deltas: vec![],
                global: vec![("unknown_port", 1)],
            },
            decode: false,
            prog: "xdp_classify",
            out: None,
            preload: None,
            pg_headroom: None,
            expect_paused: None,
        },
    ];
    // unique names
    let mut seen = std::collections::HashSet::new();
    for f in &t {
        assert!(seen.insert(f.name), "duplicate fixture name {}", f.name);
    }
    t.sort_by_key(|f| f.config == CONFIG_ALT);
    t.extend(routing_table());
    t.extend(trim_table());
    let mut seen = std::collections::HashSet::new();
    for f in &t {
        assert!(seen.insert(f.name), "duplicate fixture name {}", f.name);
    }
    t
}

/// Recomputes the IPv4 header checksum of an untagged frame.
fn fix_ip_csum(mut f: Vec<u8>) -> Vec<u8> {
    let hl = usize::from(f[IP] & 0xf) * 4;
    f[IP + 10] = 0;
    f[IP + 11] = 0;
    let c = dataplane_common::wire::csum::internet(&f[IP..IP + hl]);
    f[IP + 10..IP + 12].copy_from_slice(&c.to_be_bytes());
    f
}

struct Harness {
    _ns: Netns,
    bpf: Ebpf,
    ifindex: BTreeMap<String, u32>,
    port_ids: BTreeMap<String, u16>,
    applied: Option<&'static str>,
}

impl Harness {
    fn new(ns: Netns) -> anyhow::Result<Harness> {
        for p in ["p0", "p1", "p2", "p3", "px"] {
            ns.ip(&[
                "link",
                "add",
                p,
                "type",
                "veth",
                "peer",
                "name",
                &format!("{p}-peer"),
            ])?;
            ns.ip(&["link", "set", p, "up"])?;
            // p3's peer stays down: p3 is not running, its next hop not live
            if p != "p3" {
                ns.ip(&["link", "set", &format!("{p}-peer"), "up"])?;
            }
        }
        let bpf = load_object()?;
        let mut ifindex = BTreeMap::new();
        for p in ["p0", "p1", "p2", "p3", "px"] {
            ifindex.insert(
                p.to_string(),
                dataplane_user::sys::ifindex(p).ok_or_else(|| anyhow::anyhow!("no {p}"))?,
            );
        }
        Ok(Harness {
            _ns: ns,
            bpf,
            ifindex,
            port_ids: BTreeMap::new(),
            applied: None,
        })
    }

    /// Applies a config with the controller's own code path.
    fn apply(&mut self, text: &'static str) -> anyhow::Result<()> {
        if self.applied == Some(text) {
            return Ok(());
        }
        let (plan, _) = apply_config_text(&mut self.bpf, text, "fixture")?;
        self.port_ids = plan
            .ports
            .iter()
            .map(|p| (p.name.clone(), p.config.port_id))
            .collect();
        self.applied = Some(text);
        Ok(())
    }

    /// Every counter of every port slot and the global ones, by
    /// "#<slot>:<name>" and "global:<name>".
    fn snapshot(&self) -> anyhow::Result<BTreeMap<String, u64>> {
        testbed::testrun::counter_snapshot(&self.bpf, true)
    }

    /// "p1:tx_tc_pkts[3]" -> "#<slot of p1>:tx_tc_pkts[3]"; unprefixed names
    /// are the ingress port's.
    fn key(&self, ingress: &str, name: &str) -> String {
        let (port, field) = match name.split_once(':') {
            Some((p, f)) => (p, f),
            None => (ingress, name),
        };
        if port == "global" {
            return name.to_string();
        }
        match self.port_ids.get(port) {
            Some(id) => format!("#{id}:{field}"),
            None => format!("(unconfigured {port}):{field}"),
        }
    }

    /// Resets the buffer model (queues, PG rows, pool use) and optionally
    /// preloads one queue.
    fn model(&mut self, preload: Option<(&'static str, usize, u32, bool)>) -> anyhow::Result<()> {
        use aya::maps::Array;
        testbed::testrun::reset_model(&mut self.bpf)?;
        let mut q: Array<&mut MapData, EgressQueue> =
            Array::try_from(self.bpf.map_mut(names::map::QUEUES).unwrap())?;
        if let Some((port, tc, bytes, paused)) = preload {
            let slot = self.port_ids[port] as usize;
            let mut v = EgressQueue::ZERO;
            v.bytes = bytes;
            v.ingress[15] = bytes;
            if paused {
                // paused for the next 10 s: no drain during the fixture
                let now = dataplane_user::sys::monotonic_ns();
                v.last_ns = now;
                v.paused_until_ns = now + 10_000_000_000;
            } else {
                // updated "in the future": no drain during the fixture
                v.last_ns = u64::MAX / 2;
            }
            q.set((slot * 8 + tc) as u32, v, 0)?;
        }
        Ok(())
    }

    fn queue(&self, port: &str, tc: usize) -> anyhow::Result<EgressQueue> {
        let q: aya::maps::Array<&MapData, EgressQueue> =
            aya::maps::Array::try_from(self.bpf.map(names::map::QUEUES).unwrap())?;
        Ok(q.get(&((self.port_ids[port] as usize * 8 + tc) as u32), 0)?)
    }

    fn run(&mut self, f: &Fixture) -> anyhow::Result<()> {
        self.apply(f.config)?;
        self.model(f.preload)?;
        if let Some((port, tc, bytes)) = f.pg_headroom {
            use dataplane_common::buffer::TcRow;
            let mut r: aya::maps::Array<&mut MapData, TcRow> =
                aya::maps::Array::try_from(self.bpf.map_mut(names::map::TC_ROWS).unwrap())?;
            let mut row = r.get(&(tc as u32), 0)?;
            row.pg[self.port_ids[port] as usize].headroom_used = bytes;
            r.set(tc as u32, row, 0)?;
        }
        let ix = self.ifindex[f.port];
        let before = self.snapshot()?;
        let r = run_xdp(&self.bpf, f.prog, &f.frame, ix, 1);
        match (&f.expect, r) {
            (Expect::KernelRejects, Err(_)) => Ok(()),
            (Expect::KernelRejects, Ok(r)) => anyhow::bail!(
                "kernel accepted the frame, program returned {}",
                action_name(r.action)
            ),
            (Expect::Run { .. }, Err(e)) => Err(e),
            (
                Expect::Run {
                    verdict,
                    deltas,
                    global,
                },
                Ok(r),
            ) => {
                let mut problems = Vec::new();
                if r.action != *verdict {
                    problems.push(format!(
                        "verdict {} (expected {})",
                        action_name(r.action),
                        action_name(*verdict)
                    ));
                }
                let want_out = f.out.as_ref().unwrap_or(&f.frame);
                if &r.out != want_out {
                    let first = r.out.iter().zip(want_out.iter()).position(|(a, b)| a != b);
                    problems.push(format!(
                        "output frame differs from the expected one ({} vs {} bytes, first difference at byte {first:?})",
                        r.out.len(),
                        want_out.len()
                    ));
                }
                let after = self.snapshot()?;
                let got: BTreeMap<String, i128> = after
                    .iter()
                    .filter_map(|(k, v)| {
                        let b = before.get(k).copied().unwrap_or(0);
                        (*v != b).then(|| (k.clone(), i128::from(*v) - i128::from(b)))
                    })
                    .collect();
                let mut want: BTreeMap<String, i128> = deltas
                    .iter()
                    .map(|(k, v)| (self.key(f.port, k), *v))
                    .collect();
                for (k, v) in global {
                    want.insert(format!("global:{k}"), *v);
                }
                if got != want {
                    problems.push(format!("counter deltas {got:?}, expected {want:?}"));
                }
                if let Some((port, tc, paused)) = f.expect_paused {
                    let q = self.queue(port, tc)?;
                    let now = dataplane_user::sys::monotonic_ns();
                    if q.is_paused(now) != paused {
                        problems.push(format!(
                            "queue {port} TC{tc} paused = {} (until {}), expected {paused}",
                            q.is_paused(now),
                            q.paused_until_ns
                        ));
                    }
                }
                if problems.is_empty() {
                    Ok(())
                } else {
                    anyhow::bail!("{}", problems.join("; "))
                }
            }
        }
    }
}

/// Decodes the `decode` fixtures with scapy and compares with our parser.
fn scapy_check(fixtures: &[Fixture]) -> anyhow::Result<usize> {
    let chosen: Vec<&Fixture> = fixtures.iter().filter(|f| f.decode).collect();
    let frames: Vec<Vec<u8>> = chosen.iter().map(|f| f.frame.clone()).collect();
    let dir = std::env::temp_dir().join(format!("dp-fixtures-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let pcap = dir.join("fixtures.pcap");
    write_pcap(&pcap, &frames)?;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/decode_scapy.py");
    let out = std::process::Command::new("python3")
        .arg(script)
        .arg(&pcap)
        .output()?;
    let _ = std::fs::remove_dir_all(&dir);
    if !out.status.success() {
        anyhow::bail!(
            "scapy decoder failed (is scapy installed? `cargo xtask setup`): {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let decoded: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout)?;
    anyhow::ensure!(
        decoded.len() == chosen.len(),
        "scapy decoded {} frames of {}",
        decoded.len(),
        chosen.len()
    );
    let mut problems = Vec::new();
    for (f, s) in chosen.iter().zip(&decoded) {
        let p =
            parse(&f.frame[..]).map_err(|e| anyhow::anyhow!("{}: our parser: {e:?}", f.name))?;
        let mut mismatches = Vec::new();
        let mut extra: Vec<String> = Vec::new();
        let mut cmp = |field: &str, ours: u64| match s.get(field).and_then(|v| v.as_u64()) {
            Some(theirs) if theirs == ours => {}
            other => mismatches.push(format!("{}: {field}: ours {ours}, scapy {other:?}", f.name)),
        };
        if p.roce {
            cmp("dscp", u64::from(p.dscp));
            cmp("ecn", u64::from(p.ecn));
            cmp("dport", u64::from(p.dport));
            cmp("sport", u64::from(p.sport));
            cmp("bth_opcode", u64::from(p.bth.opcode));
            cmp("bth_dest_qp", u64::from(p.bth.dest_qp));
            cmp("bth_psn", u64::from(p.bth.psn));
            cmp("bth_becn", u64::from(p.bth.becn));
            if s.get("icrc_ok").and_then(|v| v.as_bool()) != Some(true) {
                extra.push(format!("{}: scapy says the ICRC is wrong", f.name));
            }
            if p.bth.opcode == bth::OP_CNP && !p.bth.becn {
                extra.push(format!("{}: CNP without BECN", f.name));
            }
        }
        if p.vlan && !p.qinq {
            cmp("pcp", u64::from(p.pcp));
            cmp("vid", u64::from(p.vid));
        }
        if p.qinq {
            cmp("pcp", u64::from(p.pcp)); // scapy's first Dot1Q is the outer tag
        }
        if p.mac_ctl.is_pfc() {
            cmp("pfc_class_enable", u64::from(p.mac_ctl.class_enable));
            let theirs: Option<Vec<u64>> = s
                .get("pfc_times")
                .and_then(|v| v.as_array())
                .map(|a| a.iter().filter_map(|x| x.as_u64()).collect());
            let ours: Vec<u64> = p.mac_ctl.times.iter().map(|&t| u64::from(t)).collect();
            if theirs.as_ref() != Some(&ours) {
                extra.push(format!(
                    "{}: pfc times ours {ours:?}, scapy {theirs:?}",
                    f.name
                ));
            }
        }
        if p.mac_ctl.is_pause() {
            cmp("pause_time", u64::from(p.mac_ctl.times[0]));
        }
        problems.append(&mut mismatches);
        problems.append(&mut extra);
        let mac_ctl = p.mac_ctl.is_pfc() || p.mac_ctl.is_pause();
        if mac_ctl && s.get("dst").and_then(|v| v.as_str()) != Some("01:80:c2:00:00:01") {
            problems.push(format!(
                "{}: MAC control destination {:?}",
                f.name,
                s.get("dst")
            ));
        }
    }
    if problems.is_empty() {
        Ok(chosen.len())
    } else {
        anyhow::bail!("scapy disagrees:\n  {}", problems.join("\n  "))
    }
}

fn main() -> ExitCode {
    // `cargo test -- --list` and friends: we are one test
    if std::env::args().any(|a| a == "--list") {
        println!("fixtures: test");
        return ExitCode::SUCCESS;
    }
    let ns = match Netns::create("fx") {
        Ok(ns) => ns,
        Err(e) => {
            eprintln!("fixtures: cannot create a network namespace (root needed): {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let entered = match ns.enter() {
        Ok(g) => g,
        Err(e) => {
            eprintln!("fixtures: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let fixtures = table();
    let mut failed = 0;
    {
        let mut h = match Harness::new(ns) {
            Ok(h) => h,
            Err(e) => {
                eprintln!("fixtures: harness: {e:#}");
                return ExitCode::FAILURE;
            }
        };
        println!(
            "running {} fixtures through xdp_classify (BPF_PROG_TEST_RUN)",
            fixtures.len()
        );
        for f in &fixtures {
            match h.run(f) {
                Ok(()) => println!("  ok    {:<48} {}", f.name, f.port),
                Err(e) => {
                    failed += 1;
                    println!("  FAIL  {:<48} {}: {e:#}", f.name, f.port);
                }
            }
        }
        drop(entered);
        // h (and the namespace) drop here, on every path
    }
    match scapy_check(&fixtures) {
        Ok(n) => println!(
            "  ok    scapy decoded {n} RoCEv2/PFC/VLAN fixtures identically (ICRC verified)"
        ),
        Err(e) => {
            failed += 1;
            println!("  FAIL  scapy cross-check: {e:#}");
        }
    }
    if failed > 0 {
        println!("fixtures: {failed} failed");
        ExitCode::FAILURE
    } else {
        println!("fixtures: all {} passed", fixtures.len());
        ExitCode::SUCCESS
    }
}
