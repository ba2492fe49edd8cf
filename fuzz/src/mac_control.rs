//! MAC control (PFC / PAUSE) frames: the shared parser and their reception
//! in the buffer model, interleaved with arrivals and timer ticks at
//! fuzzed times (also out of order).

use arbitrary::{Result, Unstructured};
use dataplane_common::buffer::{
    books, on_arrival, on_pfc_rx, tick_queue, Arrival, PauseStat, PortBuffer, TcRow, NUM_TC,
};
use dataplane_common::lossless::{
    headroom, BufferProfile, EgressQueue, HeadroomInput, SharedPool, WredProfile,
    DEFAULT_XON_OFFSET, TH_DYNAMIC,
};
use dataplane_common::parse::{parse, L3};
use dataplane_common::wire::macctl;

/// Ports in the fuzzed model (queues `port * NUM_TC + tc`).
const PORTS: usize = 2;
const SPEEDS: [u32; 5] = [10, 1_000, 25_000, 100_000, 1_600_000];

pub fn check(data: &[u8]) {
    let _ = run(&mut Unstructured::new(data));
}

/// A port of the model: lossless priorities `pfc`, the rest lossy.
fn port(u: &mut Unstructured) -> Result<PortBuffer> {
    let speed = SPEEDS[usize::from(u.int_in_range(0..=4u8)?)];
    let h = headroom(&HeadroomInput::new(
        speed,
        u.int_in_range(0..=1000)?,
        9100,
        150_000,
    ));
    let lossy = BufferProfile {
        size: u.int_in_range(0..=4096)?,
        xon: 0,
        xoff: 0,
        xon_offset: DEFAULT_XON_OFFSET,
        static_th: 0,
        dynamic_th: u.int_in_range(-8..=7)?,
        mode: TH_DYNAMIC,
        lossless: 0,
        _pad: 0,
    };
    let lossless = BufferProfile {
        xon: h.xon,
        xoff: h.xoff,
        dynamic_th: u.int_in_range(-8..=7)?,
        lossless: 1,
        ..lossy
    };
    let pfc: u8 = u.arbitrary()?;
    let mut p = PortBuffer {
        pg_profile: [lossy; NUM_TC],
        wred: [WredProfile::AZURE_LOSSLESS; NUM_TC],
        speed_mbps: speed,
        enabled: 1,
        storm: [0; NUM_TC],
    };
    for tc in 0..NUM_TC {
        if pfc & (1 << tc) != 0 {
            p.pg_profile[tc] = lossless;
        }
    }
    Ok(p)
}

/// A MAC control frame from the fuzzer's bytes: the Ethernet header is
/// fixed (EtherType 0x8808), opcode and fields are not.
fn mac_control_frame(u: &mut Unstructured) -> Result<Vec<u8>> {
    let mut f = Vec::with_capacity(64);
    f.extend_from_slice(&macctl::DST_MAC);
    f.extend_from_slice(&[0x02, 0, 0, 0, 0, 9, 0x88, 0x08]);
    let n = u.int_in_range(0..=50usize)?;
    f.extend_from_slice(u.bytes(n)?);
    Ok(f)
}

fn run(u: &mut Unstructured) -> Result<()> {
    let ports = [port(u)?, port(u)?];
    let mut pool = SharedPool {
        size: u.int_in_range(1..=1u32 << 24)?,
        used: 0,
    };
    let mut queues = [EgressQueue::ZERO; PORTS * NUM_TC];
    let mut rows = [TcRow::ZERO; NUM_TC];
    let mut stats = [PauseStat::ZERO; PORTS * NUM_TC];
    let mut now: u64 = u.int_in_range(0..=1u64 << 40)?;
    while !u.is_empty() {
        // time moves on, sometimes backwards (events of other CPUs)
        let dt: i32 = u.arbitrary()?;
        now = now.saturating_add_signed(i64::from(dt));
        let egress = usize::from(u.int_in_range(0..=PORTS as u8 - 1)?);
        match u.int_in_range(0..=2u8)? {
            0 => {
                let ingress = usize::from(u.int_in_range(0..=PORTS as u8 - 1)?);
                let tc: u8 = u.int_in_range(0..=7)?;
                let a = Arrival {
                    ingress: ingress as u8,
                    tc,
                    lossless: ports[ingress].pg_profile[usize::from(tc)].lossless != 0,
                    control: u.arbitrary()?,
                    ecn: u.int_in_range(0..=3)?,
                    len: u.int_in_range(0..=10_000)?,
                };
                let q = &mut queues[egress * NUM_TC + usize::from(tc)];
                let row = &mut rows[usize::from(tc)];
                let rand = u.arbitrary()?;
                on_arrival(
                    now,
                    q,
                    &ports[egress],
                    row,
                    &ports[ingress],
                    &mut pool,
                    &a,
                    rand,
                );
            }
            1 => pfc_frame(
                u,
                now,
                egress,
                &ports,
                &mut queues,
                &mut rows,
                &mut pool,
                &mut stats,
            )?,
            _ => {
                for tc in 0..NUM_TC {
                    let q = &mut queues[egress * NUM_TC + tc];
                    tick_queue(now, q, &ports[egress], &mut rows[tc], &mut pool);
                }
            }
        }
        if let Err(e) = books(&queues, &rows, &pool) {
            panic!("the buffer model's books do not balance: {e:?}");
        }
    }
    Ok(())
}

/// A MAC control frame received on port `egress`: parsed, then every
/// priority it concerns applied to that port's queue.
#[allow(clippy::too_many_arguments)]
fn pfc_frame(
    u: &mut Unstructured,
    now: u64,
    egress: usize,
    ports: &[PortBuffer; PORTS],
    queues: &mut [EgressQueue; PORTS * NUM_TC],
    rows: &mut [TcRow; NUM_TC],
    pool: &mut SharedPool,
    stats: &mut [PauseStat; PORTS * NUM_TC],
) -> Result<()> {
    let f = mac_control_frame(u)?;
    let Ok(p) = parse(f.as_slice()) else {
        // only a frame too short for its opcode's fields is malformed
        assert!(f.len() < 14 + macctl::PFC_LEN);
        return Ok(());
    };
    assert_eq!(p.l3, L3::MacControl);
    for prio in 0..NUM_TC {
        let Some(quanta) = p.mac_ctl.quanta_for_prio(prio) else {
            continue;
        };
        let i = egress * NUM_TC + prio;
        let before = stats[i].total_at(now);
        on_pfc_rx(
            now,
            &mut queues[i],
            &ports[egress],
            &mut rows[prio],
            pool,
            quanta,
            &mut stats[i],
        );
        assert!(stats[i].total_at(now) >= before, "pause time went back");
        let q = &queues[i];
        if quanta == 0 {
            assert!(!q.is_paused(q.last_ns), "XON left the queue paused");
        }
    }
    Ok(())
}
