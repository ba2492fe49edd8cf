//! The data plane's own PFC emission switched on: the ports' MACs
//! (`PORT_MACS`), the broadcast devmap with its egress program
//! (`PFC_BCAST`, and the same program on `TX_PORTS`), and `PFC_PATH`. Used
//! by `pfc_path` once a path is chosen and by the self-test on its private
//! copy of the object.

use anyhow::{bail, Context, Result};
use aya::maps::{Array, DevMap, MapData};
use aya::Ebpf;
use dataplane_common::buffer::{PFC_PATH_DATAPLANE, PFC_PATH_USERSPACE};
use dataplane_common::lossless::MODEL_PORTS;
use dataplane_common::names;

use crate::ports::Resolved;

/// `PFC_PATH` = the data plane's path (`dataplane`) or the controller's.
pub(crate) fn set_path(bpf: &mut Ebpf, dataplane: bool) -> Result<()> {
    let v = if dataplane {
        PFC_PATH_DATAPLANE
    } else {
        PFC_PATH_USERSPACE
    };
    let mut m: Array<&mut MapData, u32> = Array::try_from(
        bpf.map_mut(names::map::PFC_PATH)
            .context(names::map::PFC_PATH)?,
    )?;
    m.set(0, v, 0).context("PFC_PATH")?;
    Ok(())
}

/// The data plane's path without its self-test: for the self-test itself
/// (on its private copy of the object).
pub(crate) fn enable_untested(bpf: &mut Ebpf, ports: &[Resolved]) -> Result<()> {
    write_port_macs(bpf, ports)?;
    enable_dataplane(bpf, ports)?;
    set_path(bpf, true)
}

/// `PORT_MACS[port id]` = the port's own MAC.
pub(crate) fn write_port_macs(bpf: &mut Ebpf, ports: &[Resolved]) -> Result<()> {
    let mut m: Array<&mut MapData, [u8; 8]> = Array::try_from(
        bpf.map_mut(names::map::PORT_MACS)
            .context(names::map::PORT_MACS)?,
    )?;
    for r in ports {
        let mut v = [0u8; 8];
        v[..6].copy_from_slice(&r.config.mac);
        m.set(u32::from(r.config.port_id), v, 0)
            .with_context(|| format!("PORT_MACS[{}]", r.config.port_id))?;
    }
    Ok(())
}

/// Fills `PFC_BCAST` (the kernel refuses a devmap program it cannot run)
/// and gives `TX_PORTS` the same egress program
/// ([`crate::tables::forwarding::tx_ports_prog`]).
pub(crate) fn enable_dataplane(bpf: &mut Ebpf, ports: &[Resolved]) -> Result<()> {
    let (fd, prog_id) = crate::tables::forwarding::devmap_pfc(bpf)?;
    {
        let mut bc: DevMap<&mut MapData> = DevMap::try_from(
            bpf.map_mut(names::map::PFC_BCAST)
                .context(names::map::PFC_BCAST)?,
        )?;
        for r in ports {
            let id = u32::from(r.config.port_id);
            if id as usize >= MODEL_PORTS {
                bail!("port id {id} is beyond the buffer model's {MODEL_PORTS} ports");
            }
            bc.set(id, r.ifindex, Some(&fd), 0).with_context(|| {
                format!(
                    "PFC_BCAST[{id}] = ifindex {} with {}",
                    r.ifindex,
                    names::prog::XDP_DEVMAP_PFC
                )
            })?;
        }
    }
    crate::tables::forwarding::write_tx_ports(bpf, ports, Some((&fd, prog_id)))?;
    Ok(())
}
