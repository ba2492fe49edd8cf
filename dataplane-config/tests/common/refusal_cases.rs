// The refusal table: one case per refusal of the configuration (every
// check of dataplane-config/src/validate and the TOML reader's), each a
// small edit of one valid base configuration, with the field the message
// must name and a part of what it must say. Shared by the unit test
// (dataplane-config/tests/refusals.rs) and the reload test against a
// running instance (testbed/tests/reload_refusals.rs), which fills in real
// interface names for @P0/@P1 and the instance for @NAME.

/// A valid configuration touching every section: two ports, maps, next
/// hops, a group, routes, the buffer model, a WRED profile, the watchdog.
pub const BASE: &str = r#"[switch]
name = "@NAME"
cnp_tc = 6
malformed = "pass"

[dscp_to_tc_map.ROCE]
default = 0
"26" = 3
"48" = 6

[dot1p_to_tc_map.PCP]
"3" = 3

[[port]]
name = "@P0"
dscp_to_tc_map = "ROCE"
pfc_enable = "3,4"
speed = "10G"

[[port]]
name = "@P1"
trust = "dot1p"
dot1p_to_tc_map = "PCP"
pfc_enable = "3"
speed = "10G"
wred_profile = "MINE"

[[nexthop]]
name = "nh0"
port = "@P0"
mac = "02:00:00:00:10:01"

[[nexthop]]
name = "nh1"
port = "@P1"
mac = "02:00:00:00:10:02"

[[group]]
name = "both"
mode = "hash"
members = [{ nexthop = "nh0" }, { nexthop = "nh1", weight = 2 }]

[[route]]
prefix = "198.18.10.0/24"
nexthop = "nh0"

[[route]]
prefix = "2001:db8:10::/48"
group = "both"

[buffer]
pool_size = 16777216
xon_offset = 3072

[wred_profile.MINE]
ecn = "ecn_all"
green_min_threshold = 150000
green_max_threshold = 1500000

[pfcwd]
detection_time_ms = 200
restoration_time_ms = 200
poll_interval_ms = 100
action = "drop"
"#;

/// How a case changes the base.
pub enum Edit {
    /// Replace the first occurrence of the text (which must occur).
    Replace(&'static str, &'static str),
    /// Append to the end.
    Append(&'static str),
    /// The whole file, bytes.
    Whole(&'static [u8]),
    /// Append `n` copies of a section (`{i}` numbered).
    Repeat(&'static str, usize),
}

pub struct Case {
    pub name: &'static str,
    pub edit: Edit,
    /// The field the message names (`@P0`/`@P1` filled in).
    pub field: &'static str,
    /// Part of the message.
    pub says: &'static str,
}

/// The base with the names filled in.
#[allow(dead_code)] // (used by the reload test only)
pub fn base(name: &str, p0: &str, p1: &str) -> String {
    BASE.replace("@NAME", name)
        .replace("@P0", p0)
        .replace("@P1", p1)
}

/// The case's file contents with the names filled in.
pub fn render(c: &Case, name: &str, p0: &str, p1: &str) -> Vec<u8> {
    let fill = |t: &str| {
        t.replace("@NAME", name)
            .replace("@P0", p0)
            .replace("@P1", p1)
    };
    let base = BASE.to_string();
    let text = match &c.edit {
        Edit::Replace(a, b) => {
            assert!(
                base.contains(a),
                "case {}: {a:?} is not in the base",
                c.name
            );
            base.replacen(a, b, 1)
        }
        Edit::Append(t) => format!("{base}\n{t}\n"),
        Edit::Whole(b) => return b.to_vec(),
        Edit::Repeat(t, n) => {
            let mut s = base;
            for i in 0..*n {
                s.push_str(&t.replace("{i}", &i.to_string()));
            }
            s
        }
    };
    fill(&text).into_bytes()
}

/// The field as it appears in messages, with the names filled in.
pub fn field(c: &Case, p0: &str, p1: &str) -> String {
    c.field.replace("@P0", p0).replace("@P1", p1)
}

macro_rules! case {
    ($name:expr, $edit:expr, $field:expr, $says:expr) => {
        Case {
            name: $name,
            edit: $edit,
            field: $field,
            says: $says,
        }
    };
}

use Edit::*;

pub fn cases() -> Vec<Case> {
    vec![
        // the README's promises
        case!("duplicate prefix", Append("[[route]]\nprefix = \"198.18.10.0/24\"\nnexthop = \"nh1\""), "route[2] (198.18.10.0/24).prefix", "duplicate prefix"),
        case!("zero weight", Replace("weight = 2", "weight = 0"), "group[0] (both).members[1].weight", "expected a weight 1-255, got 0"),
        case!("negative weight", Replace("weight = 2", "weight = -3"), "group[0] (both).members[1].weight", "got -3"),
        case!("weight above 255", Replace("weight = 2", "weight = 256"), "group[0] (both).members[1].weight", "got 256"),
        case!("unknown mode", Replace("mode = \"hash\"", "mode = \"random\""), "group[0] (both).mode", "expected one of hash, flowlet, bandwidth, spray, place, got \"random\""),
        case!("next hop on an unknown port", Replace("port = \"@P1\"", "port = \"nosuch9\""), "nexthop[1] (nh1).port", "expected the name of a [[port]], got \"nosuch9\""),
        case!("xon > xoff", Replace("wred_profile = \"MINE\"", "wred_profile = \"MINE\"\nheadroom_xoff = 20000\nheadroom_xon = 30000"), "port[1] (@P1).headroom_xon", "expected xon <= xoff"),
        case!("headroom > pool", Replace("pool_size = 16777216", "pool_size = 1000"), "port[0] (@P0).headroom_xoff", "does not fit the pool of 1000 bytes"),
        case!("configured headroom > pool", Replace("wred_profile = \"MINE\"", "headroom_xoff = 40000000"), "port[1] (@P1).headroom_xoff", "does not fit the pool"),
        // [buffer] out of range
        case!("pool_size 0", Replace("pool_size = 16777216", "pool_size = 0"), "buffer.pool_size", "expected bytes 1-4294967295, got 0"),
        case!("pool_size above u32", Replace("pool_size = 16777216", "pool_size = 4294967296"), "buffer.pool_size", "got 4294967296"),
        case!("dynamic_th 8", Replace("xon_offset = 3072", "xon_offset = 3072\ndynamic_th = 8"), "buffer.dynamic_th", "expected an exponent -8-7, got 8"),
        case!("lossy_dynamic_th -9", Replace("xon_offset = 3072", "xon_offset = 3072\nlossy_dynamic_th = -9"), "buffer.lossy_dynamic_th", "got -9"),
        case!("reserve negative", Replace("xon_offset = 3072", "xon_offset = 3072\nreserve = -1"), "buffer.reserve", "got -1"),
        case!("xon_offset huge", Replace("xon_offset = 3072", "xon_offset = 9223372036854775807"), "buffer.xon_offset", "got 9223372036854775807"),
        case!("mtu 63", Replace("xon_offset = 3072", "xon_offset = 3072\nmtu = 63"), "buffer.mtu", "expected bytes 64-65535, got 63"),
        case!("cable negative", Replace("xon_offset = 3072", "xon_offset = 3072\ncable_length_m = -5"), "buffer.cable_length_m", "got -5"),
        case!("response_us above 1 s", Replace("xon_offset = 3072", "xon_offset = 3072\nresponse_us = 1000001"), "buffer.response_us", "got 1000001"),
        case!("tick_us 9", Replace("xon_offset = 3072", "xon_offset = 3072\ntick_us = 9"), "buffer.tick_us", "expected microseconds 10-1000000, got 9"),
        case!("more ports than the model", Repeat("\n[[port]]\nname = \"x{i}\"\n", 15), "buffer", "covers at most 16 ports"),
        // WRED
        case!("wred min > max", Replace("green_min_threshold = 150000", "green_min_threshold = 1500001"), "wred_profile.MINE", "green_min_threshold <= green_max_threshold"),
        case!("wred threshold negative", Replace("green_min_threshold = 150000", "green_min_threshold = -1"), "wred_profile.MINE.green_min_threshold", "got -1"),
        case!("wred probability 101", Replace("green_max_threshold = 1500000", "green_max_threshold = 1500000\ngreen_drop_probability = 101"), "wred_profile.MINE.green_drop_probability", "expected a percentage 0-100, got 101"),
        case!("wred unknown ecn", Replace("ecn = \"ecn_all\"", "ecn = \"ecn_some\""), "wred_profile.MINE.ecn", "got \"ecn_some\""),
        case!("wred named like the built-in", Append("[wred_profile.AZURE_LOSSLESS]\ngreen_min_threshold = 1\ngreen_max_threshold = 2"), "wred_profile.AZURE_LOSSLESS", "built in"),
        case!("port wred unknown", Replace("wred_profile = \"MINE\"", "wred_profile = \"THEIRS\""), "port[1] (@P1).wred_profile", "got \"THEIRS\""),
        case!("port lossy wred unknown", Replace("wred_profile = \"MINE\"", "lossy_wred_profile = \"THEIRS\""), "port[1] (@P1).lossy_wred_profile", "got \"THEIRS\""),
        // [pfcwd]
        case!("pfcwd detection 0", Replace("detection_time_ms = 200", "detection_time_ms = 0"), "pfcwd.detection_time_ms", "expected 1-60000 milliseconds, got 0"),
        case!("pfcwd restoration huge", Replace("restoration_time_ms = 200", "restoration_time_ms = 60001"), "pfcwd.restoration_time_ms", "got 60001"),
        case!("pfcwd poll > detection", Replace("poll_interval_ms = 100", "poll_interval_ms = 300"), "pfcwd.poll_interval_ms", "expected at most detection_time_ms (200), got 300"),
        case!("pfcwd unknown action", Replace("action = \"drop\"", "action = \"panic\""), "pfcwd.action", "got \"panic\""),
        case!("pfcwd without buffer", Replace("[buffer]\npool_size = 16777216\nxon_offset = 3072", ""), "pfcwd", "add a [buffer] section"),
        // [dcbx]
        case!("dcbx interval 0", Append("[dcbx]\ntx_interval_s = 0"), "dcbx.tx_interval_s", "expected 1-3600 seconds, got 0"),
        case!("dcbx hold 0", Append("[dcbx]\ntx_hold = 0"), "dcbx.tx_hold", "expected 1-100, got 0"),
        case!("dcbx fast count 9", Append("[dcbx]\nfast_tx_count = 9"), "dcbx.fast_tx_count", "expected 1-8 frames, got 9"),
        case!("dcbx roce priority lossy", Append("[dcbx]\nroce_priority = 4"), "dcbx.roce_priority", "got 4, which port[1]"),
        case!("dcbx roce priority 8", Append("[dcbx]\nroce_priority = 8"), "dcbx.roce_priority", "expected 0-7 (a priority), got 8"),
        case!("dcbx app_dscp unknown", Append("[dcbx]\napp_dscp = \"some\""), "dcbx.app_dscp", "got \"some\""),
        case!("dcbx bandwidth sum", Append("[dcbx]\nets_bandwidth = [50, 50, 10, 0, 0, 0, 0, 0]"), "dcbx.ets_bandwidth", "sum to 100, got 110"),
        case!("dcbx bandwidth 7 values", Append("[dcbx]\nets_bandwidth = [50, 50, 0, 0, 0, 0, 0]"), "dcbx.ets_bandwidth", "expected 8 percentages"),
        case!("dcbx bandwidth on strict", Append("[dcbx]\nets_tsa = [\"strict\", \"ets\", \"ets\", \"ets\", \"ets\", \"ets\", \"ets\", \"ets\"]"), "dcbx.ets_bandwidth[0]", "expected 0 for a strict-priority class"),
        case!("dcbx tsa unknown", Append("[dcbx]\nets_tsa = [\"ets\", \"ets\", \"ets\", \"ets\", \"ets\", \"ets\", \"ets\", \"wrr\"]"), "dcbx.ets_tsa[7]", "expected \"ets\" or \"strict\", got \"wrr\""),
        case!("dcbx reco negative", Append("[dcbx]\nreco_bandwidth = [-1, 25, 25, 25, 26, 0, 0, 0]"), "dcbx.reco_bandwidth[0]", "expected a percentage 0-100, got -1"),
        // [switch]
        case!("instance with a path", Replace("name = \"@NAME\"", "name = \"../x\""), "switch.name", "expected 1-64 characters from [A-Za-z0-9_-]"),
        case!("instance empty", Replace("name = \"@NAME\"", "name = \"\""), "switch.name", "got \"\""),
        case!("cnp_tc 8", Replace("cnp_tc = 6", "cnp_tc = 8"), "switch.cnp_tc", "expected a traffic class 0-7, got 8"),
        case!("malformed unknown", Replace("malformed = \"pass\"", "malformed = \"maybe\""), "switch.malformed", "expected \"pass\" or \"drop\", got \"maybe\""),
        case!("hash_seed negative", Replace("cnp_tc = 6", "cnp_tc = 6\nhash_seed = -1"), "switch.hash_seed", "expected an integer 0-4294967295, got -1"),
        case!("hash_seed above u32", Replace("cnp_tc = 6", "cnp_tc = 6\nhash_seed = 4294967296"), "switch.hash_seed", "got 4294967296"),
        // [uet]
        case!("uet feedback_tc 8", Append("[uet]\nfeedback_tc = 8"), "uet.feedback_tc", "expected a traffic class 0-7, got 8"),
        // trimming (SONiC SWITCH_TRIMMING, BUFFER_PROFILE, BUFFER_QUEUE)
        case!("trim action unknown", Append("[buffer_profile.T]\npacket_discard_action = \"cut\""), "buffer_profile.T.packet_discard_action", "expected \"drop\" or \"trim\", got \"cut\""),
        case!("trim size 32", Append("[switch_trimming]\nsize = 32\ndscp_value = 48\nqueue_index = 6"), "switch_trimming.size", "expected 64-9216 bytes, got 32"),
        case!("trim from-tc without tc_value", Append("[switch_trimming]\ndscp_value = \"from-tc\"\nqueue_index = 6"), "switch_trimming.tc_value", "give tc_value 0-7"),
        case!("trim tc_value without from-tc", Append("[switch_trimming]\ndscp_value = 48\ntc_value = 5\nqueue_index = 6"), "switch_trimming.tc_value", "only with dscp_value = \"from-tc\""),
        case!("trim tc_value 8", Append("[switch_trimming]\ndscp_value = \"from-tc\"\ntc_value = 8\nqueue_index = 6"), "switch_trimming.tc_value", "expected a traffic class 0-7, got 8"),
        case!("trim from-tc port without map", Replace("wred_profile = \"MINE\"\n\n[[nexthop]]", "wred_profile = \"MINE\"\nbuffer_queue = { \"1\" = \"T\" }\n\n[buffer_profile.T]\npacket_discard_action = \"trim\"\n\n[switch_trimming]\ndscp_value = \"from-tc\"\ntc_value = 5\nqueue_index = 6\n\n[[nexthop]]"), "port[1] (@P1).tc_to_dscp_map", "give the port a tc_to_dscp_map with an entry for tc_value 5"),
        case!("trim from-tc map without the class", Replace("wred_profile = \"MINE\"\n\n[[nexthop]]", "wred_profile = \"MINE\"\nbuffer_queue = { \"1\" = \"T\" }\ntc_to_dscp_map = \"H\"\n\n[tc_to_dscp_map.H]\n\"4\" = 3\n\n[buffer_profile.T]\npacket_discard_action = \"trim\"\n\n[switch_trimming]\ndscp_value = \"from-tc\"\ntc_value = 5\nqueue_index = 6\n\n[[nexthop]]"), "port[1] (@P1).tc_to_dscp_map", "[tc_to_dscp_map.H] has no entry for tc_value 5"),
        case!("trim from-tc unknown map", Replace("wred_profile = \"MINE\"\n\n[[nexthop]]", "wred_profile = \"MINE\"\nbuffer_queue = { \"1\" = \"T\" }\ntc_to_dscp_map = \"H\"\n\n[buffer_profile.T]\npacket_discard_action = \"trim\"\n\n[switch_trimming]\ndscp_value = \"from-tc\"\ntc_value = 5\nqueue_index = 6\n\n[[nexthop]]"), "port[1] (@P1).tc_to_dscp_map", "no [tc_to_dscp_map.H]"),
        case!("tc_to_dscp value 64", Replace("wred_profile = \"MINE\"\n\n[[nexthop]]", "wred_profile = \"MINE\"\nbuffer_queue = { \"1\" = \"T\" }\ntc_to_dscp_map = \"H\"\n\n[tc_to_dscp_map.H]\n\"5\" = 64\n\n[buffer_profile.T]\npacket_discard_action = \"trim\"\n\n[switch_trimming]\ndscp_value = \"from-tc\"\ntc_value = 5\nqueue_index = 6\n\n[[nexthop]]"), "tc_to_dscp_map.H.\"5\"", "expected a DSCP 0-63, got 64"),
        case!("trim dscp 64", Append("[switch_trimming]\ndscp_value = 64\nqueue_index = 6"), "switch_trimming.dscp_value", "expected a DSCP 0-63 or \"from-tc\", got 64"),
        case!("tc_to_dscp_map unknown without trimming", Replace("speed = \"10G\"\nwred_profile", "speed = \"10G\"\ntc_to_dscp_map = \"NOPE\"\nwred_profile"), "port[1] (@P1).tc_to_dscp_map", "no [tc_to_dscp_map.NOPE]"),
        case!("tc_to_dscp value without trimming", Append("[tc_to_dscp_map.H]\n\"9\" = 3"), "tc_to_dscp_map.H.\"9\"", "expected a traffic class 0-7 as the key"),
        case!("trim queue keyword", Append("[switch_trimming]\ndscp_value = 48\nqueue_index = \"auto\""), "switch_trimming.queue_index", "expected a queue 0-7 or \"dynamic\", got \"auto\""),
        case!("trim queue unknown profile", Replace("speed = \"10G\"\nwred_profile", "speed = \"10G\"\nbuffer_queue = { \"1\" = \"T\" }\nwred_profile"), "port[1] (@P1).buffer_queue.\"1\"", "no [buffer_profile.T]"),
        case!("trim profile on lossless queue", Replace("wred_profile = \"MINE\"\n\n[[nexthop]]", "wred_profile = \"MINE\"\nbuffer_queue = { \"2-3\" = \"T\" }\n\n[buffer_profile.T]\npacket_discard_action = \"trim\"\n\n[switch_trimming]\ndscp_value = 48\nqueue_index = 6\n\n[[nexthop]]"), "port[1] (@P1).buffer_queue.\"2-3\"", "lossless queues do not drop, so they never trim"),
        case!("trim profile without switch_trimming", Replace("wred_profile = \"MINE\"\n\n[[nexthop]]", "wred_profile = \"MINE\"\nbuffer_queue = { \"1\" = \"T\" }\n\n[buffer_profile.T]\npacket_discard_action = \"trim\"\n\n[[nexthop]]"), "switch_trimming", "add [switch_trimming]"),
        case!("trim queue key", Replace("speed = \"10G\"\nwred_profile", "speed = \"10G\"\nbuffer_queue = { \"8\" = \"T\" }\nwred_profile"), "port[1] (@P1).buffer_queue.\"8\"", "expected a queue 0-7 or a range"),
        // maps
        case!("dscp key 64", Replace("\"26\" = 3", "\"64\" = 3"), "dscp_to_tc_map.ROCE.\"64\"", "expected a DSCP value 0-63 as the key"),
        case!("dscp key not a number", Replace("\"26\" = 3", "\"af41\" = 3"), "dscp_to_tc_map.ROCE.\"af41\"", "as the key"),
        case!("dscp class 8", Replace("\"26\" = 3", "\"26\" = 8"), "dscp_to_tc_map.ROCE.\"26\"", "expected a traffic class 0-7, got 8"),
        case!("dscp default 9", Replace("default = 0", "default = 9"), "dscp_to_tc_map.ROCE.default", "expected a traffic class 0-7"),
        case!("dot1p key 8", Replace("\"3\" = 3", "\"8\" = 3"), "dot1p_to_tc_map.PCP.\"8\"", "expected a dot1p value 0-7 as the key"),
        case!("map named AZURE", Append("[dscp_to_tc_map.AZURE]\n\"1\" = 1"), "dscp_to_tc_map.AZURE", "built-in map"),
        // ports
        case!("trust unknown", Replace("trust = \"dot1p\"", "trust = \"ip\""), "port[1] (@P1).trust", "expected \"dscp\" or \"dot1p\", got \"ip\""),
        case!("pfc_enable 9", Replace("pfc_enable = \"3,4\"", "pfc_enable = \"3,9\""), "port[0] (@P0).pfc_enable", "expected priorities 0-7 separated by commas"),
        case!("pfc_enable twice", Replace("pfc_enable = \"3,4\"", "pfc_enable = \"3,3\""), "port[0] (@P0).pfc_enable", "priority 3 is listed twice"),
        case!("dscp map unknown", Replace("dscp_to_tc_map = \"ROCE\"", "dscp_to_tc_map = \"NOPE\""), "port[0] (@P0).dscp_to_tc_map", "got \"NOPE\""),
        case!("dot1p map unknown", Replace("dot1p_to_tc_map = \"PCP\"", "dot1p_to_tc_map = \"NOPE\""), "port[1] (@P1).dot1p_to_tc_map", "got \"NOPE\""),
        case!("default_tc negative", Replace("pfc_enable = \"3,4\"", "pfc_enable = \"3,4\"\ndefault_tc = -1"), "port[0] (@P0).default_tc", "got -1"),
        case!("port malformed unknown", Replace("pfc_enable = \"3,4\"", "pfc_enable = \"3,4\"\nmalformed = \"drip\""), "port[0] (@P0).malformed", "got \"drip\""),
        case!("xdp_mode unknown", Replace("pfc_enable = \"3,4\"", "pfc_enable = \"3,4\"\nxdp_mode = \"fast\""), "port[0] (@P0).xdp_mode", "expected \"auto\", \"native\" or \"generic\""),
        case!("port mac multicast", Replace("pfc_enable = \"3,4\"", "pfc_enable = \"3,4\"\nmac = \"01:00:5e:00:00:01\""), "port[0] (@P0).mac", "expected a unicast MAC"),
        case!("port mac garbage", Replace("pfc_enable = \"3,4\"", "pfc_enable = \"3,4\"\nmac = \"02:00:00:00:00\""), "port[0] (@P0).mac", "got \"02:00:00:00:00\""),
        case!("speed unknown", Replace("speed = \"10G\"", "speed = \"fast\""), "port[0] (@P0).speed", "expected a line rate"),
        case!("speed 0", Replace("speed = \"10G\"", "speed = 0"), "port[0] (@P0).speed", "expected a line rate"),
        case!("speed 2 Tb/s", Replace("speed = \"10G\"", "speed = \"2000G\""), "port[0] (@P0).speed", "1 Mb/s to 1.6 Tb/s"),
        case!("port cable negative", Replace("pfc_enable = \"3,4\"", "pfc_enable = \"3,4\"\ncable_length_m = -1"), "port[0] (@P0).cable_length_m", "expected metres 0-100000, got -1"),
        case!("headroom_xon alone", Replace("wred_profile = \"MINE\"", "headroom_xon = 100"), "port[1] (@P1).headroom_xon", "expected headroom_xoff as well"),
        case!("headroom_xoff negative", Replace("wred_profile = \"MINE\"", "headroom_xoff = -1"), "port[1] (@P1).headroom_xoff", "expected bytes, got xoff -1"),
        case!("port name with a slash", Replace("name = \"@P1\"", "name = \"a/b\""), "port[1].name", "without '/' or spaces"),
        case!("port name too long", Replace("name = \"@P1\"", "name = \"abcdefghijklmnop\""), "port[1].name", "1-15 characters"),
        case!("port twice", Replace("name = \"@P1\"", "name = \"@P0\""), "port[1].name", "is already configured by an earlier [[port]]"),
        case!("more than 64 ports", Repeat("\n[[port]]\nname = \"x{i}\"\n", 63), "port", "expected at most 64 ports, got 65"),
        // next hops
        case!("next hop twice", Replace("name = \"nh1\"", "name = \"nh0\""), "nexthop[1] (nh0).name", "next hop \"nh0\" is defined twice"),
        case!("next hop mac multicast", Replace("mac = \"02:00:00:00:10:02\"", "mac = \"ff:ff:ff:ff:ff:ff\""), "nexthop[1] (nh1).mac", "expected a unicast MAC"),
        case!("more than 256 next hops", Repeat("\n[[nexthop]]\nname = \"n{i}\"\nport = \"@P0\"\nmac = \"02:00:00:00:20:01\"\n", 255), "nexthop", "expected at most 256 next hops, got 257"),
        // groups
        case!("group twice", Append("[[group]]\nname = \"both\"\nmembers = [{ nexthop = \"nh0\" }]"), "group[1] (both).name", "group \"both\" is defined twice"),
        case!("group without members", Replace("members = [{ nexthop = \"nh0\" }, { nexthop = \"nh1\", weight = 2 }]", "members = []"), "group[0] (both).members", "expected at least one member"),
        case!("group member unknown", Replace("{ nexthop = \"nh0\" },", "{ nexthop = \"nh7\" },"), "group[0] (both).members[0].nexthop", "expected the name of a [[nexthop]], got \"nh7\""),
        case!("group member twice", Replace("{ nexthop = \"nh1\", weight = 2 }", "{ nexthop = \"nh0\", weight = 2 }"), "group[0] (both).members[1].nexthop", "is already a member of this group"),
        case!("flowlet timeout 0", Replace("mode = \"hash\"", "mode = \"flowlet\"\nflowlet_timeout_us = 0"), "group[0] (both).flowlet_timeout_us", "expected 1-4000000 microseconds, got 0"),
        case!("more than 16 members", Replace("members = [{ nexthop = \"nh0\" }, { nexthop = \"nh1\", weight = 2 }]", "members = [{ nexthop = \"nh0\" }, { nexthop = \"nh0\" }, { nexthop = \"nh0\" }, { nexthop = \"nh0\" }, { nexthop = \"nh0\" }, { nexthop = \"nh0\" }, { nexthop = \"nh0\" }, { nexthop = \"nh0\" }, { nexthop = \"nh0\" }, { nexthop = \"nh0\" }, { nexthop = \"nh0\" }, { nexthop = \"nh0\" }, { nexthop = \"nh0\" }, { nexthop = \"nh0\" }, { nexthop = \"nh0\" }, { nexthop = \"nh0\" }, { nexthop = \"nh1\" }]"), "group[0] (both).members", "expected at most 16 members, got 17"),
        case!("more than 64 groups", Repeat("\n[[group]]\nname = \"g{i}\"\nmembers = [{ nexthop = \"nh0\" }]\n", 64), "group", "expected at most 64 groups, got 65"),
        // routes
        case!("prefix with host bits", Replace("prefix = \"198.18.10.0/24\"", "prefix = \"198.18.10.1/24\""), "route[0] (198.18.10.1/24).prefix", "with no host bits set"),
        case!("prefix length 33", Replace("prefix = \"198.18.10.0/24\"", "prefix = \"198.18.10.0/33\""), "route[0] (198.18.10.0/33).prefix", "expected a prefix"),
        case!("route to an unknown next hop", Replace("nexthop = \"nh0\"\n\n[[route]]", "nexthop = \"nh9\"\n\n[[route]]"), "route[0] (198.18.10.0/24).nexthop", "got \"nh9\""),
        case!("route to an unknown group", Replace("group = \"both\"", "group = \"all\""), "route[1] (2001:db8:10::/48).group", "got \"all\""),
        case!("route with two targets", Replace("group = \"both\"", "group = \"both\"\nlocal = true"), "route[1] (2001:db8:10::/48)", "expected exactly one of nexthop"),
        case!("route without target", Append("[[route]]\nprefix = \"198.18.30.0/24\""), "route[2] (198.18.30.0/24)", "expected exactly one of nexthop"),
        // the reader: unknown keys, wrong types, huge and negative numbers,
        // empty and non-UTF-8 files, syntax
        case!("unknown key", Replace("pfc_enable = \"3,4\"", "pfc_enable = \"3,4\"\ntrsut = \"dscp\""), "(file)", "unknown field `trsut`"),
        case!("unknown section", Append("[bgp]\nasn = 65000"), "(file)", "unknown field `bgp`"),
        case!("wrong type: string for integer", Replace("cnp_tc = 6", "cnp_tc = \"six\""), "(file)", "cnp_tc"),
        case!("wrong type: integer for string", Replace("mode = \"hash\"", "mode = 3"), "(file)", "mode"),
        case!("wrong type: table for array", Replace("[[route]]\nprefix = \"198.18.10.0/24\"", "[route]\nprefix = \"198.18.10.0/24\""), "(file)", "route"),
        case!("number beyond i64", Replace("pool_size = 16777216", "pool_size = 99999999999999999999"), "(file)", "pool_size"),
        case!("negative pool", Replace("pool_size = 16777216", "pool_size = -16777216"), "buffer.pool_size", "got -16777216"),
        case!("float for integer", Replace("pool_size = 16777216", "pool_size = 1.5e7"), "(file)", "pool_size"),
        case!("empty file", Whole(b""), "port", "expected at least one [[port]] section"),
        case!("non-UTF-8 bytes", Whole(b"[switch]\nname = \"sw\xff\xfe\"\n"), "(file)", "valid UTF-8"),
        case!("syntax error", Whole(b"[[port]\nname = \"eth0\"\n"), "(file)", "line 1"),
        case!("NUL bytes", Whole(b"\0\0\0\0"), "(file)", "line 1"),
    ]
}
