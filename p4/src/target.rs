//! Targets and options, what a configuration asks that a target cannot
//! express, and the entry point: the entries of a plan for a target.

use dataplane_config::Plan;
use std::fmt;

use crate::render::{bfrt::*, cli::*, p4runtime::*};
use crate::{ops::*, schema::*};

/// A P4 target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    /// bmv2 simple_switch with `p4/v1model/dataplane.p4`.
    Bmv2,
    /// Tofino with `p4/tna/dataplane.p4`.
    Tofino,
}

impl Target {
    pub const ALL: [Target; 2] = [Target::Bmv2, Target::Tofino];

    /// `bmv2` / `tofino` (the CLI's `--target` values).
    pub fn name(self) -> &'static str {
        match self {
            Target::Bmv2 => "bmv2",
            Target::Tofino => "tofino",
        }
    }

    pub fn from_name(s: &str) -> Option<Target> {
        match s {
            "bmv2" => Some(Target::Bmv2),
            "tofino" => Some(Target::Tofino),
            _ => None,
        }
    }

    /// The program, relative to the workspace root.
    pub fn p4_program(self) -> &'static str {
        match self {
            Target::Bmv2 => "p4/v1model/dataplane.p4",
            Target::Tofino => "p4/tna/dataplane.p4",
        }
    }

    pub(crate) fn mask(self) -> u8 {
        match self {
            Target::Bmv2 => BMV2,
            Target::Tofino => TOFINO,
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Target {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Target::from_name(s)
            .ok_or_else(|| format!("expected a P4 target \"bmv2\" or \"tofino\", got {s:?}"))
    }
}

/// Target facts the configuration does not hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// bmv2 measures queue depth in packets: WRED thresholds (bytes) are
    /// divided by this frame size, rounded up, and so are the bmv2 queue
    /// depth and rate. Default 4096 (a RoCEv2 frame at the common 4096-byte
    /// IB MTU is about 4.2 KB; use your traffic's typical frame).
    pub bmv2_packet_bytes: u32,
    /// Tofino traffic-manager cell: 80 bytes on Tofino 1, 176 on Tofino 2.
    /// Queue depths (WRED) and buffer sizes are in cells.
    pub tofino_cell_bytes: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            bmv2_packet_bytes: 4096,
            tofino_cell_bytes: 80,
        }
    }
}

/// Everything `dataplane p4 entries` writes for one target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct P4Entries {
    /// simple_switch_CLI commands (bmv2); empty for Tofino.
    pub cli: String,
    /// P4Runtime `WriteRequest` (protobuf JSON mapping) of the table
    /// entries (and, bmv2, clone sessions).
    pub p4runtime_json: String,
    /// bfrt_python script (Tofino): tables, ports, traffic manager.
    pub bfrt_py: Option<String>,
}

/// One configuration feature a target cannot express.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The configuration field, as the validator names fields
    /// (`port[2] (eth3).speed`, `pfcwd`, `buffer.dynamic_th`).
    pub field: String,
    pub reason: String,
}

/// A configuration refused for a target: nothing is generated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefusedFeature {
    pub target: Target,
    pub refusals: Vec<Refusal>,
}

impl fmt::Display for RefusedFeature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} feature(s) of the configuration cannot be expressed on {}, nothing generated:",
            self.refusals.len(),
            self.target
        )?;
        for r in &self.refusals {
            writeln!(f, "  {}: {}", r.field, r.reason)?;
        }
        Ok(())
    }
}

impl std::error::Error for RefusedFeature {}

/// Entries for `target` with [`Options::default`].
pub fn entries(plan: &Plan, target: Target) -> Result<P4Entries, RefusedFeature> {
    entries_with(plan, target, &Options::default())
}

/// Entries for `target`.
pub fn entries_with(
    plan: &Plan,
    target: Target,
    opts: &Options,
) -> Result<P4Entries, RefusedFeature> {
    let ops = table_ops(plan, target, opts)?;
    Ok(match target {
        Target::Bmv2 => P4Entries {
            cli: render_cli(&ops),
            p4runtime_json: render_p4runtime(&ops),
            bfrt_py: None,
        },
        Target::Tofino => P4Entries {
            cli: String::new(),
            p4runtime_json: render_p4runtime(&ops),
            bfrt_py: Some(render_bfrt(plan, &ops, opts)),
        },
    })
}

/// Prefixes the LPM tables hold (`size` of ipv4_lpm / ipv6_lpm): the TNA
/// program's are smaller so that both fit the TCAM of its first stages.
pub fn lpm_capacity(target: Target) -> (usize, usize) {
    match target {
        Target::Bmv2 => (16384, 16384),
        Target::Tofino => (4096, 1024),
    }
}

/// What `target` cannot express in `plan`.
pub fn refusals(plan: &Plan, target: Target) -> Vec<Refusal> {
    let mut out = Vec::new();
    let mut refuse = |field: String, reason: String| out.push(Refusal { field, reason });
    if plan.pfcwd.is_some() {
        let why = match target {
            Target::Bmv2 => "bmv2 queues are never paused by a received PFC frame, so there is no storm to watch",
            Target::Tofino => "the watchdog is part of the switch OS on Tofino (SONiC pfcwd over SAI), not of this program's tables",
        };
        refuse(
            "pfcwd".into(),
            format!("the PFC watchdog is the eBPF controller's loop over its buffer model and has no {target} counterpart here ({why}); remove [pfcwd] to generate {target} entries"),
        );
    }
    if plan.forwarding() || plan.buffer.is_some() {
        for (i, p) in plan.ports.iter().enumerate() {
            if p.mac.is_none() {
                refuse(
                    format!("port[{i}] ({}).mac", p.name),
                    format!("{target} has no interface to read the MAC from: routed frames are matched against it and leave with it as source (and so do PFC frames); give it in the config"),
                );
            }
        }
    }
    let (cap4, cap6) = lpm_capacity(target);
    let v4 = plan.routes.iter().filter(|r| r.addr.is_ipv4()).count();
    let v6 = plan.routes.len() - v4;
    for (n, cap, fam) in [(v4, cap4, "IPv4"), (v6, cap6, "IPv6")] {
        if n > cap {
            refuse(
                "route".into(),
                format!("{n} {fam} routes, but the {target} program's LPM table holds {cap}"),
            );
        }
    }
    if target == Target::Tofino {
        for (i, p) in plan.ports.iter().enumerate() {
            let s = p.config.speed_mbps;
            if !TOFINO_SPEEDS.iter().any(|&(v, _)| v == s) {
                refuse(
                    format!("port[{i}] ({}).speed", p.name),
                    format!("a Tofino port runs at 10G, 25G, 40G, 50G, 100G, 200G or 400G, not {s} Mb/s"),
                );
            }
        }
        // Lossless PGs: the threshold decides when XOFF goes out, which the
        // headroom is sized for, so it must be exact. (Lossy queues take the
        // nearest factor, see `lossy_baf`.)
        if let Some(b) = &plan.buffer {
            let bad = b
                .ports
                .iter()
                .flat_map(|pb| pb.pg_profile.iter())
                .find(|p| p.lossless != 0 && tofino_baf(p.dynamic_th).is_none());
            if let Some(prof) = bad {
                refuse(
                    "buffer.dynamic_th".into(),
                    format!("Tofino's dynamic thresholds are the burst absorption factors 1.5%..80%, i.e. dynamic_th -6..2; {} has none", prof.dynamic_th),
                );
            }
        }
    }
    out
}
