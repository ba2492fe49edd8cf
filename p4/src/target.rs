//! Targets and options: which program, the target facts the configuration
//! does not hold, what a target refuses, and [`entries`], the generator's
//! entry point.

use std::fmt;

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

/// Prefixes the LPM tables hold (`size` of ipv4_lpm / ipv6_lpm): the TNA
/// program's are smaller so that both fit the TCAM of its first stages.
pub fn lpm_capacity(target: Target) -> (usize, usize) {
    match target {
        Target::Bmv2 => (16384, 16384),
        Target::Tofino => (4096, 1024),
    }
}

/// Tofino port speeds (bfrt `BF_SPEED_*`); 200G and 400G need Tofino 2.
pub(crate) const TOFINO_SPEEDS: [(u32, &str); 7] = [
    (10_000, "BF_SPEED_10G"),
    (25_000, "BF_SPEED_25G"),
    (40_000, "BF_SPEED_40G"),
    (50_000, "BF_SPEED_50G"),
    (100_000, "BF_SPEED_100G"),
    (200_000, "BF_SPEED_200G"),
    (400_000, "BF_SPEED_400G"),
];

/// Tofino's dynamic burst absorption factors: the share alpha / (1 + alpha)
/// of the free buffer one queue can reach with SONiC's dynamic_th
/// (alpha = 2^dynamic_th).
pub(crate) fn tofino_baf(dynamic_th: i8) -> Option<&'static str> {
    Some(match dynamic_th {
        -6 => "1.5%",
        -5 => "3%",
        -4 => "6%",
        -3 => "11%",
        -2 => "20%",
        -1 => "33%",
        0 => "50%",
        1 => "66%",
        2 => "80%",
        _ => return None,
    })
}

/// The factor of a lossy queue: exact for dynamic_th -6..2, else the
/// nearest (the eBPF default lossy_dynamic_th 3 asks for 89 %: 80 %), with
/// a note saying so.
pub(crate) fn lossy_baf(dynamic_th: i8) -> (&'static str, Option<String>) {
    match tofino_baf(dynamic_th) {
        Some(b) => (b, None),
        None => {
            let (b, th) = if dynamic_th > 2 {
                ("80%", 2)
            } else {
                ("1.5%", -6)
            };
            (b, Some(format!("lossy_dynamic_th {dynamic_th} has no Tofino factor: the nearest, {b} (dynamic_th {th})")))
        }
    }
}

pub(crate) const BMV2: u8 = 1;

pub(crate) const TOFINO: u8 = 2;

pub(crate) const BOTH: u8 = BMV2 | TOFINO;
