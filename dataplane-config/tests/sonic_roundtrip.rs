//! Round trip: for generated configurations within what CONFIG_DB can
//! express, export-sonic then import-sonic gives an equal configuration
//! (compared field by field, after the import's TOML is parsed back),
//! and export reports nothing lost for them. 10,000 cases by default
//! (SONIC_ROUNDTRIP_CASES=N for another count); each case's seed is
//! printed on failure.

use std::collections::BTreeMap;

use dataplane_common::rand::SplitMix64;
use dataplane_config::sonic::{export, import, ImportOptions, Kind};
use dataplane_config::*;
use toml::Value;

struct Gen(SplitMix64);

impl Gen {
    fn below(&mut self, n: usize) -> usize {
        self.0.below(n)
    }
    fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.0.below((hi - lo + 1) as usize) as i64
    }
    fn coin(&mut self) -> bool {
        self.below(2) == 0
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

/// A DSCP map in the import's form: `default` (strictly the most
/// frequent class) and at most 20 codepoints that differ.
fn dscp_map(g: &mut Gen) -> BTreeMap<String, Value> {
    let d = g.int(0, 7);
    let mut m = BTreeMap::from([("default".to_string(), Value::Integer(d))]);
    for _ in 0..g.below(21) {
        let c = g.int(0, 7);
        if c != d {
            m.insert(g.below(64).to_string(), Value::Integer(c));
        }
    }
    m
}

fn full8(g: &mut Gen, lo: i64, hi: i64) -> BTreeMap<String, Value> {
    (0..8)
        .map(|i| (i.to_string(), Value::Integer(g.int(lo, hi))))
        .collect()
}

fn wred(g: &mut Gen) -> WredSection {
    let min = g.int(0, 4_000_000);
    WredSection {
        ecn: g
            .pick(&["ecn_none", "ecn_green", "ecn_all", "ecn_green_red"])
            .to_string(),
        green_min_threshold: min,
        green_max_threshold: g.int(min, 8_000_000),
        green_drop_probability: g.int(0, 100),
        wred_green_enable: g.coin(),
    }
}

/// Disjoint queue ranges of a port's `buffer_queue`.
fn queue_ranges(g: &mut Gen) -> Vec<(u8, u8)> {
    let mut out = Vec::new();
    let mut q = g.int(0, 7) as u8;
    while q <= 7 && g.below(3) != 0 {
        let end = g.int(i64::from(q), 7) as u8;
        out.push((q, end));
        q = end + 1 + g.int(0, 2) as u8;
    }
    out
}

fn range_key(a: u8, b: u8) -> String {
    if a == b {
        a.to_string()
    } else {
        format!("{a}-{b}")
    }
}

fn generate(g: &mut Gen) -> Config {
    let mut c = Config::default();
    c.switch.name = format!("sw{}", g.below(1000));
    for i in 0..g.below(4) {
        c.dscp_to_tc_map.insert(format!("D{i}"), dscp_map(g));
    }
    if g.below(8) == 0 {
        c.dscp_to_tc_map.insert(
            "SONIC_TC0".into(),
            BTreeMap::from([("default".into(), Value::Integer(0))]),
        );
    }
    for i in 0..g.below(3) {
        c.dot1p_to_tc_map.insert(format!("P{i}"), full8(g, 0, 7));
    }
    for i in 0..g.below(3) {
        let mut m = full8(g, 0, 63);
        m.retain(|_, _| g.coin());
        c.tc_to_dscp_map.insert(format!("T{i}"), m);
    }
    for i in 0..g.below(3) {
        c.wred_profile.insert(format!("W{i}"), wred(g));
    }
    if g.below(5) == 0 {
        // the profile the import writes for lossless queues without WRED
        c.wred_profile.insert(
            "SONIC_NO_WRED".into(),
            WredSection {
                ecn: "ecn_none".into(),
                green_min_threshold: i64::from(u32::MAX),
                green_max_threshold: i64::from(u32::MAX),
                green_drop_probability: 0,
                wred_green_enable: false,
            },
        );
    }
    let buffer = g.below(4) != 0;
    if buffer {
        c.buffer = Some(BufferSection {
            pool_size: g.int(4 << 20, 64 << 20),
            dynamic_th: g.int(-8, 7),
            lossy_dynamic_th: g.int(-8, 7),
            reserve: if g.coin() { 0 } else { g.int(1, 4096) },
            xon_offset: g.int(0, 8192),
            mtu: g.int(1500, 9216),
            cable_length_m: 5,
            response_us: None,
            pfc_tx: "auto".into(),
            tick_us: 200,
        });
    }
    let dscp_names: Vec<String> = std::iter::once(AZURE.to_string())
        .chain(c.dscp_to_tc_map.keys().cloned())
        .collect();
    let pcp_names: Vec<String> = std::iter::once(AZURE.to_string())
        .chain(c.dot1p_to_tc_map.keys().cloned())
        .collect();
    let tcd_names: Vec<String> = c.tc_to_dscp_map.keys().cloned().collect();
    let wred_names: Vec<String> = c.wred_profile.keys().cloned().collect();
    let mut trims = false;
    let nports = 1 + g.below(4);
    for i in 0..nports {
        let lossless = g.below(256) as u8 & if g.coin() { 0x18 } else { 0xff };
        let pfc: Vec<String> = (0..8)
            .filter(|b| lossless & (1 << b) != 0)
            .map(|b| b.to_string())
            .collect();
        let trust = if g.below(4) == 0 { "dot1p" } else { "dscp" };
        let mut p =
            toml::from_str::<PortSection>(&format!("name = \"eth{}\"", 10 * i + g.below(10)))
                .unwrap();
        p.trust = trust.into();
        p.dscp_to_tc_map = if trust == "dscp" {
            g.pick(&dscp_names).clone()
        } else {
            AZURE.into()
        };
        p.dot1p_to_tc_map = g.pick(&pcp_names).clone();
        p.pfc_enable = pfc.join(",");
        p.speed = g.coin().then(|| {
            Value::Integer(*g.pick(&[10_000, 25_000, 40_000, 50_000, 100_000, 200_000, 400_000]))
        });
        if !tcd_names.is_empty() && g.coin() {
            p.tc_to_dscp_map = Some(g.pick(&tcd_names).clone());
        }
        if lossless != 0 && !wred_names.is_empty() && g.coin() {
            p.wred_profile = Some(g.pick(&wred_names).clone());
        }
        if lossless != 0xff && g.coin() {
            p.lossy_wred_profile = Some(if wred_names.is_empty() || g.coin() {
                "AZURE_LOSSLESS".into()
            } else {
                g.pick(&wred_names).clone()
            });
        }
        if let Some(b) = &c.buffer {
            // a cable per port: SONiC names lossless profiles by speed and cable
            p.cable_length_m = Some(10 * i as i64 + g.int(0, 9));
            if lossless != 0 {
                let xoff = g.int(1000, b.pool_size / 4);
                let xon = g.int(0, xoff);
                if b.reserve != 0 && b.reserve == xoff + xon {
                    continue;
                }
                p.headroom_xoff = Some(xoff);
                p.headroom_xon = Some(xon);
            }
            for (a, z) in queue_ranges(g) {
                let bits: u8 = (a..=z).fold(0, |m, q| m | 1 << q);
                let trim = bits & lossless == 0 && g.coin();
                trims |= trim;
                let name = if trim { "QTRIM" } else { "QDROP" };
                c.buffer_profile.insert(
                    name.into(),
                    BufferProfileSection {
                        packet_discard_action: if trim { "trim" } else { "drop" }.into(),
                    },
                );
                p.buffer_queue.insert(range_key(a, z), name.into());
            }
        }
        c.ports.push(p);
    }
    let mut seen = std::collections::BTreeSet::new();
    c.ports.retain(|p| seen.insert(p.name.clone()));
    if c.ports.is_empty() {
        c.ports
            .push(toml::from_str::<PortSection>("name = \"eth0\"\npfc_enable = \"\"").unwrap());
    }
    let any_lossless = c.ports.iter().any(|p| !p.pfc_enable.is_empty());
    let any_lossy = c.ports.iter().any(|p| p.pfc_enable.split(',').count() < 8);
    if let Some(b) = &mut c.buffer {
        if !any_lossy {
            b.lossy_dynamic_th = 3;
        }
        if !any_lossless {
            b.dynamic_th = 0;
            b.xon_offset = 0;
        }
    }
    if buffer {
        if g.coin() {
            let detection = g.int(100, 5000);
            c.pfcwd = Some(PfcwdSection {
                detection_time_ms: detection,
                restoration_time_ms: g.int(100, 60_000),
                poll_interval_ms: g.int(1, detection),
                action: g.pick(&["drop", "forward", "alert"]).to_string(),
            });
        }
        if trims || g.below(4) == 0 {
            c.switch_trimming = Some(SwitchTrimmingSection {
                size: g.int(64, 9216),
                dscp_value: Value::Integer(g.int(0, 63)),
                tc_value: None,
                queue_index: if g.coin() {
                    Value::String("dynamic".into())
                } else {
                    Value::Integer(g.int(0, 7))
                },
            });
        }
    }
    if g.coin() {
        let tsa: Vec<String> = (0..8)
            .map(|_| if g.below(4) == 0 { "strict" } else { "ets" }.to_string())
            .collect();
        let ets: Vec<usize> = (0..8).filter(|&i| tsa[i] == "ets").collect();
        let mut bw = vec![0i64; 8];
        let mut left = 100;
        for (k, &i) in ets.iter().enumerate() {
            let share = if k + 1 == ets.len() {
                left
            } else {
                g.int(0, left)
            };
            bw[i] = share;
            left -= share;
        }
        let mut d: DcbxSection = toml::from_str("enable = false").unwrap();
        d.ets_bandwidth = bw;
        d.ets_tsa = tsa;
        c.dcbx = Some(d);
    }
    c
}

#[test]
fn export_then_import_gives_an_equal_configuration() {
    let cases: u64 = std::env::var("SONIC_ROUNDTRIP_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let mut exercised = BTreeMap::<&str, u64>::new();
    for seed in 0..cases {
        let mut g = Gen(SplitMix64(seed));
        let c = generate(&mut g);
        if let Err(e) = c.validate("generated") {
            panic!("seed {seed}: the generator made an invalid configuration:\n{e}\n{c:#?}");
        }
        let ex = export(&c, "generated").unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let lost: Vec<String> = ex
            .findings
            .iter()
            .filter(|f| f.kind == Kind::Unsupported)
            .map(|f| f.to_string())
            .collect();
        assert!(
            lost.is_empty(),
            "seed {seed}: export lost fields of a SONiC-expressible config: {lost:#?}"
        );
        let im = import(&ex.json, "exported.json", &ImportOptions::default())
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", ex.json));
        let back = Config::parse(&im.toml, "imported.toml")
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", im.toml));
        assert_eq!(
            back, im.config,
            "seed {seed}: the TOML does not say what the import built"
        );
        assert_eq!(
            back, c,
            "seed {seed}: round trip differs\nexported:\n{}\nimported:\n{}",
            ex.json, im.toml
        );
        for (k, hit) in [
            ("buffer", c.buffer.is_some()),
            ("pfcwd", c.pfcwd.is_some()),
            ("trimming", c.switch_trimming.is_some()),
            ("trim queue", c.buffer_profile.contains_key("QTRIM")),
            ("dcbx ets", c.dcbx.is_some()),
            ("trust dot1p", c.ports.iter().any(|p| p.trust == "dot1p")),
            (
                "lossless headroom",
                c.ports.iter().any(|p| p.headroom_xoff.is_some()),
            ),
            (
                "SONIC_NO_WRED",
                c.ports
                    .iter()
                    .any(|p| p.wred_profile.as_deref() == Some("SONIC_NO_WRED")),
            ),
            ("reserve", c.buffer.as_ref().is_some_and(|b| b.reserve != 0)),
        ] {
            *exercised.entry(k).or_default() += u64::from(hit);
        }
    }
    println!("{cases} round trips, cases exercising each part: {exercised:?}");
    if cases >= 1000 {
        for (k, n) in &exercised {
            assert!(
                *n * 50 >= cases,
                "{k} exercised in only {n} of {cases} cases"
            );
        }
    }
}
