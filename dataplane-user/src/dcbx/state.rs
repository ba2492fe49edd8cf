//! The DCBX state of a running controller, per port: what it advertises,
//! what the peer advertised, the mismatches and the LLDP counters. The
//! agent writes it to `/run/dataplane/<instance>.dcbx.json` after every
//! change; `dataplane show dcbx` and the metrics read it back.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, Result};
use dataplane_common::wire::dcbx::{Dcbx, TSA_CBS, TSA_ETS, TSA_STRICT, TSA_VENDOR};
use serde::{Deserialize, Serialize};

/// One side's DCBX configuration as operators read it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Side {
    /// PFC TLV: willing bit; `None` when no PFC TLV.
    pub pfc_willing: Option<bool>,
    /// Lossless priorities (PFC enable vector), ascending.
    pub pfc_enable: Option<Vec<u8>>,
    pub pfc_cap: Option<u8>,
    /// ETS configuration: willing, priority -> TC, bandwidth %, TSA names.
    pub ets_willing: Option<bool>,
    pub ets_prio_tc: Option<Vec<u8>>,
    pub ets_bandwidth: Option<Vec<u8>>,
    pub ets_tsa: Option<Vec<String>>,
    /// ETS recommendation: bandwidth %, TSA names.
    pub reco_bandwidth: Option<Vec<u8>>,
    pub reco_tsa: Option<Vec<String>>,
    /// Priority of UDP 4791 in the application table.
    pub roce_priority: Option<u8>,
    /// DSCP -> priority entries of the application table.
    pub app_dscp: Option<BTreeMap<u8, u8>>,
}

/// The name of a transmission selection algorithm.
pub fn tsa_name(t: u8) -> String {
    match t {
        TSA_STRICT => "strict".into(),
        TSA_CBS => "cbs".into(),
        TSA_ETS => "ets".into(),
        TSA_VENDOR => "vendor".into(),
        x => format!("reserved({x})"),
    }
}

fn bits(v: u8) -> Vec<u8> {
    (0..8).filter(|i| v & (1 << i) != 0).collect()
}

impl Side {
    /// The readable form of decoded (or advertised) TLVs.
    pub fn of(d: &Dcbx) -> Side {
        use dataplane_common::wire::dcbx::SEL_DSCP;
        let tsa = |t: &[u8; 8]| t.iter().map(|&x| tsa_name(x)).collect::<Vec<_>>();
        Side {
            pfc_willing: d.pfc.map(|p| p.willing),
            pfc_enable: d.pfc.map(|p| bits(p.enable)),
            pfc_cap: d.pfc.map(|p| p.cap),
            ets_willing: d.ets_config.map(|e| e.willing),
            ets_prio_tc: d.ets_config.map(|e| e.tables.prio_tc.to_vec()),
            ets_bandwidth: d.ets_config.map(|e| e.tables.tc_bw.to_vec()),
            ets_tsa: d.ets_config.map(|e| tsa(&e.tables.tsa)),
            reco_bandwidth: d.ets_reco.map(|t| t.tc_bw.to_vec()),
            reco_tsa: d.ets_reco.map(|t| tsa(&t.tsa)),
            roce_priority: d
                .app
                .and_then(|a| a.udp_priority(dataplane_common::wire::udp::ROCEV2_PORT)),
            app_dscp: d.app.map(|a| {
                a.entries()
                    .iter()
                    .filter(|e| e.selector == SEL_DSCP && e.protocol < 64)
                    .map(|e| (e.protocol as u8, e.priority))
                    .collect()
            }),
        }
    }
}

/// The peer of a port (its last valid LLDPDU, until its TTL runs out).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Peer {
    /// Chassis ID (a MAC as aa:bb:.., else the bytes as text).
    pub chassis: String,
    pub port_id: String,
    pub system_name: String,
    pub ttl_s: u16,
    /// Seconds since the last valid LLDPDU, at the time of writing.
    pub age_s: u64,
    pub config: Side,
}

/// LLDP counters of a port (802.1AB's statistics).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    pub tx_frames: u64,
    pub tx_errors: u64,
    pub rx_frames: u64,
    /// Frames discarded whole, by `LldpError` name.
    pub rx_discarded: BTreeMap<String, u64>,
    /// Optional TLVs discarded, by `TlvError` name.
    pub tlv_discarded: BTreeMap<String, u64>,
    pub tlv_unrecognized: u64,
    /// Peers whose TTL ran out.
    pub ageouts: u64,
}

/// One port.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortState {
    pub port: String,
    pub local: Side,
    pub peer: Option<Peer>,
    /// Mismatch field names (`dcbx::Field::name`), empty when in
    /// agreement or without a peer.
    pub mismatches: Vec<String>,
    pub counters: Counters,
}

/// Every DCBX port of an instance.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    pub instance: String,
    pub tx_interval_s: u32,
    pub ports: Vec<PortState>,
}

/// Where a running controller keeps its DCBX state.
pub fn path(instance: &str) -> PathBuf {
    std::path::Path::new(crate::sys::RUN_DIR).join(format!("{instance}.dcbx.json"))
}

impl State {
    /// Writes the state (a new file renamed over the old: readers never
    /// see half of it).
    pub fn save(&self) -> Result<()> {
        let p = path(&self.instance);
        let tmp = p.with_extension("json.tmp");
        std::fs::create_dir_all(crate::sys::RUN_DIR)?;
        std::fs::write(&tmp, serde_json::to_vec_pretty(self)?)?;
        std::fs::rename(&tmp, &p)?;
        Ok(())
    }

    /// The state of a running instance's DCBX agent.
    pub fn load(instance: &str) -> Result<State> {
        let p = path(instance);
        let b = std::fs::read(&p).with_context(|| {
            format!(
                "no DCBX state of instance {instance:?} ({}): is `[dcbx]` configured and the controller running?",
                p.display()
            )
        })?;
        serde_json::from_slice(&b).with_context(|| format!("reading {}", p.display()))
    }
}

/// A chassis or port ID as text: a MAC (subtype 3 port / 4 chassis) as
/// aa:bb:cc:dd:ee:ff, printable bytes as they are, else hex.
pub fn id_text(subtype: u8, b: &[u8], is_chassis: bool) -> String {
    let mac_subtype = if is_chassis { 4 } else { 3 };
    if subtype == mac_subtype && b.len() == 6 {
        return b
            .iter()
            .map(|x| format!("{x:02x}"))
            .collect::<Vec<_>>()
            .join(":");
    }
    if !b.is_empty() && b.iter().all(|c| c.is_ascii_graphic() || *c == b' ') {
        return String::from_utf8_lossy(b).into_owned();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}
