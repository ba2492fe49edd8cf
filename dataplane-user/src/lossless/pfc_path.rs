//! Choosing who sends PFC frames: the data plane itself (`xdp_devmap_pfc`
//! on the packet path; on the timer path the tick queues its decisions and
//! the timer thread sends them at once; see `dataplane-ebpf/src/pfc_tx.rs`),
//! or the controller's emitter thread (ring buffer, AF_PACKET) as the
//! fallback where the data plane's path fails its self-test
//! (`lossless::selftest`); each path is used only after its self-test.

use anyhow::{bail, Result};
use aya::Ebpf;
use dataplane_config::{PfcTx, Plan};

use crate::lossless::dp_pfc;
use crate::ports::Resolved;

pub use crate::probe::decide::PfcPath;

/// Writes each port's MAC (`PORT_MACS`, the frames' source) and selects
/// the path `plan` asks for: for the data plane, every model port goes into
/// `PFC_BCAST` with `xdp_devmap_pfc`, but only after the path passed its
/// self-test ([`crate::lossless::selftest`]). `Auto` falls back to the
/// controller, saying why; `DataPlane` fails instead.
/// The self-test runs in the XDP mode the plan's first port asks for; no
/// feature probe results are used (the self-tests decide alone).
pub fn select(bpf: &mut Ebpf, plan: &Plan, ports: &[Resolved]) -> Result<PfcPath> {
    let none = crate::probe::Probes::default();
    select_explained(bpf, plan, ports, selftest_mode(plan), &none).map(|(p, _)| p)
}

/// [`select`], the self-test in `mode` (`up`: generic when any port was
/// attached in generic mode: the broadcast copies lose their metadata
/// there, measured on 6.18, so that path must not be trusted untested),
/// deciding with the feature probes' results (`probe::decide`: a missing
/// feature skips the data plane's self-test), with why the path was
/// chosen.
pub fn select_explained(
    bpf: &mut Ebpf,
    plan: &Plan,
    ports: &[Resolved],
    mode: aya::programs::XdpMode,
    probes: &crate::probe::Probes,
) -> Result<(PfcPath, String)> {
    dp_pfc::write_port_macs(bpf, ports)?;
    let want = plan
        .buffer
        .as_ref()
        .map(|b| b.pfc_tx)
        .unwrap_or(PfcTx::Auto);
    let mut enabled = false;
    let chosen = crate::probe::decide::choose_pfc_path(
        want,
        probes,
        || {
            let test = crate::lossless::selftest::pfc_dataplane_once_per_boot(mode);
            if !test.passed {
                return test;
            }
            match dp_pfc::enable_dataplane(bpf, ports) {
                Ok(()) => {
                    enabled = true;
                    test
                }
                Err(e) => crate::lossless::selftest::Outcome {
                    passed: false,
                    detail: format!("its devmap entries were refused: {e:#}"),
                },
            }
        },
        crate::lossless::selftest::pfc_controller,
    );
    let (path, why) = chosen.map_err(|e| anyhow::anyhow!(e))?;
    if path != PfcPath::DataPlane && enabled {
        bail!("internal: the data plane's path was enabled but not chosen");
    }
    dp_pfc::set_path(bpf, path == PfcPath::DataPlane)?;
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

pub use super::timer_tx::TimerTx;
