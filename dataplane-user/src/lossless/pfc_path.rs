//! Choosing who sends PFC frames: the data plane itself (`xdp_devmap_pfc`
//! on the packet path, `xdp_lossless_pfc_tx` in live-frames runs on the
//! timer path; see `dataplane-ebpf/src/pfc_tx.rs`), or the controller's
//! AF_PACKET sender as the fallback where the kernel lacks devmap programs
//! or live-frame test runs.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use anyhow::{anyhow, bail, Context, Result};
use aya::maps::{Array, DevMap, MapData};
use aya::programs::Xdp;
use aya::Ebpf;
use dataplane_common::buffer::{PFC_PATH_DATAPLANE, PFC_PATH_USERSPACE};
use dataplane_common::lossless::MODEL_PORTS;
use dataplane_common::names;
use dataplane_config::{PfcTx, Plan};

use crate::ports::Resolved;

/// The active emission path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PfcPath {
    DataPlane,
    /// The controller sends; why (the kernel's refusal, or the config).
    Userspace(String),
}

impl PfcPath {
    /// The metric label / stats name.
    pub fn name(&self) -> &'static str {
        match self {
            PfcPath::DataPlane => "dataplane",
            PfcPath::Userspace(_) => "userspace",
        }
    }

    /// One line for `up`'s output.
    pub fn describe(&self) -> String {
        match self {
            PfcPath::DataPlane => "pfc: frames sent by the data plane (packet path: devmap broadcast + xdp_devmap_pfc; timer path: xdp_lossless_pfc_tx in live-frames runs)".into(),
            PfcPath::Userspace(why) => format!("pfc: frames sent by the controller (AF_PACKET, real-time thread): {why}"),
        }
    }
}

/// Writes each port's MAC (`PORT_MACS`, the frames' source) and selects
/// the path `plan` asks for: for the data plane, every model port goes into
/// `PFC_BCAST` with `xdp_devmap_pfc` and a live-frames run of
/// `xdp_lossless_pfc_tx` must be accepted. `Auto` falls back to the
/// controller, saying why; `DataPlane` fails instead.
pub fn select(bpf: &mut Ebpf, plan: &Plan, ports: &[Resolved]) -> Result<PfcPath> {
    write_port_macs(bpf, ports)?;
    let want = plan
        .buffer
        .as_ref()
        .map(|b| b.pfc_tx)
        .unwrap_or(PfcTx::Auto);
    let path = match want {
        PfcTx::Userspace => PfcPath::Userspace("buffer.pfc_tx = \"userspace\"".into()),
        PfcTx::Auto | PfcTx::DataPlane => match enable_dataplane(bpf, ports) {
            Ok(()) => PfcPath::DataPlane,
            Err(e) if want == PfcTx::Auto => {
                PfcPath::Userspace(format!("the kernel refused the data plane's path ({e:#})"))
            }
            Err(e) => return Err(e.context("buffer.pfc_tx = \"dataplane\"")),
        },
    };
    let v = match path {
        PfcPath::DataPlane => PFC_PATH_DATAPLANE,
        PfcPath::Userspace(_) => PFC_PATH_USERSPACE,
    };
    let mut m: Array<&mut MapData, u32> = Array::try_from(
        bpf.map_mut(names::map::PFC_PATH)
            .context(names::map::PFC_PATH)?,
    )?;
    m.set(0, v, 0).context("PFC_PATH")?;
    Ok(path)
}

/// `PORT_MACS[port id]` = the port's own MAC.
fn write_port_macs(bpf: &mut Ebpf, ports: &[Resolved]) -> Result<()> {
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

/// Fills `PFC_BCAST` and checks live-frame runs of the timer's sender.
fn enable_dataplane(bpf: &mut Ebpf, ports: &[Resolved]) -> Result<()> {
    let prog: &Xdp = bpf
        .program(names::prog::XDP_DEVMAP_PFC)
        .ok_or_else(|| anyhow!("program {} missing", names::prog::XDP_DEVMAP_PFC))?
        .try_into()?;
    let fd = prog
        .fd()
        .map_err(|e| anyhow!("{} not loaded: {e}", names::prog::XDP_DEVMAP_PFC))?
        .try_clone()?;
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
    // the queue is empty: the run only shows the kernel takes live frames
    let tx = TimerTx::open(bpf)?;
    tx.run(1)
        .context("a live-frames run of xdp_lossless_pfc_tx")?;
    Ok(())
}

/// The timer path's sender: `xdp_lossless_pfc_tx` run in live-frames mode,
/// once per decision the tick queued.
pub struct TimerTx {
    prog: OwnedFd,
    queued: OwnedFd,
}

impl TimerTx {
    pub fn open(bpf: &Ebpf) -> Result<TimerTx> {
        let prog: &Xdp = bpf
            .program(names::prog::XDP_LOSSLESS_PFC_TX)
            .ok_or_else(|| anyhow!("program {} missing", names::prog::XDP_LOSSLESS_PFC_TX))?
            .try_into()?;
        let prog = prog.fd()?.try_clone()?.as_fd().try_clone_to_owned()?;
        let queued = bpf
            .map(names::map::PFC_QUEUED)
            .ok_or_else(|| anyhow!("map {} missing", names::map::PFC_QUEUED))?;
        let queued = match queued {
            aya::maps::Map::Array(d) => d.fd().as_fd().try_clone_to_owned()?,
            _ => bail!("map {} is not an array", names::map::PFC_QUEUED),
        };
        Ok(TimerTx { prog, queued })
    }

    /// How many frames the last tick queued.
    pub fn queued(&self) -> Result<u32> {
        crate::sys::map_lookup_u32(self.queued.as_raw_fd(), 0)
            .with_context(|| format!("reading {}", names::map::PFC_QUEUED))
    }

    /// Sends `n` queued frames (each run pops one; an empty queue drops).
    pub fn run(&self, n: u32) -> std::io::Result<()> {
        // a 60-byte frame each run rewrites whole
        let frame = [0u8; 60];
        crate::sys::prog_test_run(
            self.prog.as_raw_fd(),
            &frame,
            None,
            n,
            crate::sys::TEST_RUN_XDP_LIVE_FRAMES,
        )
        .map(|_| ())
    }
}
