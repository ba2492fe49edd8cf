//! bmv2's flow hash: CRC-32 over the flow key, as the P4 programs compute it.

/// CRC-32 as bmv2 computes it: the one the ICRC uses.
pub use dataplane_common::wire::bth::crc32;

use dataplane_common::lb::FlowKey;

/// The v1model program's flow hash: CRC-32 over seed (4 bytes), source and
/// destination (16 bytes each, IPv4 mapped as ::ffff:a.b.c.d), protocol,
/// UDP ports and BTH destination QP (3 bytes), all big-endian.
pub fn bmv2_flow_hash(seed: u32, k: &FlowKey) -> u32 {
    let mut b = Vec::with_capacity(44);
    b.extend_from_slice(&seed.to_be_bytes());
    b.extend_from_slice(&k.src);
    b.extend_from_slice(&k.dst);
    b.push(k.proto);
    b.extend_from_slice(&k.sport.to_be_bytes());
    b.extend_from_slice(&k.dport.to_be_bytes());
    b.extend_from_slice(&k.dest_qp.to_be_bytes()[1..]);
    crc32(&b)
}
