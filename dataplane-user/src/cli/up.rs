//! Running the controller: `up`, `upgrade` (take over from the running
//! one), `reload` (ask it to apply a changed file) and what it serves
//! while it runs (metrics).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use dataplane_common::names;
use dataplane_config::Plan;
use dataplane_user::{attach, lossless, ports, snapshot, sys, tables};

use super::args::{plan_of, Run};
use super::say;

/// `dataplane upgrade`: stops the running controller of the instance (its
/// data plane keeps forwarding), then runs `up` with this build.
pub fn upgrade(plan: Plan, run: Run) -> Result<()> {
    // a data plane of another layout is refused before the running
    // controller is stopped (it keeps running it)
    let pin_dir = sys::pin_dir(&plan.instance);
    if pin_dir.exists() {
        dataplane_user::object::check_pinned_layouts(&pin_dir)?;
    }
    if let Ok(pid) = sys::InstanceLock::holder(&plan.instance) {
        refuse_upgrading_a_service(pid)?;
        say(&format!(
            "upgrade: stopping controller {pid} of instance {} (its data plane keeps forwarding)",
            plan.instance
        ));
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
    up(plan, run)
}

/// A controller run by systemd is upgraded by systemd: stopped by
/// `upgrade`, its service would stay stopped (a clean exit is not
/// restarted) while this process, outside it, ran the instance.
fn refuse_upgrading_a_service(pid: i32) -> Result<()> {
    use dataplane_user::service::service_of_pid;
    // only our own units (dataplane@NAME.service): a controller some other
    // service started is left to the operator
    let Some(unit) = service_of_pid(pid).filter(|u| u.starts_with("dataplane")) else {
        return Ok(());
    };
    if service_of_pid(std::process::id() as i32).as_deref() == Some(unit.as_str()) {
        return Ok(());
    }
    anyhow::bail!(
        "controller {pid} runs as the systemd service {unit}: replace the binary it runs, then \
         `systemctl restart {unit}` (as hitless as `upgrade`: the new controller adopts the \
         pinned data plane); nothing was changed"
    )
}

/// `dataplane reload`: validates the file, then asks the running
/// controller (SIGHUP) to apply it.
pub fn request_reload(config: &Path) -> Result<()> {
    // validate here first: a bad file gets its errors at once and the
    // running controller is not even asked
    let plan = plan_of(config)?;
    let pid = sys::InstanceLock::holder(&plan.instance)?;
    // which file to apply: the controller reads it from here on SIGHUP
    let abs = std::fs::canonicalize(config)?;
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

/// Applies a changed config to a running data plane, or says why not.
fn reload(
    running: &mut attach::Running,
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
    let lossless = |p: &Plan| {
        p.ports
            .iter()
            .map(|x| x.config.pfc_enable)
            .collect::<Vec<_>>()
    };
    if new.pfcwd != current.pfcwd || (new.pfcwd.is_some() && lossless(&new) != lossless(current)) {
        anyhow::bail!(
            "[pfcwd] or a port's pfc_enable changed while the watchdog runs: restart `up` for that (the watchdog keeps the queues and times it started with)"
        );
    }
    if new.dcbx.is_some() != current.dcbx.is_some() {
        anyhow::bail!("[dcbx] was added, removed, enabled or disabled: restart `up` for that");
    }
    if new.routing != current.routing {
        anyhow::bail!("[routing] changed: restart `up` for that (the route sync keeps the policy it started with)");
    }
    let resolved = ports::resolve_ports(&new)?;
    let changed = tables::write_tables(&mut running.bpf, &new, &resolved)?;
    Ok((new, changed))
}

pub fn up(plan: Plan, run: Run) -> Result<()> {
    let Run {
        config: config_path,
        stats_interval,
        metrics,
        watermark_interval,
    } = run;
    let _lock = sys::InstanceLock::acquire(&plan.instance)?;
    // bind the metrics port first: a port in use is refused before anything
    // is attached
    let metrics_listener = bind_metrics(&metrics)?;
    // the kernel's optional features, probed before anything is loaded: a
    // configuration that forces a missing one is refused here, unchanged
    let port_names: Vec<String> = plan.ports.iter().map(|p| p.name.clone()).collect();
    let probes = dataplane_user::probe::kernel::run_with_ports(&port_names);
    say(probes
        .table(&dataplane_user::probe::kernel_release())
        .trim_end());
    let refused = dataplane_user::probe::decide::refusals(
        &dataplane_user::probe::decide::Wants::of(&plan),
        &probes,
    );
    if !refused.is_empty() {
        anyhow::bail!(
            "refused by the kernel feature probes; nothing was loaded or attached:\n  {}",
            refused.join("\n  ")
        );
    }
    let mut running = attach::Running::start(&plan)?;
    // link changes: the kernel tells us on NETLINK_ROUTE / RTMGRP_LINK
    let links = dataplane_user::links::LinkWatch::open().context("netlink link watch")?;
    let lossless = match Lossless::start(&plan, &mut running, &probes) {
        Ok(l) => l,
        // nothing half-applied: a data plane this `up` created goes away
        // again (an adopted one keeps running as it was)
        Err(e) if !running.adopted => {
            running.abandon();
            return Err(anyhow::anyhow!(
                "{e:#} (nothing was left attached or pinned)"
            ));
        }
        Err(e) => return Err(e),
    };
    let plan = match replan_for_fallback(&plan, &config_path, &lossless.path)? {
        Some(p) => {
            tables::write_tables(&mut running.bpf, &p, &running.ports)?;
            p
        }
        None => plan,
    };
    // [routing]: the kernel's routes, written before `ready`
    let routes = dataplane_user::routing::run::KernelRoutes::start(
        &plan,
        &running.ports,
        &running.pin_dir,
        &ports_up(&plan),
    )
    .context("routing: following the kernel's routes")?;
    // counts redirected frames the kernel fails to transmit while we run
    let _xmit_trace = match dataplane_user::telemetry::xmit::attach(&mut running.bpf) {
        Ok(t) => Some(t),
        Err(e) => {
            dataplane_user::log::warn(&format!(
                "transmit errors after a redirect are not counted (tx_xdp_xmit_err): {e:#}"
            ));
            None
        }
    };
    let egress_ok = check_egress_ports(&plan, &running, None);
    // [dcbx]: LLDP with the hosts on every port (its own thread)
    let macs: Vec<[u8; 6]> = running.ports.iter().map(|r| r.config.mac).collect();
    let dcbx = dataplane_user::dcbx::agent::Agent::start(&plan, &macs).context("dcbx")?;
    if let Some(d) = &plan.dcbx {
        say(&format!(
            "dcbx: LLDP with 802.1Qaz TLVs on {} port(s), every {} s (TTL {} s), willing {}",
            plan.ports.len(),
            d.tx_interval_s,
            d.ttl_s,
            d.willing
        ));
    }
    say_ready(&plan, &running);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("tokio runtime")?;
    let mut ctl = Controller {
        plan,
        config_path,
        running,
        watchdog: None,
        port_up: Vec::new(),
        routes,
        xmit_err: Vec::new(),
        egress_ok,
        watermark_interval,
        dcbx,
    };
    ctl.watchdog = lossless::watchdog::Watchdog::new(&ctl.plan);
    ctl.port_up = ports_up(&ctl.plan);
    rt.block_on(ctl.run(links, metrics_listener, stats_interval))?;
    if let Some(d) = ctl.dcbx.take() {
        d.stop();
    }
    lossless.stop();
    let instance = ctl.plan.instance.clone();
    drop(ctl);
    say(&format!(
        "controller stopped; instance {instance} keeps forwarding (`dataplane down --instance {instance}` detaches it)"
    ));
    Ok(())
}

/// With `pfc_tx = "auto"` falling back to the controller's sender and no
/// `response_us` given, the plan again with the headroom sized for that
/// path (the first assumed the data plane's).
fn replan_for_fallback(
    plan: &Plan,
    path: &Path,
    active: &lossless::pfc_path::PfcPath,
) -> Result<Option<Plan>> {
    let auto = plan
        .buffer
        .as_ref()
        .is_some_and(|b| b.pfc_tx == dataplane_config::PfcTx::Auto);
    if !auto || *active == lossless::pfc_path::PfcPath::DataPlane {
        return Ok(None);
    }
    let mut cfg = dataplane_config::Config::load(path)?;
    let Some(b) = cfg.buffer.as_mut() else {
        return Ok(None);
    };
    if b.response_us.is_some() {
        return Ok(None);
    }
    b.pfc_tx = "userspace".into();
    let p = cfg.validate(&path.display().to_string())?;
    say(&format!(
        "buffer: headroom re-sized for the controller's PFC path (response {} us)",
        p.buffer_response_ns / 1000
    ));
    Ok(Some(p))
}

/// Binds the metrics endpoint (`off`: none).
fn bind_metrics(metrics: &str) -> Result<Option<std::net::TcpListener>> {
    if metrics == "off" {
        return Ok(None);
    }
    let l = std::net::TcpListener::bind(metrics)
        .with_context(|| format!("--metrics {metrics}: cannot listen (in use?)"))?;
    l.set_nonblocking(true)?;
    Ok(Some(l))
}

/// Warns for every port next hops send to that cannot take redirected
/// frames (its XDP features lack NDO_XMIT: a veth whose peer has neither an
/// XDP program nor GRO, a NIC without XDP transmit queues), at `up` and
/// then whenever that changes (`before`: the last check).
fn check_egress_ports(
    plan: &Plan,
    running: &attach::Running,
    before: Option<&Vec<Option<bool>>>,
) -> Vec<Option<bool>> {
    use dataplane_user::telemetry::xmit::takes_redirects;
    let now: Vec<Option<bool>> = running
        .ports
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let egress = plan.nexthops.iter().any(|n| n.port == i);
            if egress {
                takes_redirects(r.ifindex)
            } else {
                None
            }
        })
        .collect();
    for (i, ok) in now.iter().enumerate() {
        let was = before.and_then(|b| b.get(i).copied().flatten());
        if *ok == Some(false) && was != Some(false) {
            dataplane_user::log::warn(&format!(
                "egress check: {} cannot take redirected frames (its driver offers no XDP transmit now: \
                 a veth peer needs an XDP program or GRO on, a NIC XDP transmit queues); frames routed to it are lost \
                 and counted in tx_xdp_xmit_err",
                plan.ports[i].name
            ));
        } else if *ok == Some(true) && was == Some(false) {
            dataplane_user::log::info(&format!(
                "egress check: {} takes redirected frames again",
                plan.ports[i].name
            ));
        }
    }
    now
}

/// Says what was attached or adopted, then `ready:` (tests wait for it).
fn say_ready(plan: &Plan, running: &attach::Running) {
    if running.adopted {
        say(&format!(
            "adopted the running data plane of instance {} (maps and their state kept)",
            plan.instance
        ));
    }
    for (name, mode) in &running.attached {
        match running.native_refused.iter().find(|(n, _)| n == name) {
            Some((_, why)) => say(&format!(
                "attached {} to {name} ({mode}; xdp_mode = \"auto\": native XDP refused: {why})",
                running.program
            )),
            None => say(&format!("attached {} to {name} ({mode})", running.program)),
        }
    }
    if !running.non_atomic.is_empty() {
        let names: Vec<&str> = running.non_atomic.iter().map(|(n, _)| n.as_str()).collect();
        say(&format!(
            "non-atomic attach: {} port(s) re-attached after a failed program swap: {}",
            names.len(),
            names.join(", ")
        ));
    }
    say(&format!(
        "ready: instance {} pinned at {}",
        plan.instance,
        running.pin_dir.display()
    ));
}

/// Is each planned port's link up?
fn ports_up(plan: &Plan) -> Vec<bool> {
    plan.ports
        .iter()
        .map(|p| tables::groups::link_up(&p.name))
        .collect()
}

/// The lossless control threads: the buffer model's timer and the PFC
/// emitter.
struct Lossless {
    ticker: Option<lossless::buffer::Ticker>,
    emitter: lossless::emitter::EmitterThread,
    path: lossless::pfc_path::PfcPath,
}

impl Lossless {
    fn start(
        plan: &Plan,
        running: &mut attach::Running,
        probes: &dataplane_user::probe::Probes,
    ) -> Result<Lossless> {
        // the self-test in the mode the ports got (generic if any did)
        let mode = if running.attached.iter().any(|(_, m)| *m == "generic") {
            aya::programs::XdpMode::Skb
        } else {
            aya::programs::XdpMode::Driver
        };
        let (path, why) = lossless::pfc_path::select_explained(
            &mut running.bpf,
            plan,
            &running.ports,
            mode,
            probes,
        )?;
        say(&match why.is_empty() {
            true => path.describe(),
            false => format!("{}; {why}", path.describe()),
        });
        let timer_tx = match path {
            lossless::pfc_path::PfcPath::DataPlane => Some(lossless::pfc_path::TimerTx::open(
                &running.bpf,
                plan,
                &running.ports,
            )?),
            lossless::pfc_path::PfcPath::Userspace(_) => None,
        };
        let ticker = match &plan.buffer {
            Some(b) => {
                for (p, (h, how)) in plan.ports.iter().zip(&b.headroom) {
                    say(&format!(
                        "buffer {}: headroom xoff {} xon {} bytes ({how})",
                        p.name, h.xoff, h.xon
                    ));
                }
                Some(lossless::buffer::Ticker::start(
                    &running.bpf,
                    Duration::from_nanos(b.tick_ns),
                    timer_tx,
                )?)
            }
            None => None,
        };
        let emitter = lossless::emitter::Emitter::open(plan, &running.ports)?;
        if let Err(e) = lossless::watchdog::write_config(plan) {
            dataplane_user::log::warn(&format!(
                "pfcwd: {e:#} (`show pfcwd config` will not see it)"
            ));
        }
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
        let emitter = lossless::emitter::EmitterThread::start(emitter, ring, late_ns)?;
        Ok(Lossless {
            ticker,
            emitter,
            path,
        })
    }

    /// Stops the threads and reports each path's decision-to-wire latency.
    fn stop(self) {
        let timer = self.ticker.and_then(|t| t.stop());
        if let Some(emitter) = self.emitter.stop() {
            report(
                &emitter,
                &format!(
                    "{} frames sent by the data plane, {} by the controller's emitter",
                    emitter.dp_sent, emitter.sent
                ),
            );
        }
        if let Some(t) = timer {
            report(
                &t.emitter,
                &format!(
                    "timer path (XON / refresh with no packet arriving): {} frames sent by the timer thread",
                    t.emitter.sent
                ),
            );
        }
    }
}

/// One `pfc:` line: what was sent, failures, late frames, latency.
fn report(e: &lossless::emitter::Emitter, what: &str) {
    let pct = |p| lossless::emitter::percentile(&e.latencies_ns, p);
    if let (Some(p50), Some(p99), Some(max)) =
        (pct(50.0), pct(99.0), e.latencies_ns.iter().copied().max())
    {
        say(&format!(
            "pfc: {what} ({} failed, {} later than the headroom's response time), decision-to-wire latency p50 {:.1} us, p99 {:.1} us, max {:.1} us",
            e.failed,
            e.late,
            p50 as f64 / 1000.0,
            p99 as f64 / 1000.0,
            max as f64 / 1000.0
        ));
    }
}

/// The running controller's state between events.
struct Controller {
    plan: Plan,
    config_path: PathBuf,
    running: attach::Running,
    watchdog: Option<lossless::watchdog::Watchdog>,
    port_up: Vec<bool>,
    /// `[routing] source = "kernel"`: the route sync.
    routes: Option<dataplane_user::routing::run::KernelRoutes>,
    /// Each port's transmit errors after a redirect at the last check.
    xmit_err: Vec<Option<u64>>,
    /// Whether each port takes redirected frames, at the last check.
    egress_ok: Vec<Option<bool>>,
    /// Seconds of a periodic watermark window.
    watermark_interval: u64,
    /// The DCBX agent (`[dcbx]`).
    dcbx: Option<dataplane_user::dcbx::agent::Agent>,
}

/// A file descriptor owned elsewhere, for tokio's readiness.
struct Fd(std::os::fd::RawFd);

impl std::os::fd::AsRawFd for Fd {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.0
    }
}

impl Controller {
    /// The event loop: signals, link changes, watchdog polls, stats, until
    /// SIGINT / SIGTERM.
    async fn run(
        &mut self,
        links: dataplane_user::links::LinkWatch,
        metrics: Option<std::net::TcpListener>,
        stats_interval: Option<u64>,
    ) -> Result<()> {
        if let Some(l) = metrics {
            let listener = tokio::net::TcpListener::from_std(l)?;
            say(&format!(
                "metrics: http://{}/metrics",
                listener.local_addr()?
            ));
            tokio::spawn(serve_metrics(listener, self.plan.instance.clone()));
        }
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        let mut hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
        // a Type=notify service (dataplane@.service) counts as started from
        // here: attached, tables written, and SIGTERM / SIGHUP handled (a
        // reload right after the start must not kill the controller)
        sys::sd_notify("READY=1");
        let period = Duration::from_secs(stats_interval.unwrap_or(0).max(1));
        let mut tick = tokio::time::interval(period);
        tick.tick().await;
        // SAFETY: the value owns its fd for as long as the AsyncFd lives.
        let links = unsafe { tokio::io::unix::AsyncFd::register(links) }
            .map_err(|e| anyhow::anyhow!("netlink watch: {e}"))?;
        // a slow re-check as well, in case a notification was missed
        let mut recheck = tokio::time::interval(Duration::from_secs(1));
        let route_events = match &self.routes {
            // SAFETY: the socket lives in `self.routes`, which outlives
            // this loop and the registration.
            Some(r) => Some(
                unsafe {
                    tokio::io::unix::AsyncFd::register(Fd(std::os::fd::AsRawFd::as_raw_fd(
                        &r.events,
                    )))
                }
                .map_err(|e| anyhow::anyhow!("netlink route events: {e}"))?,
            ),
            None => None,
        };
        let wd_poll = self.plan.pfcwd.map(|(_, p)| p).unwrap_or(1000);
        let mut wd_tick = tokio::time::interval(Duration::from_millis(wd_poll));
        let mut wm_tick = tokio::time::interval(Duration::from_secs(self.watermark_interval));
        wm_tick.tick().await;
        loop {
            let mut changed = false;
            tokio::select! {
                // in this order when several are ready: a link change (local
                // repair) first, then the PFC watchdog, the other ticks
                // (rare), and route events last (a BGP churn keeps them
                // ready for seconds and must not hold the ticks back)
                biased;
                _ = tokio::signal::ctrl_c() => break,
                _ = term.recv() => break,
                _ = hup.recv() => self.on_reload_request(),
                r = links.readable() => {
                    let mut guard = r?;
                    guard.get_inner().drain();
                    guard.clear_ready();
                    changed = true;
                }
                _ = wd_tick.tick(), if self.watchdog.is_some() => self.poll_watchdog(),
                _ = recheck.tick() => {
                    changed = true;
                    if let Some(k) = self.routes.as_mut() {
                        k.tick();
                    }
                    self.check_pins();
                    self.check_egress_loss();
                }
                _ = tick.tick(), if stats_interval.is_some() => self.print_stats(),
                _ = wm_tick.tick(), if self.plan.buffer.is_some() => self.fold_watermarks(),
                r = async { route_events.as_ref().expect("guarded").readable().await }, if route_events.is_some() => {
                    let mut guard = r?;
                    if let Some(k) = self.routes.as_mut() {
                        k.on_events();
                    }
                    guard.clear_ready();
                }
            }
            if changed && self.plan.forwarding() {
                self.on_links_changed();
            }
        }
        Ok(())
    }

    /// Frames redirected to a port that its driver failed to transmit
    /// (the device's XDP transmit errors): said once per second while
    /// they grow, with the likely cause. The first check only records.
    fn check_egress_loss(&mut self) {
        let Ok(by_ifindex) =
            dataplane_user::telemetry::xmit::errors_by_ifindex(&self.running.pin_dir)
        else {
            return;
        };
        let now: Vec<Option<u64>> = self
            .running
            .ports
            .iter()
            .map(|r| Some(by_ifindex.get(&r.ifindex).copied().unwrap_or(0)))
            .collect();
        if self.xmit_err.len() == now.len() {
            for ((p, old), new) in self.plan.ports.iter().zip(&self.xmit_err).zip(&now) {
                if let (Some(o), Some(n)) = (old, new) {
                    if n > o {
                        let msg = format!(
                            "egress loss: {} frames redirected to {} were not transmitted by the kernel \
                             (tx_xdp_xmit_err {n}; a veth peer needs an XDP program or GRO on, a NIC XDP transmit queues)",
                            n - o,
                            p.name
                        );
                        dataplane_user::log::warn(&msg);
                    }
                }
            }
        }
        self.xmit_err = now;
        self.egress_ok = check_egress_ports(&self.plan, &self.running, Some(&self.egress_ok));
    }

    /// Pins removed under the running controller (bpffs cleaned, the
    /// directory deleted) are put back; the data plane never stopped (the
    /// programs and this process hold maps and links).
    fn check_pins(&mut self) {
        match self.running.repin() {
            Ok(r) if r.is_empty() => {}
            Ok(r) => {
                dataplane_user::log::warn(&format!(
                    "pins of instance {} were removed under the controller; restored {}",
                    self.plan.instance,
                    r.join(", ")
                ));
                say(&format!("pins: restored {} pin(s)", r.len()));
            }
            Err(e) => dataplane_user::log::error(&format!("restoring removed pins: {e:#}")),
        }
    }

    /// SIGHUP: `dataplane reload -c FILE` leaves FILE's path; a bare SIGHUP
    /// re-reads the file we run.
    fn on_reload_request(&mut self) {
        let req = sys::reload_request(&self.plan.instance);
        let path = std::fs::read_to_string(&req)
            .map(PathBuf::from)
            .unwrap_or_else(|_| self.config_path.clone());
        let _ = std::fs::remove_file(&req);
        match reload(&mut self.running, &self.plan, &path) {
            Ok((new, changed)) => {
                say(&format!(
                    "reload: applied {}: {changed} entries changed ({} route(s), {} group(s))",
                    path.display(),
                    new.routes.len(),
                    new.groups.len()
                ));
                if let Some(d) = &self.dcbx {
                    d.update(&new);
                }
                self.plan = new;
                self.config_path = path;
            }
            Err(e) => say(&format!("reload: refused, nothing changed: {e:#}")),
        }
    }

    fn poll_watchdog(&mut self) {
        if let Some(w) = self.watchdog.as_mut() {
            match w.poll(&mut self.running.bpf, &self.plan, sys::monotonic_ns()) {
                Ok(lines) => lines.iter().for_each(|l| say(l)),
                Err(e) => dataplane_user::log::error(&format!("pfcwd: {e:#}")),
            }
        }
    }

    /// The watermark interval ended: the data plane's marks are folded
    /// into the persistent and user windows, the periodic one restarts.
    fn fold_watermarks(&self) {
        use dataplane_user::telemetry::watermarks::{fold, Reset};
        if let Err(e) = fold(&self.plan.instance, Reset::Period) {
            dataplane_user::log::error(&format!("watermarks: {e:#}"));
        }
    }

    fn print_stats(&self) {
        match snapshot(&self.plan.instance) {
            Ok(s) => say(&s.render()),
            Err(e) => dataplane_user::log::error(&format!("stats: {e:#}")),
        }
    }

    /// A port went down or came back: its next hops leave or rejoin their
    /// groups (only its flows move).
    fn on_links_changed(&mut self) {
        let now = ports_up(&self.plan);
        if let Some(k) = self.routes.as_mut() {
            k.on_links(&now);
        }
        if now == self.port_up {
            return;
        }
        for (i, (a, b)) in self.port_up.iter().zip(&now).enumerate() {
            if a != b {
                say(&format!(
                    "link {} {}",
                    self.plan.ports[i].name,
                    if *b {
                        "up: its next hops rejoin their groups"
                    } else {
                        "down: its next hops leave their groups"
                    }
                ));
            }
        }
        match tables::groups::update_groups(&mut self.running.bpf, &self.plan, &|i| now[i]) {
            Ok(_) => self.port_up = now,
            Err(e) => dataplane_user::log::error(&format!("updating groups: {e:#}")),
        }
    }
}

/// Serves GET /metrics (Prometheus text) from the pinned maps, within the
/// server's bounds (`telemetry::serve`).
async fn serve_metrics(listener: tokio::net::TcpListener, instance: String) {
    use dataplane_user::telemetry::{metrics, serve};
    let stats = std::sync::Arc::new(serve::ServerStats::default());
    serve::serve(listener, serve::Limits::default(), stats, move || {
        snapshot(&instance).map(|s| {
            let mut text = metrics::render(&s);
            // [dcbx]: the agent's state, when it runs
            if let Ok(d) = dataplane_user::dcbx::state::State::load(&instance) {
                text.push_str(&dataplane_user::show::dcbx::metrics(&d));
            }
            text
        })
    })
    .await
}
