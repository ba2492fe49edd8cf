//! `[pfcwd]`: detection, restoration and poll times, the action.

use crate::*;

impl Config {
    /// The watchdog's configuration and poll interval, if `[pfcwd]` is
    /// given.
    pub(super) fn validate_pfcwd(
        &self,
        err: &mut impl FnMut(String, String),
    ) -> Option<(dataplane_common::lossless::PfcWdConfig, u64)> {
        let w = self.pfcwd.as_ref()?;
        use dataplane_common::lossless::{
            PfcWdConfig, WD_ACTION_ALERT, WD_ACTION_DROP, WD_ACTION_FORWARD,
        };
        let ms = |v: i64, f: &str, err: &mut dyn FnMut(String, String)| -> u32 {
            if (1..=60_000).contains(&v) {
                v as u32
            } else {
                err(
                    format!("pfcwd.{f}"),
                    format!("expected 1-60000 milliseconds, got {v}"),
                );
                200
            }
        };
        let action = match w.action.as_str() {
            "drop" => WD_ACTION_DROP,
            "forward" => WD_ACTION_FORWARD,
            "alert" => WD_ACTION_ALERT,
            other => {
                err(
                    "pfcwd.action".into(),
                    format!("expected \"drop\", \"forward\" or \"alert\", got {other:?}"),
                );
                WD_ACTION_DROP
            }
        };
        let cfg = PfcWdConfig {
            detection_time_ms: ms(w.detection_time_ms, "detection_time_ms", err),
            restoration_time_ms: ms(w.restoration_time_ms, "restoration_time_ms", err),
            action,
            _pad: [0; 3],
        };
        let poll = ms(w.poll_interval_ms, "poll_interval_ms", err);
        if poll > cfg.detection_time_ms {
            err(
                "pfcwd.poll_interval_ms".into(),
                format!(
                    "expected at most detection_time_ms ({}), got {poll}",
                    cfg.detection_time_ms
                ),
            );
        }
        Some((cfg, u64::from(poll)))
    }
}
