//! The split route lookup (host table first, then the LPM trie) against
//! one longest-prefix match over every route: the same answer for every
//! destination of deterministic pseudo-random tables, IPv4 and IPv6.

use std::collections::HashMap;

use dataplane_common::route::{
    is_host_route, lookup, route_of_word, route_word, RouteEntry, ROUTE_GROUP, ROUTE_LOCAL,
    ROUTE_NEXTHOP,
};

/// xorshift64: a deterministic sweep without a crate.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn masked<const N: usize>(a: [u8; N], len: u8) -> [u8; N] {
    let mut o = a;
    for (i, b) in o.iter_mut().enumerate() {
        let bits = (len as usize).saturating_sub(i * 8).min(8);
        *b &= (0xffu16 << (8 - bits)) as u8;
    }
    o
}

/// The reference: longest match over every route in one table.
fn lpm<const N: usize>(routes: &[([u8; N], u8, RouteEntry)], dst: [u8; N]) -> Option<RouteEntry> {
    routes
        .iter()
        .filter(|(p, len, _)| masked(dst, *len) == *p)
        .max_by_key(|(_, len, _)| *len)
        .map(|(_, _, e)| *e)
}

fn check<const N: usize>(seed: u64) {
    let mut rng = Rng(seed);
    // a small address space so prefixes nest and hosts collide with them
    let addr = |rng: &mut Rng| {
        let mut a = [0u8; N];
        a[0] = 198;
        a[N - 1] = (rng.next() % 8) as u8;
        a[N - 2] = (rng.next() % 4) as u8;
        a
    };
    let bits = (N * 8) as u64;
    let mut table: HashMap<([u8; N], u8), RouteEntry> = HashMap::new();
    for i in 0..200u16 {
        let len = match rng.next() % 3 {
            0 => bits as u8,
            _ => (bits - rng.next() % 20) as u8,
        };
        let e = RouteEntry {
            kind: if i % 2 == 0 {
                ROUTE_NEXTHOP
            } else {
                ROUTE_GROUP
            },
            plen: dataplane_common::route::route_plen(len),
            id: i,
        };
        table.insert((masked(addr(&mut rng), len), len), e);
    }
    let all: Vec<([u8; N], u8, RouteEntry)> =
        table.iter().map(|((p, l), e)| (*p, *l, *e)).collect();
    let hosts: HashMap<[u8; N], RouteEntry> = all
        .iter()
        .filter(|(_, l, _)| is_host_route(*l, N))
        .map(|(p, _, e)| (*p, *e))
        .collect();
    let trie: Vec<_> = all
        .iter()
        .filter(|(_, l, _)| !is_host_route(*l, N))
        .copied()
        .collect();
    assert!(!hosts.is_empty() && !trie.is_empty());
    let mut hits = 0;
    for _ in 0..2000 {
        let dst = addr(&mut rng);
        let want = lpm(&all, dst);
        let got = route_of_word(lookup(
            true,
            || route_word(hosts.get(&dst).copied()),
            || route_word(lpm(&trie, dst)),
        ));
        assert_eq!(got, want, "destination {dst:?}");
        assert_eq!(route_of_word(route_word(got)), got, "as a word");
        // a table said to be empty is not asked
        let without = route_of_word(lookup(
            false,
            || panic!("host table asked"),
            || route_word(lpm(&trie, dst)),
        ));
        assert_eq!(without, lpm(&trie, dst), "destination {dst:?}");
        hits += usize::from(hosts.contains_key(&dst));
    }
    assert!(
        hits > 100,
        "the sweep must exercise the host table ({hits} hits)"
    );
}

#[test]
fn host_table_then_trie_equals_one_lpm_v4() {
    for seed in 1..6 {
        check::<4>(seed * 0x9e37_79b9);
    }
}

#[test]
fn host_table_then_trie_equals_one_lpm_v6() {
    for seed in 1..6 {
        check::<16>(seed * 0x85eb_ca6b);
    }
}

#[test]
fn only_full_length_prefixes_are_host_routes() {
    assert!(is_host_route(32, 4) && is_host_route(128, 16));
    assert!(!is_host_route(31, 4) && !is_host_route(32, 16) && !is_host_route(0, 4));
}

/// A route survives its word (the program's lookup returns one scalar),
/// and no route is the word 0.
#[test]
fn a_route_as_a_word_and_back() {
    assert_eq!(route_word(None), 0);
    assert_eq!(route_of_word(0), None);
    for kind in [ROUTE_NEXTHOP, ROUTE_GROUP, ROUTE_LOCAL] {
        for plen in [0, 1, 33, 129, u8::MAX] {
            for id in [0, 1, 255, 256, 4095, u16::MAX] {
                let r = Some(RouteEntry { kind, plen, id });
                assert_ne!(route_word(r), 0, "{r:?}");
                assert_eq!(route_of_word(route_word(r)), r, "{r:?}");
            }
        }
    }
}
