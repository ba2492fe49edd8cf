//! Prometheus text exposition (format 0.0.4) of everything `dataplane
//! stats` shows: one metric family per counter, labelled by instance, port
//! and traffic class / priority / reason, so dashboards can sum and rate
//! them.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::telemetry::stats::Snapshot;

/// How a stats counter name maps to a metric.
struct Family {
    name: String,
    help: &'static str,
    kind: &'static str,
    /// (labels, value)
    samples: Vec<(String, f64)>,
}

/// Splits "rx_tc_pkts[3]" into ("rx_tc_pkts", Some("3")) and
/// "malformed.bth_truncated" into ("malformed", reason).
fn split(name: &str) -> (String, Option<(&'static str, String)>) {
    if let Some((base, rest)) = name.split_once('[') {
        let idx = rest.trim_end_matches(']').to_string();
        let label = if base.contains("pfc") || base.contains("pause") {
            "priority"
        } else {
            "tc"
        };
        return (base.to_string(), Some((label, idx)));
    }
    if let Some((base, reason)) = name.split_once('.') {
        return (base.to_string(), Some(("reason", reason.to_string())));
    }
    (name.to_string(), None)
}

/// The Prometheus type of a `stats --json` name: "counter" (never goes
/// back while the data plane lives) or "gauge".
pub fn kind_of(name: &str) -> &'static str {
    help(&split(name).0).1
}

fn help(base: &str) -> (&'static str, &'static str) {
    match base {
        "rx_tc_pkts" => ("Frames received, by traffic class.", "counter"),
        "rx_tc_bytes" => ("Bytes received, by traffic class.", "counter"),
        "tx_tc_pkts" => (
            "Frames routed out of the port, by traffic class.",
            "counter",
        ),
        "tx_tc_bytes" => ("Bytes routed out of the port, by traffic class.", "counter"),
        "rx_pfc" => (
            "PFC frames received with the priority's class-enable bit set (pfcstat Rx).",
            "counter",
        ),
        "rx_pfc_xoff" => (
            "PFC frames received that paused the priority (nonzero time; the PFC watchdog's input).",
            "counter",
        ),
        "tx_pfc" | "tx_pfc_xoff" | "tx_pfc_refresh" | "tx_pfc_xon" => (
            "PFC frames the data plane asked to send (pfcstat Tx).",
            "counter",
        ),
        "malformed" => (
            "Malformed frames by the header boundary where they broke.",
            "counter",
        ),
        "ecn_marked" => ("Packets marked CE by the buffer model.", "counter"),
        "wred_drop" => ("WRED drops (lossy class, non-ECT).", "counter"),
        "drop_shared_full" => (
            "Drops of lossy packets for lack of shared buffer.",
            "counter",
        ),
        "drop_headroom" => ("Lossless drops: headroom exhausted.", "counter"),
        "tx_xdp_xmit_err" => (
            "Frames redirected to the port that its driver failed to transmit (XDP transmit errors of the device).",
            "counter",
        ),
        "wd_drop" => (
            "Packets of a stormed egress queue dropped by the PFC watchdog (pfcwd TX DROP).",
            "counter",
        ),
        "wd_tx_ok" => (
            "Packets of a stormed egress queue sent during the storm (pfcwd TX OK).",
            "counter",
        ),
        "wd_rx_ok" => (
            "Packets received on a stormed priority passed on during the storm (pfcwd RX OK).",
            "counter",
        ),
        "wd_rx_drop" => (
            "Packets received on a stormed priority dropped by the PFC watchdog (pfcwd RX DROP).",
            "counter",
        ),
        "queue_drop_bytes" => (
            "Bytes of the packets the buffer model dropped on the egress queue (WRED, no buffer, watchdog).",
            "counter",
        ),
        "trim" => (
            "Packets of the queue trimmed instead of dropped (SONiC Trim/pkts).",
            "counter",
        ),
        "trim_sent" => (
            "Trimmed packets the trim queue took (SONiC TrimSent/pkts).",
            "counter",
        ),
        "trim_drop" => (
            "Trimmed packets dropped after all (SONiC TrimDrop/pkts).",
            "counter",
        ),
        "rx_uet" => ("UET frames received (UDP 4793 with a PDS header).", "counter"),
        "queue_bytes" => ("Bytes in the buffer model's egress queue.", "gauge"),
        "queue_watermark" => ("Peak bytes of the buffer model's egress queue.", "gauge"),
        "queue_paused" => (
            "1 while the egress queue is paused by received PFC.",
            "gauge",
        ),
        "queue_tx_bytes" => (
            "Bytes drained from the buffer model's egress queue.",
            "counter",
        ),
        "rx_pause_ns" => (
            "Time the egress queue spent paused by received PFC, ns.",
            "counter",
        ),
        "pg_drop" => (
            "Packets the buffer model dropped at their ingress priority group (shared buffer full, headroom exhausted).",
            "counter",
        ),
        "rx_pause_transitions" => (
            "Pauses of the egress queue by received PFC that ended (paused to unpaused; pfcstat --history's RX Pause Transitions).",
            "counter",
        ),
        "rx_pause_recent_ns" => (
            "Length of the egress queue's most recent pause by received PFC, ns (so far, while it lasts).",
            "gauge",
        ),
        "rx_pause_recent_at_us" => (
            "Start of the egress queue's most recent pause by received PFC, microseconds since the epoch.",
            "gauge",
        ),
        "pfcwd_storm_detected" => ("PFC storms detected by the watchdog.", "counter"),
        "pfcwd_storm_restored" => ("PFC storms restored by the watchdog.", "counter"),
        "pfcwd_in_storm" => ("1 while a PFC storm action is in force.", "gauge"),
        "pfcwd_watched" => ("1 when the PFC watchdog watches the queue.", "gauge"),
        "pfcwd_tx_last_ok" | "pfcwd_tx_last_drop" | "pfcwd_rx_last_ok" | "pfcwd_rx_last_drop" => (
            "pfcwd TX/RX OK/DROP of the last (or current) storm of the queue.",
            "gauge",
        ),
        _ => (
            "Data-plane counter (see `dataplane stats --json`).",
            "counter",
        ),
    }
}

/// `dataplane_queue_watermark_bytes{queue,kind,window}` and
/// `dataplane_pg_watermark_bytes{pg,kind,window}` of one port (`labels`:
/// its instance and port).
fn watermark_samples(
    fams: &mut BTreeMap<String, Family>,
    labels: &str,
    w: &crate::telemetry::stats::PortWatermarks,
) {
    for (window, m) in [("periodic", &w.periodic), ("persistent", &w.persistent)] {
        for (name, obj, kind, v, help) in [
            (
                "dataplane_queue_watermark_bytes",
                "queue",
                "shared",
                &m.queue_shared,
                "Peak shared occupancy of the egress queue, bytes (window: periodic = this watermark interval, persistent = since start or the last persistent clear).",
            ),
            (
                "dataplane_pg_watermark_bytes",
                "pg",
                "shared",
                &m.pg_shared,
                "Peak occupancy of the ingress priority group, bytes, by kind (shared pool, headroom) and window (periodic, persistent).",
            ),
            (
                "dataplane_pg_watermark_bytes",
                "pg",
                "headroom",
                &m.pg_headroom,
                "",
            ),
        ] {
            let f = fams.entry(name.into()).or_insert(Family {
                name: name.into(),
                help,
                kind: "gauge",
                samples: Vec::new(),
            });
            for (i, v) in v.iter().enumerate() {
                f.samples.push((
                    format!("{labels},{obj}=\"{i}\",kind=\"{kind}\",window=\"{window}\""),
                    f64::from(*v),
                ));
            }
        }
    }
}

fn esc(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Renders a snapshot.
pub fn render(s: &Snapshot) -> String {
    let mut fams: BTreeMap<String, Family> = BTreeMap::new();
    let inst = esc(&s.instance);
    for p in &s.ports {
        let port = esc(&p.name);
        for (name, v) in &p.counters {
            let (base, label) = split(name);
            let (h, kind) = help(&base);
            let metric = if kind == "counter" {
                format!("dataplane_{base}_total")
            } else {
                format!("dataplane_{base}")
            };
            let labels = match &label {
                Some((k, val)) => {
                    format!("instance=\"{inst}\",port=\"{port}\",{k}=\"{}\"", esc(val))
                }
                None => format!("instance=\"{inst}\",port=\"{port}\""),
            };
            fams.entry(metric.clone())
                .or_insert(Family {
                    name: metric,
                    help: h,
                    kind,
                    samples: Vec::new(),
                })
                .samples
                .push((labels, *v as f64));
        }
        if let Some(u) = p.tx_utilisation_pct {
            fams.entry("dataplane_tx_utilisation_ratio".into())
                .or_insert(Family {
                    name: "dataplane_tx_utilisation_ratio".into(),
                    help: "Transmit utilisation of the port's configured speed (data-plane rate estimator).",
                    kind: "gauge",
                    samples: Vec::new(),
                })
                .samples
                .push((format!("instance=\"{inst}\",port=\"{port}\""), u / 100.0));
        }
        if let Some(w) = &p.watermarks {
            watermark_samples(
                &mut fams,
                &format!("instance=\"{inst}\",port=\"{port}\""),
                w,
            );
        }
        fams.entry("dataplane_port_speed_bits_per_second".into())
            .or_insert(Family {
                name: "dataplane_port_speed_bits_per_second".into(),
                help: "Configured line rate.",
                kind: "gauge",
                samples: Vec::new(),
            })
            .samples
            .push((
                format!("instance=\"{inst}\",port=\"{port}\""),
                f64::from(p.speed_mbps) * 1e6,
            ));
    }
    for g in &s.groups {
        let f = fams
            .entry("dataplane_group_live_members".into())
            .or_insert(Family {
                name: "dataplane_group_live_members".into(),
                help: "Members of a next-hop group whose port is up.",
                kind: "gauge",
                samples: Vec::new(),
            });
        f.samples.push((
            format!(
                "instance=\"{inst}\",group=\"{}\",mode=\"{}\"",
                g.id,
                esc(&g.mode)
            ),
            g.live as f64,
        ));
    }
    let mut out = String::new();
    for f in fams.values() {
        let _ = writeln!(out, "# HELP {} {}", f.name, f.help);
        let _ = writeln!(out, "# TYPE {} {}", f.name, f.kind);
        for (l, v) in &f.samples {
            let _ = writeln!(out, "{}{{{l}}} {v}", f.name);
        }
    }
    let _ = writeln!(
        out,
        "# HELP dataplane_pfc_tx_path Who sends PFC frames (1 for the active path): the data plane itself or the controller."
    );
    let _ = writeln!(out, "# TYPE dataplane_pfc_tx_path gauge");
    for path in ["dataplane", "userspace"] {
        let _ = writeln!(
            out,
            "dataplane_pfc_tx_path{{instance=\"{inst}\",path=\"{path}\"}} {}",
            u8::from(s.pfc_tx_path == path)
        );
    }
    let name = "dataplane_far_notes_total";
    let _ = writeln!(
        out,
        "# HELP {name} Far-side notifications by event: sent, not sent (due but the frame could not go), received and recorded, malformed, not recorded (table full)."
    );
    let _ = writeln!(out, "# TYPE {name} counter");
    let f = &s.far_notes;
    for (event, v) in [
        ("sent", f.sent),
        ("send_failed", f.send_failed),
        ("received", f.received),
        ("malformed", f.malformed),
        ("table_full", f.table_full),
    ] {
        let _ = writeln!(out, "{name}{{instance=\"{inst}\",event=\"{event}\"}} {v}");
    }
    for (name, help, v) in [
        (
            "dataplane_unknown_port_frames_total",
            "Frames on interfaces without a port entry.",
            s.unknown_port,
        ),
        (
            "dataplane_lb_flow_evictions_total",
            "Flows that lost their place-mode flow-table entry to another active flow.",
            s.lb_evictions,
        ),
        (
            "dataplane_drop_events_posted_total",
            "Drop events (snapshots) posted to the ring.",
            s.drop_events_posted,
        ),
        (
            "dataplane_drop_events_suppressed_total",
            "Drop events the per-CPU rate limit suppressed (the drops are still counted).",
            s.drop_events_suppressed,
        ),
    ] {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} counter");
        let _ = writeln!(out, "{name}{{instance=\"{inst}\"}} {v}");
    }
    out
}
