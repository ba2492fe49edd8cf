//! Feature probes: each optional kernel feature the data plane uses,
//! tried on the running kernel, with a typed result (available, or
//! missing with the kernel's reason). `up` prints them as one table
//! before it loads anything and decides from them (`decide`: pure
//! functions of the probe results and the configuration); `dataplane
//! doctor` lists the same probes.
//!
//! | probe | how (`kernel`) |
//! |---|---|
//! | bpf_loop | aya's helper probe (a two-instruction XDP program calling it) |
//! | XDP test runs | `xdp_bench_bare` run once with BPF_PROG_TEST_RUN (aya's `TestRun`) |
//! | bpf_link on XDP | a probe program attached to a veth; the attachment must be a bpf_link |
//! | native XDP | that attachment in driver mode (the veth driver) |
//! | devmap egress programs | a devmap entry with `probe_devmap_meta`, which must then run on a redirected frame |
//! | BPF_F_BROADCAST | one frame into the veth: `probe_xdp_redirect` broadcasts it, both devmap entries must see a copy |
//! | XDP metadata through a devmap | every copy must carry the marker the ingress program wrote |
//! | live-frames test runs | `xdp_bench_tx` run in live-frames mode: its frame must arrive on the veth's peer |
//! | multi-buffer | `probe_xdp_frags` (BPF_F_XDP_HAS_FRAGS) must load |
//! | native XDP on each port | the XDP features its driver reports (netdev netlink family, 6.3+) |
//!
//! The veth probes run in a thread that unshares its network namespace
//! (nothing of the host's is touched; everything goes with the thread).

pub mod decide;
pub mod kernel;

use serde::Serialize;

/// A kernel feature the data plane may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Feature {
    BpfLoop,
    TestRun,
    XdpLink,
    NativeXdp,
    DevmapProg,
    Broadcast,
    DevmapMeta,
    LiveFrames,
    MultiBuffer,
}

/// How the data plane depends on a feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Need {
    /// `up` cannot run without it.
    Required,
    /// Without it `up` takes a fallback (or refuses where the
    /// configuration forces the path that needs it).
    Fallback,
    /// Not used by `up` (benchmarks, tests, or not at all).
    NotUsed,
}

impl Feature {
    /// Every probe, in the table's order.
    pub const ALL: [Feature; 9] = [
        Feature::BpfLoop,
        Feature::TestRun,
        Feature::XdpLink,
        Feature::NativeXdp,
        Feature::DevmapProg,
        Feature::Broadcast,
        Feature::DevmapMeta,
        Feature::LiveFrames,
        Feature::MultiBuffer,
    ];

    /// The features the data plane's PFC path needs.
    pub const PFC_DATAPLANE: [Feature; 3] =
        [Feature::DevmapProg, Feature::Broadcast, Feature::DevmapMeta];

    /// The features the redirect probe judges (`kernel::redirect_probes`:
    /// one frame through a veth pair of its own).
    pub const REDIRECT: [Feature; 5] = [
        Feature::XdpLink,
        Feature::NativeXdp,
        Feature::DevmapProg,
        Feature::Broadcast,
        Feature::DevmapMeta,
    ];

    /// The table's name of the feature.
    pub fn name(self) -> &'static str {
        match self {
            Feature::BpfLoop => "bpf_loop",
            Feature::TestRun => "XDP test runs (BPF_PROG_TEST_RUN)",
            Feature::XdpLink => "bpf_link on XDP",
            Feature::NativeXdp => "native XDP (veth driver)",
            Feature::DevmapProg => "devmap egress programs",
            Feature::Broadcast => "BPF_F_BROADCAST redirect",
            Feature::DevmapMeta => "XDP metadata through a devmap",
            Feature::LiveFrames => "live-frames test runs",
            Feature::MultiBuffer => "XDP multi-buffer (frags)",
        }
    }

    /// The first mainline kernel with the feature.
    pub fn since(self) -> &'static str {
        match self {
            Feature::BpfLoop => "5.17",
            Feature::TestRun => "4.12",
            Feature::XdpLink => "5.9",
            Feature::NativeXdp => "4.19",
            Feature::DevmapProg => "5.8",
            Feature::Broadcast => "5.13",
            Feature::DevmapMeta => "5.8",
            Feature::LiveFrames => "5.18",
            Feature::MultiBuffer => "5.18",
        }
    }

    pub fn need(self) -> Need {
        match self {
            Feature::BpfLoop | Feature::TestRun | Feature::XdpLink => Need::Required,
            Feature::NativeXdp | Feature::DevmapProg | Feature::Broadcast | Feature::DevmapMeta => {
                Need::Fallback
            }
            Feature::LiveFrames | Feature::MultiBuffer => Need::NotUsed,
        }
    }

    /// What uses it, and what happens without it.
    pub fn without(self) -> &'static str {
        match self {
            Feature::BpfLoop => "the forwarding programs (member scan, buffer model) do not load: `up` refuses",
            Feature::TestRun => "the buffer model's timer cannot run: `up` refuses",
            Feature::XdpLink => "ports cannot be attached through pinned links: `up` refuses",
            Feature::NativeXdp => "ports attach in generic XDP (xdp_mode = \"auto\"); xdp_mode = \"native\" is refused",
            Feature::DevmapProg | Feature::Broadcast | Feature::DevmapMeta => {
                "PFC frames are sent by the controller (pfc_tx = \"auto\"); pfc_tx = \"dataplane\" is refused"
            }
            Feature::LiveFrames => "not used by `up`: the benchmarks' and tests' traffic generator needs it",
            Feature::MultiBuffer => "not used: the programs are single-buffer (frames above a page need generic XDP)",
        }
    }
}

/// A probe's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", content = "detail", rename_all = "snake_case")]
pub enum Status {
    /// The kernel did it; what was seen.
    Available(String),
    /// The kernel refused or did not do it; its error text or what was
    /// seen instead.
    Missing(String),
    /// The probe could not run (e.g. no `ip` to make its veths): why.
    NotProbed(String),
}

impl Status {
    pub fn word(&self) -> &'static str {
        match self {
            Status::Available(_) => "available",
            Status::Missing(_) => "MISSING",
            Status::NotProbed(_) => "not probed",
        }
    }

    pub fn detail(&self) -> &str {
        match self {
            Status::Available(d) | Status::Missing(d) | Status::NotProbed(d) => d,
        }
    }

    pub fn is_available(&self) -> bool {
        matches!(self, Status::Available(_))
    }

    pub fn is_missing(&self) -> bool {
        matches!(self, Status::Missing(_))
    }
}

/// One probe's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Probe {
    pub feature: Feature,
    #[serde(flatten)]
    pub status: Status,
}

/// Native XDP on one port's driver: read from the XDP features the
/// driver reports (the netdev netlink family, Linux 6.3+), before
/// anything is attached to the port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PortProbe {
    pub port: String,
    /// The driver's name (`ethtool -i`), when readable.
    pub driver: Option<String>,
    #[serde(flatten)]
    pub status: Status,
}

impl PortProbe {
    /// The table's name of the row.
    pub fn name(&self) -> String {
        match &self.driver {
            Some(d) => format!("native XDP on {} ({d})", self.port),
            None => format!("native XDP on {}", self.port),
        }
    }
}

/// Every probe's result: the kernel's features in [`Feature::ALL`]'s
/// order, then native XDP on each port of the configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct Probes {
    pub features: Vec<Probe>,
    pub ports: Vec<PortProbe>,
}

impl Probes {
    /// The result for `f` (not probed when absent).
    pub fn status(&self, f: Feature) -> Status {
        self.features
            .iter()
            .find(|p| p.feature == f)
            .map(|p| p.status.clone())
            .unwrap_or_else(|| Status::NotProbed("no result".into()))
    }

    /// The table `up` prints and `doctor` lists: one row per probe.
    pub fn table(&self, kernel: &str) -> String {
        let w = Feature::ALL
            .iter()
            .map(|f| f.name().len())
            .chain(self.ports.iter().map(|p| p.name().len()))
            .max()
            .unwrap_or(0);
        let mut s = format!("kernel features ({kernel}):\n");
        s.push_str(&format!(
            "  {:<w$}  {:<6}  {:<10}  detail\n",
            "feature", "since", "status"
        ));
        for p in &self.features {
            s.push_str(&format!(
                "  {:<w$}  {:<6}  {:<10}  {}\n",
                p.feature.name(),
                p.feature.since(),
                p.status.word(),
                p.status.detail()
            ));
        }
        for p in &self.ports {
            s.push_str(&format!(
                "  {:<w$}  {:<6}  {:<10}  {}\n",
                p.name(),
                "driver",
                p.status.word(),
                p.status.detail()
            ));
        }
        s
    }
}

/// The running kernel's release (`uname -r`).
pub fn kernel_release() -> String {
    crate::doctor::read::kernel_release()
}
