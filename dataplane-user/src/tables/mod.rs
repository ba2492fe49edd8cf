//! Writing a validated plan into the data plane's tables: ports,
//! forwarding (next hops, groups, routes, stages) and the buffer model, each
//! entry whole and only where it differs.

pub mod forwarding;
pub mod groups;

use crate::ports::{resolve_ports, write_port_table, Resolved};
use anyhow::{anyhow, Result};
use aya::maps::HashMap;
use aya::Ebpf;
use dataplane_common::maps::PortConfig;
use dataplane_common::names;
use dataplane_config::Plan;

/// Writes every table of a validated, resolved plan: ports, forwarding
/// (egress ports, next hops, groups, routes, the tail-call stages) and the
/// buffer model, against what is loaded: only entries that differ are
/// written, each whole. Returns the entries changed.
pub fn write_tables(bpf: &mut Ebpf, plan: &Plan, resolved: &[Resolved]) -> Result<usize> {
    refuse_unimplemented(plan)?;
    let n = {
        let mut table: HashMap<_, u32, PortConfig> = HashMap::try_from(
            bpf.map_mut(names::map::PORT_CONFIG)
                .ok_or_else(|| anyhow!("map {} missing", names::map::PORT_CONFIG))?,
        )?;
        write_port_table(&mut table, plan, resolved)?
    };
    Ok(
        n + crate::tables::forwarding::write_forwarding(bpf, plan, resolved)?
            + crate::lossless::buffer::write_buffer(bpf, plan)?,
    )
}

/// Refuses, before anything is written, what the eBPF programs would do
/// differently from what the plan says: a queue whose profile trims (the
/// trimming decision and rewrite exist in `dataplane_common::trim`, the
/// programs' glue does not yet, so such a queue would drop).
fn refuse_unimplemented(plan: &Plan) -> Result<()> {
    if let Some(t) = &plan.trim {
        if let Some((p, _)) = plan.ports.iter().zip(&t.queues).find(|(_, &q)| q != 0) {
            return Err(anyhow!(
                "port {}: buffer_queue: a \"trim\" profile, but the eBPF data plane does not trim yet (its queues would drop instead); use packet_discard_action = \"drop\" for now",
                p.name
            ));
        }
    }
    Ok(())
}

/// Parses, validates, resolves (in the calling thread's namespace) and
/// writes a configuration given as text: what `up` does to the tables, for
/// benchmarks and harnesses that drive the programs with BPF_PROG_RUN.
pub fn apply_config_text(
    bpf: &mut Ebpf,
    text: &str,
    source: &str,
) -> Result<(Plan, Vec<Resolved>)> {
    let plan = dataplane_config::Config::parse(text, source)?.validate(source)?;
    let resolved = resolve_ports(&plan)?;
    write_tables(bpf, &plan, &resolved)?;
    Ok((plan, resolved))
}
