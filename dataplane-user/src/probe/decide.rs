//! What the probe results mean for a configuration: pure functions (the
//! probes and the self-tests are inputs), tested without a kernel.

use dataplane_config::PfcTx;

use super::{Feature, Need, Probes, Status};
use crate::lossless::selftest::Outcome;

/// The active PFC emission path ([`choose_pfc_path`]'s choice; used as
/// `lossless::pfc_path::PfcPath`).
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

/// What of the configuration depends on optional features.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wants {
    /// `[buffer] pfc_tx` (`auto` without `[buffer]`).
    pub pfc_tx: PfcTx,
    /// A `[buffer]` section: the buffer model's timer runs.
    pub buffer: bool,
    /// The ports whose `xdp_mode` is `"native"`: (index, name).
    pub native_ports: Vec<(usize, String)>,
}

impl Wants {
    pub fn of(plan: &dataplane_config::Plan) -> Wants {
        Wants {
            pfc_tx: plan
                .buffer
                .as_ref()
                .map(|b| b.pfc_tx)
                .unwrap_or(PfcTx::Auto),
            buffer: plan.buffer.is_some(),
            native_ports: plan
                .ports
                .iter()
                .enumerate()
                .filter(|(_, p)| p.attach == dataplane_config::XdpAttach::Native)
                .map(|(i, p)| (i, p.name.clone()))
                .collect(),
        }
    }
}

fn pfc_tx_name(p: PfcTx) -> &'static str {
    match p {
        PfcTx::Auto => "auto",
        PfcTx::DataPlane => "dataplane",
        PfcTx::Userspace => "userspace",
    }
}

/// The missing features among `fs`, as "name (Linux X+): reason".
fn missing(probes: &Probes, fs: &[Feature]) -> Vec<String> {
    fs.iter()
        .filter_map(|f| match probes.status(*f) {
            Status::Missing(why) => Some(format!("{} (Linux {}+): {why}", f.name(), f.since())),
            _ => None,
        })
        .collect()
}

/// Refusals the probes alone justify, decided before anything is loaded
/// or attached (so a refused `up` changes nothing): a feature every data
/// plane needs, one `[buffer]` needs, or one of the data plane's PFC path
/// with `pfc_tx = "dataplane"`. A probe that could not run refuses
/// nothing (the self-tests and the real load decide then).
pub fn refusals(w: &Wants, probes: &Probes) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for f in Feature::ALL {
        if f.need() != Need::Required || (f == Feature::TestRun && !w.buffer) {
            continue;
        }
        for m in missing(probes, &[f]) {
            out.push(match f {
                Feature::TestRun => {
                    format!("[buffer] needs {m} (the buffer model's timer runs that way)")
                }
                _ => format!("the data plane needs {m}"),
            });
        }
    }
    for (i, name) in &w.native_ports {
        if let Some(Status::Missing(why)) = probes
            .ports
            .iter()
            .find(|p| &p.port == name)
            .map(|p| &p.status)
        {
            out.push(format!(
                "port[{i}] ({name}).xdp_mode = \"native\" refused: {why}; use xdp_mode = \"auto\" \
                 (generic XDP, where the controller sends PFC frames)"
            ));
        }
    }
    if w.pfc_tx == PfcTx::DataPlane {
        let m = missing(probes, &Feature::PFC_DATAPLANE);
        if !m.is_empty() {
            out.push(format!(
                "buffer.pfc_tx = \"dataplane\" refused: the data plane's PFC path needs {}; \
                 use pfc_tx = \"auto\" (the controller sends PFC frames) or a newer kernel",
                m.join("; ")
            ));
        }
    }
    out
}

/// The PFC emission path for `want`: the data plane's where its features
/// are not missing and its self-test (`dp_test`, run only then) passes,
/// else (for `auto`) the controller's, which must pass its own self-test
/// (`ctl_test`). `Err`: the refusal, naming the config key and the
/// feature or self-test. `Ok`: the path and why it was chosen.
pub fn choose_pfc_path(
    want: PfcTx,
    probes: &Probes,
    dp_test: impl FnOnce() -> Outcome,
    ctl_test: impl FnOnce() -> Outcome,
) -> Result<(PfcPath, String), String> {
    let key = format!("buffer.pfc_tx = \"{}\"", pfc_tx_name(want));
    let fallback = match want {
        PfcTx::Userspace => key.clone(),
        PfcTx::Auto | PfcTx::DataPlane => {
            let m = missing(probes, &Feature::PFC_DATAPLANE);
            if !m.is_empty() {
                if want == PfcTx::DataPlane {
                    return Err(format!(
                        "{key} refused: the data plane's PFC path needs {}",
                        m.join("; ")
                    ));
                }
                format!(
                    "{key}: the data plane's path needs {} (its self-test was not run)",
                    m.join("; ")
                )
            } else {
                let t = dp_test();
                if t.passed {
                    return Ok((
                        PfcPath::DataPlane,
                        format!(
                            "{key}: no feature of the data plane's path is missing (devmap egress programs, \
                             BPF_F_BROADCAST, XDP metadata through a devmap) and its self-test passed: {}",
                            t.detail
                        ),
                    ));
                }
                if want == PfcTx::DataPlane {
                    return Err(format!(
                        "{key} refused: the data plane's PFC path failed its self-test: {}",
                        t.detail
                    ));
                }
                format!(
                    "{key}: the data plane's path failed its self-test: {}",
                    t.detail
                )
            }
        }
    };
    let t = ctl_test();
    if !t.passed {
        return Err(format!(
            "no PFC path passed its self-test: the controller's: {}; the data plane's was not used: {fallback}",
            t.detail
        ));
    }
    Ok((
        PfcPath::Userspace(fallback),
        format!("the controller's self-test passed: {}", t.detail),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::{PortProbe, Probe};

    fn all_available() -> Probes {
        Probes {
            features: Feature::ALL
                .iter()
                .map(|f| Probe {
                    feature: *f,
                    status: Status::Available("seen".into()),
                })
                .collect(),
            ports: vec![PortProbe {
                port: "eth1".into(),
                driver: Some("mlx5_core".into()),
                status: Status::Available("basic,redirect".into()),
            }],
        }
    }

    fn wants(pfc_tx: PfcTx, buffer: bool) -> Wants {
        Wants {
            pfc_tx,
            buffer,
            native_ports: Vec::new(),
        }
    }

    fn with(mut p: Probes, f: Feature, s: Status) -> Probes {
        for x in &mut p.features {
            if x.feature == f {
                x.status = s.clone();
            }
        }
        p
    }

    fn pass(d: &str) -> Outcome {
        Outcome {
            passed: true,
            detail: d.into(),
        }
    }

    fn fail(d: &str) -> Outcome {
        Outcome {
            passed: false,
            detail: d.into(),
        }
    }

    fn never() -> Outcome {
        panic!("this self-test must not run")
    }

    #[test]
    fn auto_takes_the_data_plane_when_features_and_self_test_pass() {
        let (p, why) =
            choose_pfc_path(PfcTx::Auto, &all_available(), || pass("xoff back"), never).unwrap();
        assert_eq!(p, PfcPath::DataPlane);
        assert!(
            why.contains("buffer.pfc_tx = \"auto\"") && why.contains("xoff back"),
            "{why}"
        );
    }

    #[test]
    fn auto_falls_back_without_running_the_self_test_when_a_feature_is_missing() {
        for f in Feature::PFC_DATAPLANE {
            let probes = with(all_available(), f, Status::Missing("EINVAL".into()));
            let (p, why) =
                choose_pfc_path(PfcTx::Auto, &probes, never, || pass("af_packet ok")).unwrap();
            let PfcPath::Userspace(reason) = p else {
                panic!("{f:?}: the data plane chosen")
            };
            assert!(
                reason.contains(f.name()) && reason.contains("EINVAL"),
                "{reason}"
            );
            assert!(why.contains("af_packet ok"), "{why}");
        }
    }

    #[test]
    fn auto_falls_back_when_the_self_test_fails() {
        let (p, _) = choose_pfc_path(
            PfcTx::Auto,
            &all_available(),
            || fail("no PFC frame"),
            || pass("ok"),
        )
        .unwrap();
        assert!(matches!(p, PfcPath::Userspace(r) if r.contains("no PFC frame")));
    }

    #[test]
    fn a_probe_that_could_not_run_leaves_the_decision_to_the_self_test() {
        let probes = with(
            all_available(),
            Feature::Broadcast,
            Status::NotProbed("no ip".into()),
        );
        let (p, _) = choose_pfc_path(PfcTx::DataPlane, &probes, || pass("ok"), never).unwrap();
        assert_eq!(p, PfcPath::DataPlane);
        assert!(refusals(&wants(PfcTx::DataPlane, true), &probes).is_empty());
    }

    #[test]
    fn forced_data_plane_is_refused_naming_the_key_and_the_feature() {
        let probes = with(
            all_available(),
            Feature::DevmapMeta,
            Status::Missing("0 of 2 copies carried the metadata".into()),
        );
        let e = choose_pfc_path(PfcTx::DataPlane, &probes, never, never).unwrap_err();
        assert!(e.contains("buffer.pfc_tx = \"dataplane\" refused"), "{e}");
        assert!(
            e.contains("XDP metadata through a devmap") && e.contains("0 of 2"),
            "{e}"
        );
        let r = refusals(&wants(PfcTx::DataPlane, true), &probes);
        assert_eq!(r.len(), 1, "{r:?}");
        assert!(r[0].contains("buffer.pfc_tx = \"dataplane\"") && r[0].contains("metadata"));
        // auto is not refused for it
        assert!(refusals(&wants(PfcTx::Auto, true), &probes).is_empty());
    }

    #[test]
    fn forced_data_plane_failing_its_self_test_is_refused() {
        let e = choose_pfc_path(
            PfcTx::DataPlane,
            &all_available(),
            || fail("no PFC frame left"),
            never,
        )
        .unwrap_err();
        assert!(
            e.contains("buffer.pfc_tx = \"dataplane\" refused") && e.contains("no PFC frame left"),
            "{e}"
        );
    }

    #[test]
    fn userspace_runs_only_the_controllers_self_test_and_refuses_when_it_fails() {
        let (p, _) =
            choose_pfc_path(PfcTx::Userspace, &all_available(), never, || pass("ok")).unwrap();
        assert!(matches!(p, PfcPath::Userspace(r) if r.contains("\"userspace\"")));
        let e = choose_pfc_path(PfcTx::Userspace, &all_available(), never, || fail("EPERM"))
            .unwrap_err();
        assert!(
            e.contains("no PFC path passed") && e.contains("EPERM"),
            "{e}"
        );
    }

    #[test]
    fn required_features_refuse_every_configuration() {
        for f in [Feature::BpfLoop, Feature::XdpLink] {
            let probes = with(all_available(), f, Status::Missing("refused".into()));
            let r = refusals(&wants(PfcTx::Userspace, false), &probes);
            assert_eq!(r.len(), 1, "{f:?}: {r:?}");
            assert!(r[0].contains(f.name()), "{r:?}");
        }
        // test runs only with [buffer]
        let probes = with(
            all_available(),
            Feature::TestRun,
            Status::Missing("x".into()),
        );
        let w = |buffer| wants(PfcTx::Auto, buffer);
        assert!(refusals(&w(false), &probes).is_empty());
        assert!(refusals(&w(true), &probes)[0].starts_with("[buffer] needs XDP test runs"));
        // features the data plane does not use refuse nothing
        let probes = with(
            with(
                all_available(),
                Feature::LiveFrames,
                Status::Missing("x".into()),
            ),
            Feature::MultiBuffer,
            Status::Missing("x".into()),
        );
        assert!(refusals(&w(true), &probes).is_empty());
    }

    #[test]
    fn forced_native_xdp_on_a_port_without_it_is_refused_naming_the_port() {
        let mut probes = all_available();
        probes.ports[0].status =
            Status::Missing("no native XDP with redirect (XDP features: none)".into());
        let mut w = wants(PfcTx::Auto, true);
        assert!(
            refusals(&w, &probes).is_empty(),
            "auto: generic, not refused"
        );
        w.native_ports = vec![(0, "eth1".into())];
        let r = refusals(&w, &probes);
        assert_eq!(r.len(), 1, "{r:?}");
        assert!(
            r[0].starts_with("port[0] (eth1).xdp_mode = \"native\" refused")
                && r[0].contains("features: none"),
            "{r:?}"
        );
        // the kernel reports no XDP features (below 6.3): the attach decides
        probes.ports[0].status = Status::NotProbed("no XDP features".into());
        assert!(refusals(&w, &probes).is_empty());
    }

    #[test]
    fn a_ports_xdp_features_are_judged() {
        use crate::probe::kernel::judge_port;
        assert!(judge_port(Some(1 | 2 | 4)).is_available());
        assert!(judge_port(Some(1)).is_missing(), "basic without redirect");
        assert!(judge_port(Some(0)).is_missing());
        assert!(matches!(judge_port(None), Status::NotProbed(_)));
    }

    #[test]
    fn the_redirect_counts_are_judged() {
        use crate::probe::kernel::judge_redirect;
        let ok = judge_redirect([1, 2, 2, 0, 0]);
        assert!(ok.iter().all(|(_, s)| s.is_available()), "{ok:?}");
        // no metadata on the copies
        let r = judge_redirect([1, 2, 0, 0, 0]);
        assert!(r[2].1.is_missing() && r[0].1.is_available() && r[1].1.is_available());
        // one copy only: broadcast missing
        let r = judge_redirect([1, 1, 1, 0, 0]);
        assert!(r[1].1.is_missing(), "{r:?}");
        // the redirect refused
        let r = judge_redirect([1, 0, 0, 0, 1]);
        assert!(r[0].1.is_missing() && r[1].1.is_missing(), "{r:?}");
        // the frame never arrived: nothing is claimed
        let r = judge_redirect([0, 0, 0, 0, 0]);
        assert!(r.iter().all(|(_, s)| matches!(s, Status::NotProbed(_))));
    }

    #[test]
    fn the_table_has_one_row_per_probe() {
        let t = with(
            all_available(),
            Feature::Broadcast,
            Status::Missing("EINVAL".into()),
        )
        .table("6.1.0");
        assert_eq!(t.lines().count(), 2 + Feature::ALL.len() + 1, "{t}");
        assert!(
            t.lines()
                .any(|l| l.contains("native XDP on eth1 (mlx5_core)")),
            "{t}"
        );
        assert!(t.lines().any(|l| l.contains("BPF_F_BROADCAST")
            && l.contains("MISSING")
            && l.contains("EINVAL")));
    }
}
