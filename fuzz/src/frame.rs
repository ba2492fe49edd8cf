//! The ingress pipeline's pure functions on an arbitrary frame received on
//! a port with fuzzed settings.

use dataplane_common::classify::classify;
use dataplane_common::lb::{flow_hash, FlowKey};
use dataplane_common::lossless::{ipv4_set_ce, ipv6_set_ce};
use dataplane_common::maps::{PortConfig, PortCounters, MALFORMED_DROP, TRUST_DOT1P};
use dataplane_common::parse::{parse, ParseError, Parsed, L3};
use dataplane_common::reason;
use dataplane_common::route::{ipv4_ttl_decrement, pre_route};
use dataplane_common::verdict::{account, decide, Action, Outcome};
use dataplane_common::wire::csum;

/// Bytes of the input that configure the port; the rest is the frame.
pub const SETTINGS: usize = 8;

/// The port configuration the first [`SETTINGS`] bytes choose.
pub fn port_config(s: &[u8]) -> PortConfig {
    let b = |i: usize| s.get(i).copied().unwrap_or(0);
    let mut cfg = PortConfig::azure(u16::from(b(0)));
    cfg.trust = b(1) & 1;
    if cfg.trust == 1 {
        cfg.trust = TRUST_DOT1P;
    }
    cfg.malformed_action = b(1) >> 1 & 1;
    cfg.pfc_enable = b(2);
    // out-of-range values too: the functions mask them
    cfg.default_tc = b(3);
    cfg.cnp_tc = b(4);
    // UET feedback class on or off, and out-of-range class bits
    cfg.uet_feedback_tc = b(3).rotate_left(4) & 0x8f;
    for (i, t) in cfg.dscp_to_tc.iter_mut().enumerate() {
        *t = (i as u8).wrapping_mul(b(5)) >> 5;
    }
    cfg.pcp_to_tc = [b(6) & 7, 1, 2, 3, 4, 5, 6, b(6) >> 5];
    cfg.mac = [0x02, 0, 0, 0, 0, b(7)];
    cfg.speed_mbps = 100_000;
    cfg
}

pub fn check(data: &[u8]) {
    let (settings, frame) = data.split_at(data.len().min(SETTINGS));
    let cfg = port_config(settings);
    let parsed = parse(frame);
    match &parsed {
        Ok(p) => parsed_in_frame(p, frame),
        Err(e) => assert!(ParseError::ALL.contains(e)),
    }
    let d = decide(&parsed, &cfg);
    match (&parsed, d.outcome) {
        (Err(e), Outcome::Malformed(m)) => {
            assert_eq!(*e, m);
            let want = if cfg.malformed_action == MALFORMED_DROP {
                Action::Drop
            } else {
                Action::Pass
            };
            assert_eq!(d.action, want);
            assert_eq!(reason::code_name(reason::malformed(m)), m.name());
        }
        (Ok(p), Outcome::MacControl(m)) => {
            assert_eq!(p.l3, L3::MacControl);
            assert_eq!(m, p.mac_ctl);
            assert_eq!(d.action, Action::Drop);
        }
        (
            Ok(p),
            Outcome::Classified {
                class,
                non_ip,
                qinq,
            },
        ) => {
            assert_ne!(p.l3, L3::MacControl);
            assert_eq!(d.action, Action::Pass);
            assert!(class.tc < 8);
            assert_eq!(class, classify(p, &cfg));
            assert_eq!(class.lossless, cfg.pfc_enable & (1 << class.tc) != 0);
            assert!(!class.cnp || class.roce);
            assert_eq!(non_ip, p.l3 == L3::Other);
            assert_eq!(qinq, p.qinq);
        }
        (r, o) => panic!("verdict {o:?} does not follow from the parse {r:?}"),
    }
    one_counter(&d, frame.len());
    if let Ok(p) = parsed {
        forwarding(&p, frame, &cfg);
    }
}

/// Every offset the parse reports lies inside the frame, every field in
/// its range.
fn parsed_in_frame(p: &Parsed, f: &[u8]) {
    let len = f.len();
    assert_eq!(usize::from(p.frame_len), len.min(usize::from(u16::MAX)));
    assert!(usize::from(p.l3_off) <= len);
    assert!(p.pcp < 8 && p.vid < 4096 && p.dscp < 64 && p.ecn < 4);
    match p.l3 {
        L3::Ipv4 => assert!(usize::from(p.l3_off) + 20 <= len),
        L3::Ipv6 => assert!(usize::from(p.l3_off) + 40 <= len),
        L3::MacControl => assert!(usize::from(p.l3_off) + 2 <= len),
        L3::Other => assert!(!p.udp && !p.roce),
    }
    if p.udp {
        assert!(usize::from(p.l4_off) + 8 <= len);
        assert!(usize::from(p.l4_off) + usize::from(p.ip_payload_len) <= len);
    }
    if p.roce {
        assert!(p.udp && p.dport == 4791);
        assert!(usize::from(p.l4_off) + 8 + 12 <= len);
    }
    if p.uet {
        assert!(p.udp && !p.roce && p.dport == dataplane_common::wire::uet::UET_PORT);
        let need = dataplane_common::wire::uet::fixed_len(p.pds.ptype);
        assert!(usize::from(p.l4_off) + 8 + need <= len);
        assert!(p.pds.ptype < 32 && p.pds.next < 16 && p.pds.flags < 128);
    }
}

/// Exactly one verdict counter and at most one class/malformed counter
/// per frame.
fn one_counter(d: &dataplane_common::verdict::Decision, len: usize) {
    let mut c = PortCounters::ZERO;
    account(&mut c, d, len as u64);
    assert_eq!(c.verdict_pass + c.verdict_drop, 1);
    let classes: u64 = c.rx_tc_pkts.iter().sum();
    let malformed: u64 = c.malformed.iter().sum();
    let mac = c.rx_pfc.iter().any(|&n| n > 0) as u64 + c.rx_pause + c.rx_mac_ctl_other;
    assert!(classes + malformed + mac <= 1);
    assert!(classes + malformed <= 1);
}

/// The forwarding stage's decisions: pre-route, TTL and CE rewrites keep
/// the IPv4 header checksum valid, the flow hash is defined.
fn forwarding(p: &Parsed, f: &[u8], cfg: &PortConfig) {
    let dst: [u8; 6] = f[..6]
        .try_into()
        .expect("parsed frames hold an Ethernet header");
    let l3 = usize::from(p.l3_off);
    let ttl = match p.l3 {
        L3::Ipv4 => f[l3 + 8],
        L3::Ipv6 => f[l3 + 7],
        _ => 0,
    };
    let _ = pre_route(p, &dst, &cfg.mac, ttl);
    match p.l3 {
        L3::Ipv4 => {
            let hlen = usize::from(f[l3] & 0x0f) * 4;
            let mut h = f[l3..l3 + hlen].to_vec();
            let valid = csum::internet(&h) == 0;
            let check = u16::from_be_bytes([h[10], h[11]]);
            let (t, c) = ipv4_ttl_decrement(h[8], h[9], check);
            h[8] = t;
            h[10..12].copy_from_slice(&c.to_be_bytes());
            if valid {
                assert_eq!(csum::internet(&h), 0, "TTL rewrite broke a valid checksum");
            }
            let check = u16::from_be_bytes([h[10], h[11]]);
            if let Some((tos, c)) = ipv4_set_ce(h[0], h[1], check) {
                assert_eq!(tos & 3, 3);
                h[1] = tos;
                h[10..12].copy_from_slice(&c.to_be_bytes());
                if valid {
                    assert_eq!(csum::internet(&h), 0, "CE rewrite broke a valid checksum");
                }
            }
            let a = |o: usize| -> [u8; 4] { h[o..o + 4].try_into().unwrap() };
            let k = FlowKey::ipv4(a(12), a(16), p.ip_proto, p.sport, p.dport, p.bth.dest_qp);
            let _ = flow_hash(&k, u32::from(cfg.mac[5]));
        }
        L3::Ipv6 => {
            if let Some(b1) = ipv6_set_ce(f[l3 + 1]) {
                assert_eq!((b1 >> 4) & 3, 3);
                assert_eq!(
                    b1 & 0xcf,
                    f[l3 + 1] & 0xcf,
                    "CE rewrite changed the flow label"
                );
            }
            let a = |o: usize| -> [u8; 16] { f[l3 + o..l3 + o + 16].try_into().unwrap() };
            let k = FlowKey::ipv6(a(8), a(24), p.ip_proto, p.sport, p.dport, p.bth.dest_qp);
            let _ = flow_hash(&k, 7);
        }
        _ => {}
    }
}
