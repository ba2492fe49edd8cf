//! Classification: which traffic class a received frame belongs to.
//!
//! SONiC semantics: the port trusts either DSCP (DSCP_TO_TC_MAP) or the
//! 802.1p PCP (DOT1P_TO_TC_MAP). RoCEv2 CNPs (BTH opcode 0x81) go to their
//! own class whatever their DSCP, so congestion feedback never waits behind
//! the data it throttles. UET (UDP 4793 with a PDS header) is classified by
//! the same maps; its feedback (PDS ACK, NACK, control) may be given a class
//! of its own the same way (`uet_feedback_tc`, off by default). A class is
//! lossless when its priority is in
//! `pfc_enable` (TC_TO_PRIORITY_GROUP_MAP and TC_TO_QUEUE_MAP are identity).

use crate::maps::{PortConfig, TRUST_DOT1P, UET_FEEDBACK_TC_SET};
use crate::parse::{Parsed, L3};

/// The class of a frame and the facts later stages key on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Class {
    /// Traffic class 0..=7.
    pub tc: u8,
    /// The class is in `pfc_enable`.
    pub lossless: bool,
    /// RoCEv2 (UDP 4791 with a BTH).
    pub roce: bool,
    /// RoCEv2 congestion notification packet.
    pub cnp: bool,
    /// UET (UDP 4793 with a PDS header).
    pub uet: bool,
}

/// Which rule picked the class, for tests and explanations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    Cnp,
    UetFeedback,
    Dscp,
    Pcp,
    Default,
}

/// Traffic class and the rule that chose it.
#[inline(always)]
pub fn traffic_class(p: &Parsed, cfg: &PortConfig) -> (u8, Rule) {
    if p.roce && p.bth.is_cnp() {
        return (cfg.cnp_tc & 7, Rule::Cnp);
    }
    if p.uet && p.pds.is_feedback() && cfg.uet_feedback_tc & UET_FEEDBACK_TC_SET != 0 {
        return (cfg.uet_feedback_tc & 7, Rule::UetFeedback);
    }
    let is_ip = matches!(p.l3, L3::Ipv4 | L3::Ipv6);
    if cfg.trust != TRUST_DOT1P && is_ip {
        return (cfg.dscp_to_tc[(p.dscp & 63) as usize] & 7, Rule::Dscp);
    }
    if p.vlan {
        return (cfg.pcp_to_tc[(p.pcp & 7) as usize] & 7, Rule::Pcp);
    }
    (cfg.default_tc & 7, Rule::Default)
}

/// Classifies a parsed frame received on a port.
#[inline(always)]
pub fn classify(p: &Parsed, cfg: &PortConfig) -> Class {
    let (tc, _) = traffic_class(p, cfg);
    Class {
        tc,
        lossless: cfg.pfc_enable & (1 << tc) != 0,
        roce: p.roce,
        cnp: p.roce && p.bth.is_cnp(),
        uet: p.uet,
    }
}
