//! The load balancer's trace (`trace_lb`): every placement, with what
//! each member's rate estimator read, every move, every NAK; written as
//! CSV beside the report.

use std::fmt::Write;

use dataplane_common::lb::{FlowletEvent, MAX_MEMBERS, NO_SLOT};

/// What a trace line records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceKind {
    /// A flow's first placement (or its first since its entry was taken).
    First,
    /// A new flowlet after a gap (a move when the member differs).
    Gap,
    /// The flow's member went down.
    MemberDown,
    /// A receiver NAKed a gap in a flow's PSNs.
    Nak,
}

impl TraceKind {
    /// The trace kind of a new flowlet.
    pub fn of(ev: FlowletEvent) -> TraceKind {
        match ev {
            FlowletEvent::Gap => TraceKind::Gap,
            FlowletEvent::MemberDown => TraceKind::MemberDown,
            _ => TraceKind::First,
        }
    }

    fn name(self) -> &'static str {
        match self {
            TraceKind::First => "first",
            TraceKind::Gap => "gap",
            TraceKind::MemberDown => "member_down",
            TraceKind::Nak => "nak",
        }
    }
}

/// One line of the balancer's trace.
#[derive(Clone, Copy, Debug)]
pub struct LbEvent {
    pub t: u64,
    /// The switch that chose, or the host that NAKed.
    pub switch: u32,
    pub flow: u32,
    pub what: TraceKind,
    /// Member slot before ([`NO_SLOT`]: none) and after; a NAK's PSN in
    /// `util[0..2]`.
    pub from: u8,
    pub to: u8,
    pub members: u8,
    /// Each member's utilisation (per-mille of its speed) as its rate
    /// estimator read at the choice.
    pub util: [u16; MAX_MEMBERS],
}

impl LbEvent {
    /// Host `h` NAKed flow `flow` at `t`, expecting `psn`.
    pub fn nak(t: u64, h: u32, flow: u32, psn: u32) -> LbEvent {
        let mut util = [0u16; MAX_MEMBERS];
        util[0] = psn as u16;
        util[1] = (psn >> 16) as u16;
        LbEvent {
            t,
            switch: h,
            flow,
            what: TraceKind::Nak,
            from: NO_SLOT,
            to: NO_SLOT,
            members: 0,
            util,
        }
    }
}

/// The trace as CSV: `t_ns,node,flow,event,from,to,psn,util_permille`
/// (members' utilisations separated by `;`), in time order.
pub fn trace_csv(trace: &[LbEvent], node_name: impl Fn(u32) -> String) -> String {
    let mut v: Vec<&LbEvent> = trace.iter().collect();
    v.sort_by_key(|e| (e.t, e.switch, e.flow));
    let mut s = String::from("t_ns,node,flow,event,from,to,psn,util_permille\n");
    let slot = |x: u8| {
        if x == NO_SLOT {
            String::new()
        } else {
            x.to_string()
        }
    };
    for e in v {
        let (psn, util) = if e.what == TraceKind::Nak {
            let psn = u32::from(e.util[0]) | u32::from(e.util[1]) << 16;
            (psn.to_string(), String::new())
        } else {
            let u: Vec<String> = e.util[..e.members as usize]
                .iter()
                .map(|u| u.to_string())
                .collect();
            (String::new(), u.join(";"))
        };
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{}",
            e.t,
            node_name(e.switch),
            e.flow,
            e.what.name(),
            slot(e.from),
            slot(e.to),
            psn,
            util
        );
    }
    s
}
