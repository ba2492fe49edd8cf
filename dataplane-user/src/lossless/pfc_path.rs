//! Choosing who sends PFC frames: the data plane itself (`xdp_devmap_pfc`
//! on the packet path; on the timer path the tick queues its decisions and
//! the timer thread sends them at once; see `dataplane-ebpf/src/pfc_tx.rs`),
//! or the controller's emitter thread (ring buffer, AF_PACKET) as the
//! fallback where the data plane's path fails its self-test
//! (`lossless::selftest`); each path is used only after its self-test.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use crate::lossless::emitter::Emitter;
use dataplane_common::buffer::PfcEvent;

use anyhow::{anyhow, bail, Context, Result};
use aya::maps::{Array, DevMap, MapData};
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
            PfcPath::DataPlane => "pfc: frames sent by the data plane (packet path: devmap broadcast + xdp_devmap_pfc; timer path: the timer thread sends what the tick queued)".into(),
            PfcPath::Userspace(why) => format!("pfc: frames sent by the controller (AF_PACKET, real-time thread): {why}"),
        }
    }
}

/// Writes each port's MAC (`PORT_MACS`, the frames' source) and selects
/// the path `plan` asks for: for the data plane, every model port goes into
/// `PFC_BCAST` with `xdp_devmap_pfc`, but only after the path passed its
/// self-test ([`crate::lossless::selftest`]). `Auto` falls back to the
/// controller, saying why; `DataPlane` fails instead.
/// The self-test runs in the XDP mode the plan's first port asks for.
pub fn select(bpf: &mut Ebpf, plan: &Plan, ports: &[Resolved]) -> Result<PfcPath> {
    select_explained(bpf, plan, ports, selftest_mode(plan)).map(|(p, _)| p)
}

/// [`select`], the self-test in `mode` (`up`: generic when any port was
/// attached in generic mode: the broadcast copies lose their metadata
/// there, measured on 6.18, so that path must not be trusted untested),
/// with the self-test's one line.
pub fn select_explained(
    bpf: &mut Ebpf,
    plan: &Plan,
    ports: &[Resolved],
    mode: aya::programs::XdpMode,
) -> Result<(PfcPath, String)> {
    write_port_macs(bpf, ports)?;
    let want = plan
        .buffer
        .as_ref()
        .map(|b| b.pfc_tx)
        .unwrap_or(PfcTx::Auto);
    let (path, why) = match want {
        PfcTx::Userspace => (
            PfcPath::Userspace("buffer.pfc_tx = \"userspace\"".into()),
            String::new(),
        ),
        PfcTx::Auto | PfcTx::DataPlane => {
            let test = crate::lossless::selftest::pfc_dataplane_once_per_boot(mode);
            let enabled = if test.passed {
                enable_dataplane(bpf, ports).map_err(|e| format!("{e:#}"))
            } else {
                Err(format!("failed its self-test: {}", test.detail))
            };
            match enabled {
                Ok(()) => (
                    PfcPath::DataPlane,
                    format!("self-test passed: {}", test.detail),
                ),
                Err(e) if want == PfcTx::Auto => (
                    PfcPath::Userspace(format!("the data plane's path {e}")),
                    String::new(),
                ),
                Err(e) => bail!("buffer.pfc_tx = \"dataplane\" refused: the data plane's path {e}"),
            }
        }
    };
    // the controller's path, too, is only used after its own self-test
    let (path, why) = match path {
        PfcPath::Userspace(reason) => {
            let test = crate::lossless::selftest::pfc_controller();
            if !test.passed {
                bail!(
                    "no PFC path passed its self-test: the controller's: {}; and the data plane's was not used: {reason}",
                    test.detail
                );
            }
            (
                PfcPath::Userspace(reason),
                format!("self-test passed: {}", test.detail),
            )
        }
        p => (p, why),
    };
    set_path(bpf, &path)?;
    Ok((path, why))
}

/// The XDP mode the self-test attaches in: the switch's first port's
/// (`auto` tries native first, as `up` does).
fn selftest_mode(plan: &Plan) -> aya::programs::XdpMode {
    match plan.ports.first().map(|p| p.attach) {
        Some(dataplane_config::XdpAttach::Generic) => aya::programs::XdpMode::Skb,
        _ => aya::programs::XdpMode::Driver,
    }
}

fn set_path(bpf: &mut Ebpf, path: &PfcPath) -> Result<()> {
    let v = match path {
        PfcPath::DataPlane => PFC_PATH_DATAPLANE,
        PfcPath::Userspace(_) => PFC_PATH_USERSPACE,
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
pub(crate) fn enable_dataplane_untested(bpf: &mut Ebpf, ports: &[Resolved]) -> Result<()> {
    write_port_macs(bpf, ports)?;
    enable_dataplane(bpf, ports)?;
    set_path(bpf, &PfcPath::DataPlane)
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

/// Fills `PFC_BCAST` (the kernel refuses a devmap program it cannot run)
/// and gives `TX_PORTS` the same egress program
/// ([`crate::tables::forwarding::tx_ports_prog`]).
fn enable_dataplane(bpf: &mut Ebpf, ports: &[Resolved]) -> Result<()> {
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

/// The timer path's sender, owned by the timer thread: after a tick that
/// queued decisions it pops every one (`PFC_QUEUE`) and sends its frame
/// through its own [`Emitter`] (AF_PACKET, the same bytes, the same event
/// log and latency record), before the thread sleeps again.
pub struct TimerTx {
    queue: OwnedFd,
    /// Its sender, latency record and counts.
    pub emitter: Emitter,
}

impl TimerTx {
    pub fn open(bpf: &Ebpf, plan: &Plan, ports: &[Resolved]) -> Result<TimerTx> {
        let queue = match bpf
            .map(names::map::PFC_QUEUE)
            .ok_or_else(|| anyhow!("map {} missing", names::map::PFC_QUEUE))?
        {
            aya::maps::Map::Queue(d) => d.fd().as_fd().try_clone_to_owned()?,
            _ => bail!("map {} is not a queue", names::map::PFC_QUEUE),
        };
        Ok(TimerTx {
            queue,
            emitter: Emitter::open(plan, ports)?,
        })
    }

    /// Pops and sends every queued decision; returns how many.
    pub fn send_all(&mut self) -> usize {
        let mut n = 0;
        while let Some(v) = crate::sys::queue_pop(self.queue.as_raw_fd()) {
            // SAFETY: the data plane queues PfcEvent records; read unaligned.
            let ev: PfcEvent = unsafe { std::ptr::read_unaligned(v.as_ptr() as *const PfcEvent) };
            if let Err(e) = self.emitter.handle(&ev) {
                crate::log::error(&format!("pfc: timer path: {e:#}"));
            }
            n += 1;
        }
        n
    }
}
