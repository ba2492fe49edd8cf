//! Flow hashing: the fields a flow is hashed on (5-tuple plus the RoCEv2
//! destination QP) and the seeded hash.

/// The fields a flow is hashed on.
///
/// Addresses are 16 bytes; an IPv4 address is stored IPv4-mapped
/// (`::ffff:a.b.c.d`, [`ipv4_mapped`]), so an IPv4 flow and the same flow
/// written as IPv4-mapped IPv6 hash alike.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowKey {
    pub src: [u8; 16],
    pub dst: [u8; 16],
    pub sport: u16,
    pub dport: u16,
    /// IPv4 protocol / IPv6 next header.
    pub proto: u8,
    /// BTH destination QP (24 bits) of a RoCEv2 packet, 0 otherwise.
    pub dest_qp: u32,
}

impl FlowKey {
    /// A flow between two IPv4 addresses.
    #[inline(always)]
    pub fn ipv4(
        src: [u8; 4],
        dst: [u8; 4],
        proto: u8,
        sport: u16,
        dport: u16,
        dest_qp: u32,
    ) -> Self {
        Self::ipv6(
            ipv4_mapped(src),
            ipv4_mapped(dst),
            proto,
            sport,
            dport,
            dest_qp,
        )
    }

    /// A flow between two IPv6 addresses.
    #[inline(always)]
    pub fn ipv6(
        src: [u8; 16],
        dst: [u8; 16],
        proto: u8,
        sport: u16,
        dport: u16,
        dest_qp: u32,
    ) -> Self {
        FlowKey {
            src,
            dst,
            sport,
            dport,
            proto,
            dest_qp,
        }
    }
}

/// `::ffff:a.b.c.d` (RFC 4291 section 2.5.5.2).
#[inline(always)]
pub const fn ipv4_mapped(a: [u8; 4]) -> [u8; 16] {
    [
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a[0], a[1], a[2], a[3],
    ]
}

const M_C1: u32 = 0xcc9e_2d51;
const M_C2: u32 = 0x1b87_3593;
/// 2^32 / golden ratio: spreads consecutive integers over the word.
pub(super) const GOLDEN: u32 = 0x9e37_79b9;

/// Murmur3's finaliser: every input bit flips each output bit with
/// probability close to 1/2.
#[inline(always)]
pub const fn fmix32(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h
}

/// One murmur3 block step: mixes word `k` into state `h`.
#[inline(always)]
const fn mix_word(h: u32, k: u32) -> u32 {
    let k = k.wrapping_mul(M_C1).rotate_left(15).wrapping_mul(M_C2);
    (h ^ k)
        .rotate_left(13)
        .wrapping_mul(5)
        .wrapping_add(0xe654_6b64)
}

#[inline(always)]
const fn word(a: &[u8; 16], i: usize) -> u32 {
    // i is 0, 4, 8 or 12 at every call site (constant, in bounds)
    u32::from_le_bytes([a[i], a[i + 1], a[i + 2], a[i + 3]])
}

/// Bytes hashed by [`flow_hash`] (11 words), mixed in like murmur3's length.
const FLOW_KEY_HASH_LEN: u32 = 44;

/// The flow hash: murmur3 (32-bit) block mixing over 11 words (source,
/// destination, ports, protocol, destination QP) started from `seed`, then
/// murmur3's finaliser.
///
/// Give every switch its own seed: with one seed, the flows a tier-1 switch
/// sends to one uplink would all hash alike at tier 2 as well (polarisation).
/// The bucket table uses the low bits, tie-breaks use the high bits.
#[inline(always)]
pub fn flow_hash(k: &FlowKey, seed: u32) -> u32 {
    let mut h = seed;
    h = mix_word(h, word(&k.src, 0));
    h = mix_word(h, word(&k.src, 4));
    h = mix_word(h, word(&k.src, 8));
    h = mix_word(h, word(&k.src, 12));
    h = mix_word(h, word(&k.dst, 0));
    h = mix_word(h, word(&k.dst, 4));
    h = mix_word(h, word(&k.dst, 8));
    h = mix_word(h, word(&k.dst, 12));
    h = mix_word(h, ((k.sport as u32) << 16) | k.dport as u32);
    h = mix_word(h, k.proto as u32);
    h = mix_word(h, k.dest_qp);
    fmix32(h ^ FLOW_KEY_HASH_LEN)
}

/// The hash that places flowlet number `index` of a flow: the flow hash
/// itself for the first flowlet (index 0, so `flowlet` mode starts where
/// `hash` mode would), a re-mix for the following ones, so that each new
/// flowlet lands on an independent bucket (as in LetFlow).
#[inline(always)]
pub const fn flowlet_hash(hash: u32, index: u32) -> u32 {
    if index == 0 {
        hash
    } else {
        fmix32(hash ^ index.wrapping_mul(GOLDEN))
    }
}

/// `x * n / 2^32`: maps a uniform `x` onto `0..n` with no division (uses the
/// high bits of `x`). Returns 0 when `n` is 0.
#[inline(always)]
pub(super) const fn scale(x: u32, n: u32) -> u32 {
    ((x as u64).wrapping_mul(n as u64) >> 32) as u32
}
