//! Headroom (SONiC's Mellanox formula plus our emit latency) and the
//! configuration checks of the buffer model.

use super::*;

/// Bytes one pause quantum covers (512 bits).
pub const QUANTUM_BYTES: u64 = 64;
/// SONiC Mellanox ASIC_TABLE (Spectrum): mac_phy_delay 0.8 KB, rounded up.
pub const DEFAULT_MAC_PHY_DELAY_BYTES: u32 = 820;
/// SONiC Mellanox ASIC_TABLE (Spectrum): pipeline_latency 18 KB (the xon).
pub const DEFAULT_PIPELINE_LATENCY_BYTES: u32 = 18 * 1024;

/// Pause quanta the peer may take to react at `speed_mbps` (SONiC's table,
/// after IEEE 802.3 31B.3.7): 400G/800G 905, 200G 453, 100G 394, 50G 147,
/// 40G 118, 25G 80, 10G 67. Another speed takes the entry of the next
/// listed speed above it (more quanta, the conservative side: below 10G ->
/// 67); above 800G, 905.
#[inline(always)]
pub fn peer_response_quanta(speed_mbps: u32) -> u32 {
    const TABLE: [(u32, u32); 8] = [
        (10_000, 67),
        (25_000, 80),
        (40_000, 118),
        (50_000, 147),
        (100_000, 394),
        (200_000, 453),
        (400_000, 905),
        (800_000, 905),
    ];
    let mut i = 0;
    while i < TABLE.len() {
        let (s, q) = TABLE[i];
        if speed_mbps <= s {
            return q;
        }
        i += 1;
    }
    905
}

/// Cable round-trip bytes: `2 x length x speed / 1.98e8 m/s / 8`, i.e.
/// `length_m x speed_mbps / 792`, rounded up.
#[inline(always)]
pub fn cable_bytes(length_m: u32, speed_mbps: u32) -> u64 {
    (u64::from(length_m) * u64::from(speed_mbps)).div_ceil(792)
}

/// Inputs of [`headroom`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeadroomInput {
    pub speed_mbps: u32,
    pub cable_m: u32,
    /// Largest lossless frame (bytes).
    pub mtu: u32,
    /// Measured time from a PG crossing XOFF to our PFC frame leaving the
    /// port (controller emit latency); the peer keeps sending at line rate
    /// meanwhile.
    pub response_ns: u64,
    /// Bytes held in our egress pipeline and PHY once XOFF is generated.
    pub mac_phy_delay: u32,
    /// SONiC's pipeline latency, used as xon.
    pub pipeline_latency: u32,
}

impl HeadroomInput {
    /// With the Mellanox defaults for MAC/PHY delay and pipeline latency.
    #[inline(always)]
    pub fn new(speed_mbps: u32, cable_m: u32, mtu: u32, response_ns: u64) -> Self {
        HeadroomInput {
            speed_mbps,
            cable_m,
            mtu,
            response_ns,
            mac_phy_delay: DEFAULT_MAC_PHY_DELAY_BYTES,
            pipeline_latency: DEFAULT_PIPELINE_LATENCY_BYTES,
        }
    }
}

/// Headroom of a lossless PG (bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Headroom {
    pub xoff: u32,
    pub xon: u32,
    pub size: u32,
}

/// SONiC's Mellanox formula with one cell per byte (no small-packet cell
/// factor) and our own emit latency added to the propagation:
///
/// ```text
/// propagation = mtu + cable_bytes + mac_phy_delay + peer_quanta x 64
///             + bytes_for(response_ns)
/// xoff = mtu + propagation      xon = pipeline_latency      size = xoff + xon
/// ```
/// Every term is rounded up on its own (a few bytes above the exact sum);
/// results saturate at `u32::MAX`.
#[inline(always)]
pub fn headroom(inp: &HeadroomInput) -> Headroom {
    let mtu = u64::from(inp.mtu);
    let propagation = mtu
        .saturating_add(cable_bytes(inp.cable_m, inp.speed_mbps))
        .saturating_add(u64::from(inp.mac_phy_delay))
        .saturating_add(u64::from(peer_response_quanta(inp.speed_mbps)) * QUANTUM_BYTES)
        .saturating_add(bytes_for_nanos(inp.response_ns, inp.speed_mbps));
    let xoff = mtu.saturating_add(propagation);
    // xon (the pipeline latency) is capped at xoff: at low speeds the fixed
    // 18 KB would otherwise exceed the whole headroom
    let xon = u64::from(inp.pipeline_latency).min(xoff);
    let size = xoff.saturating_add(xon);
    let clamp = |v: u64| {
        if v > u64::from(u32::MAX) {
            u32::MAX
        } else {
            v as u32
        }
    };
    Headroom {
        xoff: clamp(xoff),
        xon: clamp(xon),
        size: clamp(size),
    }
}

/// A configuration problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// WRED green_min_threshold > green_max_threshold.
    WredMinAboveMax,
    /// WRED green_drop_probability > 100.
    WredProbabilityOver100,
    /// WRED ecn is not one of the SONiC values.
    UnknownEcnMode,
    /// BUFFER_PROFILE xon > xoff.
    XonAboveXoff,
    /// BUFFER_PROFILE headroom (xoff) larger than the pool.
    HeadroomExceedsPool,
    /// BUFFER_PROFILE dynamic_th outside -8..=7.
    DynamicThOutOfRange,
    /// BUFFER_PROFILE mode is neither dynamic nor static.
    UnknownThresholdMode,
}

/// Checks a WRED profile.
#[inline(always)]
pub fn validate_wred(p: &WredProfile) -> Result<(), ConfigError> {
    if p.green_min_threshold > p.green_max_threshold {
        return Err(ConfigError::WredMinAboveMax);
    }
    if p.green_drop_probability > 100 {
        return Err(ConfigError::WredProbabilityOver100);
    }
    if p.ecn > ECN_ALL {
        return Err(ConfigError::UnknownEcnMode);
    }
    Ok(())
}

/// Checks a buffer profile against the pool it draws from.
#[inline(always)]
pub fn validate_buffer_profile(p: &BufferProfile, pool: &SharedPool) -> Result<(), ConfigError> {
    if p.mode != TH_DYNAMIC && p.mode != TH_STATIC {
        return Err(ConfigError::UnknownThresholdMode);
    }
    if p.mode == TH_DYNAMIC && (p.dynamic_th < DYNAMIC_TH_MIN || p.dynamic_th > DYNAMIC_TH_MAX) {
        return Err(ConfigError::DynamicThOutOfRange);
    }
    if p.xon > p.xoff {
        return Err(ConfigError::XonAboveXoff);
    }
    if p.xoff > pool.size {
        return Err(ConfigError::HeadroomExceedsPool);
    }
    Ok(())
}

/// Checks a computed headroom against a pool.
#[inline(always)]
pub fn validate_headroom(h: &Headroom, pool: &SharedPool) -> Result<(), ConfigError> {
    if h.xon > h.xoff {
        return Err(ConfigError::XonAboveXoff);
    }
    if h.size > pool.size {
        return Err(ConfigError::HeadroomExceedsPool);
    }
    Ok(())
}
