//! Packet trimming as SONiC configures it: `[switch_trimming]`
//! (SWITCH_TRIMMING|GLOBAL size, dscp_value, queue_index),
//! `[buffer_profile.NAME] packet_discard_action`, and each port's
//! `buffer_queue` (BUFFER_QUEUE: queues -> profile).

use dataplane_common::trim::{TrimConfig, MIN_TRIM_SIZE};

use super::*;

/// Largest trim size: a jumbo frame (a larger size never cuts).
const MAX_TRIM_SIZE: i64 = 9216;

impl Config {
    /// The trim plan, or `None` without `[switch_trimming]` (then no queue
    /// may trim).
    pub(super) fn validate_trim(
        &self,
        ports: &[PortPlan],
        has_buffer: bool,
        err: &mut impl FnMut(String, String),
    ) -> Option<TrimPlan> {
        for (name, prof) in &self.buffer_profile {
            if !matches!(prof.packet_discard_action.as_str(), "drop" | "trim") {
                err(
                    format!("buffer_profile.{name}.packet_discard_action"),
                    format!(
                        "expected \"drop\" or \"trim\", got {:?}",
                        prof.packet_discard_action
                    ),
                );
            }
        }
        let mut queues = Vec::with_capacity(self.ports.len());
        for (i, p) in self.ports.iter().enumerate() {
            let lossless = ports.get(i).map(|pp| pp.config.pfc_enable).unwrap_or(0);
            queues.push(self.port_trim_queues(i, p, lossless, err));
        }
        let trims = queues.iter().any(|&q| q != 0);
        let Some(t) = &self.switch_trimming else {
            if trims {
                err(
                    "switch_trimming".into(),
                    "a queue's profile says packet_discard_action = \"trim\": add [switch_trimming] with size, dscp_value and queue_index".into(),
                );
            }
            return None;
        };
        if !has_buffer {
            err(
                "switch_trimming".into(),
                "trimming acts on the buffer model's shared-buffer drops: add a [buffer] section"
                    .into(),
            );
        }
        let size = if (i64::from(MIN_TRIM_SIZE)..=MAX_TRIM_SIZE).contains(&t.size) {
            t.size as u16
        } else {
            err(
                "switch_trimming.size".into(),
                format!(
                    "expected {MIN_TRIM_SIZE}-{MAX_TRIM_SIZE} bytes, got {}",
                    t.size
                ),
            );
            0
        };
        let dscp = small_int(
            &t.dscp_value,
            63,
            ("switch_trimming.dscp_value", "a DSCP"),
            ("from-tc", "(asymmetric DSCP through TC_TO_DSCP_MAP)"),
            err,
        );
        let queue = small_int(
            &t.queue_index,
            7,
            ("switch_trimming.queue_index", "a queue"),
            ("dynamic", "(the queue of the trim DSCP's class)"),
            err,
        );
        Some(TrimPlan {
            config: TrimConfig { size, dscp, queue },
            queues,
        })
    }

    /// Port `i`'s queues whose profile trims (bit per queue).
    fn port_trim_queues(
        &self,
        i: usize,
        p: &PortSection,
        lossless: u8,
        err: &mut impl FnMut(String, String),
    ) -> u8 {
        let mut bits = 0u8;
        for (key, profile) in &p.buffer_queue {
            let field = format!("port[{i}] ({}).buffer_queue.\"{key}\"", p.name);
            let Some(range) = queue_range(key) else {
                err(
                    field,
                    format!("expected a queue 0-7 or a range like \"0-2\" as the key, got {key:?}"),
                );
                continue;
            };
            let Some(prof) = self.buffer_profile.get(profile) else {
                err(field, format!("no [buffer_profile.{profile}]"));
                continue;
            };
            if prof.packet_discard_action != "trim" {
                continue;
            }
            if range & lossless != 0 {
                err(
                    field,
                    format!("profile {profile:?} trims, but queue(s) {key} are lossless (pfc_enable): lossless queues do not drop, so they never trim"),
                );
                continue;
            }
            bits |= range;
        }
        bits
    }
}

/// An integer `0..=max` from `v`; SONiC's keyword `refused.0` (meaning
/// `refused.1`) is named as unsupported. `field` and `what` name the field
/// and its kind in the messages.
fn small_int(
    v: &toml::Value,
    max: i64,
    (field, what): (&str, &str),
    refused: (&str, &str),
    err: &mut impl FnMut(String, String),
) -> u8 {
    match (int_of(v), v.as_str()) {
        (Some(n), _) if (0..=max).contains(&n) => n as u8,
        (_, Some(k)) if k == refused.0 => {
            err(
                field.into(),
                format!(
                    "\"{k}\" {} is not supported: give {what} 0-{max}",
                    refused.1
                ),
            );
            0
        }
        _ => {
            err(field.into(), format!("expected {what} 0-{max}, got {v}"));
            0
        }
    }
}

/// The queue bits of "3" or "0-2".
fn queue_range(key: &str) -> Option<u8> {
    let (a, b) = match key.split_once('-') {
        Some((a, b)) => (a.trim().parse::<u8>().ok()?, b.trim().parse::<u8>().ok()?),
        None => {
            let q = key.trim().parse::<u8>().ok()?;
            (q, q)
        }
    };
    if a > b || b > 7 {
        return None;
    }
    Some((a..=b).fold(0, |m, q| m | 1 << q))
}
