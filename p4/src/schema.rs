//! The schema: the tables and actions of the P4 programs that the generator
//! fills (names, `@id`s, key fields, parameters, which targets have them).

use crate::target::{Target, BMV2, BOTH, TOFINO};

const ING: &str = "DpIngress";
pub(crate) const EG: &str = "DpEgress";

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

/// `qualified` and `on` of a table or action spec.
macro_rules! declared_in_a_control {
    ($spec:ty) => {
        impl $spec {
            /// `Control.name`, as bmv2 and P4Runtime name it.
            pub fn qualified(&self) -> String {
                format!("{}.{}", self.control, self.name)
            }

            /// Whether `t`'s program has it.
            pub fn on(&self, t: Target) -> bool {
                self.targets & t.mask() != 0
            }
        }
    };
}

declared_in_a_control!(TableSpec);

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

declared_in_a_control!(ActionSpec);

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
        name: "place_cfg",
        id: 0x0200_0016,
        keys: &[k("out_port", 9, Exact)],
        actions: &["set_place"],
        targets: BMV2,
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
        name: "trim_cfg",
        id: 0x0200_0012,
        keys: &[k("out_port", 9, Exact)],
        actions: &["set_trim"],
        targets: BMV2,
    },
    TableSpec {
        control: ING,
        name: "trim_dyn_queue",
        id: 0x0200_0013,
        keys: &[k("dscp_map", 8, Exact), k("trim_dscp", 6, Exact)],
        actions: &["set_trim_queue"],
        targets: BMV2,
    },
    TableSpec {
        control: ING,
        name: "uet_cfg",
        id: 0x0200_0014,
        keys: &[],
        actions: &["set_uet"],
        targets: BMV2,
    },
    TableSpec {
        control: ING,
        name: "group_uet",
        id: 0x0200_0015,
        keys: &[k("grp", 16, Exact)],
        actions: &["set_group_uet"],
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
        params: &[("mode", 3), ("flowlet_timeout", 32)],
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
        name: "set_place",
        id: 0x0100_0016,
        params: &[("wire_shift", 8)],
        targets: BMV2,
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
        name: "set_trim",
        id: 0x0100_0012,
        params: &[
            ("size", 16),
            ("dscp", 6),
            ("queue", 3),
            ("dynamic", 1),
            ("queues", 8),
        ],
        targets: BMV2,
    },
    ActionSpec {
        control: ING,
        name: "set_trim_queue",
        id: 0x0100_0013,
        params: &[("queue", 3)],
        targets: BMV2,
    },
    ActionSpec {
        control: ING,
        name: "set_uet",
        id: 0x0100_0014,
        params: &[("feedback", 1), ("feedback_tc", 3)],
        targets: BMV2,
    },
    ActionSpec {
        control: ING,
        name: "set_group_uet",
        id: 0x0100_0015,
        params: &[],
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

pub(crate) fn table(target: Target, name: &str) -> &'static TableSpec {
    TABLES
        .iter()
        .find(|t| t.name == name && t.on(target))
        .unwrap_or_else(|| panic!("p4 schema: no table {name} on {target}"))
}

pub(crate) fn action(target: Target, name: &str) -> &'static ActionSpec {
    ACTIONS
        .iter()
        .find(|a| a.name == name && a.on(target))
        .unwrap_or_else(|| panic!("p4 schema: no action {name} on {target}"))
}
