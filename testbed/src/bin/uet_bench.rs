//! `dataplane-uetbench`: what packet trimming buys a UET incast
//! (`testbed::uetincast`): the same N:1 incast of UET messages through one
//! switch with a small lossy buffer, once with `packet_discard_action =
//! "drop"` and once with `"trim"`. Figures `uet.incast.<drop|trim>.*`
//! (message completion time p50 / p99, job completion, retransmissions,
//! timeouts, NACKs, the switch's trim counter; the trim run's ratios
//! against the drop run) merged into target/bench/results.json; the
//! runs in `uet_incast.json`, plots `uet_incast_mct_cdf.svg` and
//! `uet_incast_bars.svg` beside it.

use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Parser;
use testbed::bench::{machine, merge_results, BenchPaths};
use testbed::uetincast::{compare, records, UetIncast};

#[derive(Parser)]
#[command(
    name = "dataplane-uetbench",
    about = "UET incast: message completion times with packet trimming vs plain drops"
)]
struct Args {
    #[command(flatten)]
    paths: BenchPaths,
    /// Senders (into one receiver).
    #[arg(long, default_value_t = 7)]
    senders: usize,
    /// Messages per sender.
    #[arg(long, default_value_t = 16)]
    messages: usize,
    /// Message size, KB.
    #[arg(long, default_value_t = 16)]
    message_kb: u64,
    /// Host line rate, Mb/s.
    #[arg(long, default_value_t = 20)]
    host_mbps: u32,
    /// Packets in flight per sender.
    #[arg(long, default_value_t = 16)]
    window: u32,
    /// Retransmission timeout, ms.
    #[arg(long, default_value_t = 100)]
    rto_ms: u64,
    /// The switch's shared pool, bytes.
    #[arg(long, default_value_t = 65536)]
    pool_bytes: u32,
}

fn main() {
    testbed::fabric::run_main(real_main)
}

fn real_main() -> Result<()> {
    let a = Args::parse();
    let dp = a
        .paths
        .dataplane
        .canonicalize()
        .with_context(|| format!("controller binary {}", a.paths.dataplane.display()))?;
    let spec = UetIncast {
        senders: a.senders,
        messages: a.messages,
        message_bytes: a.message_kb * 1024,
        host_mbps: a.host_mbps,
        window: a.window,
        rto_ms: a.rto_ms,
        pool_bytes: a.pool_bytes,
        timeout: Duration::from_secs(120),
        ..UetIncast::default()
    };
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load = load
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ");
    println!(
        "UET incast {}:1 through one switch, {} messages of {} KB per sender at {} Mb/s, window {}, RTO {} ms, pool {} bytes (load average before: {load})",
        spec.senders, spec.messages, a.message_kb, spec.host_mbps, spec.window, spec.rto_ms, spec.pool_bytes
    );
    let dir = a
        .paths
        .out
        .parent()
        .map(|p| p.to_path_buf())
        .unwrap_or_default();
    let [drop, trim] = compare(&dp, "uhb", &spec, &dir, "uet_incast")?;
    let note = format!(
        "{}:1 star, {} x {} KB per sender, {} Mb/s, window {}, RTO {} ms, pool {} B lossy_dynamic_th {}, trim to {} B; load average before {load}",
        spec.senders,
        spec.messages,
        a.message_kb,
        spec.host_mbps,
        spec.window,
        spec.rto_ms,
        spec.pool_bytes,
        spec.lossy_dynamic_th,
        spec.trim_size
    );
    merge_results(&a.paths.out, &records(&[&drop, &trim], &machine(), &note))?;
    let report = serde_json::json!({
        "note": note,
        "runs": [drop.to_json(), trim.to_json()],
    });
    std::fs::write(
        dir.join("uet_incast.json"),
        serde_json::to_string_pretty(&report)?,
    )?;
    println!(
        "figures uet.incast.* in {}; runs {}/uet_incast.json; plots {}/uet_incast_mct_cdf.svg, uet_incast_bars.svg",
        a.paths.out.display(),
        dir.display(),
        dir.display()
    );
    if !drop.complete || !trim.complete {
        bail!("a run did not complete");
    }
    Ok(())
}
