//! Whether a fabric's routing converged: each switch's kernel FIB (what
//! FRR installed) against its data plane's learned routes (`dataplane
//! routes`) and FRR's selected BGP prefixes, and the BGP sessions' summary.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::fabric::{check_interrupt, Fabric};
use crate::frr::Frr;
use crate::netns::Netns;
use crate::topo::SwitchKind;

/// A route's next hops as (gateway, interface), sorted.
pub type Hops = std::collections::BTreeSet<(String, String)>;

fn host_len(dst: &str) -> String {
    if dst == "default" {
        return "default".into();
    }
    if dst.contains('/') {
        return dst.into();
    }
    format!("{dst}/{}", if dst.contains(':') { 128 } else { 32 })
}

fn hop(v: &serde_json::Value) -> Option<(String, String)> {
    let gw = v["gateway"]
        .as_str()
        .or_else(|| v["via"]["host"].as_str())?;
    Some((gw.to_string(), v["dev"].as_str()?.to_string()))
}

/// The kernel FIB (main table, IPv4 and IPv6) of namespace `ns`: routes via
/// gateways out of `ports`, prefix -> next hops.
pub fn kernel_fib(
    ns: &Netns,
    ports: &[String],
) -> Result<std::collections::BTreeMap<String, Hops>> {
    let mut out = std::collections::BTreeMap::new();
    for fam in ["-4", "-6"] {
        let text = ns.exec(&["ip", "-j", fam, "route", "show", "table", "main"])?;
        let v: serde_json::Value =
            serde_json::from_str(&text).with_context(|| format!("ip -j route: {text}"))?;
        for r in v.as_array().into_iter().flatten() {
            let Some(dst) = r["dst"].as_str() else {
                continue;
            };
            let mut hops = Hops::new();
            match r["nexthops"].as_array() {
                Some(nh) => hops.extend(nh.iter().filter_map(hop)),
                None => hops.extend(hop(r)),
            }
            if hops.is_empty() || !hops.iter().all(|(_, d)| ports.contains(d)) {
                continue;
            }
            let dst = if dst == "default" {
                if fam == "-4" { "0.0.0.0/0" } else { "::/0" }.to_string()
            } else {
                host_len(dst)
            };
            out.insert(dst, hops);
        }
    }
    Ok(out)
}

/// The data plane's learned routes via next hops (`dataplane routes
/// --json`) from the kernel's routes: prefix -> next hops, and the listing
/// itself. (Host routes to resolved neighbours, source `connected` or
/// `neighbour`, are in the listing only: [`fib_difference`] checks them
/// against the neighbour table.)
pub fn dataplane_routes(
    bin: &Path,
    instance: &str,
) -> Result<(std::collections::BTreeMap<String, Hops>, serde_json::Value)> {
    let o = Command::new(bin)
        .args(["routes", "--instance", instance, "--json"])
        .output()?;
    if !o.status.success() {
        bail!(
            "dataplane routes --instance {instance}: {} (stderr: {:?}; stdout: {} bytes)",
            o.status,
            String::from_utf8_lossy(&o.stderr),
            o.stdout.len()
        );
    }
    let v: serde_json::Value = serde_json::from_slice(&o.stdout)?;
    let ports: Vec<String> = v["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| p.as_str().unwrap_or("").to_string())
        .collect();
    let mut out = std::collections::BTreeMap::new();
    for r in v["routes"].as_array().into_iter().flatten() {
        let t = r["target"].as_str().unwrap_or("");
        if !(t.starts_with("nexthop") || t.starts_with("group")) || r["source"] != "kernel" {
            continue;
        }
        let hops: Hops = r["nexthops"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|h| {
                (
                    h["gateway"].as_str().unwrap_or("").to_string(),
                    ports
                        .get(h["port"].as_u64().unwrap_or(u64::MAX) as usize)
                        .cloned()
                        .unwrap_or_default(),
                )
            })
            .collect();
        out.insert(r["prefix"].as_str().unwrap_or("").to_string(), hops);
    }
    Ok((out, v))
}

/// The prefixes FRR selected and installed from BGP (`show ip route json`,
/// `show ipv6 route json`).
pub fn frr_bgp_prefixes(frr: &Frr) -> Result<std::collections::BTreeSet<String>> {
    let mut out = std::collections::BTreeSet::new();
    for cmd in ["show ip route json", "show ipv6 route json"] {
        let v: serde_json::Value = serde_json::from_str(&frr.vtysh(cmd)?)?;
        for (p, rs) in v.as_object().into_iter().flatten() {
            if rs
                .as_array()
                .into_iter()
                .flatten()
                .any(|r| r["protocol"] == "bgp" && r["selected"] == true && r["installed"] == true)
            {
                out.insert(p.clone());
            }
        }
    }
    Ok(out)
}

/// How switch `i` of `fabric` differs between its kernel FIB and its data
/// plane (routes via gateways out of its ports), or `None` when they are
/// equal; FRR's installed BGP prefixes missing from the data plane count
/// as differences too.
pub fn fib_difference(fabric: &Fabric, i: usize) -> Result<Option<String>> {
    let sw = &fabric.switches[i];
    let ports: Vec<String> = sw.ports.iter().map(|p| p.0.clone()).collect();
    let fib = kernel_fib(fabric.switch_ns(i), &ports)?;
    let (dp, _) = dataplane_routes(fabric.bin(), &sw.instance)?;
    let mut diffs = Vec::new();
    for (p, h) in &fib {
        match dp.get(p) {
            Some(d) if d == h => {}
            other => diffs.push(format!("{p}: kernel {h:?}, data plane {other:?}")),
        }
    }
    for (p, d) in &dp {
        if !fib.contains_key(p) {
            diffs.push(format!("{p}: data plane {d:?}, not in the kernel FIB"));
        }
    }
    // host routes to neighbours: each must be a resolved neighbour there
    let (_, listing) = dataplane_routes(fabric.bin(), &sw.instance)?;
    let neigh: serde_json::Value =
        serde_json::from_str(&fabric.switch_ns(i).exec(&["ip", "-j", "neigh"])?)?;
    for r in listing["routes"].as_array().into_iter().flatten() {
        if !(r["source"] == "connected" || r["source"] == "neighbour") {
            continue;
        }
        for h in r["nexthops"].as_array().into_iter().flatten() {
            let dev = &ports[h["port"].as_u64().unwrap_or(0) as usize];
            let known = neigh.as_array().into_iter().flatten().any(|n| {
                n["dst"] == h["gateway"]
                    && n["dev"].as_str() == Some(dev)
                    && n["lladdr"].is_string()
            });
            if !known {
                diffs.push(format!(
                    "{}: data plane next hop {} {dev}, no such neighbour",
                    r["prefix"], h["gateway"]
                ));
            }
        }
    }
    if let Some(frr) = fabric.frr.get(i) {
        for p in frr_bgp_prefixes(frr)? {
            if !dp.contains_key(&p) {
                diffs.push(format!("{p}: installed by FRR, not in the data plane"));
            }
        }
    }
    Ok((!diffs.is_empty()).then(|| format!("{}: {}", sw.node.name, diffs.join("; "))))
}

/// Waits until every BGP session is up, every leaf's kernel has the other
/// leaves' host routes over `paths` spines, and every switch's data plane
/// equals its kernel FIB; returns how long that took.
pub fn wait_converged(fabric: &Fabric, paths: usize, timeout: Duration) -> Result<Duration> {
    let t0 = Instant::now();
    let (s, l, _) = fabric.topo.dims();
    let hosts = fabric.topo.hosts();
    let mut last = String::new();
    while t0.elapsed() < timeout {
        check_interrupt()?;
        match converged_once(fabric, s, l, &hosts, paths) {
            Ok(None) => return Ok(t0.elapsed()),
            Ok(Some(why)) => last = why,
            Err(e) => last = format!("{e:#}"),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!("not converged within {timeout:?}: {last}")
}

fn converged_once(
    fabric: &Fabric,
    spines: usize,
    _leaves: usize,
    hosts: &[crate::topo::HostNode],
    paths: usize,
) -> Result<Option<String>> {
    for (i, sw) in fabric.switches.iter().enumerate() {
        if sw.node.kind == SwitchKind::Leaf {
            let up = fabric.frr[i].established()?;
            if up < paths {
                return Ok(Some(format!(
                    "{}: {up} of {spines} BGP sessions established, waiting for {paths}",
                    sw.node.name
                )));
            }
        }
        if sw.node.kind == SwitchKind::Leaf {
            let ports: Vec<String> = sw.ports.iter().map(|p| p.0.clone()).collect();
            let fib = kernel_fib(fabric.switch_ns(i), &ports)?;
            for h in hosts.iter().filter(|h| h.leaf != sw.node.index) {
                for p in [
                    format!("{}/32", crate::topo::ipv4_str(h.ipv4)),
                    format!("{}/128", crate::topo::ipv6_str(h.ipv6)),
                ] {
                    let n = fib.get(&p).map(|x| x.len()).unwrap_or(0);
                    if n != paths {
                        return Ok(Some(format!(
                            "{}: kernel route {p} has {n} path(s), waiting for {paths}",
                            sw.node.name
                        )));
                    }
                }
            }
        }
        if let Some(d) = fib_difference(fabric, i)? {
            return Ok(Some(d));
        }
    }
    Ok(None)
}

/// One switch's BGP figures: sessions Established (FRR's view) and routes
/// learned into its data plane (kernel routes via next hops or groups,
/// `dataplane routes`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SwitchBgp {
    pub name: String,
    pub leaf: bool,
    pub sessions: usize,
    pub routes: usize,
}

/// [`SwitchBgp`] of every switch of a `Routing::Bgp` fabric, in switch
/// order.
pub fn summary(fabric: &Fabric) -> Result<Vec<SwitchBgp>> {
    fabric
        .switches
        .iter()
        .enumerate()
        .map(|(i, sw)| {
            let frr = fabric.frr.get(i).with_context(|| {
                format!("{}: no FRR (not a --routing bgp fabric)", sw.node.name)
            })?;
            Ok(SwitchBgp {
                name: sw.node.name.clone(),
                leaf: sw.node.kind == SwitchKind::Leaf,
                sessions: frr.established()?,
                routes: dataplane_routes(fabric.bin(), &sw.instance)?.0.len(),
            })
        })
        .collect()
}
