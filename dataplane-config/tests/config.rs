//! Configuration validation: every error names its field and what was
//! expected; valid configs resolve to the map values the programs read.

use dataplane_common::maps::{
    AZURE_DSCP_TO_TC, MALFORMED_DROP, MALFORMED_PASS, TRUST_DOT1P, TRUST_DSCP, UET_FEEDBACK_TC_SET,
};
use dataplane_config::{parse_pfc_enable, Config, ConfigError};

fn check(text: &str) -> Result<dataplane_config::Plan, ConfigError> {
    Config::parse(text, "t.toml")?.validate("t.toml")
}

fn errors(text: &str) -> Vec<String> {
    match check(text) {
        Ok(_) => panic!("config accepted:\n{text}"),
        Err(e) => e.errors.iter().map(|e| e.to_string()).collect(),
    }
}

#[test]
fn minimal_port_gets_sonic_defaults() {
    let plan = check("[[port]]\nname = \"eth1\"\n").unwrap();
    assert_eq!(plan.instance, "default");
    let c = plan.ports[0].config;
    assert_eq!(c.trust, TRUST_DSCP);
    assert_eq!(c.dscp_to_tc, AZURE_DSCP_TO_TC);
    assert_eq!(c.pcp_to_tc, [0, 1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(c.pfc_enable, 0b0001_1000);
    assert_eq!(c.cnp_tc, 6);
    assert_eq!(c.malformed_action, MALFORMED_PASS);
    assert_eq!(c.port_id, 0);
}

#[test]
fn uet_feedback_class_reaches_every_port() {
    let port = "[[port]]\nname = \"eth1\"\n[[port]]\nname = \"eth2\"\n";
    let plan = check(port).unwrap();
    assert!(plan.ports.iter().all(|p| p.config.uet_feedback_tc == 0));
    let plan = check(&format!("{port}[uet]\nfeedback_tc = 5\n")).unwrap();
    for p in &plan.ports {
        assert_eq!(p.config.uet_feedback_tc, UET_FEEDBACK_TC_SET | 5);
    }
    // an empty [uet] section changes nothing
    let plan = check(&format!("{port}[uet]\n")).unwrap();
    assert!(plan.ports.iter().all(|p| p.config.uet_feedback_tc == 0));
}

#[test]
fn trimming_resolves_sonic_profiles_to_queue_bits() {
    let text = r#"
[buffer]
[switch_trimming]
dscp_value = 48
queue_index = 6
[buffer_profile.q_lossy_trim_profile]
packet_discard_action = "trim"
[buffer_profile.q_lossy_profile]
packet_discard_action = "drop"
[[port]]
name = "eth1"
pfc_enable = "3,4"
buffer_queue = { "0-2" = "q_lossy_trim_profile", "5" = "q_lossy_profile", "7" = "q_lossy_trim_profile" }
[[port]]
name = "eth2"
"#;
    let plan = check(text).unwrap();
    let t = plan.trim.expect("trimming planned");
    assert_eq!((t.config.size, t.config.dscp, t.config.queue), (128, 48, 6));
    assert_eq!(t.queues, vec![0b1000_0111, 0]);
    assert_eq!((t.dscp, t.from_tc), (vec![48, 0], None));
    // without [switch_trimming] nothing trims
    assert!(check("[[port]]\nname = \"eth1\"\n").unwrap().trim.is_none());
}

/// SONiC's asymmetric DSCP (`dscp_value = "from-tc"`, `tc_value`): each
/// trimming egress port's TC_TO_DSCP_MAP gives the trim DSCP; `queue_index =
/// "dynamic"` is kept for the data plane to resolve per packet.
#[test]
fn trimming_from_tc_and_dynamic_resolve_per_port() {
    let text = r#"
[buffer]
[switch_trimming]
dscp_value = "from-tc"
tc_value = 5
queue_index = "dynamic"
[tc_to_dscp_map.host_trim_map]
"5" = 3
[tc_to_dscp_map.spine_trim_map]
"5" = "7"
"1" = 10
[buffer_profile.T]
packet_discard_action = "trim"
[[port]]
name = "eth0"
buffer_queue = { "1" = "T" }
tc_to_dscp_map = "host_trim_map"
[[port]]
name = "eth4"
buffer_queue = { "1" = "T" }
tc_to_dscp_map = "spine_trim_map"
[[port]]
name = "eth8"
"#;
    let plan = check(text).unwrap();
    let t = plan.trim.expect("trimming planned");
    assert_eq!(t.from_tc, Some(5));
    assert_eq!(t.config.queue, dataplane_common::trim::QUEUE_DYNAMIC);
    assert_eq!(t.dscp, vec![3, 7, 0]);
    assert_eq!(t.queues, vec![0b10, 0b10, 0]);
}

#[test]
fn custom_maps_resolve_with_default_and_string_values() {
    let plan = check(
        r#"
[switch]
malformed = "drop"
cnp_tc = 7
[dscp_to_tc_map.ROCE]
default = 1
"26" = 3
"48" = "6"
[dot1p_to_tc_map.P]
"3" = 4
[[port]]
name = "a"
dscp_to_tc_map = "ROCE"
dot1p_to_tc_map = "P"
trust = "dot1p"
[[port]]
name = "b"
malformed = "pass"
pfc_enable = ""
"#,
    )
    .unwrap();
    let a = plan.ports[0].config;
    assert_eq!(a.trust, TRUST_DOT1P);
    assert_eq!(a.dscp_to_tc[26], 3);
    assert_eq!(a.dscp_to_tc[48], 6);
    assert_eq!(a.dscp_to_tc[0], 1);
    assert_eq!(a.pcp_to_tc, [0, 0, 0, 4, 0, 0, 0, 0]);
    assert_eq!(a.cnp_tc, 7);
    assert_eq!(a.malformed_action, MALFORMED_DROP);
    let b = plan.ports[1].config;
    assert_eq!(
        (b.port_id, b.malformed_action, b.pfc_enable),
        (1, MALFORMED_PASS, 0)
    );
}

#[test]
fn every_error_is_reported_with_its_field() {
    let e = errors(
        r#"
[switch]
name = "bad name"
cnp_tc = 9
malformed = "maybe"
[dscp_to_tc_map.X]
"64" = 1
"5" = 8
[[port]]
name = "eth1"
trust = "ip"
pfc_enable = "3,9"
dscp_to_tc_map = "NOPE"
default_tc = -1
xdp_mode = "fast"
[[port]]
name = "eth1"
"#,
    );
    let want = [
        "switch.name:",
        "switch.cnp_tc: expected a traffic class 0-7, got 9",
        "switch.malformed: expected \"pass\" or \"drop\", got \"maybe\"",
        "dscp_to_tc_map.X.\"64\": expected a DSCP value 0-63",
        "dscp_to_tc_map.X.\"5\": expected a traffic class 0-7, got 8",
        "port[0] (eth1).trust: expected \"dscp\" or \"dot1p\", got \"ip\"",
        "port[0] (eth1).pfc_enable: expected priorities 0-7",
        "port[0] (eth1).dscp_to_tc_map: expected the name of a [dscp_to_tc_map.NAME] table or \"AZURE\", got \"NOPE\"",
        "port[0] (eth1).default_tc: expected a traffic class 0-7, got -1",
        "port[0] (eth1).xdp_mode:",
        "port[1].name: interface \"eth1\" is already configured",
    ];
    for w in want {
        assert!(
            e.iter().any(|x| x.starts_with(w)),
            "missing {w:?} in {e:#?}"
        );
    }
    assert_eq!(e.len(), want.len(), "{e:#?}");
}

#[test]
fn syntax_and_unknown_fields_are_refused_with_location() {
    let e = errors("[[port]]\nname = \"eth1\"\ntrsut = \"dscp\"\n");
    assert!(e[0].contains("trsut") && e[0].contains("line 3"), "{e:?}");
    let e = errors("[[port]\n");
    assert!(e[0].contains("(file)"), "{e:?}");
}

#[test]
fn no_ports_and_too_many_ports_are_refused() {
    assert!(errors("[switch]\nname = \"x\"\n")[0].starts_with("port: expected at least one"));
    let many: String = (0..65)
        .map(|i| format!("[[port]]\nname = \"p{i}\"\n"))
        .collect();
    assert!(errors(&many)
        .iter()
        .any(|e| e.starts_with("port: expected at most 64 ports")));
}

#[test]
fn azure_cannot_be_redefined() {
    let e = errors("[dscp_to_tc_map.AZURE]\n\"1\" = 2\n[[port]]\nname = \"a\"\n");
    assert!(
        e[0].starts_with("dscp_to_tc_map.AZURE: AZURE is the built-in map"),
        "{e:?}"
    );
}

#[test]
fn pfc_enable_forms() {
    assert_eq!(parse_pfc_enable("3,4"), Ok(0x18));
    assert_eq!(parse_pfc_enable(" 0, 7 "), Ok(0x81));
    assert_eq!(parse_pfc_enable(""), Ok(0));
    assert!(parse_pfc_enable("3,3")
        .unwrap_err()
        .contains("listed twice"));
    assert!(parse_pfc_enable("3;4").is_err());
    assert!(parse_pfc_enable("8").is_err());
    assert!(parse_pfc_enable("-1").is_err());
}

#[test]
fn example_configs_in_the_repository_are_valid() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "toml") {
            Config::load(&p)
                .unwrap()
                .validate(&p.display().to_string())
                .unwrap();
            n += 1;
        }
    }
    assert!(n > 0);
}

#[test]
fn dcbx_defaults_are_lldp_s_and_reco_follows_ets() {
    use dataplane_common::wire::dcbx::{TSA_ETS, TSA_STRICT};
    let plan = check("[[port]]\nname = \"eth1\"\n[dcbx]\n").unwrap();
    let d = plan.dcbx.expect("[dcbx] on");
    assert_eq!((d.tx_interval_s, d.ttl_s, d.fast_tx_count), (30, 120, 4));
    assert!(!d.willing);
    assert_eq!(d.roce_priority, None);
    assert_eq!(d.app_dscp, dataplane_config::AppDscp::Lossless);
    assert_eq!(d.ets.tc_bw, [12, 12, 12, 12, 13, 13, 13, 13]);
    assert_eq!(d.ets.prio_tc, [0, 1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(d.reco, d.ets);
    let plan = check(
        "[[port]]\nname = \"eth1\"\n[dcbx]\nroce_priority = 3\nreco_tsa = [\"strict\", \"ets\", \"ets\", \"ets\", \"ets\", \"ets\", \"ets\", \"ets\"]\nreco_bandwidth = [0, 10, 10, 40, 10, 10, 10, 10]\n",
    )
    .unwrap();
    let d = plan.dcbx.unwrap();
    assert_eq!(d.roce_priority, Some(3));
    assert_eq!(d.reco.tsa[0], TSA_STRICT);
    assert_eq!(d.reco.tsa[1], TSA_ETS);
    assert_eq!(d.reco.tc_bw[3], 40);
    assert_ne!(d.reco, d.ets);
    // off: validated, not planned
    assert!(check("[[port]]\nname = \"eth1\"\n[dcbx]\nenable = false\n")
        .unwrap()
        .dcbx
        .is_none());
    let e = errors("[[port]]\nname = \"eth1\"\n[dcbx]\nenable = false\ntx_hold = 0\n");
    assert!(e[0].starts_with("dcbx.tx_hold"), "{e:?}");
}
