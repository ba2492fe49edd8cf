//! Load balancing: flow hash, resilient bucket tables, flowlets, the
//! discounting rate estimator, the five selection modes, and a deterministic
//! simulation of the low-entropy RoCEv2 case (one UDP source port).

use std::cell::Cell;
use std::collections::HashMap;

use dataplane_common::lb::*;
use dataplane_common::rand::XorShift32;

const SRC4: [u8; 4] = [10, 0, 0, 1];
const DST4: [u8; 4] = [10, 0, 1, 1];
const SRC6: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
const DST6: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1];
const UDP: u8 = 17;
const ROCE_PORT: u16 = 4791;
/// The one UDP source port every QP of these hosts uses.
const SPORT: u16 = 0xc0de;
const SEED: u32 = 0x5eed_0001;

/// RoCEv2 over IPv4 between SRC4 and DST4 on QP `qp`.
fn roce4(qp: u32) -> FlowKey {
    FlowKey::ipv4(SRC4, DST4, UDP, SPORT, ROCE_PORT, qp)
}

fn roce6(qp: u32) -> FlowKey {
    FlowKey::ipv6(SRC6, DST6, UDP, SPORT, ROCE_PORT, qp)
}

/// Pearson's chi-square statistic of `counts` against a uniform spread.
fn chi_square(counts: &[u64]) -> f64 {
    let n: u64 = counts.iter().sum();
    let e = n as f64 / counts.len() as f64;
    counts.iter().map(|&o| (o as f64 - e).powi(2) / e).sum()
}

/// 99.9% quantiles of chi-square with 1, 3 and 7 degrees of freedom: a
/// uniform hash exceeds them with probability 1/1000.
fn chi_square_999(buckets: usize) -> f64 {
    match buckets {
        2 => 10.83,
        4 => 16.27,
        8 => 24.32,
        _ => unreachable!(),
    }
}

fn members(weights: &[u8]) -> [Member; MAX_MEMBERS] {
    let mut m = [Member::default(); MAX_MEMBERS];
    for (i, &w) in weights.iter().enumerate() {
        m[i] = Member::new(100 + i as u16, w);
    }
    m
}

/// A group of `weights.len()` live members (ids 100, 101, ...) with a fresh
/// table.
fn group(mode: u8, weights: &[u8]) -> Group {
    let mut g = Group::new(mode, DEFAULT_FLOWLET_TIMEOUT_NS);
    g.n_members = weights.len() as u8;
    g.members = members(weights);
    g.buckets = build_buckets(&g.members, g.n_members, None).expect("valid members");
    validate_group(&g).expect("valid group");
    g
}

/// Rebuilds `g`'s table from its current table.
fn rebuild(g: &mut Group) {
    g.buckets = build_buckets(&g.members, g.n_members, Some(&g.buckets)).expect("valid members");
    validate_group(g).expect("valid group");
}

fn bucket_counts(buckets: &[u8; NBUCKETS]) -> [u32; MAX_MEMBERS] {
    let mut c = [0; MAX_MEMBERS];
    for &s in buckets {
        c[s as usize] += 1;
    }
    c
}

const IDLE: [u8; MAX_MEMBERS] = [0; MAX_MEMBERS];

mod flow_hash;

mod groups;

mod flowlets;

mod rate;

mod modes;

mod low_entropy;

/// UET entropy groups.
mod entropy;

/// Far-side notifications: when sent, how long they count.
mod far;
/// Place mode: bookings, levels, the set-associative table.
mod place;
