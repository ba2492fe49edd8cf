use super::*;

const I: u64 = DEFAULT_CNP_INTERVAL_NS;
const T0: u64 = 1_000_000;

#[test]
fn first_ce_sends_at_once_plain_never() {
    let mut st = NpState::DEFAULT;
    assert_eq!(st.interval_ns, 50 * US);
    assert!(!np_on_packet(&mut st, T0, false));
    assert_eq!(st, NpState::DEFAULT, "a packet without CE changes nothing");
    assert!(np_on_packet(&mut st, T0, true));
    assert_eq!((st.sent, st.last_cnp_ns, st.cnps), (1, T0, 1));
    for t in [T0 + I, T0 + 2 * I, T0 + 100 * I] {
        assert!(!np_on_packet(&mut st, t, false));
    }
    // even at time 0
    let mut z = NpState::DEFAULT;
    assert!(np_on_packet(&mut z, 0, true));
}

#[test]
fn interval_edges() {
    let mut st = NpState::DEFAULT;
    assert!(np_on_packet(&mut st, T0, true));
    assert!(!np_on_packet(&mut st, T0 + 1, true));
    assert!(
        !np_on_packet(&mut st, T0 + I - 1, true),
        "interval - 1: suppressed"
    );
    assert!(
        np_on_packet(&mut st, T0 + I, true),
        "exactly one interval: sent"
    );
    assert_eq!(st.last_cnp_ns, T0 + I);
    assert!(!np_on_packet(&mut st, T0 + 2 * I - 1, true));

    let mut st = NpState::DEFAULT;
    assert!(np_on_packet(&mut st, T0, true));
    assert!(
        np_on_packet(&mut st, T0 + I + 1, true),
        "interval + 1: sent"
    );
    assert_eq!(st.cnps, 2);
}

#[test]
fn suppressed_ce_does_not_move_the_window() {
    let mut st = NpState::DEFAULT;
    assert!(np_on_packet(&mut st, T0, true));
    for t in (T0 + 1..T0 + I).step_by(997) {
        assert!(!np_on_packet(&mut st, t, true));
    }
    assert_eq!(st.last_cnp_ns, T0);
    assert!(np_on_packet(&mut st, T0 + I, true));
    assert_eq!(st.cnps, 2);
}

#[test]
fn at_most_one_cnp_per_interval_under_continuous_marking() {
    // every packet CE, one every 1 us, for 10 ms: 200 CNPs, 50 us apart
    let mut st = NpState::DEFAULT;
    let mut sent = Vec::new();
    for t in (0..10 * MS).step_by(US as usize) {
        if np_on_packet(&mut st, t, true) {
            sent.push(t);
        }
    }
    assert_eq!(sent.len(), 200);
    assert!(sent.windows(2).all(|w| w[1] - w[0] == I));
}

#[test]
fn qps_are_independent() {
    let mut a = NpState::DEFAULT;
    let mut b = NpState::DEFAULT;
    assert!(np_on_packet(&mut a, T0, true));
    assert!(
        np_on_packet(&mut b, T0 + 1, true),
        "QP b's first CE is not held by QP a's CNP"
    );
    assert!(!np_on_packet(&mut a, T0 + 2, true));
    assert!(np_on_packet(&mut a, T0 + I, true));
    assert!(
        !np_on_packet(&mut b, T0 + I, true),
        "b's window started 1 ns later"
    );
    assert!(np_on_packet(&mut b, T0 + I + 1, true));
}

#[test]
fn custom_interval_and_clock_going_back() {
    let p = DcqcnParams::scaled(M100);
    let mut st = NpState::new(p.cnp_interval_ns);
    assert!(np_on_packet(&mut st, 10 * MS, true));
    assert!(!np_on_packet(&mut st, 59 * MS, true));
    assert!(np_on_packet(&mut st, 60 * MS, true));
    // an older timestamp is no time elapsed
    assert!(!np_on_packet(&mut st, 0, true));
    assert_eq!(st.last_cnp_ns, 60 * MS);
    // interval 0: every CE packet
    let mut z = NpState::new(0);
    assert!(np_on_packet(&mut z, 5, true) && np_on_packet(&mut z, 5, true));
}
