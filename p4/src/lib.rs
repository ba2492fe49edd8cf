//! P4 targets: table entries for the v1model program (bmv2 simple_switch,
//! `p4/v1model/dataplane.p4`) and the TNA program (Tofino,
//! `p4/tna/dataplane.p4`), generated from the same validated [`Plan`] the
//! eBPF data plane is configured from.
//!
//! [`entries`] renders, for a [`Target`]:
//!
//! * `cli`: simple_switch_CLI commands (bmv2; empty for Tofino);
//! * `p4runtime_json`: a P4Runtime `WriteRequest` in the protobuf JSON
//!   mapping (table ids, field ids, action and parameter ids are the `@id`
//!   annotations and declaration orders of the P4 sources, so no p4info is
//!   needed to produce it);
//! * `bfrt_py`: a bfrt_python script for Tofino (tables, ports, and the
//!   traffic-manager settings that carry PFC and the buffer: pools, lossless
//!   priority groups with headroom and dynamic thresholds, MAC PFC enables).
//!
//! Output is deterministic (plan order, maps in first-use order). A
//! configuration using something the target cannot express is refused
//! whole ([`RefusedFeature`]), each reason naming its configuration field.
//!
//! The table, key and action names, widths and ids the generator uses are
//! its schema ([`tables`], [`actions`]); [`check_p4_source`] compares it with
//! the P4 text (parsed by [`table_names_in_p4`]) so the two cannot drift.
//!
//! [`corpus`] is the conformance corpus shared by the targets: cases
//! (configuration, input frame, ingress port, expected output or drop) that
//! the eBPF programs run through BPF_PROG_TEST_RUN and that become p4c STF
//! tests for bmv2.
//!
//! Verified where the p4lang tools are installed (`cargo xtask p4 test`,
//! p4/README.md): the CLI files load into simple_switch, the P4Runtime
//! entries match p4c's and bf-p4c's p4info, the bfrt_python calls match
//! bf-p4c's bfrt.json and the SDE's tm/port schemas. Not run on a Tofino.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::net::IpAddr;

use dataplane_common::lb::{Group, MODE_BANDWIDTH, MODE_SPRAY, NBUCKETS};
use dataplane_common::lossless::{refresh_interval_ns, PFC_QUANTA};
use dataplane_common::maps::{MALFORMED_DROP, PORT_F_FORWARD, TRUST_DOT1P};

use dataplane_config::{Plan, Target as RouteTarget};

pub mod stats;

// ---------------------------------------------------------------------------
// Targets, options, results
// ---------------------------------------------------------------------------

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

    fn mask(self) -> u8 {
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

// ---------------------------------------------------------------------------
// Schema: the tables and actions of the P4 programs
// ---------------------------------------------------------------------------

const BMV2: u8 = 1;
const TOFINO: u8 = 2;
const BOTH: u8 = BMV2 | TOFINO;

const ING: &str = "DpIngress";
const EG: &str = "DpEgress";

/// Match kind of a key field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatchKind {
    Exact,
    Lpm,
    Range,
}

impl MatchKind {
    pub fn name(self) -> &'static str {
        match self {
            MatchKind::Exact => "exact",
            MatchKind::Lpm => "lpm",
            MatchKind::Range => "range",
        }
    }
}

/// A key field: its `@name` (also the last component of the field path,
/// which p4c's STF runner matches on), width and match kind.
#[derive(Clone, Copy, Debug)]
pub struct KeySpec {
    pub name: &'static str,
    pub width: u32,
    pub kind: MatchKind,
}

/// A table of a P4 program.
#[derive(Debug)]
pub struct TableSpec {
    pub control: &'static str,
    pub name: &'static str,
    /// P4Runtime id (`@id`).
    pub id: u32,
    pub keys: &'static [KeySpec],
    /// Actions the generator uses in it.
    pub actions: &'static [&'static str],
    targets: u8,
}

impl TableSpec {
    /// `Control.table`, as bmv2 and P4Runtime name it.
    pub fn qualified(&self) -> String {
        format!("{}.{}", self.control, self.name)
    }

    pub fn on(&self, t: Target) -> bool {
        self.targets & t.mask() != 0
    }
}

/// An action of a P4 program: parameters (name, width) in declaration
/// order (P4Runtime parameter ids are 1, 2, ...).
#[derive(Debug)]
pub struct ActionSpec {
    pub control: &'static str,
    pub name: &'static str,
    pub id: u32,
    pub params: &'static [(&'static str, u32)],
    targets: u8,
}

impl ActionSpec {
    pub fn qualified(&self) -> String {
        format!("{}.{}", self.control, self.name)
    }

    pub fn on(&self, t: Target) -> bool {
        self.targets & t.mask() != 0
    }
}

const fn k(name: &'static str, width: u32, kind: MatchKind) -> KeySpec {
    KeySpec { name, width, kind }
}

use MatchKind::{Exact, Lpm, Range};

const ROUTE_ACTIONS: &[&str] = &["route_nexthop", "route_group", "route_local", "route_miss"];

static TABLES: &[TableSpec] = &[
    TableSpec {
        control: ING,
        name: "switch_cfg",
        id: 0x0200_0001,
        keys: &[],
        actions: &["set_switch"],
        targets: BOTH,
    },
    TableSpec {
        control: ING,
        name: "port_cfg",
        id: 0x0200_0002,
        keys: &[k("ingress_port", 9, Exact)],
        actions: &["set_port", "unknown_port"],
        targets: BOTH,
    },
    TableSpec {
        control: ING,
        name: "dscp_to_tc",
        id: 0x0200_0003,
        keys: &[k("dscp_map", 8, Exact), k("dscp", 6, Exact)],
        actions: &["set_tc"],
        targets: BOTH,
    },
    TableSpec {
        control: ING,
        name: "pcp_to_tc",
        id: 0x0200_0004,
        keys: &[k("pcp_map", 8, Exact), k("pcp", 3, Exact)],
        actions: &["set_tc"],
        targets: BOTH,
    },
    TableSpec {
        control: ING,
        name: "tc_cfg",
        id: 0x0200_0005,
        keys: &[k("ingress_port", 9, Exact), k("tc", 3, Exact)],
        actions: &["set_tc_cfg"],
        targets: BOTH,
    },
    TableSpec {
        control: ING,
        name: "ipv4_lpm",
        id: 0x0200_0006,
        keys: &[k("dst_addr", 32, Lpm)],
        actions: ROUTE_ACTIONS,
        targets: BOTH,
    },
    TableSpec {
        control: ING,
        name: "ipv6_lpm",
        id: 0x0200_0007,
        keys: &[k("dst_addr", 128, Lpm)],
        actions: ROUTE_ACTIONS,
        targets: BOTH,
    },
    TableSpec {
        control: ING,
        name: "group_cfg",
        id: 0x0200_0008,
        keys: &[k("grp", 16, Exact)],
        actions: &["set_group"],
        targets: BOTH,
    },
    TableSpec {
        control: ING,
        name: "group_bucket",
        id: 0x0200_0009,
        keys: &[k("grp", 16, Exact), k("bucket", 7, Exact)],
        actions: &["set_bucket"],
        targets: BOTH,
    },
    TableSpec {
        control: ING,
        name: "nexthop",
        id: 0x0200_000a,
        keys: &[k("nh", 16, Exact)],
        actions: &["set_nexthop"],
        targets: BOTH,
    },
    TableSpec {
        control: ING,
        name: "pg_cfg",
        id: 0x0200_000b,
        keys: &[k("ingress_port", 9, Exact), k("tc", 3, Exact)],
        actions: &["set_pg"],
        targets: BMV2,
    },
    TableSpec {
        control: ING,
        name: "load_a",
        id: 0x0200_000c,
        keys: &[k("port_a", 9, Exact)],
        actions: &["set_load_a"],
        targets: TOFINO,
    },
    TableSpec {
        control: ING,
        name: "load_b",
        id: 0x0200_000d,
        keys: &[k("port_b", 9, Exact)],
        actions: &["set_load_b"],
        targets: TOFINO,
    },
    TableSpec {
        control: EG,
        name: "egress_port_cfg",
        id: 0x0200_0010,
        keys: &[k("egress_port", 9, Exact)],
        actions: &["set_egress_port"],
        targets: BMV2,
    },
    TableSpec {
        control: EG,
        name: "wred",
        id: 0x0200_0011,
        keys: &[
            k("egress_port", 9, Exact),
            k("tc", 3, Exact),
            k("enq_qdepth", 19, Range),
        ],
        actions: &["wred_hit"],
        targets: BOTH,
    },
];

static ACTIONS: &[ActionSpec] = &[
    ActionSpec {
        control: ING,
        name: "set_switch",
        id: 0x0100_0001,
        params: &[("hash_seed", 32), ("pool_size", 32)],
        targets: BMV2,
    },
    ActionSpec {
        control: ING,
        name: "set_switch",
        id: 0x0100_0001,
        params: &[("hash_seed", 32)],
        targets: TOFINO,
    },
    ActionSpec {
        control: ING,
        name: "set_port",
        id: 0x0100_0002,
        params: &[
            ("dscp_map", 8),
            ("pcp_map", 8),
            ("trust_dot1p", 1),
            ("default_tc", 3),
            ("cnp_tc", 3),
            ("malformed_drop", 1),
            ("forward", 1),
            ("port_mac", 48),
        ],
        targets: BOTH,
    },
    ActionSpec {
        control: ING,
        name: "unknown_port",
        id: 0x0100_0003,
        params: &[],
        targets: BOTH,
    },
    ActionSpec {
        control: ING,
        name: "set_tc",
        id: 0x0100_0004,
        params: &[("tc", 3)],
        targets: BOTH,
    },
    ActionSpec {
        control: ING,
        name: "set_tc_cfg",
        id: 0x0100_0005,
        params: &[("lossless", 1), ("queue", 5)],
        targets: BOTH,
    },
    ActionSpec {
        control: ING,
        name: "route_nexthop",
        id: 0x0100_0006,
        params: &[("nh", 16)],
        targets: BOTH,
    },
    ActionSpec {
        control: ING,
        name: "route_group",
        id: 0x0100_0007,
        params: &[("grp", 16)],
        targets: BOTH,
    },
    ActionSpec {
        control: ING,
        name: "route_local",
        id: 0x0100_0008,
        params: &[],
        targets: BOTH,
    },
    ActionSpec {
        control: ING,
        name: "route_miss",
        id: 0x0100_0009,
        params: &[],
        targets: BOTH,
    },
    ActionSpec {
        control: ING,
        name: "set_group",
        id: 0x0100_000a,
        params: &[("mode", 2), ("flowlet_timeout", 32)],
        targets: BOTH,
    },
    ActionSpec {
        control: ING,
        name: "set_bucket",
        id: 0x0100_000b,
        params: &[("nh", 16), ("port", 9), ("alt_nh", 16), ("alt_port", 9)],
        targets: BOTH,
    },
    ActionSpec {
        control: ING,
        name: "set_nexthop",
        id: 0x0100_000c,
        params: &[("dmac", 48), ("smac", 48), ("port", 9)],
        targets: BOTH,
    },
    ActionSpec {
        control: ING,
        name: "set_pg",
        id: 0x0100_000d,
        params: &[
            ("lossless", 1),
            ("reserve", 32),
            ("headroom", 32),
            ("xon_offset", 32),
            ("th_shl", 8),
            ("th_shr", 8),
            ("refresh_us", 32),
        ],
        targets: BMV2,
    },
    ActionSpec {
        control: ING,
        name: "set_load_a",
        id: 0x0100_000e,
        params: &[("band", 8)],
        targets: TOFINO,
    },
    ActionSpec {
        control: ING,
        name: "set_load_b",
        id: 0x0100_000f,
        params: &[("band", 8)],
        targets: TOFINO,
    },
    ActionSpec {
        control: EG,
        name: "set_egress_port",
        id: 0x0100_0010,
        params: &[("port_mac", 48), ("band_shift", 8)],
        targets: BMV2,
    },
    ActionSpec {
        control: EG,
        name: "wred_hit",
        id: 0x0100_0011,
        params: &[("prob", 8), ("always", 1), ("mark", 1), ("drop_non_ect", 1)],
        targets: BOTH,
    },
];

/// The tables of `target`'s program that the generator fills.
pub fn tables(target: Target) -> Vec<&'static TableSpec> {
    TABLES.iter().filter(|t| t.on(target)).collect()
}

/// The actions of `target`'s program that the generator uses.
pub fn actions(target: Target) -> Vec<&'static ActionSpec> {
    ACTIONS.iter().filter(|a| a.on(target)).collect()
}

fn table(target: Target, name: &str) -> &'static TableSpec {
    TABLES
        .iter()
        .find(|t| t.name == name && t.on(target))
        .unwrap_or_else(|| panic!("p4 schema: no table {name} on {target}"))
}

fn action(target: Target, name: &str) -> &'static ActionSpec {
    ACTIONS
        .iter()
        .find(|a| a.name == name && a.on(target))
        .unwrap_or_else(|| panic!("p4 schema: no action {name} on {target}"))
}

// ---------------------------------------------------------------------------
// Entries, target-neutral
// ---------------------------------------------------------------------------

/// A value of a key or action parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Val {
    Int(u128),
    /// A configuration port (index into `Plan::ports`); its number is the
    /// index on bmv2 and in P4Runtime, `DEV_PORT[name]` in the bfrt script.
    Port(usize),
    Mac([u8; 6]),
    V4([u8; 4]),
    V6([u8; 16]),
}

impl Val {
    /// The value as a number (ports: their index).
    pub fn number(&self) -> u128 {
        match self {
            Val::Int(n) => *n,
            Val::Port(i) => *i as u128,
            Val::Mac(m) => m.iter().fold(0u128, |a, &b| (a << 8) | u128::from(b)),
            Val::V4(a) => a.iter().fold(0u128, |a, &b| (a << 8) | u128::from(b)),
            Val::V6(a) => u128::from_be_bytes(*a),
        }
    }

    /// Whether the value fits `width` bits.
    pub fn fits(&self, width: u32) -> bool {
        width >= 128 || self.number() >> width == 0
    }
}

/// A key field's match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyVal {
    Exact(Val),
    Lpm(Val, u32),
    Range(u128, u128),
}

/// A table entry, or the default entry of a table.
#[derive(Clone, Debug)]
pub struct Entry {
    pub table: &'static TableSpec,
    pub keys: Vec<KeyVal>,
    pub action: &'static ActionSpec,
    pub args: Vec<Val>,
    pub is_default: bool,
    /// Range tables: the entry's priority.
    pub priority: Option<u32>,
}

/// One thing to configure.
#[derive(Clone, Debug)]
pub enum Op {
    Entry(Entry),
    /// A clone session to a port (bmv2 PFC emulation: id = port + 1).
    CloneSession {
        session: u32,
        port: usize,
    },
    /// bmv2 egress queue rate of a port, packets/s (simple_switch_CLI only).
    QueueRate {
        port: usize,
        pps: u64,
    },
    /// bmv2 egress queue depth of a port, packets (simple_switch_CLI only).
    QueueDepth {
        port: usize,
        packets: u64,
    },
}

/// Deepest queue the `enq_qdepth` range key can name (bit<19>).
const MAX_QDEPTH: u128 = (1 << 19) - 1;

/// Tofino port speeds (bfrt `BF_SPEED_*`); 200G and 400G need Tofino 2.
/// Prefixes the LPM tables hold (`size` of ipv4_lpm / ipv6_lpm): the TNA
/// program's are smaller so that both fit the TCAM of its first stages.
pub fn lpm_capacity(target: Target) -> (usize, usize) {
    match target {
        Target::Bmv2 => (16384, 16384),
        Target::Tofino => (4096, 1024),
    }
}

const TOFINO_SPEEDS: [(u32, &str); 7] = [
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
fn tofino_baf(dynamic_th: i8) -> Option<&'static str> {
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
fn lossy_baf(dynamic_th: i8) -> (&'static str, Option<String>) {
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

/// Next hop / port of a member slot of a built group.
fn member(plan: &Plan, g: &Group, slot: u8) -> (u16, usize) {
    let nh = g.members[usize::from(slot) & (g.members.len() - 1)].id;
    (nh, plan.nexthops[usize::from(nh)].port)
}

/// Expands a WRED curve over queue depths in `unit`s into ranges: (low,
/// high, probability in 1/256, always).
pub fn red_ranges(min_u: u128, max_u: u128, pmax_pct: u8) -> Vec<(u128, u128, u8, bool)> {
    let mut out = Vec::new();
    let pmax = u128::from(pmax_pct.min(100));
    if min_u < max_u {
        let span = max_u - min_u;
        let steps = span.min(8);
        for s in 0..steps {
            let lo = min_u + span * s / steps;
            let hi = min_u + span * (s + 1) / steps - 1;
            if lo > MAX_QDEPTH {
                break;
            }
            // probability at the step's middle: pmax * (mid - min) / span
            let num = pmax * (lo + hi - 2 * min_u) * 256;
            let den = 100 * 2 * span;
            let prob = ((num + den / 2) / den).min(255) as u8;
            if prob > 0 {
                out.push((lo, hi.min(MAX_QDEPTH), prob, false));
            }
        }
    }
    if max_u <= MAX_QDEPTH {
        out.push((max_u, MAX_QDEPTH, 0, true));
    }
    out
}

/// floor(log2(speed)): a port at full speed keeps its halving rate
/// estimator near 2 x speed x 32 us, which this shift maps onto 8 bands.
fn band_shift(speed_mbps: u32) -> u32 {
    31 - speed_mbps.max(1).leading_zeros()
}

/// Everything to configure for `target`, in order: switch, ports,
/// classification, routing, groups, next hops, lossless stage.
pub fn table_ops(plan: &Plan, target: Target, opts: &Options) -> Result<Vec<Op>, RefusedFeature> {
    let r = refusals(plan, target);
    if !r.is_empty() {
        return Err(RefusedFeature {
            target,
            refusals: r,
        });
    }
    let mut ops = Vec::new();
    let mut add = |table_name: &str, keys: Vec<KeyVal>, act: &str, args: Vec<Val>| {
        let t = table(target, table_name);
        let priority = t.keys.iter().any(|k| k.kind == Range).then_some(1);
        ops.push(Op::Entry(Entry {
            table: t,
            keys,
            action: action(target, act),
            args,
            is_default: false,
            priority,
        }));
    };
    let pool = plan.buffer.as_ref().map(|b| b.pool_size).unwrap_or(0);
    let mut switch_args = vec![Val::Int(u128::from(plan.hash_seed))];
    if target == Target::Bmv2 {
        switch_args.push(Val::Int(u128::from(pool)));
    }
    let mut first = vec![Op::Entry(Entry {
        table: table(target, "switch_cfg"),
        keys: vec![],
        action: action(target, "set_switch"),
        args: switch_args,
        is_default: true,
        priority: None,
    })];

    // classification maps, deduplicated in first-use order
    let mut dscp_maps: Vec<[u8; 64]> = Vec::new();
    let mut pcp_maps: Vec<[u8; 8]> = Vec::new();
    let map_id = |maps: &mut Vec<_>, m| match maps.iter().position(|x| *x == m) {
        Some(i) => i + 1,
        None => {
            maps.push(m);
            maps.len()
        }
    };
    for (i, p) in plan.ports.iter().enumerate() {
        let c = &p.config;
        let d = map_id(&mut dscp_maps, c.dscp_to_tc);
        let q = map_id_pcp(&mut pcp_maps, c.pcp_to_tc);
        add(
            "port_cfg",
            vec![KeyVal::Exact(Val::Port(i))],
            "set_port",
            vec![
                Val::Int(d as u128),
                Val::Int(q as u128),
                Val::Int(u128::from(c.trust == TRUST_DOT1P)),
                Val::Int(u128::from(c.default_tc)),
                Val::Int(u128::from(c.cnp_tc)),
                Val::Int(u128::from(c.malformed_action == MALFORMED_DROP)),
                Val::Int(u128::from(c.flags & PORT_F_FORWARD != 0)),
                Val::Mac(p.mac.unwrap_or([0; 6])),
            ],
        );
    }
    for (m, map) in dscp_maps.iter().enumerate() {
        for (dscp, &tc) in map.iter().enumerate() {
            add(
                "dscp_to_tc",
                vec![
                    KeyVal::Exact(Val::Int(m as u128 + 1)),
                    KeyVal::Exact(Val::Int(dscp as u128)),
                ],
                "set_tc",
                vec![Val::Int(u128::from(tc))],
            );
        }
    }
    for (m, map) in pcp_maps.iter().enumerate() {
        for (pcp, &tc) in map.iter().enumerate() {
            add(
                "pcp_to_tc",
                vec![
                    KeyVal::Exact(Val::Int(m as u128 + 1)),
                    KeyVal::Exact(Val::Int(pcp as u128)),
                ],
                "set_tc",
                vec![Val::Int(u128::from(tc))],
            );
        }
    }
    for (i, p) in plan.ports.iter().enumerate() {
        for tc in 0..8u8 {
            // TC_TO_QUEUE_MAP is identity (as in the eBPF data plane)
            add(
                "tc_cfg",
                vec![
                    KeyVal::Exact(Val::Port(i)),
                    KeyVal::Exact(Val::Int(u128::from(tc))),
                ],
                "set_tc_cfg",
                vec![
                    Val::Int(u128::from(p.config.pfc_enable & (1 << tc) != 0)),
                    Val::Int(u128::from(tc)),
                ],
            );
        }
    }

    // routes, in configuration order
    for r in &plan.routes {
        let (table, key) = match r.addr {
            IpAddr::V4(a) => (
                "ipv4_lpm",
                KeyVal::Lpm(Val::V4(a.octets()), u32::from(r.len)),
            ),
            IpAddr::V6(a) => (
                "ipv6_lpm",
                KeyVal::Lpm(Val::V6(a.octets()), u32::from(r.len)),
            ),
        };
        let (act, args) = match r.target {
            RouteTarget::NextHop(id) => ("route_nexthop", vec![Val::Int(u128::from(id))]),
            RouteTarget::Group(id) => ("route_group", vec![Val::Int(u128::from(id))]),
            RouteTarget::Local => ("route_local", vec![]),
        };
        add(table, vec![key], act, args);
    }

    // groups: the eBPF data plane's resilient table, every member live
    let mut load_tables = false;
    for (gi, g) in plan.groups.iter().enumerate() {
        let built = dataplane_config::group_value(plan, g, &|_| true, None).map_err(|e| {
            RefusedFeature {
                target,
                refusals: vec![Refusal {
                    field: format!("group[{gi}] ({})", g.name),
                    reason: e.to_string(),
                }],
            }
        })?;
        let timeout = match target {
            // bmv2 timestamps are microseconds
            Target::Bmv2 => u128::from(g.flowlet_timeout_ns.div_ceil(1000)),
            Target::Tofino => u128::from(g.flowlet_timeout_ns),
        };
        load_tables |= g.mode == MODE_BANDWIDTH || g.mode == MODE_SPRAY;
        add(
            "group_cfg",
            vec![KeyVal::Exact(Val::Int(gi as u128))],
            "set_group",
            vec![Val::Int(u128::from(g.mode)), Val::Int(timeout)],
        );
        for b in 0..NBUCKETS {
            let (nh, port) = member(plan, &built, built.buckets[b]);
            // second candidate: the member of the next bucket that differs
            let (alt_nh, alt_port) = (1..NBUCKETS)
                .map(|d| member(plan, &built, built.buckets[(b + d) % NBUCKETS]))
                .find(|&(n, _)| n != nh)
                .unwrap_or((nh, port));
            add(
                "group_bucket",
                vec![
                    KeyVal::Exact(Val::Int(gi as u128)),
                    KeyVal::Exact(Val::Int(b as u128)),
                ],
                "set_bucket",
                vec![
                    Val::Int(u128::from(nh)),
                    Val::Port(port),
                    Val::Int(u128::from(alt_nh)),
                    Val::Port(alt_port),
                ],
            );
        }
    }
    for (ni, n) in plan.nexthops.iter().enumerate() {
        let smac = plan.ports[n.port].mac.unwrap_or([0; 6]);
        add(
            "nexthop",
            vec![KeyVal::Exact(Val::Int(ni as u128))],
            "set_nexthop",
            vec![Val::Mac(n.mac), Val::Mac(smac), Val::Port(n.port)],
        );
    }
    if target == Target::Tofino && load_tables {
        // idle until the control plane's poll_loads() writes real bands
        for (i, _) in plan.ports.iter().enumerate() {
            add(
                "load_a",
                vec![KeyVal::Exact(Val::Port(i))],
                "set_load_a",
                vec![Val::Int(0)],
            );
            add(
                "load_b",
                vec![KeyVal::Exact(Val::Port(i))],
                "set_load_b",
                vec![Val::Int(0)],
            );
        }
    }
    if target == Target::Bmv2 && (plan.forwarding() || plan.buffer.is_some()) {
        for (i, p) in plan.ports.iter().enumerate() {
            add(
                "egress_port_cfg",
                vec![KeyVal::Exact(Val::Port(i))],
                "set_egress_port",
                vec![
                    Val::Mac(p.mac.unwrap_or([0; 6])),
                    Val::Int(u128::from(band_shift(p.config.speed_mbps))),
                ],
            );
        }
    }

    // lossless stage
    if let Some(b) = &plan.buffer {
        if target == Target::Bmv2 {
            for (i, pb) in b.ports.iter().enumerate() {
                for tc in 0..8u8 {
                    let prof = &pb.pg_profile[usize::from(tc)];
                    let th = i32::from(prof.dynamic_th);
                    let refresh_us = refresh_interval_ns(PFC_QUANTA, pb.speed_mbps).div_ceil(1000);
                    add(
                        "pg_cfg",
                        vec![
                            KeyVal::Exact(Val::Port(i)),
                            KeyVal::Exact(Val::Int(u128::from(tc))),
                        ],
                        "set_pg",
                        vec![
                            Val::Int(u128::from(prof.lossless != 0)),
                            Val::Int(u128::from(prof.size)),
                            Val::Int(if prof.lossless != 0 {
                                u128::from(prof.xoff)
                            } else {
                                0
                            }),
                            Val::Int(u128::from(prof.xon_offset)),
                            Val::Int(th.max(0) as u128),
                            Val::Int((-th).max(0) as u128),
                            Val::Int(u128::from(refresh_us.min(u64::from(u32::MAX)))),
                        ],
                    );
                }
            }
        }
        let unit = u128::from(match target {
            Target::Bmv2 => opts.bmv2_packet_bytes.max(1),
            Target::Tofino => opts.tofino_cell_bytes.max(1),
        });
        for (i, pb) in b.ports.iter().enumerate() {
            for tc in 0..8u8 {
                let w = &pb.wred[usize::from(tc)];
                let acts = w.marks() || w.wred_green_enable != 0;
                if w.green_min_threshold == u32::MAX || !acts {
                    continue;
                }
                let min_u = u128::from(w.green_min_threshold).div_ceil(unit);
                let max_u = u128::from(w.green_max_threshold).div_ceil(unit);
                for (lo, hi, prob, always) in red_ranges(min_u, max_u, w.green_drop_probability) {
                    add(
                        "wred",
                        vec![
                            KeyVal::Exact(Val::Port(i)),
                            KeyVal::Exact(Val::Int(u128::from(tc))),
                            KeyVal::Range(lo, hi),
                        ],
                        "wred_hit",
                        vec![
                            Val::Int(u128::from(prob)),
                            Val::Int(u128::from(always)),
                            Val::Int(u128::from(w.marks())),
                            Val::Int(u128::from(w.wred_green_enable != 0)),
                        ],
                    );
                }
            }
        }
        if target == Target::Bmv2 {
            let pkt = u64::from(opts.bmv2_packet_bytes.max(1));
            for (i, pb) in b.ports.iter().enumerate() {
                ops.push(Op::CloneSession {
                    session: i as u32 + 1,
                    port: i,
                });
                ops.push(Op::QueueRate {
                    port: i,
                    pps: (u64::from(pb.speed_mbps) * 1_000_000 / (8 * pkt)).max(1),
                });
                ops.push(Op::QueueDepth {
                    port: i,
                    packets: (u64::from(b.pool_size) / pkt).max(1),
                });
            }
        }
    }
    first.append(&mut ops);
    Ok(first)
}

fn map_id_pcp(maps: &mut Vec<[u8; 8]>, m: [u8; 8]) -> usize {
    match maps.iter().position(|x| *x == m) {
        Some(i) => i + 1,
        None => {
            maps.push(m);
            maps.len()
        }
    }
}

// ---------------------------------------------------------------------------
// Renderers
// ---------------------------------------------------------------------------

fn mac_str(m: &[u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// simple_switch_CLI spelling of a value.
fn cli_val(v: &Val) -> String {
    match v {
        Val::Int(n) => n.to_string(),
        Val::Port(i) => i.to_string(),
        Val::Mac(m) => mac_str(m),
        Val::V4(a) => std::net::Ipv4Addr::from(*a).to_string(),
        Val::V6(a) => std::net::Ipv6Addr::from(*a).to_string(),
    }
}

/// simple_switch_CLI commands. No comments: simple_switch_CLI has no
/// comment syntax. Port numbers are configuration port indexes.
pub fn render_cli(ops: &[Op]) -> String {
    let mut s = String::new();
    for op in ops {
        match op {
            Op::Entry(e) => {
                let args: Vec<String> = e.args.iter().map(cli_val).collect();
                if e.is_default {
                    let _ = writeln!(
                        s,
                        "table_set_default {} {} {}",
                        e.table.qualified(),
                        e.action.qualified(),
                        args.join(" ")
                    );
                } else {
                    let keys: Vec<String> = e
                        .keys
                        .iter()
                        .map(|k| match k {
                            KeyVal::Exact(v) => cli_val(v),
                            KeyVal::Lpm(v, len) => format!("{}/{len}", cli_val(v)),
                            KeyVal::Range(lo, hi) => format!("{lo}->{hi}"),
                        })
                        .collect();
                    let mut line = format!(
                        "table_add {} {} {} =>",
                        e.table.qualified(),
                        e.action.qualified(),
                        keys.join(" ")
                    );
                    for a in &args {
                        line.push(' ');
                        line.push_str(a);
                    }
                    if let Some(p) = e.priority {
                        let _ = write!(line, " {p}");
                    }
                    s.push_str(line.trim_end());
                    s.push('\n');
                }
            }
            Op::CloneSession { session, port } => {
                let _ = writeln!(s, "mirroring_add {session} {port}");
            }
            Op::QueueRate { port, pps } => {
                let _ = writeln!(s, "set_queue_rate {pps} {port}");
            }
            Op::QueueDepth { port, packets } => {
                let _ = writeln!(s, "set_queue_depth {packets} {port}");
            }
        }
    }
    s
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding (the protobuf JSON mapping of `bytes`).
pub fn base64(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// P4Runtime's canonical binary string of a number: big-endian, no leading
/// zero bytes, at least one byte.
pub fn canonical_bytes(n: u128) -> Vec<u8> {
    let b = n.to_be_bytes();
    let first = b.iter().position(|&x| x != 0).unwrap_or(15);
    b[first..].to_vec()
}

fn p4rt_bytes(n: u128) -> serde_json::Value {
    serde_json::Value::String(base64(&canonical_bytes(n)))
}

/// A P4Runtime `WriteRequest` (protobuf JSON mapping) of the ops that
/// P4Runtime carries: table entries (a default entry as MODIFY with
/// `isDefaultAction`) and clone sessions. bmv2 queue rate/depth have no
/// P4Runtime form. The client adds `deviceId` and `electionId`.
pub fn render_p4runtime(ops: &[Op]) -> String {
    use serde_json::{json, Value};
    let mut updates = Vec::new();
    for op in ops {
        match op {
            Op::Entry(e) => {
                let params: Vec<Value> = e
                    .args
                    .iter()
                    .enumerate()
                    .map(|(i, v)| json!({ "paramId": i + 1, "value": p4rt_bytes(v.number()) }))
                    .collect();
                let mut te = serde_json::Map::new();
                te.insert("tableId".into(), json!(e.table.id));
                te.insert(
                    "action".into(),
                    json!({ "action": { "actionId": e.action.id, "params": params } }),
                );
                if e.is_default {
                    te.insert("isDefaultAction".into(), json!(true));
                } else {
                    // a don't-care match (prefix length 0, a range over every
                    // value) is written by leaving the field out
                    let m: Vec<Value> = e
                        .keys
                        .iter()
                        .zip(e.table.keys)
                        .enumerate()
                        .filter(|(_, (kv, ks))| match kv {
                            KeyVal::Lpm(_, 0) => false,
                            KeyVal::Range(0, hi) => *hi != u128::MAX >> (128 - ks.width.min(128)),
                            _ => true,
                        })
                        .map(|(i, (kv, _))| {
                            let id = i + 1;
                            match kv {
                                KeyVal::Exact(v) => json!({ "fieldId": id, "exact": { "value": p4rt_bytes(v.number()) } }),
                                KeyVal::Lpm(v, len) => {
                                    json!({ "fieldId": id, "lpm": { "value": p4rt_bytes(v.number()), "prefixLen": len } })
                                }
                                KeyVal::Range(lo, hi) => {
                                    json!({ "fieldId": id, "range": { "low": p4rt_bytes(*lo), "high": p4rt_bytes(*hi) } })
                                }
                            }
                        })
                        .collect();
                    te.insert("match".into(), Value::Array(m));
                    if let Some(p) = e.priority {
                        te.insert("priority".into(), json!(p));
                    }
                }
                let kind = if e.is_default { "MODIFY" } else { "INSERT" };
                updates
                    .push(json!({ "type": kind, "entity": { "tableEntry": Value::Object(te) } }));
            }
            Op::CloneSession { session, port } => updates.push(json!({
                "type": "INSERT",
                "entity": { "packetReplicationEngineEntry": { "cloneSessionEntry": {
                    "sessionId": session,
                    "replicas": [ { "egressPort": port, "instance": 1 } ]
                } } }
            })),
            Op::QueueRate { .. } | Op::QueueDepth { .. } => {}
        }
    }
    // one update per line: readable diffs, a fifth of the pretty size
    let mut s = String::from("{\n  \"updates\": [\n");
    for (i, u) in updates.iter().enumerate() {
        let sep = if i + 1 < updates.len() { "," } else { "" };
        let _ = writeln!(
            s,
            "    {}{sep}",
            serde_json::to_string(u).expect("JSON of plain values")
        );
    }
    s.push_str("  ]\n}\n");
    s
}

fn py_val(plan: &Plan, v: &Val) -> String {
    match v {
        Val::Int(n) if *n < 65536 => n.to_string(),
        Val::Port(i) => format!("DEV_PORT[{:?}]", plan.ports[*i].name),
        other => format!("0x{:x}", other.number()),
    }
}

fn py_entry(plan: &Plan, e: &Entry) -> String {
    let obj = if e.table.control == EG { "eg" } else { "ig" };
    let mut kw: Vec<String> = Vec::new();
    for (ks, kv) in e.table.keys.iter().zip(&e.keys) {
        match kv {
            KeyVal::Exact(v) => kw.push(format!("{}={}", ks.name, py_val(plan, v))),
            KeyVal::Lpm(v, len) => {
                kw.push(format!("{}={}", ks.name, py_val(plan, v)));
                kw.push(format!("{}_p_length={len}", ks.name));
            }
            KeyVal::Range(lo, hi) => {
                kw.push(format!("{}_start={lo}", ks.name));
                kw.push(format!("{}_end={hi}", ks.name));
            }
        }
    }
    if let Some(p) = e.priority {
        kw.push(format!("MATCH_PRIORITY={p}"));
    }
    for ((name, _), v) in e.action.params.iter().zip(&e.args) {
        kw.push(format!("{name}={}", py_val(plan, v)));
    }
    let verb = if e.is_default {
        "set_default_with"
    } else {
        "add_with"
    };
    format!(
        "{obj}.{}.{verb}_{}({})",
        e.table.name,
        e.action.name,
        kw.join(", ")
    )
}

/// The bfrt_python script for Tofino.
pub fn render_bfrt(plan: &Plan, ops: &[Op], opts: &Options) -> String {
    let cell = u64::from(opts.tofino_cell_bytes.max(1));
    let cells = |bytes: u32| u64::from(bytes).div_ceil(cell);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# bfrt_python script for p4/tna/dataplane.p4 (Tofino), generated by"
    );
    let _ = writeln!(
        s,
        "# `dataplane p4 entries --target tofino` from the configuration of switch {:?}.",
        plan.instance
    );
    let _ = writeln!(s, "#");
    let _ = writeln!(s, "# Run it in the SDE's shell: bfshell -b <this file>");
    let _ = writeln!(
        s,
        "# Written for the BF Runtime Python API; its calls were checked against the"
    );
    let _ = writeln!(
        s,
        "# program's bfrt.json (bf-p4c 9.13.4) and the SDE's tm/port schemas (bf-drivers,"
    );
    let _ = writeln!(
        s,
        "# open-p4studio), but it has NOT been run on a Tofino or the Tofino model."
    );
    let _ = writeln!(s, "#");
    let _ = writeln!(
        s,
        "# Queue depths (wred) and buffer sizes are in cells of {cell} bytes"
    );
    let _ = writeln!(
        s,
        "# (Tofino 1: 80, Tofino 2: 176; regenerate for the other)."
    );
    if cell < 176 && plan.ports.iter().any(|p| p.config.speed_mbps > 100_000) {
        let _ = writeln!(
            s,
            "# NOTE: 200G/400G ports need Tofino 2, whose cells are 176 bytes: generate with"
        );
        let _ = writeln!(s, "# Options {{ tofino_cell_bytes: 176, .. }} for it.");
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "PROGRAM = \"dataplane\"");
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "# Configuration port -> Tofino dev_port: edit to match your platform (`pm show`)."
    );
    let _ = writeln!(s, "DEV_PORT = {{");
    for (i, p) in plan.ports.iter().enumerate() {
        let _ = writeln!(s, "    {:?}: {i},", p.name);
    }
    let _ = writeln!(s, "}}");
    let _ = writeln!(s);
    let _ = writeln!(s, "p4 = getattr(bfrt, PROGRAM).pipe");
    let _ = writeln!(s, "ig = p4.DpIngress");
    let _ = writeln!(s, "eg = p4.DpEgress");
    let _ = writeln!(s, "tm = bfrt.tf1.tm");
    let _ = writeln!(s);
    let _ = writeln!(s);
    let _ = writeln!(s, "def pipe_of(dev_port):");
    let _ = writeln!(s, "    return dev_port >> 7");
    let _ = writeln!(s);
    let _ = writeln!(s);
    let _ = writeln!(s, "def queue_of(dev_port, qid):");
    let _ = writeln!(
        s,
        "    \"\"\"(port group, queue in the group) of queue `qid` of a port.\"\"\""
    );
    let _ = writeln!(
        s,
        "    e = tm.port.cfg.get(dev_port=dev_port, print_ents=False)"
    );
    let _ = writeln!(
        s,
        "    return e.data[b\"pg_id\"], e.data[b\"egress_qid_queues\"][qid]"
    );
    let _ = writeln!(s);
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "# ---- ports: speed, FEC, PFC enables of the MAC (pfc_enable) ----"
    );
    for (i, p) in plan.ports.iter().enumerate() {
        let speed = TOFINO_SPEEDS
            .iter()
            .find(|&&(v, _)| v == p.config.speed_mbps)
            .map(|&(_, n)| n)
            .unwrap_or("BF_SPEED_NONE");
        let fec = if p.config.speed_mbps >= 100_000 {
            "BF_FEC_TYP_REED_SOLOMON"
        } else {
            "BF_FEC_TYP_NONE"
        };
        let pfc = if plan.buffer.is_some() {
            p.config.pfc_enable
        } else {
            0
        };
        let _ = writeln!(
            s,
            "bfrt.port.port.add(DEV_PORT=DEV_PORT[{:?}], SPEED={speed:?}, FEC={fec:?}, PORT_ENABLE=True, RX_PFC_EN_MAP=0x{pfc:02x}, TX_PFC_EN_MAP=0x{pfc:02x})",
            plan.ports[i].name
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "# ---- tables ----");
    for op in ops {
        if let Op::Entry(e) = op {
            let _ = writeln!(s, "{}", py_entry(plan, e));
        }
    }
    if let Some(b) = &plan.buffer {
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "# ---- traffic manager: shared pool, lossless priority groups (PFC generation) ----"
        );
        let _ = writeln!(s, "# buffer.pool_size = {} bytes", b.pool_size);
        let _ = writeln!(
            s,
            "# Headroom (pfc_skid_max_cells) is the configuration's: its formula covers"
        );
        let _ = writeln!(
            s,
            "# buffer.response_us of PFC emit latency (150 us by default, for the eBPF"
        );
        let _ = writeln!(
            s,
            "# controller's software PFC). Tofino's MAC sends PFC in hardware: set"
        );
        let _ = writeln!(
            s,
            "# response_us = 1 (or headroom_xoff per port) for a Tofino-sized headroom."
        );
        let _ = writeln!(
            s,
            "tm.pool.cfg.mod(pool=\"IG_APP_POOL_0\", size_cells={})",
            cells(b.pool_size)
        );
        let mut ppg = 0;
        for (i, pb) in b.ports.iter().enumerate() {
            let name = &plan.ports[i].name;
            let pfc = plan.ports[i].config.pfc_enable;
            if pfc == 0 {
                continue;
            }
            // (receiving PFC is the MAC's RX_PFC_EN_MAP above; the TM's
            // mode_rx is read-only)
            let _ = writeln!(
                s,
                "tm.port.flowcontrol.mod(dev_port=DEV_PORT[{name:?}], mode_tx=\"PFC\", cos_to_icos=[0, 1, 2, 3, 4, 5, 6, 7])"
            );
            for tc in 0..8usize {
                if pfc & (1 << tc) == 0 {
                    continue;
                }
                let prof = &pb.pg_profile[tc];
                ppg += 1;
                let baf = tofino_baf(prof.dynamic_th).unwrap_or("DISABLE");
                let _ = writeln!(
                    s,
                    "# {name} priority {tc}: reserve {} B, headroom (xoff) {} B, xon_offset {} B, dynamic_th {}",
                    prof.size, prof.xoff, prof.xon_offset, prof.dynamic_th
                );
                let _ = writeln!(
                    s,
                    "tm.ppg.cfg.add_with_dev_port(pipe=pipe_of(DEV_PORT[{name:?}]), ppg_id={ppg}, dev_port=DEV_PORT[{name:?}], icos_{tc}=True, guaranteed_cells={}, hysteresis_cells={}, pool_id=\"IG_APP_POOL_0\", pool_max_cells={}, pfc_enable=True, pfc_skid_max_cells={}, dynamic_baf={baf:?})",
                    cells(prof.size),
                    cells(prof.xon_offset),
                    cells(b.pool_size),
                    cells(prof.xoff)
                );
            }
        }
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "# ---- lossy classes: egress queue dynamic threshold (buffer.lossy_dynamic_th) ----"
        );
        let mut rows = Vec::new();
        let mut notes = std::collections::BTreeSet::new();
        for (i, pb) in b.ports.iter().enumerate() {
            let pfc = plan.ports[i].config.pfc_enable;
            let lossy: Vec<String> = (0..8)
                .filter(|tc| pfc & (1 << tc) == 0)
                .map(|tc| tc.to_string())
                .collect();
            let th = pb
                .pg_profile
                .iter()
                .find(|p| p.lossless == 0)
                .map(|p| p.dynamic_th)
                .unwrap_or(3);
            let (baf, note) = lossy_baf(th);
            notes.extend(note);
            if !lossy.is_empty() {
                rows.push(format!(
                    "    ({:?}, [{}], {:?}),",
                    plan.ports[i].name,
                    lossy.join(", "),
                    baf
                ));
            }
        }
        for n in notes {
            let _ = writeln!(s, "# NOTE: {n}");
        }
        let _ = writeln!(s, "for name, qids, baf in [");
        for r in rows {
            let _ = writeln!(s, "{r}");
        }
        let _ = writeln!(s, "]:");
        let _ = writeln!(s, "    for qid in qids:");
        let _ = writeln!(s, "        pg_id, pg_queue = queue_of(DEV_PORT[name], qid)");
        let _ = writeln!(
            s,
            "        tm.queue.buffer.mod_with_shared_pool(pipe=pipe_of(DEV_PORT[name]), pg_id=pg_id, pg_queue=pg_queue, pool_id=\"EG_APP_POOL_0\", dynamic_baf=baf)"
        );
    }
    // congestion notifications first: the CNP class in strict priority
    let cnp: Vec<String> = plan
        .ports
        .iter()
        .map(|p| format!("({:?}, {})", p.name, p.config.cnp_tc))
        .collect();
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "# ---- the CNP class (switch.cnp_tc) in strict priority on every port ----"
    );
    let _ = writeln!(s, "for name, qid in [{}]:", cnp.join(", "));
    let _ = writeln!(s, "    pg_id, pg_queue = queue_of(DEV_PORT[name], qid)");
    let _ = writeln!(s, "    tm.queue.sched_cfg.mod(pipe=pipe_of(DEV_PORT[name]), pg_id=pg_id, pg_queue=pg_queue, max_priority=7)");
    if ops
        .iter()
        .any(|o| matches!(o, Op::Entry(e) if e.table.name == "load_a"))
    {
        let _ = writeln!(s);
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "# ---- bandwidth / spray groups: port utilisation for load_a / load_b ----"
        );
        let _ = writeln!(
            s,
            "# Tofino's ingress cannot read the egress byte counter port_tx: this loop"
        );
        let _ = writeln!(
            s,
            "# copies each port's utilisation band (0-7, eighths of the configured speed)"
        );
        let _ = writeln!(
            s,
            "# into the ingress tables. Run it beside the data plane: poll_loads()."
        );
        let speeds: Vec<String> = plan
            .ports
            .iter()
            .map(|p| format!("{:?}: {}", p.name, p.config.speed_mbps))
            .collect();
        let _ = writeln!(s, "SPEED_MBPS = {{{}}}", speeds.join(", "));
        let _ = writeln!(s);
        let _ = writeln!(s);
        let _ = writeln!(s, "def poll_loads(period_s=0.001, rounds=None):");
        let _ = writeln!(s, "    import time");
        let _ = writeln!(s, "    last = {{}}");
        let _ = writeln!(s, "    n = 0");
        let _ = writeln!(s, "    while rounds is None or n < rounds:");
        let _ = writeln!(s, "        now = time.time()");
        let _ = writeln!(s, "        for name, dp in DEV_PORT.items():");
        let _ = writeln!(s, "            sent = eg.port_tx.get(COUNTER_INDEX=dp, from_hw=True, print_ents=False).data[b\"$COUNTER_SPEC_BYTES\"]");
        let _ = writeln!(s, "            if name in last and now > last[name][0]:");
        let _ = writeln!(s, "                util = (sent - last[name][1]) * 8 / ((now - last[name][0]) * SPEED_MBPS[name] * 1e6)");
        let _ = writeln!(s, "                band = max(0, min(7, int(util * 8)))");
        let _ = writeln!(
            s,
            "                ig.load_a.mod_with_set_load_a(port_a=dp, band=band)"
        );
        let _ = writeln!(
            s,
            "                ig.load_b.mod_with_set_load_b(port_b=dp, band=band)"
        );
        let _ = writeln!(s, "            last[name] = (now, sent)");
        let _ = writeln!(s, "        n += 1");
        let _ = writeln!(s, "        time.sleep(period_s)");
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "bfrt.complete_operations()");
    s
}

/// An entry in p4c's STF syntax (`add` / `setdefault`); keys by their
/// field name, values in hex where wide, prefixes as binary digits with
/// `*` for the bits the prefix leaves out (how p4c's STF reader takes them). Range keys have no STF form:
/// `None` for those entries.
pub fn stf_entry(e: &Entry) -> Option<String> {
    let val = |v: &Val| match v {
        Val::Int(n) if *n < 65536 => n.to_string(),
        Val::Port(i) => i.to_string(),
        other => format!("0x{:x}", other.number()),
    };
    let args: Vec<String> = e
        .action
        .params
        .iter()
        .zip(&e.args)
        .map(|((n, _), v)| format!("{n}:{}", val(v)))
        .collect();
    if e.is_default {
        return Some(format!(
            "setdefault {} {}({})",
            e.table.qualified(),
            e.action.qualified(),
            args.join(",")
        ));
    }
    let mut keys = Vec::new();
    for (ks, kv) in e.table.keys.iter().zip(&e.keys) {
        match kv {
            KeyVal::Exact(v) => keys.push(format!("{}:{}", ks.name, val(v))),
            // p4c's STF reader takes a prefix as don't-care digits:
            // binary, so that any length can be written
            KeyVal::Lpm(v, len) => {
                let (w, l) = (ks.width as usize, (*len as usize).min(ks.width as usize));
                let bits: String = (0..w)
                    .map(|i| {
                        if i < l {
                            if (v.number() >> (w - 1 - i)) & 1 == 1 {
                                '1'
                            } else {
                                '0'
                            }
                        } else {
                            '*'
                        }
                    })
                    .collect();
                keys.push(format!("{}:0b{bits}", ks.name))
            }
            KeyVal::Range(..) => return None,
        }
    }
    Some(format!(
        "add {} {} {}({})",
        e.table.qualified(),
        keys.join(" "),
        e.action.qualified(),
        args.join(",")
    ))
}

// ---------------------------------------------------------------------------
// Reading the P4 sources: tables, keys, actions, ids
// ---------------------------------------------------------------------------

/// A key field as written in a P4 table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct P4Key {
    /// The field expression (`hdr.ipv4.dst_addr`).
    pub expr: String,
    pub kind: String,
    /// `@name("...")`, if any.
    pub name: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct P4Table {
    pub control: String,
    pub name: String,
    pub id: Option<u32>,
    pub keys: Vec<P4Key>,
    pub actions: Vec<String>,
    /// The program fills it itself: `const entries`, or no key and a
    /// `const default_action` (a step of the pipeline written as a table).
    pub fixed: bool,
    /// `size = N`.
    pub size: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct P4Action {
    pub control: String,
    pub name: String,
    pub id: Option<u32>,
    /// (name, width; 0 when the type is not a known bit<N>)
    pub params: Vec<(String, u32)>,
}

/// The tables and actions declared in a P4 source, by qualified name
/// (`Control.name`; top-level actions unqualified).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct P4Symbols {
    pub tables: BTreeMap<String, P4Table>,
    pub actions: BTreeMap<String, P4Action>,
}

fn p4_tokens(src: &str) -> Vec<String> {
    // comments and preprocessor lines (with their continuations) go
    let mut text = String::with_capacity(src.len());
    let mut in_directive = false;
    for line in src.lines() {
        let t = line.trim_start();
        if in_directive || t.starts_with('#') {
            in_directive = t.ends_with('\\');
            text.push('\n');
            continue;
        }
        text.push_str(line);
        text.push('\n');
    }
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        if c == '/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == '/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                i += 1;
            }
            i += 2;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '"' {
            let start = i;
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += 1;
            }
            i += 1;
            out.push(text[start..i.min(b.len())].to_string());
        } else if c.is_ascii_alphanumeric() || c == '_' {
            let start = i;
            while i < b.len() && ((b[i] as char).is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(text[start..i].to_string());
        } else {
            out.push(c.to_string());
            i += 1;
        }
    }
    out
}

fn parse_int(s: &str) -> Option<u32> {
    let s = s.replace('_', "");
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// The tables and actions of a P4 program (give it the program's text with
/// the text of the files it includes, for their typedefs).
pub fn table_names_in_p4(src: &str) -> P4Symbols {
    let t = p4_tokens(src);
    let mut sym = P4Symbols::default();
    // typedef bit<N> NAME;
    let mut widths: BTreeMap<String, u32> = [("PortId_t", 9), ("QueueId_t", 5), ("MirrorId_t", 10)]
        .iter()
        .map(|(n, w)| (n.to_string(), *w))
        .collect();
    for w in t.windows(6) {
        if w[0] == "typedef" && w[1] == "bit" && w[2] == "<" && w[4] == ">" {
            if let Some(n) = parse_int(&w[3]) {
                widths.insert(w[5].clone(), n);
            }
        }
    }
    let close = |start: usize, open: &str, shut: &str| -> usize {
        // index of the token closing the bracket opened at `start`
        let mut depth = 0;
        let mut j = start;
        while j < t.len() {
            if t[j] == open {
                depth += 1;
            } else if t[j] == shut {
                depth -= 1;
                if depth == 0 {
                    return j;
                }
            }
            j += 1;
        }
        t.len()
    };
    let mut control: Option<(String, usize)> = None; // (name, index of the closing brace)
    let mut pending_id: Option<u32> = None;
    let mut i = 0;
    while i < t.len() {
        if let Some((_, end)) = &control {
            if i >= *end {
                control = None;
            }
        }
        let ctl = control.as_ref().map(|c| c.0.clone()).unwrap_or_default();
        let qualify = |n: &str| {
            if ctl.is_empty() {
                n.to_string()
            } else {
                format!("{ctl}.{n}")
            }
        };
        match t[i].as_str() {
            "@" if i + 1 < t.len() => {
                let ann = t[i + 1].clone();
                let mut j = i + 2;
                if t.get(j).map(String::as_str) == Some("(") {
                    let end = close(j, "(", ")");
                    if ann == "id" {
                        pending_id = t.get(j + 1).and_then(|v| parse_int(v));
                    }
                    j = end + 1;
                }
                i = j;
                continue;
            }
            "control" if i + 1 < t.len() => {
                let name = t[i + 1].clone();
                let mut j = i + 2;
                if t.get(j).map(String::as_str) == Some("(") {
                    j = close(j, "(", ")") + 1;
                }
                if t.get(j).map(String::as_str) == Some("{") {
                    control = Some((name, close(j, "{", "}")));
                    i = j + 1;
                    continue;
                }
            }
            "action" if i + 2 < t.len() && t[i + 2] == "(" => {
                let name = t[i + 1].clone();
                let end = close(i + 2, "(", ")");
                let mut params = Vec::new();
                let mut cur: Vec<&str> = Vec::new();
                let mut depth = 0;
                for tok in &t[i + 3..end] {
                    match tok.as_str() {
                        "<" | "(" => depth += 1,
                        ">" | ")" => depth -= 1,
                        _ => {}
                    }
                    if tok == "," && depth == 0 {
                        params.push(std::mem::take(&mut cur));
                    } else {
                        cur.push(tok);
                    }
                }
                if !cur.is_empty() {
                    params.push(cur);
                }
                let params = params
                    .into_iter()
                    .filter(|p| !p.is_empty())
                    .map(|p| {
                        let pname = p.last().map(|s| s.to_string()).unwrap_or_default();
                        let ty: Vec<&str> = p
                            .iter()
                            .copied()
                            .filter(|s| !matches!(*s, "in" | "out" | "inout"))
                            .collect();
                        let width = if ty.len() >= 4 && ty[0] == "bit" && ty[1] == "<" {
                            parse_int(ty[2]).unwrap_or(0)
                        } else {
                            ty.first()
                                .and_then(|n| widths.get(*n).copied())
                                .unwrap_or(0)
                        };
                        (pname, width)
                    })
                    .collect();
                let q = qualify(&name);
                sym.actions.insert(
                    q,
                    P4Action {
                        control: ctl.clone(),
                        name,
                        id: pending_id.take(),
                        params,
                    },
                );
                i = end + 1;
                continue;
            }
            "table" if i + 2 < t.len() && t[i + 2] == "{" => {
                let name = t[i + 1].clone();
                let end = close(i + 2, "{", "}");
                let body = &t[i + 3..end];
                let mut keys = Vec::new();
                let mut acts = Vec::new();
                let mut j = 0;
                while j < body.len() {
                    if (body[j] == "key" || body[j] == "actions")
                        && body.get(j + 1).map(String::as_str) == Some("=")
                    {
                        let is_key = body[j] == "key";
                        // the { ... } after `=`
                        let open = j + 2;
                        let mut depth = 0;
                        let mut k = open;
                        while k < body.len() {
                            if body[k] == "{" {
                                depth += 1;
                            } else if body[k] == "}" {
                                depth -= 1;
                                if depth == 0 {
                                    break;
                                }
                            }
                            k += 1;
                        }
                        let inner = &body[open + 1..k.min(body.len())];
                        for item in inner.split(|s| s == ";") {
                            if item.is_empty() {
                                continue;
                            }
                            if is_key {
                                let Some(colon) = item.iter().position(|s| s == ":") else {
                                    continue;
                                };
                                let expr = item[..colon].concat();
                                let kind = item.get(colon + 1).cloned().unwrap_or_default();
                                let name = item
                                    .windows(4)
                                    .find(|w| w[0] == "@" && w[1] == "name" && w[2] == "(")
                                    .map(|w| w[3].trim_matches('"').to_string());
                                keys.push(P4Key { expr, kind, name });
                            } else {
                                // skip annotations (`@defaultonly`)
                                let mut n = 0;
                                while n < item.len() && item[n] == "@" {
                                    n += 2;
                                }
                                if let Some(a) = item.get(n) {
                                    acts.push(a.clone());
                                }
                            }
                        }
                        j = k + 1;
                    } else {
                        j += 1;
                    }
                }
                let has_const =
                    |what: &str| body.windows(2).any(|w| w[0] == "const" && w[1] == what);
                let fixed =
                    has_const("entries") || (keys.is_empty() && has_const("default_action"));
                let size = body
                    .windows(3)
                    .find(|w| w[0] == "size" && w[1] == "=")
                    .and_then(|w| w[2].parse().ok());
                let q = qualify(&name);
                sym.tables.insert(
                    q,
                    P4Table {
                        control: ctl.clone(),
                        name,
                        id: pending_id.take(),
                        keys,
                        actions: acts,
                        fixed,
                        size,
                    },
                );
                i = end + 1;
                continue;
            }
            _ => {}
        }
        if t[i] != "@" {
            // an annotation applies to the next declaration only
            if matches!(t[i].as_str(), ";" | "}") {
                pending_id = None;
            }
        }
        i += 1;
    }
    sym
}

/// Compares the generator's schema for `target` with the P4 program's
/// tables and actions; returns every mismatch.
pub fn check_p4_source(target: Target, sym: &P4Symbols) -> Vec<String> {
    let mut problems = Vec::new();
    for ts in tables(target) {
        let q = ts.qualified();
        let Some(t) = sym.tables.get(&q) else {
            problems.push(format!(
                "{target}: table {q} is not declared in {}",
                target.p4_program()
            ));
            continue;
        };
        if t.id != Some(ts.id) {
            problems.push(format!(
                "{target}: table {q} has @id {:?}, the generator uses 0x{:08x}",
                t.id, ts.id
            ));
        }
        if t.keys.len() != ts.keys.len() {
            problems.push(format!(
                "{target}: table {q} has {} key fields, the generator writes {}",
                t.keys.len(),
                ts.keys.len()
            ));
        }
        for (n, (pk, sk)) in t.keys.iter().zip(ts.keys).enumerate() {
            if pk.name.as_deref() != Some(sk.name) {
                problems.push(format!(
                    "{target}: table {q} key {n} is @name({:?}), the generator uses {:?}",
                    pk.name, sk.name
                ));
            }
            let leaf = pk.expr.rsplit('.').next().unwrap_or("");
            if leaf != sk.name {
                problems.push(format!(
                    "{target}: table {q} key {n} is the field {} whose last component is not {:?} (STF names keys by it)",
                    pk.expr, sk.name
                ));
            }
            if pk.kind != sk.kind.name() {
                problems.push(format!(
                    "{target}: table {q} key {} matches {}, the generator writes {}",
                    sk.name,
                    pk.kind,
                    sk.kind.name()
                ));
            }
        }
        for a in ts.actions {
            if !t.actions.iter().any(|x| x == a) {
                problems.push(format!("{target}: table {q} does not list action {a}"));
            }
        }
    }
    for asp in actions(target) {
        let q = asp.qualified();
        let Some(a) = sym.actions.get(&q) else {
            problems.push(format!(
                "{target}: action {q} is not declared in {}",
                target.p4_program()
            ));
            continue;
        };
        if a.id != Some(asp.id) {
            problems.push(format!(
                "{target}: action {q} has @id {:?}, the generator uses 0x{:08x}",
                a.id, asp.id
            ));
        }
        let want: Vec<(String, u32)> = asp
            .params
            .iter()
            .map(|(n, w)| (n.to_string(), *w))
            .collect();
        if a.params != want {
            problems.push(format!(
                "{target}: action {q} has parameters {:?}, the generator writes {want:?}",
                a.params
            ));
        }
    }
    // the route capacity the refusals assume is the program's
    let (cap4, cap6) = lpm_capacity(target);
    for (tn, cap) in [("ipv4_lpm", cap4), ("ipv6_lpm", cap6)] {
        let size = sym
            .tables
            .values()
            .find(|t| t.name == tn)
            .and_then(|t| t.size);
        if size != Some(cap as u64) {
            problems.push(format!(
                "{target}: table {tn} has size {size:?}, the generator assumes {cap}"
            ));
        }
    }
    // every table of the program is the generator's (none left unfilled),
    // except those the program fills itself
    for (q, t) in &sym.tables {
        if t.fixed {
            if tables(target).iter().any(|ts| ts.qualified() == *q) {
                problems.push(format!(
                    "{target}: table {q} has constant entries, yet the generator writes it"
                ));
            }
            continue;
        }
        if !tables(target).iter().any(|ts| ts.qualified() == *q) {
            problems.push(format!(
                "{target}: table {q} (id {:?}) of the program is unknown to the generator",
                t.id
            ));
        }
    }
    problems
}

// ---------------------------------------------------------------------------
// Hash of the v1model program (for predicting bmv2's choice)
// ---------------------------------------------------------------------------

/// CRC-32 (IEEE, reflected, as zlib and bmv2's `HashAlgorithm.crc32`).
pub fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xedb8_8320 & mask);
        }
    }
    !crc
}

/// The v1model program's flow hash: CRC-32 over seed (4 bytes), source and
/// destination (16 bytes each, IPv4 mapped as ::ffff:a.b.c.d), protocol,
/// UDP ports and BTH destination QP (3 bytes), all big-endian.
pub fn bmv2_flow_hash(
    seed: u32,
    src: [u8; 16],
    dst: [u8; 16],
    proto: u8,
    sport: u16,
    dport: u16,
    qp: u32,
) -> u32 {
    let mut b = Vec::with_capacity(44);
    b.extend_from_slice(&seed.to_be_bytes());
    b.extend_from_slice(&src);
    b.extend_from_slice(&dst);
    b.push(proto);
    b.extend_from_slice(&sport.to_be_bytes());
    b.extend_from_slice(&dport.to_be_bytes());
    b.extend_from_slice(&qp.to_be_bytes()[1..]);
    crc32(&b)
}

// ---------------------------------------------------------------------------
// The conformance corpus
// ---------------------------------------------------------------------------

/// The conformance corpus shared by the targets (`p4/corpus`): named
/// configurations (`configs/<name>.toml`) and cases (`cases.toml`), each an
/// input frame on a port with the expected output frame(s) and port(s), or
/// drop, or punt (the eBPF data plane's XDP_PASS, the P4 programs' CPU
/// port).
///
/// ```toml
/// [[case]]
/// name = "route_v4_nexthop"
/// config = "route"                 # configs/route.toml
/// port = "p0"                      # ingress
/// [case.packet]                    # built by dataplane_common::build
/// kind = "rocev2"                  # rocev2 cnp udp tcp arp pfc pause raw
/// dst = "02:00:00:00:0f:00"
/// src = "02:00:00:00:00:01"
/// ip_src = "198.18.0.1"
/// ip_dst = "198.18.1.5"
/// dscp = 3
/// ecn = 2
/// dest_qp = 0x42
/// [case.expect]
/// tc = 3                           # traffic class (counters / cpu_h)
/// [case.expect.forward.p1]         # out of p1: the input with these fields changed
/// dst = "02:00:00:00:01:01"
/// src = "02:00:00:00:0f:01"
/// ttl = 63
/// ```
///
/// Several `forward` ports mean "exactly one of them" (a next-hop group).
/// `drop = "<reason>"` (mac_control, malformed, no_route, no_member,
/// no_neighbour) or `cpu = "<reason>"` (classified, unknown_port,
/// malformed, not_ip, not_for_us, ttl_expired, local) instead of `forward`;
/// `malformed = "<ParseError name>"` with the malformed reasons.
pub mod corpus {
    use std::collections::BTreeMap;
    use std::path::{Path, PathBuf};

    use dataplane_common::build::{self, Ip, Reth, L2};
    use dataplane_common::lb::MODE_SPRAY;
    use dataplane_common::parse::{parse, ParseError, L3};
    use dataplane_common::wire::bth::{self, Bth};
    use serde::Deserialize;

    use super::{bmv2_flow_hash, stf_entry, table_ops, Op, Options, Target};
    use dataplane_config::{parse_mac, Config, Plan, Target as RouteTarget};

    /// Port number of an ingress port the configuration does not have.
    pub const UNCONFIGURED_PORT: u32 = 200;
    /// The v1model program's CPU port (its CPU_PORT default).
    pub const BMV2_CPU_PORT: u32 = 64;

    /// Why a frame goes to the CPU port (cpu_h.reason; eBPF: XDP_PASS).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum CpuReason {
        Classified,
        UnknownPort,
        Malformed(ParseError),
        NotIp,
        NotForUs,
        TtlExpired,
        Local,
    }

    impl CpuReason {
        /// The CPU_* code of headers.p4.
        pub fn code(self) -> u8 {
            match self {
                CpuReason::Classified => 1,
                CpuReason::UnknownPort => 2,
                CpuReason::Malformed(_) => 3,
                CpuReason::NotIp => 4,
                CpuReason::NotForUs => 5,
                CpuReason::TtlExpired => 6,
                CpuReason::Local => 7,
            }
        }
    }

    /// Why a frame is dropped.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum DropReason {
        MacControl,
        Malformed(ParseError),
        NoRoute,
        NoMember,
        NoNeighbour,
    }

    #[derive(Clone, Debug, PartialEq, Eq)]
    pub enum Expect {
        /// Out of exactly one of these ports, as this frame.
        Forward(Vec<(String, Vec<u8>)>),
        Drop(DropReason),
        Cpu(CpuReason),
    }

    #[derive(Clone, Debug)]
    pub struct Case {
        pub name: String,
        pub about: String,
        pub config: String,
        pub port: String,
        pub frame: Vec<u8>,
        pub expect: Expect,
        /// Expected traffic class (required for forward and most cpu cases).
        pub tc: Option<u8>,
        /// Why the case has no STF test, if it has none.
        pub skip_stf: Option<String>,
    }

    /// A loaded corpus.
    #[derive(Clone, Debug)]
    pub struct Corpus {
        /// name -> (TOML text, validated plan)
        pub configs: BTreeMap<String, (String, Plan)>,
        pub cases: Vec<Case>,
    }

    /// A frame as the corpus describes it.
    #[derive(Debug, Default, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct PacketSpec {
        pub kind: String,
        pub dst: Option<String>,
        pub src: Option<String>,
        /// One 802.1Q tag: [pcp, vid].
        pub vlan: Option<[u16; 2]>,
        /// Tags with explicit TPIDs, outer first: [[tpid, pcp, vid], ...].
        pub tags: Option<Vec<[u16; 3]>>,
        pub ip_src: Option<String>,
        pub ip_dst: Option<String>,
        pub dscp: Option<u8>,
        pub ecn: Option<u8>,
        pub ttl: Option<u8>,
        /// IPv4 options bytes (a multiple of 4).
        pub ip_options: Option<Vec<u8>>,
        pub sport: Option<u16>,
        pub dport: Option<u16>,
        pub opcode: Option<u8>,
        pub dest_qp: Option<u32>,
        pub psn: Option<u32>,
        pub reth: Option<bool>,
        pub payload_len: Option<usize>,
        pub payload_byte: Option<u8>,
        pub class_enable: Option<u16>,
        pub times: Option<Vec<u16>>,
        pub pause_time: Option<u16>,
        pub hex: Option<String>,
        /// Byte edits after building: [[offset, value], ...].
        pub edits: Option<Vec<[usize; 2]>>,
        pub truncate: Option<usize>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct CasesFile {
        #[serde(rename = "case")]
        cases: Vec<CaseToml>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct CaseToml {
        name: String,
        #[serde(default)]
        about: String,
        config: String,
        port: String,
        packet: toml::Table,
        expect: ExpectToml,
        skip_stf: Option<String>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct ExpectToml {
        forward: Option<BTreeMap<String, toml::Table>>,
        drop: Option<String>,
        cpu: Option<String>,
        malformed: Option<String>,
        tc: Option<u8>,
    }

    const RETH: Reth = Reth {
        va: 0x7f00_0000_1000,
        rkey: 0x1234,
        len: 4096,
    };

    fn ip_of(spec: &PacketSpec) -> Result<Ip, String> {
        let src: IpAddr = spec
            .ip_src
            .as_deref()
            .ok_or("ip_src missing")?
            .parse()
            .map_err(|e| format!("ip_src: {e}"))?;
        let dst: IpAddr = spec
            .ip_dst
            .as_deref()
            .ok_or("ip_dst missing")?
            .parse()
            .map_err(|e| format!("ip_dst: {e}"))?;
        let mut ip = match (src, dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => Ip::v4(s.octets(), d.octets()),
            (IpAddr::V6(s), IpAddr::V6(d)) => Ip::v6(s.octets(), d.octets()),
            _ => return Err("ip_src and ip_dst of different families".into()),
        };
        ip = ip
            .dscp(spec.dscp.unwrap_or(0))
            .ecn(spec.ecn.unwrap_or(0))
            .ttl(spec.ttl.unwrap_or(64));
        if let Some(o) = &spec.ip_options {
            ip = ip.options(o);
        }
        Ok(ip)
    }

    use std::net::IpAddr;

    fn mac(s: &Option<String>, what: &str) -> Result<[u8; 6], String> {
        let s = s.as_deref().ok_or_else(|| format!("{what} missing"))?;
        parse_mac(s).ok_or_else(|| format!("{what}: not a MAC: {s:?}"))
    }

    /// Builds the frame a spec describes.
    pub fn build_frame(spec: &PacketSpec) -> Result<Vec<u8>, String> {
        let l2 = || -> Result<L2, String> {
            let mut l2 = L2::new(mac(&spec.dst, "dst")?, mac(&spec.src, "src")?);
            if let Some([pcp, vid]) = spec.vlan {
                l2 = l2.vlan(pcp as u8, vid);
            }
            for &[tpid, pcp, vid] in spec.tags.iter().flatten() {
                l2 = l2.tag(tpid, pcp as u8, vid);
            }
            Ok(l2)
        };
        let payload = vec![spec.payload_byte.unwrap_or(0xab); spec.payload_len.unwrap_or(64)];
        let ethertype = |ip: &Ip| match ip.addrs {
            build::Addrs::V4(..) => 0x0800,
            build::Addrs::V6(..) => 0x86dd,
        };
        let mut f = match spec.kind.as_str() {
            "rocev2" => {
                let b = Bth {
                    opcode: spec.opcode.unwrap_or(bth::OP_WRITE_FIRST),
                    pkey: 0xffff,
                    dest_qp: spec.dest_qp.unwrap_or(0),
                    psn: spec.psn.unwrap_or(0),
                    ..Bth::default()
                };
                let reth = spec
                    .reth
                    .unwrap_or(b.opcode == bth::OP_WRITE_FIRST || b.opcode == bth::OP_WRITE_ONLY)
                    .then_some(RETH);
                build::rocev2_frame(
                    &l2()?,
                    &ip_of(spec)?,
                    spec.sport.unwrap_or(49152),
                    &b,
                    reth,
                    &payload,
                )
            }
            "cnp" => build::cnp_frame(
                &l2()?,
                &ip_of(spec)?,
                spec.sport.unwrap_or(49152),
                spec.dest_qp.unwrap_or(0),
            ),
            "udp" => build::udp_frame(
                &l2()?,
                &ip_of(spec)?,
                spec.sport.unwrap_or(40000),
                spec.dport.unwrap_or(53),
                &payload,
            ),
            "tcp" => {
                let ip = ip_of(spec)?;
                build::frame(&l2()?, ethertype(&ip), &build::ip_packet(&ip, 6, &[0; 20]))
            }
            "arp" => build::frame(&l2()?, 0x0806, &[0; 28]),
            "pfc" => {
                let t = spec.times.clone().unwrap_or_default();
                let mut times = [0u16; 8];
                for (d, s) in times.iter_mut().zip(t) {
                    *d = s;
                }
                build::pfc_frame(
                    mac(&spec.src, "src")?,
                    spec.class_enable.unwrap_or(0),
                    times,
                )
            }
            "pause" => {
                build::pause_frame(mac(&spec.src, "src")?, spec.pause_time.unwrap_or(0xffff))
            }
            "raw" => {
                let h: String = spec
                    .hex
                    .as_deref()
                    .ok_or("hex missing")?
                    .chars()
                    .filter(|c| !c.is_whitespace())
                    .collect();
                if !h.len().is_multiple_of(2) {
                    return Err("hex: odd number of digits".into());
                }
                (0..h.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&h[i..i + 2], 16).map_err(|e| format!("hex: {e}")))
                    .collect::<Result<_, _>>()?
            }
            other => return Err(format!("unknown packet kind {other:?}")),
        };
        for &[off, v] in spec.edits.iter().flatten() {
            let n = f.len();
            let b = f
                .get_mut(off)
                .ok_or_else(|| format!("edit at {off} beyond the {n} byte frame"))?;
            *b = v as u8;
        }
        if let Some(n) = spec.truncate {
            f.truncate(n);
        }
        Ok(f)
    }

    fn spec_of(t: &toml::Table) -> Result<PacketSpec, String> {
        toml::Value::Table(t.clone())
            .try_into()
            .map_err(|e: toml::de::Error| e.to_string().trim().to_string())
    }

    fn parse_error(name: &str) -> Result<ParseError, String> {
        ParseError::ALL
            .iter()
            .copied()
            .find(|e| e.name() == name)
            .ok_or_else(|| format!("unknown malformed reason {name:?}"))
    }

    /// Loads `dir/configs/*.toml` and `dir/cases.toml`, validates every
    /// configuration and builds every frame.
    pub fn load(dir: &Path) -> Result<Corpus, String> {
        let mut configs = BTreeMap::new();
        let cdir = dir.join("configs");
        let mut names: Vec<PathBuf> = std::fs::read_dir(&cdir)
            .map_err(|e| format!("{}: {e}", cdir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        names.sort();
        for p in names {
            let name = p
                .file_stem()
                .and_then(|s| s.to_str())
                .ok_or("bad config file name")?
                .to_string();
            let text = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            let src = p.display().to_string();
            let plan = Config::parse(&text, &src)
                .and_then(|c| c.validate(&src))
                .map_err(|e| e.to_string())?;
            configs.insert(name, (text, plan));
        }
        let cpath = dir.join("cases.toml");
        let text =
            std::fs::read_to_string(&cpath).map_err(|e| format!("{}: {e}", cpath.display()))?;
        let file: CasesFile =
            toml::from_str(&text).map_err(|e| format!("{}: {e}", cpath.display()))?;
        let mut cases = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        for c in file.cases {
            let ctx = |e: String| format!("case {}: {e}", c.name);
            if !seen.insert(c.name.clone()) {
                return Err(ctx("duplicate case name".into()));
            }
            let (_, plan) = configs.get(&c.config).ok_or_else(|| {
                ctx(format!(
                    "no configuration {:?} in {}",
                    c.config,
                    cdir.display()
                ))
            })?;
            let spec = spec_of(&c.packet).map_err(|e| ctx(format!("packet: {e}")))?;
            let frame = build_frame(&spec).map_err(|e| ctx(format!("packet: {e}")))?;
            let mal = c
                .expect
                .malformed
                .as_deref()
                .map(parse_error)
                .transpose()
                .map_err(ctx)?;
            let need_mal = || mal.ok_or_else(|| ctx("expect.malformed names the reason".into()));
            let expect = match (&c.expect.forward, &c.expect.drop, &c.expect.cpu) {
                (Some(fw), None, None) => {
                    let mut outs = Vec::new();
                    for (port, over) in fw {
                        if !plan.ports.iter().any(|p| &p.name == port) {
                            return Err(ctx(format!(
                                "forward to {port:?}, not a port of {}",
                                c.config
                            )));
                        }
                        let mut t = c.packet.clone();
                        for (k, v) in over {
                            t.insert(k.clone(), v.clone());
                        }
                        let s =
                            spec_of(&t).map_err(|e| ctx(format!("expect.forward.{port}: {e}")))?;
                        outs.push((
                            port.clone(),
                            build_frame(&s)
                                .map_err(|e| ctx(format!("expect.forward.{port}: {e}")))?,
                        ));
                    }
                    if outs.is_empty() {
                        return Err(ctx("expect.forward names no port".into()));
                    }
                    Expect::Forward(outs)
                }
                (None, Some(d), None) => Expect::Drop(match d.as_str() {
                    "mac_control" => DropReason::MacControl,
                    "malformed" => DropReason::Malformed(need_mal()?),
                    "no_route" => DropReason::NoRoute,
                    "no_member" => DropReason::NoMember,
                    "no_neighbour" => DropReason::NoNeighbour,
                    other => return Err(ctx(format!("unknown drop reason {other:?}"))),
                }),
                (None, None, Some(r)) => Expect::Cpu(match r.as_str() {
                    "classified" => CpuReason::Classified,
                    "unknown_port" => CpuReason::UnknownPort,
                    "malformed" => CpuReason::Malformed(need_mal()?),
                    "not_ip" => CpuReason::NotIp,
                    "not_for_us" => CpuReason::NotForUs,
                    "ttl_expired" => CpuReason::TtlExpired,
                    "local" => CpuReason::Local,
                    other => return Err(ctx(format!("unknown cpu reason {other:?}"))),
                }),
                _ => return Err(ctx("expect needs exactly one of forward, drop, cpu".into())),
            };
            let needs_tc = match expect {
                Expect::Forward(_) => true,
                Expect::Cpu(r) => !matches!(r, CpuReason::UnknownPort | CpuReason::Malformed(_)),
                Expect::Drop(_) => false,
            };
            if needs_tc && c.expect.tc.is_none() {
                return Err(ctx(
                    "expect.tc is required (forwarded and classified frames)".into(),
                ));
            }
            cases.push(Case {
                name: c.name,
                about: c.about,
                config: c.config,
                port: c.port,
                frame,
                expect,
                tc: c.expect.tc,
                skip_stf: c.skip_stf,
            });
        }
        Ok(Corpus { configs, cases })
    }

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02X}")).collect()
    }

    /// Longest-prefix match over the plan's routes.
    fn lookup(plan: &Plan, dst: IpAddr) -> Option<RouteTarget> {
        let bits = |a: IpAddr| -> (u128, u32) {
            match a {
                IpAddr::V4(v) => (u128::from(u32::from(v)), 32),
                IpAddr::V6(v) => (u128::from(v), 128),
            }
        };
        let (d, w) = bits(dst);
        plan.routes
            .iter()
            .filter(|r| {
                let (a, aw) = bits(r.addr);
                let len = u32::from(r.len);
                aw == w && (len == 0 || (a >> (w - len)) == (d >> (w - len)))
            })
            .max_by_key(|r| r.len)
            .map(|r| r.target)
    }

    /// The port bmv2 sends `frame` out of, for a case routed through a group
    /// (first packet of its flow, idle ports): the member of the bucket of
    /// the v1model program's CRC-32 flow hash. `Err` when the program's
    /// choice is random (spray) or the frame is not routed by a group.
    pub fn bmv2_group_port(plan: &Plan, frame: &[u8]) -> Result<Option<usize>, String> {
        let p = parse(frame).map_err(|e| format!("does not parse: {e:?}"))?;
        let l3 = usize::from(p.l3_off);
        let (src, dst, daddr) = match p.l3 {
            L3::Ipv4 => {
                let s: [u8; 4] = frame[l3 + 12..l3 + 16].try_into().unwrap();
                let d: [u8; 4] = frame[l3 + 16..l3 + 20].try_into().unwrap();
                (
                    dataplane_common::lb::ipv4_mapped(s),
                    dataplane_common::lb::ipv4_mapped(d),
                    IpAddr::from(d),
                )
            }
            L3::Ipv6 => {
                let s: [u8; 16] = frame[l3 + 8..l3 + 24].try_into().unwrap();
                let d: [u8; 16] = frame[l3 + 24..l3 + 40].try_into().unwrap();
                (s, d, IpAddr::from(d))
            }
            _ => return Ok(None),
        };
        let Some(RouteTarget::Group(gi)) = lookup(plan, daddr) else {
            return Ok(None);
        };
        let g = &plan.groups[usize::from(gi)];
        if g.mode == MODE_SPRAY {
            return Err(format!(
                "group {} sprays: bmv2 picks a random bucket per packet",
                g.name
            ));
        }
        let qp = if p.roce { p.bth.dest_qp } else { 0 };
        let (sport, dport) = if p.udp { (p.sport, p.dport) } else { (0, 0) };
        let h = bmv2_flow_hash(plan.hash_seed, src, dst, p.ip_proto, sport, dport, qp);
        let built =
            dataplane_config::group_value(plan, g, &|_| true, None).map_err(|e| e.to_string())?;
        let slot = built.buckets[(h & 127) as usize];
        let nh = built.members[usize::from(slot) & 15].id;
        Ok(Some(plan.nexthops[usize::from(nh)].port))
    }

    /// The STF test of a case for the v1model program (p4c's
    /// run-bmv2-test.py): its configuration's entries, the input packet and
    /// the expected output. `Err` when the case has no STF form.
    pub fn stf(corpus: &Corpus, case: &Case, opts: &Options) -> Result<String, String> {
        if let Some(why) = &case.skip_stf {
            return Err(format!("skipped: {why}"));
        }
        let (_, plan) = &corpus.configs[&case.config];
        let ops = table_ops(plan, Target::Bmv2, opts).map_err(|e| e.to_string())?;
        let port_no = |name: &str| -> u32 {
            plan.ports
                .iter()
                .position(|p| p.name == name)
                .map(|i| i as u32)
                .unwrap_or(UNCONFIGURED_PORT)
        };
        let mut s = String::new();
        s.push_str(&format!("# {}: {}\n", case.name, case.about));
        s.push_str(&format!(
            "# conformance corpus case, configuration {:?}; program p4/v1model/dataplane.p4\n",
            case.config
        ));
        s.push_str("# generated by dataplane_p4::corpus::stf; WRED entries (range keys) have no STF form\n");
        for op in &ops {
            match op {
                Op::Entry(e) => {
                    if let Some(line) = stf_entry(e) {
                        s.push_str(&line);
                        s.push('\n');
                    }
                }
                Op::CloneSession { session, port } => {
                    s.push_str(&format!("mirroring_add {session} {port}\n"))
                }
                Op::QueueRate { .. } | Op::QueueDepth { .. } => {}
            }
        }
        let inport = port_no(&case.port);
        s.push_str(&format!("packet {inport} {}\n", hex(&case.frame)));
        match &case.expect {
            Expect::Forward(outs) => {
                let (port, frame) = if outs.len() == 1 {
                    (outs[0].0.clone(), outs[0].1.clone())
                } else {
                    let p = bmv2_group_port(plan, &case.frame)?
                        .ok_or("several forward ports but the frame is not routed by a group")?;
                    let name = &plan.ports[p].name;
                    let f = outs.iter().find(|(n, _)| n == name).ok_or_else(|| {
                        format!("bmv2 would pick {name}, which the case does not list")
                    })?;
                    (f.0.clone(), f.1.clone())
                };
                s.push_str(&format!("expect {} {}$\n", port_no(&port), hex(&frame)));
            }
            Expect::Drop(r) => s.push_str(&format!(
                "# dropped ({r:?}): no packet expected on the ports this test opens\n"
            )),
            Expect::Cpu(r) => {
                let detail = match r {
                    CpuReason::UnknownPort => 0,
                    CpuReason::Malformed(e) => *e as u8 + 1,
                    _ => case.tc.unwrap_or(0),
                };
                let mut out = vec![r.code(), detail];
                out.extend_from_slice(&(inport as u16).to_be_bytes());
                out.extend_from_slice(&case.frame);
                s.push_str(&format!("expect {BMV2_CPU_PORT} {}$\n", hex(&out)));
            }
        }
        Ok(s)
    }

    /// The STF files written and the cases skipped, with the reason.
    pub type StfFiles = (Vec<PathBuf>, Vec<(String, String)>);

    /// Writes `<case>.stf` for every case that has an STF form into `dir`;
    /// returns the files written and the cases skipped with the reason.
    pub fn write_stf(corpus: &Corpus, dir: &Path, opts: &Options) -> Result<StfFiles, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut written = Vec::new();
        let mut skipped = Vec::new();
        for c in &corpus.cases {
            match stf(corpus, c, opts) {
                Ok(text) => {
                    let p = dir.join(format!("{}.stf", c.name));
                    std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))?;
                    written.push(p);
                }
                Err(why) if c.skip_stf.is_some() => skipped.push((c.name.clone(), why)),
                Err(e) => return Err(format!("case {}: {e}", c.name)),
            }
        }
        Ok((written, skipped))
    }
}
