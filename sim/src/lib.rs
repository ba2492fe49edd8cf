//! `dataplane-sim`: a deterministic discrete-event fabric simulator whose
//! switches and NICs run dataplane-common's decision functions (buffer
//! model, ECN/WRED, PFC, headroom, load balancing, DCQCN), so the
//! simulation and the data plane cannot disagree about a queue, a mark or
//! a pause.
//!
//! * [`engine`]: time, events, the packet slab, the loop;
//! * [`switch`]: a switch per the data plane's stages;
//! * [`host`]: RDMA NIC (RC go-back-N, DCQCN, PFC);
//! * [`topo`], [`workload`]: what is simulated;
//! * [`report`], [`svg`], [`output`]: what comes out.

pub mod config;
pub mod engine;
pub mod event;
pub mod host;
pub mod model;
pub mod output;
pub mod queue;
pub mod report;
pub mod svg;
pub mod switch;
pub mod topo;
pub mod wheel;
pub mod workload;

use anyhow::Result;

pub use config::{Params, Scenario};
pub use engine::Sim;
pub use report::Report;

/// Runs the scenario once with LB mode `lb`.
pub fn run_one(sc: &Scenario, lb: &str, progress: bool) -> Result<Report> {
    let p = sc.params(lb)?;
    let mut sim = Sim::new(p)?;
    sim.mark_uplinks();
    sim.progress = progress;
    let wall = sim.run();
    if std::env::var_os("DATAPLANE_SIM_DUMP").is_some() {
        sim.dump();
    }
    Ok(sim.report(wall))
}

/// Runs the scenario once per LB mode listed.
pub fn run_all(sc: &Scenario, progress: bool) -> Result<Vec<Report>> {
    sc.lb_modes()?
        .iter()
        .map(|lb| run_one(sc, lb, progress))
        .collect()
}
