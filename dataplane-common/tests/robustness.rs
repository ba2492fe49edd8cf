//! Fuzz-ish robustness of the parser without a fuzzing crate: every prefix
//! and every single-byte corruption of a set of valid frames, plus a
//! deterministic pseudo-random sweep. Nothing may panic, and every `Ok` must
//! describe headers that lie inside the bytes it was given.
#![cfg(feature = "user")]

mod common;

use common::*;
use dataplane_common::build;
use dataplane_common::classify::classify;
use dataplane_common::maps::{PortConfig, PortCounters};
use dataplane_common::parse::{parse, ParseError, Parsed, L3};
use dataplane_common::verdict::{account, decide};
use dataplane_common::wire::{bth, ethernet as eth, ipv4, ipv6, macctl, udp};

/// A valid frame and the shortest prefix of it that parses: every shorter
/// prefix lacks part of the header chain (or of the IP packet) and must fail.
struct Sample {
    what: &'static str,
    frame: Vec<u8>,
    chain_len: usize,
}

fn samples() -> Vec<Sample> {
    let roce4 = roce_v4();
    let roce6 = roce_v6();
    let tagged_opts = roce_frame(&l2_tagged(5, 100), &ip4().dscp(3).options(&[1; 12]));
    let cnp4 = build::cnp_frame(&l2(), &ip4(), 1, 2);
    let cnp6 = build::cnp_frame(&l2_tagged(6, 6), &ip6(), 1, 2);
    let small_udp = build::udp_frame(&l2(), &ip4(), 1, 2, &[1, 2, 3, 4]);
    vec![
        Sample {
            what: "RoCEv2 IPv4",
            chain_len: roce4.len(),
            frame: roce4,
        },
        Sample {
            what: "RoCEv2 IPv6",
            chain_len: roce6.len(),
            frame: roce6,
        },
        Sample {
            what: "tagged RoCEv2 IPv4 IHL 8",
            chain_len: tagged_opts.len(),
            frame: tagged_opts,
        },
        Sample {
            what: "CNP IPv4",
            chain_len: cnp4.len(),
            frame: cnp4,
        },
        Sample {
            what: "tagged CNP IPv6",
            chain_len: cnp6.len(),
            frame: cnp6,
        },
        // padded to 60: the IP packet ends at 14 + 32
        Sample {
            what: "small UDP, padded",
            chain_len: 14 + 20 + 8 + 4,
            frame: small_udp,
        },
        Sample {
            what: "PFC",
            chain_len: eth::HEADER_LEN + macctl::PFC_LEN,
            frame: build::pfc_frame(SRC_MAC, 0x00ff, [0x1234; 8]),
        },
        Sample {
            what: "PAUSE",
            chain_len: eth::HEADER_LEN + macctl::PAUSE_LEN,
            frame: build::pause_frame(SRC_MAC, 0xffff),
        },
        Sample {
            what: "MAC control, other opcode",
            chain_len: eth::HEADER_LEN + 2,
            frame: mac_ctl_frame(0x0002),
        },
        Sample {
            what: "ARP",
            chain_len: eth::HEADER_LEN,
            frame: arp_frame(&l2()),
        },
        Sample {
            what: "tagged ARP",
            chain_len: eth::HEADER_LEN + eth::TAG_LEN,
            frame: arp_frame(&l2_tagged(1, 1)),
        },
        Sample {
            what: "QinQ",
            chain_len: eth::HEADER_LEN + eth::TAG_LEN,
            frame: roce_frame(&l2_qinq(1, 2, 3, 4), &ip4()),
        },
    ]
}

/// What an `Ok` may claim about a frame of `n` bytes.
fn check_within(p: &Parsed, n: usize, ctx: &dyn Fn() -> String) {
    let l3 = usize::from(p.l3_off);
    let l4 = usize::from(p.l4_off);
    assert_eq!(usize::from(p.frame_len), n, "frame_len, {}", ctx());
    assert!(
        l3 >= eth::HEADER_LEN && l3 <= n,
        "l3_off {l3} of {n}, {}",
        ctx()
    );
    match p.l3 {
        L3::Ipv4 | L3::Ipv6 => {
            let min_hdr = if p.l3 == L3::Ipv4 {
                ipv4::MIN_HEADER_LEN
            } else {
                ipv6::HEADER_LEN
            };
            if p.later_fragment {
                assert_eq!(l4, 0, "a later fragment has no L4 header, {}", ctx());
            } else {
                assert!(
                    l4 >= l3 + min_hdr,
                    "l4_off {l4} < l3_off {l3} + {min_hdr}, {}",
                    ctx()
                );
                assert!(
                    l4 + usize::from(p.ip_payload_len) <= n,
                    "IP payload beyond {n}, {}",
                    ctx()
                );
            }
            assert!(!p.qinq);
        }
        L3::MacControl => {
            assert!(l3 + 2 <= n, "opcode beyond {n}, {}", ctx());
            if p.mac_ctl.is_pfc() {
                assert!(l3 + macctl::PFC_LEN <= n, "PFC beyond {n}, {}", ctx());
            }
            if p.mac_ctl.is_pause() {
                assert!(l3 + macctl::PAUSE_LEN <= n, "PAUSE beyond {n}, {}", ctx());
            }
            assert_eq!(l4, 0);
            assert!(!p.udp && !p.roce);
        }
        L3::Other => {
            assert_eq!(l4, 0, "{}", ctx());
            assert!(!p.udp && !p.roce, "{}", ctx());
        }
    }
    if p.udp {
        assert!(!p.later_fragment, "{}", ctx());
        assert!(
            usize::from(p.ip_payload_len) >= udp::HEADER_LEN,
            "{}",
            ctx()
        );
        assert!(l4 + udp::HEADER_LEN <= n, "UDP beyond {n}, {}", ctx());
    }
    if p.roce {
        assert!(p.udp, "{}", ctx());
        assert_eq!(p.dport, udp::ROCEV2_PORT, "{}", ctx());
        // a first fragment carries the BTH; its ICRC is in the last fragment
        let need =
            udp::HEADER_LEN + bth::HEADER_LEN + if p.first_fragment { 0 } else { bth::ICRC_LEN };
        assert!(usize::from(p.ip_payload_len) >= need, "{}", ctx());
        assert!(l4 + need <= n, "BTH beyond {n}, {}", ctx());
    } else {
        assert_eq!(p.bth, Default::default(), "{}", ctx());
    }
    if p.qinq {
        assert!(p.vlan && p.l3 == L3::Other, "{}", ctx());
    }
}

/// Parses, checks, and runs the rest of the pipeline so it cannot panic
/// either.
fn parse_and_check(f: &[u8], ctx: &dyn Fn() -> String) -> Result<Parsed, ParseError> {
    let r = parse(f);
    if let Ok(p) = &r {
        check_within(p, f.len(), ctx);
        let cfg = PortConfig::azure(0);
        let c = classify(p, &cfg);
        assert!(c.tc < 8);
    }
    let mut counters = PortCounters::ZERO;
    account(
        &mut counters,
        &decide(&r, &PortConfig::azure(0)),
        f.len() as u64,
    );
    assert_eq!(counters.verdict_pass + counters.verdict_drop, 1);
    r
}

#[test]
fn samples_parse_in_full() {
    for s in samples() {
        let p = parse(s.frame.as_slice()).unwrap_or_else(|e| panic!("{}: {e:?}", s.what));
        check_within(&p, s.frame.len(), &|| s.what.to_string());
    }
}

#[test]
fn every_prefix_shorter_than_the_header_chain_is_an_error() {
    for s in samples() {
        for n in 0..s.chain_len {
            let r = parse_and_check(&s.frame[..n], &|| format!("{} prefix {n}", s.what));
            assert!(
                r.is_err(),
                "{}: prefix of {n} < {} bytes parsed: {r:?}",
                s.what,
                s.chain_len
            );
        }
    }
}

#[test]
fn every_prefix_holding_the_header_chain_parses_like_the_whole_frame() {
    for s in samples() {
        let full = parse(s.frame.as_slice()).unwrap();
        for n in s.chain_len..=s.frame.len() {
            let p = parse_and_check(&s.frame[..n], &|| format!("{} prefix {n}", s.what))
                .unwrap_or_else(|e| panic!("{}: prefix of {n} bytes: {e:?}", s.what));
            assert_eq!(
                Parsed {
                    frame_len: full.frame_len,
                    ..p
                },
                full,
                "{} prefix {n}",
                s.what
            );
        }
    }
}

#[test]
fn every_single_byte_corruption_is_handled() {
    for s in samples() {
        for off in 0..s.frame.len() {
            let mut f = s.frame.clone();
            for v in 0..=255u8 {
                f[off] = v;
                let _ = parse_and_check(&f, &|| format!("{} byte {off} = {v:#04x}", s.what));
            }
        }
    }
}

#[test]
fn corruption_after_the_header_chain_changes_nothing() {
    // bytes past the RoCEv2 headers (RETH, payload, ICRC) are not parsed
    let f = roce_v4();
    let full = parse(f.as_slice()).unwrap();
    for off in V4_L4 + udp::HEADER_LEN + bth::HEADER_LEN..f.len() {
        for v in [0x00, 0x81, 0xff] {
            assert_eq!(
                parse(with_u8(&f, off, v).as_slice()),
                Ok(full),
                "byte {off}"
            );
        }
    }
}

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn random_multi_byte_corruptions_and_cuts_are_handled() {
    let samples = samples();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for i in 0..50_000 {
        let s = &samples[rng.below(samples.len())];
        let mut f = s.frame.clone();
        for _ in 0..1 + rng.below(4) {
            let off = rng.below(f.len());
            f[off] = rng.next() as u8;
        }
        let n = if rng.below(2) == 0 {
            f.len()
        } else {
            rng.below(f.len() + 1)
        };
        let _ = parse_and_check(&f[..n], &|| format!("iteration {i}, {} cut at {n}", s.what));
    }
}

#[test]
fn random_bytes_behind_each_ethertype_are_handled() {
    let ethertypes = [
        eth::ETHERTYPE_IPV4,
        eth::ETHERTYPE_IPV6,
        eth::ETHERTYPE_VLAN,
        eth::ETHERTYPE_QINQ,
        eth::ETHERTYPE_MAC_CONTROL,
        eth::ETHERTYPE_ARP,
    ];
    let mut rng = Rng(0x0123_4567_89ab_cdef);
    let mut oks = 0;
    for i in 0..50_000 {
        let len = rng.below(130);
        let mut f: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        if len >= 14 {
            let et = ethertypes[rng.below(ethertypes.len())];
            f[12..14].copy_from_slice(&et.to_be_bytes());
            // give IP a fair chance past the version check
            if len > 14 && et == eth::ETHERTYPE_IPV4 {
                f[14] = 0x40 | (f[14] & 0x0f);
            }
            if len > 14 && et == eth::ETHERTYPE_IPV6 {
                f[14] = 0x60 | (f[14] & 0x0f);
            }
        }
        if parse_and_check(&f, &|| format!("iteration {i}, {len} bytes")).is_ok() {
            oks += 1;
        }
    }
    // the sweep reaches past the error paths
    assert!(oks > 1_000, "only {oks} random frames parsed");
}
