//! The ingress decision of the classification stage and its accounting.
//!
//! At this stage the pipeline owns no forwarding yet: classified frames go
//! on to the kernel, MAC control frames are consumed (a port never forwards
//! them), malformed frames get the port's configured verdict.

use crate::classify::{classify, Class};
use crate::maps::{PortConfig, PortCounters, MALFORMED_DROP};
use crate::parse::{ParseError, Parsed, L3};
use crate::wire::macctl::MacCtl;

/// What the program returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Hand to the kernel (XDP_PASS).
    Pass,
    /// Consume (XDP_DROP).
    Drop,
}

/// Why the action was chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A data frame with its class.
    Classified {
        class: Class,
        non_ip: bool,
        qinq: bool,
    },
    /// A MAC control frame, consumed.
    MacControl(MacCtl),
    /// A frame that broke at a header boundary.
    Malformed(ParseError),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub action: Action,
    pub outcome: Outcome,
}

/// The ingress decision for a parse result on a configured port.
#[inline(always)]
pub fn decide(parsed: &Result<Parsed, ParseError>, cfg: &PortConfig) -> Decision {
    match parsed {
        Err(e) => Decision {
            action: if cfg.malformed_action == MALFORMED_DROP {
                Action::Drop
            } else {
                Action::Pass
            },
            outcome: Outcome::Malformed(*e),
        },
        Ok(p) if p.l3 == L3::MacControl => Decision {
            action: Action::Drop,
            outcome: Outcome::MacControl(p.mac_ctl),
        },
        Ok(p) => Decision {
            action: Action::Pass,
            outcome: Outcome::Classified {
                class: classify(p, cfg),
                non_ip: p.l3 == L3::Other,
                qinq: p.qinq,
            },
        },
    }
}

/// Adds one frame of `frame_len` bytes with decision `d` to `c`.
#[inline(always)]
pub fn account(c: &mut PortCounters, d: &Decision, frame_len: u64) {
    match d.outcome {
        Outcome::Classified {
            class,
            non_ip,
            qinq,
        } => {
            let tc = (class.tc & 7) as usize;
            c.rx_tc_pkts[tc] += 1;
            c.rx_tc_bytes[tc] += frame_len;
            if class.roce {
                c.rx_roce += 1;
            }
            if class.cnp {
                c.rx_cnp += 1;
            }
            if class.uet {
                c.rx_uet += 1;
            }
            if class.lossless {
                c.rx_lossless += 1;
            }
            if non_ip {
                c.rx_non_ip += 1;
            }
            if qinq {
                c.rx_qinq += 1;
            }
        }
        Outcome::MacControl(m) => {
            if m.is_pfc() {
                let mut i = 0;
                while i < 8 {
                    if m.class_enable & (1 << i) != 0 {
                        c.rx_pfc[i] += 1;
                        if m.times[i] != 0 {
                            c.rx_pfc_xoff[i] += 1;
                        }
                    }
                    i += 1;
                }
            } else if m.is_pause() {
                c.rx_pause += 1;
            } else {
                c.rx_mac_ctl_other += 1;
            }
        }
        Outcome::Malformed(e) => {
            let i = e as usize;
            if i < c.malformed.len() {
                c.malformed[i] += 1;
            }
        }
    }
    match d.action {
        Action::Pass => c.verdict_pass += 1,
        Action::Drop => c.verdict_drop += 1,
    }
}
