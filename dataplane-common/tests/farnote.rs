//! The far-side notification frame (`wire::farnote`): its bytes, its
//! decoding (every refusal names its byte), the prefix a route gives it and
//! its key in the receiver's table.

use dataplane_common::lb::{ipv4_mapped, FarEntry, NOTIFY_TTL_NS};
use dataplane_common::wire::farnote::*;

const SRC: [u8; 6] = [2, 0, 0, 0, 0x0d, 0];

fn v4(a: [u8; 4]) -> [u8; 16] {
    let mut d = [0; 16];
    d[..4].copy_from_slice(&a);
    d
}

fn body(f: &[u8; FAR_NOTE_FRAME]) -> [u8; FAR_NOTE_LEN] {
    f[14..14 + FAR_NOTE_LEN].try_into().unwrap()
}

#[test]
fn the_frame_byte_by_byte() {
    let n = FarNote::for_route(4, v4([198, 18, 1, 77]), 24, 3, 40_000, NOTIFY_TTL_NS);
    let f = n.frame(SRC);
    let mut want = vec![0x01, 0x80, 0xc2, 0, 0, 0x0e];
    want.extend_from_slice(&SRC);
    want.extend_from_slice(&[0x88, 0xb6, 1, 4, 24, 3]);
    want.extend_from_slice(&40_000u32.to_be_bytes());
    want.extend_from_slice(&20_000u32.to_be_bytes());
    want.extend_from_slice(&[198, 18, 1, 0]);
    want.resize(FAR_NOTE_FRAME, 0);
    assert_eq!(f.to_vec(), want);
    assert_eq!(FarNote::decode(&body(&f)), Ok(n));
}

#[test]
fn the_prefix_keeps_only_the_routes_bits() {
    let n = FarNote::for_route(4, v4([198, 18, 1, 77]), 23, 3, 1, 1);
    assert_eq!(n.prefix, v4([198, 18, 0, 0]));
    let n = FarNote::for_route(4, v4([198, 18, 1, 77]), 32, 3, 1, 1);
    assert_eq!(n.prefix, v4([198, 18, 1, 77]));
    let n = FarNote::for_route(4, v4([198, 18, 1, 77]), 0, 3, 1, 1);
    assert_eq!(n.prefix, [0; 16]);
    let mut a6 = [
        0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 2, 0xaa, 0xbb, 0, 0, 0, 0, 0, 9,
    ];
    let n = FarNote::for_route(6, a6, 60, 4, 1, 1);
    a6[7] = 0;
    a6[8..].fill(0);
    assert_eq!(n.prefix, a6);
    assert_eq!(n.family, 6);
    // too long for the family: capped
    assert_eq!(
        FarNote::for_route(4, v4([1, 2, 3, 4]), 40, 0, 1, 1).prefix_len,
        32
    );
    // a drain longer than 4.29 s saturates
    assert_eq!(
        FarNote::for_route(4, v4([1, 2, 3, 4]), 8, 0, 1 << 40, 1).drain_ns,
        u32::MAX
    );
}

#[test]
fn every_refusal_names_its_byte() {
    let good = body(&FarNote::for_route(4, v4([198, 18, 1, 0]), 24, 3, 5, 5).frame(SRC));
    let mut b = good;
    b[0] = 2;
    assert_eq!(FarNote::decode(&b), Err(FarNoteError::Version));
    let mut b = good;
    b[1] = 5;
    assert_eq!(FarNote::decode(&b), Err(FarNoteError::Family));
    let mut b = good;
    b[2] = 33;
    assert_eq!(FarNote::decode(&b), Err(FarNoteError::PrefixLen));
    b[1] = 6;
    assert!(FarNote::decode(&b).is_ok(), "33 bits of an IPv6 prefix");
    b[2] = 129;
    assert_eq!(FarNote::decode(&b), Err(FarNoteError::PrefixLen));
    for (e, byte) in [
        (FarNoteError::Version, "byte 0"),
        (FarNoteError::Family, "byte 1"),
        (FarNoteError::PrefixLen, "byte 2"),
    ] {
        assert!(e.describe().starts_with(byte), "{e:?}: {}", e.describe());
    }
}

/// The receiver's table is an LPM trie over (port id, address): a note
/// covers the addresses of its prefix on its port only, an IPv4 prefix
/// as the flow key holds IPv4 addresses (mapped).
#[test]
fn the_key_covers_the_prefix_on_its_port() {
    let n = FarNote::for_route(4, v4([198, 18, 1, 0]), 24, 3, 5, 5);
    let (bits, key) = n.key(7);
    assert_eq!(bits, 32 + 96 + 24);
    let covers = |port: u16, addr: [u8; 16]| {
        let probe = far_key(port, &addr);
        (0..bits as usize).all(|i| (probe[i / 8] ^ key[i / 8]) & (0x80 >> (i % 8)) == 0)
    };
    assert!(covers(7, ipv4_mapped([198, 18, 1, 200])));
    assert!(!covers(7, ipv4_mapped([198, 18, 2, 1])));
    assert!(!covers(8, ipv4_mapped([198, 18, 1, 200])));
    let (bits6, _) = FarNote::for_route(
        6,
        [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        32,
        3,
        5,
        5,
    )
    .key(7);
    assert_eq!(bits6, 32 + 32);
    assert_eq!(FAR_KEY_BITS, 160);
}

#[test]
fn a_record_counts_for_the_time_its_sender_gave() {
    let e = FarEntry {
        drain_ns: 9_000,
        valid_ns: 20_000,
        heard_ns: 1_000_000,
    };
    assert_eq!(e.at(999_999), 0);
    assert_eq!(e.at(1_000_000), 9_000);
    assert_eq!(e.at(1_019_999), 9_000);
    assert_eq!(e.at(1_020_000), 0);
}
