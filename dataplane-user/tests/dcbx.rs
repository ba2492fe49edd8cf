//! DCBX in the controller without a network: what a port advertises, how
//! its agent takes peers' frames (good, mismatching, malformed), and
//! `show dcbx` against golden files (UPDATE_GOLDEN=1 rewrites them).

use std::path::PathBuf;
use std::time::Instant;

use dataplane_common::dcbx::{operational, Field};
use dataplane_common::wire::dcbx::{Dcbx, EtsConfig, Pfc, SEL_DSCP, SEL_UDP};
use dataplane_common::wire::lldp::{self, Id, Lldpdu, CHASSIS_MAC, PORT_IFNAME};
use dataplane_user::dcbx::{advert, agent::PortAgent, state::State};

const CONFIG: &str = r#"
[switch]
name = "sw1"

[dscp_to_tc_map.ROCE]
default = 0
"26" = 3
"48" = 6

[[port]]
name = "eth1"
dscp_to_tc_map = "ROCE"
pfc_enable = "3,4"

[[port]]
name = "eth2"
dscp_to_tc_map = "ROCE"
pfc_enable = "3"

[dcbx]
tx_interval_s = 10
"#;

const SW_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
const NIC_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x10];

fn plan() -> dataplane_config::Plan {
    dataplane_config::Config::parse(CONFIG, "t.toml")
        .and_then(|c| c.validate("t.toml"))
        .unwrap()
}

/// A NIC's own configuration: willing, PFC on priority 0 only, no app
/// table.
fn nic_admin(willing: bool) -> Dcbx {
    Dcbx {
        pfc: Some(Pfc {
            willing,
            mbc: false,
            cap: 8,
            enable: 0x01,
        }),
        ets_config: Some(EtsConfig {
            willing,
            cbs: false,
            max_tcs: 8,
            ..EtsConfig::default()
        }),
        ..Dcbx::default()
    }
}

fn frame(dcbx: Dcbx, ttl: u16) -> Vec<u8> {
    let du = Lldpdu {
        chassis: Id::new(CHASSIS_MAC, &NIC_MAC),
        port: Id::new(PORT_IFNAME, b"enp1s0"),
        ttl,
        system_name: Id::new(0, b"host1"),
        dcbx,
        ..Lldpdu::default()
    };
    let mut buf = [0u8; lldp::MAX_FRAME];
    let n = lldp::encode(&du, NIC_MAC, &mut buf).unwrap();
    buf[..n].to_vec()
}

fn agents() -> Vec<PortAgent> {
    let plan = plan();
    let d = plan.dcbx.clone().unwrap();
    plan.ports
        .iter()
        .map(|p| {
            let du = advert::lldpdu(&d, p, SW_MAC, "sw1", d.ttl_s);
            PortAgent::new(&p.name, SW_MAC, du, advert::local(&d, p))
        })
        .collect()
}

#[test]
fn a_port_advertises_its_pfc_roce_priority_and_lossless_dscps() {
    let plan = plan();
    let d = plan.dcbx.clone().unwrap();
    let x = advert::dcbx(&d, &plan.ports[0]);
    assert_eq!(x.pfc.unwrap().enable, 0x18);
    assert!(!x.pfc.unwrap().willing);
    let app = x.app.unwrap();
    assert_eq!(app.udp_priority(4791), Some(3));
    let dscp: Vec<(u16, u8)> = app
        .entries()
        .iter()
        .filter(|e| e.selector == SEL_DSCP)
        .map(|e| (e.protocol, e.priority))
        .collect();
    // only DSCP 26 lands on a lossless priority (48 -> 6 is lossy)
    assert_eq!(dscp, [(26, 3)]);
    assert_eq!(app.entries()[0].selector, SEL_UDP);
    let du = advert::lldpdu(&d, &plan.ports[0], SW_MAC, "sw1", d.ttl_s);
    assert_eq!(du.ttl, 40);
}

/// eth1: a willing NIC that adopted the switch's configuration. eth2: a
/// NIC that is not willing (PFC on 0, RoCE on 5), then a malformed frame
/// and a frame with a bad PFC TLV length.
fn scenario() -> (Vec<PortAgent>, Instant) {
    let mut a = agents();
    let now = Instant::now();
    let plan = plan();
    let d = plan.dcbx.clone().unwrap();
    let sw0 = advert::dcbx(&d, &plan.ports[0]);
    let adopted = operational(&nic_admin(true), NIC_MAC, &sw0, SW_MAC);
    assert!(a[0].on_frame(&frame(adopted, 120), now, &mut None));
    assert!(a[0].mismatches.is_empty());
    let mut stubborn = nic_admin(false);
    let mut t = dataplane_common::wire::dcbx::AppTable::default();
    t.push(dataplane_common::wire::dcbx::AppEntry {
        priority: 5,
        selector: SEL_UDP,
        protocol: 4791,
    });
    stubborn.app = Some(t);
    a[1].on_frame(&frame(stubborn, 120), now, &mut None);
    let m: Vec<&str> = a[1].mismatches.iter().map(Field::name).collect();
    assert_eq!(m, ["pfc_enable", "roce_priority", "willing"]);
    let good = frame(stubborn, 120);
    a[1].on_frame(&good[..20], now, &mut None);
    // PFC TLV with length 7 (one extra byte), the chain kept consistent
    let mut bad = good.clone();
    let i = bad
        .windows(4)
        .position(|w| w == [0x00, 0x80, 0xc2, 0x0b])
        .unwrap();
    bad[i - 1] = 7;
    bad.insert(i + 6, 0);
    a[1].on_frame(&bad, now, &mut None);
    (a, now)
}

#[test]
fn mismatches_and_malformed_frames_are_counted_never_fatal() {
    let (a, _) = scenario();
    let c = &a[1].counters;
    assert_eq!(c.rx_frames, 3);
    assert_eq!(c.rx_discarded.get("tlv_beyond_frame"), Some(&1));
    assert_eq!(c.tlv_discarded.get("pfc_bad_len"), Some(&1));
    // the frame with the bad PFC TLV still counts, without its PFC TLV
    let m: Vec<&str> = a[1].mismatches.iter().map(Field::name).collect();
    assert_eq!(m, ["roce_priority", "pfc_absent"]);
}

#[test]
fn a_shutdown_lldpdu_forgets_the_peer() {
    let (mut a, now) = scenario();
    assert!(a[0].state(now).peer.is_some());
    a[0].on_frame(&frame(nic_admin(true), 0), now, &mut None);
    let s = a[0].state(now);
    assert!(s.peer.is_none());
    assert!(s.mismatches.is_empty());
}

#[test]
fn a_peer_ages_out_after_its_ttl() {
    let (mut a, now) = scenario();
    assert!(!a[0].age(now + std::time::Duration::from_secs(120), &mut None));
    assert!(a[0].state(now).peer.is_some());
    assert!(a[1].age(now + std::time::Duration::from_secs(121), &mut None));
    let s = a[1].state(now);
    assert!(s.peer.is_none());
    assert!(s.mismatches.is_empty());
    assert_eq!(s.counters.ageouts, 1);
}

fn golden(name: &str, got: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1") {
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_GOLDEN=1 writes it)", path.display()));
    assert_eq!(
        got,
        want,
        "{} differs (UPDATE_GOLDEN=1 rewrites it after review)",
        path.display()
    );
}

#[test]
fn show_dcbx_matches_its_golden_files() {
    let (a, now) = scenario();
    let s = State {
        instance: "sw1".into(),
        tx_interval_s: 10,
        ports: a.iter().map(|p| p.state(now)).collect(),
    };
    let t = dataplane_user::show::dcbx::table(&s);
    golden("show_dcbx.txt", &t);
    let j = dataplane_user::show::dcbx::json(&s);
    golden(
        "show_dcbx.json",
        &(serde_json::to_string_pretty(&j).unwrap() + "\n"),
    );
    // the JSON is the state itself: it reads back
    let back: State = serde_json::from_value(j).unwrap();
    assert_eq!(back, s);
    let m = dataplane_user::show::dcbx::metrics(&s);
    for line in [
        "dataplane_dcbx_mismatch{instance=\"sw1\",port=\"eth2\",field=\"roce_priority\"} 1",
        "dataplane_dcbx_mismatch{instance=\"sw1\",port=\"eth1\",field=\"pfc_enable\"} 0",
        "dataplane_lldp_discarded_total{instance=\"sw1\",port=\"eth2\",what=\"tlv\",reason=\"pfc_bad_len\"} 1",
    ] {
        assert!(m.lines().any(|l| l == line), "{line} not in\n{m}");
    }
}
