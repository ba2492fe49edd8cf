//! Ready-made scenes shared by tests and the demo.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{anyhow, Result};
use dataplane_common::dcqcn::DcqcnParams;

use crate::controller::{stats_json, Controller};
use crate::host::{run_dcqcn_sender, run_np_receiver, DcqcnSenderReport, NpReport, SenderSpec};
use crate::netns::{veth, Netns};

/// The switch of the DCQCN scene: a 100 Mb/s ingress, a 10 Mb/s egress,
/// WRED marking (no drop) from 20 KB on the lossy RoCE class, routes both
/// ways so CNPs return.
pub fn dcqcn_config(instance: &str) -> String {
    format!(
        r#"
[switch]
name = "{instance}"
[buffer]
pool_size = 4194304
[wred_profile.MARK]
ecn = "ecn_all"
green_min_threshold = 20000
green_max_threshold = 200000
green_drop_probability = 100
wred_green_enable = false
[[port]]
name = "sw-s0"
speed = "100M"
pfc_enable = ""
lossy_wred_profile = "MARK"
[[port]]
name = "sw-r"
speed = "10M"
pfc_enable = ""
lossy_wred_profile = "MARK"
[[nexthop]]
name = "h0"
port = "sw-s0"
mac = "02:00:00:00:20:10"
[[nexthop]]
name = "h1"
port = "sw-r"
mac = "02:00:00:00:20:11"
[[route]]
prefix = "198.18.0.0/24"
nexthop = "h0"
[[route]]
prefix = "198.18.1.0/24"
nexthop = "h1"
"#
    )
}

/// What the DCQCN scene measured.
pub struct DcqcnScene {
    pub receiver: NpReport,
    pub sender: DcqcnSenderReport,
    /// The switch's `stats --json` at the end, and its table.
    pub stats: serde_json::Value,
    pub stats_text: String,
    /// The sender's line rate, bit/s.
    pub line_bps: u64,
}

/// A DCQCN sender at 100 Mb/s into a 10 Mb/s switch egress for `run`: the
/// switch's buffer model marks CE, the receiver (notification point)
/// answers with CNPs, the sender (reaction point) slows down. Namespaces
/// `dpt-<tag>-*`; everything is torn down on return.
pub fn dcqcn_one_switch(
    dataplane: &Path,
    tag: &str,
    instance: &str,
    run: Duration,
) -> Result<DcqcnScene> {
    let sw = Netns::create(&format!("{tag}sw"))?;
    let h0 = Netns::create(&format!("{tag}h0"))?;
    let h1 = Netns::create(&format!("{tag}h1"))?;
    veth(
        &sw,
        "sw-s0",
        "02:00:00:00:20:00",
        &h0,
        "eth0",
        "02:00:00:00:20:10",
    )?;
    veth(
        &sw,
        "sw-r",
        "02:00:00:00:20:01",
        &h1,
        "eth0",
        "02:00:00:00:20:11",
    )?;
    let ctl = Controller::start(dataplane, &sw, instance, &dcqcn_config(instance), "switch")?;
    let line_bps = 100_000_000;
    let params = DcqcnParams::scaled(line_bps);
    let spec = SenderSpec {
        ifname: "eth0".into(),
        src_mac: [2, 0, 0, 0, 0x20, 0x10],
        dst_mac: [2, 0, 0, 0, 0x20, 0x00],
        src_ip: [198, 18, 0, 1],
        dst_ip: [198, 18, 1, 1],
        dscp: 3,
        ecn: 2,
        prio: 3,
        rate_mbps: 100,
        payload: 1024,
        message_pkts: 1,
        dest_qp: 0x1234,
        udp_sport: 49152,
        honour_pfc: false,
    };
    let (receiver, sender) = std::thread::scope(|s| -> Result<_> {
        let np = s.spawn(|| -> Result<_> {
            let _in = h1.enter()?;
            run_np_receiver(
                "eth0",
                [2, 0, 0, 0, 0x20, 0x11],
                [2, 0, 0, 0, 0x20, 0x01],
                [198, 18, 1, 1],
                48,
                params.cnp_interval_ns,
                run + Duration::from_millis(300),
            )
        });
        std::thread::sleep(Duration::from_millis(200));
        let rp = s.spawn(|| -> Result<_> {
            let _in = h0.enter()?;
            run_dcqcn_sender(&spec, &params, run)
        });
        let np = np.join().map_err(|_| anyhow!("receiver panicked"))??;
        let rp = rp.join().map_err(|_| anyhow!("sender panicked"))??;
        Ok((np, rp))
    })?;
    let stats = stats_json(dataplane, &sw.name, instance)?;
    let o = Command::new(dataplane)
        .args(["--netns", &sw.name, "stats", "--instance", instance])
        .output()?;
    let stats_text = String::from_utf8_lossy(&o.stdout).into_owned();
    ctl.stop("switch");
    Ok(DcqcnScene {
        receiver,
        sender,
        stats,
        stats_text,
        line_bps,
    })
}
