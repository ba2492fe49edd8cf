//! Looking at a running data plane: `stats`, `show`, `clear`, `watch`,
//! `events`; and `down`, which detaches it.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use dataplane_user::{attach, snapshot};

use super::say;

/// `dataplane stats`: the counters, as tables or JSON.
pub fn stats(instance: &str, json: bool) -> Result<()> {
    let snap = snapshot(instance)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&snap)?);
    } else {
        print!("{}", snap.render());
    }
    Ok(())
}

/// The flags of `dataplane show`.
pub struct Flags {
    pub empty: bool,
    pub nonzero: bool,
    pub history: bool,
    pub period: Option<u64>,
    pub printall: bool,
}

/// `dataplane show TARGET`: SONiC's layout of a target, or JSON.
pub fn show(which: &super::args::Instance, target: &[String], json: bool, f: Flags) -> Result<()> {
    let mut ctx = dataplane_user::show::Ctx::new(&which.name()?, which.config.clone());
    ctx.empty = f.empty;
    ctx.nonzero = f.nonzero;
    ctx.history = f.history;
    ctx.period = f.period;
    ctx.printall = f.printall;
    print!("{}", dataplane_user::show::show(&ctx, target, json)?);
    Ok(())
}

/// `dataplane clear TARGET`.
pub fn clear(which: &super::args::Instance, target: &[String], delete: bool) -> Result<()> {
    let mut ctx = dataplane_user::show::Ctx::new(&which.name()?, which.config.clone());
    ctx.delete = delete;
    print!("{}", dataplane_user::show::clear(&ctx, target)?);
    Ok(())
}

/// `dataplane down`: detaches the instance and removes its pins.
pub fn down(instance: &str) -> Result<()> {
    let n = attach::down(instance)?;
    println!("instance {instance}: {n} port(s) detached, pins removed");
    Ok(())
}

/// `dataplane events`: drop snapshots as they happen (and to pcapng).
pub fn events(
    instance: &str,
    count: Option<usize>,
    timeout: Option<f64>,
    pcapng: Option<&Path>,
    history: bool,
) -> Result<()> {
    let n = dataplane_user::telemetry::events::run(
        instance,
        count,
        timeout.map(Duration::from_secs_f64),
        pcapng,
        history,
    )?;
    eprintln!("{n} event(s)");
    Ok(())
}

/// `dataplane watch`: clears the terminal and prints rates and the tables.
pub fn watch(instance: &str, interval: f64) -> Result<()> {
    let period = Duration::from_secs_f64(interval.clamp(0.1, 3600.0));
    let mut prev: Option<(
        std::time::Instant,
        dataplane_user::telemetry::stats::Snapshot,
    )> = None;
    loop {
        let snap = snapshot(instance)?;
        let now = std::time::Instant::now();
        let mut out = String::from("\x1b[2J\x1b[H");
        out.push_str(&format!(
            "dataplane watch: instance {instance}, every {interval} s (Ctrl-C to quit)\n\n"
        ));
        if let Some((t0, p0)) = &prev {
            let dt = now.duration_since(*t0).as_secs_f64().max(1e-3);
            out.push_str(&format!(
                "{:<16} {:>12} {:>12} {:>12} {:>10} {:>10}\n",
                "Port", "RX pps", "TX pps", "TX Mb/s", "ECN/s", "PFC-RX/s"
            ));
            for (p, q) in snap.ports.iter().zip(&p0.ports) {
                let rate = |prefix: &str| -> f64 {
                    let sum = |c: &std::collections::BTreeMap<String, u64>| -> u64 {
                        c.iter()
                            .filter(|(k, _)| k.starts_with(prefix))
                            .map(|(_, v)| *v)
                            .sum()
                    };
                    sum(&p.counters).saturating_sub(sum(&q.counters)) as f64 / dt
                };
                out.push_str(&format!(
                    "{:<16} {:>12.0} {:>12.0} {:>12.1} {:>10.0} {:>10.0}\n",
                    p.name,
                    rate("rx_tc_pkts["),
                    rate("tx_tc_pkts["),
                    rate("tx_tc_bytes[") * 8.0 / 1e6,
                    rate("ecn_marked["),
                    rate("rx_pfc[")
                ));
            }
            out.push('\n');
        }
        out.push_str(&snap.render());
        say(&out);
        prev = Some((now, snap));
        std::thread::sleep(period);
    }
}
