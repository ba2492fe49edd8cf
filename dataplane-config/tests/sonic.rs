//! `import-sonic` on SONiC-shaped inputs written for these tests (in
//! tests/sonic/): golden outputs and findings, the values the plan takes
//! from SONiC's profiles, and the refusals (malformed JSON, unknown and
//! mistyped references, cycles, the dynamic buffer model, --strict).
//! `UPDATE_GOLDEN=1 cargo test -p dataplane-config --test sonic` rewrites
//! the golden files (review the diff).

use std::path::PathBuf;

use dataplane_config::sonic::{import, parse_port_map, ImportOptions, Imported, Kind, SonicError};
use dataplane_config::{Config, Plan};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/sonic")
}

fn read(name: &str) -> String {
    std::fs::read_to_string(dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn opts(ports: &str, strict: bool) -> ImportOptions {
    ImportOptions {
        ports: parse_port_map(ports).unwrap(),
        strict,
    }
}

fn ok(name: &str, o: &ImportOptions) -> Imported {
    import(&read(name), name, o).unwrap_or_else(|e| panic!("{e}"))
}

fn refused(text: &str, o: &ImportOptions) -> SonicError {
    match import(text, "t.json", o) {
        Ok(i) => panic!("accepted:\n{}", i.toml),
        Err(e) => e,
    }
}

fn plan(i: &Imported) -> Plan {
    Config::parse(&i.toml, "out")
        .unwrap()
        .validate("out")
        .unwrap()
}

/// Compares with (or, with UPDATE_GOLDEN=1, writes) tests/sonic/`name`.
fn golden(name: &str, got: &str) {
    let path = dir().join(name);
    if std::env::var("UPDATE_GOLDEN").is_ok() {
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(got, want, "{name} differs (UPDATE_GOLDEN=1 rewrites it)");
}

fn findings_text(i: &Imported) -> String {
    i.findings.iter().map(|f| format!("{f}\n")).collect()
}

fn has(i: &Imported, kind: Kind, at: &str, field: &str) -> bool {
    i.findings
        .iter()
        .any(|f| f.kind == kind && f.at == at && f.field == field)
}

#[test]
fn mellanox_static_leaf_takes_sonic_headroom_pool_and_thresholds() {
    let i = ok("mellanox_static.json", &ImportOptions::default());
    golden("mellanox_static.toml", &i.toml);
    golden("mellanox_static.findings", &findings_text(&i));
    let p = plan(&i);
    assert_eq!(p.instance, "leaf1");
    let names: Vec<&str> = p.ports.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["etp1", "etp2", "etp3"]);
    let b = p.buffer.as_ref().unwrap();
    assert_eq!(b.pool_size, 12_766_208);
    for (port, (h, how)) in p.ports.iter().zip(&b.headroom) {
        assert_eq!((h.xoff, h.xon, *how), (27_648, 19_456, "configured"));
        assert_eq!(port.config.pfc_enable, 0b0001_1000);
        assert_eq!(port.config.speed_mbps, 100_000);
        assert_eq!(
            port.config.dscp_to_tc,
            dataplane_common::maps::AZURE_DSCP_TO_TC
        );
    }
    let pb = &b.ports[0];
    // lossless PG 3: SONiC's profile (size = xon + xoff, so no reserve)
    assert_eq!(
        (
            pb.pg_profile[3].dynamic_th,
            pb.pg_profile[3].size,
            pb.pg_profile[3].xon_offset
        ),
        (1, 0, 0)
    );
    // lossy PG 0: ingress_lossy_profile's dynamic_th 7
    assert_eq!(pb.pg_profile[0].dynamic_th, 7);
    assert_eq!(
        pb.wred[3],
        dataplane_common::lossless::WredProfile::AZURE_LOSSLESS
    );
    let (wd, poll) = p.pfcwd.unwrap();
    assert_eq!(
        (wd.detection_time_ms, wd.restoration_time_ms, poll),
        (200, 200, 200)
    );
    // queue 7 has no scheduler: no ETS declaration, and that is reported
    assert!(p.dcbx.is_none());
    assert!(has(&i, Kind::Unsupported, "QUEUE|Ethernet0|7", "scheduler"));
    assert!(has(&i, Kind::Unsupported, "PORT|Ethernet0", "lanes"));
    assert!(has(
        &i,
        Kind::Unsupported,
        "BUFFER_POOL|egress_lossless_pool",
        "size"
    ));
    assert!(has(
        &i,
        Kind::Unsupported,
        "BUFFER_PROFILE|egress_lossy_profile",
        "size"
    ));
    // every output section names its source keys
    assert!(i.toml.contains("# from BUFFER_POOL|ingress_lossless_pool, BUFFER_PROFILE|ingress_lossy_profile,\n#   BUFFER_PROFILE|pg_lossless_100000_5m_profile\n[buffer]\n"), "{}", i.toml);
    assert!(i.toml.contains("PORT_QOS_MAP|Ethernet4, PORT|Ethernet4"));
}

#[test]
fn broadcom_dynamic_thresholds_keep_reserve_xoff_and_alpha() {
    // the aliases (hundredGigE1/1) cannot name interfaces: refused without a map
    let e = refused(&read("broadcom_dynamic_th.json"), &ImportOptions::default());
    assert!(
        e.errors.iter().any(|e| e.field == "PORT|Ethernet0.alias"),
        "{e}"
    );
    let i = ok(
        "broadcom_dynamic_th.json",
        &opts("Ethernet0=eth1,Ethernet8=eth2", false),
    );
    golden("broadcom_dynamic_th.toml", &i.toml);
    golden("broadcom_dynamic_th.findings", &findings_text(&i));
    let p = plan(&i);
    let b = p.buffer.as_ref().unwrap();
    let heads: Vec<(u32, u32)> = b.headroom.iter().map(|(h, _)| (h.xoff, h.xon)).collect();
    assert_eq!(heads, [(165_984, 2288), (48_256, 2288)]);
    let pg3 = b.ports[1].pg_profile[3];
    assert_eq!((pg3.size, pg3.xon_offset, pg3.dynamic_th), (1248, 2288, -3));
    assert_eq!(p.ports[1].config.speed_mbps, 25_000);
    assert_eq!(p.ports[0].config.dscp_to_tc[26], 3);
    assert_eq!(p.ports[0].config.dscp_to_tc[0], 0);
    let roce = b.ports[0].wred[3];
    assert_eq!(
        (
            roce.green_min_threshold,
            roce.green_max_threshold,
            roce.green_drop_probability
        ),
        (153_600, 1_536_000, 20)
    );
    // the lossy profile's size 0 is not the lossless reserve: reported
    assert!(has(
        &i,
        Kind::Unsupported,
        "BUFFER_PROFILE|ingress_lossy_profile",
        "size"
    ));
    // yellow/red thresholds: no colouring, a note
    assert!(has(
        &i,
        Kind::Note,
        "WRED_PROFILE|AZURE_LOSSLESS",
        "yellow_min_threshold"
    ));
    // one MTU for the formula: the largest
    assert!(has(&i, Kind::Note, "PORT|Ethernet8", "mtu"));
    let t = p.trim.unwrap();
    assert_eq!(t.queues, [0b0000_0111, 0]);
    assert_eq!(
        (t.config.size, t.config.queue, t.from_tc),
        (128, 6, Some(0))
    );
    assert_eq!(t.dscp[0], 8);
}

#[test]
fn old_reference_format_imports_as_the_plain_names_do() {
    let old = ok("old_format.json", &ImportOptions::default());
    let plain = ok("plain_format.json", &ImportOptions::default());
    assert_eq!(old.config, plain.config);
    golden("old_format.toml", &old.toml);
    let p = plan(&old);
    let b = p.buffer.unwrap();
    assert_eq!(b.headroom[1].0.xoff, 37_936);
    assert_eq!(b.ports[1].pg_profile[4].dynamic_th, -4);
    assert_eq!(old.config.ports[1].cable_length_m, Some(300));
}

#[test]
fn unsupported_tables_and_fields_are_each_reported_and_strict_refuses() {
    let i = ok("unsupported.json", &ImportOptions::default());
    golden("unsupported.findings", &findings_text(&i));
    for (at, field) in [
        ("ACL_TABLE", ""),
        ("VLAN", ""),
        ("BGP_NEIGHBOR", ""),
        ("BUFFER_PORT_INGRESS_PROFILE_LIST", ""),
        ("BUFFER_POOL|ingress_lossless_pool", "xoff"),
        ("SCHEDULER|scheduler.0", "meter_type"),
        ("SCHEDULER|scheduler.0", "pir"),
        ("SCHEDULER|scheduler.0", "type"),
        ("PFC_WD|GLOBAL", "BIG_RED_SWITCH"),
        ("PFC_WD|Ethernet4", ""),
        ("PORT_QOS_MAP|Ethernet0", "pfcwd_sw_enable"),
    ] {
        assert!(
            has(&i, Kind::Unsupported, at, field),
            "{at} {field} not reported:\n{}",
            findings_text(&i)
        );
    }
    let e = refused(&read("unsupported.json"), &opts("", true));
    let n = i
        .findings
        .iter()
        .filter(|f| f.kind == Kind::Unsupported)
        .count();
    assert_eq!(e.errors.len(), n, "{e}");
    assert!(
        e.errors
            .iter()
            .any(|e| e.field == "BUFFER_POOL|ingress_lossless_pool.xoff"),
        "{e}"
    );
    assert!(e.to_string().contains("nothing written"));
    // strict accepts a file with notes only
    let plain = read("plain_format.json");
    let i = import(&plain, "p.json", &opts("", true)).unwrap();
    assert!(i.findings.iter().all(|f| f.kind == Kind::Note));
}

#[test]
fn dynamic_buffer_model_is_refused_with_the_reason() {
    let e = refused(&read("dynamic.json"), &ImportOptions::default());
    let fields: Vec<&str> = e.errors.iter().map(|e| e.field.as_str()).collect();
    assert!(fields.contains(&"BUFFER_PG|Ethernet0|3-4.profile"), "{e}");
    assert!(
        fields.contains(&"BUFFER_POOL|ingress_lossless_pool.size"),
        "{e}"
    );
    assert!(fields.contains(&"BUFFER_PG|Ethernet4|3-4.profile"), "{e}");
    // the reason once, on the field that chose the model
    let why: Vec<_> = e
        .errors
        .iter()
        .filter(|e| e.message.contains("ASIC_TABLE"))
        .collect();
    assert_eq!(why.len(), 1, "{e}");
    assert_eq!(why[0].field, "DEVICE_METADATA|localhost.buffer_model");
    assert_eq!(e.errors.len(), 4, "{e}");
}

#[test]
fn malformed_json_names_line_and_column() {
    let e = refused(
        "{\n  \"PORT\": {\n    \"Ethernet0\": {\"alias\": \"eth1\",}\n  }\n}\n",
        &ImportOptions::default(),
    );
    assert_eq!(e.errors.len(), 1);
    assert!(
        e.errors[0]
            .message
            .starts_with("malformed JSON at line 3 column"),
        "{e}"
    );
    let e = refused(
        r#"{"PORT": {"Ethernet0": {"alias": {"x": 1}}}}"#,
        &ImportOptions::default(),
    );
    assert_eq!(e.errors[0].field, "PORT|Ethernet0.alias");
}

#[test]
fn unknown_and_mistyped_references_name_the_key() {
    let plain = read("plain_format.json");
    let bad = plain.replacen(
        "\"profile\": \"pg_lossless_40000_300m_profile\"",
        "\"profile\": \"pg_lossless_nope\"",
        1,
    );
    assert_ne!(bad, plain);
    let e = refused(&bad, &ImportOptions::default());
    assert_eq!(e.errors.len(), 1, "{e}");
    assert_eq!(e.errors[0].field, "BUFFER_PG|Ethernet0|3-4.profile");
    assert!(
        e.errors[0]
            .message
            .contains("unknown reference \"pg_lossless_nope\""),
        "{e}"
    );
    let bad = plain.replacen(
        "\"profile\": \"pg_lossless_40000_300m_profile\"",
        "\"profile\": \"[BUFFER_POOL|ingress_lossless_pool]\"",
        1,
    );
    let e = refused(&bad, &ImportOptions::default());
    assert!(
        e.errors[0]
            .message
            .contains("expected a reference to BUFFER_PROFILE"),
        "{e}"
    );
    let bad = plain.replacen(
        "\"dscp_to_tc_map\": \"AZURE\"",
        "\"dscp_to_tc_map\": \"ROCE\"",
        1,
    );
    let e = refused(&bad, &ImportOptions::default());
    assert_eq!(
        e.errors[0].field, "PORT_QOS_MAP|Ethernet0.dscp_to_tc_map",
        "{e}"
    );
    // keys naming a port PORT does not have
    let mut v: serde_json::Value = serde_json::from_str(&plain).unwrap();
    v["PFC_WD"] = serde_json::json!({"Ethernet99": {"action": "drop"}});
    v["CABLE_LENGTH"]["AZURE"]["Ethernet98"] = "5m".into();
    let e = refused(&v.to_string(), &ImportOptions::default());
    let fields: Vec<&str> = e.errors.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(
        fields,
        ["CABLE_LENGTH|AZURE.Ethernet98", "PFC_WD|Ethernet99"],
        "{e}"
    );
}

#[test]
fn reference_cycles_are_refused_naming_the_loop() {
    let plain = read("plain_format.json");
    let bad = plain.replace(
        "\"pool\": \"ingress_lossless_pool\",\n            \"size\": \"0\"",
        "\"pool\": \"[BUFFER_PROFILE|pg_lossless_40000_300m_profile]\",\n            \"size\": \"0\"",
    ).replace(
        "\"pool\": \"ingress_lossless_pool\",\n            \"size\": \"56368\"",
        "\"pool\": \"[BUFFER_PROFILE|ingress_lossy_profile]\",\n            \"size\": \"56368\"",
    );
    assert_eq!(
        bad.matches("[BUFFER_PROFILE|").count(),
        2,
        "the edit did not apply"
    );
    let e = refused(&bad, &ImportOptions::default());
    assert_eq!(e.errors.len(), 1, "{e}");
    assert_eq!(
        e.errors[0].message,
        "reference cycle: BUFFER_PROFILE|ingress_lossy_profile.pool -> BUFFER_PROFILE|pg_lossless_40000_300m_profile.pool -> BUFFER_PROFILE|ingress_lossy_profile"
    );
}

#[test]
fn port_map_selects_and_names_ports() {
    let i = ok("plain_format.json", &opts("Ethernet4=dp9", false));
    assert_eq!(i.config.ports.len(), 1);
    assert_eq!(i.config.ports[0].name, "dp9");
    assert!(has(&i, Kind::Unsupported, "PORT|Ethernet0", ""));
    let e = refused(&read("plain_format.json"), &opts("Ethernet12=dp9", false));
    assert_eq!(e.errors[0].field, "--ports Ethernet12");
    let e = refused(
        &read("plain_format.json"),
        &opts("Ethernet0=dp9,Ethernet4=dp9", false),
    );
    assert_eq!(e.errors[0].field, "--ports Ethernet4", "{e}");
    assert!(
        e.errors[0].message.contains("already PORT|Ethernet0's"),
        "{e}"
    );
    assert!(parse_port_map("Ethernet0").is_err());
    assert!(parse_port_map("Ethernet0=a,Ethernet0=b").is_err());
}

#[test]
fn static_model_lossless_pgs_get_the_profile_buffermgrd_puts_there() {
    let json = |v: &serde_json::Value| v.to_string();
    let mut v: serde_json::Value = serde_json::from_str(&read("plain_format.json")).unwrap();
    v["BUFFER_PROFILE"]["custom_profile"] = serde_json::json!({"pool": "ingress_lossless_pool", "size": "2000", "xon": "1000", "xoff": "1000", "dynamic_th": "-4"});
    v["BUFFER_PG"]["Ethernet0|3-4"]["profile"] = "custom_profile".into();
    // PORT speed 40000 + CABLE_LENGTH 300m: buffermgrd replaces the named
    // profile by pg_lossless_40000_300m_profile, which the file defines
    let i = import(&json(&v), "t.json", &ImportOptions::default()).unwrap();
    assert_eq!(i.config.ports[0].headroom_xoff, Some(37_936));
    assert!(
        has(&i, Kind::Note, "BUFFER_PG|Ethernet0|3-4", "profile"),
        "{}",
        findings_text(&i)
    );
    // cable 0m: buffermgrd leaves the PG alone, the named profile stands
    v["CABLE_LENGTH"]["AZURE"]["Ethernet0"] = "0m".into();
    let i = import(&json(&v), "t.json", &ImportOptions::default()).unwrap();
    assert_eq!(
        (
            i.config.ports[0].headroom_xoff,
            i.config.ports[0].headroom_xon
        ),
        (Some(1000), Some(1000))
    );
    // no BUFFER_PG for the lossless PGs: buffermgrd creates it with the profile
    v["BUFFER_PG"]
        .as_object_mut()
        .unwrap()
        .remove("Ethernet4|3-4");
    let i = import(&json(&v), "t.json", &ImportOptions::default()).unwrap();
    assert_eq!(i.config.ports[1].headroom_xoff, Some(37_936));
    assert!(
        has(&i, Kind::Note, "BUFFER_PG|Ethernet4|3-4", ""),
        "{}",
        findings_text(&i)
    );
    // and where buffermgrd would read the platform's ini: reported, computed here
    v["BUFFER_PG"]
        .as_object_mut()
        .unwrap()
        .remove("Ethernet0|3-4");
    let i = import(&json(&v), "t.json", &ImportOptions::default()).unwrap();
    assert_eq!(i.config.ports[0].headroom_xoff, None);
    assert!(
        has(&i, Kind::Unsupported, "BUFFER_PG|Ethernet0", ""),
        "{}",
        findings_text(&i)
    );
    let p = plan(&i);
    assert_eq!(p.buffer.unwrap().headroom[0].1, "computed");
}

#[test]
fn ports_naming_no_dscp_map_take_the_global_one_or_tc0() {
    let mut v: serde_json::Value = serde_json::from_str(&read("plain_format.json")).unwrap();
    v["PORT_QOS_MAP"]["Ethernet0"]
        .as_object_mut()
        .unwrap()
        .remove("dscp_to_tc_map");
    // no map anywhere: SAI leaves every DSCP (and every dot1p) on TC 0
    let i = import(&v.to_string(), "t.json", &ImportOptions::default()).unwrap();
    assert_eq!(i.config.ports[0].dscp_to_tc_map, "SONIC_TC0");
    assert_eq!(i.config.ports[0].dot1p_to_tc_map, "SONIC_TC0");
    assert_eq!(i.config.ports[1].dscp_to_tc_map, "AZURE");
    let p = plan(&i);
    assert_eq!(p.ports[0].config.dscp_to_tc, [0; 64]);
    assert_eq!(p.ports[0].config.pcp_to_tc, [0; 8]);
    // PORT_QOS_MAP|global (202205+) gives its DSCP map to ports naming none
    v["DSCP_TO_TC_MAP"]["ROCE"] = serde_json::json!({"26": "3", "48": "6"});
    v["PORT_QOS_MAP"]["global"] = serde_json::json!({"dscp_to_tc_map": "ROCE"});
    let i = import(&v.to_string(), "t.json", &ImportOptions::default()).unwrap();
    assert_eq!(i.config.ports[0].dscp_to_tc_map, "ROCE");
    assert_eq!(i.config.ports[1].dscp_to_tc_map, "AZURE");
    let p = plan(&i);
    assert_eq!(
        (
            p.ports[0].config.dscp_to_tc[26],
            p.ports[0].config.dscp_to_tc[0]
        ),
        (3, 0)
    );
}
