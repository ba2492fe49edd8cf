//! The configuration reference: every key of the TOML file with its type,
//! default, range and SONiC name, rendered as the guide's page
//! `docs/src/reference/config.md` (`dataplane config reference`).
//!
//! `tests/reference.rs` holds this table to the schema: a key the schema
//! accepts and the table lacks (or the other way round), a default that is
//! not the schema's, or a committed page that differs from [`markdown`]
//! fails the test.

/// A section of the file.
pub struct Section {
    /// Id used by [`Key::section`]: the TOML path with `NAME` for a
    /// user-chosen table name (`wred_profile.NAME`) and `.members` /
    /// `.policy` for inline tables of an array.
    pub id: &'static str,
    /// How it is written in the file.
    pub header: &'static str,
    /// SONiC CONFIG_DB table it corresponds to ("-" if none).
    pub sonic: &'static str,
    pub about: &'static str,
    /// Free-form tables (maps): keys are data, not names; no key rows.
    pub free_form: bool,
}

/// One key of a section.
pub struct Key {
    pub section: &'static str,
    pub key: &'static str,
    pub ty: &'static str,
    /// A TOML literal when the schema has a default (checked against it by
    /// the tests), else a sentence in parentheses.
    pub default: &'static str,
    pub range: &'static str,
    pub sonic: &'static str,
    pub meaning: &'static str,
}

pub const SECTIONS: &[Section] = &[
    Section { id: "switch", header: "[switch]", sonic: "- (not in CONFIG_DB)", about: "The instance and switch-wide classification settings.", free_form: false },
    Section { id: "dscp_to_tc_map.NAME", header: "[dscp_to_tc_map.NAME]", sonic: "DSCP_TO_TC_MAP", about: "A DSCP to traffic class map: `\"DSCP\" = TC` entries (DSCP 0-63, TC 0-7) and `default = TC` for DSCPs not listed. `AZURE` (SONiC's default map) is built in.", free_form: true },
    Section { id: "dot1p_to_tc_map.NAME", header: "[dot1p_to_tc_map.NAME]", sonic: "DOT1P_TO_TC_MAP", about: "An 802.1p priority to traffic class map: `\"PCP\" = TC` (0-7). `AZURE` is built in.", free_form: true },
    Section { id: "tc_to_dscp_map.NAME", header: "[tc_to_dscp_map.NAME]", sonic: "TC_TO_DSCP_MAP", about: "A traffic class to DSCP map: `\"TC\" = DSCP`; used only by trimming's `dscp_value = \"from-tc\"` through `[[port]] tc_to_dscp_map`.", free_form: true },
    Section { id: "port", header: "[[port]]", sonic: "PORT, PORT_QOS_MAP, BUFFER_PG, BUFFER_QUEUE", about: "A switch port (a Linux interface). At least one, at most 64; the buffer model covers the first 16.", free_form: false },
    Section { id: "nexthop", header: "[[nexthop]]", sonic: "- (static neighbours)", about: "A static neighbour: a port and the MAC frames are rewritten to. At most 256.", free_form: false },
    Section { id: "group", header: "[[group]]", sonic: "-", about: "A next-hop group with up to 16 weighted members and a 128-bucket resilient table. At most 64.", free_form: false },
    Section { id: "group.members", header: "[[group]] members = [{ ... }]", sonic: "-", about: "One member of a group.", free_form: false },
    Section { id: "route", header: "[[route]]", sonic: "- (static routes)", about: "A static route: a prefix and exactly one of `nexthop`, `group`, `local`.", free_form: false },
    Section { id: "routing", header: "[routing]", sonic: "- (FRR installs into the kernel)", about: "Routes from the kernel FIB over netlink (FRR, bird, `ip route`). Absent: static routes only.", free_form: false },
    Section { id: "routing.policy", header: "[routing] policy = [{ ... }]", sonic: "-", about: "A per-prefix load-balancing mode for learned routes (longest match).", free_form: false },
    Section { id: "buffer", header: "[buffer]", sonic: "BUFFER_POOL, BUFFER_PROFILE", about: "The buffer model (ECN, PFC, headroom). Absent: no model, no PFC generation.", free_form: false },
    Section { id: "wred_profile.NAME", header: "[wred_profile.NAME]", sonic: "WRED_PROFILE", about: "A WRED/ECN profile (green fields only: the model colours every packet green). `AZURE_LOSSLESS` (1 MiB / 2 MiB / 5 %, ecn_all) is built in.", free_form: false },
    Section { id: "buffer_profile.NAME", header: "[buffer_profile.NAME]", sonic: "BUFFER_PROFILE", about: "The discard action of the queues a port's `buffer_queue` gives this profile.", free_form: false },
    Section { id: "switch_trimming", header: "[switch_trimming]", sonic: "SWITCH_TRIMMING|GLOBAL", about: "Packet trimming. Needs `[buffer]`. Absent: no trimming.", free_form: false },
    Section { id: "pfcwd", header: "[pfcwd]", sonic: "PFC_WD", about: "The PFC watchdog on every lossless queue. Absent: off.", free_form: false },
    Section { id: "dcbx", header: "[dcbx]", sonic: "- (lldpad / LLDP)", about: "DCBX (LLDP with IEEE 802.1Qaz TLVs) on every port. Absent: off.", free_form: false },
    Section { id: "uet", header: "[uet]", sonic: "-", about: "Ultra Ethernet (UDP 4793) beside RoCEv2. Absent: UET is classified by the ports' maps like any packet.", free_form: false },
];

const I: &str = "integer";
const S: &str = "string";
const B: &str = "boolean";

pub const KEYS: &[Key] = &[
    // [switch]
    Key { section: "switch", key: "name", ty: S, default: "\"default\"", range: "an interface-like name (no `/`, no spaces)", sonic: "-", meaning: "The instance: pin directory `/sys/fs/bpf/dataplane/NAME`, lock, state directory, `--instance`." },
    Key { section: "switch", key: "cnp_tc", ty: I, default: "6", range: "0-7", sonic: "-", meaning: "Class of RoCEv2 CNPs (BTH opcode 0x81)." },
    Key { section: "switch", key: "malformed", ty: S, default: "\"pass\"", range: "`pass` (to the kernel) or `drop`", sonic: "-", meaning: "What happens to malformed frames (per port: `[[port]] malformed`)." },
    Key { section: "switch", key: "hash_seed", ty: I, default: "(derived from `name`)", range: "0-4294967295", sonic: "-", meaning: "Seed of the flow hash; the default differs per switch name, so tiers hash differently." },
    // [[port]]
    Key { section: "port", key: "name", ty: S, default: "(required)", range: "an existing interface, 1-15 characters", sonic: "PORT key / alias", meaning: "The Linux interface." },
    Key { section: "port", key: "trust", ty: S, default: "\"dscp\"", range: "`dscp` or `dot1p`", sonic: "PORT_QOS_MAP (which map is set)", meaning: "Which header field classifies received frames." },
    Key { section: "port", key: "dscp_to_tc_map", ty: S, default: "\"AZURE\"", range: "a `[dscp_to_tc_map.NAME]` or `AZURE`", sonic: "PORT_QOS_MAP dscp_to_tc_map", meaning: "DSCP map of a `dscp` port." },
    Key { section: "port", key: "dot1p_to_tc_map", ty: S, default: "\"AZURE\"", range: "a `[dot1p_to_tc_map.NAME]` or `AZURE`", sonic: "PORT_QOS_MAP dot1p_to_tc_map", meaning: "802.1p map of a `dot1p` port." },
    Key { section: "port", key: "pfc_enable", ty: S, default: "\"3,4\"", range: "priorities 0-7 separated by commas", sonic: "PORT_QOS_MAP pfc_enable", meaning: "The lossless priorities (PFC, headroom)." },
    Key { section: "port", key: "default_tc", ty: I, default: "0", range: "0-7", sonic: "-", meaning: "Class of frames the trusted field does not give one (e.g. untagged on a `dot1p` port)." },
    Key { section: "port", key: "malformed", ty: S, default: "(`switch.malformed`)", range: "`pass` or `drop`", sonic: "-", meaning: "Per-port override of `switch.malformed`." },
    Key { section: "port", key: "xdp_mode", ty: S, default: "\"auto\"", range: "`auto`, `native` or `generic`", sonic: "-", meaning: "XDP attach mode; `auto` falls back to generic where native is refused." },
    Key { section: "port", key: "mac", ty: S, default: "(read from the interface)", range: "a unicast MAC like \"02:00:00:00:00:01\"", sonic: "-", meaning: "Source MAC of routed frames and of PFC frames sent on the port." },
    Key { section: "port", key: "speed", ty: "string or integer", default: "(100G)", range: "\"100G\", \"25G\", \"400M\" or Mb/s as an integer; 1 Mb/s to 1.6 Tb/s", sonic: "PORT speed", meaning: "Line rate: the model's drain rate, pause time, utilisation. On a real NIC set it slightly below line rate (e.g. 95 %)." },
    Key { section: "port", key: "wred_profile", ty: S, default: "(\"AZURE_LOSSLESS\")", range: "a `[wred_profile.NAME]` or `AZURE_LOSSLESS`", sonic: "QUEUE wred_profile (lossless queues)", meaning: "ECN/WRED profile of the port's lossless queues." },
    Key { section: "port", key: "lossy_wred_profile", ty: S, default: "(none)", range: "a `[wred_profile.NAME]` or `AZURE_LOSSLESS`", sonic: "QUEUE wred_profile (lossy queues)", meaning: "ECN/WRED profile of the port's lossy queues." },
    Key { section: "port", key: "cable_length_m", ty: I, default: "(`[buffer] cable_length_m`)", range: "0-100000", sonic: "CABLE_LENGTH", meaning: "Cable length for the headroom formula." },
    Key { section: "port", key: "headroom_xoff", ty: I, default: "(SONiC's formula)", range: "bytes 0-4294967295", sonic: "BUFFER_PROFILE xoff", meaning: "Headroom per lossless PG instead of the formula." },
    Key { section: "port", key: "headroom_xon", ty: I, default: "(from the formula)", range: "bytes, at most `headroom_xoff`; needs `headroom_xoff`", sonic: "BUFFER_PROFILE xon", meaning: "XON point of an explicit headroom." },
    Key { section: "port", key: "buffer_queue", ty: "table", default: "(empty)", range: "keys: queue \"3\" or range \"0-2\" (lossy queues only); values: a `[buffer_profile.NAME]`", sonic: "BUFFER_QUEUE", meaning: "Buffer profiles of the port's queues (trimming)." },
    Key { section: "port", key: "tc_to_dscp_map", ty: S, default: "(none)", range: "a `[tc_to_dscp_map.NAME]`", sonic: "PORT_QOS_MAP tc_to_dscp_map", meaning: "Trim DSCP of this egress port with `dscp_value = \"from-tc\"`." },
    Key { section: "port", key: "far_notify", ty: B, default: "false", range: "-", sonic: "-", meaning: "Send far-side notifications to this port's peer: a lossless packet from this port that finds its egress queue at the ECN threshold tells the peer how long the queue needs to drain (at most every 10 us per port pair); the peer's `place` groups steer new flows by it. Needs the data plane's PFC path (`pfc_tx`)." },
    // [[nexthop]]
    Key { section: "nexthop", key: "name", ty: S, default: "(required)", range: "unique", sonic: "-", meaning: "Name routes and groups refer to." },
    Key { section: "nexthop", key: "port", ty: S, default: "(required)", range: "a `[[port]]` name", sonic: "-", meaning: "Port frames to this neighbour leave by." },
    Key { section: "nexthop", key: "mac", ty: S, default: "(required)", range: "a unicast MAC", sonic: "NEIGH", meaning: "The neighbour's MAC (destination of rewritten frames)." },
    // [[group]]
    Key { section: "group", key: "name", ty: S, default: "(required)", range: "unique", sonic: "-", meaning: "Name routes refer to." },
    Key { section: "group", key: "mode", ty: S, default: "\"hash\"", range: "`hash`, `flowlet`, `bandwidth`, `spray`, `place`", sonic: "-", meaning: "How a member is chosen (see the guide's load balancing chapter)." },
    Key { section: "group", key: "flowlet_timeout_us", ty: I, default: "100", range: "1-4000000", sonic: "-", meaning: "Gap after which a flow may move (`flowlet`, `bandwidth`)." },
    Key { section: "group", key: "uet_entropy", ty: B, default: "false", range: "-", sonic: "-", meaning: "UET packets keep the path of their entropy value (UDP source port) whatever `mode`." },
    Key { section: "group", key: "members", ty: "array of tables", default: "(required)", range: "1-16 members", sonic: "-", meaning: "The members, below." },
    Key { section: "group.members", key: "nexthop", ty: S, default: "(required)", range: "a `[[nexthop]]` name", sonic: "-", meaning: "The member's next hop." },
    Key { section: "group.members", key: "weight", ty: I, default: "1", range: "1-255", sonic: "-", meaning: "Share of the group's buckets." },
    // [[route]]
    Key { section: "route", key: "prefix", ty: S, default: "(required)", range: "IPv4 or IPv6 prefix without host bits; unique", sonic: "-", meaning: "Destination prefix (/32 and /128 go to the host tables)." },
    Key { section: "route", key: "nexthop", ty: S, default: "(none)", range: "a `[[nexthop]]` name", sonic: "-", meaning: "Route to one next hop." },
    Key { section: "route", key: "group", ty: S, default: "(none)", range: "a `[[group]]` name", sonic: "-", meaning: "Route to a group." },
    Key { section: "route", key: "local", ty: B, default: "false", range: "-", sonic: "-", meaning: "The switch's own address: frames go to the kernel." },
    // [routing]
    Key { section: "routing", key: "source", ty: S, default: "\"kernel\"", range: "`kernel` or `static`", sonic: "-", meaning: "Follow the kernel FIB, or static routes only." },
    Key { section: "routing", key: "table", ty: I, default: "254", range: "1-4294967295 except 255 (local)", sonic: "-", meaning: "Kernel routing table followed (254 = main)." },
    Key { section: "routing", key: "default_mode", ty: S, default: "\"hash\"", range: "a group mode", sonic: "-", meaning: "Mode of learned multipath groups." },
    Key { section: "routing", key: "flowlet_timeout_us", ty: I, default: "100", range: "1-4000000", sonic: "-", meaning: "Flowlet timeout of learned groups." },
    Key { section: "routing", key: "max_routes_v4", ty: I, default: "131072", range: "1-4194304", sonic: "-", meaning: "IPv4 route table size, fixed when the maps are created (another size is another layout: `dataplane down` first)." },
    Key { section: "routing", key: "max_routes_v6", ty: I, default: "32768", range: "1-1048576", sonic: "-", meaning: "IPv6 route table size, likewise." },
    Key { section: "routing", key: "policy", ty: "array of tables", default: "[]", range: "-", sonic: "-", meaning: "Per-prefix modes, below." },
    Key { section: "routing", key: "uet_entropy", ty: B, default: "false", range: "-", sonic: "-", meaning: "Learned groups place UET by its entropy value (as `[[group]] uet_entropy`)." },
    Key { section: "routing.policy", key: "prefix", ty: S, default: "(required)", range: "IPv4 or IPv6 prefix", sonic: "-", meaning: "Learned routes inside it get `mode` (longest match)." },
    Key { section: "routing.policy", key: "mode", ty: S, default: "(required)", range: "a group mode", sonic: "-", meaning: "Their group mode." },
    // [buffer]
    Key { section: "buffer", key: "pool_size", ty: I, default: "16777216", range: "bytes 1-4294967295", sonic: "BUFFER_POOL ingress_lossless_pool size", meaning: "The shared pool." },
    Key { section: "buffer", key: "dynamic_th", ty: I, default: "0", range: "-8..7", sonic: "BUFFER_PROFILE dynamic_th (lossless PG)", meaning: "Lossless PGs' threshold = 2^th x free shared buffer." },
    Key { section: "buffer", key: "lossy_dynamic_th", ty: I, default: "3", range: "-8..7", sonic: "BUFFER_PROFILE dynamic_th (lossy PG)", meaning: "The same for lossy PGs." },
    Key { section: "buffer", key: "reserve", ty: I, default: "0", range: "bytes 0-1073741824", sonic: "BUFFER_PROFILE size", meaning: "Bytes reserved per PG before the shared pool." },
    Key { section: "buffer", key: "xon_offset", ty: I, default: "3072", range: "bytes 0-1073741824", sonic: "BUFFER_PROFILE xon_offset", meaning: "XON hysteresis below the threshold." },
    Key { section: "buffer", key: "mtu", ty: I, default: "9100", range: "64-65535", sonic: "PORT mtu", meaning: "Headroom formula input; should equal the ports' MTU." },
    Key { section: "buffer", key: "cable_length_m", ty: I, default: "5", range: "0-100000", sonic: "CABLE_LENGTH", meaning: "Headroom formula input (per port: `[[port]] cable_length_m`)." },
    Key { section: "buffer", key: "response_us", ty: I, default: "(50 with the data plane's PFC path, 150 with the controller's)", range: "0-1000000", sonic: "-", meaning: "PFC decision-to-wire time the headroom covers." },
    Key { section: "buffer", key: "pfc_tx", ty: S, default: "\"auto\"", range: "`auto`, `dataplane` or `userspace`", sonic: "-", meaning: "Who sends PFC frames: the data plane where the kernel can (`auto`), always (`dataplane`, fails where it cannot), or the controller." },
    Key { section: "buffer", key: "tick_us", ty: I, default: "200", range: "10-1000000", sonic: "-", meaning: "Period of the model's timer (quiet queues drain, XON, refresh)." },
    // [wred_profile.NAME]
    Key { section: "wred_profile.NAME", key: "ecn", ty: S, default: "\"ecn_all\"", range: "SONiC's ecn modes (`ecn_none`, `ecn_green`, ..., `ecn_all`)", sonic: "WRED_PROFILE ecn", meaning: "Which colours are ECN-marked." },
    Key { section: "wred_profile.NAME", key: "green_min_threshold", ty: I, default: "(required)", range: "bytes 0-4294967295, at most `green_max_threshold`", sonic: "WRED_PROFILE green_min_threshold", meaning: "Queue bytes below which nothing is marked." },
    Key { section: "wred_profile.NAME", key: "green_max_threshold", ty: I, default: "(required)", range: "bytes 0-4294967295", sonic: "WRED_PROFILE green_max_threshold", meaning: "Queue bytes at or above which every ECT packet is marked." },
    Key { section: "wred_profile.NAME", key: "green_drop_probability", ty: I, default: "5", range: "0-100", sonic: "WRED_PROFILE green_drop_probability", meaning: "Marking probability at the maximum threshold, percent (linear in between)." },
    Key { section: "wred_profile.NAME", key: "wred_green_enable", ty: B, default: "false", range: "-", sonic: "WRED_PROFILE wred_green_enable", meaning: "In a lossy class, non-ECT packets on the curve are dropped." },
    // [buffer_profile.NAME]
    Key { section: "buffer_profile.NAME", key: "packet_discard_action", ty: S, default: "\"drop\"", range: "`drop` or `trim`", sonic: "BUFFER_PROFILE packet_discard_action", meaning: "What a queue with this profile does with a packet the shared buffer cannot admit." },
    // [switch_trimming]
    Key { section: "switch_trimming", key: "size", ty: I, default: "128", range: "64-9216", sonic: "SWITCH_TRIMMING size", meaning: "Bytes a trimmed packet keeps." },
    Key { section: "switch_trimming", key: "dscp_value", ty: "integer or string", default: "(required)", range: "0-63, or \"from-tc\"", sonic: "SWITCH_TRIMMING dscp_value", meaning: "DSCP of trimmed packets; `from-tc`: each egress port's `tc_to_dscp_map` entry for `tc_value`." },
    Key { section: "switch_trimming", key: "tc_value", ty: I, default: "(none; required with \"from-tc\")", range: "0-7", sonic: "SWITCH_TRIMMING tc_value", meaning: "The class whose DSCP trimmed packets get with `from-tc`." },
    Key { section: "switch_trimming", key: "queue_index", ty: "integer or string", default: "(required)", range: "0-7, or \"dynamic\"", sonic: "SWITCH_TRIMMING queue_index", meaning: "Queue of trimmed packets; `dynamic`: the class the ingress port's DSCP map gives the trim DSCP." },
    // [pfcwd]
    Key { section: "pfcwd", key: "detection_time_ms", ty: I, default: "200", range: "1-60000", sonic: "PFC_WD detection_time", meaning: "How long a storm must last before the action." },
    Key { section: "pfcwd", key: "restoration_time_ms", ty: I, default: "200", range: "1-60000", sonic: "PFC_WD restoration_time", meaning: "Quiet time before a `drop`/`forward` queue is restored." },
    Key { section: "pfcwd", key: "poll_interval_ms", ty: I, default: "200", range: "1-60000, at most `detection_time_ms`", sonic: "PFC_WD POLL_INTERVAL", meaning: "How often queues are checked." },
    Key { section: "pfcwd", key: "action", ty: S, default: "\"drop\"", range: "`drop`, `forward` or `alert`", sonic: "PFC_WD action", meaning: "What a storm does to the queue." },
    // [dcbx]
    Key { section: "dcbx", key: "enable", ty: B, default: "true", range: "-", sonic: "-", meaning: "Run DCBX (false: the section is kept but off)." },
    Key { section: "dcbx", key: "tx_interval_s", ty: I, default: "30", range: "1-3600", sonic: "LLDP msgTxInterval", meaning: "Seconds between LLDP frames." },
    Key { section: "dcbx", key: "tx_hold", ty: I, default: "4", range: "1-100", sonic: "LLDP msgTxHold", meaning: "TTL = `tx_interval_s` x `tx_hold`." },
    Key { section: "dcbx", key: "fast_tx_count", ty: I, default: "4", range: "1-8", sonic: "LLDP txFastInit", meaning: "Frames one second apart at start, link up, new peer, changed advertisement." },
    Key { section: "dcbx", key: "willing", ty: B, default: "false", range: "-", sonic: "-", meaning: "The willing bit advertised (the switch never adopts a peer's settings)." },
    Key { section: "dcbx", key: "roce_priority", ty: I, default: "(each port's lowest lossless priority)", range: "0-7, lossless on every port", sonic: "-", meaning: "Priority of UDP 4791 in the application table." },
    Key { section: "dcbx", key: "app_dscp", ty: S, default: "\"lossless\"", range: "`lossless`, `all` or `none`", sonic: "-", meaning: "DSCP entries of the application table." },
    Key { section: "dcbx", key: "ets_bandwidth", ty: "array of integers", default: "[12, 12, 12, 12, 13, 13, 13, 13]", range: "8 percentages; ETS classes sum to 100, strict ones 0", sonic: "-", meaning: "ETS bandwidth per traffic class (declared, not scheduled)." },
    Key { section: "dcbx", key: "ets_tsa", ty: "array of strings", default: "[\"ets\", \"ets\", \"ets\", \"ets\", \"ets\", \"ets\", \"ets\", \"ets\"]", range: "8 of `ets` or `strict`", sonic: "-", meaning: "Transmission selection per traffic class." },
    Key { section: "dcbx", key: "reco_bandwidth", ty: "array of integers", default: "(`ets_bandwidth`)", range: "as `ets_bandwidth`", sonic: "-", meaning: "ETS Recommendation for willing peers." },
    Key { section: "dcbx", key: "reco_tsa", ty: "array of strings", default: "(`ets_tsa`)", range: "as `ets_tsa`", sonic: "-", meaning: "ETS Recommendation's selection." },
    // [uet]
    Key { section: "uet", key: "feedback_tc", ty: I, default: "(the DSCP map decides)", range: "0-7", sonic: "-", meaning: "Class of UET feedback (PDS ACK, NACK, control), as `cnp_tc` for CNPs." },
];

/// Top-level keys of the file, in the order of [`SECTIONS`] (a test holds
/// this to the schema too).
pub fn top_level_keys() -> Vec<&'static str> {
    let mut v: Vec<&str> = SECTIONS
        .iter()
        .map(|s| s.id.split('.').next().unwrap_or(s.id))
        .collect();
    v.dedup();
    v
}

/// The page `docs/src/reference/config.md`.
pub fn markdown() -> String {
    let mut out = String::new();
    out.push_str(
        "# Configuration keys\n\n\
         <!-- generated by `dataplane config reference`; do not edit: \
         dataplane-config/src/reference.rs is the source, and a test fails \
         when this page, that table or the schema differ -->\n\n\
         Every key of the TOML file, by section: its type, its default when \
         absent, the values accepted, and the SONiC CONFIG_DB field it \
         corresponds to. Unknown keys and sections are refused. How the \
         sections fit together: [Configuration](../configuration.md).\n",
    );
    for s in SECTIONS {
        out.push_str(&format!("\n## `{}`\n\n", s.header));
        out.push_str(&format!("{}\n\nSONiC: {}.\n", s.about, s.sonic));
        if s.free_form {
            continue;
        }
        out.push_str(
            "\n| key | type | default | range | SONiC | meaning |\n|---|---|---|---|---|---|\n",
        );
        for k in KEYS.iter().filter(|k| k.section == s.id) {
            let default = if k.default.starts_with('(') {
                k.default
                    .trim_start_matches('(')
                    .trim_end_matches(')')
                    .to_string()
            } else {
                format!("`{}`", k.default)
            };
            out.push_str(&format!(
                "| `{}` | {} | {} | {} | {} | {} |\n",
                k.key,
                k.ty,
                default,
                k.range.replace('|', "\\|"),
                k.sonic,
                k.meaning.replace('|', "\\|")
            ));
        }
    }
    out
}
