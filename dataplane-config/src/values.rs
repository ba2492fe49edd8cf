//! Value parsers shared by the sections: MACs, line rates, prefixes, PFC
//! priority lists, traffic classes, DSCP/dot1p maps.

use std::collections::BTreeMap;

use dataplane_common::maps::{MALFORMED_DROP, MALFORMED_PASS};

/// Line rate of a port when the config gives none.
pub const DEFAULT_SPEED_MBPS: u32 = 100_000;

/// "02:00:00:00:00:01" to bytes.
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut out = [0u8; 6];
    let mut n = 0;
    for part in s.split(':') {
        if n == 6 || part.len() != 2 {
            return None;
        }
        out[n] = u8::from_str_radix(part, 16).ok()?;
        n += 1;
    }
    (n == 6).then_some(out)
}

/// "100G" / "25G" / "400M" / 100000 to Mb/s.
pub fn parse_speed(v: &toml::Value) -> Option<u32> {
    let mbps: u64 = match v {
        toml::Value::Integer(i) if *i > 0 => *i as u64,
        toml::Value::String(s) => {
            let s = s.trim();
            let (num, mult) = if let Some(n) = s.strip_suffix(['G', 'g']) {
                (n, 1000)
            } else if let Some(n) = s.strip_suffix(['M', 'm']) {
                (n, 1)
            } else {
                (s, 1)
            };
            num.trim().parse::<u64>().ok()?.checked_mul(mult)?
        }
        _ => return None,
    };
    (1..=1_600_000).contains(&mbps).then_some(mbps as u32)
}

/// An instance name (`[switch] name`, `--instance`): it names the pin
/// directory `/sys/fs/bpf/dataplane/<name>` and the lock file, so 1-64
/// characters from `[A-Za-z0-9_-]` (no `/`, no `..`).
pub fn check_instance_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(format!("expected 1-64 characters from [A-Za-z0-9_-] (it names the pin directory), got {name:?}"))
    }
}

/// FNV-1a, for the default per-switch hash seed.
pub(crate) fn fnv1a(b: &[u8]) -> u32 {
    b.iter().fold(0x811c_9dc5u32, |h, &x| {
        (h ^ u32::from(x)).wrapping_mul(0x0100_0193)
    })
}

/// "198.18.1.0/24" / "2001:db8::/32" (no host bits) to (address, length).
pub fn parse_prefix(s: &str) -> Option<(std::net::IpAddr, u8)> {
    use std::net::IpAddr;
    let (a, l) = s.split_once('/')?;
    let addr: IpAddr = a.trim().parse().ok()?;
    let len: u8 = l.trim().parse().ok()?;
    let bits = match addr {
        IpAddr::V4(v) => {
            if len > 32 {
                return None;
            }
            let x = u32::from(v);
            let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
            x & !mask
        }
        IpAddr::V6(v) => {
            if len > 128 {
                return None;
            }
            let x = u128::from(v);
            let mask = if len == 0 {
                0
            } else {
                u128::MAX << (128 - len)
            };
            return (x & !mask == 0).then_some((addr, len));
        }
    };
    (bits == 0).then_some((addr, len))
}

pub(crate) fn check_tc(v: i64, field: &str, err: &mut impl FnMut(String, String)) -> u8 {
    if (0..=7).contains(&v) {
        v as u8
    } else {
        err(
            field.into(),
            format!("expected a traffic class 0-7, got {v}"),
        );
        0
    }
}

pub(crate) fn check_malformed(v: &str, field: &str, err: &mut impl FnMut(String, String)) -> u8 {
    match v {
        "pass" => MALFORMED_PASS,
        "drop" => MALFORMED_DROP,
        other => {
            err(
                field.into(),
                format!("expected \"pass\" or \"drop\", got {other:?}"),
            );
            MALFORMED_PASS
        }
    }
}

/// SONiC's pfc_enable: priorities 0-7 separated by commas; "" for none.
pub fn parse_pfc_enable(s: &str) -> Result<u8, String> {
    let mut bits = 0u8;
    if s.trim().is_empty() {
        return Ok(0);
    }
    for part in s.split(',') {
        let t = part.trim();
        match t.parse::<u8>() {
            Ok(p) if p <= 7 => {
                if bits & (1 << p) != 0 {
                    return Err(format!("priority {p} is listed twice in {s:?}"));
                }
                bits |= 1 << p;
            }
            _ => return Err(format!("expected priorities 0-7 separated by commas (e.g. \"3,4\"), got {s:?} ({t:?} is not one)")),
        }
    }
    Ok(bits)
}

/// Integer from a TOML integer or a string holding one (SONiC writes
/// strings).
pub(crate) fn int_of(v: &toml::Value) -> Option<i64> {
    match v {
        toml::Value::Integer(i) => Some(*i),
        toml::Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Resolves a SONiC map (`"codepoint" = tc`, plus an optional `default`)
/// to a full table. Unlisted codepoints get `default` (0 unless given).
pub(crate) fn resolve_map<const N: usize>(
    entries: &BTreeMap<String, toml::Value>,
    base: &str,
    what: &str,
    err: &mut impl FnMut(String, String),
) -> [u8; N] {
    let default = match entries.get("default") {
        None => 0,
        Some(v) => match int_of(v) {
            Some(t) if (0..=7).contains(&t) => t as u8,
            _ => {
                err(
                    format!("{base}.default"),
                    format!("expected a traffic class 0-7, got {v}"),
                );
                0
            }
        },
    };
    let mut table = [default; N];
    for (k, v) in entries {
        if k == "default" {
            continue;
        }
        let field = format!("{base}.\"{k}\"");
        let cp = match k.trim().parse::<usize>() {
            Ok(c) if c < N => c,
            _ => {
                err(
                    field,
                    format!("expected a {what} value 0-{} as the key, got {k:?}", N - 1),
                );
                continue;
            }
        };
        match int_of(v) {
            Some(t) if (0..=7).contains(&t) => table[cp] = t as u8,
            _ => err(field, format!("expected a traffic class 0-7, got {v}")),
        }
    }
    table
}
