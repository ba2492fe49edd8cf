// Over 800 lines: every check of the P4 generator that needs no P4 tools, against one set of plans and golden files.
//! The P4 targets, everything that needs no P4 tools: the entry generator
//! against golden files (UPDATE_GOLDEN=1 rewrites them), the generator's
//! tables, keys, actions and ids against the P4 sources, refusals, the
//! P4Runtime JSON and bfrt script shapes, and the STF tests generated from
//! the conformance corpus (P4_STF_OUT=<dir> also writes them there).
//! Given the tools' own descriptions (P4INFO_BMV2, P4INFO_TOFINO,
//! BFRT_JSON_TOFINO, DYNHASH_TOFINO, which `cargo xtask p4 test` sets where
//! p4c / bf-p4c exist, and BFRT_TM_JSON, BFRT_PORT_JSON from an SDE), the
//! outputs and the Tofino flow hash are checked against those too; without
//! them those checks say so (`skips::skipped`, listed in the xtask
//! summary) and pass.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use dataplane_config::{Config, Plan};
use dataplane_p4::{self as p4, Op, Target};

mod skips;
use skips::skipped;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn plan_of(path: &Path) -> Plan {
    Config::load(path)
        .and_then(|c| c.validate(&path.display().to_string()))
        .unwrap_or_else(|e| panic!("{e}"))
}

fn plan_text(text: &str) -> Plan {
    Config::parse(text, "t.toml")
        .and_then(|c| c.validate("t.toml"))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The program's text with the shared include in front (its typedefs).
fn p4_source(t: Target) -> String {
    let r = root();
    let headers = std::fs::read_to_string(r.join("p4/include/headers.p4")).unwrap();
    let parser = std::fs::read_to_string(r.join("p4/include/parser.p4")).unwrap();
    let prog = std::fs::read_to_string(r.join(t.p4_program())).unwrap();
    format!("{headers}\n{parser}\n{prog}")
}

const GOLDEN: [&str; 2] = ["leaf", "small"];

/// Compares `got` with the golden file, or rewrites it with UPDATE_GOLDEN=1.
fn golden(name: &str, got: &str, problems: &mut Vec<String>) {
    let path = root().join("p4/tests/golden").join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, got).unwrap();
        return;
    }
    match std::fs::read_to_string(&path) {
        Ok(want) if want == got => {}
        Ok(want) => {
            let line = want
                .lines()
                .zip(got.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(want.lines().count().min(got.lines().count()));
            problems.push(format!(
                "{}: differs from the generator's output first at line {} (UPDATE_GOLDEN=1 rewrites it after review)\n    golden: {:?}\n    now:    {:?}",
                path.display(),
                line + 1,
                want.lines().nth(line).unwrap_or("<end>"),
                got.lines().nth(line).unwrap_or("<end>")
            ));
        }
        Err(e) => problems.push(format!(
            "{}: {e} (UPDATE_GOLDEN=1 writes it)",
            path.display()
        )),
    }
}

#[test]
fn golden_files_match_the_generator() {
    let mut problems = Vec::new();
    for case in GOLDEN {
        let plan = plan_of(&root().join(format!("p4/tests/{case}.toml")));
        let bmv2 =
            p4::entries(&plan, Target::Bmv2).unwrap_or_else(|e| panic!("{case} on bmv2: {e}"));
        assert!(bmv2.bfrt_py.is_none());
        golden(&format!("{case}.bmv2.txt"), &bmv2.cli, &mut problems);
        golden(
            &format!("{case}.bmv2.p4runtime.json"),
            &bmv2.p4runtime_json,
            &mut problems,
        );
        let tofino =
            p4::entries(&plan, Target::Tofino).unwrap_or_else(|e| panic!("{case} on tofino: {e}"));
        assert!(tofino.cli.is_empty());
        golden(
            &format!("{case}.tofino.p4runtime.json"),
            &tofino.p4runtime_json,
            &mut problems,
        );
        golden(
            &format!("{case}.tofino_bfrt.py"),
            tofino.bfrt_py.as_deref().unwrap(),
            &mut problems,
        );
        // deterministic
        assert_eq!(
            p4::entries(&plan, Target::Bmv2).unwrap(),
            bmv2,
            "{case}: two runs differ"
        );
        assert_eq!(
            p4::entries(&plan, Target::Tofino).unwrap(),
            tofino,
            "{case}: two runs differ"
        );
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Every configuration the tests know: golden, corpus, examples that pass.
fn all_plans() -> Vec<(String, Plan)> {
    let mut v: Vec<(String, Plan)> = GOLDEN
        .iter()
        .map(|c| {
            (
                c.to_string(),
                plan_of(&root().join(format!("p4/tests/{c}.toml"))),
            )
        })
        .collect();
    let corpus = p4::corpus::load(&root().join("p4/corpus")).unwrap();
    for (n, (_, plan)) in corpus.configs {
        v.push((format!("corpus/{n}"), plan));
    }
    v
}

/// The plans `t` expresses: every plan but, on Tofino, the corpus's
/// trimming configurations, which are checked to be refused there for
/// exactly the UET and trimming fields.
fn plans_for(t: Target) -> Vec<(String, Plan)> {
    all_plans()
        .into_iter()
        .filter(|(name, plan)| {
            if t != Target::Tofino || !name.starts_with("corpus/trim") {
                return true;
            }
            let e = p4::entries(plan, t).expect_err("trimming is refused on Tofino");
            assert!(
                e.refusals
                    .iter()
                    .all(|r| ["switch_trimming", "uet.feedback_tc"].contains(&r.field.as_str())),
                "{name}: {e}"
            );
            false
        })
        .collect()
}

#[test]
fn p4_sources_declare_what_the_generator_writes() {
    let mut problems = Vec::new();
    for t in Target::ALL {
        let sym = p4::table_names_in_p4(&p4_source(t));
        assert!(
            sym.tables.len() >= 10,
            "{t}: only {} tables found: the P4 reader is broken",
            sym.tables.len()
        );
        problems.extend(p4::check_p4_source(t, &sym));
        // every table and action an emitted entry names is declared, and
        // every value fits its key or parameter
        for (name, plan) in plans_for(t) {
            let ops = p4::table_ops(&plan, t, &p4::Options::default())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            for op in &ops {
                let Op::Entry(e) = op else { continue };
                let tq = e.table.qualified();
                let aq = e.action.qualified();
                let Some(pt) = sym.tables.get(&tq) else {
                    problems.push(format!("{t} {name}: table {tq} not in the P4 source"));
                    continue;
                };
                if !pt.actions.contains(&e.action.name.to_string()) {
                    problems.push(format!("{t} {name}: {tq} has no action {}", e.action.name));
                }
                let Some(pa) = sym.actions.get(&aq) else {
                    problems.push(format!("{t} {name}: action {aq} not in the P4 source"));
                    continue;
                };
                if pa.params.len() != e.args.len() {
                    problems.push(format!(
                        "{t} {name}: {aq} takes {} parameters, the entry has {}",
                        pa.params.len(),
                        e.args.len()
                    ));
                }
                for ((pn, w), v) in pa.params.iter().zip(&e.args) {
                    if !v.fits(*w) {
                        problems.push(format!(
                            "{t} {name}: {aq} parameter {pn} = {v:?} does not fit bit<{w}>"
                        ));
                    }
                }
                if !e.is_default && e.keys.len() != pt.keys.len() {
                    problems.push(format!(
                        "{t} {name}: {tq} has {} key fields, the entry {}",
                        pt.keys.len(),
                        e.keys.len()
                    ));
                }
                for (ks, kv) in e.table.keys.iter().zip(&e.keys) {
                    let ok = match kv {
                        p4::KeyVal::Exact(v) => v.fits(ks.width),
                        p4::KeyVal::Lpm(v, len) => v.fits(ks.width) && *len <= ks.width,
                        p4::KeyVal::Range(lo, hi) => lo <= hi && *hi >> ks.width == 0,
                    };
                    if !ok {
                        problems.push(format!(
                            "{t} {name}: {tq} key {} = {kv:?} does not fit bit<{}>",
                            ks.name, ks.width
                        ));
                    }
                }
            }
        }
        // bfrt_python takes keys and parameters as keyword arguments: they
        // must not collide within a table
        for ts in p4::tables(t) {
            for an in ts.actions {
                let a = p4::actions(t).into_iter().find(|a| a.name == *an).unwrap();
                let mut names = BTreeSet::new();
                for k in ts.keys {
                    names.insert(k.name);
                }
                for (p, _) in a.params {
                    if !names.insert(p) {
                        problems.push(format!(
                            "{t}: {} key and {an} parameter both named {p}",
                            ts.name
                        ));
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn p4_reader_finds_tables_keys_actions_and_ids() {
    let src = r#"
typedef bit<48> mac_t;
// a comment with table fake { }
/* table fake2 { } */
#define X 1
action top() { }
control C(inout h_t hdr) {
    @id(0x01000007) action a(bit<8> x, mac_t m, in bit<3> y) { }
    @name("C.b") action b() { }
    @id(0x02000009)
    table t {
        key = { hdr.f.g : exact @name("g"); meta.q : range; }
        actions = { a; @defaultonly NoAction; }
        size = 4;
    }
    table f {
        key = { hdr.f.g : ternary; }
        actions = { b; }
        const entries = { 1 : b(); }
    }
    table s {
        actions = { b; }
        const default_action = b();
    }
    table k {
        key = { hdr.f.g : exact; }
        actions = { b; }
        const default_action = b();
    }
    apply { @atomic { t.apply(); } }
}
"#;
    let s = p4::table_names_in_p4(src);
    assert_eq!(
        s.tables.keys().collect::<Vec<_>>(),
        vec!["C.f", "C.k", "C.s", "C.t"]
    );
    // filled by the program itself: constant entries, or no key and a
    // constant default; a keyed table with a constant default is not
    assert!(s.tables["C.f"].fixed && s.tables["C.s"].fixed);
    assert!(!s.tables["C.k"].fixed && !s.tables["C.t"].fixed);
    assert_eq!(
        (s.tables["C.t"].size, s.tables["C.s"].size),
        (Some(4), None)
    );
    let t = &s.tables["C.t"];
    assert_eq!(t.id, Some(0x0200_0009));
    assert_eq!(t.keys.len(), 2);
    assert_eq!(
        (
            t.keys[0].expr.as_str(),
            t.keys[0].kind.as_str(),
            t.keys[0].name.as_deref()
        ),
        ("hdr.f.g", "exact", Some("g"))
    );
    assert_eq!(
        (
            t.keys[1].expr.as_str(),
            t.keys[1].kind.as_str(),
            t.keys[1].name.as_deref()
        ),
        ("meta.q", "range", None)
    );
    assert_eq!(t.actions, vec!["a", "NoAction"]);
    let a = &s.actions["C.a"];
    assert_eq!(a.id, Some(0x0100_0007));
    assert_eq!(
        a.params,
        vec![
            ("x".to_string(), 8),
            ("m".to_string(), 48),
            ("y".to_string(), 3)
        ]
    );
    assert_eq!(s.actions["C.b"].id, None);
    assert!(s.actions.contains_key("top"));
}

#[test]
fn refuses_what_a_target_cannot_express() {
    // the example leaf: the watchdog and interface-read MACs
    let leaf = plan_of(&root().join("examples/leaf-lossless.toml"));
    for t in Target::ALL {
        let e = p4::entries(&leaf, t).expect_err("leaf-lossless.toml must be refused");
        assert_eq!(e.target, t);
        let fields: Vec<&str> = e.refusals.iter().map(|r| r.field.as_str()).collect();
        assert!(fields.contains(&"pfcwd"), "{t}: {fields:?}");
        assert!(fields.contains(&"port[0] (eth1).mac"), "{t}: {fields:?}");
        let text = e.to_string();
        assert!(
            text.contains("nothing generated") && text.contains("pfcwd:"),
            "{text}"
        );
    }
    // Tofino: port speeds and dynamic thresholds it has no setting for
    let odd = plan_text(
        r#"
[buffer]
dynamic_th = 5
lossy_dynamic_th = -8
[[port]]
name = "a"
mac = "02:00:00:00:00:0a"
speed = "10M"
[[port]]
name = "b"
mac = "02:00:00:00:00:0b"
speed = "100G"
"#,
    );
    let e = p4::entries(&odd, Target::Tofino).expect_err("Tofino must refuse");
    let fields: Vec<&str> = e.refusals.iter().map(|r| r.field.as_str()).collect();
    assert_eq!(
        fields,
        vec!["port[0] (a).speed", "buffer.dynamic_th"],
        "{e}"
    );
    // bmv2 expresses them (emulated)
    p4::entries(&odd, Target::Bmv2).unwrap_or_else(|e| panic!("bmv2: {e}"));
    // more prefixes than the TNA program's LPM table holds (1024 IPv6)
    let mut many = std::fs::read_to_string(root().join("p4/tests/small.toml")).unwrap();
    let (_, cap6) = p4::lpm_capacity(Target::Tofino);
    for i in 0..=cap6 {
        many.push_str(&format!(
            "\n[[route]]\nprefix = \"2001:db8:{:x}::/48\"\nnexthop = \"h0\"\n",
            i
        ));
    }
    let many = plan_text(&many);
    let e = p4::entries(&many, Target::Tofino).expect_err("Tofino must refuse");
    assert_eq!(e.refusals.len(), 1, "{e}");
    assert_eq!(e.refusals[0].field, "route", "{e}");
    let v6 = many.routes.iter().filter(|r| r.addr.is_ipv6()).count();
    assert!(v6 > cap6);
    assert!(
        e.refusals[0].reason.contains(&format!(
            "{v6} IPv6 routes, but the tofino program's LPM table holds {cap6}"
        )),
        "{e}"
    );
    p4::entries(&many, Target::Bmv2).unwrap_or_else(|e| panic!("bmv2: {e}"));
    // far-side notifications: eBPF only
    let far = plan_text(
        r#"
[[port]]
name = "a"
mac = "02:00:00:00:00:0a"
far_notify = true
"#,
    );
    for t in Target::ALL {
        let e = p4::entries(&far, t).expect_err("far_notify must be refused");
        let fields: Vec<&str> = e.refusals.iter().map(|r| r.field.as_str()).collect();
        assert_eq!(fields, vec!["port[0] (a).far_notify"], "{t}: {e}");
    }
    // a classification-only config needs no MACs
    let classify = plan_of(&root().join("p4/corpus/configs/classify.toml"));
    for t in Target::ALL {
        p4::entries(&classify, t).unwrap_or_else(|e| panic!("{t}: {e}"));
    }
}

#[test]
fn p4runtime_json_is_a_write_request_of_known_ids() {
    for t in Target::ALL {
        for (name, plan) in plans_for(t) {
            let out = p4::entries(&plan, t).unwrap();
            let v: serde_json::Value = serde_json::from_str(&out.p4runtime_json)
                .unwrap_or_else(|e| panic!("{name} {t}: {e}"));
            let updates = v["updates"].as_array().unwrap();
            assert!(!updates.is_empty());
            let table_ids: BTreeSet<u64> = p4::tables(t).iter().map(|t| u64::from(t.id)).collect();
            let action_ids: BTreeSet<u64> =
                p4::actions(t).iter().map(|a| u64::from(a.id)).collect();
            for u in updates {
                let kind = u["type"].as_str().unwrap();
                assert!(kind == "INSERT" || kind == "MODIFY", "{u}");
                if let Some(te) = u["entity"].get("tableEntry") {
                    assert!(table_ids.contains(&te["tableId"].as_u64().unwrap()), "{u}");
                    let act = &te["action"]["action"];
                    assert!(
                        action_ids.contains(&act["actionId"].as_u64().unwrap()),
                        "{u}"
                    );
                    for p in act["params"].as_array().unwrap() {
                        let b = p["value"].as_str().unwrap();
                        assert!(!b.is_empty() && b.len() % 4 == 0, "{u}");
                    }
                    assert_eq!(kind == "MODIFY", te.get("isDefaultAction").is_some(), "{u}");
                } else {
                    assert_eq!(t, Target::Bmv2, "only bmv2 has clone sessions");
                    assert!(
                        u["entity"]["packetReplicationEngineEntry"]["cloneSessionEntry"]
                            ["sessionId"]
                            .is_u64(),
                        "{u}"
                    );
                }
            }
        }
    }
    assert_eq!(p4::base64(b""), "");
    assert_eq!(p4::base64(b"f"), "Zg==");
    assert_eq!(p4::base64(b"fo"), "Zm8=");
    assert_eq!(p4::base64(b"foo"), "Zm9v");
    assert_eq!(p4::base64(&[0xfb, 0xff]), "+/8=");
    assert_eq!(p4::canonical_bytes(0), vec![0]);
    assert_eq!(p4::canonical_bytes(0x0102), vec![1, 2]);
}

#[test]
fn bfrt_script_is_python() {
    let python = std::process::Command::new("python3")
        .arg("--version")
        .output();
    if python.is_err() {
        skipped(
            "bfrt_script_is_python",
            "python3 not found: the bfrt scripts' syntax is not checked",
        );
        return;
    }
    for (name, plan) in plans_for(Target::Tofino) {
        let out = p4::entries(&plan, Target::Tofino).unwrap();
        let script = out.bfrt_py.unwrap();
        let dir = std::env::temp_dir().join(format!("dp-p4-bfrt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("s.py");
        std::fs::write(&f, &script).unwrap();
        let o = std::process::Command::new("python3")
            .args(["-c", "import ast, sys; ast.parse(open(sys.argv[1]).read())"])
            .arg(&f)
            .output()
            .unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            o.status.success(),
            "{name}: the bfrt script is not Python: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(script.contains("bfrt.complete_operations()"));
    }
}

#[test]
fn red_curve_in_ranges() {
    // 10..20 units, 5 %: 8 steps of rising probability, then always
    let r = p4::red_ranges(10, 20, 5);
    let always = r.last().unwrap();
    assert_eq!((always.0, always.3), (20, true));
    let steps = &r[..r.len() - 1];
    assert!(!steps.is_empty() && steps.iter().all(|s| !s.3 && s.2 > 0 && s.2 <= 13));
    assert!(
        steps
            .windows(2)
            .all(|w| w[0].1 < w[1].0 && w[0].2 <= w[1].2),
        "{r:?}"
    );
    assert!(steps[0].0 >= 10 && steps.last().unwrap().1 < 20);
    // min == max: a step
    assert_eq!(p4::red_ranges(7, 7, 50), vec![(7, (1 << 19) - 1, 0, true)]);
    // 100 %: the top step is near certain
    let r = p4::red_ranges(0, 1000, 100);
    assert!(r[r.len() - 2].2 >= 230, "{r:?}");
}

#[test]
fn bmv2_hash_is_crc32() {
    assert_eq!(p4::crc32(b"123456789"), 0xcbf4_3926);
    assert_eq!(p4::crc32(b""), 0);
    // the key layout: 4 + 16 + 16 + 1 + 2 + 2 + 3 bytes
    use dataplane_common::lb::FlowKey;
    let key = |qp| FlowKey::ipv6([1; 16], [2; 16], 17, 49152, 4791, qp);
    let a = p4::bmv2_flow_hash(7, &key(0x42));
    let b = p4::bmv2_flow_hash(7, &key(0x43));
    assert_ne!(a, b, "the destination QP is part of the hash");
    let mut key = vec![0, 0, 0, 7];
    key.extend([1; 16]);
    key.extend([2; 16]);
    key.extend([17, 0xc0, 0x00, 0x12, 0xb7, 0, 0, 0x42]);
    assert_eq!(a, p4::crc32(&key));
    // pinned from an independent CRC-32 (Python's zlib.crc32 over the same
    // 44 bytes, IPv4 mapped as ::ffff:a.b.c.d): what the P4 targets compute
    let v4 = |seed, sport, qp| {
        p4::bmv2_flow_hash(
            seed,
            &FlowKey::ipv4([198, 18, 0, 1], [198, 18, 1, 1], 17, sport, 4791, qp),
        )
    };
    assert_eq!(v4(7, 0xc0de, 0x42), 0xa5db_f84f);
    assert_eq!(v4(0, 49152, 0xff_ffff), 0xe076_7a1a);
}

#[test]
fn corpus_loads_and_becomes_stf_tests() {
    let corpus = p4::corpus::load(&root().join("p4/corpus")).unwrap_or_else(|e| panic!("{e}"));
    assert!(corpus.cases.len() >= 30, "{} cases", corpus.cases.len());
    let dir = match std::env::var_os("P4_STF_OUT") {
        Some(d) => PathBuf::from(d),
        None => std::env::temp_dir().join(format!("dp-p4-stf-{}", std::process::id())),
    };
    let (written, skipped) = p4::corpus::write_stf(&corpus, &dir, &p4::Options::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(written.len() + skipped.len(), corpus.cases.len());
    for (name, why) in &skipped {
        self::skipped(
            &format!("corpus case {name} on bmv2"),
            &format!("no STF test: {}", why.trim_start_matches("skipped: ")),
        );
    }
    // the spray case (random on bmv2) and the IPv6 trim (bmv2 trims IPv4
    // only)
    assert!(
        skipped
            .iter()
            .all(|(n, why)| (n.contains("spray") && why.contains("random"))
                || ((n.starts_with("trim_uet_v6") || n.starts_with("trim_v6"))
                    && why.contains("IPv4 only"))),
        "{skipped:?}"
    );
    let bmv2 = p4::table_names_in_p4(&p4_source(Target::Bmv2));
    let hex = |s: &str| s.chars().all(|c| c.is_ascii_hexdigit());
    let mut problems = Vec::new();
    for f in &written {
        let text = std::fs::read_to_string(f).unwrap();
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        let mut packets = 0;
        let mut expects = 0;
        for line in text.lines() {
            let mut w = line.split_whitespace();
            match w.next() {
                None => {}
                Some(c) if c.starts_with('#') => {}
                Some("add") | Some("setdefault") => {
                    let table = w.next().unwrap_or("");
                    let Some(t) = bmv2.tables.get(table) else {
                        problems.push(format!("{name}: {line}: no table {table}"));
                        continue;
                    };
                    let rest: Vec<&str> = w.collect();
                    let Some(call) = rest.last() else {
                        problems.push(format!("{name}: {line}: no action"));
                        continue;
                    };
                    let (act, args) = call.split_once('(').unwrap_or(("", ""));
                    if !bmv2.actions.contains_key(act) || !args.ends_with(')') {
                        problems.push(format!("{name}: {line}: bad action call {call}"));
                    }
                    for k in &rest[..rest.len() - 1] {
                        let (kn, kv) = k.split_once(':').unwrap_or(("", ""));
                        if !t.keys.iter().any(|pk| pk.name.as_deref() == Some(kn)) || kv.is_empty()
                        {
                            problems.push(format!("{name}: {line}: bad key {k}"));
                        }
                    }
                }
                Some("mirroring_add") => {
                    let args: Vec<&str> = w.collect();
                    if args.len() != 2 || args.iter().any(|a| a.parse::<u32>().is_err()) {
                        problems.push(format!("{name}: {line}"));
                    }
                }
                Some(cmd @ ("packet" | "expect")) => {
                    let port: Option<u32> = w.next().and_then(|p| p.parse().ok());
                    let data = w.next().unwrap_or("");
                    let data = if cmd == "expect" {
                        data.strip_suffix('$').unwrap_or("<no $>")
                    } else {
                        data
                    };
                    if port.is_none()
                        || data.len() < 28
                        || data.len() % 2 != 0
                        || !hex(data)
                        || w.next().is_some()
                    {
                        problems.push(format!("{name}: bad {cmd} line {line}"));
                    }
                    if cmd == "packet" {
                        packets += 1;
                    } else {
                        expects += 1;
                    }
                }
                Some(other) => problems.push(format!("{name}: unknown STF command {other}")),
            }
        }
        // the case's packet and those sent before it, each expected once
        // at most (a drop expects nothing)
        let before = corpus
            .cases
            .iter()
            .find(|c| format!("{}.stf", c.name) == name)
            .map_or(0, |c| c.before.len());
        if packets != 1 + before || expects > packets || expects < before {
            problems.push(format!(
                "{name}: {packets} packet and {expects} expect lines ({before} packets before)"
            ));
        }
    }
    if std::env::var_os("P4_STF_OUT").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    } else {
        eprintln!("wrote {} STF tests to {}", written.len(), dir.display());
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn stf_of_a_group_case_names_the_bucket_member() {
    // the STF expectation of a group case is bmv2's CRC-32 bucket member
    let corpus = p4::corpus::load(&root().join("p4/corpus")).unwrap();
    let c = corpus
        .cases
        .iter()
        .find(|c| c.name == "route_group_hash")
        .unwrap();
    let (_, plan) = &corpus.configs[&c.config];
    let port = p4::corpus::bmv2_group_port(plan, &c.frame)
        .unwrap()
        .unwrap();
    let stf = p4::corpus::stf(&corpus, c, &p4::Options::default()).unwrap();
    let expect = stf.lines().find(|l| l.starts_with("expect ")).unwrap();
    assert!(
        expect.starts_with(&format!("expect {port} ")),
        "{expect} (bmv2 picks port {port})"
    );
    // a spray case has none
    let s = corpus
        .cases
        .iter()
        .find(|c| c.name == "route_group_spray")
        .unwrap();
    assert!(p4::corpus::stf(&corpus, s, &p4::Options::default()).is_err());
}

/// Decodes standard base64 (the P4Runtime JSON mapping of `bytes`).
fn unbase64(s: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .expect("valid base64")
}

/// The element of a p4info array (match fields, parameters) with `id`.
fn with_id(list: &serde_json::Value, id: u64) -> Option<&serde_json::Value> {
    list.as_array()?
        .iter()
        .find(|x| x["id"].as_u64() == Some(id))
}

/// Whether a P4Runtime value (big-endian bytes) fits `width` bits.
fn fits_bits(bytes: &[u8], width: u64) -> bool {
    let lead = bytes.iter().take_while(|&&b| b == 0).count();
    let rest = &bytes[lead..];
    let Some(&first) = rest.first() else {
        return true;
    };
    let used = (rest.len() as u64 - 1) * 8 + u64::from(8 - first.leading_zeros() as u8);
    used <= width
}

/// The P4Runtime entries of every configuration against the p4info that
/// the compiler wrote for the program (`P4INFO_BMV2` from p4c,
/// `P4INFO_TOFINO` from bf-p4c; `cargo xtask p4 test` sets them where the
/// tools exist): every table, match field (id, kind, width), action (one
/// the table lists) and parameter (id, width) is the compiler's.
/// The compiler that writes a target's p4info.
fn compiler(t: Target) -> &'static str {
    match t {
        Target::Bmv2 => "p4c, run by cargo xtask p4 test / cargo xtask test when installed",
        Target::Tofino => "bf-p4c, which is not open source",
    }
}

#[test]
fn p4runtime_entries_match_the_compilers_p4info() {
    let mut checked = 0;
    for t in Target::ALL {
        let var = match t {
            Target::Bmv2 => "P4INFO_BMV2",
            Target::Tofino => "P4INFO_TOFINO",
        };
        let Some(path) = std::env::var_os(var) else {
            skipped(
                &format!("p4runtime_entries_match_the_compilers_p4info ({t})"),
                &format!(
                    "{var} not set: no p4info from the {t} compiler ({})",
                    compiler(t)
                ),
            );
            continue;
        };
        let info: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect(var)).expect(var);
        let by_id = |kind: &str| -> std::collections::BTreeMap<u64, serde_json::Value> {
            info[kind]
                .as_array()
                .map(|a| a.as_slice())
                .unwrap_or_default()
                .iter()
                .map(|x| (x["preamble"]["id"].as_u64().unwrap(), x.clone()))
                .collect()
        };
        let tables = by_id("tables");
        let actions = by_id("actions");
        assert!(tables.len() >= 10, "{t}: {var} has {} tables", tables.len());
        let mut problems = BTreeSet::new();
        for (name, plan) in plans_for(t) {
            let out = p4::entries(&plan, t).unwrap();
            let v: serde_json::Value = serde_json::from_str(&out.p4runtime_json).unwrap();
            for u in v["updates"].as_array().unwrap() {
                let Some(te) = u["entity"].get("tableEntry") else {
                    continue;
                };
                checked += 1;
                let tid = te["tableId"].as_u64().unwrap();
                let Some(pt) = tables.get(&tid) else {
                    problems.insert(format!("{t} {name}: table id 0x{tid:08x} not in {var}"));
                    continue;
                };
                let tname = pt["preamble"]["name"].as_str().unwrap_or("?");
                for m in te["match"]
                    .as_array()
                    .map(|a| a.as_slice())
                    .unwrap_or_default()
                {
                    let fid = m["fieldId"].as_u64().unwrap();
                    let Some(f) = with_id(&pt["matchFields"], fid) else {
                        problems.insert(format!("{t} {name}: {tname} has no match field {fid}"));
                        continue;
                    };
                    let width = f["bitwidth"].as_u64().unwrap();
                    let kind = f["matchType"].as_str().unwrap_or("").to_lowercase();
                    let Some((k, body)) =
                        m.as_object().unwrap().iter().find(|(k, _)| *k != "fieldId")
                    else {
                        continue;
                    };
                    if *k != kind {
                        problems.insert(format!(
                            "{t} {name}: {tname} field {} matches {kind}, the entry writes {k}",
                            f["name"]
                        ));
                    }
                    for (_, b) in body.as_object().unwrap() {
                        if let Some(b) = b.as_str() {
                            if !fits_bits(&unbase64(b), width) {
                                problems.insert(format!(
                                    "{t} {name}: {tname} field {} value {b} wider than {width} bits",
                                    f["name"]
                                ));
                            }
                        }
                    }
                }
                let act = &te["action"]["action"];
                let aid = act["actionId"].as_u64().unwrap();
                let listed = pt["actionRefs"]
                    .as_array()
                    .is_some_and(|r| r.iter().any(|r| r["id"].as_u64() == Some(aid)));
                let Some(pa) = actions.get(&aid).filter(|_| listed) else {
                    problems.insert(format!("{t} {name}: {tname} has no action id 0x{aid:08x}"));
                    continue;
                };
                let aname = pa["preamble"]["name"].as_str().unwrap_or("?");
                let want = pa["params"].as_array().map(Vec::len).unwrap_or(0);
                let got = act["params"].as_array().unwrap();
                if want != got.len() {
                    problems.insert(format!(
                        "{t} {name}: {aname} takes {want} parameters, the entry has {}",
                        got.len()
                    ));
                }
                for p in got {
                    let pid = p["paramId"].as_u64().unwrap();
                    let Some(pp) = with_id(&pa["params"], pid) else {
                        problems.insert(format!("{t} {name}: {aname} has no parameter {pid}"));
                        continue;
                    };
                    let width = pp["bitwidth"].as_u64().unwrap();
                    if !fits_bits(&unbase64(p["value"].as_str().unwrap()), width) {
                        problems.insert(format!(
                            "{t} {name}: {aname}.{} wider than {width} bits",
                            pp["name"]
                        ));
                    }
                }
            }
        }
        assert!(
            problems.is_empty(),
            "{}",
            problems.into_iter().collect::<Vec<_>>().join("\n")
        );
    }
    eprintln!("{checked} table entries checked against the compilers' p4info");
}

/// A BF Runtime schema (`bfrt.json` of the program, or a fixed-function
/// one of the SDE) and the prefix bfrt_python gives its tables.
struct BfrtSchema {
    what: &'static str,
    tables: Vec<serde_json::Value>,
    /// script object -> schema table prefix
    prefixes: &'static [(&'static str, &'static str)],
    /// every field must be given (the program's tables, which the
    /// generator fills completely), or any writable subset (fixed tables)
    strict: bool,
}

/// Splits `a=1, b=[1, 2], c=DEV_PORT["x"]` at top-level commas.
fn split_args(args: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let (mut depth, mut quote, mut cur) = (0i32, false, String::new());
    for c in args.chars() {
        match c {
            '"' => quote = !quote,
            '[' | '(' | '{' if !quote => depth += 1,
            ']' | ')' | '}' if !quote => depth -= 1,
            ',' if !quote && depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur);
    out.iter()
        .filter_map(|a| a.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// Problems of one bfrt_python call `<object>.<table>.<method>(<args>)`
/// against a schema; false when the call is not to one of its tables.
fn check_bfrt_call(line: &str, schema: &BfrtSchema, problems: &mut BTreeSet<String>) -> bool {
    let Some((prefix, rest)) = schema
        .prefixes
        .iter()
        .find_map(|(obj, pre)| line.strip_prefix(obj).map(|r| (*pre, r)))
    else {
        return false;
    };
    let Some(open) = rest.find('(') else {
        return false;
    };
    let Some((table, method)) = rest[..open].rsplit_once('.') else {
        return false;
    };
    let args = rest[open + 1..].trim_end().trim_end_matches(')');
    // bfrt_python names the port table `$PORT` port.port
    let full = if prefix == "$" {
        format!("${}", table.to_uppercase())
    } else {
        format!("{prefix}{table}")
    };
    let what = schema.what;
    let Some(t) = schema
        .tables
        .iter()
        .find(|t| t["name"].as_str() == Some(&full))
    else {
        problems.insert(format!("{what}: no table {full} ({line})"));
        return true;
    };
    let (verb, action) = match method.split_once("_with_") {
        Some((v, a)) => (v, Some(a)),
        None => (method, None),
    };
    if !matches!(verb, "add" | "mod" | "set_default" | "get") {
        problems.insert(format!(
            "{what}: {full} has no method {method} in bfrt_python"
        ));
        return true;
    }
    let empty = Vec::new();
    let arr = |v: &serde_json::Value| v.as_array().unwrap_or(&empty).clone();
    // (python name, field, mandatory, read only, choices)
    let mut fields: Vec<(String, bool, bool, Vec<String>)> = Vec::new();
    let choices = |ty: &serde_json::Value| -> Vec<String> {
        arr(&ty["choices"])
            .iter()
            .filter_map(|c| c.as_str().map(String::from))
            .collect()
    };
    if verb != "set_default" {
        for k in arr(&t["key"]) {
            let name = k["name"]
                .as_str()
                .unwrap()
                .trim_start_matches('$')
                .to_string();
            let mandatory = k["mandatory"].as_bool().unwrap_or(true) && name != "MATCH_PRIORITY";
            let ch = choices(&k["type"]);
            match k["match_type"].as_str().unwrap_or("") {
                "LPM" => {
                    fields.push((name.clone(), mandatory, false, ch));
                    fields.push((format!("{name}_p_length"), mandatory, false, Vec::new()));
                }
                "Range" => {
                    fields.push((format!("{name}_start"), mandatory, false, Vec::new()));
                    fields.push((format!("{name}_end"), mandatory, false, Vec::new()));
                }
                "Ternary" => {
                    fields.push((name.clone(), mandatory, false, ch));
                    fields.push((format!("{name}_mask"), mandatory, false, Vec::new()));
                }
                _ => fields.push((name, mandatory || k["name"] == "$MATCH_PRIORITY", false, ch)),
            }
        }
    }
    let mut data = arr(&t["data"]);
    if let Some(a) = action {
        let Some(spec) = arr(&t["action_specs"]).into_iter().find(|s| {
            s["name"]
                .as_str()
                .is_some_and(|n| n == a || n.ends_with(&format!(".{a}")))
        }) else {
            problems.insert(format!("{what}: {full} has no action {a}"));
            return true;
        };
        data.extend(arr(&spec["data"]));
    }
    if verb != "get" {
        for d in &data {
            let f = if d.get("singleton").is_some() {
                &d["singleton"]
            } else {
                d
            };
            let Some(n) = f["name"].as_str() else {
                continue;
            };
            fields.push((
                n.trim_start_matches('$').to_string(),
                false,
                d["read_only"].as_bool().unwrap_or(false),
                choices(&f["type"]),
            ));
        }
    }
    let given = split_args(args);
    let special = ["pipe", "gress_dir", "prsr_id", "from_hw", "print_ents"];
    for (k, v) in &given {
        if special.contains(&k.as_str()) {
            continue;
        }
        let Some((_, _, ro, ch)) = fields.iter().find(|f| f.0 == *k) else {
            problems.insert(format!("{what}: {full}.{method} has no argument {k}"));
            continue;
        };
        if *ro {
            problems.insert(format!(
                "{what}: {full}.{method}: {k} is read-only (bfrt_python skips it)"
            ));
        }
        let literal = v.trim_matches('"');
        let is_literal = v.starts_with('"') || v.parse::<i64>().is_ok();
        if !ch.is_empty() && is_literal && !ch.iter().any(|c| c == literal) {
            problems.insert(format!(
                "{what}: {full}.{method}: {k}={v} is not one of {ch:?}"
            ));
        }
    }
    for (name, mandatory, _, _) in &fields {
        let needed = *mandatory || (schema.strict && verb != "get");
        if needed && !given.iter().any(|(k, _)| k == name) {
            problems.insert(format!("{what}: {full}.{method} lacks {name}"));
        }
    }
    true
}

/// The bfrt_python script's table calls against BF Runtime schemas: the
/// one bf-p4c wrote for the program (`BFRT_JSON_TOFINO`: every
/// `ig.`/`eg.` call names a table, an action it lists, exactly its key
/// fields and the action's data) and, where given, the SDE's
/// fixed-function ones (`BFRT_TM_JSON`, `BFRT_PORT_JSON`: bf-drivers'
/// `bf_rt_tm_tf1.json` and `bf_rt_port_tf1.json`; every `tm.` and
/// `bfrt.port.port.` call names a table, its mandatory keys and writable
/// fields only, and string values among the field's choices, such as the
/// dynamic BAF percentages).
#[test]
fn bfrt_script_calls_match_the_bfrt_schemas() {
    let load = |var: &str| -> Option<Vec<serde_json::Value>> {
        let path = std::env::var_os(var)?;
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect(var)).expect(var);
        Some(v["tables"].as_array().expect(var).clone())
    };
    let mut schemas = Vec::new();
    for (var, what, prefixes, strict) in [
        (
            "BFRT_JSON_TOFINO",
            "bfrt.json (bf-p4c)",
            &[("ig.", "pipe.DpIngress."), ("eg.", "pipe.DpEgress.")][..],
            true,
        ),
        (
            "BFRT_TM_JSON",
            "bf_rt_tm_tf1.json (SDE)",
            &[("tm.", "tf1.tm.")][..],
            false,
        ),
        (
            "BFRT_PORT_JSON",
            "bf_rt_port_tf1.json (SDE)",
            &[("bfrt.port.", "$")][..],
            false,
        ),
    ] {
        match load(var) {
            Some(tables) => schemas.push(BfrtSchema {
                what,
                tables,
                prefixes,
                strict,
            }),
            None => skipped(
                "bfrt_script_calls_match_the_bfrt_schemas",
                &format!("{var} ({what}) not set: the calls it describes are not checked"),
            ),
        }
    }
    if schemas.is_empty() {
        return;
    }
    let mut problems = BTreeSet::new();
    let mut calls = vec![0usize; schemas.len()];
    for (name, plan) in plans_for(Target::Tofino) {
        let script = p4::entries(&plan, Target::Tofino).unwrap().bfrt_py.unwrap();
        for line in script.lines().map(str::trim) {
            for (i, s) in schemas.iter().enumerate() {
                let before = problems.len();
                if check_bfrt_call(line, s, &mut problems) {
                    calls[i] += 1;
                    if problems.len() > before {
                        problems.insert(format!("  in {name}: {line}"));
                    }
                }
            }
            // percentages are dynamic BAF choices wherever they appear
            if let Some(tm) = schemas.iter().find(|s| s.prefixes[0].0 == "tm.") {
                let bafs: Vec<String> = tm
                    .tables
                    .iter()
                    .find(|t| t["name"] == "tf1.tm.queue.buffer")
                    .and_then(|t| t["action_specs"].as_array())
                    .into_iter()
                    .flatten()
                    .flat_map(|a| a["data"].as_array().cloned().unwrap_or_default())
                    .filter(|d| d["singleton"]["name"] == "dynamic_baf")
                    .flat_map(|d| {
                        d["singleton"]["type"]["choices"]
                            .as_array()
                            .cloned()
                            .unwrap_or_default()
                    })
                    .filter_map(|c| c.as_str().map(String::from))
                    .collect();
                for lit in line
                    .split('"')
                    .skip(1)
                    .step_by(2)
                    .filter(|l| l.ends_with('%'))
                {
                    if !bafs.iter().any(|b| b == lit) {
                        problems.insert(format!(
                            "{name}: dynamic BAF \"{lit}\" is not one of {bafs:?}"
                        ));
                    }
                }
            }
        }
    }
    for (s, n) in schemas.iter().zip(&calls) {
        eprintln!("{n} bfrt calls checked against {}", s.what);
        assert!(*n > 0, "no call to a table of {}", s.what);
    }
    assert!(
        problems.is_empty(),
        "{}",
        problems.into_iter().collect::<Vec<_>>().join("\n")
    );
}

/// The Tofino flow hash is the v1model one: bf-p4c's description of the
/// compiled hash units (`DYNHASH_TOFINO`: pipe/dataplane.dynhash.json, from
/// `bf-p4c -g`) must show the standard reflected CRC-32 (bmv2's `crc32`)
/// over the same 44-byte key, field by field: seed, source and destination
/// as 128 bits (IPv4 as ::ffff:a.b.c.d), protocol, ports, destination QP.
/// Then a flow in hash mode takes the same bucket on both targets.
#[test]
fn tofino_flow_hash_is_bmv2_crc32_over_the_same_key() {
    let Some(path) = std::env::var_os("DYNHASH_TOFINO") else {
        skipped(
            "tofino_flow_hash_is_bmv2_crc32_over_the_same_key",
            "DYNHASH_TOFINO not set: no bf-p4c -g output (bf-p4c is not installed)",
        );
        return;
    };
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let calcs = v["dynamic_hash_calculations"].as_array().unwrap();
    let ip4_tail = [
        ("hdr.ipv4.protocol", 8),
        ("meta.flow_sport", 16),
        ("meta.flow_dport", 16),
        ("meta.flow_qp", 24),
    ];
    let ip6_tail = [
        ("hdr.ipv6.next_hdr", 8),
        ("meta.flow_sport", 16),
        ("meta.flow_dport", 16),
        ("meta.flow_qp", 24),
    ];
    let mapped = |a: &'static str| [("=0", 80), ("=0xffff", 16), (a, 32)];
    let mut want4: Vec<(&str, u64)> = vec![("meta.hash_seed", 32)];
    want4.extend(mapped("hdr.ipv4.src_addr"));
    want4.extend(mapped("hdr.ipv4.dst_addr"));
    want4.extend(ip4_tail);
    let mut want6: Vec<(&str, u64)> = vec![
        ("meta.hash_seed", 32),
        ("hdr.ipv6.src_addr", 128),
        ("hdr.ipv6.dst_addr", 128),
    ];
    want6.extend(ip6_tail);
    for (name, want) in [("DpIngress.hash_v4", want4), ("DpIngress.hash_v6", want6)] {
        let c = calcs
            .iter()
            .find(|c| c["name"].as_str().is_some_and(|n| n.starts_with(name)))
            .unwrap_or_else(|| panic!("{name} not in {}", path.to_string_lossy()));
        let alg = &c["algorithms"][0];
        assert_eq!(
            (
                alg["type"].as_str(),
                alg["reverse"].as_bool(),
                alg["poly"].as_str(),
                alg["init"].as_str(),
                alg["final_xor"].as_str()
            ),
            (
                Some("crc"),
                Some(true),
                Some("0x104c11db7"),
                Some("0xffffffff"),
                Some("0xffffffff")
            ),
            "{name}: not the reflected CRC-32 of bmv2's crc32: {alg}"
        );
        let fields = c["field_lists"][0]["fields"].as_array().unwrap();
        let got: Vec<(String, u64)> = fields
            .iter()
            .map(|f| {
                let n = f["name"].as_str().unwrap();
                // constants are named constantN_<width>_<value>
                let n = if f["is_constant"].as_bool() == Some(true) {
                    let value = n.rsplit('_').next().unwrap();
                    let value = value.split_once('w').map_or(value, |(_, v)| v);
                    format!("={value}")
                } else {
                    n.to_string()
                };
                (n, f["bit_width"].as_u64().unwrap())
            })
            .collect();
        let want: Vec<(String, u64)> = want.iter().map(|(n, w)| (n.to_string(), *w)).collect();
        assert_eq!(
            got, want,
            "{name}: the hashed fields differ from the v1model key"
        );
        let bytes: u64 = got.iter().map(|f| f.1).sum::<u64>() / 8;
        assert_eq!(bytes, 44, "{name}");
    }
    eprintln!("hash_v4 and hash_v6: CRC-32 over the v1model program's 44-byte key");
}

/// headers.p4's CPU_* constants are the corpus's `cpu_code` of the reason
/// they are named after (the P4 programs' one mapping to the reason table).
#[test]
fn cpu_codes_in_headers_p4_are_the_reason_tables() {
    use dataplane_common::parse::ParseError;
    use dataplane_common::reason::{Reason, Why};
    use dataplane_p4::corpus::{cpu_code, cpu_reasons};
    let text = std::fs::read_to_string(root().join("p4/include/headers.p4")).unwrap();
    let mut found = std::collections::BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.trim().strip_prefix("const bit<8> CPU_") else {
            continue;
        };
        let (name, value) = rest.split_once('=').expect("CPU_X = n");
        let value: u8 = value
            .split(';')
            .next()
            .and_then(|v| v.trim().parse().ok())
            .expect("CPU_X = <number>;");
        found.insert(name.trim().to_lowercase(), value);
    }
    let mut want: Vec<(String, Why)> = cpu_reasons()
        .iter()
        .map(|r| (r.name().to_string(), Why::Other(*r)))
        .collect();
    want.push(("malformed".into(), Why::Malformed(ParseError::EthTruncated)));
    for (name, why) in &want {
        assert_eq!(
            found.get(name.as_str()).copied(),
            cpu_code(*why),
            "CPU_{} in headers.p4 vs cpu_code({why:?})",
            name.to_uppercase()
        );
    }
    assert_eq!(found.len(), want.len(), "CPU_* constants {found:?}");
    assert_eq!(cpu_code(Why::Other(Reason::NoRoute)), None);
}

/// headers.p4's LB_MODE_* constants are dataplane_common's MODE_* (the
/// mode number set_group carries), one per mode name, and set_group's mode
/// parameter holds them all.
#[test]
fn lb_modes_in_headers_p4_are_dataplane_commons() {
    use dataplane_common::lb::{MODE_LAST, MODE_NAMES};
    let text = std::fs::read_to_string(root().join("p4/include/headers.p4")).unwrap();
    let mut found = std::collections::BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.trim().strip_prefix("const bit<") else {
            continue;
        };
        let Some((width, rest)) = rest.split_once("> LB_MODE_") else {
            continue;
        };
        let (name, value) = rest.split_once('=').expect("LB_MODE_X = n");
        let value: u8 = value
            .split(';')
            .next()
            .and_then(|v| v.trim().parse().ok())
            .expect("LB_MODE_X = <number>;");
        let width: u32 = width.parse().expect("bit<N>");
        assert!(
            u32::from(MODE_LAST) >> width == 0,
            "LB_MODE_{name}: bit<{width}> cannot hold {MODE_LAST}"
        );
        found.insert(name.trim().to_lowercase(), value);
    }
    let want: std::collections::BTreeMap<String, u8> = MODE_NAMES
        .iter()
        .enumerate()
        .map(|(i, n)| (n.to_string(), i as u8))
        .collect();
    assert_eq!(
        found, want,
        "headers.p4 LB_MODE_* vs dataplane_common::lb::MODE_NAMES"
    );
    for t in Target::ALL {
        let a = p4::actions(t)
            .into_iter()
            .find(|a| a.name == "set_group")
            .unwrap();
        let (_, w) = a.params.iter().find(|(n, _)| *n == "mode").unwrap();
        assert!(
            u32::from(MODE_LAST) >> w == 0,
            "{t}: set_group mode is bit<{w}>"
        );
    }
}

/// A place group: set_group with mode 4, the load tables on Tofino (its
/// bands choose, as in bandwidth mode), and on bmv2 each port's wire shift
/// in place_cfg (the bookings, which Tofino does not have).
#[test]
fn place_groups_generate_their_tables() {
    let corpus = p4::corpus::load(&root().join("p4/corpus")).unwrap();
    let (_, plan) = &corpus.configs["route"];
    let gi = plan.groups.iter().position(|g| g.name == "pl").unwrap();
    assert_eq!(plan.groups[gi].mode, dataplane_common::lb::MODE_PLACE);
    let cli = p4::entries(plan, Target::Bmv2).unwrap().cli;
    assert!(
        cli.contains(&format!(
            "table_add DpIngress.group_cfg DpIngress.set_group {gi} => 4 1000\n"
        )),
        "{cli}"
    );
    // the corpus's ports run at the default 100G: 12500 bytes per us, 2^14
    let place: Vec<&str> = cli.lines().filter(|l| l.contains("place_cfg")).collect();
    assert_eq!(place.len(), plan.ports.len(), "{place:?}");
    assert!(place.iter().all(|l| l.ends_with("=> 14")), "{place:?}");
    let tofino = p4::entries(plan, Target::Tofino).unwrap();
    let py = tofino.bfrt_py.unwrap();
    assert!(
        py.contains("def poll_loads"),
        "Tofino place groups need the load poller"
    );
    assert!(!py.contains("place_cfg"));
    // no place group, no place_cfg
    let small = plan_of(&root().join("p4/tests/small.toml"));
    assert!(!p4::entries(&small, Target::Bmv2)
        .unwrap()
        .cli
        .contains("place_cfg"));
}

/// UET settings and trimming: bmv2 entries (uet_cfg, group_uet, trim_cfg,
/// trim_dyn_queue), Tofino refusals naming each field.
#[test]
fn uet_and_trimming_generate_for_bmv2_and_are_refused_for_tofino() {
    let mut text = std::fs::read_to_string(root().join("p4/tests/small.toml")).unwrap();
    p4::entries(&plan_text(&text), Target::Bmv2).unwrap_or_else(|e| panic!("bmv2: {e}"));
    text.push_str("\n[uet]\nfeedback_tc = 6\n");
    let plan = plan_text(&text);
    let e = p4::entries(&plan, Target::Tofino).expect_err("uet.feedback_tc must be refused");
    let fields: Vec<&str> = e.refusals.iter().map(|r| r.field.as_str()).collect();
    assert_eq!(fields, vec!["uet.feedback_tc"], "{e}");
    let cli = p4::entries(&plan, Target::Bmv2).unwrap().cli;
    assert!(
        cli.contains("table_set_default DpIngress.uet_cfg DpIngress.set_uet 1 6"),
        "{cli}"
    );
    // an entropy group and trimming (a dynamic queue: the trim DSCP's class
    // by each ingress DSCP map)
    let mut text = std::fs::read_to_string(root().join("p4/tests/small.toml")).unwrap();
    assert!(text.contains("[[group]]"), "small.toml has a group");
    text = text.replacen("[[group]]", "[[group]]\nuet_entropy = true", 1);
    text.push_str("\n[switch_trimming]\nsize = 200\ndscp_value = 48\nqueue_index = \"dynamic\"\n");
    text.push_str("[buffer_profile.T]\npacket_discard_action = \"trim\"\n");
    text = text.replacen(
        "name = \"u0\"\n",
        "name = \"u0\"\nbuffer_queue = { \"0-2\" = \"T\" }\n",
        1,
    );
    let plan = plan_text(&text);
    let e = p4::entries(&plan, Target::Tofino).expect_err("must be refused");
    let fields: Vec<&str> = e.refusals.iter().map(|r| r.field.as_str()).collect();
    assert!(
        fields
            .iter()
            .any(|f| f.ends_with(".uet_entropy") && f.starts_with("group[0]")),
        "{e}"
    );
    assert!(fields.contains(&"switch_trimming"), "{e}");
    let cli = p4::entries(&plan, Target::Bmv2).unwrap().cli;
    assert!(
        cli.contains("table_add DpIngress.group_uet DpIngress.set_group_uet 0 =>"),
        "{cli}"
    );
    // u0 (port 2) trims queues 0-2: size 200, DSCP 48, dynamic; AZURE (the
    // one DSCP map) gives DSCP 48 class 6
    let trim: Vec<&str> = cli.lines().filter(|l| l.contains("trim")).collect();
    assert_eq!(
        trim,
        vec![
            "table_add DpIngress.trim_cfg DpIngress.set_trim 2 => 200 48 0 1 7",
            "table_add DpIngress.trim_dyn_queue DpIngress.set_trim_queue 1 48 => 6",
        ],
        "{cli}"
    );
    let t = plan.trim.as_ref().expect("trim plan");
    assert_eq!(t.config.queue, dataplane_common::trim::QUEUE_DYNAMIC);
}
