//! IEEE 802.1Qaz DCBX TLVs (organizationally specific, OUI 00-80-C2) in
//! LLDP: ETS Configuration (subtype 9), ETS Recommendation (10), PFC
//! Configuration (11), Application Priority (12).
//!
//! ```text
//! org TLV:  type 127 | length | OUI 00 80 C2 | subtype | body
//! ETS cfg:  W CBS rsv(3) MaxTCs(3) | prio->TC 4x8 bits | TC bandwidth 8x8 | TSA 8x8   (length 25)
//! ETS reco: reserved(8)           | prio->TC 4x8 bits | TC bandwidth 8x8 | TSA 8x8   (length 25)
//! PFC:      W MBC rsv(2) PFC cap(4) | enable vector (bit i = priority i)            (length 6)
//! App:      reserved(8) | n x ( prio(3) rsv(2) sel(3) | protocol 16 )               (length 5 + 3n)
//! ```
//!
//! Each body is read only after its length was checked against what its
//! subtype needs; a TLV of the wrong length is discarded and counted by its
//! [`TlvError`], the rest of the LLDPDU still counts. More than one TLV of
//! a kind in one LLDPDU is an error too: every one of that kind is
//! discarded (which of them would be meant is unknowable).

use super::tlv::{Writer, MAX_TLV, TLV_ORG};

/// IEEE 802.1 OUI.
pub const OUI_8021: [u8; 3] = [0x00, 0x80, 0xc2];
pub const SUB_ETS_CONFIG: u8 = 0x09;
pub const SUB_ETS_RECO: u8 = 0x0a;
pub const SUB_PFC: u8 = 0x0b;
pub const SUB_APP: u8 = 0x0c;

/// TLV value lengths (OUI and subtype included).
pub const ETS_LEN: usize = 25;
pub const PFC_LEN: usize = 6;
pub const APP_MIN_LEN: usize = 5;
pub const APP_ENTRY_LEN: usize = 3;
/// Entries one Application Priority TLV holds at most (9-bit length).
pub const MAX_APP: usize = (MAX_TLV - APP_MIN_LEN) / APP_ENTRY_LEN;

/// Application selectors.
pub const SEL_ETHERTYPE: u8 = 1;
pub const SEL_TCP: u8 = 2;
pub const SEL_UDP: u8 = 3;
pub const SEL_TCP_UDP: u8 = 4;
/// DSCP (802.1Q-2014): the protocol field holds the DSCP value.
pub const SEL_DSCP: u8 = 5;

/// Transmission selection algorithms.
pub const TSA_STRICT: u8 = 0;
pub const TSA_CBS: u8 = 1;
pub const TSA_ETS: u8 = 2;
pub const TSA_VENDOR: u8 = 255;

/// Why an optional TLV was discarded. The discriminant indexes counters:
/// never reorder, only append.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlvError {
    /// An organizationally specific TLV shorter than OUI + subtype.
    OrgTooShort = 0,
    /// PFC Configuration TLV whose length is not 6.
    PfcBadLen = 1,
    /// ETS Configuration TLV whose length is not 25.
    EtsConfigBadLen = 2,
    /// ETS Recommendation TLV whose length is not 25.
    EtsRecoBadLen = 3,
    /// Application Priority TLV shorter than 5 or not 5 + 3n.
    AppBadLen = 4,
    /// An ETS priority assignment to a traffic class above 7.
    EtsBadTc = 5,
    /// A second TLV of a kind in one LLDPDU: all of that kind discarded.
    Duplicate = 6,
}

/// Counters per [`TlvError`] (room to append).
pub const TLV_ERROR_COUNT: usize = 12;
const _: () = assert!(TlvError::ALL.len() <= TLV_ERROR_COUNT);

impl TlvError {
    pub const ALL: [TlvError; 7] = [
        TlvError::OrgTooShort,
        TlvError::PfcBadLen,
        TlvError::EtsConfigBadLen,
        TlvError::EtsRecoBadLen,
        TlvError::AppBadLen,
        TlvError::EtsBadTc,
        TlvError::Duplicate,
    ];

    /// Stable snake_case name (metrics label, `show dcbx`).
    pub const fn name(self) -> &'static str {
        match self {
            TlvError::OrgTooShort => "org_too_short",
            TlvError::PfcBadLen => "pfc_bad_len",
            TlvError::EtsConfigBadLen => "ets_config_bad_len",
            TlvError::EtsRecoBadLen => "ets_reco_bad_len",
            TlvError::AppBadLen => "app_bad_len",
            TlvError::EtsBadTc => "ets_bad_tc",
            TlvError::Duplicate => "duplicate",
        }
    }
}

/// PFC Configuration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pfc {
    pub willing: bool,
    /// MACsec bypass capability.
    pub mbc: bool,
    /// Traffic classes that may be PFC-enabled at once (0..=15 on the wire).
    pub cap: u8,
    /// Bit i: priority i is lossless.
    pub enable: u8,
}

/// The three ETS tables (what the Recommendation TLV carries).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EtsTables {
    /// Traffic class of each priority (0..=7).
    pub prio_tc: [u8; 8],
    /// Bandwidth share of each traffic class, percent.
    pub tc_bw: [u8; 8],
    /// Transmission selection algorithm of each traffic class.
    pub tsa: [u8; 8],
}

/// ETS Configuration: the tables plus the sender's flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EtsConfig {
    pub willing: bool,
    /// Credit-based shaper supported.
    pub cbs: bool,
    /// Traffic classes supported, 1..=8 (8 is 0 on the wire).
    pub max_tcs: u8,
    pub tables: EtsTables,
}

/// One application priority entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AppEntry {
    pub priority: u8,
    /// `SEL_*`.
    pub selector: u8,
    /// EtherType, port number or DSCP, by selector.
    pub protocol: u16,
}

/// An Application Priority table (at most [`MAX_APP`] entries).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AppTable {
    len: u8,
    entries: [AppEntry; MAX_APP],
}

impl Default for AppTable {
    fn default() -> Self {
        AppTable {
            len: 0,
            entries: [AppEntry {
                priority: 0,
                selector: 0,
                protocol: 0,
            }; MAX_APP],
        }
    }
}

impl AppTable {
    /// Adds an entry; false when the table is full.
    pub fn push(&mut self, e: AppEntry) -> bool {
        match self.entries.get_mut(usize::from(self.len)) {
            Some(slot) => {
                *slot = e;
                self.len += 1;
                true
            }
            None => false,
        }
    }

    pub fn entries(&self) -> &[AppEntry] {
        &self.entries[..usize::from(self.len)]
    }

    /// The priority the table gives UDP port `port` (selector UDP or
    /// TCP/UDP), if any.
    pub fn udp_priority(&self, port: u16) -> Option<u8> {
        self.entries()
            .iter()
            .find(|e| e.protocol == port && (e.selector == SEL_UDP || e.selector == SEL_TCP_UDP))
            .map(|e| e.priority)
    }
}

/// The DCBX TLVs of one LLDPDU (each `None` when absent or discarded).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dcbx {
    pub pfc: Option<Pfc>,
    pub ets_config: Option<EtsConfig>,
    pub ets_reco: Option<EtsTables>,
    pub app: Option<AppTable>,
    /// Decoding scratch: kinds seen more than once (bit per subtype - 9);
    /// 0 in every decoded value ([`drop_duplicates`] clears it).
    pub dup: u8,
}

/// Why [`decode_org`] did not take a TLV.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OrgReject {
    /// Not an IEEE 802.1 DCBX subtype we know: skipped.
    Unrecognized,
    /// Discarded as malformed or duplicate: count the error `n` times
    /// (2 for the second of a kind, which discards the first too).
    Invalid(TlvError, u8),
}

/// Decodes one organizationally specific TLV's value into `d`.
pub fn decode_org(v: &[u8], d: &mut Dcbx) -> Result<(), OrgReject> {
    let [o0, o1, o2, sub, body @ ..] = v else {
        return Err(OrgReject::Invalid(TlvError::OrgTooShort, 1));
    };
    if [*o0, *o1, *o2] != OUI_8021 || !(SUB_ETS_CONFIG..=SUB_APP).contains(sub) {
        return Err(OrgReject::Unrecognized);
    }
    let seen = match *sub {
        SUB_PFC => d.pfc.is_some(),
        SUB_ETS_CONFIG => d.ets_config.is_some(),
        SUB_ETS_RECO => d.ets_reco.is_some(),
        _ => d.app.is_some(),
    };
    let bit = 1u8 << (sub - SUB_ETS_CONFIG);
    if seen || d.dup & bit != 0 {
        // the first of the kind is discarded too (counted once, here)
        let n = if d.dup & bit == 0 { 2 } else { 1 };
        d.dup |= bit;
        return Err(OrgReject::Invalid(TlvError::Duplicate, n));
    }
    match *sub {
        SUB_PFC => pfc(body).map(|x| d.pfc = Some(x)),
        SUB_ETS_CONFIG => ets_config(body).map(|x| d.ets_config = Some(x)),
        SUB_ETS_RECO => ets_reco(body).map(|x| d.ets_reco = Some(x)),
        _ => app(body).map(|x| d.app = Some(x)),
    }
    .map_err(|e| OrgReject::Invalid(e, 1))
}

/// Discards every kind that came more than once (see [`decode_org`]).
pub fn drop_duplicates(d: &mut Dcbx) {
    let has = |sub: u8| d.dup & (1 << (sub - SUB_ETS_CONFIG)) != 0;
    let (pfc, ets_config, ets_reco, app) = (
        has(SUB_PFC),
        has(SUB_ETS_CONFIG),
        has(SUB_ETS_RECO),
        has(SUB_APP),
    );
    if pfc {
        d.pfc = None;
    }
    if ets_config {
        d.ets_config = None;
    }
    if ets_reco {
        d.ets_reco = None;
    }
    if app {
        d.app = None;
    }
    d.dup = 0;
}

fn pfc(b: &[u8]) -> Result<Pfc, TlvError> {
    let [flags, enable] = b else {
        return Err(TlvError::PfcBadLen);
    };
    Ok(Pfc {
        willing: flags & 0x80 != 0,
        mbc: flags & 0x40 != 0,
        cap: flags & 0x0f,
        enable: *enable,
    })
}

/// The three tables after the ETS TLVs' first byte (20 bytes).
fn ets_tables(b: &[u8]) -> Option<Result<EtsTables, TlvError>> {
    let pa: [u8; 4] = b.get(0..4)?.try_into().ok()?;
    let mut t = EtsTables::default();
    t.tc_bw.copy_from_slice(b.get(4..12)?);
    t.tsa.copy_from_slice(b.get(12..20)?);
    for (i, tc) in t.prio_tc.iter_mut().enumerate() {
        let byte = pa[i / 2];
        *tc = if i % 2 == 0 { byte >> 4 } else { byte & 0x0f };
        if *tc > 7 {
            return Some(Err(TlvError::EtsBadTc));
        }
    }
    Some(Ok(t))
}

fn ets_config(b: &[u8]) -> Result<EtsConfig, TlvError> {
    let ([flags, rest @ ..], ETS_LEN) = (b, b.len() + 4) else {
        return Err(TlvError::EtsConfigBadLen);
    };
    let tables = ets_tables(rest).ok_or(TlvError::EtsConfigBadLen)??;
    let n = flags & 0x07;
    Ok(EtsConfig {
        willing: flags & 0x80 != 0,
        cbs: flags & 0x40 != 0,
        max_tcs: if n == 0 { 8 } else { n },
        tables,
    })
}

fn ets_reco(b: &[u8]) -> Result<EtsTables, TlvError> {
    let ([_reserved, rest @ ..], ETS_LEN) = (b, b.len() + 4) else {
        return Err(TlvError::EtsRecoBadLen);
    };
    ets_tables(rest).ok_or(TlvError::EtsRecoBadLen)?
}

fn app(b: &[u8]) -> Result<AppTable, TlvError> {
    let [_reserved, entries @ ..] = b else {
        return Err(TlvError::AppBadLen);
    };
    if entries.len() % APP_ENTRY_LEN != 0 {
        return Err(TlvError::AppBadLen);
    }
    let mut t = AppTable::default();
    for e in entries.chunks_exact(APP_ENTRY_LEN) {
        if let [a, p0, p1] = e {
            // at most MAX_APP entries fit a 9-bit length: push cannot fail
            t.push(AppEntry {
                priority: a >> 5,
                selector: a & 0x07,
                protocol: u16::from_be_bytes([*p0, *p1]),
            });
        }
    }
    Ok(t)
}

/// The priority assignment table: two priorities per byte, priority 0 in
/// the high nibble.
fn prio_bytes(t: &EtsTables) -> [u8; 4] {
    let mut out = [0u8; 4];
    for (i, tc) in t.prio_tc.iter().enumerate() {
        out[i / 2] |= (tc & 0x0f) << if i % 2 == 0 { 4 } else { 0 };
    }
    out
}

fn org(w: &mut Writer, sub: u8, len: usize) {
    w.header(TLV_ORG, len);
    w.put(&OUI_8021);
    w.put(&[sub]);
}

fn tables(w: &mut Writer, t: &EtsTables) {
    w.put(&prio_bytes(t));
    w.put(&t.tc_bw);
    w.put(&t.tsa);
}

/// Writes the TLVs of `d` that are present: ETS Configuration, ETS
/// Recommendation, PFC, Application Priority.
pub fn encode_tlvs(d: &Dcbx, w: &mut Writer) {
    if let Some(e) = &d.ets_config {
        org(w, SUB_ETS_CONFIG, ETS_LEN);
        w.put(&[u8::from(e.willing) << 7 | u8::from(e.cbs) << 6 | (e.max_tcs & 0x07)]);
        tables(w, &e.tables);
    }
    if let Some(t) = &d.ets_reco {
        org(w, SUB_ETS_RECO, ETS_LEN);
        w.put(&[0]);
        tables(w, t);
    }
    if let Some(p) = &d.pfc {
        org(w, SUB_PFC, PFC_LEN);
        w.put(&[
            u8::from(p.willing) << 7 | u8::from(p.mbc) << 6 | (p.cap & 0x0f),
            p.enable,
        ]);
    }
    if let Some(a) = &d.app {
        org(w, SUB_APP, APP_MIN_LEN + APP_ENTRY_LEN * a.entries().len());
        w.put(&[0]);
        for e in a.entries() {
            w.put(&[(e.priority & 7) << 5 | (e.selector & 7)]);
            w.put(&e.protocol.to_be_bytes());
        }
    }
}
