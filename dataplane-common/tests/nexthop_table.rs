//! The next-hop table's two slots and generation (`route::NEXTHOP_SLOTS`):
//! a reader interleaved byte by byte with a writer that copies values a
//! byte at a time (the worst a kernel memcpy can do) never accepts a torn
//! entry: when its two generation reads agree, its copy is one of the
//! values written, whole.

use dataplane_common::route::{nexthop_slot, nexthop_write, NextHop, NH_VALID};

/// xorshift64: deterministic schedules without a crate.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

const ID: u32 = 3;

fn nh(n: u8) -> NextHop {
    NextHop {
        dst_mac: [n; 6],
        src_mac: [n ^ 0xff; 6],
        ifindex: u32::from(n) * 0x0101_0101,
        port_id: u16::from(n) * 0x0101,
        valid: NH_VALID,
        _pad: n,
    }
}

fn bytes(v: &NextHop) -> [u8; 20] {
    // SAFETY: repr(C), 20 bytes without padding (checked by the crate).
    unsafe { core::mem::transmute(*v) }
}

/// Memory: the table's slots and generations, as bytes.
struct Mem {
    slots: Vec<[u8; 20]>,
    gens: Vec<[u8; 4]>,
}

/// Byte writes, in order, that a writer makes for `values` in turn.
fn writer_steps(mem: &Mem, values: &[NextHop]) -> Vec<(bool, usize, usize, u8)> {
    // (is_gen, index, byte, value)
    let mut gen = u32::from_le_bytes(mem.gens[ID as usize]);
    let mut cur = nh(0);
    let mut steps = Vec::new();
    for v in values {
        let w = nexthop_write(ID, gen, &cur, v).expect("a change");
        for (i, b) in bytes(v).iter().enumerate() {
            steps.push((false, w.slot as usize, i, *b));
        }
        for (i, b) in w.gen.to_le_bytes().iter().enumerate() {
            steps.push((true, ID as usize, i, *b));
        }
        gen = w.gen;
        cur = *v;
    }
    steps
}

#[test]
fn a_reader_never_accepts_a_torn_entry() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut accepted, mut retried) = (0, 0);
    for start_gen in [0u32, 1, 0xff, 0xffff, u32::MAX] {
        for _ in 0..20_000 {
            let mut mem = Mem {
                slots: vec![[0; 20]; 16],
                gens: vec![[0; 4]; 8],
            };
            mem.gens[ID as usize] = start_gen.to_le_bytes();
            mem.slots[nexthop_slot(ID, start_gen) as usize] = bytes(&nh(0));
            let values = [nh(1), nh(2), nh(3)];
            let steps = writer_steps(&mem, &values);
            // the reader's 28 byte reads from a random point of the
            // writer's steps on, the writer making 0-3 steps between two
            // reads (sometimes none: both outcomes occur)
            let spread = rng.next() % 4;
            let mut t = (rng.next() % (steps.len() as u64 + 1)) as usize;
            let at: Vec<usize> = (0..28)
                .map(|_| {
                    t = (t + (rng.next() % (spread + 1)) as usize).min(steps.len());
                    t
                })
                .collect();
            let mut w = 0;
            let mut read = Vec::with_capacity(28);
            let mut slot = 0usize;
            for (k, t) in at.iter().enumerate() {
                while w < *t {
                    let (g, i, b, v) = steps[w];
                    if g {
                        mem.gens[i][b] = v;
                    } else {
                        mem.slots[i][b] = v;
                    }
                    w += 1;
                }
                let byte = match k {
                    0..=3 => mem.gens[ID as usize][k],
                    4..=23 => mem.slots[slot][k - 4],
                    _ => mem.gens[ID as usize][k - 24],
                };
                read.push(byte);
                if k == 3 {
                    let g1 = u32::from_le_bytes(read[0..4].try_into().unwrap());
                    slot = nexthop_slot(ID, g1) as usize;
                }
            }
            let g1 = u32::from_le_bytes(read[0..4].try_into().unwrap());
            let g2 = u32::from_le_bytes(read[24..28].try_into().unwrap());
            if g1 != g2 {
                retried += 1;
                continue;
            }
            accepted += 1;
            let copy: [u8; 20] = read[4..24].try_into().unwrap();
            assert!(
                [nh(0), nh(1), nh(2), nh(3)]
                    .iter()
                    .any(|v| bytes(v) == copy),
                "torn entry accepted (generation {g1:#x}): {copy:?}"
            );
        }
    }
    // both outcomes occurred, so the schedules did interleave
    assert!(accepted > 1000 && retried > 1000, "{accepted} {retried}");
}

#[test]
fn an_unchanged_entry_is_not_written() {
    assert_eq!(nexthop_write(ID, 5, &nh(1), &nh(1)), None);
    let w = nexthop_write(ID, 5, &nh(1), &nh(2)).unwrap();
    assert_eq!((w.slot, w.gen), (nexthop_slot(ID, 6), 6));
    assert_ne!(w.slot, nexthop_slot(ID, 5));
}
