//! `dataplane-fabric`: builds a leaf-spine (or star) fabric of network
//! namespaces with one `dataplane` controller per switch and RoCEv2 host
//! emulators, runs a traffic scenario, prints the report, writes JSON and
//! plots, and tears everything down (also on error and Ctrl-C).
//!
//! ```text
//! dataplane-fabric --scenario all-reduce
//! dataplane-fabric --scenario incast --receiver h0 --pfc off
//! dataplane-fabric --scenario elephants --compare-modes hash,flowlet,bandwidth
//! dataplane-fabric --scenario incast --dcqcn-profile mlx
//! ```

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Result};
use clap::{Parser, ValueEnum};
use dataplane_common::dcqcn::{PROFILE_MLX, PROFILE_PAPER};
use testbed::fabric::Fabric;
use testbed::fabricrun::{check_configs, lb_modes_svg, polarising_seed, run_scenario};
use testbed::scenario::{RunOpts, Scenario};
use testbed::topo::{Routing, Shape, Topology};

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
enum Kind {
    Incast,
    AllReduce,
    Permutation,
    Elephants,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
enum RoutingArg {
    /// Routes and neighbours in each switch's config.
    Static,
    /// FRR (zebra + bgpd) in every switch namespace, eBGP unnumbered; the
    /// controllers follow the kernel FIB.
    Bgp,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
enum OnOff {
    On,
    Off,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
enum Profile {
    Paper,
    Mlx,
}

#[derive(Parser, Debug)]
#[command(
    name = "dataplane-fabric",
    about = "Run a RoCEv2 traffic scenario on a namespace leaf-spine fabric of dataplane switches"
)]
struct Args {
    /// Write the man page and shell completions into DIR, then exit.
    #[arg(long, hide = true, value_name = "DIR")]
    generate_docs: Option<PathBuf>,
    /// The controller binary.
    #[arg(long, default_value = "target/release/dataplane")]
    dataplane: PathBuf,
    #[arg(long, value_enum, default_value = "all-reduce")]
    scenario: Kind,
    #[arg(long, default_value_t = 2)]
    spines: usize,
    #[arg(long, default_value_t = 2)]
    leaves: usize,
    #[arg(long, default_value_t = 4)]
    hosts_per_leaf: usize,
    /// A star of N hosts around one switch instead of a leaf-spine.
    #[arg(long)]
    star: Option<usize>,
    /// Host link speed, Mb/s.
    #[arg(long, default_value_t = 20)]
    host_mbps: u32,
    /// Leaf-spine link speed, Mb/s.
    #[arg(long, default_value_t = 40)]
    uplink_mbps: u32,
    /// Load balancing of the leaves' uplinks: hash, flowlet, bandwidth, spray,
    /// place.
    #[arg(long, default_value = "flowlet")]
    lb_mode: String,
    /// Run the scenario once per mode (e.g. hash,flowlet,bandwidth),
    /// reloading the leaves' configs in between.
    #[arg(long, value_delimiter = ',')]
    compare_modes: Vec<String>,
    #[arg(long, default_value_t = 500)]
    flowlet_timeout_us: u32,
    /// In place mode, far-side notifications from the spines to the leaves
    /// (`far_notify` on the spines' ports).
    #[arg(long, value_enum, default_value = "on")]
    far_notify: OnOff,
    #[arg(long, value_enum, default_value = "on")]
    pfc: OnOff,
    #[arg(long, value_enum, default_value = "on")]
    ecn: OnOff,
    /// DCQCN at the hosts (reaction point); off, CNPs are counted only.
    #[arg(long, value_enum, default_value = "on")]
    dcqcn: OnOff,
    /// The hosts' DCQCN profile, scaled to their line rate: the DCQCN
    /// paper's, or mlx (the HPCC simulator's Mlx mode / NVIDIA NICs).
    #[arg(long, value_enum, default_value = "paper")]
    dcqcn_profile: Profile,
    /// WRED/ECN Kmin and Kmax (bytes), marking probability at Kmax (%).
    #[arg(long, default_value_t = 8000)]
    kmin: u32,
    #[arg(long, default_value_t = 64000)]
    kmax: u32,
    #[arg(long, default_value_t = 20)]
    pmax: u32,
    /// Bytes each sender writes (incast, permutation, elephants) or each
    /// host contributes (all-reduce).
    /// (default 1 MiB; with --duration, as much as the hosts' links could
    /// carry in twice that time, so the scenario runs for the duration)
    #[arg(long)]
    bytes: Option<u64>,
    /// Run for this many seconds and report what was done (a scenario not
    /// complete by then is not an error); instead of running to completion.
    #[arg(long, conflicts_with = "timeout")]
    duration: Option<f64>,
    /// Incast receiver.
    #[arg(long, default_value = "h0")]
    receiver: String,
    /// Incast senders (default: every other host).
    #[arg(long, value_delimiter = ',')]
    senders: Vec<String>,
    /// Hash seed of every switch; default: for elephants, the seed under
    /// which hash mode collides (see the README), else 1.
    #[arg(long)]
    hash_seed: Option<u32>,
    /// Give up after this many seconds (reported as incomplete).
    #[arg(long, default_value_t = 60.0)]
    timeout: f64,
    /// The switches' control plane: static routes, or FRR/BGP.
    #[arg(long, value_enum, default_value = "static")]
    routing: RoutingArg,
    /// Where the report and plots go.
    #[arg(long, default_value = "target/fabric")]
    out: PathBuf,
}

fn main() {
    testbed::fabric::run_main(real_main)
}

fn real_main() -> Result<()> {
    let a = Args::parse();
    if let Some(dir) = &a.generate_docs {
        use clap::CommandFactory;
        return cli_docs::generate(Args::command(), dir);
    }
    let shape = match a.star {
        Some(h) => Shape::Star { hosts: h },
        None => Shape::LeafSpine {
            spines: a.spines,
            leaves: a.leaves,
            hosts_per_leaf: a.hosts_per_leaf,
        },
    };
    let mut topo = Topology {
        shape,
        host_mbps: a.host_mbps,
        uplink_mbps: a.uplink_mbps,
        lb_mode: a.lb_mode.clone(),
        flowlet_timeout_us: a.flowlet_timeout_us,
        far_notify: a.far_notify == OnOff::On,
        pfc: a.pfc == OnOff::On,
        ecn: a.ecn == OnOff::On,
        kmin: a.kmin,
        kmax: a.kmax,
        pmax: a.pmax,
        routing: match a.routing {
            RoutingArg::Static => Routing::Static,
            RoutingArg::Bgp => Routing::Bgp,
        },
        ..Topology::default()
    };
    let bytes = match (a.bytes, a.duration) {
        (Some(b), _) => b,
        (None, Some(d)) => (f64::from(a.host_mbps) * 1e6 / 8.0 * d * 2.0) as u64,
        (None, None) => 1 << 20,
    };
    if let Some(d) = a.duration {
        if !(d > 0.0 && d <= 3600.0) {
            bail!("--duration: expected seconds in (0, 3600], got {d}");
        }
    }
    let sc = match a.scenario {
        Kind::Incast => Scenario::Incast {
            receiver: a.receiver.clone(),
            senders: (!a.senders.is_empty()).then(|| a.senders.clone()),
            bytes,
        },
        Kind::AllReduce => Scenario::AllReduce { bytes },
        Kind::Permutation => Scenario::Permutation { bytes },
        Kind::Elephants => Scenario::Elephants { bytes },
    };
    // everything that can be refused is refused before anything is built
    if topo.routing == Routing::Bgp && !a.compare_modes.is_empty() {
        bail!("--compare-modes needs --routing static: with bgp the learned groups' mode is the controllers' [routing] default_mode, fixed when they start (use --lb-mode)");
    }
    check_configs(&topo)?;
    sc.plans(&topo)?;
    for m in &a.compare_modes {
        check_configs(&Topology {
            lb_mode: m.clone(),
            ..topo.clone()
        })?;
    }
    topo.hash_seed = match a.hash_seed {
        Some(s) => s,
        None if matches!(sc, Scenario::Elephants { .. }) => {
            let (seed, placement) = polarising_seed(&topo, &sc)?;
            println!(
                "hash seed {seed}: hash mode places the flows per leaf uplink as {placement:?}"
            );
            seed
        }
        None => 1,
    };
    let (s, l, h) = topo.dims();
    println!("building the fabric: {s} spine(s), {l} leaf/leaves, {h} host(s) per leaf; hosts {} Mb/s, uplinks {} Mb/s", topo.host_mbps, topo.uplink_mbps);
    let mut fabric = Fabric::build(topo, &a.dataplane, "fab")?;
    if fabric.topo.routing == Routing::Bgp {
        let t = testbed::convergence::wait_converged(&fabric, s, Duration::from_secs(60))?;
        println!(
            "BGP converged in {:.1} s: every data plane equals its kernel FIB",
            t.as_secs_f64()
        );
        for b in testbed::convergence::summary(&fabric)? {
            println!(
                "  {}: {} BGP session(s) established, {} route(s) learned into the data plane",
                b.name, b.sessions, b.routes
            );
        }
    }
    let opts = RunOpts {
        timeout: Duration::from_secs_f64(a.duration.unwrap_or(a.timeout)),
        dcqcn: a.dcqcn == OnOff::On,
        dcqcn_profile: match a.dcqcn_profile {
            Profile::Paper => PROFILE_PAPER,
            Profile::Mlx => PROFILE_MLX,
        },
        ..RunOpts::default()
    };
    let modes = if a.compare_modes.is_empty() {
        vec![a.lb_mode.clone()]
    } else {
        a.compare_modes.clone()
    };
    let mut results = Vec::new();
    for m in &modes {
        if fabric.topo.lb_mode != *m {
            fabric.topo.lb_mode = m.clone();
            fabric.reload()?;
            println!("leaves reloaded: lb mode {m}");
        }
        let stem = format!("{}_{m}", sc.name());
        results.push(run_scenario(&fabric, &sc, &opts, &a.out, &stem)?);
    }
    drop(fabric);
    println!("torn down: controllers stopped, data planes detached, namespaces removed");
    if results.len() > 1 {
        let refs: Vec<_> = results.iter().collect();
        if let Some(svg) = lb_modes_svg(&format!("{}: uplink shares per LB mode", sc.name()), &refs)
        {
            let p = a.out.join(format!("{}_lb_modes.svg", sc.name()));
            std::fs::write(&p, svg)?;
            println!("plot: {}", p.display());
        }
    }
    let report =
        serde_json::json!({ "runs": results.iter().map(|r| r.to_json()).collect::<Vec<_>>() });
    let p = a.out.join("report.json");
    std::fs::write(&p, serde_json::to_string_pretty(&report)?)?;
    println!("report: {}", p.display());
    if a.duration.is_none() && results.iter().any(|r| !r.complete) {
        bail!("a run did not complete within --timeout {} s", a.timeout);
    }
    Ok(())
}
