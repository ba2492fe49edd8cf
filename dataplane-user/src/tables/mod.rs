//! Writing a validated plan into the data plane's tables: ports,
//! forwarding (next hops, groups, routes, stages), the buffer model and
//! trimming, each entry whole and only where it differs.

pub mod forwarding;
pub mod groups;
pub mod slotted;

use crate::ports::{resolve_ports, write_port_index, write_port_table, Resolved};
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
    let n = write_port_index(bpf, resolved)?;
    let n = n + {
        let mut table: HashMap<_, u32, PortConfig> = HashMap::try_from(
            bpf.map_mut(names::map::PORT_CONFIG)
                .ok_or_else(|| anyhow!("map {} missing", names::map::PORT_CONFIG))?,
        )?;
        write_port_table(&mut table, plan, resolved)?
    };
    Ok(
        n + crate::tables::forwarding::write_forwarding(bpf, plan, resolved)?
            + crate::lossless::buffer::write_buffer(bpf, plan)?
            + write_trim(bpf, plan)?,
    )
}

/// Writes every port's trimming settings (`TRIM_PORTS`, by port id):
/// zero for ports whose queues do not trim. Returns the entries changed.
fn write_trim(bpf: &mut Ebpf, plan: &Plan) -> Result<usize> {
    use dataplane_common::trim::TrimPort;
    let mut arr: aya::maps::Array<_, TrimPort> = aya::maps::Array::try_from(
        bpf.map_mut(names::map::TRIM_PORTS)
            .ok_or_else(|| anyhow!("map {} missing", names::map::TRIM_PORTS))?,
    )?;
    let mut n = 0;
    for (i, p) in plan.ports.iter().enumerate() {
        let v = match &plan.trim {
            Some(t) if t.queues.get(i).copied().unwrap_or(0) != 0 => TrimPort {
                size: t.config.size,
                dscp: t.dscp[i],
                queue: t.config.queue,
                queues: t.queues[i],
                _pad: [0; 3],
            },
            _ => TrimPort::default(),
        };
        let id = u32::from(p.config.port_id);
        if arr.get(&id, 0)? != v {
            arr.set(id, v, 0)?;
            n += 1;
        }
    }
    Ok(n)
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
