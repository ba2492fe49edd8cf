//! LLDP / 802.1Qaz DCBX codec at every TLV boundary, and the DCBX
//! decisions (mismatch, what a willing station adopts).

use dataplane_common::dcbx::{self, Field, Local};
use dataplane_common::maps::PortConfig;
use dataplane_common::parse::parse;
use dataplane_common::route::{pre_route, NotRouted};
use dataplane_common::verdict::{decide, Action};
use dataplane_common::wire::dcbx::*;
use dataplane_common::wire::lldp::{self, Id, LldpError, Lldpdu};

const SRC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x11];

/// The switch's advertisement: not willing, PFC on 3 and 4, ETS over 8
/// TCs, RoCE on 3 and two DSCPs.
fn switch_du() -> Lldpdu {
    let tables = EtsTables {
        prio_tc: [0, 1, 2, 3, 4, 5, 6, 7],
        tc_bw: [12, 12, 12, 13, 13, 13, 12, 13],
        tsa: [TSA_ETS; 8],
    };
    let mut dscp = [None; 64];
    dscp[26] = Some(3);
    dscp[48] = Some(6);
    Lldpdu {
        chassis: Id::new(lldp::CHASSIS_MAC, &SRC),
        port: Id::new(lldp::PORT_IFNAME, b"eth1"),
        ttl: 120,
        system_name: Id::new(0, b"sw1"),
        dcbx: Dcbx {
            pfc: Some(Pfc {
                willing: false,
                mbc: false,
                cap: 8,
                enable: 0x18,
            }),
            ets_config: Some(EtsConfig {
                willing: false,
                cbs: false,
                max_tcs: 8,
                tables,
            }),
            ets_reco: Some(tables),
            app: Some(dcbx::app_table(Some(3), &dscp)),
            ..Dcbx::default()
        },
        ..Lldpdu::default()
    }
}

fn encode(du: &Lldpdu) -> Vec<u8> {
    let mut buf = [0u8; lldp::MAX_FRAME];
    let n = lldp::encode(du, SRC, &mut buf).expect("fits");
    buf[..n].to_vec()
}

/// A frame of raw TLVs (type, value) after the three mandatory ones,
/// without End or padding.
fn raw_frame(tlvs: &[(u8, Vec<u8>)]) -> Vec<u8> {
    let mut f = lldp::DST_MAC.to_vec();
    f.extend_from_slice(&SRC);
    f.extend_from_slice(&lldp::ETHERTYPE.to_be_bytes());
    let mut all = vec![
        (lldp::TLV_CHASSIS_ID, [&[4u8][..], &SRC].concat()),
        (lldp::TLV_PORT_ID, b"\x05eth1".to_vec()),
        (lldp::TLV_TTL, vec![0, 120]),
    ];
    all.extend_from_slice(tlvs);
    for (kind, v) in all {
        f.extend_from_slice(&((u16::from(kind) << 9) | v.len() as u16).to_be_bytes());
        f.extend_from_slice(&v);
    }
    f
}

fn org(sub: u8, body: &[u8]) -> (u8, Vec<u8>) {
    (lldp::TLV_ORG, [&OUI_8021[..], &[sub], body].concat())
}

mod codec {
    use super::*;

    #[test]
    fn round_trip_of_the_switch_advertisement() {
        let du = switch_du();
        let f = encode(&du);
        assert!(f.len() >= lldp::MIN_FRAME);
        assert_eq!(&f[..6], &lldp::DST_MAC);
        assert_eq!(&f[12..14], &[0x88, 0xcc]);
        let back = lldp::decode(&f).expect("decodes");
        assert_eq!(back, du);
        assert_eq!(back.dcbx.app.unwrap().udp_priority(4791), Some(3));
    }

    /// Bytes as 802.1Qaz lays them out (checked by hand against the
    /// standard's figures: W is the top bit, priority 0 the high nibble).
    #[test]
    fn known_bytes_of_each_tlv() {
        let f = encode(&switch_du());
        let find = |sub: u8| -> Vec<u8> {
            let i = f
                .windows(4)
                .position(|w| w == [0x00, 0x80, 0xc2, sub])
                .expect("TLV present");
            let h = u16::from_be_bytes([f[i - 2], f[i - 1]]);
            f[i - 2..i + usize::from(h & 0x1ff)].to_vec()
        };
        assert_eq!(
            find(SUB_PFC),
            [0xfe, 0x06, 0x00, 0x80, 0xc2, 0x0b, 0x08, 0x18]
        );
        let ets = find(SUB_ETS_CONFIG);
        assert_eq!(&ets[..7], &[0xfe, 0x19, 0x00, 0x80, 0xc2, 0x09, 0x00]);
        assert_eq!(&ets[7..11], &[0x01, 0x23, 0x45, 0x67]);
        assert_eq!(&ets[11..19], &[12, 12, 12, 13, 13, 13, 12, 13]);
        assert_eq!(&ets[19..27], &[2; 8]);
        let app = find(SUB_APP);
        assert_eq!(app[1], 5 + 3 * 3);
        // 4791 on priority 3, selector UDP; DSCP 26 -> 3; DSCP 48 -> 6
        assert_eq!(
            &app[7..],
            &[0x63, 0x12, 0xb7, 0x65, 0x00, 26, 0xc5, 0x00, 48]
        );
    }

    /// Cut after every byte: never a panic; a cut inside a header or a
    /// value discards the frame with the error of that boundary, a cut on
    /// a boundary after the TTL keeps the TLVs before it.
    #[test]
    fn truncated_at_every_byte() {
        let du = switch_du();
        let full = encode(&du);
        // TLV starts (the End TLV's included)
        let mut starts = Vec::new();
        let mut off = 14;
        loop {
            starts.push(off);
            let h = u16::from_be_bytes([full[off], full[off + 1]]);
            if h == 0 {
                break;
            }
            off += 2 + usize::from(h & 0x1ff);
        }
        let end = *starts.last().unwrap();
        for cut in 0..=end {
            let r = lldp::decode(&full[..cut]);
            if cut < 14 {
                assert_eq!(r, Err(LldpError::NotLldp), "cut {cut}");
                continue;
            }
            let i = starts.iter().rposition(|&s| s <= cut).unwrap();
            let at = cut - starts[i];
            if i < 3 && at == 0 {
                let want = [
                    LldpError::TlvHeaderTruncated,
                    LldpError::TlvHeaderTruncated,
                    LldpError::TlvHeaderTruncated,
                ][i];
                assert_eq!(r, Err(want), "cut {cut} at the start of mandatory TLV {i}");
            } else if at == 0 {
                let got = r.unwrap_or_else(|e| panic!("cut {cut} on a boundary: {e:?}"));
                assert_eq!(got.chassis, du.chassis);
                assert_eq!(got.discarded(), 0);
            } else if at == 1 {
                assert_eq!(r, Err(LldpError::TlvHeaderTruncated), "cut {cut}");
            } else {
                assert_eq!(r, Err(LldpError::TlvBeyondFrame), "cut {cut}");
            }
        }
    }

    #[test]
    fn mandatory_tlvs_missing_or_malformed_discard_the_frame() {
        let mut f = raw_frame(&[]);
        // chassis ID of length 1 (subtype only)
        let mut g = f.clone();
        g.splice(14..23, [0x02, 0x01, 0x04]);
        assert_eq!(lldp::decode(&g), Err(LldpError::BadChassisId));
        // port ID first
        let port_first = [&f[..14], &f[23..]].concat();
        assert_eq!(lldp::decode(&port_first), Err(LldpError::NoChassisId));
        // TTL of 1 byte: the last TLV of the frame
        let n = f.len();
        f.truncate(n - 4);
        let mut h = f.clone();
        h.extend_from_slice(&[0x06, 0x01, 120]);
        assert_eq!(lldp::decode(&h), Err(LldpError::BadTtl));
        // no TTL: an End right after the port ID
        let mut e = f.clone();
        e.extend_from_slice(&[0, 0]);
        assert_eq!(lldp::decode(&e), Err(LldpError::NoTtl));
        // port ID of length 0
        let mut p = f[..23].to_vec();
        p.extend_from_slice(&[0x04, 0x00]);
        assert_eq!(lldp::decode(&p), Err(LldpError::BadPortId));
        // not LLDP
        let mut x = raw_frame(&[]);
        x[13] = 0xcd;
        assert_eq!(lldp::decode(&x), Err(LldpError::NotLldp));
    }

    /// Each DCBX TLV one byte short and one byte long: that TLV alone is
    /// discarded and counted; the others still count.
    #[test]
    fn bad_lengths_discard_only_that_tlv() {
        let pfc = vec![0x08, 0x18];
        let ets = [&[0x08][..], &[0x01, 0x23, 0x45, 0x67], &[12; 8], &[2; 8]].concat();
        let app = vec![0, 0x63, 0x12, 0xb7];
        let cases: [(u8, &Vec<u8>, TlvError); 4] = [
            (SUB_PFC, &pfc, TlvError::PfcBadLen),
            (SUB_ETS_CONFIG, &ets, TlvError::EtsConfigBadLen),
            (SUB_ETS_RECO, &ets, TlvError::EtsRecoBadLen),
            (SUB_APP, &app, TlvError::AppBadLen),
        ];
        for (sub, body, want) in cases {
            for delta in [-1i32, 1, 2] {
                let mut b = body.clone();
                if delta < 0 {
                    b.pop();
                } else {
                    b.extend(std::iter::repeat_n(0, delta as usize));
                }
                let others: Vec<_> = cases
                    .iter()
                    .filter(|c| c.0 != sub)
                    .map(|c| org(c.0, c.1))
                    .collect();
                let mut tlvs = vec![org(sub, &b)];
                tlvs.extend(others);
                let du = lldp::decode(&raw_frame(&tlvs)).expect("the frame stays");
                assert_eq!(du.tlv_errors[want as usize], 1, "{want:?} delta {delta}");
                assert_eq!(du.discarded(), 1, "{want:?} delta {delta}");
                let present = [
                    du.dcbx.pfc.is_some(),
                    du.dcbx.ets_config.is_some(),
                    du.dcbx.ets_reco.is_some(),
                    du.dcbx.app.is_some(),
                ];
                let idx = [SUB_PFC, SUB_ETS_CONFIG, SUB_ETS_RECO, SUB_APP]
                    .iter()
                    .position(|&s| s == sub)
                    .unwrap();
                for (i, p) in present.iter().enumerate() {
                    assert_eq!(*p, i != idx, "{want:?} delta {delta}: TLV {i}");
                }
            }
        }
        // an org TLV of 3 bytes (no subtype)
        let du = lldp::decode(&raw_frame(&[(127, vec![0x00, 0x80, 0xc2])])).unwrap();
        assert_eq!(du.tlv_errors[TlvError::OrgTooShort as usize], 1);
        // the empty application table is valid (length 5)
        let du = lldp::decode(&raw_frame(&[org(SUB_APP, &[0])])).unwrap();
        assert_eq!(du.dcbx.app.unwrap().entries().len(), 0);
    }

    #[test]
    fn unknown_oui_subtype_and_type_are_skipped_and_counted() {
        let tlvs = vec![
            (
                127,
                vec![0x00, 0x12, 0x0f, 0x01, 0x03, 0x6c, 0x00, 0x00, 0x10],
            ),
            org(0x0d, &[1, 2, 3]),
            org(0x08, &[]),
            (42, vec![1, 2, 3]),
            org(SUB_PFC, &[0x88, 0x08]),
        ];
        let du = lldp::decode(&raw_frame(&tlvs)).unwrap();
        assert_eq!(du.unrecognized, 4);
        assert_eq!(du.discarded(), 0);
        let p = du.dcbx.pfc.unwrap();
        assert!(p.willing);
        assert_eq!((p.cap, p.enable), (8, 0x08));
    }

    #[test]
    fn duplicates_discard_every_tlv_of_the_kind() {
        let tlvs = vec![
            org(SUB_PFC, &[0x08, 0x18]),
            org(SUB_PFC, &[0x08, 0x08]),
            org(SUB_PFC, &[0x08, 0x08]),
            org(SUB_APP, &[0, 0x63, 0x12, 0xb7]),
        ];
        let du = lldp::decode(&raw_frame(&tlvs)).unwrap();
        assert_eq!(du.dcbx.pfc, None);
        assert_eq!(du.tlv_errors[TlvError::Duplicate as usize], 3);
        assert!(du.dcbx.app.is_some());
    }

    #[test]
    fn ets_priority_on_a_class_above_7_is_discarded() {
        let body = [&[0x08][..], &[0x01, 0x23, 0x45, 0x6f], &[12; 8], &[2; 8]].concat();
        let du = lldp::decode(&raw_frame(&[org(SUB_ETS_CONFIG, &body)])).unwrap();
        assert_eq!(du.dcbx.ets_config, None);
        assert_eq!(du.tlv_errors[TlvError::EtsBadTc as usize], 1);
    }

    #[test]
    fn max_tcs_0_means_8_and_a_frame_without_end_is_accepted() {
        let body = [&[0x80][..], &[0; 4], &[100, 0, 0, 0, 0, 0, 0, 0], &[2; 8]].concat();
        let du = lldp::decode(&raw_frame(&[org(SUB_ETS_CONFIG, &body)])).unwrap();
        let e = du.dcbx.ets_config.unwrap();
        assert!(e.willing);
        assert_eq!(e.max_tcs, 8);
    }

    #[test]
    fn a_buffer_too_small_is_refused_not_overrun() {
        let du = switch_du();
        let need = encode(&du).len();
        for n in [0, 13, 20, need - 1] {
            let mut buf = vec![0u8; n];
            assert_eq!(lldp::encode(&du, SRC, &mut buf), None, "buffer {n}");
        }
    }

    /// A full application table (168 entries) fits one TLV and one frame.
    #[test]
    fn largest_application_table() {
        let mut du = switch_du();
        let mut t = AppTable::default();
        for i in 0..MAX_APP {
            assert!(t.push(AppEntry {
                priority: (i % 8) as u8,
                selector: SEL_DSCP,
                protocol: i as u16,
            }));
        }
        assert!(!t.push(AppEntry::default()));
        du.dcbx.app = Some(t);
        assert_eq!(lldp::decode(&encode(&du)).unwrap(), du);
    }

    /// LLDP reaches the kernel (and so the controller's socket): the
    /// ingress verdict passes it, as a non-IP frame.
    #[test]
    fn the_data_plane_passes_lldp_to_the_kernel() {
        let f = encode(&switch_du());
        let parsed = parse(f.as_slice());
        let d = decide(&parsed, &PortConfig::azure(0));
        assert_eq!(d.action, Action::Pass);
        // and a routing port leaves it to the kernel as well
        let p = parsed.unwrap();
        assert_eq!(
            pre_route(&p, &lldp::DST_MAC, &SRC, 64),
            Err(NotRouted::NotIp)
        );
    }
}

mod decision {
    use super::*;

    fn local() -> Local {
        let s = switch_du();
        Local {
            pfc: s.dcbx.pfc.unwrap(),
            ets: s.dcbx.ets_config.unwrap(),
        }
    }

    fn peer() -> Dcbx {
        let mut d = switch_du().dcbx;
        d.pfc.as_mut().unwrap().willing = true;
        d.ets_config.as_mut().unwrap().willing = true;
        d
    }

    fn fields(m: dcbx::Mismatches) -> Vec<&'static str> {
        m.iter().map(Field::name).collect::<Vec<_>>()
    }

    #[test]
    fn an_agreeing_peer_has_no_mismatch() {
        assert!(dcbx::mismatches(&local(), &peer()).is_empty());
    }

    #[test]
    fn a_willing_peer_with_another_vector() {
        let mut p = peer();
        p.pfc.as_mut().unwrap().enable = 0x08;
        assert_eq!(fields(dcbx::mismatches(&local(), &p)), ["pfc_enable"]);
    }

    #[test]
    fn roce_on_a_lossy_priority() {
        let mut p = peer();
        let mut dscp = [None; 64];
        dscp[26] = Some(5);
        p.app = Some(dcbx::app_table(Some(5), &dscp));
        assert_eq!(fields(dcbx::mismatches(&local(), &p)), ["roce_priority"]);
        // TCP/UDP selector counts as well; another UDP port does not
        let mut t = AppTable::default();
        t.push(AppEntry {
            priority: 1,
            selector: SEL_TCP_UDP,
            protocol: 4791,
        });
        p.app = Some(t);
        assert_eq!(fields(dcbx::mismatches(&local(), &p)), ["roce_priority"]);
        let mut t = AppTable::default();
        t.push(AppEntry {
            priority: 1,
            selector: SEL_UDP,
            protocol: 4790,
        });
        p.app = Some(t);
        assert!(dcbx::mismatches(&local(), &p).is_empty());
    }

    #[test]
    fn neither_willing_and_configs_differ() {
        let mut p = peer();
        p.pfc.as_mut().unwrap().willing = false;
        // same config: fine
        assert!(dcbx::mismatches(&local(), &p).is_empty());
        // ETS differs
        p.ets_config.as_mut().unwrap().tables.tc_bw = [100, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(fields(dcbx::mismatches(&local(), &p)), ["willing"]);
        // PFC differs as well
        p.pfc.as_mut().unwrap().enable = 0;
        assert_eq!(
            fields(dcbx::mismatches(&local(), &p)),
            ["pfc_enable", "willing"]
        );
        // a willing switch: no deadlock, the vector still differs
        let mut l = local();
        l.pfc.willing = true;
        assert_eq!(fields(dcbx::mismatches(&l, &p)), ["pfc_enable"]);
    }

    #[test]
    fn no_pfc_tlv() {
        let mut p = peer();
        p.pfc = None;
        assert_eq!(fields(dcbx::mismatches(&local(), &p)), ["pfc_absent"]);
    }

    #[test]
    fn a_willing_nic_adopts_the_switch() {
        let sw = switch_du().dcbx;
        let mut nic = peer();
        nic.pfc.as_mut().unwrap().enable = 0x01;
        nic.ets_config.as_mut().unwrap().tables.tc_bw = [100, 0, 0, 0, 0, 0, 0, 0];
        nic.app = None;
        let op = dcbx::operational(&nic, [2, 0, 0, 0, 0, 1], &sw, SRC);
        assert_eq!(op.pfc.unwrap().enable, 0x18);
        assert!(op.pfc.unwrap().willing);
        assert_eq!(op.ets_config.unwrap().tables, sw.ets_reco.unwrap());
        assert_eq!(op.app, sw.app);
        assert!(dcbx::mismatches(&local(), &op).is_empty());
        // not willing: keeps its own
        nic.pfc.as_mut().unwrap().willing = false;
        nic.ets_config.as_mut().unwrap().willing = false;
        let op = dcbx::operational(&nic, [2, 0, 0, 0, 0, 1], &sw, SRC);
        assert_eq!(op.pfc.unwrap().enable, 0x01);
        assert_eq!(op.app, None);
    }

    #[test]
    fn both_willing_the_lower_mac_keeps_its_own() {
        let low = [2, 0, 0, 0, 0, 1];
        let high = [2, 0, 0, 0, 0, 2];
        assert!(!dcbx::adopts(true, low, true, high));
        assert!(dcbx::adopts(true, high, true, low));
        assert!(dcbx::adopts(true, low, false, high));
        assert!(!dcbx::adopts(false, high, false, low));
    }
}
