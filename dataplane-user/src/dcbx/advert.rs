//! What a port advertises: the plan's `[dcbx]` and the port's own PFC
//! vector and DSCP map as an LLDPDU (pure: plan in, TLVs out).

use dataplane_common::dcbx::{app_table, Local};
use dataplane_common::maps::TRUST_DSCP;
use dataplane_common::wire::dcbx::{Dcbx, EtsConfig, Pfc};
use dataplane_common::wire::lldp::{Id, Lldpdu, CHASSIS_MAC, PORT_IFNAME};
use dataplane_config::{AppDscp, DcbxPlan, PortPlan};

/// PFC-capable traffic classes the data plane supports at once (all 8).
pub const PFC_CAP: u8 = 8;

/// The RoCE priority of a port: the configured one, else its lowest
/// lossless priority (none when it has none).
pub fn roce_priority(d: &DcbxPlan, port: &PortPlan) -> Option<u8> {
    let pfc = port.config.pfc_enable;
    d.roce_priority
        .or_else(|| (pfc != 0).then(|| pfc.trailing_zeros() as u8))
}

/// The DCBX TLVs of a port.
pub fn dcbx(d: &DcbxPlan, port: &PortPlan) -> Dcbx {
    let c = &port.config;
    let mut dscp = [None; 64];
    if c.trust == TRUST_DSCP {
        for (i, &tc) in c.dscp_to_tc.iter().enumerate() {
            let lossless = c.pfc_enable & (1 << (tc & 7)) != 0;
            dscp[i] = match d.app_dscp {
                AppDscp::All => Some(tc),
                AppDscp::Lossless if lossless => Some(tc),
                _ => None,
            };
        }
    }
    Dcbx {
        pfc: Some(Pfc {
            willing: d.willing,
            mbc: false,
            cap: PFC_CAP,
            enable: c.pfc_enable,
        }),
        ets_config: Some(EtsConfig {
            willing: d.willing,
            cbs: false,
            max_tcs: 8,
            tables: d.ets,
        }),
        ets_reco: Some(d.reco),
        app: Some(app_table(roce_priority(d, port), &dscp)),
        ..Dcbx::default()
    }
}

/// What the mismatch check compares the peer with.
pub fn local(d: &DcbxPlan, port: &PortPlan) -> Local {
    let x = dcbx(d, port);
    Local {
        pfc: x.pfc.unwrap_or_default(),
        ets: x.ets_config.unwrap_or_default(),
    }
}

/// The whole LLDPDU of a port: chassis ID = `chassis_mac`, port ID = its
/// interface name, TTL from the plan (0: the shutdown LLDPDU).
pub fn lldpdu(
    d: &DcbxPlan,
    port: &PortPlan,
    chassis_mac: [u8; 6],
    system_name: &str,
    ttl: u16,
) -> Lldpdu {
    Lldpdu {
        chassis: Id::new(CHASSIS_MAC, &chassis_mac),
        port: Id::new(PORT_IFNAME, port.name.as_bytes()),
        ttl,
        system_name: Id::new(0, system_name.as_bytes()),
        dcbx: dcbx(d, port),
        ..Lldpdu::default()
    }
}
