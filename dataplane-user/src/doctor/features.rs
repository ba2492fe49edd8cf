//! Kernel features the data plane relies on: the feature probes (`probe`,
//! the table `up` prints), then by using them: the
//! eBPF object is loaded (every program through this kernel's verifier:
//! `bpf_loop`, BPF timers, ring buffers, devmap programs), and each PFC
//! emission path runs the same self-test `up` runs before it trusts one
//! (`lossless::selftest`, in a network namespace of its own). The last
//! line is the path `pfc_tx = "auto"` would pick here: the first that
//! passed, in the order `up` tries them.

use super::checks::check;
use super::{Check, Verdict};
use crate::lossless::selftest::{self, Outcome};
use aya::programs::XdpMode;

/// The verifier's limit of processed instructions per program (since 5.2).
const VERIFIER_LIMIT: u32 = 1_000_000;

/// The loaded program whose verification processed the most instructions,
/// and that count (0 when the kernel does not report it).
fn largest_program(bpf: &aya::Ebpf) -> (String, u32) {
    bpf.programs()
        .filter_map(|(name, p)| {
            let n = p.info().ok()?.verified_instruction_count()?;
            Some((name.to_string(), n))
        })
        .max_by_key(|x| x.1)
        .unwrap_or_else(|| ("(none reported)".into(), 0))
}

/// The feature checks (needs root: only a root process loads programs).
pub fn run(euid: u32) -> Vec<Check> {
    if euid != 0 {
        return vec![check(
            "features",
            Verdict::Warn,
            "not probed: loading eBPF programs and the PFC paths' self-tests need root".into(),
        )];
    }
    // the kernel's optional features, the same probes (and table) as `up`
    let mut out: Vec<Check> = probe_checks(&crate::probe::kernel::run_all());
    out.push(match crate::object::load_object() {
        Ok(bpf) => {
            let (name, n) = largest_program(&bpf);
            // a program near the limit may be refused by the next kernel
            // (or this one, after a change): say how near
            let near = n > VERIFIER_LIMIT / 10 * 9;
            check(
                "feature: eBPF object",
                if near { Verdict::Warn } else { Verdict::Pass },
                format!(
                    "every program passed this kernel's verifier (bpf_loop, BPF timers, ring buffer, devmap egress program); the largest, {name}, took {n} of its {VERIFIER_LIMIT} instructions"
                ),
            )
        }
        Err(e) => check(
            "feature: eBPF object",
            Verdict::Fail,
            format!("{e:#} (the data plane cannot run on this kernel)"),
        ),
    });
    type SelfTest = Box<dyn Fn() -> Outcome>;
    let paths: [(&str, SelfTest); 3] = [
        (
            "pfc_tx dataplane, native XDP",
            Box::new(|| selftest::pfc_dataplane(XdpMode::Driver)),
        ),
        (
            "pfc_tx dataplane, generic XDP",
            Box::new(|| selftest::pfc_dataplane(XdpMode::Skb)),
        ),
        ("pfc_tx userspace", Box::new(selftest::pfc_controller)),
    ];
    let mut first = None;
    for (name, test) in paths {
        let o = test();
        if o.passed && first.is_none() {
            first = Some(name);
        }
        // only the controller's path failing leaves no fallback
        let fail = if name.starts_with("pfc_tx userspace") {
            Verdict::Fail
        } else {
            Verdict::Warn
        };
        out.push(check(
            &format!("self-test: {name}"),
            if o.passed { Verdict::Pass } else { fail },
            o.detail,
        ));
    }
    out.push(match first {
        Some(p) => check(
            "pfc_tx auto",
            Verdict::Pass,
            format!("would use {p} (the first path whose self-test passed)"),
        ),
        None => check(
            "pfc_tx auto",
            Verdict::Fail,
            "no PFC path passed its self-test: `up` refuses to run a lossless switch here".into(),
        ),
    });
    out
}

/// One line per feature probe: PASS when available; when missing, FAIL
/// for a feature every data plane needs, WARN for one with a fallback or
/// not used by `up`; WARN when the probe could not run.
pub fn probe_checks(probes: &crate::probe::Probes) -> Vec<Check> {
    use crate::probe::{Need, Status};
    probes
        .features
        .iter()
        .map(|p| {
            let f = p.feature;
            let (v, detail) = match &p.status {
                Status::Available(d) => (Verdict::Pass, d.clone()),
                Status::Missing(d) => (
                    if f.need() == Need::Required {
                        Verdict::Fail
                    } else {
                        Verdict::Warn
                    },
                    format!(
                        "missing (Linux {}+): {d}; without it {}",
                        f.since(),
                        f.without()
                    ),
                ),
                Status::NotProbed(d) => (Verdict::Warn, format!("not probed: {d}")),
            };
            check(&format!("feature: {}", f.name()), v, detail)
        })
        .collect()
}
