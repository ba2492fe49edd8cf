//! `[dcbx]`: LLDP timers, the willing bit, the RoCE priority, the DSCP
//! entries of the application table, ETS configuration and recommendation.

use dataplane_common::wire::dcbx::{EtsTables, TSA_ETS, TSA_STRICT};

use crate::*;

impl Config {
    /// The DCBX plan, if `[dcbx]` is given with `enable = true`.
    pub(super) fn validate_dcbx(
        &self,
        ports: &[PortPlan],
        err: &mut impl FnMut(String, String),
    ) -> Option<DcbxPlan> {
        let d = self.dcbx.as_ref()?;
        let range =
            |v: i64, f: &str, lo: i64, hi: i64, unit: &str, err: &mut dyn FnMut(String, String)| {
                if (lo..=hi).contains(&v) {
                    v
                } else {
                    err(
                        format!("dcbx.{f}"),
                        format!("expected {lo}-{hi}{unit}, got {v}"),
                    );
                    lo
                }
            };
        let tx_interval_s =
            range(d.tx_interval_s, "tx_interval_s", 1, 3600, " seconds", err) as u32;
        let tx_hold = range(d.tx_hold, "tx_hold", 1, 100, "", err) as u32;
        let fast_tx_count = range(d.fast_tx_count, "fast_tx_count", 1, 8, " frames", err) as u32;
        let roce_priority = d.roce_priority.map(|p| {
            let p = range(p, "roce_priority", 0, 7, " (a priority)", err) as u8;
            for (i, port) in ports.iter().enumerate() {
                if port.config.pfc_enable & (1 << p) == 0 {
                    err(
                        "dcbx.roce_priority".into(),
                        format!(
                            "expected a priority lossless on every port, got {p}, which port[{i}] ({}) does not list in pfc_enable",
                            port.name
                        ),
                    );
                }
            }
            p
        });
        let app_dscp = match d.app_dscp.as_str() {
            "lossless" => AppDscp::Lossless,
            "all" => AppDscp::All,
            "none" => AppDscp::None,
            other => {
                err(
                    "dcbx.app_dscp".into(),
                    format!("expected \"lossless\", \"all\" or \"none\", got {other:?}"),
                );
                AppDscp::Lossless
            }
        };
        let ets = ets_tables(
            &d.ets_bandwidth,
            &d.ets_tsa,
            "ets_bandwidth",
            "ets_tsa",
            err,
        );
        let reco = match (&d.reco_bandwidth, &d.reco_tsa) {
            (None, None) => ets,
            (bw, tsa) => ets_tables(
                bw.as_ref().unwrap_or(&d.ets_bandwidth),
                tsa.as_ref().unwrap_or(&d.ets_tsa),
                "reco_bandwidth",
                "reco_tsa",
                err,
            ),
        };
        if !d.enable {
            return None;
        }
        Some(DcbxPlan {
            tx_interval_s,
            ttl_s: (tx_interval_s * tx_hold).min(u32::from(u16::MAX)) as u16,
            fast_tx_count,
            willing: d.willing,
            roce_priority,
            app_dscp,
            ets,
            reco,
        })
    }
}

/// The ETS tables of 8 bandwidths and 8 TSAs (priority i on class i).
fn ets_tables(
    bw: &[i64],
    tsa: &[String],
    bw_field: &str,
    tsa_field: &str,
    err: &mut impl FnMut(String, String),
) -> EtsTables {
    let mut t = EtsTables {
        prio_tc: [0, 1, 2, 3, 4, 5, 6, 7],
        ..EtsTables::default()
    };
    if tsa.len() != 8 {
        err(
            format!("dcbx.{tsa_field}"),
            format!(
                "expected 8 values (one per traffic class), got {}",
                tsa.len()
            ),
        );
    }
    for (i, s) in tsa.iter().take(8).enumerate() {
        t.tsa[i] = match s.as_str() {
            "ets" => TSA_ETS,
            "strict" => TSA_STRICT,
            other => {
                err(
                    format!("dcbx.{tsa_field}[{i}]"),
                    format!("expected \"ets\" or \"strict\", got {other:?}"),
                );
                TSA_ETS
            }
        };
    }
    if bw.len() != 8 {
        err(
            format!("dcbx.{bw_field}"),
            format!(
                "expected 8 percentages (one per traffic class), got {}",
                bw.len()
            ),
        );
        return t;
    }
    for (i, &b) in bw.iter().enumerate() {
        if !(0..=100).contains(&b) {
            err(
                format!("dcbx.{bw_field}[{i}]"),
                format!("expected a percentage 0-100, got {b}"),
            );
        } else if t.tsa[i] == TSA_STRICT && b != 0 {
            err(
                format!("dcbx.{bw_field}[{i}]"),
                format!("expected 0 for a strict-priority class ({tsa_field}[{i}] = \"strict\"), got {b}"),
            );
        } else {
            t.tc_bw[i] = b as u8;
        }
    }
    let ets_classes = t.tsa.iter().filter(|&&x| x == TSA_ETS).count();
    let sum: i64 = bw.iter().sum();
    if ets_classes > 0 && sum != 100 {
        err(
            format!("dcbx.{bw_field}"),
            format!("expected the ETS classes' percentages to sum to 100, got {sum}"),
        );
    }
    t
}
