//! Packet trimming as SONiC configures it: `[switch_trimming]`
//! (SWITCH_TRIMMING|GLOBAL size, dscp_value, queue_index),
//! `[buffer_profile.NAME] packet_discard_action`, and each port's
//! `buffer_queue` (BUFFER_QUEUE: queues -> profile); with `dscp_value =
//! "from-tc"`, `tc_value` and each trimming port's `tc_to_dscp_map`
//! (`[tc_to_dscp_map.NAME]`, SONiC TC_TO_DSCP_MAP / PORT_QOS_MAP).

use std::collections::BTreeMap;

use dataplane_common::trim::{TrimConfig, MIN_TRIM_SIZE, QUEUE_DYNAMIC};

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
        // the TC_TO_DSCP maps and the ports' references to them are checked
        // whether or not trimming uses them
        let maps = self.tc_to_dscp_maps(err);
        for (i, p) in self.ports.iter().enumerate() {
            if let Some(m) = &p.tc_to_dscp_map {
                if !maps.contains_key(m.as_str()) {
                    err(
                        format!("port[{i}] ({}).tc_to_dscp_map", p.name),
                        format!("no [tc_to_dscp_map.{m}]"),
                    );
                }
            }
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
        let from_tc = t.dscp_value.as_str() == Some("from-tc");
        let dscp = if from_tc {
            0
        } else {
            small_int(
                &t.dscp_value,
                63,
                "switch_trimming.dscp_value",
                "a DSCP",
                "or \"from-tc\"",
                err,
            )
        };
        let tc_value = match (&t.tc_value, from_tc) {
            (Some(v), true) => Some(small_int(
                v,
                7,
                "switch_trimming.tc_value",
                "a traffic class",
                "",
                err,
            )),
            (None, true) => {
                err(
                    "switch_trimming.tc_value".into(),
                    "dscp_value = \"from-tc\" takes the DSCP of class tc_value from each egress port's tc_to_dscp_map: give tc_value 0-7".into(),
                );
                None
            }
            (Some(_), false) => {
                err(
                    "switch_trimming.tc_value".into(),
                    "tc_value is used only with dscp_value = \"from-tc\"".into(),
                );
                None
            }
            (None, false) => None,
        };
        let queue = if t.queue_index.as_str() == Some("dynamic") {
            QUEUE_DYNAMIC
        } else {
            small_int(
                &t.queue_index,
                7,
                "switch_trimming.queue_index",
                "a queue",
                "or \"dynamic\"",
                err,
            )
        };
        let dscp_of = queues
            .iter()
            .enumerate()
            .map(|(i, &q)| match tc_value {
                Some(tc) if q != 0 => self.port_trim_dscp(i, tc, &maps, err),
                _ if q != 0 => dscp,
                _ => 0,
            })
            .collect();
        Some(TrimPlan {
            config: TrimConfig { size, dscp, queue },
            from_tc: tc_value,
            queues,
            dscp: dscp_of,
        })
    }

    /// The `[tc_to_dscp_map.*]` tables: class -> DSCP (unlisted: none).
    fn tc_to_dscp_maps(
        &self,
        err: &mut impl FnMut(String, String),
    ) -> BTreeMap<&str, [Option<u8>; 8]> {
        let mut out = BTreeMap::new();
        for (name, entries) in &self.tc_to_dscp_map {
            let mut m = [None; 8];
            for (k, v) in entries {
                let field = format!("tc_to_dscp_map.{name}.\"{k}\"");
                let Some(tc) = k.trim().parse::<usize>().ok().filter(|&t| t < 8) else {
                    err(
                        field,
                        format!("expected a traffic class 0-7 as the key, got {k:?}"),
                    );
                    continue;
                };
                match int_of(v) {
                    Some(d) if (0..=63).contains(&d) => m[tc] = Some(d as u8),
                    _ => err(field, format!("expected a DSCP 0-63, got {v}")),
                }
            }
            out.insert(name.as_str(), m);
        }
        out
    }

    /// The trim DSCP of port `i` with "from-tc": its map's entry for `tc`.
    fn port_trim_dscp(
        &self,
        i: usize,
        tc: u8,
        maps: &BTreeMap<&str, [Option<u8>; 8]>,
        err: &mut impl FnMut(String, String),
    ) -> u8 {
        let p = &self.ports[i];
        let field = format!("port[{i}] ({}).tc_to_dscp_map", p.name);
        let Some(name) = &p.tc_to_dscp_map else {
            err(field, format!("dscp_value = \"from-tc\" and queues of this port trim: give the port a tc_to_dscp_map with an entry for tc_value {tc}"));
            return 0;
        };
        match maps.get(name.as_str()) {
            Some(m) => m[tc as usize].unwrap_or_else(|| {
                err(field, format!("[tc_to_dscp_map.{name}] has no entry for tc_value {tc} (dscp_value = \"from-tc\")"));
                0
            }),
            // named as missing by the caller
            None => 0,
        }
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

/// An integer `0..=max` from `v`; `field` and `what` name the field and
/// its kind in the message, `also` the keyword it may be instead.
fn small_int(
    v: &toml::Value,
    max: i64,
    field: &str,
    what: &str,
    also: &str,
    err: &mut impl FnMut(String, String),
) -> u8 {
    match int_of(v) {
        Some(n) if (0..=max).contains(&n) => n as u8,
        _ => {
            let also = if also.is_empty() {
                String::new()
            } else {
                format!(" {also}")
            };
            err(
                field.into(),
                format!("expected {what} 0-{max}{also}, got {v}"),
            );
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
