//! Counters as people read them: a table (per port and TC, pfcstat-style
//! PFC columns, drop/malformed reasons) and JSON with stable names.

use std::collections::BTreeMap;

use dataplane_common::maps::{GlobalCounters, PortCounters, NUM_TC};
use dataplane_common::parse::ParseError;
use dataplane_common::reason::Reason;
use dataplane_common::route::FwdCounters;
use serde::Serialize;

/// Every counter of a port as (stable name, value), in a fixed order. The
/// fixture runner compares these names; `stats --json` prints them.
pub fn port_fields(c: &PortCounters) -> Vec<(String, u64)> {
    let mut v = Vec::with_capacity(64);
    for tc in 0..NUM_TC {
        v.push((format!("rx_tc_pkts[{tc}]"), c.rx_tc_pkts[tc]));
    }
    for tc in 0..NUM_TC {
        v.push((format!("rx_tc_bytes[{tc}]"), c.rx_tc_bytes[tc]));
    }
    v.push(("rx_roce".into(), c.rx_roce));
    v.push(("rx_cnp".into(), c.rx_cnp));
    v.push(("rx_uet".into(), c.rx_uet));
    v.push(("rx_lossless".into(), c.rx_lossless));
    v.push(("rx_non_ip".into(), c.rx_non_ip));
    v.push(("rx_qinq".into(), c.rx_qinq));
    for p in 0..NUM_TC {
        v.push((format!("rx_pfc[{p}]"), c.rx_pfc[p]));
    }
    for p in 0..NUM_TC {
        v.push((format!("rx_pfc_xoff[{p}]"), c.rx_pfc_xoff[p]));
    }
    v.push(("rx_pause".into(), c.rx_pause));
    v.push(("rx_mac_ctl_other".into(), c.rx_mac_ctl_other));
    for e in ParseError::ALL {
        v.push((format!("malformed.{}", e.name()), c.malformed[e as usize]));
    }
    v.push(("verdict_pass".into(), c.verdict_pass));
    v.push(("verdict_drop".into(), c.verdict_drop));
    v
}

/// Non-zero differences `after - before`, by name.
pub fn port_deltas(before: &PortCounters, after: &PortCounters) -> BTreeMap<String, i128> {
    let b = port_fields(before);
    let a = port_fields(after);
    b.into_iter()
        .zip(a)
        .filter_map(|((n, x), (_, y))| (x != y).then(|| (n, i128::from(y) - i128::from(x))))
        .collect()
}

/// Every forwarding counter of a port as (stable name, value).
pub fn fwd_fields(c: &FwdCounters) -> Vec<(String, u64)> {
    let mut v = Vec::with_capacity(32);
    for tc in 0..NUM_TC {
        v.push((format!("tx_tc_pkts[{tc}]"), c.tx_tc_pkts[tc]));
    }
    for tc in 0..NUM_TC {
        v.push((format!("tx_tc_bytes[{tc}]"), c.tx_tc_bytes[tc]));
    }
    v.push(("rx_routed".into(), c.rx_routed));
    // pass_<reason> / drop_<reason>, named by the reason table
    let named = |what: &str, r: Reason, n: u64| (format!("{what}_{}", r.name()), n);
    v.push(named("pass", Reason::NotIp, c.pass_not_ip));
    v.push(named("pass", Reason::NotForUs, c.pass_not_for_us));
    v.push(named("pass", Reason::TtlExpired, c.pass_ttl_expired));
    v.push(named("pass", Reason::Local, c.pass_local));
    v.push(named("drop", Reason::NoRoute, c.drop_no_route));
    // Reason::NoLiveMember and RedirectFailed: counter names older than the
    // table, kept (dashboards read them)
    v.push(("drop_no_member".into(), c.drop_no_member));
    v.push(named("drop", Reason::NoNeighbour, c.drop_no_neighbour));
    v.push(("drop_redirect".into(), c.drop_redirect));
    v.push(named("pass", Reason::Unresolved, c.pass_unresolved));
    // SONiC's Trim/pkts, TrimSent/pkts, TrimDrop/pkts per queue
    for tc in 0..NUM_TC {
        v.push((format!("trim[{tc}]"), c.trim.trim[tc]));
        v.push((format!("trim_sent[{tc}]"), c.trim.trim_sent[tc]));
        v.push((format!("trim_drop[{tc}]"), c.trim.trim_drop[tc]));
    }
    v
}

/// Non-zero differences of forwarding counters, by name.
pub fn fwd_deltas(before: &FwdCounters, after: &FwdCounters) -> BTreeMap<String, i128> {
    fwd_fields(before)
        .into_iter()
        .zip(fwd_fields(after))
        .filter_map(|((n, x), (_, y))| (x != y).then(|| (n, i128::from(y) - i128::from(x))))
        .collect()
}

/// Every lossless-stage counter of a port as (stable name, value).
pub fn lossless_fields(c: &dataplane_common::buffer::LosslessCounters) -> Vec<(String, u64)> {
    let mut v = Vec::with_capacity(64);
    for tc in 0..NUM_TC {
        v.push((format!("ecn_marked[{tc}]"), c.ecn_marked[tc]));
        v.push((format!("wred_drop[{tc}]"), c.wred_drop[tc]));
        v.push((format!("drop_shared_full[{tc}]"), c.drop_shared_full[tc]));
        v.push((format!("drop_headroom[{tc}]"), c.drop_headroom[tc]));
        v.push((format!("tx_pfc_xoff[{tc}]"), c.pfc_xoff[tc]));
        v.push((format!("tx_pfc_refresh[{tc}]"), c.pfc_refresh[tc]));
        v.push((format!("tx_pfc_xon[{tc}]"), c.pfc_xon[tc]));
        v.push((
            format!("tx_pfc[{tc}]"),
            c.pfc_xoff[tc] + c.pfc_refresh[tc] + c.pfc_xon[tc],
        ));
        v.push((format!("wd_drop[{tc}]"), c.wd_drop[tc]));
        v.push((format!("wd_tx_ok[{tc}]"), c.wd_tx_ok[tc]));
        v.push((format!("wd_rx_ok[{tc}]"), c.wd_rx_ok[tc]));
        v.push((format!("wd_rx_drop[{tc}]"), c.wd_rx_drop[tc]));
    }
    v.push(("model_busy".into(), c.model_busy));
    v.push(("event_lost".into(), c.event_lost));
    v.push(("tick_busy".into(), c.tick_busy));
    v.push(("model_busy_queue".into(), c.busy_queue));
    v.push(("model_busy_pg".into(), c.busy_pg));
    v.push(("model_busy_stage".into(), c.busy_stage));
    v.push(("pfc_sent_dp".into(), c.pfc_sent_dp));
    v.push(("pfc_send_fail".into(), c.pfc_send_fail));
    v
}

#[derive(Debug, Serialize)]
pub struct PortStats {
    pub name: String,
    pub ifindex: u32,
    pub port_id: u16,
    /// Configured line rate.
    pub speed_mbps: u32,
    /// Transmit utilisation from the data plane's rate estimator (CONGA
    /// DRE, ~200 us time constant), percent of `speed_mbps`.
    pub tx_utilisation_pct: Option<f64>,
    pub counters: BTreeMap<String, u64>,
    /// Buffer watermarks (ports in the buffer model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub watermarks: Option<PortWatermarks>,
}

/// A port's buffer watermarks in bytes, per TC (`telemetry::watermarks`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct PortWatermarks {
    /// Since the last watermark interval.
    pub periodic: KindMarks,
    /// Since the data plane started or the last `clear ...
    /// persistent-watermark`.
    pub persistent: KindMarks,
    /// Since the last `clear ... watermark` (what `show ... watermark`
    /// prints).
    pub user: KindMarks,
}

/// One window's marks by kind, per TC.
#[derive(Debug, Clone, Default, Serialize)]
pub struct KindMarks {
    /// The port's egress queue, shared occupancy.
    pub queue_shared: [u32; NUM_TC],
    /// The port's ingress PG, shared occupancy.
    pub pg_shared: [u32; NUM_TC],
    /// The port's ingress PG, headroom occupancy.
    pub pg_headroom: [u32; NUM_TC],
}

#[derive(Debug, Serialize)]
pub struct GroupStats {
    pub id: u32,
    pub mode: String,
    pub members: usize,
    /// Members whose port is up.
    pub live: usize,
}

#[derive(Debug, Serialize)]
pub struct Snapshot {
    pub instance: String,
    pub ports: Vec<PortStats>,
    pub groups: Vec<GroupStats>,
    pub unknown_port: u64,
    pub bad_port_id: u64,
    /// Place mode: flows that lost their flow-table entry to another
    /// active flow.
    pub lb_evictions: u64,
    /// Drop events (snapshots) the data plane posted to the ring, and
    /// those its per-CPU rate limit suppressed (the drops themselves are
    /// counted per port and reason either way).
    pub drop_events_posted: u64,
    pub drop_events_suppressed: u64,
    /// Who sends PFC frames: "dataplane" or "userspace" (the controller).
    pub pfc_tx_path: String,
    /// Far-side notifications sent, received, refused
    /// (`dataplane_common::lb::FarCounters`; zero in a data plane of an
    /// older build).
    pub far_notes: FarNotes,
}

/// `dataplane_common::lb::FarCounters`, summed over the CPUs.
#[derive(Debug, Default, Serialize, Clone, Copy, PartialEq, Eq)]
pub struct FarNotes {
    pub sent: u64,
    pub send_failed: u64,
    pub received: u64,
    pub malformed: u64,
    pub table_full: u64,
}

impl Snapshot {
    pub fn new(
        instance: &str,
        ports: Vec<(String, u32, u16, PortCounters, FwdCounters)>,
        g: GlobalCounters,
    ) -> Snapshot {
        Snapshot {
            instance: instance.into(),
            ports: ports
                .into_iter()
                .map(|(name, ifindex, port_id, c, f)| PortStats {
                    name,
                    ifindex,
                    port_id,
                    speed_mbps: 0,
                    tx_utilisation_pct: None,
                    counters: port_fields(&c).into_iter().chain(fwd_fields(&f)).collect(),
                    watermarks: None,
                })
                .collect(),
            groups: Vec::new(),
            unknown_port: g.unknown_port,
            bad_port_id: g.bad_port_id,
            lb_evictions: g.lb_evictions,
            drop_events_posted: 0,
            drop_events_suppressed: 0,
            pfc_tx_path: "userspace".into(),
            far_notes: FarNotes::default(),
        }
    }

    /// The human table.
    pub fn render(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let get = |p: &PortStats, k: &str| p.counters.get(k).copied().unwrap_or(0);
        let _ = writeln!(s, "instance {}", self.instance);
        let _ = writeln!(s, "\nRX by traffic class");
        let _ = writeln!(
            s,
            "{:<16} {:>3} {:>14} {:>16}",
            "Port", "TC", "RX_PKTS", "RX_BYTES"
        );
        for p in &self.ports {
            for tc in 0..NUM_TC {
                let pk = get(p, &format!("rx_tc_pkts[{tc}]"));
                let by = get(p, &format!("rx_tc_bytes[{tc}]"));
                if pk > 0 {
                    let _ = writeln!(s, "{:<16} {:>3} {:>14} {:>16}", p.name, tc, pk, by);
                }
            }
        }
        let _ = writeln!(s, "\nRX summary");
        let _ = writeln!(
            s,
            "{:<16} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8} {:>10} {:>10}",
            "Port", "RoCEv2", "CNP", "UET", "Lossless", "Non-IP", "QinQ", "Pass", "Drop"
        );
        for p in &self.ports {
            let _ = writeln!(
                s,
                "{:<16} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8} {:>10} {:>10}",
                p.name,
                get(p, "rx_roce"),
                get(p, "rx_cnp"),
                get(p, "rx_uet"),
                get(p, "rx_lossless"),
                get(p, "rx_non_ip"),
                get(p, "rx_qinq"),
                get(p, "verdict_pass"),
                get(p, "verdict_drop")
            );
        }
        let _ = writeln!(s, "\nTX by traffic class (routed by the data plane)");
        let _ = writeln!(
            s,
            "{:<16} {:>3} {:>14} {:>16}",
            "Port", "TC", "TX_PKTS", "TX_BYTES"
        );
        for p in &self.ports {
            for tc in 0..NUM_TC {
                let pk = get(p, &format!("tx_tc_pkts[{tc}]"));
                if pk > 0 {
                    let _ = writeln!(
                        s,
                        "{:<16} {:>3} {:>14} {:>16}",
                        p.name,
                        tc,
                        pk,
                        get(p, &format!("tx_tc_bytes[{tc}]"))
                    );
                }
            }
        }
        let trims: Vec<(&PortStats, usize)> = self
            .ports
            .iter()
            .flat_map(|p| (0..NUM_TC).map(move |tc| (p, tc)))
            .filter(|(p, tc)| get(p, &format!("trim[{tc}]")) > 0)
            .collect();
        if !trims.is_empty() {
            // SONiC's `show queue counters --trim` columns
            let _ = writeln!(s, "\nPacket trimming (egress queue)");
            let _ = writeln!(
                s,
                "{:<16} {:>4} {:>12} {:>16} {:>16}",
                "Port", "TxQ", "Trim/pkts", "TrimSent/pkts", "TrimDrop/pkts"
            );
            for (p, tc) in trims {
                let _ = writeln!(
                    s,
                    "{:<16} {:>4} {:>12} {:>16} {:>16}",
                    p.name,
                    format!("UC{tc}"),
                    get(p, &format!("trim[{tc}]")),
                    get(p, &format!("trim_sent[{tc}]")),
                    get(p, &format!("trim_drop[{tc}]"))
                );
            }
        }
        let _ = writeln!(
            s,
            "\nPort speed and TX utilisation (data-plane rate estimator)"
        );
        for p in &self.ports {
            let u = p
                .tx_utilisation_pct
                .map(|u| format!("{u:.1}%"))
                .unwrap_or_else(|| "-".into());
            let _ = writeln!(s, "{:<16} {:>8} Mb/s {:>8}", p.name, p.speed_mbps, u);
        }
        if !self.groups.is_empty() {
            let _ = writeln!(s, "\nNext-hop groups");
            for g in &self.groups {
                let _ = writeln!(
                    s,
                    "  group {:<3} {:<10} members {:>2}, live {:>2}",
                    g.id, g.mode, g.members, g.live
                );
            }
        }
        let _ = writeln!(s, "\nForwarding (ingress port)");
        let _ = writeln!(
            s,
            "{:<16} {:>10} {:>8} {:>9} {:>7} {:>7} {:>9} {:>9} {:>9} {:>9}",
            "Port",
            "Routed",
            "ToKernel",
            "NotForUs",
            "TTL<=1",
            "Local",
            "NoRoute",
            "NoMember",
            "NoNeigh",
            "RedirErr"
        );
        for p in &self.ports {
            let _ = writeln!(
                s,
                "{:<16} {:>10} {:>8} {:>9} {:>7} {:>7} {:>9} {:>9} {:>9} {:>9}",
                p.name,
                get(p, "rx_routed"),
                get(p, "pass_not_ip"),
                get(p, "pass_not_for_us"),
                get(p, "pass_ttl_expired"),
                get(p, "pass_local"),
                get(p, "drop_no_route"),
                get(p, "drop_no_member"),
                get(p, "drop_no_neighbour"),
                get(p, "drop_redirect")
            );
        }
        if self
            .ports
            .iter()
            .any(|p| p.counters.contains_key("queue_bytes[0]"))
        {
            let _ = writeln!(s, "\nQueue counters (buffer model; bytes)");
            let _ = writeln!(
                s,
                "{:<16} {:>3} {:>12} {:>10} {:>9} {:>10} {:>10} {:>10} {:>11} {:>7}",
                "Port",
                "TC",
                "TX_PKTS",
                "ECN_MARK",
                "WRED_DRP",
                "SHARED_DRP",
                "LOSSLESS_D",
                "QLEN",
                "WATERMARK",
                "PAUSED"
            );
            for p in &self.ports {
                for tc in 0..NUM_TC {
                    let k = |n: &str| get(p, &format!("{n}[{tc}]"));
                    let any = k("tx_tc_pkts")
                        + k("ecn_marked")
                        + k("wred_drop")
                        + k("drop_headroom")
                        + k("queue_watermark")
                        + k("drop_shared_full");
                    if any > 0 {
                        let _ = writeln!(
                            s,
                            "{:<16} {:>3} {:>12} {:>10} {:>9} {:>10} {:>10} {:>10} {:>11} {:>7}",
                            p.name,
                            tc,
                            k("tx_tc_pkts"),
                            k("ecn_marked"),
                            k("wred_drop"),
                            k("drop_shared_full"),
                            k("drop_headroom"),
                            k("queue_bytes"),
                            k("queue_watermark"),
                            if k("queue_paused") > 0 { "yes" } else { "no" }
                        );
                    }
                }
            }
        }
        let _ = writeln!(
            s,
            "\npfcstat (TX: frames the data plane asked the controller to send)"
        );
        let _ = write!(s, "{:<16}", "Port Tx");
        for i in 0..NUM_TC {
            let _ = write!(s, " {:>9}", format!("PFC{i}"));
        }
        let _ = writeln!(s);
        for p in &self.ports {
            let _ = write!(s, "{:<16}", p.name);
            for i in 0..NUM_TC {
                let _ = write!(s, " {:>9}", get(p, &format!("tx_pfc[{i}]")));
            }
            let _ = writeln!(s);
        }
        let _ = writeln!(s, "\npfcstat (RX)");
        let _ = write!(s, "{:<16}", "Port Rx");
        for i in 0..NUM_TC {
            let _ = write!(s, " {:>9}", format!("PFC{i}"));
        }
        let _ = writeln!(s, " {:>9}", "PAUSE");
        for p in &self.ports {
            let _ = write!(s, "{:<16}", p.name);
            for i in 0..NUM_TC {
                let _ = write!(s, " {:>9}", get(p, &format!("rx_pfc[{i}]")));
            }
            let _ = writeln!(s, " {:>9}", get(p, "rx_pause"));
        }
        if self
            .ports
            .iter()
            .any(|p| p.counters.contains_key("rx_pause_ns[0]"))
        {
            let _ = write!(s, "{:<16}", "Paused (ms)");
            let _ = writeln!(s);
            for p in &self.ports {
                if !p.counters.contains_key("rx_pause_ns[0]") {
                    continue;
                }
                let _ = write!(s, "{:<16}", p.name);
                for i in 0..NUM_TC {
                    let _ = write!(
                        s,
                        " {:>9.1}",
                        get(p, &format!("rx_pause_ns[{i}]")) as f64 / 1e6
                    );
                }
                let _ = writeln!(s);
            }
        }
        let storms: Vec<String> = self
            .ports
            .iter()
            .flat_map(|p| {
                (0..NUM_TC).filter_map(move |i| {
                    let d = p
                        .counters
                        .get(&format!("pfcwd_storm_detected[{i}]"))
                        .copied()
                        .unwrap_or(0);
                    let r = p
                        .counters
                        .get(&format!("pfcwd_storm_restored[{i}]"))
                        .copied()
                        .unwrap_or(0);
                    let on = p
                        .counters
                        .get(&format!("pfcwd_in_storm[{i}]"))
                        .copied()
                        .unwrap_or(0);
                    let wd = p
                        .counters
                        .get(&format!("wd_drop[{i}]"))
                        .copied()
                        .unwrap_or(0);
                    (d + r > 0).then(|| {
                        format!(
                            "{:<16} {:>4} {:>9} {:>9} {:>8} {:>10}",
                            p.name,
                            i,
                            d,
                            r,
                            if on > 0 { "STORM" } else { "ok" },
                            wd
                        )
                    })
                })
            })
            .collect();
        if !storms.is_empty() {
            let _ = writeln!(s, "\npfcwd");
            let _ = writeln!(
                s,
                "{:<16} {:>4} {:>9} {:>9} {:>8} {:>10}",
                "Port", "Prio", "Detected", "Restored", "State", "TX_DROP"
            );
            for l in storms {
                let _ = writeln!(s, "{l}");
            }
        }
        let mut malformed = Vec::new();
        for p in &self.ports {
            for e in ParseError::ALL {
                let n = get(p, &format!("malformed.{}", e.name()));
                if n > 0 {
                    malformed.push((p.name.clone(), e.name(), n));
                }
            }
        }
        let _ = writeln!(s, "\nMalformed frames by reason");
        if malformed.is_empty() {
            let _ = writeln!(s, "  none");
        }
        for (port, reason, n) in malformed {
            let _ = writeln!(s, "{:<16} {:<26} {:>10}", port, reason, n);
        }
        let _ = writeln!(
            s,
            "\nframes on unconfigured interfaces: {}",
            self.unknown_port
        );
        let _ = writeln!(
            s,
            "flows evicted from the place table by other active flows: {}",
            self.lb_evictions
        );
        let _ = writeln!(
            s,
            "drop events posted: {}, suppressed by the rate limit: {}",
            self.drop_events_posted, self.drop_events_suppressed
        );
        let _ = writeln!(s, "PFC frames sent by: {}", self.pfc_tx_path);
        let f = &self.far_notes;
        let _ = writeln!(
            s,
            "far-side notifications: sent {}, not sent {}, received {}, malformed {}, table full {}",
            f.sent, f.send_failed, f.received, f.malformed, f.table_full
        );
        s
    }
}
