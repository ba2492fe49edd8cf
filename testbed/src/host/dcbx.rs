//! The host's DCBX: an RDMA NIC's LLDP agent. By default a willing NIC
//! (as ConnectX and E810 ship in host-managed IEEE mode): it adopts the
//! switch's PFC vector, ETS recommendation and application table
//! ([`dataplane_common::dcbx::operational`], the same function the
//! switch's tests use) and advertises what it now runs. Told to mismatch
//! ([`DcbxMismatch`]) it does what misconfigured hosts do.
//!
//! It answers a new neighbour and a change of its own configuration at
//! once, and otherwise sends every `tx_interval`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;
use dataplane_common::dcbx::operational;
use dataplane_common::wire::dcbx::{AppEntry, AppTable, Dcbx, EtsConfig, Pfc, SEL_UDP};
use dataplane_common::wire::lldp::{self, Id, Lldpdu, CHASSIS_MAC, PORT_IFNAME};
use dataplane_common::wire::udp::ROCEV2_PORT;

use crate::raw::RawSocket;

/// How a host disagrees with the switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DcbxMismatch {
    /// Not willing, with PFC on these priorities (bit i = priority i) and
    /// its own default ETS: keeps them whatever the switch says.
    NotWilling { pfc_enable: u8 },
    /// Willing, but after adopting it maps RoCE (UDP 4791) to this
    /// priority (a host-side override, e.g. a wrong `mlnx_qos`).
    RocePriority(u8),
}

#[derive(Clone, Debug)]
pub struct DcbxHostCfg {
    pub ifname: String,
    pub mac: [u8; 6],
    pub system_name: String,
    pub tx_interval: Duration,
    pub mismatch: Option<DcbxMismatch>,
}

impl DcbxHostCfg {
    /// A willing NIC on `ifname`.
    pub fn willing(ifname: &str, mac: [u8; 6]) -> DcbxHostCfg {
        DcbxHostCfg {
            ifname: ifname.into(),
            mac,
            system_name: "host".into(),
            tx_interval: Duration::from_secs(30),
            mismatch: None,
        }
    }

    /// The NIC's own (administrative) configuration: PFC off (or the
    /// mismatch's vector), all priorities on TC 0 at 100 %, no app table.
    pub fn admin(&self) -> Dcbx {
        let (willing, enable) = match self.mismatch {
            Some(DcbxMismatch::NotWilling { pfc_enable }) => (false, pfc_enable),
            _ => (true, 0),
        };
        let mut ets = EtsConfig {
            willing,
            cbs: false,
            max_tcs: 8,
            ..EtsConfig::default()
        };
        ets.tables.tc_bw[0] = 100;
        ets.tables.tsa = [dataplane_common::wire::dcbx::TSA_ETS; 8];
        Dcbx {
            pfc: Some(Pfc {
                willing,
                mbc: false,
                cap: 8,
                enable,
            }),
            ets_config: Some(ets),
            ..Dcbx::default()
        }
    }

    /// What the NIC runs after hearing `switch` (from `switch_mac`).
    pub fn operational(&self, switch: &Dcbx, switch_mac: [u8; 6]) -> Dcbx {
        let mut op = operational(&self.admin(), self.mac, switch, switch_mac);
        if let Some(DcbxMismatch::RocePriority(p)) = self.mismatch {
            let mut t = AppTable::default();
            t.push(AppEntry {
                priority: p & 7,
                selector: SEL_UDP,
                protocol: ROCEV2_PORT,
            });
            for e in op.app.iter().flat_map(|a| a.entries().to_vec()) {
                if !(e.selector == SEL_UDP && e.protocol == ROCEV2_PORT) {
                    t.push(e);
                }
            }
            op.app = Some(t);
        }
        op
    }

    fn frame(&self, dcbx: Dcbx, ttl: u16) -> Vec<u8> {
        let du = Lldpdu {
            chassis: Id::new(CHASSIS_MAC, &self.mac),
            port: Id::new(PORT_IFNAME, self.ifname.as_bytes()),
            ttl,
            system_name: Id::new(0, self.system_name.as_bytes()),
            dcbx,
            ..Lldpdu::default()
        };
        let mut buf = [0u8; lldp::MAX_FRAME];
        let n = lldp::encode(&du, self.mac, &mut buf).unwrap_or(0);
        buf[..n].to_vec()
    }
}

/// What the host's agent did.
#[derive(Clone, Debug, Default)]
pub struct DcbxHostReport {
    pub sent: u64,
    pub received: u64,
    /// Frames that did not decode.
    pub malformed: u64,
    /// The last switch LLDPDU.
    pub switch: Option<Lldpdu>,
    /// What the host advertised last.
    pub advertised: Option<Dcbx>,
}

/// Runs the host's LLDP agent until `stop` (in the calling thread's
/// namespace).
pub fn run_dcbx_host(cfg: &DcbxHostCfg, stop: &AtomicBool) -> Result<DcbxHostReport> {
    let sock = RawSocket::open(&cfg.ifname, lldp::ETHERTYPE, true)?;
    let mut r = DcbxHostReport::default();
    let ttl = (cfg.tx_interval.as_secs() * 4).min(65535) as u16;
    let mut current = cfg.admin();
    let mut next = Instant::now();
    let mut buf = vec![0u8; 9216];
    while !stop.load(Ordering::Relaxed) {
        if Instant::now() >= next {
            // a link that is down refuses the frame: the next interval
            // (or the switch's next frame) tries again
            if let Ok(true) = sock.send(&cfg.frame(current, ttl)) {
                r.sent += 1;
                r.advertised = Some(current);
            }
            next = Instant::now() + cfg.tx_interval;
        }
        sock.wait(Duration::from_millis(50).min(next.saturating_duration_since(Instant::now())));
        // a link going down reports ENETDOWN once: nothing to read then
        while let Ok(Some(rx)) = sock.recv(&mut buf) {
            let f = &buf[..rx.len.min(buf.len())];
            if rx.pkttype == libc::PACKET_OUTGOING {
                continue;
            }
            r.received += 1;
            let Ok(du) = lldp::decode(f) else {
                r.malformed += 1;
                continue;
            };
            let peer_mac: [u8; 6] = f[6..12].try_into().unwrap_or_default();
            let op = cfg.operational(&du.dcbx, peer_mac);
            // 802.1AB: a new neighbour is answered at once (fast start)
            let new = r
                .switch
                .is_none_or(|s| s.chassis != du.chassis || s.port != du.port);
            r.switch = Some(du);
            if new {
                next = Instant::now();
            }
            if op != current {
                current = op;
                next = Instant::now();
            }
        }
    }
    Ok(r)
}
