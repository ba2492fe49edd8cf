//! The verdicts on inputs recorded from real devices (veths and a
//! virtio NIC on kernel 6.18) and on constructed NIC answers.

use super::*;

/// XDP features read on 6.18: a veth whose peer has GRO on, one whose
/// peer has neither GRO nor XDP, a virtio_net NIC.
const VETH_GRO: u64 = 0x67;
const VETH_BARE: u64 = 0x23;
const VIRTIO: u64 = 0x2b;

fn veth(mtu: u32) -> LinkRead {
    LinkRead {
        ifindex: 3,
        mtu,
        admin_up: true,
        lower_up: true,
        kind: Some("veth".into()),
        num_rx_queues: 2,
        num_tx_queues: 2,
        xdp_prog: None,
        ours: false,
    }
}

fn want(pfc: u8, mtu: Option<u32>) -> PortWant {
    PortWant {
        name: "dp1".into(),
        xdp_mode: XdpAttach::Auto,
        pfc_enable: pfc,
        mtu,
    }
}

fn read(link: Option<LinkRead>, features: u64, dcb: DcbRead) -> PortRead {
    PortRead {
        link,
        driver: Ok(DriverRead {
            driver: "veth".into(),
            version: "1.0".into(),
            ..DriverRead::default()
        }),
        xdp_features: Some(features),
        channels: Some(Channels {
            rx: 2,
            tx: 2,
            ..Channels::default()
        }),
        dcb,
        pause: None,
    }
}

fn verdicts(c: &[Check]) -> Vec<(&str, Verdict)> {
    c.iter().map(|c| (c.name.as_str(), c.verdict)).collect()
}

#[test]
fn kernel_versions() {
    assert_eq!(parse_release("6.18.44-fc-v657"), Some((6, 18)));
    assert_eq!(parse_release("5.15.0-105-generic"), Some((5, 15)));
    assert_eq!(parse_release("garbage"), None);
    assert_eq!(kernel("6.18.44-fc-v657").verdict, Verdict::Pass);
    assert_eq!(kernel("6.3.0").verdict, Verdict::Pass);
    let w = kernel("6.1.0-18-amd64");
    assert_eq!(w.verdict, Verdict::Warn, "{}", w.detail);
    assert!(w.detail.contains("XDP features"));
    assert_eq!(kernel("5.18.0").verdict, Verdict::Warn);
    let f = kernel("5.15.0-105-generic");
    assert_eq!(f.verdict, Verdict::Fail);
    assert!(
        f.detail.contains("bpf_loop") && f.detail.contains("bpf_xdp_load_bytes"),
        "{}",
        f.detail
    );
    assert!(!f.detail.contains("BPF_F_BROADCAST"), "{}", f.detail);
    let old = kernel("5.10.0");
    assert!(
        old.detail.contains("BPF atomics") && old.detail.contains("BPF_F_BROADCAST"),
        "{}",
        old.detail
    );
    assert_eq!(kernel("").verdict, Verdict::Warn);
}

#[test]
fn a_good_veth_port_passes_but_for_dcb() {
    let c = port(
        &want(0x08, Some(1500)),
        &read(Some(veth(1500)), VETH_GRO, DcbRead::NoOps),
        2,
    );
    assert_eq!(
        verdicts(&c),
        [
            ("exists", Verdict::Pass),
            ("driver", Verdict::Pass),
            ("xdp", Verdict::Pass),
            ("mtu", Verdict::Pass),
            ("link", Verdict::Pass),
            ("dcb", Verdict::Warn),
            ("queues", Verdict::Pass),
        ]
    );
    assert!(c[5].detail.contains("no DCB interface"), "{}", c[5].detail);
    // no lossless priority: nothing for the NIC to do
    let c = port(
        &want(0, None),
        &read(Some(veth(1500)), VETH_GRO, DcbRead::NoOps),
        2,
    );
    assert_eq!(c[5].verdict, Verdict::Pass);
}

#[test]
fn a_missing_port_is_one_failure() {
    let c = port(&want(0x08, None), &read(None, 0, DcbRead::NoOps), 2);
    assert_eq!(verdicts(&c), [("exists", Verdict::Fail)]);
    assert_eq!(c[0].port.as_deref(), Some("dp1"));
}

#[test]
fn mtu_against_the_buffer_config() {
    let (v, d) = mtu("eth1", 1500, Some(9100));
    assert_eq!(v, Verdict::Fail);
    assert!(d.contains("ip link set dev eth1 mtu 9100"), "{d}");
    assert_eq!(mtu("eth1", 9216, Some(9100)).0, Verdict::Warn);
    assert_eq!(mtu("eth1", 9100, Some(9100)).0, Verdict::Pass);
    assert_eq!(mtu("eth1", 1500, None).0, Verdict::Pass);
}

#[test]
fn xdp_features_against_the_mode() {
    let l = veth(1500);
    assert_eq!(xdp(Some(VETH_GRO), XdpAttach::Native, &l).0, Verdict::Pass);
    let (v, d) = xdp(Some(VETH_BARE), XdpAttach::Auto, &l);
    assert_eq!(v, Verdict::Warn);
    assert!(d.contains("gro on"), "{d}");
    let (v, d) = xdp(
        Some(VIRTIO),
        XdpAttach::Auto,
        &LinkRead {
            kind: None,
            ..l.clone()
        },
    );
    assert_eq!(v, Verdict::Warn);
    assert!(d.contains("XDP transmit queues"), "{d}");
    // no native XDP: native mode fails, auto falls back, generic needs none
    assert_eq!(xdp(Some(0), XdpAttach::Native, &l).0, Verdict::Fail);
    assert_eq!(xdp(Some(0), XdpAttach::Auto, &l).0, Verdict::Warn);
    assert_eq!(xdp(Some(0), XdpAttach::Generic, &l).0, Verdict::Pass);
    assert_eq!(
        xdp(Some(xdp_act::BASIC), XdpAttach::Native, &l).0,
        Verdict::Fail
    );
    assert_eq!(xdp(None, XdpAttach::Native, &l).0, Verdict::Warn);
    // single-buffer programs above the veth's limit (measured: 3506)
    assert_eq!(
        xdp(Some(VETH_GRO), XdpAttach::Native, &veth(3506)).0,
        Verdict::Pass
    );
    assert_eq!(
        xdp(Some(VETH_GRO), XdpAttach::Native, &veth(3507)).0,
        Verdict::Fail
    );
    let (v, d) = xdp(Some(VETH_BARE), XdpAttach::Auto, &veth(9100));
    assert_eq!(v, Verdict::Warn);
    assert!(
        d.contains("single-buffer") && d.contains("ndo_xdp_xmit"),
        "{d}"
    );
    // a program attached by someone else: `up` cannot attach
    let mut busy = veth(1500);
    busy.xdp_prog = Some(42);
    let (v, d) = xdp(Some(VETH_GRO), XdpAttach::Auto, &busy);
    assert_eq!(v, Verdict::Fail);
    assert!(
        d.contains("program 42") && d.contains("not this instance's"),
        "{d}"
    );
    // its own pinned link: fine (a restart adopts it)
    busy.ours = true;
    let (v, d) = xdp(Some(VETH_GRO), XdpAttach::Auto, &busy);
    assert_eq!(v, Verdict::Pass);
    assert!(d.contains("this instance's pinned link"), "{d}");
}

#[test]
fn link_states() {
    let mut l = veth(1500);
    assert_eq!(link_state(&l).0, Verdict::Pass);
    l.lower_up = false;
    assert!(link_state(&l).1.contains("no carrier"));
    l.admin_up = false;
    assert!(link_state(&l).1.contains("administratively down"));
}

fn nic(enable: u8, cap: u8, buffer: Option<DcbBuffer>) -> DcbRead {
    DcbRead::Ieee {
        pfc: Some(IeeePfc {
            cap,
            enable,
            mbc: 0,
            delay: 0,
        }),
        buffer,
        dcbx: Some(0x0a),
    }
}

#[test]
fn the_nics_pfc_against_the_lossless_priorities() {
    let (v, d) = dcb("eth1", 0x08, &nic(0x08, 8, None));
    assert_eq!(v, Verdict::Pass, "{d}");
    assert!(d.contains("priorities 3 = config"), "{d}");
    let (v, d) = dcb("eth1", 0x18, &nic(0x08, 8, None));
    assert_eq!(v, Verdict::Warn);
    assert!(
        d.contains("PFC on priorities 3 but") && d.contains("are 3,4"),
        "{d}"
    );
    assert!(d.contains("prio-pfc all:off 3:on 4:on"), "{d}");
    let (v, d) = dcb("eth1", 0x18, &nic(0x18, 1, None));
    assert_eq!(v, Verdict::Warn);
    assert!(d.contains("on 1 classes"), "{d}");
    assert_eq!(dcb("eth1", 0, &nic(0, 8, None)).0, Verdict::Pass);
    let no_pfc = DcbRead::Ieee {
        pfc: None,
        buffer: None,
        dcbx: None,
    };
    assert!(dcb("eth1", 0x08, &no_pfc).1.contains("CEE"));
    assert_eq!(
        dcb("eth1", 0x08, &DcbRead::Error("x".into())).0,
        Verdict::Warn
    );
}

#[test]
fn lossless_priorities_want_a_nic_buffer_of_their_own() {
    let own = DcbBuffer {
        prio2buffer: [0, 0, 0, 1, 0, 0, 0, 0],
        size: [262_144, 131_072, 0, 0, 0, 0, 0, 0],
        total: 393_216,
    };
    assert_eq!(dcb("eth1", 0x08, &nic(0x08, 8, Some(own))).0, Verdict::Pass);
    let shared = DcbBuffer {
        prio2buffer: [0; 8],
        ..own
    };
    let (v, d) = dcb("eth1", 0x08, &nic(0x08, 8, Some(shared)));
    assert_eq!(v, Verdict::Warn);
    assert!(
        d.contains("priority 3 shares NIC buffer 0 with lossy priorities 0,1,2,4,5,6,7"),
        "{d}"
    );
}

#[test]
fn queues_against_cpus() {
    let l = veth(1500);
    let ch = |rx, tx, combined| {
        Some(Channels {
            rx,
            tx,
            combined,
            max_combined: 64,
        })
    };
    assert_eq!(queues("eth1", ch(0, 0, 8), &l, 8).0, Verdict::Pass);
    let (v, d) = queues("eth1", ch(0, 0, 4), &l, 8);
    assert_eq!(v, Verdict::Warn);
    assert!(d.contains("ethtool -L eth1 combined 8"), "{d}");
    // a veth reports rx/tx channels, not combined ones
    let veth_ch = Some(Channels {
        rx: 1,
        tx: 1,
        combined: 0,
        max_combined: 0,
    });
    assert!(queues("dp3", veth_ch, &l, 2)
        .1
        .contains("ethtool -L dp3 rx 2 tx 2"));
    // no ethtool channels: rtnetlink's queue counts
    let (v, d) = queues("eth1", None, &l, 2);
    assert_eq!(v, Verdict::Pass);
    assert!(d.contains("rtnetlink"));
}

#[test]
fn instance_states() {
    assert_eq!(instance("leaf1", &Pinned::Nothing).verdict, Verdict::Pass);
    let run = |controller, layout| Pinned::DataPlane { controller, layout };
    assert_eq!(
        instance("leaf1", &run(Some(7), Ok(()))).verdict,
        Verdict::Pass
    );
    assert_eq!(instance("leaf1", &run(None, Ok(()))).verdict, Verdict::Warn);
    let c = instance("leaf1", &run(Some(7), Err("ROUTES: type".into())));
    assert_eq!(c.verdict, Verdict::Fail);
    assert!(c.detail.contains("ROUTES"));
}

#[test]
fn the_report_has_one_line_per_check_and_counts() {
    let c = vec![
        kernel("6.18.0"),
        Check::port("mtu", "dp3", Verdict::Fail, "mtu 1500".into()),
    ];
    let r = crate::doctor::render(&c);
    assert!(r.starts_with("PASS  kernel: 6.18.0"), "{r}");
    assert!(r.contains("\nFAIL  port dp3 mtu: mtu 1500\n"), "{r}");
    assert!(r.ends_with("1 passed, 0 warnings, 1 failed\n"), "{r}");
    let j = crate::doctor::render_json(&c);
    assert_eq!(j["fail"], 1);
    assert_eq!(j["checks"][1]["port"], "dp3");
    assert_eq!(j["checks"][1]["verdict"], "FAIL");
}

#[test]
fn link_level_pause_is_flagged_where_pfc_is_wanted() {
    let mut r = read(Some(veth(1500)), VETH_GRO, nic(0x08, 8, None));
    r.pause = Some((true, false));
    let c = port(&want(0x08, None), &r, 2);
    assert_eq!(c[5].verdict, Verdict::Warn);
    assert!(
        c[5].detail
            .starts_with("link-level pause is on (rx on, tx off)"),
        "{}",
        c[5].detail
    );
    // no lossless priority (and none on the NIC): pause is the
    // operator's business
    r.dcb = nic(0, 8, None);
    let c = port(&want(0, None), &r, 2);
    assert_eq!(c[5].verdict, Verdict::Pass, "{}", c[5].detail);
    r.dcb = nic(0x08, 8, None);
    r.pause = Some((false, false));
    assert_eq!(port(&want(0x08, None), &r, 2)[5].verdict, Verdict::Pass);
}

#[test]
fn the_recorded_veth_without_carrier_and_with_a_small_mtu() {
    let link = crate::doctor::read::parse_link(include_bytes!(
        "../../tests/fixtures/doctor/newlink-veth.bin"
    ))
    .unwrap();
    let dcb = crate::doctor::dcb::parse(include_bytes!(
        "../../tests/fixtures/doctor/getdcb-veth.bin"
    ));
    let c = port(
        &want(0x08, Some(1500)),
        &read(Some(link), VETH_BARE, dcb),
        2,
    );
    assert_eq!(
        verdicts(&c),
        [
            ("exists", Verdict::Pass),
            ("driver", Verdict::Pass),
            ("xdp", Verdict::Warn),
            ("mtu", Verdict::Fail),
            ("link", Verdict::Warn),
            ("dcb", Verdict::Warn),
            ("queues", Verdict::Pass),
        ]
    );
}
