//! The `dataplane` command line: subcommands and their flags (clap).

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};
use dataplane_config::{Config, Plan};

#[derive(Parser)]
#[command(
    name = "dataplane",
    version,
    about = "Lossless RoCEv2 switch data plane (XDP) controller"
)]
pub struct Cli {
    /// Run inside this network namespace (an `ip netns` name). bpffs stays
    /// the host's, so pins are shared with `stats` run the same way.
    #[arg(long, global = true)]
    pub netns: Option<String>,
    /// Controller log level: error, warn, info, debug (debug: every PFC
    /// frame sent).
    #[arg(long, global = true, default_value = "info")]
    pub log_level: String,
    /// Log one JSON object per line (time, level, msg).
    #[arg(long, global = true)]
    pub log_json: bool,
    #[command(subcommand)]
    pub cmd: Cmd,
}

impl Cli {
    /// Parses `args` (with the program's name first), accepting
    /// sonic-utilities' two-letter short flag `-nz` for `--nonzero` (clap's
    /// short flags are one letter: `-nz` would read as `-n -z`).
    pub fn parse_sonic<I: IntoIterator<Item = std::ffi::OsString>>(args: I) -> Cli {
        Cli::parse_from(
            args.into_iter()
                .map(|a| if a == "-nz" { "--nonzero".into() } else { a }),
        )
    }
}

#[derive(Subcommand)]
pub enum Cmd {
    /// Write the man pages (dataplane.1, dataplane-SUBCOMMAND.1) and shell
    /// completions (bash, zsh, fish) into OUT, for packaging.
    #[command(hide = true)]
    GenerateDocs {
        #[arg(long)]
        out: PathBuf,
    },
    /// Validate the config, attach the programs to its ports, load the
    /// tables and run until interrupted (Ctrl-C / SIGTERM detaches).
    Up(Run),
    /// Replace the running controller by this binary without stopping
    /// forwarding: the old controller is stopped (its data plane keeps
    /// running), then this build adopts the pinned data plane and swaps its
    /// programs in atomically on the links, keeping every map.
    Upgrade(Run),
    /// Apply a changed config to the running controller (SIGHUP): validated
    /// first; tables rewritten entry by entry, each entry atomically; an
    /// invalid config or one that changes the ports changes nothing.
    Reload {
        #[arg(short, long)]
        config: PathBuf,
    },
    /// Detach a data plane: its programs leave the ports and its pinned
    /// maps go. The only command that stops forwarding; refused while a
    /// controller runs the instance.
    Down {
        #[command(flatten)]
        which: Instance,
    },
    /// Print the routes a running controller has in the data plane: prefix,
    /// source (static / kernel / connected / neighbour), next hop or group,
    /// members live/down, mode.
    Routes {
        #[command(flatten)]
        which: Instance,
        /// JSON (the controller's listing) instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Print the counters of a running data plane.
    Stats {
        #[command(flatten)]
        which: Instance,
        /// JSON with stable counter names instead of tables.
        #[arg(long)]
        json: bool,
    },
    /// Show a running data plane as SONiC does (sonic-utilities' layouts):
    /// `show interfaces counters [errors|rates|trim]`, `show pfc counters`,
    /// `show queue counters`, `show queue watermark unicast`, `show
    /// priority-group watermark shared|headroom`, `show buffer_pool
    /// watermark`, `show headroom-pool watermark`, `show priority-group drop
    /// counters`, `show ecn`, `show buffer configuration`, `show pfcwd
    /// config|stats`, `show dcbx`, ... (an unknown target lists them all).
    ///
    /// `interfaces counters`: STATE, RX_OK, RX_ERR, RX_OVR (overruns:
    /// rx_over_errors + rx_fifo_errors), TX_OK, TX_ERR, TX_OVR
    /// (tx_fifo_errors) are the port's netdev statistics in the kernel
    /// (IFLA_STATS64, as `ip -s link`); RX_DRP adds to the kernel's
    /// rx_dropped + rx_missed_errors the data plane's drops at that ingress
    /// port (no route, no live member, no neighbour, failed redirect,
    /// watchdog, malformed when the port drops them); TX_DRP adds to
    /// tx_dropped the buffer model's drops on the port's queues; TX_ERR adds
    /// tx_xdp_xmit_err. The rates are the kernel's byte and packet counters
    /// read twice, 1 s apart (`-p SECONDS`: that long, and the counters over
    /// it), where portstat reads COUNTERS_DB's RATES; UTIL is over the
    /// port's configured speed. TRIM*: the data plane's trimming counters.
    Show {
        #[command(flatten)]
        which: Instance,
        /// JSON instead of SONiC's text (`-j` as sonic-utilities). `queue
        /// counters`, `interfaces counters` and the watermarks print
        /// sonic-utilities' JSON; `pfc counters`, `priority-group drop
        /// counters`, `ecn`, `buffer configuration`, `pfcwd` and `dcbx` have
        /// none on SONiC: their JSON is this project's own.
        #[arg(short, long)]
        json: bool,
        /// Also rows whose counters are all zero (`pfcwd stats`, as
        /// sonic-utilities' `pfcwd show stats -e`).
        #[arg(short, long)]
        empty: bool,
        /// Only queues (`queue counters`) or ports (`interfaces counters`)
        /// with a counter other than zero (`-nz` as sonic-utilities is
        /// accepted too).
        #[arg(long)]
        nonzero: bool,
        /// `pfc counters`: the pause history per priority (pfcstat
        /// --history).
        #[arg(long)]
        history: bool,
        /// `interfaces counters [errors|rates|trim]`: the counters over
        /// this many seconds, and the rates over them (portstat -p); the
        /// rates are otherwise taken over one second.
        #[arg(short, long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
        period: Option<u64>,
        /// `interfaces counters`: every column, packet rates and trimming
        /// too (portstat -a).
        #[arg(short = 'a', long)]
        printall: bool,
        /// The target's words, e.g. `pfc counters`.
        #[arg(required = true, num_args = 1..)]
        target: Vec<String>,
    },
    /// Clear what `show` prints, as SONiC's sonic-clear: counters get a
    /// baseline that `show` subtracts (the data plane's counters are never
    /// zeroed, so metrics stay monotonic); watermarks restart their window.
    Clear {
        #[command(flatten)]
        which: Instance,
        /// Delete the saved baseline instead (`pfc counters`, `queue
        /// counters`; as pfcstat -d / queuestat -d): show prints the
        /// counters whole again.
        #[arg(short, long)]
        delete: bool,
        /// The target's words, e.g. `queue watermark unicast`.
        #[arg(required = true, num_args = 1..)]
        target: Vec<String>,
    },
    /// Print drop snapshots (reason, port, RoCEv2 fields) as they happen;
    /// optionally write them to a pcapng file.
    Events {
        #[command(flatten)]
        which: Instance,
        /// Stop after this many events.
        #[arg(long)]
        count: Option<usize>,
        /// Stop after this many seconds.
        #[arg(long)]
        timeout: Option<f64>,
        /// Also write the snapshots to this pcapng file.
        #[arg(long)]
        pcapng: Option<PathBuf>,
        /// Start with the controller events already logged (PFC XOFF/XON
        /// sent, watchdog storms, DCBX peers and mismatches) instead of
        /// only new ones.
        #[arg(long)]
        history: bool,
    },
    /// Refresh the counters in the terminal, with per-second rates.
    Watch {
        #[command(flatten)]
        which: Instance,
        /// Seconds between refreshes.
        #[arg(long, default_value_t = 1.0)]
        interval: f64,
    },
    /// The P4 targets (bmv2, Tofino): table entries from the same config.
    P4 {
        #[command(subcommand)]
        cmd: P4Cmd,
    },
    /// Check this machine before deploying: kernel, BTF, bpffs, and with a
    /// config each port's driver, native XDP, MTU, link, the NIC's own
    /// DCB/PFC settings and queues. One PASS/WARN/FAIL line per check; the
    /// exit status is non-zero when any check fails.
    Doctor {
        #[arg(short, long)]
        config: Option<PathBuf>,
        /// One JSON document instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Install the systemd unit dataplane@.service (rewritten only when it
    /// changed) and, with a config, the drop-in of its instance; then
    /// `systemctl enable --now dataplane@NAME`.
    InstallService {
        /// The config the instance runs (its [switch] name is the instance).
        #[arg(short, long)]
        config: Option<PathBuf>,
        /// The instance (must be the config's [switch] name when both are
        /// given; alone: its config is /etc/dataplane/NAME.toml).
        #[arg(long)]
        instance: Option<String>,
        /// The binary the unit runs (default: this one).
        #[arg(long)]
        exec: Option<PathBuf>,
        /// Install under this root instead of / (packaging, tests).
        #[arg(long, default_value = "/")]
        root: PathBuf,
    },
    /// Configuration commands.
    Config {
        #[command(subcommand)]
        cmd: ConfigCmd,
    },
}

#[derive(Subcommand)]
pub enum P4Cmd {
    /// Write simple_switch_CLI commands (bmv2), P4Runtime entries (JSON) and
    /// a bfrt-python script (Tofino, with PFC/ECN/buffer settings). A
    /// feature the target cannot express is refused, naming the field.
    Entries {
        /// bmv2 or tofino.
        #[arg(long)]
        target: String,
        #[arg(short, long)]
        config: PathBuf,
        /// Output directory.
        #[arg(short, long, default_value = ".")]
        out: PathBuf,
        /// bmv2 counts queue depth in packets: bytes per packet for the
        /// WRED thresholds.
        #[arg(long, default_value_t = 4096)]
        bmv2_packet_bytes: u32,
        /// Tofino traffic-manager cell size (80 on Tofino 1, 176 on Tofino 2).
        #[arg(long, default_value_t = 80)]
        tofino_cell_bytes: u32,
        /// Add the routes the running controller of this config's instance
        /// learned from the kernel (its `dataplane routes` listing).
        #[arg(long)]
        learned: bool,
    },
    /// Read the P4 program's counters from a running switch and show them
    /// as pfcstat does: PFC received/sent per priority, packets per class
    /// in and out, ECN marked, WRED dropped, malformed frames and drops by
    /// reason. bmv2 (simple_switch, over its Thrift port) only.
    Stats {
        /// bmv2 (Tofino: read the program's counters with bfrt_python).
        #[arg(long, default_value = "bmv2")]
        target: String,
        /// The configuration the entries were generated from (port names
        /// and numbers).
        #[arg(short, long)]
        config: PathBuf,
        /// simple_switch's Thrift port.
        #[arg(long, default_value_t = 9090)]
        thrift_port: u16,
        /// One JSON document instead of tables.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
pub enum ConfigCmd {
    /// Validate a config file; prints every error with its field.
    Check {
        #[arg(short, long)]
        config: PathBuf,
        /// Also check that every port's interface exists here.
        #[arg(long)]
        resolve: bool,
    },
    /// Import SONiC's CONFIG_DB (config_db.json): QoS maps, buffers,
    /// WRED, schedulers (as DCBX ETS), PFC watchdog, trimming. Every field
    /// not honoured is reported by table, key and field; on any error
    /// nothing is written.
    ImportSonic {
        /// The config_db.json to read.
        input: PathBuf,
        /// SONiC port -> interface: "Ethernet0=eth1,Ethernet4=eth2" (only
        /// these ports are imported); default: each PORT's alias.
        #[arg(long)]
        ports: Option<String>,
        /// Any field not honoured is an error.
        #[arg(long)]
        strict: bool,
        /// The TOML configuration to write.
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Print the configuration reference (every key with its type,
    /// default, range and SONiC name) as Markdown: the guide's page
    /// docs/src/reference/config.md.
    Reference,
    /// Export a configuration as SONiC CONFIG_DB tables (config_db.json);
    /// what SONiC cannot express is reported.
    ExportSonic {
        /// The TOML configuration (must pass `config check`).
        config: PathBuf,
        /// Where to write the JSON (default: standard output).
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
}

/// What `up` and `upgrade` run with.
#[derive(Args)]
pub struct Run {
    #[arg(short, long)]
    pub config: PathBuf,
    /// Print the counters every N seconds while running.
    #[arg(long)]
    pub stats_interval: Option<u64>,
    /// Prometheus endpoint (GET /metrics); "off" to disable.
    #[arg(long, default_value = "127.0.0.1:9464")]
    pub metrics: String,
    /// Seconds of a periodic watermark window (SONiC's watermark
    /// telemetry interval): the data plane's marks are folded into the
    /// persistent and user windows and the periodic one starts over.
    #[arg(long, default_value_t = dataplane_user::telemetry::watermarks::DEFAULT_INTERVAL_S,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub watermark_interval: u64,
}

#[derive(Args)]
pub struct Instance {
    /// Instance name ([switch] name in the config).
    #[arg(long, conflicts_with = "config")]
    pub instance: Option<String>,
    /// Take the instance name from this config.
    #[arg(short, long)]
    pub config: Option<PathBuf>,
}

impl Instance {
    pub fn name(&self) -> Result<String> {
        if let Some(i) = &self.instance {
            dataplane_config::check_instance_name(i)
                .map_err(|m| anyhow::anyhow!("--instance: {m}"))?;
            return Ok(i.clone());
        }
        if let Some(c) = &self.config {
            let cfg = Config::load(c)?;
            dataplane_config::check_instance_name(&cfg.switch.name)
                .map_err(|m| anyhow::anyhow!("{}: switch.name: {m}", c.display()))?;
            return Ok(cfg.switch.name);
        }
        Ok("default".into())
    }
}

/// Loads and validates a configuration file (every error names its field).
pub fn plan_of(path: &std::path::Path) -> Result<Plan> {
    let source = path.display().to_string();
    let cfg = Config::load(path)?;
    Ok(cfg.validate(&source)?)
}
