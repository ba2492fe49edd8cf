//! `dataplane doctor`: checks a machine before a data plane is deployed on
//! it. Reading the machine (`read`, `dcb`) is kept apart from the verdicts
//! (`checks`, pure functions of what was read), so each rule is tested
//! with recorded inputs.
//!
//! | check | reads | FAIL / WARN when |
//! |---|---|---|
//! | kernel | uname | below 5.18 / below 6.3 (no XDP features) |
//! | btf, bpffs, privileges | /sys, statfs, euid | - / missing, not root |
//! | instance | pins, the instance lock | a pinned data plane this build cannot adopt / one with no controller |
//! | config | the file | invalid / - |
//! | port: exists | RTM_GETLINK | missing |
//! | port: driver | ETHTOOL_GDRVINFO | - / unreadable |
//! | port: xdp | netdev family's xdp-features, RTM_GETLINK | another's XDP program attached, no native XDP or too large an MTU in native mode / generic fallback, no XDP transmit |
//! | port: mtu | RTM_GETLINK | below `[buffer] mtu` / above it |
//! | port: link | RTM_GETLINK | - / down, no carrier |
//! | port: dcb | RTM_GETDCB, DCB_CMD_IEEE_GET; ETHTOOL_GPAUSEPARAM | - / PFC vector differs, no DCB ops, shared NIC buffers, link-level pause on |
//! | port: queues | ETHTOOL_GCHANNELS (else rtnetlink) | - / fewer than CPUs |
//! | feature, self-test, pfc_tx auto | the feature probes (`probe`); loading the object; each PFC path's self-test (`features`) | a required feature missing, the object does not load, no PFC path passes / an optional feature missing or not probed, a data-plane path fails its self-test |

pub mod checks;
pub mod dcb;
pub mod features;
pub mod read;

use std::path::Path;

use serde::Serialize;

/// PASS, WARN or FAIL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Verdict {
    Pass,
    Warn,
    Fail,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Warn => "WARN",
            Verdict::Fail => "FAIL",
        }
    }
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// kernel, btf, ...; for a port: exists, driver, xdp, mtu, link, dcb,
    /// queues.
    #[serde(rename = "check")]
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<String>,
    pub verdict: Verdict,
    pub detail: String,
}

impl Check {
    pub fn port(name: &str, port: &str, verdict: Verdict, detail: String) -> Check {
        Check {
            name: name.into(),
            port: Some(port.into()),
            verdict,
            detail,
        }
    }

    /// `PASS  port eth1 mtu: mtu 9100 = [buffer] mtu 9100`.
    pub fn line(&self) -> String {
        let what = match &self.port {
            Some(p) => format!("port {p} {}", self.name),
            None => self.name.clone(),
        };
        format!("{}  {what}: {}", self.verdict.as_str(), self.detail)
    }
}

/// The text report: one line per check, then the counts.
pub fn render(checks: &[Check]) -> String {
    let mut s: String = checks.iter().map(|c| c.line() + "\n").collect();
    let n = |v| checks.iter().filter(|c| c.verdict == v).count();
    s.push_str(&format!(
        "{} passed, {} warnings, {} failed\n",
        n(Verdict::Pass),
        n(Verdict::Warn),
        n(Verdict::Fail)
    ));
    s
}

/// The JSON report.
pub fn render_json(checks: &[Check]) -> serde_json::Value {
    let n = |v| checks.iter().filter(|c| c.verdict == v).count();
    serde_json::json!({
        "checks": checks,
        "pass": n(Verdict::Pass),
        "warn": n(Verdict::Warn),
        "fail": n(Verdict::Fail),
    })
}

/// Reads this machine (in the current network namespace) and checks it,
/// against `config` when given.
pub fn run(config: Option<&Path>) -> Vec<Check> {
    let mut out = vec![
        checks::kernel(&read::kernel_release()),
        checks::btf(Path::new("/sys/kernel/btf/vmlinux").exists()),
        checks::bpffs(crate::sys::bpffs_mounted()),
        // SAFETY: geteuid has no preconditions.
        checks::privileges(unsafe { libc::geteuid() }),
    ];
    // SAFETY: geteuid has no preconditions.
    out.extend(features::run(unsafe { libc::geteuid() }));
    let Some(path) = config else {
        return out;
    };
    let source = path.display().to_string();
    let loaded = dataplane_config::Config::load(path)
        .map_err(|e| format!("{e:#}"))
        .and_then(|cfg| {
            let plan = cfg.validate(&source).map_err(|e| format!("{e:#}"))?;
            Ok((cfg, plan))
        });
    let (cfg, plan) = match loaded {
        Ok(x) => x,
        Err(e) => {
            out.push(checks::config(&source, Err(e)));
            return out;
        }
    };
    out.push(checks::config(&source, Ok(plan.ports.len())));
    out.push(checks::instance(&plan.instance, &read::pinned(&plan)));
    let mtu = cfg.buffer.as_ref().map(|b| b.mtu as u32);
    let cpus = read::cpus();
    for p in &plan.ports {
        let want = checks::PortWant {
            name: p.name.clone(),
            xdp_mode: p.attach,
            pfc_enable: p.config.pfc_enable,
            mtu,
        };
        out.extend(checks::port(
            &want,
            &read::port(&plan.instance, &p.name),
            cpus,
        ));
    }
    out
}
