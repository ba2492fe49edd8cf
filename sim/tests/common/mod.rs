//! What the simulator's test files share: the 12:1 incast, the report's
//! stable part and the conservation of bytes.

use dataplane_sim::{Report, Scenario};

/// Twelve hosts of leaf 1 send 2 MB each to one host of leaf 0 through a
/// 4 MB buffer, until every message is received.
pub fn incast(pfc: bool, cc: &str) -> Scenario {
    Scenario {
        topology: "leafspine:2x2:8".into(),
        workload: "incast".into(),
        fanin: 12,
        size: "2MB".into(),
        buffer: "4MB".into(),
        pfc,
        cc: cc.into(),
        drain: true,
        max_time: "200ms".into(),
        ..Scenario::default()
    }
}

/// Everything a host sent is received or dropped, or still on the way.
pub fn assert_conserved(r: &Report) {
    assert_eq!(
        r.sent_payload,
        r.recv_payload + r.dropped_payload + r.in_flight_payload,
        "sent {} != received {} + dropped {} + in flight {}",
        r.sent_payload,
        r.recv_payload,
        r.dropped_payload,
        r.in_flight_payload
    );
}

/// The report without the wall-clock figures.
pub fn stable(r: &Report) -> serde_json::Value {
    let mut v = serde_json::to_value(r).unwrap();
    let o = v.as_object_mut().unwrap();
    o.remove("wall_s");
    o.remove("events_per_s");
    v
}
