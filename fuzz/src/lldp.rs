//! LLDP / 802.1Qaz DCBX frames from a peer: the decoder, the re-encoder
//! and the DCBX decisions on arbitrary bytes.
//!
//! Input: a mode byte, then either a whole frame (mode even) or the
//! optional TLVs after a fixed Ethernet header and valid Chassis ID, Port
//! ID and TTL (mode odd: reaches the DCBX TLVs at once). Asserts: no
//! panic; a decoded LLDPDU re-encodes, and decodes again to the same
//! content with nothing discarded; the mismatch check agrees with the
//! values it compares.

use dataplane_common::dcbx::{mismatches, operational, Field, Local};
use dataplane_common::wire::dcbx::{Dcbx, EtsConfig, EtsTables, Pfc, TSA_ETS};
use dataplane_common::wire::lldp::{self, Id, Lldpdu};
use dataplane_common::wire::udp::ROCEV2_PORT;

const SRC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x42];

pub fn check(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let frame = if mode % 2 == 0 {
        rest.to_vec()
    } else {
        [header().as_slice(), rest].concat()
    };
    let Ok(du) = lldp::decode(&frame) else {
        return;
    };
    // what decodes, re-encodes and decodes the same, nothing discarded
    let mut buf = [0u8; lldp::MAX_FRAME];
    let n = lldp::encode(&du, SRC, &mut buf).expect("a decoded LLDPDU fits a frame");
    let again = lldp::decode(&buf[..n]).expect("an encoded LLDPDU decodes");
    assert_eq!(again.chassis, du.chassis);
    assert_eq!(again.port, du.port);
    assert_eq!(again.ttl, du.ttl);
    assert_eq!(again.system_name, du.system_name);
    assert_eq!(again.dcbx, du.dcbx);
    assert_eq!(again.discarded(), 0);
    assert_eq!(again.unrecognized, 0);
    // the decisions
    let local = local(mode);
    let m = mismatches(&local, &du.dcbx);
    let pfc_differs = du.dcbx.pfc.is_some_and(|p| p.enable != local.pfc.enable);
    assert_eq!(m.contains(Field::PfcEnable), pfc_differs);
    assert_eq!(m.contains(Field::PfcAbsent), du.dcbx.pfc.is_none());
    let roce = du.dcbx.app.and_then(|a| a.udp_priority(ROCEV2_PORT));
    assert_eq!(
        m.contains(Field::RocePriority),
        roce.is_some_and(|p| local.pfc.enable & (1 << p) == 0)
    );
    if m.contains(Field::Willing) {
        assert!(!local.pfc.willing && du.dcbx.pfc.is_some_and(|p| !p.willing));
    }
    // a willing station that adopts takes the peer's vector
    let admin = Dcbx {
        pfc: Some(local.pfc),
        ets_config: Some(local.ets),
        ..Dcbx::default()
    };
    let op = operational(&admin, [0x02, 0, 0, 0, 0, 0xff], &du.dcbx, SRC);
    if let (Some(peer), true) = (du.dcbx.pfc, local.pfc.willing) {
        if !peer.willing {
            assert_eq!(op.pfc.map(|p| p.enable), Some(peer.enable));
        }
    }
}

/// The switch's side, varied by the mode byte.
fn local(mode: u8) -> Local {
    Local {
        pfc: Pfc {
            willing: mode & 2 != 0,
            mbc: false,
            cap: 8,
            enable: mode.rotate_left(3),
        },
        ets: EtsConfig {
            willing: mode & 2 != 0,
            cbs: false,
            max_tcs: 8,
            tables: EtsTables {
                prio_tc: [0, 1, 2, 3, 4, 5, 6, 7],
                tc_bw: [12, 12, 12, 12, 13, 13, 13, 13],
                tsa: [TSA_ETS; 8],
            },
        },
    }
}

/// Ethernet header, Chassis ID, Port ID, TTL.
fn header() -> Vec<u8> {
    let du = Lldpdu {
        chassis: Id::new(lldp::CHASSIS_MAC, &SRC),
        port: Id::new(lldp::PORT_IFNAME, b"eth0"),
        ttl: 120,
        ..Lldpdu::default()
    };
    let mut buf = [0u8; lldp::MAX_FRAME];
    if lldp::encode(&du, SRC, &mut buf).is_none() {
        return Vec::new();
    }
    // without the End TLV and the padding
    buf[..14 + 8 + 7 + 4].to_vec()
}

/// Seeds: whole frames of a switch and of a willing host (mode 0), their
/// optional TLVs alone (mode 1), and truncated copies.
pub fn seed_frames() -> Vec<(String, Vec<u8>)> {
    use dataplane_common::wire::dcbx::{AppEntry, AppTable, SEL_DSCP, SEL_UDP};
    let mut app = AppTable::default();
    app.push(AppEntry {
        priority: 3,
        selector: SEL_UDP,
        protocol: ROCEV2_PORT,
    });
    app.push(AppEntry {
        priority: 3,
        selector: SEL_DSCP,
        protocol: 26,
    });
    let l = local(0x03);
    let mut out = Vec::new();
    for (name, willing) in [("switch", false), ("host", true)] {
        let du = Lldpdu {
            chassis: Id::new(lldp::CHASSIS_MAC, &SRC),
            port: Id::new(lldp::PORT_IFNAME, b"eth0"),
            ttl: 120,
            system_name: Id::new(0, b"sw1"),
            dcbx: Dcbx {
                pfc: Some(Pfc { willing, ..l.pfc }),
                ets_config: Some(EtsConfig { willing, ..l.ets }),
                ets_reco: Some(l.ets.tables),
                app: Some(app),
                ..Dcbx::default()
            },
            ..Lldpdu::default()
        };
        let mut buf = [0u8; lldp::MAX_FRAME];
        let n = lldp::encode(&du, SRC, &mut buf).unwrap_or(0);
        let f = &buf[..n];
        out.push((format!("{name}-frame"), [&[0u8][..], f].concat()));
        out.push((
            format!("{name}-tlvs"),
            [&[1u8][..], &f[14 + 8 + 7 + 4..]].concat(),
        ));
        out.push((format!("{name}-cut"), [&[0u8][..], &f[..n / 2]].concat()));
    }
    out
}
