//! Packet trimming: which drops become trims, and the trimmed frames byte
//! for byte against frames written out by hand (checksums computed by hand
//! for IPv4 and with an independent script for the IPv6 UDP checksum; see
//! each constant).
#![cfg(feature = "user")]

use dataplane_common::buffer::BufVerdict;
use dataplane_common::lossless::DropReason;
use dataplane_common::parse::{parse, Parsed};
use dataplane_common::trim::*;

/// UET payload: a RUD request PDS header (type 2, next 3, AR; PSN
/// 0x87654321; PDC ids 0x0102, 0x0304) and 188 bytes 0, 1, 2, ...
fn payload() -> Vec<u8> {
    let mut p = vec![
        0x11, 0x88, 0x00, 0x00, 0x87, 0x65, 0x43, 0x21, 0x01, 0x02, 0x03, 0x04,
    ];
    p.extend((0..188).map(|i| i as u8));
    p
}

const ETH: [u8; 14] = [2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
const ETH6: [u8; 14] = [2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x86, 0xdd];

/// 198.18.0.1 -> 198.18.0.2, DSCP 10 ECN 2, DF, TTL 64, UDP, total 228:
/// checksum 0x452a + 0x00e4 + 0x4000 + 0x4011 + 0xc612 + 0x0001 + 0xc612 +
/// 0x0002 = 0x25246, folded 0x5248, complement 0xadb7.
const IP4_IN: [u8; 20] = [
    0x45, 0x2a, 0x00, 0xe4, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xad, 0xb7, 198, 18, 0, 1, 198, 18,
    0, 2,
];
/// Entropy 0x1234 -> 4793, length 208, some checksum.
const UDP_IN: [u8; 8] = [0x12, 0x34, 0x12, 0xb9, 0x00, 0xd0, 0xbe, 0xef];

fn v4_in() -> Vec<u8> {
    [&ETH[..], &IP4_IN, &UDP_IN, &payload()].concat()
}

/// Cut to 128 with DSCP 48: TOS 0xc2 (ECN 2 kept), total 114 (0x72);
/// checksum 0x45c2 + 0x0072 + 0x4000 + 0x4011 + 0xc612 + 0x0001 + 0xc612 +
/// 0x0002 = 0x2526c, folded 0x526e, complement 0xad91; UDP length 94
/// (0x5e), checksum 0.
fn v4_out() -> Vec<u8> {
    let ip: [u8; 20] = [
        0x45, 0xc2, 0x00, 0x72, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xad, 0x91, 198, 18, 0, 1, 198,
        18, 0, 2,
    ];
    let udp: [u8; 8] = [0x12, 0x34, 0x12, 0xb9, 0x00, 0x5e, 0x00, 0x00];
    [&ETH[..], &ip, &udp, &payload()[..128 - 42]].concat()
}

/// 2001:db8::1 -> 2001:db8::2, traffic class 0x29 (DSCP 10, ECN 1), flow
/// label 0x12345, payload 208, UDP, hop limit 64.
fn v6_in() -> Vec<u8> {
    let mut ip = vec![0x62, 0x91, 0x23, 0x45, 0x00, 0xd0, 0x11, 0x40];
    ip.extend([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    ip.extend([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    [&ETH6[..], &ip, &UDP_IN, &payload()].concat()
}

/// Cut to 128 with DSCP 48: traffic class 0xc1 (bytes 0x6c 0x11, flow
/// label kept), payload length 74 (0x4a), UDP length 74, UDP checksum
/// 0xde07 (pseudo-header + the 74-byte datagram; computed by an
/// independent Python one's-complement sum).
fn v6_out() -> Vec<u8> {
    let mut ip = vec![0x6c, 0x11, 0x23, 0x45, 0x00, 0x4a, 0x11, 0x40];
    ip.extend([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    ip.extend([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    let udp: [u8; 8] = [0x12, 0x34, 0x12, 0xb9, 0x00, 0x4a, 0xde, 0x07];
    [&ETH6[..], &ip, &udp, &payload()[..128 - 62]].concat()
}

const CFG: TrimConfig = TrimConfig {
    size: 128,
    dscp: 48,
    queue: 6,
};

const FULL: BufVerdict = BufVerdict::NoBuffer(DropReason::SharedFull);

fn parsed(f: &[u8]) -> Parsed {
    parse(f).expect("the input frames parse")
}

/// The whole trim of `f`: decision, cut, rewrite.
fn trim(f: &[u8]) -> Vec<u8> {
    let p = parsed(f);
    let TrimDecision::Trim { len, queue } = decide(FULL, true, false, false, &p, &CFG, None) else {
        panic!("not trimmed");
    };
    assert_eq!(queue, 6);
    let mut out = f[..len as usize].to_vec();
    rewrite(out.as_mut_slice(), &p, CFG.dscp).expect("rewrite");
    out
}

#[test]
fn the_hand_written_inputs_are_what_they_say() {
    let p = parsed(&v4_in());
    assert!(p.uet && p.dscp == 10 && p.ecn == 2 && p.frame_len == 242);
    let p = parsed(&v6_in());
    assert!(p.uet && p.dscp == 10 && p.ecn == 1 && p.frame_len == 262);
}

#[test]
fn ipv4_uet_is_cut_to_128_bytes_exactly() {
    assert_eq!(trim(&v4_in()), v4_out());
}

#[test]
fn ipv6_uet_is_cut_to_128_bytes_exactly() {
    assert_eq!(trim(&v6_in()), v6_out());
}

#[test]
fn the_trimmed_frames_parse_with_the_new_lengths() {
    let p = parsed(&v4_out());
    assert_eq!((p.dscp, p.ecn, p.ip_payload_len), (48, 2, 94));
    assert!(p.uet);
    let p = parsed(&v6_out());
    assert_eq!((p.dscp, p.ecn, p.ip_payload_len), (48, 1, 74));
    assert!(p.uet);
}

#[test]
fn a_packet_no_longer_than_the_size_goes_out_whole_with_the_new_dscp() {
    let f = v4_in();
    let p = parsed(&f);
    let big = TrimConfig { size: 242, ..CFG };
    assert_eq!(
        decide(FULL, true, false, false, &p, &big, None),
        TrimDecision::Trim { len: 242, queue: 6 }
    );
    let mut out = f.clone();
    rewrite(out.as_mut_slice(), &p, 48).unwrap();
    assert_eq!(out.len(), 242);
    assert_eq!((out[15], &out[16..18]), (0xc2, &[0x00, 0xe4][..]));
    assert_eq!(&out[38..42], &[0x00, 0xd0, 0x00, 0x00]);
}

#[test]
fn only_shared_buffer_drops_of_lossy_trimming_queues_are_trimmed() {
    let p = parsed(&v4_in());
    let trims = |v, q, lossless, control| {
        matches!(
            decide(v, q, lossless, control, &p, &CFG, None),
            TrimDecision::Trim { .. }
        )
    };
    assert!(trims(FULL, true, false, false));
    // the queue's profile says drop
    assert!(!trims(FULL, false, false, false));
    // lossless classes never trim (their drops are headroom exhaustion)
    assert!(!trims(FULL, true, true, false));
    assert!(!trims(
        BufVerdict::NoBuffer(DropReason::HeadroomExhausted),
        true,
        false,
        false
    ));
    // WRED is not a failed admission; forwarded packets are not trimmed
    assert!(!trims(BufVerdict::WredDrop, true, false, false));
    assert!(!trims(BufVerdict::Forward, true, false, false));
    // control packets (CNPs) are dropped, not trimmed
    assert!(!trims(FULL, true, false, true));
}

#[test]
fn non_udp_fragments_and_sizes_below_the_headers_are_not_trimmed() {
    let mut p = parsed(&v4_in());
    let at = |p: &Parsed, size: u16| {
        decide(
            FULL,
            true,
            false,
            false,
            p,
            &TrimConfig { size, ..CFG },
            None,
        )
    };
    assert_eq!(at(&p, 41), TrimDecision::No);
    assert!(matches!(at(&p, 42), TrimDecision::Trim { len: 42, .. }));
    p.first_fragment = true;
    assert_eq!(
        decide(FULL, true, false, false, &p, &CFG, None),
        TrimDecision::No
    );
    let mut q = parsed(&v4_in());
    q.udp = false;
    assert_eq!(
        decide(FULL, true, false, false, &q, &CFG, None),
        TrimDecision::No
    );
    assert_eq!(
        rewrite(v4_in().as_mut_slice(), &q, 48),
        Err(RewriteError::NotUdpIp)
    );
    // a frame cut inside the UDP header is refused
    let p = parsed(&v4_in());
    assert_eq!(
        rewrite(&mut v4_in()[..40], &p, 48),
        Err(RewriteError::Short)
    );
}

#[test]
fn counters_add_up_as_sonic_shows_them() {
    let mut c = TrimCounters::default();
    c.count(1, true);
    c.count(1, false);
    c.count(9, true); // queue 9 & 7 = 1
    assert_eq!((c.trim[1], c.trim_sent[1], c.trim_drop[1]), (3, 2, 1));
    let mut sum = TrimCounters::default();
    sum.accumulate(&c);
    sum.accumulate(&c);
    assert_eq!(sum.trim[1], 6);
    assert_eq!(
        TRIM_COUNTER_NAMES,
        ["Trim/pkts", "TrimSent/pkts", "TrimDrop/pkts"]
    );
}

#[test]
fn ipv6_cuts_beyond_the_checksum_loop_are_not_made() {
    // an IPv6 UDP packet 100 bytes longer than the loop's bound (UDP at 54)
    let n = 54 + MAX_UDP6_SUM_LEN + 100;
    let mut f = v6_in();
    f.extend(std::iter::repeat_n(7u8, n - f.len()));
    let pl = (n - 54) as u16;
    f[18..20].copy_from_slice(&pl.to_be_bytes());
    f[58..60].copy_from_slice(&pl.to_be_bytes());
    let p = parsed(&f);
    // two bytes of UDP more than the loop sums: not trimmed
    let big = TrimConfig {
        size: (54 + MAX_UDP6_SUM_LEN + 2) as u16,
        ..CFG
    };
    assert_eq!(
        decide(FULL, true, false, false, &p, &big, None),
        TrimDecision::No
    );
    let ok = TrimConfig {
        size: (54 + MAX_UDP6_SUM_LEN) as u16,
        ..CFG
    };
    let cut = 54 + MAX_UDP6_SUM_LEN as u16;
    assert_eq!(
        decide(FULL, true, false, false, &p, &ok, None),
        TrimDecision::Trim { len: cut, queue: 6 }
    );
    // the longest cut, rewritten: its checksum is the builder's (computed
    // independently over the same datagram)
    let mut out = f[..usize::from(cut)].to_vec();
    rewrite(out.as_mut_slice(), &p, 48).expect("rewrite of the longest cut");
    let want = dataplane_common::build::udp_frame(
        &dataplane_common::build::L2::new(
            out[0..6].try_into().unwrap(),
            out[6..12].try_into().unwrap(),
        ),
        &dataplane_common::build::Ip::v6(
            out[22..38].try_into().unwrap(),
            out[38..54].try_into().unwrap(),
        )
        .dscp(48)
        .ecn(2)
        .ttl(out[21]),
        u16::from_be_bytes([out[54], out[55]]),
        u16::from_be_bytes([out[56], out[57]]),
        &out[62..],
    );
    assert_eq!(out[56..58], want[56..58], "UDP checksum of the longest cut");
    // the same over IPv4 is cut (its UDP checksum is 0)
    let p4 = parsed(&v4_in());
    let big4 = TrimConfig { size: 200, ..CFG };
    assert!(matches!(
        decide(FULL, true, false, false, &p4, &big4, None),
        TrimDecision::Trim { len: 200, .. }
    ));
}

/// SONiC's `queue_index = dynamic`: the trimmed packet goes to the class the
/// ingress port's DSCP map gives the trim DSCP (48 -> 6 here, 48 -> 1 on a
/// port with another map); a static queue ignores the map; without the
/// ingress port's map a dynamic trim is not made.
#[test]
fn a_dynamic_queue_is_the_class_of_the_trim_dscp_at_ingress() {
    let p = parsed(&v4_in());
    let dynamic = TrimConfig {
        queue: QUEUE_DYNAMIC,
        ..CFG
    };
    let mut roce = [0u8; 64];
    roce[26] = 3;
    roce[48] = 6;
    let mut other = [0u8; 64];
    other[48] = 1;
    for (map, want) in [(&roce, 6), (&other, 1)] {
        assert_eq!(trim_queue(&dynamic, Some(map)), Some(want));
        assert_eq!(
            decide(FULL, true, false, false, &p, &dynamic, Some(map)),
            TrimDecision::Trim {
                len: 128,
                queue: want
            }
        );
    }
    assert_eq!(trim_queue(&dynamic, None), None);
    assert_eq!(
        decide(FULL, true, false, false, &p, &dynamic, None),
        TrimDecision::No
    );
    // a static queue: the map plays no part
    assert_eq!(trim_queue(&CFG, Some(&other)), Some(6));
    // a dynamic queue never overrides the rest of the decision
    assert_eq!(
        decide(FULL, true, true, false, &p, &dynamic, Some(&roce)),
        TrimDecision::No
    );
}

/// An odd-length IPv6 datagram (its last byte summed as the high byte of a
/// padded word): the rewrite's UDP checksum equals the builder's, computed
/// independently over the whole pseudo-header and datagram, for every odd
/// and even length around the header.
#[test]
fn ipv6_checksum_of_odd_and_even_lengths_matches_an_independent_sum() {
    use dataplane_common::build::{udp_frame, Ip, L2};
    let l2 = L2::new([2, 0, 0, 0, 0, 2], [2, 0, 0, 0, 0, 1]);
    let src = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    let dst = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9];
    for n in [0usize, 1, 2, 3, 12, 51, 66, 67, 441] {
        let payload: Vec<u8> = (0..n).map(|i| (i * 7 + 3) as u8).collect();
        let f = udp_frame(&l2, &Ip::v6(src, dst).dscp(10), 0x4242, 9000, &payload);
        let want = udp_frame(&l2, &Ip::v6(src, dst).dscp(48), 0x4242, 9000, &payload);
        let p = parsed(&f);
        let mut out = f.clone();
        rewrite(out.as_mut_slice(), &p, 48).expect("rewrite");
        assert_eq!(out, want, "{n} bytes of payload");
    }
}
