//! An imported configuration as TOML: every field written out, each
//! section under a comment naming the CONFIG_DB keys it came from.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use toml::Value;

use crate::Config;

/// The configuration `c` as TOML; `sources` maps a section name
/// (`buffer`, `port.eth1`, `wred_profile.X`) to its CONFIG_DB keys.
pub fn write(c: &Config, sources: &BTreeMap<String, BTreeSet<String>>, input: &str) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# Imported from {input} by `dataplane config import-sonic`."
    );
    let _ = writeln!(
        o,
        "# Each section names the CONFIG_DB keys it was made from.\n"
    );
    let from = |o: &mut String, section: &str| {
        if let Some(keys) = sources.get(section) {
            comment_list(o, "from", keys);
        }
    };
    from(&mut o, "switch");
    o.push_str("[switch]\n");
    kv(&mut o, "name", &Value::String(c.switch.name.clone()));
    o.push_str("# RoCEv2 CNPs go to this class whatever their DSCP (SONiC has no such field)\n");
    kv(&mut o, "cnp_tc", &Value::Integer(c.switch.cnp_tc));
    o.push('\n');
    tables(&mut o, "dscp_to_tc_map", &c.dscp_to_tc_map, &from);
    tables(&mut o, "dot1p_to_tc_map", &c.dot1p_to_tc_map, &from);
    tables(&mut o, "tc_to_dscp_map", &c.tc_to_dscp_map, &from);
    for (name, w) in &c.wred_profile {
        from(&mut o, &format!("wred_profile.{name}"));
        let _ = writeln!(o, "[wred_profile.{}]", key(name));
        kv(&mut o, "ecn", &Value::String(w.ecn.clone()));
        kv(
            &mut o,
            "green_min_threshold",
            &Value::Integer(w.green_min_threshold),
        );
        kv(
            &mut o,
            "green_max_threshold",
            &Value::Integer(w.green_max_threshold),
        );
        kv(
            &mut o,
            "green_drop_probability",
            &Value::Integer(w.green_drop_probability),
        );
        kv(
            &mut o,
            "wred_green_enable",
            &Value::Boolean(w.wred_green_enable),
        );
        o.push('\n');
    }
    if let Some(b) = &c.buffer {
        from(&mut o, "buffer");
        o.push_str("[buffer]\n");
        for (k, v) in [
            ("pool_size", b.pool_size),
            ("dynamic_th", b.dynamic_th),
            ("lossy_dynamic_th", b.lossy_dynamic_th),
            ("reserve", b.reserve),
            ("xon_offset", b.xon_offset),
            ("mtu", b.mtu),
            ("cable_length_m", b.cable_length_m),
        ] {
            kv(&mut o, k, &Value::Integer(v));
        }
        if let Some(r) = b.response_us {
            kv(&mut o, "response_us", &Value::Integer(r));
        }
        kv(&mut o, "pfc_tx", &Value::String(b.pfc_tx.clone()));
        kv(&mut o, "tick_us", &Value::Integer(b.tick_us));
        o.push('\n');
    }
    for (name, p) in &c.buffer_profile {
        from(&mut o, &format!("buffer_profile.{name}"));
        let _ = writeln!(o, "[buffer_profile.{}]", key(name));
        kv(
            &mut o,
            "packet_discard_action",
            &Value::String(p.packet_discard_action.clone()),
        );
        o.push('\n');
    }
    if let Some(w) = &c.pfcwd {
        from(&mut o, "pfcwd");
        o.push_str("[pfcwd]\n");
        kv(
            &mut o,
            "detection_time_ms",
            &Value::Integer(w.detection_time_ms),
        );
        kv(
            &mut o,
            "restoration_time_ms",
            &Value::Integer(w.restoration_time_ms),
        );
        kv(
            &mut o,
            "poll_interval_ms",
            &Value::Integer(w.poll_interval_ms),
        );
        kv(&mut o, "action", &Value::String(w.action.clone()));
        o.push('\n');
    }
    if let Some(t) = &c.switch_trimming {
        from(&mut o, "switch_trimming");
        o.push_str("[switch_trimming]\n");
        kv(&mut o, "size", &Value::Integer(t.size));
        kv(&mut o, "dscp_value", &t.dscp_value);
        if let Some(v) = &t.tc_value {
            kv(&mut o, "tc_value", v);
        }
        kv(&mut o, "queue_index", &t.queue_index);
        o.push('\n');
    }
    if let Some(d) = &c.dcbx {
        from(&mut o, "dcbx");
        o.push_str(
            "# SONiC's schedulers, declared in DCBX ETS: this data plane does not schedule\n",
        );
        o.push_str("[dcbx]\n");
        kv(&mut o, "enable", &Value::Boolean(d.enable));
        let ints = |v: &[i64]| Value::Array(v.iter().map(|&x| Value::Integer(x)).collect());
        let strs =
            |v: &[String]| Value::Array(v.iter().map(|x| Value::String(x.clone())).collect());
        kv(&mut o, "ets_bandwidth", &ints(&d.ets_bandwidth));
        kv(&mut o, "ets_tsa", &strs(&d.ets_tsa));
        o.push('\n');
    }
    for p in &c.ports {
        from(&mut o, &format!("port.{}", p.name));
        o.push_str("[[port]]\n");
        kv(&mut o, "name", &Value::String(p.name.clone()));
        if let Some(s) = &p.speed {
            kv(&mut o, "speed", s);
        }
        kv(&mut o, "trust", &Value::String(p.trust.clone()));
        kv(
            &mut o,
            "dscp_to_tc_map",
            &Value::String(p.dscp_to_tc_map.clone()),
        );
        kv(
            &mut o,
            "dot1p_to_tc_map",
            &Value::String(p.dot1p_to_tc_map.clone()),
        );
        kv(&mut o, "pfc_enable", &Value::String(p.pfc_enable.clone()));
        let opt_s = |o: &mut String, k: &str, v: &Option<String>| {
            if let Some(v) = v {
                kv(o, k, &Value::String(v.clone()));
            }
        };
        let opt_i = |o: &mut String, k: &str, v: Option<i64>| {
            if let Some(v) = v {
                kv(o, k, &Value::Integer(v));
            }
        };
        opt_s(&mut o, "tc_to_dscp_map", &p.tc_to_dscp_map);
        opt_s(&mut o, "wred_profile", &p.wred_profile);
        opt_s(&mut o, "lossy_wred_profile", &p.lossy_wred_profile);
        opt_i(&mut o, "cable_length_m", p.cable_length_m);
        opt_i(&mut o, "headroom_xoff", p.headroom_xoff);
        opt_i(&mut o, "headroom_xon", p.headroom_xon);
        if !p.buffer_queue.is_empty() {
            let t: toml::map::Map<String, Value> = p
                .buffer_queue
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect();
            kv(&mut o, "buffer_queue", &Value::Table(t));
        }
        o.push('\n');
    }
    o
}

/// `[KIND.NAME]` tables of codepoint = value.
fn tables(
    o: &mut String,
    kind: &str,
    maps: &BTreeMap<String, BTreeMap<String, Value>>,
    from: &dyn Fn(&mut String, &str),
) {
    for (name, entries) in maps {
        from(o, &format!("{kind}.{name}"));
        let _ = writeln!(o, "[{kind}.{}]", key(name));
        let mut keys: Vec<&String> = entries.keys().collect();
        // "default" first, then codepoints in numeric order
        keys.sort_by_key(|k| (k.as_str() != "default", k.parse::<u32>().unwrap_or(0)));
        for k in keys {
            kv(o, k, &entries[k]);
        }
        o.push('\n');
    }
}

fn kv(o: &mut String, k: &str, v: &Value) {
    let _ = writeln!(o, "{} = {}", key(k), inline(v));
}

/// A value on one line (inline tables for `buffer_queue`).
fn inline(v: &Value) -> String {
    match v {
        Value::Table(t) => {
            let parts: Vec<String> = t
                .iter()
                .map(|(k, v)| format!("{} = {}", key(k), inline(v)))
                .collect();
            format!("{{ {} }}", parts.join(", "))
        }
        other => other.to_string(),
    }
}

/// A key, quoted unless bare (letters, digits, `_`, `-`, not all digits).
fn key(k: &str) -> String {
    let bare = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !k.chars().all(|c| c.is_ascii_digit());
    if bare {
        k.to_string()
    } else {
        Value::String(k.to_string()).to_string()
    }
}

/// `# WORD a, b, c` wrapped at about 100 columns.
fn comment_list(o: &mut String, word: &str, keys: &BTreeSet<String>) {
    let mut line = format!("# {word}");
    for (i, k) in keys.iter().enumerate() {
        let sep = if i == 0 { " " } else { ", " };
        if line.len() + sep.len() + k.len() > 100 && i > 0 {
            let _ = writeln!(o, "{line},");
            line = format!("#   {k}");
        } else {
            line.push_str(sep);
            line.push_str(k);
        }
    }
    let _ = writeln!(o, "{line}");
}
