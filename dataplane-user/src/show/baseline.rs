//! Counter baselines of `dataplane clear`: the values of some counters at
//! the clear, stored in the instance's state directory (SONiC keeps them
//! in its per-user counter cache), subtracted by `show`. A baseline names
//! the data plane it was taken from (the id of its counter map): one taken
//! from an earlier data plane of the instance is ignored.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, Result};
use aya::maps::MapData;
use serde::{Deserialize, Serialize};

use super::Ctx;
use crate::sys;
use crate::telemetry::stats::{PortStats, Snapshot};

/// Counter values at a clear.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Baseline {
    /// When, as sonic-utilities prints it ("Last cached time was ...").
    pub time: String,
    /// The data plane's identity (id of its PORT_COUNTERS map).
    pub dataplane: u32,
    /// Port -> counter name -> value.
    pub ports: BTreeMap<String, BTreeMap<String, u64>>,
}

impl Baseline {
    /// `now - baseline` of a counter (0 when the counter went back: never
    /// for one data plane, whose counters only grow).
    pub fn since(&self, port: &str, key: &str, now: u64) -> u64 {
        let base = self
            .ports
            .get(port)
            .and_then(|c| c.get(key))
            .copied()
            .unwrap_or(0);
        now.saturating_sub(base)
    }
}

/// `now`, less the baseline's value when there is one.
pub fn since(base: Option<&Baseline>, port: &str, key: &str, now: u64) -> u64 {
    match base {
        Some(b) => b.since(port, key, now),
        None => now,
    }
}

/// Counter `key` of port `p` since the baseline.
pub fn counter(base: Option<&Baseline>, p: &PortStats, key: &str) -> u64 {
    since(
        base,
        &p.name,
        key,
        p.counters.get(key).copied().unwrap_or(0),
    )
}

/// A counter target's `show`: its rows of the instance's snapshot since
/// its baseline `name` (if one was stored), rendered with the baseline's
/// time.
pub fn show_since<T>(
    ctx: &Ctx,
    name: &str,
    rows: fn(&Snapshot, Option<&Baseline>) -> Vec<T>,
    render: fn(&[T], Option<&str>) -> super::Output,
) -> Result<super::Output> {
    let (snap, base) = (ctx.snapshot()?, load(ctx, name));
    Ok(render(
        &rows(&snap, base.as_ref()),
        base.as_ref().map(|b| b.time.as_str()),
    ))
}

fn path(ctx: &Ctx, name: &str) -> PathBuf {
    sys::state_dir(&ctx.instance).join(format!("{name}.json"))
}

/// The running data plane's identity: the id of its PORT_COUNTERS map.
pub fn dataplane_id(instance: &str) -> Result<u32> {
    let p = sys::pin_dir(instance).join(dataplane_common::names::map::PORT_COUNTERS);
    let m = MapData::from_pin(&p).with_context(|| {
        format!(
            "no running data plane {instance:?}: cannot open {}",
            p.display()
        )
    })?;
    Ok(m.info()?.id())
}

/// The baseline `name` of the running data plane, if one was stored.
pub fn load(ctx: &Ctx, name: &str) -> Option<Baseline> {
    let id = dataplane_id(&ctx.instance).ok()?;
    let text = std::fs::read_to_string(path(ctx, name)).ok()?;
    serde_json::from_str::<Baseline>(&text)
        .ok()
        .filter(|b| b.dataplane == id)
}

/// `clear --delete` (pfcstat -d, queuestat -d): removes the baseline
/// `name`, so `show` prints the counters whole again; says what it did.
pub fn delete(ctx: &Ctx, name: &str, what: &str) -> Result<String> {
    let p = path(ctx, name);
    match std::fs::remove_file(&p) {
        Ok(()) => Ok(format!("Deleted the saved {what}\n")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(format!("No saved {what}\n")),
        Err(e) => Err(e).with_context(|| format!("removing {}", p.display())),
    }
}

/// Stores the counters of `snap` that `keep` selects as baseline `name`.
pub fn save(ctx: &Ctx, name: &str, snap: &Snapshot, keep: impl Fn(&str) -> bool) -> Result<()> {
    let ports = snap
        .ports
        .iter()
        .map(|p| {
            let c = p
                .counters
                .iter()
                .filter(|(k, _)| keep(k))
                .map(|(k, v)| (k.clone(), *v))
                .collect();
            (p.name.clone(), c)
        })
        .collect();
    save_ports(ctx, name, ports)
}

/// Stores `ports` (port -> counter name -> value) as baseline `name`.
pub fn save_ports(
    ctx: &Ctx,
    name: &str,
    ports: BTreeMap<String, BTreeMap<String, u64>>,
) -> Result<()> {
    let b = Baseline {
        time: now_string(),
        dataplane: dataplane_id(&ctx.instance)?,
        ports,
    };
    let dir = sys::state_dir(&ctx.instance);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let p = path(ctx, name);
    let tmp = p.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(&b)?)
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &p).with_context(|| format!("writing {}", p.display()))
}

/// Now as sonic-utilities stores and prints a cache's time: Python's
/// `datetime.now().isoformat()`, local time (`2026-11-26T22:00:00.123456`,
/// no fraction when the microseconds are zero).
pub fn now_string() -> String {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    format_local(d.as_secs() as i64, d.subsec_micros())
}

/// Seconds since the epoch and microseconds in the local time zone (the
/// process's `TZ`, else /etc/localtime, through `localtime_r`), as
/// `datetime.isoformat()` prints them.
pub fn format_local(secs: i64, micros: u32) -> String {
    isoformat(&local_civil(secs), micros)
}

/// Seconds since the epoch as local `[year, month, day, hour, minute,
/// second]` (UTC when the C library cannot convert).
pub fn local_civil(secs: i64) -> [i64; 6] {
    extern "C" {
        // POSIX <time.h>; the libc crate does not declare it. localtime_r
        // need not re-read TZ, tzset does.
        fn tzset();
    }
    // SAFETY: tzset reads TZ; localtime_r writes only into `tm`.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let t: libc::time_t = secs as libc::time_t;
    let ok = unsafe {
        tzset();
        !libc::localtime_r(&t, &mut tm).is_null()
    };
    if !ok {
        return civil_utc(secs);
    }
    [
        i64::from(tm.tm_year) + 1900,
        i64::from(tm.tm_mon) + 1,
        i64::from(tm.tm_mday),
        i64::from(tm.tm_hour),
        i64::from(tm.tm_min),
        i64::from(tm.tm_sec),
    ]
}

/// `[year, month, day, hour, minute, second]` as `datetime.isoformat()`
/// prints them: `YYYY-MM-DDTHH:MM:SS[.ffffff]`.
pub fn isoformat(c: &[i64; 6], micros: u32) -> String {
    let mut s = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        c[0], c[1], c[2], c[3], c[4], c[5]
    );
    if micros != 0 {
        s.push_str(&format!(".{micros:06}"));
    }
    s
}

/// Seconds since the epoch as UTC `[year, month, day, hour, minute,
/// second]` (days to the civil date by Howard Hinnant's algorithm): the
/// fallback when the C library cannot convert.
pub fn civil_utc(secs: i64) -> [i64; 6] {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    [year, month, day, rem / 3600, rem % 3600 / 60, rem % 60]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        let iso = |s, us| isoformat(&civil_utc(s), us);
        assert_eq!(iso(0, 0), "1970-01-01T00:00:00");
        // date -u -d @1709251199: Thu Feb 29 23:59:59 UTC 2024 (leap day)
        assert_eq!(iso(1_709_251_199, 42), "2024-02-29T23:59:59.000042");
        assert_eq!(iso(1_709_251_200, 0), "2024-03-01T00:00:00");
        assert_eq!(iso(951_782_400, 0), "2000-02-29T00:00:00");
        assert_eq!(iso(-1, 0), "1969-12-31T23:59:59");
    }

    #[test]
    fn since_subtracts_the_baseline_and_never_goes_negative() {
        let mut b = Baseline::default();
        b.ports
            .entry("eth0".into())
            .or_default()
            .insert("rx_pfc[3]".into(), 10);
        assert_eq!(since(Some(&b), "eth0", "rx_pfc[3]", 25), 15);
        assert_eq!(since(Some(&b), "eth0", "rx_pfc[3]", 5), 0);
        assert_eq!(since(Some(&b), "eth1", "rx_pfc[3]", 7), 7);
        assert_eq!(since(None, "eth0", "rx_pfc[3]", 25), 25);
    }
}
