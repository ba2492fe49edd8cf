//! bmv2's flow hash: CRC-32 over the flow key, as the P4 programs compute it.

/// CRC-32 as bmv2 computes it: the one the ICRC uses.
pub use dataplane_common::wire::bth::crc32;

/// The v1model program's flow hash: CRC-32 over seed (4 bytes), source and
/// destination (16 bytes each, IPv4 mapped as ::ffff:a.b.c.d), protocol,
/// UDP ports and BTH destination QP (3 bytes), all big-endian.
pub fn bmv2_flow_hash(
    seed: u32,
    src: [u8; 16],
    dst: [u8; 16],
    proto: u8,
    sport: u16,
    dport: u16,
    qp: u32,
) -> u32 {
    let mut b = Vec::with_capacity(44);
    b.extend_from_slice(&seed.to_be_bytes());
    b.extend_from_slice(&src);
    b.extend_from_slice(&dst);
    b.push(proto);
    b.extend_from_slice(&sport.to_be_bytes());
    b.extend_from_slice(&dport.to_be_bytes());
    b.extend_from_slice(&qp.to_be_bytes()[1..]);
    crc32(&b)
}

// ---------------------------------------------------------------------------
// The conformance corpus
// ---------------------------------------------------------------------------
