//! The buffer model sections: `[buffer]`, `[wred_profile.*]`, and each
//! port's headroom and profiles.

use std::collections::BTreeMap;

use dataplane_common::buffer::{PortBuffer, NUM_TC};
use dataplane_common::lossless::{
    ecn_mode_from_name, headroom, validate_buffer_profile, validate_headroom, validate_wred,
    BufferProfile, Headroom, HeadroomInput, SharedPool, WredProfile, MODEL_PORTS, TH_DYNAMIC,
};

use crate::*;

/// The built-in lossless WRED profile's name.
const AZURE_LOSSLESS: &str = "AZURE_LOSSLESS";

/// WRED off: thresholds never reached.
const NO_WRED: WredProfile = WredProfile {
    green_min_threshold: u32::MAX,
    green_max_threshold: u32::MAX,
    green_drop_probability: 0,
    ecn: 0,
    wred_green_enable: 0,
    _pad: 0,
};

/// `[buffer]`'s values, checked.
struct Params {
    pool_size: u32,
    dynamic_th: i8,
    lossy_th: i8,
    reserve: u32,
    xon_offset: u32,
    mtu: u32,
    cable: u32,
    response_ns: u64,
    tick_ns: u64,
    pfc_tx: PfcTx,
}

impl Config {
    /// The buffer model's plan, if `[buffer]` is given: the pool, and per
    /// port its headroom, PG profiles and WRED profiles.
    pub(super) fn validate_buffer(
        &self,
        ports: &[PortPlan],
        err: &mut impl FnMut(String, String),
    ) -> Option<BufferPlan> {
        let b = self.buffer.as_ref()?;
        let wreds = self.wred_profiles(err);
        if ports.len() > MODEL_PORTS {
            err(
                "buffer".into(),
                format!(
                    "the buffer model covers at most {MODEL_PORTS} ports, the config has {}",
                    ports.len()
                ),
            );
        }
        let params = buffer_params(b, err);
        let mut out = Vec::new();
        let mut heads = Vec::new();
        for (i, p) in ports.iter().enumerate() {
            let sec = &self.ports[i];
            let base = format!("port[{i}] ({})", p.name);
            let (h, how) = port_headroom(&base, sec, p, &params, err);
            out.push(port_buffer(&base, sec, p, &h, &params, &wreds, err));
            heads.push((h, how));
        }
        Some(BufferPlan {
            pool_size: params.pool_size,
            tick_ns: params.tick_ns,
            pfc_tx: params.pfc_tx,
            response_ns: params.response_ns,
            ports: out,
            headroom: heads,
        })
    }

    /// AZURE_LOSSLESS plus every `[wred_profile.NAME]`.
    fn wred_profiles(&self, err: &mut impl FnMut(String, String)) -> BTreeMap<&str, WredProfile> {
        let mut wreds: BTreeMap<&str, WredProfile> = BTreeMap::new();
        wreds.insert(AZURE_LOSSLESS, WredProfile::AZURE_LOSSLESS);
        for (name, w) in &self.wred_profile {
            let base = format!("wred_profile.{name}");
            if name == AZURE_LOSSLESS {
                err(
                    base.clone(),
                    "AZURE_LOSSLESS is built in; give your profile another name".into(),
                );
            }
            wreds.insert(name, wred_profile(&base, w, err));
        }
        wreds
    }
}

/// One `[wred_profile.NAME]`: ECN mode, thresholds, drop probability.
fn wred_profile(base: &str, w: &WredSection, err: &mut impl FnMut(String, String)) -> WredProfile {
    let ecn = match ecn_mode_from_name(&w.ecn) {
        Some(e) => e,
        None => {
            err(
                format!("{base}.ecn"),
                format!(
                    "expected a SONiC ecn mode (ecn_none, ecn_green, ..., ecn_all), got {:?}",
                    w.ecn
                ),
            );
            0
        }
    };
    let mut bytes = |v: i64, f: &str| -> u32 {
        if (0..=i64::from(u32::MAX)).contains(&v) {
            v as u32
        } else {
            err(
                format!("{base}.{f}"),
                format!("expected bytes 0-4294967295, got {v}"),
            );
            0
        }
    };
    let min = bytes(w.green_min_threshold, "green_min_threshold");
    let max = bytes(w.green_max_threshold, "green_max_threshold");
    let prof = WredProfile {
        green_min_threshold: min,
        green_max_threshold: max,
        green_drop_probability: w.green_drop_probability.clamp(0, 255) as u8,
        ecn,
        wred_green_enable: u8::from(w.wred_green_enable),
        _pad: 0,
    };
    if !(0..=100).contains(&w.green_drop_probability) {
        err(
            format!("{base}.green_drop_probability"),
            format!(
                "expected a percentage 0-100, got {}",
                w.green_drop_probability
            ),
        );
    } else if let Err(e) = validate_wred(&prof) {
        err(
            base.to_string(),
            format!("{e:?}: expected green_min_threshold <= green_max_threshold"),
        );
    }
    prof
}

/// `[buffer]`'s values, each in its range.
fn buffer_params(b: &BufferSection, err: &mut impl FnMut(String, String)) -> Params {
    let pfc_tx = match b.pfc_tx.as_str() {
        "auto" => PfcTx::Auto,
        "dataplane" => PfcTx::DataPlane,
        "userspace" => PfcTx::Userspace,
        other => {
            err(
                "buffer.pfc_tx".into(),
                format!("expected \"auto\", \"dataplane\" or \"userspace\", got {other:?}"),
            );
            PfcTx::Auto
        }
    };
    let mut in_range = |v: i64, lo: i64, hi: i64, f: &str, what: &str| -> i64 {
        if (lo..=hi).contains(&v) {
            v
        } else {
            err(
                format!("buffer.{f}"),
                format!("expected {what} {lo}-{hi}, got {v}"),
            );
            lo.max(0)
        }
    };
    let us = "microseconds";
    let response_us = b.response_us.unwrap_or(pfc_tx.default_response_us());
    Params {
        pool_size: in_range(b.pool_size, 1, i64::from(u32::MAX), "pool_size", "bytes") as u32,
        dynamic_th: in_range(b.dynamic_th, -8, 7, "dynamic_th", "an exponent") as i8,
        lossy_th: in_range(b.lossy_dynamic_th, -8, 7, "lossy_dynamic_th", "an exponent") as i8,
        reserve: in_range(b.reserve, 0, 1 << 30, "reserve", "bytes") as u32,
        xon_offset: in_range(b.xon_offset, 0, 1 << 30, "xon_offset", "bytes") as u32,
        mtu: in_range(b.mtu, 64, 65535, "mtu", "bytes") as u32,
        cable: in_range(b.cable_length_m, 0, 100_000, "cable_length_m", "metres") as u32,
        response_ns: in_range(response_us, 0, 1_000_000, "response_us", us) as u64 * 1000,
        tick_ns: in_range(b.tick_us, 10, 1_000_000, "tick_us", us) as u64 * 1000,
        pfc_tx,
    }
}

/// A port's headroom: computed (SONiC's formula plus our response time)
/// or configured, and whether it fits the pool.
fn port_headroom(
    base: &str,
    sec: &PortSection,
    p: &PortPlan,
    params: &Params,
    err: &mut impl FnMut(String, String),
) -> (Headroom, &'static str) {
    let cable = match sec.cable_length_m {
        Some(c) if (0..=100_000).contains(&c) => c as u32,
        Some(c) => {
            err(
                format!("{base}.cable_length_m"),
                format!("expected metres 0-100000, got {c}"),
            );
            params.cable
        }
        None => params.cable,
    };
    let computed = headroom(&HeadroomInput::new(
        p.config.speed_mbps,
        cable,
        params.mtu,
        params.response_ns,
    ));
    let (h, how) = match (sec.headroom_xoff, sec.headroom_xon) {
        (None, None) => (computed, "computed"),
        (Some(x), xon) => (
            configured_headroom(base, x, xon.unwrap_or(i64::from(computed.xon)), err),
            "configured",
        ),
        (None, Some(_)) => {
            err(
                format!("{base}.headroom_xon"),
                "expected headroom_xoff as well".into(),
            );
            (computed, "computed")
        }
    };
    let pool = SharedPool {
        size: params.pool_size,
        used: 0,
    };
    if let Err(e) = validate_headroom(&h, &pool) {
        let msg = match e {
            dataplane_common::lossless::ConfigError::XonAboveXoff => {
                format!(
                    "expected headroom xon <= xoff, got xon {} > xoff {}",
                    h.xon, h.xoff
                )
            }
            _ => format!(
                "{e:?}: headroom {} bytes does not fit the pool of {} bytes",
                h.xoff, params.pool_size
            ),
        };
        err(format!("{base}.headroom_xoff"), msg);
    }
    (h, how)
}

/// `headroom_xoff` / `headroom_xon` as configured.
fn configured_headroom(
    base: &str,
    x: i64,
    xon: i64,
    err: &mut impl FnMut(String, String),
) -> Headroom {
    if !(0..=i64::from(u32::MAX)).contains(&x) || !(0..=i64::from(u32::MAX)).contains(&xon) {
        err(
            format!("{base}.headroom_xoff"),
            format!("expected bytes, got xoff {x} xon {xon}"),
        );
    } else if xon > x {
        err(
            format!("{base}.headroom_xon"),
            format!("expected xon <= xoff, got xon {xon} > xoff {x}"),
        );
    }
    let (x, xon) = (
        x.clamp(0, i64::from(u32::MAX)) as u32,
        xon.clamp(0, i64::from(u32::MAX)) as u32,
    );
    Headroom {
        xoff: x,
        xon,
        size: x.saturating_add(xon),
    }
}

/// A port's buffer state: lossless or lossy PG profile and WRED profile
/// per class.
fn port_buffer(
    base: &str,
    sec: &PortSection,
    p: &PortPlan,
    h: &Headroom,
    params: &Params,
    wreds: &BTreeMap<&str, WredProfile>,
    err: &mut impl FnMut(String, String),
) -> PortBuffer {
    let lossless_prof = BufferProfile {
        size: params.reserve,
        xon: h.xon,
        xoff: h.xoff,
        xon_offset: params.xon_offset,
        static_th: 0,
        dynamic_th: params.dynamic_th,
        mode: TH_DYNAMIC,
        lossless: 1,
        _pad: 0,
    };
    let lossy_prof = BufferProfile {
        xon: 0,
        xoff: 0,
        dynamic_th: params.lossy_th,
        lossless: 0,
        ..lossless_prof
    };
    let pool = SharedPool {
        size: params.pool_size,
        used: 0,
    };
    // (xon <= xoff is reported once, with the headroom)
    if let Err(e) = validate_buffer_profile(&lossless_prof, &pool) {
        if e != dataplane_common::lossless::ConfigError::XonAboveXoff {
            err(base.to_string(), format!("buffer profile: {e:?}"));
        }
    }
    let mut pick = |name: &Option<String>, field: &str, dflt: Option<&str>| -> WredProfile {
        match name.as_deref().or(dflt) {
            None => NO_WRED,
            Some(n) => match wreds.get(n) {
                Some(w) => *w,
                None => {
                    err(format!("{base}.{field}"), format!("expected the name of a [wred_profile.NAME] or \"AZURE_LOSSLESS\", got {n:?}"));
                    NO_WRED
                }
            },
        }
    };
    let w_lossless = pick(&sec.wred_profile, "wred_profile", Some(AZURE_LOSSLESS));
    let w_lossy = pick(&sec.lossy_wred_profile, "lossy_wred_profile", None);
    let mut pb = PortBuffer {
        pg_profile: [lossy_prof; NUM_TC],
        wred: [w_lossy; NUM_TC],
        speed_mbps: p.config.speed_mbps,
        enabled: 1,
        storm: [0; NUM_TC],
    };
    for tc in 0..NUM_TC {
        if p.config.pfc_enable & (1 << tc) != 0 {
            pb.pg_profile[tc] = lossless_prof;
            pb.wred[tc] = w_lossless;
        }
    }
    pb
}
