//! `dataplane-sim`: a deterministic discrete-event fabric simulator whose
//! switches and NICs run dataplane-common's decision functions (buffer
//! model, ECN/WRED, PFC, headroom, load balancing, DCQCN), so the
//! simulation and the data plane cannot disagree about a queue, a mark or
//! a pause.
//!
//! * [`engine`]: the simulation's state, the packet slab, the loop;
//!   [`event`], [`wheel`]: the events and their queue; [`partition`]: a
//!   run cut into partitions on several threads, whose nodes' state is in
//!   [`cells`];
//! * [`switch`]: a switch per the data plane's stages (its state in
//!   [`switch::state`], the buffer model's in [`model`]);
//! * [`host`]: RDMA NIC (RC go-back-N, DCQCN, PFC; its state in
//!   [`host::state`]);
//! * [`setup`], [`topo`], [`workload`]: what is simulated;
//! * [`report`] (counters in [`report::stats`], every flow's figures in
//!   [`report::ends`]), [`svg`], [`output`]: what comes out; [`memory`]:
//!   where a process's memory goes.
//!
//! The state types live apart from the behaviour that `impl`s [`Sim`]
//! across files, so the engine imports no behaviour and no file imports in
//! a circle.

pub(crate) mod cells;
pub mod config;
pub mod engine;
pub mod event;
pub mod host;
pub mod memory;
pub mod model;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod output;
pub mod partition;
pub mod queue;
pub(crate) mod ranks;
pub mod report;
pub mod setup;
pub mod svg;
pub mod switch;
pub mod topo;
pub mod wheel;
pub mod wire;
pub mod workload;

use anyhow::Result;

pub use config::{Params, Scenario};
pub use engine::Sim;
pub use report::Report;

/// Runs the scenario once with LB mode `lb` (a partitioned one on every
/// core).
pub fn run_one(sc: &Scenario, lb: &str, progress: bool) -> Result<Report> {
    run_threads(sc, lb, progress, 0)
}

/// Runs the scenario once with LB mode `lb`, its partitions on `threads`
/// threads (0: every core; the report is the same for any count).
pub fn run_threads(sc: &Scenario, lb: &str, progress: bool, threads: usize) -> Result<Report> {
    let p = sc.params(lb)?;
    let mut sim = Sim::new(p)?;
    sim.mark_uplinks();
    sim.progress = progress;
    sim.threads = threads;
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
