//! The UET incast (issue 18 item 4): what packet trimming buys.
//!
//! N senders write messages to one receiver through one switch (a star:
//! every host at the same line rate, so the receiver's port is an N:1
//! bottleneck) whose lossy queues have a small shared buffer. The same
//! fabric runs twice: `packet_discard_action = "trim"` (a packet the
//! buffer cannot take leaves cut to `size` bytes with the trim DSCP on the
//! trim queue; the receiver NACKs it at once, the sender resends that
//! packet) and `"drop"` (the packet is gone; the sender resends it after
//! its retransmission timeout). Measured per run: each message's
//! completion time (first packet out to last ACK) at p50 / p99 / max, the
//! job completion time (every host done), retransmissions, timeouts,
//! NACKs, and the switch's `trim` / `trim_sent` / `trim_drop` and
//! `drop_shared_full` counters.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};

use crate::bench::Record;
use crate::controller::sum_counters;
use crate::fabric::{check_interrupt, Fabric};
use crate::host::{
    run_uet_host, RunShared, UetHostCfg, UetPlan, UetRecvJob, UetReport, UetSendJob,
};
use crate::topo::{Shape, Topology, Trimming};

/// The incast's shape and the switch buffer it overflows.
#[derive(Clone, Debug)]
pub struct UetIncast {
    pub senders: usize,
    /// Messages per sender, and their size.
    pub messages: usize,
    pub message_bytes: u64,
    /// Every host's line rate.
    pub host_mbps: u32,
    /// The switch's shared pool and its lossy threshold (`2^th x free`
    /// per ingress PG).
    pub pool_bytes: u32,
    pub lossy_dynamic_th: i8,
    /// Packets in flight per sender, and its retransmission timeout.
    pub window: u32,
    pub rto_ms: u64,
    /// Trim size, DSCP and queue (`[switch_trimming]`).
    pub trim_size: u16,
    pub trim_dscp: u8,
    pub trim_queue: u8,
    /// Give up after this long.
    pub timeout: Duration,
    /// A progress line a second on stderr.
    pub progress: bool,
}

impl Default for UetIncast {
    /// 7:1, 16 messages of 16 KB per sender at 20 Mb/s, a 64 KB pool with
    /// `lossy_dynamic_th` -2, window 16 packets of 1 KB, RTO 100 ms, trim
    /// to 128 bytes with DSCP 48 on queue 6.
    fn default() -> Self {
        UetIncast {
            senders: 7,
            messages: 16,
            message_bytes: 16 * 1024,
            host_mbps: 20,
            pool_bytes: 64 * 1024,
            lossy_dynamic_th: -2,
            window: 16,
            rto_ms: 100,
            trim_size: 128,
            trim_dscp: 48,
            trim_queue: 6,
            timeout: Duration::from_secs(60),
            progress: true,
        }
    }
}

impl UetIncast {
    /// The star it runs on, trimming (`trim`) or dropping.
    pub fn topology(&self, trim: bool) -> Topology {
        Topology {
            shape: Shape::Star {
                hosts: self.senders + 1,
            },
            host_mbps: self.host_mbps,
            pfc: false,
            ecn: false,
            pool_bytes: self.pool_bytes,
            lossy_dynamic_th: self.lossy_dynamic_th,
            trimming: Some(Trimming {
                trim,
                size: self.trim_size,
                dscp: self.trim_dscp,
                queue: self.trim_queue,
            }),
            ..Topology::default()
        }
    }

    /// Host 0 receives; hosts 1..=senders send, PDC 0x100 + i.
    pub fn plans(&self, topo: &Topology) -> Vec<UetPlan> {
        let hosts = topo.hosts();
        let mut plans = vec![UetPlan::default(); hosts.len()];
        for i in 1..=self.senders {
            let pdc = 0x100 + i as u16;
            plans[i].sends.push(UetSendJob {
                pdc,
                dst_ip: hosts[0].ipv4,
                messages: vec![self.message_bytes; self.messages],
            });
            plans[0].recvs.push(UetRecvJob {
                pdc,
                messages: self.messages as u64,
            });
        }
        plans
    }
}

/// The switch's counters over a run (sums over ports and queues).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SwitchTrim {
    pub trim: u64,
    pub trim_sent: u64,
    pub trim_drop: u64,
    pub drop_shared_full: u64,
}

/// One run of the incast.
#[derive(Clone, Debug)]
pub struct UetIncastRun {
    /// `trim` or `drop`.
    pub action: &'static str,
    pub complete: bool,
    pub job_completion_ms: Option<f64>,
    /// Every complete message's completion time, sorted, ms.
    pub mct_ms: Vec<f64>,
    pub messages_expected: usize,
    pub hosts: Vec<UetReport>,
    pub switch: SwitchTrim,
}

/// The `p` quantile (0..=1) of sorted `v`, nearest rank; 0 when empty.
pub fn quantile(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let rank = (p * v.len() as f64).ceil().max(1.0) as usize;
    v[rank.min(v.len()) - 1]
}

impl UetIncastRun {
    fn sum(&self, f: impl Fn(&UetReport) -> u64) -> u64 {
        self.hosts.iter().map(f).sum()
    }
    pub fn retransmitted(&self) -> u64 {
        self.sum(|h| h.retransmitted)
    }
    pub fn timeouts(&self) -> u64 {
        self.sum(|h| h.timeouts)
    }
    pub fn nacks_tx(&self) -> u64 {
        self.sum(|h| h.nacks_tx)
    }
    pub fn nacks_rx(&self) -> u64 {
        self.sum(|h| h.nacks_rx)
    }
    pub fn trimmed_rx(&self) -> u64 {
        self.sum(|h| h.trimmed_rx)
    }
    pub fn tx_pkts(&self) -> u64 {
        self.sum(|h| h.tx_pkts)
    }
    pub fn p50(&self) -> f64 {
        quantile(&self.mct_ms, 0.5)
    }
    pub fn p99(&self) -> f64 {
        quantile(&self.mct_ms, 0.99)
    }
    pub fn max(&self) -> f64 {
        self.mct_ms.last().copied().unwrap_or(0.0)
    }

    /// The run as JSON with stable names.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "discard_action": self.action,
            "complete": self.complete,
            "job_completion_ms": self.job_completion_ms,
            "messages": self.mct_ms.len(),
            "messages_expected": self.messages_expected,
            "mct_p50_ms": self.p50(),
            "mct_p99_ms": self.p99(),
            "mct_max_ms": self.max(),
            "tx_pkts": self.tx_pkts(),
            "retransmitted_pkts": self.retransmitted(),
            "timeouts": self.timeouts(),
            "trimmed_rx": self.trimmed_rx(),
            "nacks_tx": self.nacks_tx(),
            "nacks_rx": self.nacks_rx(),
            "switch_trim": self.switch.trim,
            "switch_trim_sent": self.switch.trim_sent,
            "switch_trim_drop": self.switch.trim_drop,
            "switch_drop_shared_full": self.switch.drop_shared_full,
            "socket_drops": self.sum(|h| h.socket_drops),
        })
    }

    /// One table row (see [`print_table`]).
    fn row(&self) -> String {
        format!(
            "{:<6} {:>9} {:>8.1} {:>8.1} {:>8.1} {:>7} {:>8} {:>6} {:>6} {:>6} {:>6}",
            self.action,
            self.job_completion_ms
                .map(|j| format!("{j:.0}"))
                .unwrap_or_else(|| "-".into()),
            self.p50(),
            self.p99(),
            self.max(),
            self.retransmitted(),
            self.timeouts(),
            self.nacks_tx(),
            self.switch.trim,
            self.switch.trim_drop,
            self.switch.drop_shared_full,
        )
    }
}

/// Prints the runs as a table.
pub fn print_table(runs: &[&UetIncastRun]) {
    println!(
        "{:<6} {:>9} {:>8} {:>8} {:>8} {:>7} {:>8} {:>6} {:>6} {:>6} {:>6}",
        "action",
        "JCT ms",
        "MCT p50",
        "p99",
        "max",
        "retx",
        "timeouts",
        "NACKs",
        "trim",
        "trim",
        "shared"
    );
    println!(
        "{:<6} {:>9} {:>8} {:>8} {:>8} {:>7} {:>8} {:>6} {:>6} {:>6} {:>6}",
        "", "", "ms", "ms", "ms", "pkts", "", "sent", "", "drop", "drops"
    );
    for r in runs {
        println!("{}", r.row());
    }
}

/// Runs `spec` once on a fabric built for it (`trim` or drop), namespaces
/// `dpt-<tag>*`, everything torn down on return.
pub fn run_uet_incast(
    dataplane: &Path,
    tag: &str,
    spec: &UetIncast,
    trim: bool,
) -> Result<UetIncastRun> {
    let topo = spec.topology(trim);
    let fabric = Fabric::build(topo.clone(), dataplane, tag)?;
    let hosts = topo.hosts();
    let plans = spec.plans(&topo);
    let cfgs: Vec<UetHostCfg> = hosts
        .iter()
        .map(|h| UetHostCfg {
            window: spec.window,
            rto_ns: spec.rto_ms * 1_000_000,
            ..UetHostCfg::of(h, spec.trim_dscp)
        })
        .collect();
    let before = fabric.stats()?;
    let shared = RunShared::new(hosts.len());
    let total = spec.senders as u64 * spec.messages as u64 * spec.message_bytes;
    let action = if trim { "trim" } else { "drop" };
    let reports = std::thread::scope(|s| -> Result<Vec<UetReport>> {
        let handles: Vec<_> = (0..hosts.len())
            .map(|i| {
                let (ns, cfg, plan, shared) = (fabric.host_ns(i), &cfgs[i], &plans[i], &shared);
                s.spawn(move || -> Result<UetReport> {
                    let _in = ns.enter()?;
                    let r = run_uet_host(cfg, plan, shared, i);
                    if r.is_err() {
                        shared.stop.store(true, Ordering::SeqCst);
                    }
                    r
                })
            })
            .collect();
        let t0 = Instant::now();
        let mut last = Instant::now();
        loop {
            std::thread::sleep(Duration::from_millis(20));
            let done = shared.done.load(Ordering::SeqCst) as usize;
            if spec.progress && last.elapsed() >= Duration::from_secs(1) {
                last = Instant::now();
                let acked: u64 = shared.acked.iter().map(|a| a.load(Ordering::Relaxed)).sum();
                eprintln!(
                    "  uet incast [{action}]: {:5.1} s  {:5.1}% acknowledged, hosts done {done}/{}",
                    t0.elapsed().as_secs_f64(),
                    100.0 * acked as f64 / total.max(1) as f64,
                    hosts.len()
                );
            }
            if done == hosts.len()
                || shared.stop.load(Ordering::SeqCst)
                || t0.elapsed() > spec.timeout
                || check_interrupt().is_err()
            {
                break;
            }
        }
        // the last ACKs land
        std::thread::sleep(Duration::from_millis(50));
        shared.stop.store(true, Ordering::SeqCst);
        handles
            .into_iter()
            .map(|h| h.join().map_err(|_| anyhow!("a UET host panicked"))?)
            .collect()
    })?;
    check_interrupt()?;
    // the model's queues drain before the last read
    std::thread::sleep(Duration::from_millis(100));
    let after = fabric.stats()?;
    let delta = |name: &str| -> u64 {
        after
            .iter()
            .zip(&before)
            .map(|(a, b)| sum_counters(a, name).saturating_sub(sum_counters(b, name)))
            .sum()
    };
    let switch = SwitchTrim {
        trim: delta("trim["),
        trim_sent: delta("trim_sent["),
        trim_drop: delta("trim_drop["),
        drop_shared_full: delta("drop_shared_full["),
    };
    let complete = reports.iter().all(|r| r.finish_ms.is_some());
    let job_completion_ms = complete.then(|| {
        reports
            .iter()
            .filter_map(|r| r.finish_ms)
            .fold(0.0, f64::max)
    });
    let mut mct_ms: Vec<f64> = reports.iter().flat_map(|r| r.mct_ms.clone()).collect();
    mct_ms.sort_by(f64::total_cmp);
    Ok(UetIncastRun {
        action,
        complete,
        job_completion_ms,
        mct_ms,
        messages_expected: spec.senders * spec.messages,
        hosts: reports,
        switch,
    })
}

/// The completion-time CDF of each run (`lines` of [`crate::plot`]).
pub fn cdf_svg(title: &str, runs: &[&UetIncastRun]) -> String {
    let series: Vec<(&str, Vec<(f64, f64)>)> = runs
        .iter()
        .map(|r| {
            let n = r.mct_ms.len().max(1) as f64;
            let mut pts = vec![(0.0, 0.0)];
            for (i, &x) in r.mct_ms.iter().enumerate() {
                pts.push((x, i as f64 / n));
                pts.push((x, (i + 1) as f64 / n));
            }
            (r.action, pts)
        })
        .collect();
    crate::plot::lines(
        title,
        "message completion time, ms",
        "fraction of messages",
        &series,
        &[],
    )
}

/// p50, p99 and job completion per run (`bars` of [`crate::plot`]).
pub fn bars_svg(title: &str, runs: &[&UetIncastRun]) -> String {
    let legend: Vec<&str> = runs.iter().map(|r| r.action).collect();
    let groups = vec![
        ("MCT p50", runs.iter().map(|r| r.p50()).collect()),
        ("MCT p99", runs.iter().map(|r| r.p99()).collect()),
        ("MCT max", runs.iter().map(|r| r.max()).collect()),
        (
            "job completion",
            runs.iter()
                .map(|r| r.job_completion_ms.unwrap_or(0.0))
                .collect(),
        ),
    ];
    crate::plot::bars(title, "ms", &legend, &groups)
}

/// `uet.incast.<action>.<figure>` records of the runs; ratios of the trim
/// run against the drop run.
pub fn records(runs: &[&UetIncastRun], machine: &str, note: &str) -> Vec<Record> {
    let drop = runs.iter().find(|r| r.action == "drop");
    let mut out = Vec::new();
    for r in runs {
        let figs: [(&str, f64, &str, Option<f64>); 7] = [
            ("mct_p50_ms", r.p50(), "ms", drop.map(|d| d.p50())),
            ("mct_p99_ms", r.p99(), "ms", drop.map(|d| d.p99())),
            (
                "jct_ms",
                r.job_completion_ms.unwrap_or(-1.0),
                "ms",
                drop.and_then(|d| d.job_completion_ms),
            ),
            (
                "retransmitted_pkts",
                r.retransmitted() as f64,
                "packets",
                None,
            ),
            ("timeouts", r.timeouts() as f64, "packets", None),
            ("nacks", r.nacks_tx() as f64, "packets", None),
            ("switch_trim", r.switch.trim as f64, "packets", None),
        ];
        for (name, value, unit, base) in figs {
            if value < 0.0 {
                // an incomplete run has no job completion time (and NaN
                // would not survive the results file)
                continue;
            }
            let figure = format!("uet.incast.{}.{name}", r.action);
            let baseline = format!("uet.incast.drop.{name}");
            out.push(match base {
                Some(b) if r.action != "drop" => {
                    Record::against(figure, value, unit, (&baseline, b), machine, note.into())
                }
                _ => Record::new(figure, value, unit, machine, note.into()),
            });
        }
    }
    out
}

/// The comparison: `spec` with plain drops, then with trimming (a fabric
/// each, namespaces `dpt-<tag>*`); prints the table and writes
/// `<dir>/<prefix>_mct_cdf.svg` and `<dir>/<prefix>_bars.svg`.
pub fn compare(
    dataplane: &Path,
    tag: &str,
    spec: &UetIncast,
    dir: &Path,
    prefix: &str,
) -> Result<[UetIncastRun; 2]> {
    let drop = run_uet_incast(dataplane, tag, spec, false)?;
    let trim = run_uet_incast(dataplane, tag, spec, true)?;
    let runs = [&drop, &trim];
    print_table(&runs);
    std::fs::create_dir_all(dir)?;
    let what = format!(
        "UET incast {}:1, {} x {} KB per sender, {} Mb/s",
        spec.senders,
        spec.messages,
        spec.message_bytes / 1024,
        spec.host_mbps
    );
    std::fs::write(
        dir.join(format!("{prefix}_mct_cdf.svg")),
        cdf_svg(&format!("{what}: message completion time CDF"), &runs),
    )?;
    std::fs::write(
        dir.join(format!("{prefix}_bars.svg")),
        bars_svg(&format!("{what}: trimming vs drop"), &runs),
    )?;
    Ok([drop, trim])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&v, 0.5), 50.0);
        assert_eq!(quantile(&v, 0.99), 99.0);
        assert_eq!(quantile(&v, 1.0), 100.0);
        assert_eq!(quantile(&[3.0], 0.99), 3.0);
        assert_eq!(quantile(&[], 0.5), 0.0);
    }

    fn run(action: &'static str, mct: Vec<f64>, jct: Option<f64>) -> UetIncastRun {
        UetIncastRun {
            action,
            complete: jct.is_some(),
            job_completion_ms: jct,
            mct_ms: mct,
            messages_expected: 2,
            hosts: Vec::new(),
            switch: SwitchTrim::default(),
        }
    }

    #[test]
    fn records_compare_trim_with_drop_and_skip_what_was_not_measured() {
        let d = run("drop", vec![10.0, 40.0], Some(100.0));
        let t = run("trim", vec![5.0, 10.0], None);
        let r = records(&[&d, &t], "m", "n");
        let get = |f: &str| r.iter().find(|x| x.figure == f);
        let p99 = get("uet.incast.trim.mct_p99_ms").unwrap();
        assert_eq!((p99.value, p99.ratio), (10.0, Some(0.25)));
        assert_eq!(p99.baseline.as_deref(), Some("uet.incast.drop.mct_p99_ms"));
        assert!(get("uet.incast.drop.mct_p99_ms").unwrap().ratio.is_none());
        assert!(
            get("uet.incast.trim.jct_ms").is_none(),
            "incomplete: no JCT"
        );
        assert_eq!(get("uet.incast.drop.jct_ms").unwrap().value, 100.0);
        assert!(bars_svg("t", &[&d, &t]).contains("job completion"));
        assert_eq!(cdf_svg("t", &[&d, &t]).matches("<path").count(), 2);
    }

    #[test]
    fn the_incast_trims_or_drops_on_the_same_buffer() {
        let s = UetIncast::default();
        let t = s.topology(true);
        let c = t.switch_config(&t.leaves()[0], "x");
        assert!(
            c.contains("[switch_trimming]\nsize = 128\ndscp_value = 48\nqueue_index = 6"),
            "{c}"
        );
        assert!(c.contains("packet_discard_action = \"trim\""), "{c}");
        assert_eq!(c.matches("buffer_queue = { \"0-2\"").count(), 8);
        let d = s.topology(false);
        let cd = d.switch_config(&d.leaves()[0], "x");
        assert_eq!(
            cd.replace("\"drop\"", "\"trim\""),
            c,
            "only the discard action differs"
        );
        let plans = s.plans(&t);
        assert_eq!(plans[0].recvs.len(), 7);
        assert!(plans[1..].iter().all(|p| p.sends.len() == 1
            && p.sends[0].dst_ip == t.hosts()[0].ipv4
            && p.sends[0].messages.len() == 16));
    }
}
