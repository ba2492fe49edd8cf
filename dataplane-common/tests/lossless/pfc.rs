use super::*;

fn static_profile() -> BufferProfile {
    BufferProfile {
        mode: TH_STATIC,
        static_th: 10_000,
        xon_offset: 3072,
        ..lossless_profile()
    }
}

fn pg(shared: u32, headroom: u32) -> PgState {
    PgState {
        reserve_used: 1000,
        shared_used: shared,
        headroom_used: headroom,
        peak: 0,
    }
}

#[test]
fn xoff_and_xon_hysteresis_edges() {
    let th = 10_000;
    assert_eq!(pfc_condition(&pg(10_000, 0), th, 3072), PfcCondition::Xoff);
    assert_eq!(pfc_condition(&pg(9_999, 0), th, 3072), PfcCondition::Hold);
    assert_eq!(pfc_condition(&pg(6_929, 0), th, 3072), PfcCondition::Hold);
    assert_eq!(pfc_condition(&pg(6_928, 0), th, 3072), PfcCondition::Xon);
    assert_eq!(
        pfc_condition(&pg(0, 1), th, 3072),
        PfcCondition::Xoff,
        "any headroom use pauses"
    );
    assert_eq!(
        pfc_condition(&pg(0, 0), 0, 3072),
        PfcCondition::Xoff,
        "threshold 0 (pool full)"
    );
    assert_eq!(
        pfc_condition(&pg(10_000, 0), th, 0),
        PfcCondition::Xoff,
        "XOFF wins a tie"
    );
}

#[test]
fn state_machine_sends_xoff_once_then_xon() {
    let mut st = PfcTxState::ZERO;
    assert_eq!(st.step(0, PfcCondition::Hold, G100), PfcAction::None);
    assert_eq!(st.step(1, PfcCondition::Xon, G100), PfcAction::None);
    assert_eq!(
        st.step(2, PfcCondition::Xoff, G100),
        PfcAction::SendXoff { quanta: 0xffff }
    );
    assert_eq!(st.step(3, PfcCondition::Xoff, G100), PfcAction::None);
    assert_eq!(
        st.step(4, PfcCondition::Hold, G100),
        PfcAction::None,
        "hysteresis band keeps XOFF"
    );
    assert_eq!(st.step(5, PfcCondition::Xon, G100), PfcAction::SendXon);
    assert_eq!(st.step(6, PfcCondition::Xon, G100), PfcAction::None);
    assert_eq!(st.step(7, PfcCondition::Hold, G100), PfcAction::None);
}

#[test]
fn refresh_is_due_at_half_the_pause() {
    // 0xffff quanta at 100G = 335539 ns; refresh every 167769 ns.
    assert_eq!(refresh_interval_ns(0xffff, G100), 167_769);
    let mut st = PfcTxState::ZERO;
    let t0 = 1_000_000;
    assert_eq!(
        st.step(t0, PfcCondition::Xoff, G100),
        PfcAction::SendXoff { quanta: 0xffff }
    );
    assert_eq!(
        st.step(t0 + 167_768, PfcCondition::Xoff, G100),
        PfcAction::None
    );
    assert_eq!(
        st.step(t0 + 167_769, PfcCondition::Hold, G100),
        PfcAction::SendRefresh { quanta: 0xffff }
    );
    assert_eq!(st.refresh_due_ns, t0 + 2 * 167_769);
    assert_eq!(
        st.step(t0 + 2 * 167_769 - 1, PfcCondition::Xoff, G100),
        PfcAction::None
    );
    assert_eq!(
        st.step(t0 + 2 * 167_769, PfcCondition::Xoff, G100),
        PfcAction::SendRefresh { quanta: 0xffff }
    );
    // 800G: 65535 x 0.64 ns = 41942 ns, refresh 20971 ns. Speed 0: floor.
    assert_eq!(refresh_interval_ns(0xffff, G800), 20_971);
    assert_eq!(refresh_interval_ns(0xffff, 0), MIN_REFRESH_NS);
    // A late call refreshes at once and re-bases the next due time.
    let late = t0 + 10_000_000;
    assert_eq!(
        st.step(late, PfcCondition::Xoff, G100),
        PfcAction::SendRefresh { quanta: 0xffff }
    );
    assert_eq!(st.refresh_due_ns, late + 167_769);
}

#[test]
fn evaluate_uses_the_profile_and_ignores_lossy_pgs() {
    let prof = static_profile();
    let pool = SharedPool {
        size: 1 << 20,
        used: 0,
    };
    let mut st = PfcTxState::ZERO;
    assert_eq!(
        pfc_evaluate(&mut st, &pg(10_000, 0), &prof, &pool, 0, G100),
        PfcAction::SendXoff { quanta: 0xffff }
    );
    assert_eq!(
        pfc_evaluate(&mut st, &pg(7_000, 0), &prof, &pool, 1, G100),
        PfcAction::None
    );
    assert_eq!(
        pfc_evaluate(&mut st, &pg(6_928, 0), &prof, &pool, 2, G100),
        PfcAction::SendXon
    );
    let lossy = BufferProfile {
        lossless: 0,
        ..prof
    };
    let mut st = PfcTxState::ZERO;
    assert_eq!(
        pfc_evaluate(&mut st, &pg(1 << 20, 99), &lossy, &pool, 0, G100),
        PfcAction::None
    );
}

struct SimResult {
    drops: u32,
    xoffs: u32,
    refreshes: u32,
    xons: u32,
    max_headroom: u32,
    xoff: u32,
    react_ns: u64,
}

/// Two senders at 100G into one egress queue with 1000-byte packets,
/// every 80 ns each, for 2 ms. Our XOFF/refresh/XON takes effect at a
/// sender `react_ns` after the decision: emit latency (2 us) + cable
/// round trip (100 m: 2 x 505 ns) + the peer's response (394 quanta =
/// 2017 ns). The simulation delivers a packet when it is sent and charges
/// the cable's flight to the reaction time instead. A pause lasts
/// 0xffff quanta unless refreshed. With `egress_paused`, the egress queue
/// itself is held by a downstream PFC (refreshed), so nothing drains:
/// the worst case the headroom is sized for.
fn incast(egress_paused: bool, xoff_percent: u32) -> SimResult {
    const PKT: u32 = 1000;
    let speed = G100;
    let hr = headroom(&HeadroomInput::new(speed, 100, 1500, 2_000));
    let peer_ns = u64::from(peer_response_quanta(speed)) * 512_000 / u64::from(speed);
    let react_ns = 2_000 + 2 * 505 + peer_ns;
    let pause_ns = macctl::quanta_to_nanos(PFC_QUANTA, u64::from(speed));
    let xoff = (u64::from(hr.xoff) * u64::from(xoff_percent) / 100) as u32;
    let prof = BufferProfile {
        size: 2000,
        xoff,
        dynamic_th: -2,
        ..lossless_profile()
    };
    let mut pool = SharedPool {
        size: 200_000,
        used: 0,
    };
    let mut pgs = [PgState::ZERO; 2];
    let mut tx = [PfcTxState::ZERO; 2];
    // Sender i is silent in [stop_at, resume_at).
    let mut stop_at = [u64::MAX; 2];
    let mut resume_at = [0u64; 2];
    let mut q = EgressQueue::ZERO;
    let gap = u64::from(PKT) * 8000 / u64::from(speed);
    let mut r = SimResult {
        drops: 0,
        xoffs: 0,
        refreshes: 0,
        xons: 0,
        max_headroom: 0,
        xoff,
        react_ns,
    };
    let mut rel = [0u32; MODEL_PORTS];
    let mut t = 0;
    while t < 2_000_000 {
        if egress_paused && !q.is_paused(t + 1) {
            q.apply_pfc(t, PFC_QUANTA, speed, &mut rel);
        } else {
            q.drain(t, speed, &mut rel);
        }
        for (i, pg) in pgs.iter_mut().enumerate() {
            pg.release(&mut pool, rel[i]);
        }
        for i in 0..2 {
            if !(stop_at[i] <= t && t < resume_at[i]) {
                match pgs[i].admit(&mut pool, &prof, PKT) {
                    Ok(_) => assert_eq!(q.enqueue(i, PKT), PKT),
                    Err(e) => {
                        assert_eq!(e, DropReason::HeadroomExhausted);
                        r.drops += 1;
                    }
                }
            }
            match pfc_evaluate(&mut tx[i], &pgs[i], &prof, &pool, t, speed) {
                PfcAction::SendXoff { quanta } => {
                    r.xoffs += 1;
                    stop_at[i] = t + react_ns;
                    resume_at[i] = stop_at[i] + macctl::quanta_to_nanos(quanta, u64::from(speed));
                }
                PfcAction::SendRefresh { .. } => {
                    r.refreshes += 1;
                    resume_at[i] = t + react_ns + pause_ns;
                }
                PfcAction::SendXon => {
                    r.xons += 1;
                    resume_at[i] = resume_at[i].min(t + react_ns);
                }
                PfcAction::None => {}
            }
            r.max_headroom = r.max_headroom.max(pgs[i].headroom_used);
        }
        t += gap;
    }
    // Drain everything: all accounting returns to zero.
    let mut rel = [0u32; MODEL_PORTS];
    q.apply_pfc(t, 0, speed, &mut rel);
    for (i, pg) in pgs.iter_mut().enumerate() {
        pg.release(&mut pool, rel[i]);
    }
    q.drain(t + 100_000_000, speed, &mut rel);
    for (i, pg) in pgs.iter_mut().enumerate() {
        pg.release(&mut pool, rel[i]);
        assert_eq!(pg.total(), 0);
    }
    assert_eq!((q.bytes, pool.used), (0, 0));
    r
}

#[test]
fn incast_is_lossless_with_the_computed_headroom() {
    // 2:1 incast at 100G: each PG grows at half the line rate; XOFF and
    // XON alternate, headroom use stays under the computed xoff.
    let r = incast(false, 100);
    assert_eq!(r.drops, 0);
    assert!(
        r.xoffs > 10 && r.xons > 10,
        "xoff {} xon {}",
        r.xoffs,
        r.xons
    );
    assert!(
        r.max_headroom > 0 && r.max_headroom <= r.xoff,
        "{} of {}",
        r.max_headroom,
        r.xoff
    );
}

#[test]
fn stuck_egress_is_lossless_and_refreshes_hold_the_senders() {
    // Nothing drains: each sender fills at line rate for the whole
    // reaction time (5027 ns x 12.5 B/ns = 62838 B, plus the packet
    // that crossed the threshold); the computed xoff (66663 B) holds it.
    let r = incast(true, 100);
    assert_eq!(r.drops, 0);
    assert_eq!((r.xoffs, r.xons), (2, 0));
    assert!(r.refreshes >= 2 * 11, "refreshes {}", r.refreshes); // 2 ms / 167.8 us each
    assert_eq!(r.xoff, 66_663);
    assert!(r.max_headroom <= r.xoff, "{} of {}", r.max_headroom, r.xoff);
    assert!(
        u64::from(r.max_headroom) >= r.react_ns * 25 / 2 - 1000,
        "{} vs {} ns",
        r.max_headroom,
        r.react_ns
    );
}

#[test]
fn undersized_headroom_drops_so_the_check_above_is_not_vacuous() {
    let r = incast(true, 80);
    assert!(r.drops > 0);
    assert!(
        r.max_headroom > r.xoff - 1000 && r.max_headroom <= r.xoff,
        "filled up to the last packet that fits"
    );
}
