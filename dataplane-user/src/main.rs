//! `dataplane`: the controller of the eBPF data plane.

use dataplane_common::names;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use dataplane_config::{Config, Plan};
use dataplane_user::{dataplane, snapshot, sys};

#[derive(Parser)]
#[command(
    name = "dataplane",
    version,
    about = "Lossless RoCEv2 switch data plane (XDP) controller"
)]
struct Cli {
    /// Run inside this network namespace (an `ip netns` name). bpffs stays
    /// the host's, so pins are shared with `stats` run the same way.
    #[arg(long, global = true)]
    netns: Option<String>,
    /// Controller log level: error, warn, info, debug (debug: every PFC
    /// frame sent).
    #[arg(long, global = true, default_value = "info")]
    log_level: String,
    /// Log one JSON object per line (time, level, msg).
    #[arg(long, global = true)]
    log_json: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Validate the config, attach the programs to its ports, load the
    /// tables and run until interrupted (Ctrl-C / SIGTERM detaches).
    Up {
        #[arg(short, long)]
        config: PathBuf,
        /// Print the counters every N seconds while running.
        #[arg(long)]
        stats_interval: Option<u64>,
        /// Prometheus endpoint (GET /metrics); "off" to disable.
        #[arg(long, default_value = "127.0.0.1:9464")]
        metrics: String,
    },
    /// Replace the running controller by this binary without stopping
    /// forwarding: the old controller is stopped (its data plane keeps
    /// running), then this build adopts the pinned data plane and swaps its
    /// programs in atomically on the links, keeping every map.
    Upgrade {
        #[arg(short, long)]
        config: PathBuf,
        #[arg(long)]
        stats_interval: Option<u64>,
        #[arg(long, default_value = "127.0.0.1:9464")]
        metrics: String,
    },
    /// Apply a changed config to the running controller (SIGHUP): validated
    /// first; tables rewritten entry by entry, each entry atomically; an
    /// invalid config or one that changes the ports changes nothing.
    Reload {
        #[arg(short, long)]
        config: PathBuf,
    },
    /// Detach a data plane: its programs leave the ports and its pinned
    /// maps go. The only command that stops forwarding; refused while a
    /// controller runs the instance.
    Down {
        #[command(flatten)]
        which: Instance,
    },
    /// Print the counters of a running data plane.
    Stats {
        #[command(flatten)]
        which: Instance,
        /// JSON with stable counter names instead of tables.
        #[arg(long)]
        json: bool,
    },
    /// Print drop snapshots (reason, port, RoCEv2 fields) as they happen;
    /// optionally write them to a pcapng file.
    Events {
        #[command(flatten)]
        which: Instance,
        /// Stop after this many events.
        #[arg(long)]
        count: Option<usize>,
        /// Stop after this many seconds.
        #[arg(long)]
        timeout: Option<f64>,
        /// Also write the snapshots to this pcapng file.
        #[arg(long)]
        pcapng: Option<PathBuf>,
        /// Start with the controller events already logged (PFC XOFF/XON
        /// sent, watchdog storms) instead of only new ones.
        #[arg(long)]
        history: bool,
    },
    /// Refresh the counters in the terminal, with per-second rates.
    Watch {
        #[command(flatten)]
        which: Instance,
        /// Seconds between refreshes.
        #[arg(long, default_value_t = 1.0)]
        interval: f64,
    },
    /// The P4 targets (bmv2, Tofino): table entries from the same config.
    P4 {
        #[command(subcommand)]
        cmd: P4Cmd,
    },
    /// Configuration commands.
    Config {
        #[command(subcommand)]
        cmd: ConfigCmd,
    },
}

#[derive(Subcommand)]
enum P4Cmd {
    /// Write simple_switch_CLI commands (bmv2), P4Runtime entries (JSON) and
    /// a bfrt-python script (Tofino, with PFC/ECN/buffer settings). A
    /// feature the target cannot express is refused, naming the field.
    Entries {
        /// bmv2 or tofino.
        #[arg(long)]
        target: String,
        #[arg(short, long)]
        config: PathBuf,
        /// Output directory.
        #[arg(short, long, default_value = ".")]
        out: PathBuf,
        /// bmv2 counts queue depth in packets: bytes per packet for the
        /// WRED thresholds.
        #[arg(long, default_value_t = 4096)]
        bmv2_packet_bytes: u32,
        /// Tofino traffic-manager cell size (80 on Tofino 1, 176 on Tofino 2).
        #[arg(long, default_value_t = 80)]
        tofino_cell_bytes: u32,
    },
    /// Read the P4 program's counters from a running switch and show them
    /// as pfcstat does: PFC received/sent per priority, packets per class
    /// in and out, ECN marked, WRED dropped, malformed frames and drops by
    /// reason. bmv2 (simple_switch, over its Thrift port) only.
    Stats {
        /// bmv2 (Tofino: read the program's counters with bfrt_python).
        #[arg(long, default_value = "bmv2")]
        target: String,
        /// The configuration the entries were generated from (port names
        /// and numbers).
        #[arg(short, long)]
        config: PathBuf,
        /// simple_switch's Thrift port.
        #[arg(long, default_value_t = 9090)]
        thrift_port: u16,
        /// One JSON document instead of tables.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum ConfigCmd {
    /// Validate a config file; prints every error with its field.
    Check {
        #[arg(short, long)]
        config: PathBuf,
        /// Also check that every port's interface exists here.
        #[arg(long)]
        resolve: bool,
    },
}

#[derive(Args)]
struct Instance {
    /// Instance name ([switch] name in the config).
    #[arg(long, conflicts_with = "config")]
    instance: Option<String>,
    /// Take the instance name from this config.
    #[arg(short, long)]
    config: Option<PathBuf>,
}

impl Instance {
    fn name(&self) -> Result<String> {
        if let Some(i) = &self.instance {
            return Ok(i.clone());
        }
        if let Some(c) = &self.config {
            let cfg = Config::load(c)?;
            return Ok(cfg.switch.name);
        }
        Ok("default".into())
    }
}

fn plan_of(path: &std::path::Path) -> Result<Plan> {
    let source = path.display().to_string();
    let cfg = Config::load(path)?;
    Ok(cfg.validate(&source)?)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dataplane: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    let level = dataplane_user::log::parse_level(&cli.log_level).ok_or_else(|| {
        anyhow::anyhow!(
            "--log-level: expected error, warn, info or debug, got {:?}",
            cli.log_level
        )
    })?;
    dataplane_user::log::set(level, cli.log_json);
    // Validate before anything touches the system.
    let up_plan = match &cli.cmd {
        Cmd::Up { config, .. } | Cmd::Upgrade { config, .. } => Some(plan_of(config)?),
        _ => None,
    };
    // setns before any thread exists, so every thread lives in the namespace
    if let Some(ns) = &cli.netns {
        sys::enter_netns(ns)?;
    }
    match cli.cmd {
        Cmd::Up {
            stats_interval,
            metrics,
            config,
        } => up(
            up_plan.expect("validated above"),
            config,
            stats_interval,
            metrics,
        ),
        Cmd::Upgrade {
            stats_interval,
            metrics,
            config,
        } => {
            let plan = up_plan.expect("validated above");
            if let Ok(pid) = sys::InstanceLock::holder(&plan.instance) {
                say(&format!("upgrade: stopping controller {pid} of instance {} (its data plane keeps forwarding)", plan.instance));
                // SAFETY: signalling the controller that holds the instance lock.
                unsafe { libc::kill(pid, libc::SIGTERM) };
                let deadline = std::time::Instant::now() + Duration::from_secs(10);
                while sys::InstanceLock::holder(&plan.instance).is_ok() {
                    if std::time::Instant::now() > deadline {
                        anyhow::bail!("controller {pid} did not stop within 10 s; nothing changed");
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            up(plan, config, stats_interval, metrics)
        }
        Cmd::Reload { config } => {
            // validate here first: a bad file gets its errors at once and the
            // running controller is not even asked
            let plan = plan_of(&config)?;
            let pid = sys::InstanceLock::holder(&plan.instance)?;
            // which file to apply: the controller reads it from here on SIGHUP
            let abs = std::fs::canonicalize(&config)?;
            std::fs::write(
                sys::reload_request(&plan.instance),
                abs.to_string_lossy().as_bytes(),
            )?;
            // SAFETY: signalling the controller that holds the instance lock.
            if unsafe { libc::kill(pid, libc::SIGHUP) } != 0 {
                anyhow::bail!(
                    "signalling the controller (pid {pid}): {}",
                    std::io::Error::last_os_error()
                );
            }
            println!("{}: valid; controller {pid} of instance {:?} asked to reload it (its output says what it applied)", config.display(), plan.instance);
            Ok(())
        }
        Cmd::Stats { which, json } => {
            let snap = snapshot(&which.name()?)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&snap)?);
            } else {
                print!("{}", snap.render());
            }
            Ok(())
        }
        Cmd::Watch { which, interval } => watch(&which.name()?, interval),
        Cmd::Down { which } => {
            let name = which.name()?;
            let n = dataplane::down(&name)?;
            println!("instance {name}: {n} port(s) detached, pins removed");
            Ok(())
        }
        Cmd::Events {
            which,
            count,
            timeout,
            pcapng,
            history,
        } => {
            let n = dataplane_user::events::run(
                &which.name()?,
                count,
                timeout.map(Duration::from_secs_f64),
                pcapng.as_deref(),
                history,
            )?;
            eprintln!("{n} event(s)");
            Ok(())
        }
        Cmd::P4 {
            cmd:
                P4Cmd::Entries {
                    target,
                    config,
                    out,
                    bmv2_packet_bytes,
                    tofino_cell_bytes,
                },
        } => {
            use dataplane_p4 as p4;
            let t: p4::Target = target
                .parse()
                .map_err(|e: String| anyhow::anyhow!("--target: {e}"))?;
            let plan = plan_of(&config)?;
            let opts = p4::Options {
                bmv2_packet_bytes,
                tofino_cell_bytes,
            };
            let e = p4::entries_with(&plan, t, &opts).map_err(|r| anyhow::anyhow!("{r}"))?;
            std::fs::create_dir_all(&out)?;
            let name = |suffix: &str| out.join(format!("{}.{suffix}", plan.instance));
            let mut written = Vec::new();
            if !e.cli.is_empty() {
                std::fs::write(name("bmv2.txt"), &e.cli)?;
                written.push(name("bmv2.txt"));
            }
            let rt = name(&format!("{}.p4runtime.json", target));
            std::fs::write(&rt, &e.p4runtime_json)?;
            written.push(rt);
            if let Some(py) = &e.bfrt_py {
                std::fs::write(name("tofino_bfrt.py"), py)?;
                written.push(name("tofino_bfrt.py"));
            }
            for w in written {
                println!("wrote {}", w.display());
            }
            Ok(())
        }
        Cmd::P4 {
            cmd:
                P4Cmd::Stats {
                    target,
                    config,
                    thrift_port,
                    json,
                },
        } => {
            use dataplane_p4 as p4;
            use dataplane_p4::stats as p4stats;
            let t: p4::Target = target
                .parse()
                .map_err(|e: String| anyhow::anyhow!("--target: {e}"))?;
            if t != p4::Target::Bmv2 {
                anyhow::bail!("--target {target}: counters are read from bmv2 only; on Tofino read them with bfrt_python (e.g. bfrt.dataplane.pipe.DpIngress.rx_tc_count.dump(from_hw=True))");
            }
            let plan = plan_of(&config)?;
            let c = p4stats::read_bmv2(thrift_port, &plan)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&c)?);
            } else {
                print!("{}", p4stats::render(&c));
            }
            Ok(())
        }
        Cmd::Config {
            cmd: ConfigCmd::Check { config, resolve },
        } => {
            let plan = plan_of(&config)?;
            if resolve {
                dataplane::resolve_ports(&plan)?;
            }
            println!(
                "{}: valid, instance {:?}, {} port(s)",
                config.display(),
                plan.instance,
                plan.ports.len()
            );
            for (i, p) in plan.ports.iter().enumerate() {
                let c = &p.config;
                let lossless: Vec<String> = (0..8)
                    .filter(|i| c.pfc_enable & (1 << i) != 0)
                    .map(|i| i.to_string())
                    .collect();
                let head = plan
                    .buffer
                    .as_ref()
                    .and_then(|b| b.headroom.get(i))
                    .map(|(h, how)| format!(" headroom xoff {} xon {} ({how})", h.xoff, h.xon))
                    .unwrap_or_default();
                println!(
                    "  {:<16} {:>7} Mb/s trust {:<5} lossless [{}] cnp_tc {} default_tc {} malformed {}{head}",
                    p.name,
                    c.speed_mbps,
                    if c.trust == 0 { "dscp" } else { "dot1p" },
                    lossless.join(","),
                    c.cnp_tc,
                    c.default_tc,
                    if c.malformed_action == 0 { "pass" } else { "drop" }
                );
            }
            if plan.forwarding() {
                println!(
                    "  routing: {} route(s), {} next hop(s), {} group(s) [{}], hash seed {}",
                    plan.routes.len(),
                    plan.nexthops.len(),
                    plan.groups.len(),
                    plan.groups
                        .iter()
                        .map(|g| format!(
                            "{} {} x{}",
                            g.name,
                            dataplane_config::MODES[g.mode as usize],
                            g.members.len()
                        ))
                        .collect::<Vec<_>>()
                        .join(", "),
                    plan.hash_seed
                );
            }
            if let Some(b) = &plan.buffer {
                println!(
                    "  buffer model: pool {} bytes, tick {} us",
                    b.pool_size,
                    b.tick_ns / 1000
                );
            }
            if let Some((w, poll)) = &plan.pfcwd {
                println!(
                    "  pfcwd: detection {} ms, restoration {} ms, poll {poll} ms, action {}",
                    w.detection_time_ms,
                    w.restoration_time_ms,
                    ["drop", "forward", "alert"][usize::from(w.action.min(2))]
                );
            }
            Ok(())
        }
    }
}

/// `dataplane watch`: clears the terminal and prints rates and the tables.
fn watch(instance: &str, interval: f64) -> Result<()> {
    let period = Duration::from_secs_f64(interval.clamp(0.1, 3600.0));
    let mut prev: Option<(std::time::Instant, dataplane_user::stats::Snapshot)> = None;
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

/// Serves GET /metrics (Prometheus text) from the pinned maps.
async fn serve_metrics(listener: tokio::net::TcpListener, instance: String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    loop {
        let Ok((mut sock, _)) = listener.accept().await else {
            continue;
        };
        let instance = instance.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 2048];
            let n = match tokio::time::timeout(Duration::from_secs(5), sock.read(&mut buf)).await {
                Ok(Ok(n)) => n,
                _ => return,
            };
            let req = String::from_utf8_lossy(&buf[..n]);
            let path = req.split_whitespace().nth(1).unwrap_or("");
            let (status, ctype, body) =
                if req.starts_with("GET ") && (path == "/metrics" || path == "/") {
                    match snapshot(&instance) {
                        Ok(s) => (
                            "200 OK",
                            "text/plain; version=0.0.4",
                            dataplane_user::metrics::render(&s),
                        ),
                        Err(e) => ("503 Service Unavailable", "text/plain", format!("{e:#}\n")),
                    }
                } else {
                    ("404 Not Found", "text/plain", "GET /metrics\n".to_string())
                };
            let resp = format!("HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
            let _ = sock.write_all(resp.as_bytes()).await;
        });
    }
}

/// Prints a line; a closed stdout (the reader went away) is not an error
/// for a long-running controller.
fn say(line: &str) {
    dataplane_user::log::info(line);
}

/// Applies a changed config to a running data plane, or says why not.
fn reload(
    running: &mut dataplane::Running,
    current: &Plan,
    path: &std::path::Path,
) -> Result<(Plan, usize)> {
    let new = plan_of(path)?;
    if new.instance != current.instance {
        anyhow::bail!(
            "switch.name changed ({:?} -> {:?}): start a controller for the new instance instead",
            current.instance,
            new.instance
        );
    }
    let names = |p: &Plan| p.ports.iter().map(|x| x.name.clone()).collect::<Vec<_>>();
    if names(&new) != names(current) {
        anyhow::bail!(
            "the ports changed ({:?} -> {:?}): restart `up` to attach or detach ports",
            names(current),
            names(&new)
        );
    }
    if new.forwarding() != current.forwarding()
        || new.buffer.is_some() != current.buffer.is_some()
        || new.pfcwd.is_some() != current.pfcwd.is_some()
    {
        anyhow::bail!("routing, [buffer] or [pfcwd] was added or removed: restart `up` for that");
    }
    let resolved = dataplane::resolve_ports(&new)?;
    let changed = dataplane::write_tables(&mut running.bpf, &new, &resolved)?;
    Ok((new, changed))
}

fn up(
    mut plan: Plan,
    mut config_path: PathBuf,
    stats_interval: Option<u64>,
    metrics: String,
) -> Result<()> {
    let _lock = sys::InstanceLock::acquire(&plan.instance)?;
    // bind the metrics port first: a port in use is refused before anything
    // is attached
    let metrics_listener = if metrics == "off" {
        None
    } else {
        let l = std::net::TcpListener::bind(&metrics)
            .with_context(|| format!("--metrics {metrics}: cannot listen (in use?)"))?;
        l.set_nonblocking(true)?;
        Some(l)
    };
    let mut running = dataplane::Running::start(&plan)?;
    // link changes: the kernel tells us on NETLINK_ROUTE / RTMGRP_LINK
    let links = dataplane_user::links::LinkWatch::open().context("netlink link watch")?;
    // the buffer model: its timer, and the PFC frames it asks for
    let _ticker = match &plan.buffer {
        Some(b) => {
            for (p, (h, how)) in plan.ports.iter().zip(&b.headroom) {
                say(&format!(
                    "buffer {}: headroom xoff {} xon {} bytes ({how})",
                    p.name, h.xoff, h.xon
                ));
            }
            Some(dataplane_user::lossless_ctl::Ticker::start(
                &running.bpf,
                Duration::from_nanos(b.tick_ns),
            )?)
        }
        None => None,
    };
    let emitter = dataplane_user::lossless_ctl::Emitter::open(&plan, &running.ports)?;
    let mut watchdog = dataplane_user::watchdog::Watchdog::new(&plan);
    if let Some((c, poll)) = &plan.pfcwd {
        say(&format!(
            "pfcwd: on, detection {} ms, restoration {} ms, poll {poll} ms, action {}",
            c.detection_time_ms,
            c.restoration_time_ms,
            ["drop", "forward", "alert"][usize::from(c.action.min(2))]
        ));
    }
    let ring: aya::maps::RingBuf<aya::maps::MapData> = aya::maps::RingBuf::try_from(
        running
            .bpf
            .take_map(names::map::PFC_EVENTS)
            .context("PFC_EVENTS map")?,
    )?;
    let late_ns = plan
        .buffer
        .as_ref()
        .map(|_| plan.buffer_response_ns)
        .unwrap_or(0);
    let emitter_thread =
        dataplane_user::lossless_ctl::EmitterThread::start(emitter, ring, late_ns)?;
    if running.adopted {
        say(&format!(
            "adopted the running data plane of instance {} (maps and their state kept)",
            plan.instance
        ));
    }
    for (name, mode) in &running.attached {
        say(&format!("attached {} to {name} ({mode})", running.program));
    }
    say(&format!(
        "ready: instance {} pinned at {}",
        plan.instance,
        running.pin_dir.display()
    ));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("tokio runtime")?;
    rt.block_on(async {
        if let Some(l) = metrics_listener {
            let listener = tokio::net::TcpListener::from_std(l)?;
            say(&format!("metrics: http://{}/metrics", listener.local_addr()?));
            let instance = plan.instance.clone();
            tokio::spawn(serve_metrics(listener, instance));
        }
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        let mut hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
        let period = Duration::from_secs(stats_interval.unwrap_or(0).max(1));
        let mut tick = tokio::time::interval(period);
        tick.tick().await;
        // SAFETY: both values own their fds for as long as the AsyncFd lives.
        let links = unsafe { tokio::io::unix::AsyncFd::register(links) }.map_err(|e| anyhow::anyhow!("netlink watch: {e}"))?;

        // a slow re-check as well, in case a notification was missed
        let mut recheck = tokio::time::interval(Duration::from_secs(1));
        let mut wd_tick = tokio::time::interval(Duration::from_millis(plan.pfcwd.map(|(_, p)| p).unwrap_or(1000)));
        let mut port_up: Vec<bool> = plan.ports.iter().map(|p| dataplane_user::groups::link_up(&p.name)).collect();
        loop {
            let mut changed = false;
            tokio::select! {
                _ = tokio::signal::ctrl_c() => break,
                _ = term.recv() => break,
                _ = hup.recv() => {
                    // `dataplane reload -c FILE` leaves FILE's path; a bare
                    // SIGHUP re-reads the file we run
                    let req = sys::reload_request(&plan.instance);
                    let path = std::fs::read_to_string(&req).map(PathBuf::from).unwrap_or_else(|_| config_path.clone());
                    let _ = std::fs::remove_file(&req);
                    match reload(&mut running, &plan, &path) {
                        Ok((new, changed)) => {
                            say(&format!(
                                "reload: applied {}: {changed} entries changed ({} route(s), {} group(s))",
                                path.display(),
                                new.routes.len(),
                                new.groups.len()
                            ));
                            plan = new;
                            config_path = path;
                        }
                        Err(e) => say(&format!("reload: refused, nothing changed: {e:#}")),
                    }
                }
                r = links.readable() => {
                    let mut guard = r?;
                    guard.get_inner().drain();
                    guard.clear_ready();
                    changed = true;
                }
                _ = recheck.tick() => changed = true,
                _ = wd_tick.tick(), if watchdog.is_some() => {
                    if let Some(w) = watchdog.as_mut() {
                        match w.poll(&mut running.bpf, &plan, dataplane_user::sys::monotonic_ns()) {
                            Ok(lines) => lines.iter().for_each(|l| say(l)),
                            Err(e) => dataplane_user::log::error(&format!("pfcwd: {e:#}")),
                        }
                    }
                }
                _ = tick.tick(), if stats_interval.is_some() => {
                    match snapshot(&plan.instance) {
                        Ok(s) => say(&s.render()),
                        Err(e) => dataplane_user::log::error(&format!("stats: {e:#}")),
                    }
                }
            }
            if changed && plan.forwarding() {
                let now: Vec<bool> = plan.ports.iter().map(|p| dataplane_user::groups::link_up(&p.name)).collect();
                if now != port_up {
                    for (i, (a, b)) in port_up.iter().zip(&now).enumerate() {
                        if a != b {
                            say(&format!("link {} {}", plan.ports[i].name, if *b { "up: its next hops rejoin their groups" } else { "down: its next hops leave their groups" }));
                        }
                    }
                    match dataplane_user::groups::update_groups(&mut running.bpf, &plan, &|i| now[i]) {
                        Ok(_) => port_up = now,
                        Err(e) => dataplane_user::log::error(&format!("updating groups: {e:#}")),
                    }
                }
            }
        }
        anyhow::Ok(())
    })?;
    if let Some(emitter) = emitter_thread.stop() {
        if let (Some(p50), Some(p99), Some(max)) = (
            dataplane_user::lossless_ctl::percentile(&emitter.latencies_ns, 50.0),
            dataplane_user::lossless_ctl::percentile(&emitter.latencies_ns, 99.0),
            emitter.latencies_ns.iter().copied().max(),
        ) {
            say(&format!(
                "pfc: {} frames sent ({} failed, {} later than the headroom's response time), decision-to-wire latency p50 {:.1} us, p99 {:.1} us, max {:.1} us",
                emitter.sent,
                emitter.failed,
                emitter.late,
                p50 as f64 / 1000.0,
                p99 as f64 / 1000.0,
                max as f64 / 1000.0
            ));
        }
    }
    drop(running);
    say(&format!(
        "controller stopped; instance {} keeps forwarding (`dataplane down --instance {}` detaches it)",
        plan.instance, plan.instance
    ));
    Ok(())
}
