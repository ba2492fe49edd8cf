//! `show interfaces counters [errors|rates|trim]` (portstat, portstat -e,
//! -R, -T): per port, frames received and sent, errors, drops, overruns,
//! byte and packet rates, utilisation; `--printall` (portstat -a) all of
//! them.
//!
//! Where each column comes from (`kernel`: the port's netdev statistics,
//! `IFLA_STATS64` of RTM_GETLINK in the namespace `show` runs in, the
//! counters `ip -s link` prints; `data plane`: its counters, as `dataplane
//! stats --json` names them, summed over the TCs):
//!
//! | column | source |
//! |---|---|
//! | STATE | kernel: `X` admin down, `U` admin and oper up, `D` admin up and oper down |
//! | RX_OK | kernel `rx_packets` (what the driver received, also the frames the data plane then dropped) |
//! | RX_ERR | kernel `rx_errors` |
//! | RX_DRP | kernel `rx_dropped` + `rx_missed_errors`; data plane: its drops at this ingress port, `drop_no_route`, `drop_no_member`, `drop_no_neighbour`, `drop_redirect`, `wd_rx_drop[tc]`, and `malformed.*` when the port's `malformed` setting is drop |
//! | RX_OVR | kernel `rx_over_errors` + `rx_fifo_errors` (receive ring or FIFO overruns) |
//! | TX_OK | kernel `tx_packets` (whether frames sent by XDP redirect count depends on the driver; veth counts them) |
//! | TX_ERR | kernel `tx_errors`; data plane: `tx_xdp_xmit_err` (redirected frames the kernel failed to transmit, counted while a controller runs) |
//! | TX_DRP | kernel `tx_dropped`; data plane: the buffer model's drops on the port's queues, `show queue counters`' Drop/pkts (`wred_drop`, `drop_shared_full`, `drop_headroom`, `wd_drop`) |
//! | TX_OVR | kernel `tx_fifo_errors` |
//! | RX_BPS, RX_PPS, TX_BPS, TX_PPS | kernel `rx_bytes`, `rx_packets`, `tx_bytes`, `tx_packets`: the difference of two readings, divided by the time between them (1 s; `--period`'s seconds when given) |
//! | RX_UTIL, TX_UTIL | the rate over the port's `speed_mbps` (`[[port]]`); `N/A` without one |
//! | TRIM, TRIM_TX, TRIM_DRP | data plane: `trim[tc]`, `trim_sent[tc]`, `trim_drop[tc]` |
//!
//! portstat's RX_OVR and TX_OVR read SAI's oversize-frame counters; the
//! kernel keeps none of its own (a too long frame counts in
//! `rx_length_errors`, part of RX_ERR), so the overruns are shown. Rates:
//! portstat reads COUNTERS_DB's RATES, which SONiC's flex counters update
//! every second; `show` reads the counters twice instead, a second apart.

use std::collections::{BTreeMap, HashSet};

use anyhow::{bail, Result};
use serde_json::{Map, Value};

use super::baseline::{self, Baseline};
use super::pyjson::PyJson;
use super::table::{commas, simple};
use super::{Ctx, Output, Target};
use crate::telemetry::netdev::Netdev;
use crate::telemetry::stats::{PortStats, Snapshot};

pub const TARGETS: &[Target] = &[
    Target {
        name: "interfaces counters",
        args: Some("[PORT]"),
        about: "frames, errors, drops, overruns and rates per port (portstat; --printall, -p SECONDS)",
        show: |c| show(c, if c.printall { View::All } else { View::Std }),
        clear: Some(clear),
    },
    Target {
        name: "interfaces counters errors",
        args: Some("[PORT]"),
        about: "errors, drops and overruns per port (portstat -e)",
        show: |c| show(c, View::Errors),
        clear: None,
    },
    Target {
        name: "interfaces counters rates",
        args: Some("[PORT]"),
        about: "byte and packet rates and utilisation per port (portstat -R)",
        show: |c| show(c, View::Rates),
        clear: None,
    },
    Target {
        name: "interfaces counters trim",
        args: Some("[PORT]"),
        about: "packets trimmed, trimmed and sent, trimmed and dropped per port (portstat -T)",
        show: |c| show(c, View::Trim),
        clear: None,
    },
];

/// The baseline's name in the state directory (`clear interfaces
/// counters`, sonic-clear counters).
const BASELINE: &str = "portstat";

/// How long `show` waits between its two readings for the rates without
/// `--period`, seconds.
pub const RATE_INTERVAL_S: f64 = 1.0;

/// A row's counters, in portstat's order, and the two byte counters the
/// rates need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum C {
    RxOk,
    RxErr,
    RxDrp,
    RxOvr,
    TxOk,
    TxErr,
    TxDrp,
    TxOvr,
    Trim,
    TrimSent,
    TrimDrop,
    RxBytes,
    TxBytes,
}

/// How many [`C`]s there are.
pub const NC: usize = 13;

impl C {
    pub const ALL: [C; NC] = [
        C::RxOk,
        C::RxErr,
        C::RxDrp,
        C::RxOvr,
        C::TxOk,
        C::TxErr,
        C::TxDrp,
        C::TxOvr,
        C::Trim,
        C::TrimSent,
        C::TrimDrop,
        C::RxBytes,
        C::TxBytes,
    ];

    /// The counter's name in the baseline (portstat's NStats names).
    pub fn key(self) -> &'static str {
        [
            "rx_ok",
            "rx_err",
            "rx_drop",
            "rx_ovr",
            "tx_ok",
            "tx_err",
            "tx_drop",
            "tx_ovr",
            "trim",
            "trim_sent",
            "trim_drop",
            "rx_byt",
            "tx_byt",
        ][self as usize]
    }
}

/// One port's counters at one reading (`None`: the port has no such
/// counter, printed `N/A`).
pub type Counters = [Option<u64>; NC];

/// One port's row: counters since the baseline (or over the period),
/// rates.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IfRow {
    pub port: String,
    /// portstat's STATE: `U`, `D`, `X`, or `N/A`.
    pub state: String,
    /// Since the baseline; `None`: N/A. Below zero only for TRIM_DRP
    /// (portstat shows its difference raw).
    pub c: [Option<i128>; NC],
    /// Bytes and packets per second.
    pub rx_bps: Option<f64>,
    pub rx_pps: Option<f64>,
    pub tx_bps: Option<f64>,
    pub tx_pps: Option<f64>,
    /// The port's speed, for the utilisation.
    pub speed_mbps: Option<u64>,
}

impl IfRow {
    fn get(&self, c: C) -> Option<i128> {
        self.c[c as usize]
    }
}

/// portstat's table layouts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// `show interfaces counters`.
    Std,
    /// `--printall` (portstat -a).
    All,
    /// `errors` (portstat -e).
    Errors,
    /// `rates` (portstat -R).
    Rates,
    /// `trim` (portstat -T).
    Trim,
}

impl View {
    pub fn header(self) -> &'static [&'static str] {
        match self {
            View::Std => &[
                "IFACE", "STATE", "RX_OK", "RX_BPS", "RX_UTIL", "RX_ERR", "RX_DRP", "RX_OVR",
                "TX_OK", "TX_BPS", "TX_UTIL", "TX_ERR", "TX_DRP", "TX_OVR",
            ],
            View::All => &[
                "IFACE", "STATE", "RX_OK", "RX_BPS", "RX_PPS", "RX_UTIL", "RX_ERR", "RX_DRP",
                "RX_OVR", "TX_OK", "TX_BPS", "TX_PPS", "TX_UTIL", "TX_ERR", "TX_DRP", "TX_OVR",
                "TRIM", "TRIM_TX", "TRIM_DRP",
            ],
            View::Errors => &[
                "IFACE", "STATE", "RX_ERR", "RX_DRP", "RX_OVR", "TX_ERR", "TX_DRP", "TX_OVR",
            ],
            View::Rates => &[
                "IFACE", "STATE", "RX_OK", "RX_BPS", "RX_PPS", "RX_UTIL", "TX_OK", "TX_BPS",
                "TX_PPS", "TX_UTIL",
            ],
            View::Trim => &[
                "IFACE",
                "STATE",
                "TRIM_PKTS",
                "TRIM_TX_PKTS",
                "TRIM_DRP_PKTS",
            ],
        }
    }

    /// Whether the view shows rates (and so needs two readings).
    pub fn has_rates(self) -> bool {
        matches!(self, View::Std | View::All | View::Rates)
    }

    /// The counters `--nonzero` looks at.
    fn watched(self) -> &'static [C] {
        use C::*;
        match self {
            View::Std | View::All => &[RxOk, TxOk, RxErr, TxErr, RxDrp, TxDrp, RxOvr, TxOvr],
            View::Errors => &[RxErr, TxErr, RxDrp, TxDrp, RxOvr, TxOvr],
            View::Rates => &[RxOk, TxOk],
            View::Trim => &[Trim],
        }
    }

    fn cells(self, r: &IfRow) -> Vec<String> {
        use C::*;
        let n = |c: C| count(r.get(c));
        let rx_util = || util(r.rx_bps, r.speed_mbps);
        let tx_util = || util(r.tx_bps, r.speed_mbps);
        let mut v = vec![r.port.clone(), r.state.clone()];
        match self {
            View::Std => v.extend([
                n(RxOk),
                brate(r.rx_bps),
                rx_util(),
                n(RxErr),
                n(RxDrp),
                n(RxOvr),
                n(TxOk),
                brate(r.tx_bps),
                tx_util(),
                n(TxErr),
                n(TxDrp),
                n(TxOvr),
            ]),
            View::All => v.extend([
                n(RxOk),
                brate(r.rx_bps),
                prate(r.rx_pps),
                rx_util(),
                n(RxErr),
                n(RxDrp),
                n(RxOvr),
                n(TxOk),
                brate(r.tx_bps),
                prate(r.tx_pps),
                tx_util(),
                n(TxErr),
                n(TxDrp),
                n(TxOvr),
                n(Trim),
                n(TrimSent),
                n(TrimDrop),
            ]),
            View::Errors => v.extend([n(RxErr), n(RxDrp), n(RxOvr), n(TxErr), n(TxDrp), n(TxOvr)]),
            View::Rates => v.extend([
                n(RxOk),
                brate(r.rx_bps),
                prate(r.rx_pps),
                rx_util(),
                n(TxOk),
                brate(r.tx_bps),
                prate(r.tx_pps),
                tx_util(),
            ]),
            View::Trim => v.extend([n(Trim), n(TrimSent), n(TrimDrop)]),
        }
        v
    }
}

const NA: &str = "N/A";

/// A counter as portstat prints it: `{:,}`, or N/A.
fn count(v: Option<i128>) -> String {
    match v {
        None => NA.into(),
        Some(n) if n < 0 => format!("-{}", commas(n.unsigned_abs() as u64)),
        Some(n) => commas(n as u64),
    }
}

/// portstat's byte rate (`format_brate`): MB/s above 10 MB/s, KB/s above
/// 10 KB/s, else B/s; 1 KB = 1000 B.
pub fn brate(bps: Option<f64>) -> String {
    let Some(r) = bps else { return NA.into() };
    if r > 1000.0 * 1000.0 * 10.0 {
        format!("{:.2} MB/s", r / 1000.0 / 1000.0)
    } else if r > 1000.0 * 10.0 {
        format!("{:.2} KB/s", r / 1000.0)
    } else {
        format!("{r:.2} B/s")
    }
}

/// portstat's packet rate (`format_prate`).
pub fn prate(pps: Option<f64>) -> String {
    pps.map_or(NA.into(), |r| format!("{r:.2}/s"))
}

/// portstat's utilisation (`format_util`): the byte rate over the speed
/// in Mb/s.
pub fn util(bps: Option<f64>, speed_mbps: Option<u64>) -> String {
    match (bps, speed_mbps) {
        (Some(b), Some(s)) => format!("{:.2}%", b / (s as f64 * 1000.0 * 1000.0 / 8.0) * 100.0),
        _ => NA.into(),
    }
}

/// What precedes the table.
#[derive(Clone, Copy, Debug, Default)]
pub struct Head<'a> {
    /// "Last cached time was ..." (since a `clear`).
    pub cached: Option<&'a str>,
    /// `--period`: "The rates are calculated within N seconds period".
    pub period: Option<u64>,
    /// `--nonzero`: rows whose watched counters are all 0 or N/A are left
    /// out.
    pub nonzero: bool,
}

/// portstat's output: the preface lines, then the table (`tabulate`,
/// simple, right-aligned) or, with `--json`, `table_as_json`
/// (`json.dumps(indent=4, sort_keys=True)`, the cells as strings); with
/// `--nonzero` and no row, its "No non-zero statistics ..." line.
pub fn render(rows: &[IfRow], view: View, head: &Head) -> Output {
    let mut pre = String::new();
    if let Some(p) = head.period {
        pre.push_str(&format!(
            "The rates are calculated within {p} seconds period\n"
        ));
    }
    if let Some(t) = head.cached {
        pre.push_str(&format!("Last cached time was {t}\n"));
    }
    let header = view.header();
    let table: Vec<Vec<String>> = rows
        .iter()
        .filter(|r| {
            !head.nonzero
                || view
                    .watched()
                    .iter()
                    .any(|c| r.get(*c).is_some_and(|v| v != 0))
        })
        .map(|r| view.cells(r))
        .collect();
    if table.is_empty() {
        let mut text = pre;
        if head.nonzero {
            text.push_str("No non-zero statistics found for the specified interfaces.\n");
        }
        return Output {
            text: text.clone(),
            json: Value::Object(Map::new()),
            json_text: Some(text),
        };
    }
    let text = format!("{pre}{}\n", simple(header, &table));
    let mut json = Map::new();
    let mut by_port: Vec<(String, PyJson)> = Vec::new();
    for row in &table {
        let mut fields: Vec<(String, String)> = header[1..]
            .iter()
            .zip(&row[1..])
            .map(|(h, c)| (h.to_string(), c.clone()))
            .collect();
        fields.sort();
        json.insert(
            row[0].clone(),
            Value::Object(
                fields
                    .iter()
                    .map(|(h, c)| (h.clone(), Value::String(c.clone())))
                    .collect(),
            ),
        );
        by_port.push((
            row[0].clone(),
            PyJson::Obj(
                fields
                    .into_iter()
                    .map(|(h, c)| (h, PyJson::Str(c)))
                    .collect(),
            ),
        ));
    }
    by_port.sort_by(|a, b| a.0.cmp(&b.0));
    let json_text = format!("{pre}{}", PyJson::Obj(by_port).dumps(4));
    Output {
        text,
        json: Value::Object(json),
        json_text: Some(json_text),
    }
}

/// A port's counters at one reading: the kernel's (`nd`; `None` when the
/// kernel has no such link) and the data plane's, combined as the module's
/// table says. `malformed_dropped`: the port's `malformed` setting is
/// drop.
pub fn port_counters(p: &PortStats, nd: Option<&Netdev>, malformed_dropped: bool) -> Counters {
    let dp = |k: &str| p.counters.get(k).copied().unwrap_or(0);
    let per_tc = |k: &str| (0..8).map(|tc| dp(&format!("{k}[{tc}]"))).sum::<u64>();
    let mut ingress_drops = ["drop_no_route", "drop_no_member", "drop_no_neighbour", "drop_redirect"]
        .iter()
        .map(|k| dp(k))
        .sum::<u64>()
        + per_tc("wd_rx_drop");
    if malformed_dropped {
        ingress_drops += p
            .counters
            .iter()
            .filter(|(k, _)| k.starts_with("malformed."))
            .map(|(_, v)| *v)
            .sum::<u64>();
    }
    let queue_drops: u64 = super::queue_counters::DROPS.iter().map(|d| per_tc(d)).sum();
    let mut c: Counters = [None; NC];
    c[C::Trim as usize] = Some(per_tc("trim"));
    c[C::TrimSent as usize] = Some(per_tc("trim_sent"));
    c[C::TrimDrop as usize] = Some(per_tc("trim_drop"));
    if let Some(k) = nd {
        let mut set = |i: C, v: u64| c[i as usize] = Some(v);
        set(C::RxOk, k.rx_packets);
        set(C::RxErr, k.rx_errors);
        set(C::RxDrp, k.rx_dropped + k.rx_missed_errors + ingress_drops);
        set(C::RxOvr, k.rx_over_errors + k.rx_fifo_errors);
        set(C::TxOk, k.tx_packets);
        set(C::TxErr, k.tx_errors + dp("tx_xdp_xmit_err"));
        set(C::TxDrp, k.tx_dropped + queue_drops);
        set(C::TxOvr, k.tx_fifo_errors);
        set(C::RxBytes, k.rx_bytes);
        set(C::TxBytes, k.tx_bytes);
    }
    c
}

/// portstat's STATE of a link.
pub fn state(nd: Option<&Netdev>) -> &'static str {
    match nd {
        None => NA,
        Some(n) if !n.admin_up => "X",
        Some(n) if n.oper_up => "U",
        Some(_) => "D",
    }
}

/// One reading of every port.
#[derive(Clone, Debug, Default)]
pub struct Reading {
    /// CLOCK_MONOTONIC, ns.
    pub at_ns: u64,
    /// (port, STATE, counters, speed), in SONiC's port order.
    pub ports: Vec<(String, String, Counters, Option<u64>)>,
}

impl Reading {
    /// The counters that are there, by name (what a baseline stores).
    pub fn as_baseline(&self) -> BTreeMap<String, BTreeMap<String, u64>> {
        self.ports
            .iter()
            .map(|(port, _, c, _)| {
                let m = C::ALL
                    .iter()
                    .filter_map(|k| c[*k as usize].map(|v| (k.key().to_string(), v)))
                    .collect();
                (port.clone(), m)
            })
            .collect()
    }
}

/// The rows of reading `now`: counters since `old` (a baseline's or an
/// earlier reading's values; a counter it lacks counts from 0, as
/// portstat's `ns_diff`), rates over `(prev, now)` when `prev` is given.
pub fn rows(
    now: &Reading,
    old: Option<&BTreeMap<String, BTreeMap<String, u64>>>,
    prev: Option<&Reading>,
) -> Vec<IfRow> {
    let secs = prev.map(|p| now.at_ns.saturating_sub(p.at_ns) as f64 / 1e9);
    now.ports
        .iter()
        .map(|(port, st, c, speed)| {
            let base = old.and_then(|o| o.get(port));
            let mut row = IfRow {
                port: port.clone(),
                state: st.clone(),
                speed_mbps: *speed,
                ..IfRow::default()
            };
            for k in C::ALL {
                let b = base.and_then(|m| m.get(k.key())).copied().unwrap_or(0);
                row.c[k as usize] = c[k as usize].map(|v| {
                    let d = i128::from(v) - i128::from(b);
                    if k == C::TrimDrop {
                        d
                    } else {
                        d.max(0)
                    }
                });
            }
            let then = prev.and_then(|p| p.ports.iter().find(|x| &x.0 == port));
            let rate = |k: C| -> Option<f64> {
                let (s, t) = (secs?, then?);
                if s <= 0.0 {
                    return None;
                }
                let d = c[k as usize]?.saturating_sub(t.2[k as usize]?);
                Some(d as f64 / s)
            };
            row.rx_bps = rate(C::RxBytes);
            row.rx_pps = rate(C::RxOk);
            row.tx_bps = rate(C::TxBytes);
            row.tx_pps = rate(C::TxOk);
            row
        })
        .collect()
}

/// The ifindexes of the instance's ports whose `malformed` setting is
/// drop (empty when the port table cannot be read).
fn malformed_drop_ports(instance: &str) -> HashSet<u32> {
    let Ok(pinned) = crate::telemetry::counters::Pinned::open(instance) else {
        return HashSet::new();
    };
    pinned
        .port_config
        .iter()
        .filter_map(|e| e.ok())
        .filter(|(_, cfg)| cfg.malformed_action == dataplane_common::maps::MALFORMED_DROP)
        .map(|(ifindex, _)| ifindex)
        .collect()
}

/// A reading of the ports of `snap` (taken at `at_ns`): `link(ifindex)`
/// is the kernel's link, `malformed_dropped(ifindex)` whether the port
/// drops malformed frames.
pub fn reading(
    snap: &Snapshot,
    at_ns: u64,
    link: impl Fn(u32) -> Option<Netdev>,
    malformed_dropped: impl Fn(u32) -> bool,
) -> Reading {
    let ports = super::ports_sorted(snap)
        .into_iter()
        .map(|p| {
            let nd = link(p.ifindex);
            (
                p.name.clone(),
                state(nd.as_ref()).to_string(),
                port_counters(p, nd.as_ref(), malformed_dropped(p.ifindex)),
                (p.speed_mbps > 0).then_some(u64::from(p.speed_mbps)),
            )
        })
        .collect();
    Reading { at_ns, ports }
}

/// Reads every port of the instance now: the data plane's counters and
/// the kernel's link.
fn read(ctx: &Ctx) -> Result<Reading> {
    let snap: Snapshot = ctx.snapshot()?;
    let dropping = malformed_drop_ports(&ctx.instance);
    Ok(reading(
        &snap,
        crate::sys::monotonic_ns(),
        crate::telemetry::netdev::read,
        |i| dropping.contains(&i),
    ))
}

/// Keeps the port `ctx.args` names (all without one).
fn only_port(ctx: &Ctx, r: &mut Reading) -> Result<()> {
    match ctx.args.as_slice() {
        [] => Ok(()),
        [port] => {
            if !r.ports.iter().any(|p| &p.0 == port) {
                let names: Vec<&str> = r.ports.iter().map(|p| p.0.as_str()).collect();
                bail!(
                    "no port {port:?} in instance {:?} (its ports: {})",
                    ctx.instance,
                    names.join(", ")
                );
            }
            r.ports.retain(|p| &p.0 == port);
            Ok(())
        }
        more => bail!("one port at most, got {}", more.join(" ")),
    }
}

fn show(ctx: &Ctx, view: View) -> Result<Output> {
    let mut first = read(ctx)?;
    only_port(ctx, &mut first)?;
    let wait = match ctx.period {
        Some(p) => Some(p as f64),
        None if view.has_rates() => Some(RATE_INTERVAL_S),
        None => None,
    };
    let Some(wait) = wait else {
        let base: Option<Baseline> = baseline::load(ctx, BASELINE);
        let head = Head {
            cached: base.as_ref().map(|b| b.time.as_str()),
            period: None,
            nonzero: ctx.nonzero,
        };
        let rows = rows(&first, base.as_ref().map(|b| &b.ports), None);
        return Ok(render(&rows, view, &head));
    };
    std::thread::sleep(std::time::Duration::from_secs_f64(wait));
    let mut now = read(ctx)?;
    only_port(ctx, &mut now)?;
    if ctx.period.is_some() {
        // portstat -p: the counters over the period, no cache
        let head = Head {
            cached: None,
            period: ctx.period,
            nonzero: ctx.nonzero,
        };
        let old = first.as_baseline();
        return Ok(render(&rows(&now, Some(&old), Some(&first)), view, &head));
    }
    let base: Option<Baseline> = baseline::load(ctx, BASELINE);
    let head = Head {
        cached: base.as_ref().map(|b| b.time.as_str()),
        period: None,
        nonzero: ctx.nonzero,
    };
    Ok(render(
        &rows(&now, base.as_ref().map(|b| &b.ports), Some(&first)),
        view,
        &head,
    ))
}

fn clear(ctx: &Ctx) -> Result<String> {
    if ctx.delete {
        return baseline::delete(ctx, BASELINE, "interface counters");
    }
    let r = read(ctx)?;
    baseline::save_ports(ctx, BASELINE, r.as_baseline())?;
    Ok("Cleared counters\n".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_as_portstat_formats_them() {
        assert_eq!(brate(Some(2e9)), "2000.00 MB/s");
        assert_eq!(brate(Some(10_000_001.0)), "10.00 MB/s");
        assert_eq!(brate(Some(10_000_000.0)), "10000.00 KB/s");
        assert_eq!(brate(Some(10_000.0)), "10000.00 B/s");
        assert_eq!(brate(Some(204_848.0)), "204.85 KB/s");
        assert_eq!(brate(None), "N/A");
        assert_eq!(prate(Some(247e3)), "247000.00/s");
        assert_eq!(util(Some(2e9), Some(25_000)), "64.00%");
        assert_eq!(util(Some(2e9), None), "N/A");
        assert_eq!(count(Some(-1234)), "-1,234");
    }

    fn port(counters: &[(&str, u64)]) -> PortStats {
        PortStats {
            name: "eth0".into(),
            ifindex: 7,
            port_id: 0,
            speed_mbps: 0,
            tx_utilisation_pct: None,
            counters: counters.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            watermarks: None,
        }
    }

    #[test]
    fn columns_add_the_kernels_and_the_data_planes_counters() {
        // each counter a different power of two: a sum shows its terms
        let p = port(&[
            ("drop_no_route", 1 << 0),
            ("drop_no_member", 1 << 1),
            ("drop_no_neighbour", 1 << 2),
            ("drop_redirect", 1 << 3),
            ("wd_rx_drop[3]", 1 << 4),
            ("malformed.eth_truncated", 1 << 5),
            ("malformed.udp_bad_len", 1 << 6),
            ("wred_drop[0]", 1 << 7),
            ("drop_shared_full[1]", 1 << 8),
            ("drop_headroom[3]", 1 << 9),
            ("wd_drop[3]", 1 << 10),
            ("tx_xdp_xmit_err", 1 << 11),
            ("trim[2]", 1 << 12),
            ("trim_sent[2]", 1 << 13),
            ("trim_drop[5]", 1 << 14),
            // not a drop of either side
            ("verdict_drop", 1 << 40),
            ("pass_not_ip", 1 << 41),
        ]);
        let k = Netdev {
            admin_up: true,
            oper_up: true,
            rx_packets: 1 << 20,
            tx_packets: 1 << 21,
            rx_bytes: 1 << 22,
            tx_bytes: 1 << 23,
            rx_errors: 1 << 24,
            tx_errors: 1 << 25,
            rx_dropped: 1 << 26,
            tx_dropped: 1 << 27,
            rx_missed_errors: 1 << 28,
            rx_over_errors: 1 << 29,
            rx_fifo_errors: 1 << 30,
            tx_fifo_errors: 1 << 31,
        };
        let c = port_counters(&p, Some(&k), false);
        let g = |x: C| c[x as usize].unwrap();
        assert_eq!(g(C::RxOk), 1 << 20);
        assert_eq!(g(C::RxErr), 1 << 24);
        assert_eq!(g(C::RxDrp), (1 << 26) + (1 << 28) + 0b1_1111);
        assert_eq!(g(C::RxOvr), (1 << 29) + (1 << 30));
        assert_eq!(g(C::TxOk), 1 << 21);
        assert_eq!(g(C::TxErr), (1 << 25) + (1 << 11));
        assert_eq!(g(C::TxDrp), (1 << 27) + 0b1111 * (1 << 7));
        assert_eq!(g(C::TxOvr), 1 << 31);
        assert_eq!((g(C::RxBytes), g(C::TxBytes)), (1 << 22, 1 << 23));
        assert_eq!(
            (g(C::Trim), g(C::TrimSent), g(C::TrimDrop)),
            (1 << 12, 1 << 13, 1 << 14)
        );
        // the port drops malformed frames: they are ingress drops too
        let c = port_counters(&p, Some(&k), true);
        assert_eq!(
            c[C::RxDrp as usize],
            Some((1 << 26) + (1 << 28) + 0b111_1111)
        );
        // no link in this namespace: the kernel's columns are N/A, the
        // data plane's trimming is still there
        let c = port_counters(&p, None, false);
        assert_eq!(c[C::RxOk as usize], None);
        assert_eq!(c[C::TxDrp as usize], None);
        assert_eq!(c[C::Trim as usize], Some(1 << 12));
    }

    #[test]
    fn state_as_portstat() {
        let up = |admin_up, oper_up| Netdev {
            admin_up,
            oper_up,
            ..Netdev::default()
        };
        assert_eq!(state(Some(&up(true, true))), "U");
        assert_eq!(state(Some(&up(true, false))), "D");
        assert_eq!(state(Some(&up(false, false))), "X");
        assert_eq!(state(None), "N/A");
    }

    #[test]
    fn rows_since_a_baseline_and_rates_between_readings() {
        let mut c: Counters = [Some(0); NC];
        c[C::TxOvr as usize] = None;
        let at = |ns, rx_ok, rx_byt, trim_drop| {
            let mut c = c;
            c[C::RxOk as usize] = Some(rx_ok);
            c[C::RxBytes as usize] = Some(rx_byt);
            c[C::TrimDrop as usize] = Some(trim_drop);
            Reading {
                at_ns: ns,
                ports: vec![("eth0".into(), "U".into(), c, Some(100_000))],
            }
        };
        let first = at(1_000_000_000, 100, 10_000, 5);
        let now = at(3_000_000_000, 300, 50_000, 5);
        // baseline: rx_ok 250, trim_drop 7 (raw: may go below 0), no rx_err
        let mut base = BTreeMap::new();
        base.insert(
            "eth0".to_string(),
            [("rx_ok", 250u64), ("trim_drop", 7)]
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect::<BTreeMap<_, _>>(),
        );
        let r = &rows(&now, Some(&base), Some(&first))[0];
        assert_eq!(r.get(C::RxOk), Some(50));
        assert_eq!(r.get(C::TrimDrop), Some(-2));
        assert_eq!(r.get(C::TxOvr), None);
        assert_eq!(r.rx_bps, Some(20_000.0));
        assert_eq!(r.rx_pps, Some(100.0));
        // a baseline above the counter (a link re-created) shows 0
        base.get_mut("eth0").unwrap().insert("rx_ok".into(), 1000);
        assert_eq!(rows(&now, Some(&base), None)[0].get(C::RxOk), Some(0));
        assert_eq!(rows(&now, Some(&base), None)[0].rx_bps, None);
    }
}
