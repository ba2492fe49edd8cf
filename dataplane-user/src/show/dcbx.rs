//! `show dcbx`: per port, the peer, both sides' willing bits, PFC
//! priorities and RoCE priority, whether ETS agrees, the mismatches; then
//! the LLDP counters (802.1AB's statistics). A pure renderer: the agent's
//! [`State`] in, a table (`table`) or JSON (`json`) out.

use std::fmt::Write;

use crate::dcbx::state::{PortState, Side, State};

use super::{Ctx, Output, Target};

pub const TARGETS: &[Target] = &[Target {
    name: "dcbx",
    args: None,
    about: "DCBX per port: the peer, willing bits, PFC and RoCE priorities, ETS, mismatches",
    show,
    clear: None,
}];

/// `show dcbx`: the running agent's state file (rewritten every second;
/// an old one is a stopped or killed controller's last word: warned).
fn show(ctx: &Ctx) -> anyhow::Result<Output> {
    let s = State::load(&ctx.instance)?;
    let path = crate::dcbx::state::path(&ctx.instance);
    if let Some(age) = std::fs::metadata(&path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .filter(|a| a.as_secs() >= 5)
    {
        eprintln!(
            "warning: {} was last written {} s ago: is the controller of instance {} running?",
            path.display(),
            age.as_secs(),
            ctx.instance
        );
    }
    Ok(Output::new(table(&s), json(&s)))
}

/// Columns in SONiC's `tabulate` "simple" style: a dashed rule under the
/// headers, two spaces between columns, left-aligned.
fn tabulate(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut w: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        let s: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:<width$}", width = w[i]))
            .collect();
        s.join("  ").trim_end().to_string() + "\n"
    };
    let mut out = line(headers.iter().map(|h| h.to_string()).collect());
    out += &line(w.iter().map(|n| "-".repeat(*n)).collect());
    for r in rows {
        out += &line(r.clone());
    }
    out
}

fn yes_no(b: Option<bool>) -> &'static str {
    match b {
        Some(true) => "yes",
        Some(false) => "no",
        None => "-",
    }
}

fn prios(v: &Option<Vec<u8>>) -> String {
    match v {
        None => "-".into(),
        Some(v) if v.is_empty() => "none".into(),
        Some(v) => v
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join(","),
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|x| x.to_string()).unwrap_or_else(|| "-".into())
}

/// Does the peer's ETS configuration equal ours (or our recommendation,
/// which a willing peer adopts)?
fn ets(local: &Side, peer: &Side) -> &'static str {
    if peer.ets_bandwidth.is_none() {
        return "-";
    }
    let same = |bw: &Option<Vec<u8>>, tsa: &Option<Vec<String>>| {
        peer.ets_bandwidth == *bw && peer.ets_tsa == *tsa && peer.ets_prio_tc == local.ets_prio_tc
    };
    if same(&local.ets_bandwidth, &local.ets_tsa) {
        "same"
    } else if same(&local.reco_bandwidth, &local.reco_tsa) {
        "reco"
    } else {
        "differs"
    }
}

fn peer_cell(p: &PortState) -> String {
    match &p.peer {
        None => "(none)".into(),
        Some(peer) if peer.system_name.is_empty() => format!("{} {}", peer.chassis, peer.port_id),
        Some(peer) => format!("{} {} {}", peer.system_name, peer.chassis, peer.port_id),
    }
}

/// The table of `show dcbx`.
pub fn table(s: &State) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "DCBX (IEEE 802.1Qaz over LLDP), instance {}, LLDP every {} s\n",
        s.instance, s.tx_interval_s
    );
    let rows: Vec<Vec<String>> = s
        .ports
        .iter()
        .map(|p| {
            let peer = p.peer.as_ref().map(|x| &x.config);
            let empty = Side::default();
            let pc = peer.unwrap_or(&empty);
            vec![
                p.port.clone(),
                peer_cell(p),
                format!("{}/{}", yes_no(p.local.pfc_willing), yes_no(pc.pfc_willing)),
                prios(&p.local.pfc_enable),
                prios(&pc.pfc_enable),
                format!("{}/{}", opt(p.local.roce_priority), opt(pc.roce_priority)),
                ets(&p.local, pc).into(),
                if p.mismatches.is_empty() {
                    if p.peer.is_some() { "ok" } else { "-" }.into()
                } else {
                    p.mismatches.join(",")
                },
            ]
        })
        .collect();
    out += &tabulate(
        &[
            "Port",
            "Peer",
            "Willing L/P",
            "PFC local",
            "PFC peer",
            "RoCE prio L/P",
            "ETS",
            "Mismatch",
        ],
        &rows,
    );
    out.push('\n');
    let rows: Vec<Vec<String>> = s
        .ports
        .iter()
        .map(|p| {
            let c = &p.counters;
            let list = |m: &std::collections::BTreeMap<String, u64>| {
                if m.is_empty() {
                    "0".to_string()
                } else {
                    m.iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join(",")
                }
            };
            vec![
                p.port.clone(),
                c.tx_frames.to_string(),
                c.tx_errors.to_string(),
                c.rx_frames.to_string(),
                list(&c.rx_discarded),
                list(&c.tlv_discarded),
                c.tlv_unrecognized.to_string(),
                c.ageouts.to_string(),
            ]
        })
        .collect();
    out += &tabulate(
        &[
            "Port",
            "LLDP TX",
            "TX err",
            "LLDP RX",
            "Frames discarded",
            "TLVs discarded",
            "TLVs unrecognized",
            "Aged out",
        ],
        &rows,
    );
    out
}

/// `show dcbx --json`: the state as it is (stable field names).
pub fn json(s: &State) -> serde_json::Value {
    serde_json::to_value(s).unwrap_or(serde_json::Value::Null)
}

/// Prometheus lines of the DCBX state: `dataplane_dcbx_mismatch` (1 per
/// raised field, 0 otherwise, every field of every port), whether a peer
/// is known, and the LLDP counters.
pub fn metrics(s: &State) -> String {
    use dataplane_common::dcbx::Field;
    let inst = &s.instance;
    let mut out = String::new();
    let fam = |out: &mut String, name: &str, kind: &str, help: &str| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
    };
    fam(&mut out, "dataplane_dcbx_mismatch", "gauge", "1 while the port's DCBX peer disagrees on this field (pfc_enable, roce_priority, willing, pfc_absent).");
    for p in &s.ports {
        for f in Field::ALL {
            let on = p.mismatches.iter().any(|m| m == f.name());
            let _ = writeln!(
                out,
                "dataplane_dcbx_mismatch{{instance=\"{inst}\",port=\"{}\",field=\"{}\"}} {}",
                p.port,
                f.name(),
                u8::from(on)
            );
        }
    }
    fam(
        &mut out,
        "dataplane_dcbx_peer",
        "gauge",
        "1 while the port has an LLDP peer (within its TTL).",
    );
    for p in &s.ports {
        let _ = writeln!(
            out,
            "dataplane_dcbx_peer{{instance=\"{inst}\",port=\"{}\"}} {}",
            p.port,
            u8::from(p.peer.is_some())
        );
    }
    type Get = fn(&PortState) -> u64;
    let counters: [(&str, &str, Get); 4] = [
        ("dataplane_lldp_tx_frames_total", "LLDP frames sent.", |p| {
            p.counters.tx_frames
        }),
        (
            "dataplane_lldp_rx_frames_total",
            "LLDP frames received.",
            |p| p.counters.rx_frames,
        ),
        (
            "dataplane_lldp_tlv_unrecognized_total",
            "LLDP TLVs skipped as unknown.",
            |p| p.counters.tlv_unrecognized,
        ),
        (
            "dataplane_lldp_ageouts_total",
            "LLDP peers whose TTL ran out.",
            |p| p.counters.ageouts,
        ),
    ];
    for (name, help, get) in counters {
        fam(&mut out, name, "counter", help);
        for p in &s.ports {
            let _ = writeln!(
                out,
                "{name}{{instance=\"{inst}\",port=\"{}\"}} {}",
                p.port,
                get(p)
            );
        }
    }
    fam(
        &mut out,
        "dataplane_lldp_discarded_total",
        "counter",
        "LLDP frames (what=frame) and DCBX TLVs (what=tlv) discarded as malformed, by reason.",
    );
    for p in &s.ports {
        for (what, m) in [
            ("frame", &p.counters.rx_discarded),
            ("tlv", &p.counters.tlv_discarded),
        ] {
            for (reason, v) in m {
                let _ = writeln!(
                    out,
                    "dataplane_lldp_discarded_total{{instance=\"{inst}\",port=\"{}\",what=\"{what}\",reason=\"{reason}\"}} {v}",
                    p.port
                );
            }
        }
    }
    out
}
