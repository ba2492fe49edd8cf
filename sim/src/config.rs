//! Run configuration: the scenario (a TOML file or the command line) and
//! its parsed, checked form. Every bad value is refused with its field and
//! what was expected.

use anyhow::{bail, Context, Result};
use dataplane_common::lb::{
    DEFAULT_FLOWLET_TIMEOUT_NS, MODE_BANDWIDTH, MODE_FLOWLET, MODE_HASH, MODE_PLACE, MODE_SPRAY,
};
use serde::{Deserialize, Serialize};

/// A scenario as written (TOML keys = long option names).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Scenario {
    /// `leafspine:LxS[:H]`, `clos3:K`, `rail:SERVERS[:SPINES]`.
    pub topology: String,
    /// Every link: `100G`, `200G`, `400G`, `800G` (or any `<n>G` / `<n>M`).
    pub speed: String,
    /// Host links (NIC to leaf); empty: `speed`.
    pub host_speed: String,
    /// Propagation delay of every link (`1us`).
    pub link_delay: String,
    /// RDMA payload bytes per packet.
    pub mtu: u32,
    /// Buffer of each switch (`32MB`): headroom, reserves and shared pool.
    pub buffer: String,
    /// Shared pool of each switch; empty: the buffer less every PG's
    /// headroom (set it to compare with a fabric configured by pool).
    pub pool: String,
    /// Headroom (XOFF) per lossless PG; empty: SONiC's formula for the
    /// link's speed and cable length.
    pub headroom: String,
    /// `dynamic_th` of the RoCE PGs (XOFF above 2^th x the free pool).
    pub dynamic_th: i8,
    /// `dynamic_th` of the RoCE PGs when PFC is off (drop above it).
    pub lossy_dynamic_th: i8,
    /// PFC on the RoCE class (lossless) or off (lossy: drops).
    pub pfc: bool,
    /// ECN marking on the RoCE class.
    pub ecn: bool,
    /// Congestion control: `dcqcn` (paper), `mlx` (HPCC/NVIDIA) or `none`.
    pub cc: String,
    /// `dcqcn` / `mlx`: `DcqcnParams::scaled` / `mlx_scaled` to the host
    /// rate (the testbed's time-dilated 100G NIC) instead of real-time
    /// `DcqcnParams::new` / `mlx`.
    pub dcqcn_scaled: bool,
    /// Load balancing of the switches: `hash`, `flowlet`, `bandwidth`,
    /// `spray`, or a comma list (one run each).
    pub lb: String,
    pub flowlet_timeout: String,
    /// `websearch`, `hadoop`, `allreduce`, `halving-doubling`, `alltoall`,
    /// `incast`, `permutation`, `pairs` (host i to the same slot on the
    /// next leaf, as the testbed's permutation / elephants).
    pub workload: String,
    /// Offered load of the Poisson workloads (fraction of host line rate).
    pub load: f64,
    /// Message size of the collectives, incast and permutation (`16MB`).
    pub size: String,
    /// Senders of an incast.
    pub fanin: u32,
    /// Every flow uses this one UDP source port (0: one per QP, as NICs
    /// pick them): the low-entropy elephants of the testbed.
    pub single_sport: u16,
    /// Hosts taking part in a collective (0: all).
    pub ranks: u32,
    /// Poisson flows arrive during this time; the run stops then unless
    /// `drain`.
    pub duration: String,
    /// Run until every flow completed (at most `max_time`).
    pub drain: bool,
    pub max_time: String,
    pub seed: u64,
    /// ECN thresholds; empty: the HPCC simulator's 100 KB / 400 KB / 20 %
    /// per 25 Gb/s of link speed.
    pub kmin: String,
    pub kmax: String,
    pub pmax: u8,
    /// Receiver ACK every this many packets (and at a message's end).
    pub ack_every: u32,
    /// Receiver ACK of what it holds unacknowledged after this idle time
    /// (the testbed emulator's 1 ms; empty or 0: none).
    pub ack_delay: String,
    /// Packets a QP may have unacknowledged (0: no limit).
    pub window: u32,
    /// Retransmission timeout (no ACK progress with data outstanding).
    pub rto: String,
    /// Samples of the queue time series.
    pub samples: u32,
    /// Time from a flow's completion to the start of a collective step
    /// waiting for it (the NIC and GPU noticing; empty or 0: at once). A
    /// partitioned run needs at least the link delay when a step waits
    /// for a flow received in another partition.
    pub dep_delay: String,
    /// Partitions the fabric is cut into to run in parallel (1: the serial
    /// run). The result depends on this count (events at the same
    /// nanosecond in different partitions run in another order), never on
    /// the threads that run them (`dataplane-sim --threads`).
    pub partitions: u32,
    /// The NICs' receivers: `rc` (RC go-back-N: only the expected PSN is
    /// accepted, a gap is NAKed; the default) or `ooo` (out-of-order
    /// placement: every packet is placed where it belongs, as RoCE NICs
    /// with direct data placement and UET's PDS do; no NAK on a gap).
    pub receiver: String,
    /// Keep the load balancer's trace (every placement, move and NAK),
    /// written as `lb_trace_<mode>.csv` beside report.json.
    pub trace_lb: bool,
    /// Place mode's far view, a study of the simulator (empty: off):
    /// `oracle:DELAY` (a leaf adds to each uplink's place key the time
    /// the next switch's port toward the destination needs to send its
    /// lossless queue, as read at most DELAY ago; `oracle:0ns` at every
    /// choice) or `notify` (what a data plane could send: a switch whose
    /// queue reached the ECN threshold tells the switch upstream; see
    /// `sim/src/switch/far.rs`). Needs one partition.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub far_view: String,
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario {
            topology: "leafspine:4x2:4".into(),
            speed: "400G".into(),
            host_speed: String::new(),
            link_delay: "1us".into(),
            mtu: 4096,
            buffer: "32MB".into(),
            pool: String::new(),
            headroom: String::new(),
            dynamic_th: -3,
            lossy_dynamic_th: 0,
            pfc: true,
            ecn: true,
            cc: "dcqcn".into(),
            dcqcn_scaled: false,
            lb: "hash".into(),
            flowlet_timeout: format!("{}ns", DEFAULT_FLOWLET_TIMEOUT_NS),
            workload: "websearch".into(),
            load: 0.5,
            size: "1MB".into(),
            fanin: 8,
            single_sport: 0,
            ranks: 0,
            duration: "1ms".into(),
            drain: false,
            max_time: "1s".into(),
            seed: 1,
            kmin: String::new(),
            kmax: String::new(),
            pmax: 20,
            ack_every: 16,
            ack_delay: String::new(),
            window: 0,
            rto: "1ms".into(),
            samples: 200,
            dep_delay: String::new(),
            partitions: 1,
            receiver: "rc".into(),
            trace_lb: false,
            far_view: String::new(),
        }
    }
}

/// Congestion control of the hosts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Cc {
    /// No reaction to CNPs (line rate).
    None,
    /// `DcqcnParams::new` (the paper).
    Dcqcn,
    /// `DcqcnParams::mlx` (HPCC simulator's Mlx mode / NVIDIA).
    Mlx,
}

/// What traffic runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Workload {
    WebSearch,
    Hadoop,
    AllReduce,
    HalvingDoubling,
    AllToAll,
    Incast,
    Permutation,
    Pairs,
}

impl Workload {
    pub fn is_poisson(self) -> bool {
        matches!(self, Workload::WebSearch | Workload::Hadoop)
    }
}

/// The checked numbers of a run (one LB mode).
#[derive(Clone, Debug, Serialize)]
pub struct Params {
    pub topology: String,
    pub speed_mbps: u32,
    pub host_speed_mbps: u32,
    pub link_delay_ns: u64,
    pub mtu: u32,
    pub buffer_bytes: u64,
    /// 0: SONiC's formula.
    pub headroom_bytes: u32,
    /// 0: buffer less headroom.
    pub pool_bytes: u32,
    pub dynamic_th: i8,
    pub lossy_dynamic_th: i8,
    pub pfc: bool,
    pub ecn: bool,
    pub cc: Cc,
    pub dcqcn_scaled: bool,
    pub lb_mode: u8,
    pub lb_name: String,
    pub flowlet_timeout_ns: u32,
    pub workload: Workload,
    pub load: f64,
    pub size_bytes: u64,
    pub fanin: u32,
    pub single_sport: u16,
    pub ranks: u32,
    pub duration_ns: u64,
    pub drain: bool,
    pub max_time_ns: u64,
    pub seed: u64,
    pub kmin: u32,
    pub kmax: u32,
    pub pmax: u8,
    pub ack_every: u32,
    /// 0: no delayed ACK.
    pub ack_delay_ns: u64,
    pub window: u32,
    pub rto_ns: u64,
    pub samples: u32,
    /// 0: a step starts when the flow it waits for completes.
    pub dep_delay_ns: u64,
    /// 1: the serial run; more: [`crate::partition`].
    pub partitions: u32,
    /// Out-of-order placement at the receivers (`receiver = "ooo"`).
    pub ooo_receiver: bool,
    pub trace_lb: bool,
    /// [`Scenario::far_view`].
    pub far_view: FarMode,
}

/// `400G`, `25G`, `100M` -> Mb/s.
pub fn parse_speed(field: &str, s: &str) -> Result<u32> {
    let t = s.trim();
    let (num, mul) = if let Some(n) = t.strip_suffix(['G', 'g']) {
        (n, 1000.0)
    } else if let Some(n) = t.strip_suffix(['M', 'm']) {
        (n, 1.0)
    } else {
        bail!("{field}: {s:?} is not a speed (expected e.g. 400G or 100M)");
    };
    let v: f64 = num
        .parse()
        .with_context(|| format!("{field}: {s:?} is not a speed (expected e.g. 400G)"))?;
    let mbps = v * mul;
    if !(1.0..=1_600_000.0).contains(&mbps) {
        bail!("{field}: {s:?} out of range (1M..1600G)");
    }
    Ok(mbps as u32)
}

/// `10ms`, `1us`, `500ns`, `2s` -> ns.
pub fn parse_time(field: &str, s: &str) -> Result<u64> {
    let t = s.trim();
    let units = [("ns", 1.0), ("us", 1e3), ("ms", 1e6), ("s", 1e9)];
    for (u, m) in units {
        if let Some(n) = t.strip_suffix(u) {
            if let Ok(v) = n.trim().parse::<f64>() {
                if v >= 0.0 && v * m < 1e18 {
                    return Ok((v * m).round() as u64);
                }
            }
            break;
        }
    }
    bail!("{field}: {s:?} is not a time (expected e.g. 10ms, 1us, 500ns)")
}

/// `32MB`, `100KB`, `4096`, `1GB` -> bytes (KB = 1000, KiB = 1024).
pub fn parse_bytes(field: &str, s: &str) -> Result<u64> {
    let t = s.trim();
    let units = [
        ("KiB", 1024.0),
        ("MiB", 1024.0 * 1024.0),
        ("GiB", 1024.0 * 1024.0 * 1024.0),
        ("KB", 1e3),
        ("MB", 1e6),
        ("GB", 1e9),
        ("B", 1.0),
        ("", 1.0),
    ];
    for (u, m) in units {
        if let Some(n) = t.strip_suffix(u) {
            if let Ok(v) = n.trim().parse::<f64>() {
                if v >= 0.0 && v * m < 1e15 {
                    return Ok((v * m).round() as u64);
                }
            }
            if !u.is_empty() {
                break;
            }
        }
    }
    bail!("{field}: {s:?} is not a size (expected e.g. 32MB, 100KB, 4096)")
}

/// The buffer size for a range check (0 if it does not parse; the
/// buffer's own check reports that).
fn buffer_bytes_hint(s: &str) -> u64 {
    parse_bytes("buffer", s).unwrap_or(u64::MAX)
}

/// An LB mode by name.
pub fn lb_mode(name: &str) -> Result<u8> {
    Ok(match name.trim() {
        "hash" | "ecmp" => MODE_HASH,
        "flowlet" | "letflow" => MODE_FLOWLET,
        "bandwidth" | "conga" => MODE_BANDWIDTH,
        "spray" => MODE_SPRAY,
        "place" => MODE_PLACE,
        o => bail!("lb: unknown mode {o:?} (expected hash, flowlet, bandwidth, spray or place)"),
    })
}

impl Scenario {
    /// The LB modes listed in `lb`.
    pub fn lb_modes(&self) -> Result<Vec<String>> {
        let v: Vec<String> = self
            .lb
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        if v.is_empty() {
            bail!("lb: empty (expected e.g. hash,flowlet,bandwidth)");
        }
        for m in &v {
            lb_mode(m)?;
        }
        Ok(v)
    }

    /// Checks everything and returns the numbers of the run with LB mode
    /// `lb`.
    pub fn params(&self, lb: &str) -> Result<Params> {
        let speed_mbps = parse_speed("speed", &self.speed)?;
        let host_speed_mbps = if self.host_speed.is_empty() {
            speed_mbps
        } else {
            parse_speed("host_speed", &self.host_speed)?
        };
        let link_delay_ns = parse_time("link_delay", &self.link_delay)?;
        let headroom_bytes = if self.headroom.is_empty() {
            0
        } else {
            let h = parse_bytes("headroom", &self.headroom)?;
            if h == 0 || h >= buffer_bytes_hint(&self.buffer) {
                bail!("headroom: {h} bytes out of range (above 0, below the buffer)");
            }
            h as u32
        };
        for (f, v) in [
            ("dynamic_th", self.dynamic_th),
            ("lossy_dynamic_th", self.lossy_dynamic_th),
        ] {
            if !(-8..=7).contains(&v) {
                bail!("{f}: {v} out of range (-8..=7)");
            }
        }
        if !(64..=9000).contains(&self.mtu) {
            bail!("mtu: {} out of range (64..=9000 payload bytes)", self.mtu);
        }
        let buffer_bytes = parse_bytes("buffer", &self.buffer)?;
        if !(64_000..=u32::MAX as u64).contains(&buffer_bytes) {
            bail!("buffer: {} bytes out of range (64KB..4GB)", buffer_bytes);
        }
        let cc = match self.cc.trim() {
            "none" | "off" => Cc::None,
            "dcqcn" | "paper" => Cc::Dcqcn,
            "mlx" | "hpcc" | "nvidia" => Cc::Mlx,
            o => bail!("cc: unknown {o:?} (expected dcqcn, mlx or none)"),
        };
        let workload = match self.workload.trim() {
            "websearch" | "web-search" => Workload::WebSearch,
            "hadoop" => Workload::Hadoop,
            "allreduce" | "ring-allreduce" => Workload::AllReduce,
            "halving-doubling" | "hd" => Workload::HalvingDoubling,
            "alltoall" | "all-to-all" => Workload::AllToAll,
            "incast" => Workload::Incast,
            "permutation" => Workload::Permutation,
            "pairs" | "elephants" => Workload::Pairs,
            o => bail!(
                "workload: unknown {o:?} (expected websearch, hadoop, allreduce, \
                 halving-doubling, alltoall, incast, permutation or pairs)"
            ),
        };
        if workload.is_poisson() && !(self.load > 0.0 && self.load <= 1.0) {
            bail!("load: {} out of range (0 < load <= 1)", self.load);
        }
        let size_bytes = parse_bytes("size", &self.size)?;
        if size_bytes == 0 {
            bail!("size: must be above 0");
        }
        let duration_ns = parse_time("duration", &self.duration)?;
        if duration_ns == 0 {
            bail!("duration: must be above 0");
        }
        let max_time_ns = parse_time("max_time", &self.max_time)?;
        if max_time_ns < duration_ns {
            bail!(
                "max_time: {} below duration {}",
                self.max_time,
                self.duration
            );
        }
        let per25 = |b: u64| (b * speed_mbps as u64 / 25_000).max(1);
        let kmin = if self.kmin.is_empty() {
            per25(100_000)
        } else {
            parse_bytes("kmin", &self.kmin)?
        };
        let kmax = if self.kmax.is_empty() {
            per25(400_000)
        } else {
            parse_bytes("kmax", &self.kmax)?
        };
        if kmin > kmax || kmax > u32::MAX as u64 {
            bail!("kmin/kmax: {kmin} > {kmax} or above 4 GB");
        }
        if self.pmax > 100 {
            bail!("pmax: {} above 100 (percent)", self.pmax);
        }
        if self.ack_every == 0 {
            bail!("ack_every: must be at least 1");
        }
        let flowlet_timeout_ns = parse_time("flowlet_timeout", &self.flowlet_timeout)?;
        if flowlet_timeout_ns == 0 || flowlet_timeout_ns > u32::MAX as u64 {
            bail!("flowlet_timeout: out of range (1ns..4s)");
        }
        Ok(Params {
            topology: self.topology.clone(),
            speed_mbps,
            host_speed_mbps,
            link_delay_ns,
            mtu: self.mtu,
            buffer_bytes,
            headroom_bytes,
            pool_bytes: if self.pool.is_empty() {
                0
            } else {
                let v = parse_bytes("pool", &self.pool)?;
                if v == 0 || v > u64::from(u32::MAX) {
                    bail!("pool: {v} bytes out of range (1..4GB)");
                }
                v as u32
            },
            dynamic_th: self.dynamic_th,
            lossy_dynamic_th: self.lossy_dynamic_th,
            pfc: self.pfc,
            ecn: self.ecn,
            cc,
            dcqcn_scaled: self.dcqcn_scaled,
            lb_mode: lb_mode(lb)?,
            lb_name: lb.to_string(),
            flowlet_timeout_ns: flowlet_timeout_ns as u32,
            workload,
            load: self.load,
            size_bytes,
            fanin: self.fanin,
            single_sport: self.single_sport,
            ranks: self.ranks,
            duration_ns,
            drain: self.drain || !workload.is_poisson(),
            max_time_ns,
            seed: self.seed,
            kmin: kmin as u32,
            kmax: kmax as u32,
            pmax: self.pmax,
            ack_every: self.ack_every,
            ack_delay_ns: if self.ack_delay.is_empty() {
                0
            } else {
                parse_time("ack_delay", &self.ack_delay)?
            },
            window: self.window,
            rto_ns: parse_time("rto", &self.rto)?,
            samples: self.samples.max(1),
            dep_delay_ns: if self.dep_delay.is_empty() {
                0
            } else {
                parse_time("dep_delay", &self.dep_delay)?
            },
            partitions: if self.partitions == 0 {
                bail!("partitions: 0 (expected 1 for a serial run, or more)")
            } else {
                self.partitions
            },
            ooo_receiver: match self.receiver.trim() {
                "rc" | "go-back-n" | "" => false,
                "ooo" | "ddp" => true,
                o => bail!("receiver: unknown {o:?} (expected rc or ooo)"),
            },
            trace_lb: self.trace_lb,
            far_view: FarMode::parse(&self.far_view, self.partitions)?,
        })
    }
}

/// Which far view a run has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum FarMode {
    Off,
    /// Every switch's queues, read every this many ns.
    Oracle {
        every_ns: u64,
    },
    /// Notifications from the switch downstream.
    Notify,
}

impl FarMode {
    /// Parses `far_view` (`""`/`off`, `oracle:DELAY`, `notify`).
    pub fn parse(v: &str, partitions: u32) -> Result<FarMode> {
        let t = v.trim();
        let mode = match t {
            "" | "off" => return Ok(FarMode::Off),
            "notify" => FarMode::Notify,
            _ => match t.strip_prefix("oracle:") {
                Some(d) => FarMode::Oracle {
                    every_ns: parse_time("far_view", d)?,
                },
                None => bail!(
                    "far_view: {t:?} (expected off, notify or oracle:DELAY, e.g. oracle:100us)"
                ),
            },
        };
        if partitions > 1 {
            bail!("far_view: needs partitions = 1 (it reads every switch; got {partitions})");
        }
        Ok(mode)
    }
}
