//! `dataplane-routebench`: routes from the kernel into the data plane.
//!
//! - `routes.sync_per_s`: a switch namespace holds `--routes` IPv4 kernel
//!   routes (half over a two-path multipath, half to one next hop, /32s in
//!   198.18.0.0/15); the controller starts and dumps them into the data
//!   plane; the figure is routes / the time its first sync took (netlink
//!   dump, decode, mapping, map writes), as the controller logs it.
//! - `routes.controller_rss_mb`: the controller's resident memory with them,
//!   against `routes.controller_rss_mb_empty` (the same switch, no routes).
//! - `routes.local_repair_us` and `routes.bgp_converge_ms` (with FRR; skipped
//!   saying so without it): on the 2-spine 2-leaf BGP fabric, a leaf's
//!   uplink is pulled. Local repair runs from the kernel telling user space
//!   the link is down (the link notification the controller listens to,
//!   seen by the bench's own listener) until the data plane's group has the
//!   member down (read from the pinned maps); `routes.local_repair_from_pull_us`
//!   runs from the pull itself (the SIOCSIFFLAGS call), kernel time
//!   included, and `routes.link_notify_us` from the pull to the
//!   notification. BGP convergence is the time until the data plane routes
//!   the other leaf's hosts over the remaining uplink only. Medians of
//!   `--repeat` pulls.

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Parser;
use dataplane_common::route::{NextHop, ROUTE_GROUP, ROUTE_NEXTHOP};
use dataplane_user::links::LinkWatch;
use dataplane_user::routing::kernel::Prefix;
use dataplane_user::routing::writer::MapWriter;
use dataplane_user::tables::groups::link_up;
use testbed::bench::{machine, merge_results, Record};
use testbed::controller::Controller;
use testbed::fabric::Fabric;
use testbed::netns::Netns;
use testbed::topo::{ipv4_str, Routing, Shape, Topology};

#[derive(Parser, Debug)]
#[command(
    about = "Kernel routes into the data plane: sync rate, memory, local repair, BGP convergence"
)]
struct Args {
    #[arg(long, default_value = "target/release/dataplane")]
    dataplane: PathBuf,
    #[arg(long, default_value = "target/bench/results.json")]
    out: PathBuf,
    /// Kernel routes to sync.
    #[arg(long, default_value_t = 100_000)]
    routes: u32,
    /// Uplink pulls on the BGP fabric.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
}

fn main() {
    testbed::fabric::run_main(real_main)
}

fn real_main() -> Result<()> {
    let a = Args::parse();
    testbed::fabric::require_root()?;
    let m = machine();
    let mut recs = Vec::new();
    let (rate, n, ms, rss, rss0) = sync_rate(&a.dataplane, a.routes)?;
    println!("routes.sync_per_s: {rate:.0} ({n} routes in {ms:.1} ms); controller RSS {rss:.1} MB with them, {rss0:.1} MB without");
    recs.push(Record {
        figure: "routes.sync_per_s".into(),
        value: rate,
        unit: "routes/s".into(),
        baseline: None,
        ratio: None,
        machine: m.clone(),
        note: Some(format!("{n} kernel routes dumped into the data plane in {ms:.1} ms (first sync: netlink dump, decode, mapping, map writes); target >= 50000")),
    });
    recs.push(Record::against(
        "routes.controller_rss_mb".into(),
        rss,
        "MB",
        ("routes.controller_rss_mb_empty", rss0),
        &m,
        format!("controller VmRSS with {n} learned routes"),
    ));
    recs.push(Record {
        figure: "routes.controller_rss_mb_empty".into(),
        value: rss0,
        unit: "MB".into(),
        baseline: None,
        ratio: None,
        machine: m.clone(),
        note: Some("controller VmRSS, same switch, no learned route".into()),
    });
    match testbed::frr::missing() {
        Some(why) => println!("routes.local_repair_us, routes.bgp_converge_ms: SKIPPED ({why})"),
        None => {
            let f = failover(&a.dataplane, a.repeat)?;
            if NOT_REALTIME.load(Ordering::Relaxed) {
                println!("warning: the watchers could not run real-time (sched_setscheduler refused): a late listener can shorten routes.local_repair_us");
            }
            println!(
                "routes.local_repair_us: {:.0} (median of {}; from the pull: {:.0}, of which the kernel's notification {:.0}); routes.bgp_converge_ms: {:.0}",
                f.repair, a.repeat, f.from_pull, f.notify, f.converge
            );
            let us = |figure: &str, value: f64, note: String| Record {
                figure: figure.into(),
                value,
                unit: "us".into(),
                baseline: None,
                ratio: None,
                machine: m.clone(),
                note: Some(note),
            };
            recs.push(us(
                "routes.local_repair_us",
                f.repair,
                format!(
                    "from the kernel's link notification (RTMGRP_LINK, as the controller gets it; seen by the bench's own listener, {}) that a leaf's uplink is down to its member down in the data plane's group (pinned maps polled every 50 us), median of {} pulls{}; target <= 1000",
                    if NOT_REALTIME.load(Ordering::Relaxed) {
                        "NOT real-time: sched_setscheduler was refused, so a late listener can shorten the figure"
                    } else {
                        "a real-time thread"
                    },
                    a.repeat - f.late_listener,
                    if f.late_listener > 0 {
                        format!(" ({} left out: the group was seen repaired before the listener saw the notification)", f.late_listener)
                    } else {
                        String::new()
                    }
                ),
            ));
            recs.push(us(
                "routes.local_repair_from_pull_us",
                f.from_pull,
                format!("from the SIOCSIFFLAGS that takes the uplink down to its member down in the group (on a veth the ioctl itself returns after a few ms, the kernel's synchronisation), median of {}", a.repeat),
            ));
            recs.push(us(
                "routes.link_notify_us",
                f.notify,
                format!("from that SIOCSIFFLAGS to the link notification reaching user space (kernel time, before the controller can know), median of {}", a.repeat),
            ));
            let converge = f.converge;
            recs.push(Record {
                figure: "routes.bgp_converge_ms".into(),
                value: converge,
                unit: "ms".into(),
                baseline: None,
                ratio: None,
                machine: m,
                note: Some("uplink pulled to the data plane routing the other leaf's hosts over the remaining uplink only (FRR withdraw, kernel FIB, route sync)".into()),
            });
        }
    }
    merge_results(&a.out, &recs)?;
    println!("figures: {}", a.out.display());
    Ok(())
}

fn rss_mb(pid: u32) -> Result<f64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kb: f64 = s
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .context("VmRSS")?;
    Ok(kb / 1024.0)
}

const CONFIG: &str = "[switch]\nname = \"NAME\"\n\n[[port]]\nname = \"p0\"\n\n[[port]]\nname = \"p1\"\n\n[routing]\nsource = \"kernel\"\nmax_routes_v4 = 262144\n";

/// (routes/s, routes, ms, RSS MB with them, RSS MB without).
fn sync_rate(bin: &Path, n: u32) -> Result<(f64, u32, f64, f64, f64)> {
    if n > 130_000 {
        bail!("--routes: at most 130000 (the /32s of 198.18.0.0/15 past the links)");
    }
    let ns = Netns::create("rbsync")?;
    for p in ["p0", "p1"] {
        ns.ip(&[
            "link",
            "add",
            p,
            "type",
            "veth",
            "peer",
            "name",
            &format!("{p}x"),
        ])?;
        ns.ip(&["link", "set", p, "up"])?;
        ns.ip(&["link", "set", &format!("{p}x"), "up"])?;
    }
    ns.ip(&["addr", "add", "198.18.0.0/31", "dev", "p0"])?;
    ns.ip(&["addr", "add", "198.18.0.2/31", "dev", "p1"])?;
    ns.ip(&[
        "neigh",
        "add",
        "198.18.0.1",
        "lladdr",
        "02:00:00:00:00:01",
        "dev",
        "p0",
        "nud",
        "permanent",
    ])?;
    ns.ip(&[
        "neigh",
        "add",
        "198.18.0.3",
        "lladdr",
        "02:00:00:00:00:02",
        "dev",
        "p1",
        "nud",
        "permanent",
    ])?;
    let instance = format!("rbsync-{}", std::process::id());
    let text = CONFIG.replace("NAME", &instance);
    // without routes first: the controller's own memory
    let rss0 = {
        let c = Controller::start(bin, &ns, &instance, &text, "rbsync")?;
        std::thread::sleep(Duration::from_millis(2500));
        let r = rss_mb(c.pid())?;
        c.stop("rbsync");
        down(bin, &ns, &instance);
        r
    };
    let batch = std::env::temp_dir().join(format!("rbsync-{}.batch", std::process::id()));
    let mut b = String::with_capacity(n as usize * 80);
    for i in 0..n {
        let a = u32::from_be_bytes([198, 18, 0, 0]) + 1024 + i;
        let d = ipv4_str(a.to_be_bytes());
        if i % 2 == 0 {
            b.push_str(&format!("route add {d}/32 proto bgp nexthop via 198.18.0.1 dev p0 nexthop via 198.18.0.3 dev p1\n"));
        } else {
            b.push_str(&format!(
                "route add {d}/32 proto bgp via 198.18.0.1 dev p0\n"
            ));
        }
    }
    std::fs::write(&batch, b)?;
    let t = Instant::now();
    ns.ip(&["-batch", &batch.display().to_string()])?;
    let _ = std::fs::remove_file(&batch);
    println!(
        "{n} kernel routes added in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let c = Controller::start(bin, &ns, &instance, &text, "rbsync")?;
    let line = c
        .history()
        .into_iter()
        .find(|l| l.contains("routing: kernel table"))
        .context("the controller did not log its first sync")?;
    // "... 100004 routes; wrote 100006 route(s), ... in 1234.5 ms (dump ...)"
    let ms: f64 = line
        .rsplit(" in ")
        .next()
        .and_then(|x| x.split(" ms").next())
        .and_then(|x| x.parse().ok())
        .with_context(|| format!("no time in {line:?}"))?;
    let written: u32 = line
        .split("wrote ")
        .nth(1)
        .and_then(|x| x.split(' ').next())
        .and_then(|x| x.parse().ok())
        .with_context(|| format!("no route count in {line:?}"))?;
    if written < n {
        bail!("the first sync wrote {written} routes, expected at least {n}: {line}");
    }
    println!("{line}");
    // the table's size is the config's
    let info = aya::maps::MapData::from_pin(
        dataplane_user::sys::pin_dir(&instance).join(dataplane_common::names::map::ROUTES_V4),
    )?
    .info()?;
    if info.max_entries() != 262_144 {
        bail!(
            "ROUTES_V4 holds {} entries, the config asked for 262144",
            info.max_entries()
        );
    }
    // after the first tick's listing (the controller's steady state)
    std::thread::sleep(Duration::from_millis(2500));
    let rss = rss_mb(c.pid())?;
    c.stop("rbsync");
    down(bin, &ns, &instance);
    Ok((f64::from(written) / (ms / 1e3), written, ms, rss, rss0))
}

fn down(bin: &Path, ns: &Netns, instance: &str) {
    let _ = std::process::Command::new(bin)
        .args(["--netns", &ns.name, "down", "--instance", instance])
        .output();
}

/// The (egress port id, live) of every next hop leaf0's data plane has
/// for `host` (a group's members, or the one next hop).
/// When the data plane first shows port `down`'s member of the group
/// routing `host` as not live: the group's entry is read alone (one map
/// lookup every 50 us from a real-time thread, light enough not to slow
/// what it watches); a group gone or no longer holding the port falls back
/// to the whole route. `watched` ([`watched_group`]) is read before the
/// pull, the group from `ready` on (the pull waits for it). At most 30 s.
fn member_down(
    w: &MapWriter,
    host: &Prefix,
    down: u16,
    watched: &(u16, Vec<(u16, NextHop)>),
    ready: &Barrier,
) -> Result<Instant> {
    let (group, nhs) = watched;
    let on_down = |id: u16| nhs.iter().any(|(i, n)| *i == id && n.port_id == down);
    let _rt = Realtime::enter();
    ready.wait();
    let start = Instant::now();
    loop {
        let repaired = match w.group(*group) {
            Some(g) => g.members[..usize::from(g.n_members)]
                .iter()
                .all(|m| !on_down(m.id) || m.live == 0),
            None => route_members(w, host).is_some_and(|m| {
                !m.is_empty() && m.iter().all(|(p, live)| *p != down || *live == 0)
            }),
        };
        if repaired {
            return Ok(Instant::now());
        }
        if start.elapsed() > Duration::from_secs(30) {
            bail!("port {down}'s member still live after 30 s");
        }
        std::thread::sleep(Duration::from_micros(50));
    }
}

/// The group routing `host` and every next hop, as loaded before a pull.
fn watched_group(w: &MapWriter, host: &Prefix) -> Result<(u16, Vec<(u16, NextHop)>)> {
    let (_, e) = w
        .loaded_routes()
        .into_iter()
        .find(|(p, _)| p == host)
        .context("the host's route")?;
    if e.kind != ROUTE_GROUP {
        bail!("the host's route is not over a group: {e:?}");
    }
    Ok((e.id, w.loaded_nexthops()))
}

fn route_members(w: &MapWriter, host: &Prefix) -> Option<Vec<(u16, u8)>> {
    let (_, e) = w.loaded_routes().into_iter().find(|(p, _)| p == host)?;
    let nhs = w.loaded_nexthops();
    let port = |id: u16| nhs.iter().find(|(i, _)| *i == id).map(|(_, n)| n.port_id);
    match e.kind {
        ROUTE_NEXTHOP => Some(vec![(port(e.id)?, 1)]),
        ROUTE_GROUP => {
            let (_, g) = w.loaded_groups().into_iter().find(|(i, _)| *i == e.id)?;
            g.members[..g.n_members as usize]
                .iter()
                .map(|m| Some((port(m.id)?, m.live)))
                .collect()
        }
        _ => None,
    }
}

/// Sets interface `name` of `ns` up or down (SIOCSIFFLAGS, in this
/// process: no command's start-up in the measurement); returns the time
/// just before the call.
fn set_link(ns: &Netns, name: &str, up: bool) -> Result<Instant> {
    let _in = ns.enter()?;
    // SAFETY: zeroed ifreq with the name copied in; ioctls on our socket.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0);
        if fd < 0 {
            bail!("socket: {}", std::io::Error::last_os_error());
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        for (d, s) in req.ifr_name.iter_mut().zip(name.as_bytes()) {
            *d = *s as libc::c_char;
        }
        if libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut req) != 0 {
            libc::close(fd);
            bail!("SIOCGIFFLAGS {name}: {}", std::io::Error::last_os_error());
        }
        let f = req.ifr_ifru.ifru_flags;
        req.ifr_ifru.ifru_flags = if up {
            f | libc::IFF_UP as i16
        } else {
            f & !(libc::IFF_UP as i16)
        };
        let t0 = Instant::now();
        let rc = libc::ioctl(fd, libc::SIOCSIFFLAGS, &req);
        libc::close(fd);
        if rc != 0 {
            bail!("SIOCSIFFLAGS {name}: {}", std::io::Error::last_os_error());
        }
        Ok(t0)
    }
}

/// When leaf0's kernel first tells user space that `port` is down: a link
/// notification on `watch` (subscribed before the pull) after which the
/// port reads down, both as the controller sees them (`LinkWatch`,
/// `link_up`). The thread runs real-time so its own wake-up does not lag
/// the controller's and shorten the figure. At most 30 s.
fn link_down_notified(
    watch: &LinkWatch,
    ns: &Netns,
    port: &str,
    ready: &Barrier,
) -> Result<Instant> {
    let entered = ns.enter();
    let _rt = Realtime::enter();
    ready.wait();
    let _in = entered?;
    let start = Instant::now();
    let seen = loop {
        let mut fd = libc::pollfd {
            fd: watch.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd we own.
        let n = unsafe { libc::poll(&mut fd, 1, 100) };
        let at = Instant::now();
        if n > 0 {
            watch.drain();
            if !link_up(port) {
                break at;
            }
        }
        if start.elapsed() > Duration::from_secs(30) {
            bail!("no link notification with {port} down within 30 s");
        }
    };
    Ok(seen)
}

/// This thread runs real-time (SCHED_FIFO) while the value lives, when
/// allowed: a watcher that mostly sleeps or waits then wakes on time even
/// with every CPU busy, so its own lateness does not enter a figure. A
/// refusal is remembered ([`NOT_REALTIME`]) and said with the figures.
struct Realtime(bool);

/// Some watcher could not run real-time.
static NOT_REALTIME: AtomicBool = AtomicBool::new(false);

impl Realtime {
    fn enter() -> Realtime {
        let param = libc::sched_param { sched_priority: 10 };
        // SAFETY: sets this thread's own policy; failure leaves it normal.
        let rt = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } == 0;
        if !rt {
            NOT_REALTIME.store(true, Ordering::Relaxed);
        }
        Realtime(rt)
    }
}

impl Drop for Realtime {
    fn drop(&mut self) {
        if self.0 {
            let param = libc::sched_param { sched_priority: 0 };
            // SAFETY: as in `enter`.
            unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) };
        }
    }
}

/// The controller's own time for the groups it rewrote at a link change
/// (the last of its log lines `link change: N group(s) rewritten at once
/// (local repair, T us)` with N > 0), as text; `?` without one.
fn controller_repair_us(log: &[String]) -> String {
    log.iter()
        .rev()
        .filter_map(|l| l.split("link change: ").nth(1))
        .filter(|l| !l.starts_with("0 "))
        .find_map(|l| {
            Some(
                l.split("(local repair, ")
                    .nth(1)?
                    .split(' ')
                    .next()?
                    .to_string(),
            )
        })
        .unwrap_or_else(|| "?".into())
}

/// Medians over the pulls, in us (BGP convergence in ms).
struct Failover {
    /// Link notification to the member down in the data plane, over the
    /// pulls whose listener saw the notification first.
    repair: f64,
    /// Pulls left out of `repair`: the group was seen repaired before the
    /// listener saw the notification (the listener woke late).
    late_listener: usize,
    /// The pull (SIOCSIFFLAGS) to the member down in the data plane.
    from_pull: f64,
    /// The pull to the link notification.
    notify: f64,
    converge: f64,
}

/// Local repair and BGP convergence over `repeat` pulls of leaf0's uplink.
fn failover(bin: &Path, repeat: usize) -> Result<Failover> {
    let topo = Topology {
        shape: Shape::LeafSpine {
            spines: 2,
            leaves: 2,
            hosts_per_leaf: 1,
        },
        routing: Routing::Bgp,
        lb_mode: "hash".into(),
        ..Topology::default()
    };
    let fabric = Fabric::build(topo, bin, "rb")?;
    testbed::convergence::wait_converged(&fabric, 2, Duration::from_secs(60))?;
    let leaf0 = fabric
        .switches
        .iter()
        .position(|s| s.node.name == "leaf0")
        .context("leaf0")?;
    let sw = &fabric.switches[leaf0];
    let w = MapWriter::open(&dataplane_user::sys::pin_dir(&sw.instance))?;
    let id = |n: &str| {
        sw.ports
            .iter()
            .find(|p| p.0 == n)
            .map(|p| p.1)
            .context("port")
    };
    let (s0, s1) = (id("s0")?, id("s1")?);
    let h1 = fabric.topo.hosts()[1].clone();
    let host = Prefix::new(std::net::IpAddr::from(h1.ipv4), 32);
    let ns = fabric.switch_ns(leaf0);
    let (mut repairs, mut from_pull, mut notify, mut converges) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let mut late_listener = 0;
    for round in 0..repeat {
        testbed::fabric::check_interrupt()?;
        let links = {
            let _in = ns.enter()?;
            LinkWatch::open()?
        };
        // the notification and the member's fall are watched from threads
        // that run while the ioctl does: SIOCSIFFLAGS on a veth returns
        // only after a few ms (the kernel's synchronisation), by when the
        // controller has long been told and written the group; both are
        // ready before the pull
        let watched = watched_group(&w, &host)?;
        let ready = Barrier::new(3);
        let (t0, ioctl_returned, notified, repaired) =
            std::thread::scope(|s| -> Result<(Instant, Duration, Instant, Instant)> {
                let told = s.spawn(|| link_down_notified(&links, ns, "s0", &ready));
                let watch = s.spawn(|| member_down(&w, &host, s0, &watched, &ready));
                ready.wait();
                let t0 = set_link(ns, "s0", false)?;
                let back = t0.elapsed();
                let join = |h: std::thread::ScopedJoinHandle<'_, Result<Instant>>| {
                    h.join().map_err(|_| anyhow::anyhow!("watcher panicked"))?
                };
                Ok((t0, back, join(told)?, join(watch)?))
            })?;
        if repaired < notified {
            late_listener += 1;
            println!("pull {round}: the group was seen repaired before the listener saw the notification: left out of the local repair figure");
        }
        loop {
            let m = route_members(&w, &host).unwrap_or_default();
            if !m.is_empty() && m.iter().all(|(p, _)| *p == s1) {
                break;
            }
            if t0.elapsed() > Duration::from_secs(30) {
                bail!("round {round}: the data plane did not converge to s1 within 30 s: {m:?}");
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        let conv = t0.elapsed();
        let own = controller_repair_us(&fabric.drain_log(leaf0, "leaf0"));
        let rep = us(repaired.saturating_duration_since(notified));
        let pull = us(repaired.saturating_duration_since(t0));
        let told = us(notified.saturating_duration_since(t0));
        println!(
            "pull {round}: local repair {rep:.0} us after the link notification, {pull:.0} us after the pull (notification {told:.0} us after it; the ioctl itself returned after {:.0} us; the controller's own group writes {own} us), BGP convergence {:.0} ms",
            us(ioctl_returned),
            conv.as_secs_f64() * 1e3
        );
        if repaired >= notified {
            repairs.push(rep);
        }
        from_pull.push(pull);
        notify.push(told);
        converges.push(conv.as_secs_f64() * 1e3);
        set_link(ns, "s0", true)?;
        testbed::convergence::wait_converged(&fabric, 2, Duration::from_secs(60))?;
    }
    if repairs.is_empty() {
        bail!("in every pull the listener saw the link notification after the group was repaired: no local repair figure");
    }
    let med = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    Ok(Failover {
        repair: med(&mut repairs),
        late_listener,
        from_pull: med(&mut from_pull),
        notify: med(&mut notify),
        converge: med(&mut converges),
    })
}
