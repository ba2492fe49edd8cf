//! DCBX decisions: does a peer agree with this port about PFC, and what a
//! willing station adopts from its peer (IEEE 802.1Qaz). Pure functions
//! over the decoded TLVs ([`crate::wire::dcbx`]); the controller, the
//! testbed's host emulator and the tests all call these.

use crate::wire::dcbx::{AppTable, Dcbx, EtsConfig, Pfc};
use crate::wire::udp::ROCEV2_PORT;

/// What disagrees with a peer. The discriminant is a bit in
/// [`Mismatches`]: never reorder, only append.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// The peer's PFC enable vector differs from this port's `pfc_enable`.
    PfcEnable = 0,
    /// The peer maps UDP 4791 (RoCEv2) to a priority that is not lossless
    /// on this port.
    RocePriority = 1,
    /// Neither side is willing and their PFC or ETS configurations differ:
    /// DCBX cannot converge them.
    Willing = 2,
    /// The peer speaks LLDP without a PFC Configuration TLV: its PFC state
    /// is unknown.
    PfcAbsent = 3,
}

impl Field {
    pub const ALL: [Field; 4] = [
        Field::PfcEnable,
        Field::RocePriority,
        Field::Willing,
        Field::PfcAbsent,
    ];

    /// Stable name (the `field` label of `dcbx_mismatch`).
    pub const fn name(self) -> &'static str {
        match self {
            Field::PfcEnable => "pfc_enable",
            Field::RocePriority => "roce_priority",
            Field::Willing => "willing",
            Field::PfcAbsent => "pfc_absent",
        }
    }
}

/// A set of [`Field`]s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mismatches(pub u8);

impl Mismatches {
    pub fn contains(self, f: Field) -> bool {
        self.0 & (1 << f as u8) != 0
    }

    pub fn insert(&mut self, f: Field) {
        self.0 |= 1 << f as u8;
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The fields in the set, in [`Field::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = Field> {
        Field::ALL.into_iter().filter(move |f| self.contains(*f))
    }
}

/// What this port runs and advertises.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Local {
    pub pfc: Pfc,
    pub ets: EtsConfig,
}

/// The mismatches between this port (`local`) and what its peer
/// advertised (`peer`):
///
/// * `pfc_absent`: no PFC TLV from the peer (the other checks then only
///   use what it did send);
/// * `pfc_enable`: the peer's enable vector is not ours;
/// * `roce_priority`: the peer's application table puts UDP 4791 on a
///   priority that is not lossless here;
/// * `willing`: neither side willing, and the PFC vectors or the ETS
///   configurations (priority-to-TC, bandwidth, TSA) differ.
pub fn mismatches(local: &Local, peer: &Dcbx) -> Mismatches {
    let mut m = Mismatches::default();
    match &peer.pfc {
        None => m.insert(Field::PfcAbsent),
        Some(p) => {
            if p.enable != local.pfc.enable {
                m.insert(Field::PfcEnable);
            }
            let ets_differs = peer
                .ets_config
                .is_some_and(|e| e.tables != local.ets.tables);
            if !local.pfc.willing && !p.willing && (p.enable != local.pfc.enable || ets_differs) {
                m.insert(Field::Willing);
            }
        }
    }
    if let Some(prio) = peer.app.and_then(|a| a.udp_priority(ROCEV2_PORT)) {
        if local.pfc.enable & (1 << (prio & 7)) == 0 {
            m.insert(Field::RocePriority);
        }
    }
    m
}

/// Does a willing station with chassis MAC `own_mac` adopt the
/// configuration of a peer with `peer_mac`? When the peer is not willing,
/// yes; when both are, 802.1Qaz breaks the tie by MAC: the station with
/// the lower address keeps its own.
pub fn adopts(own_willing: bool, own_mac: [u8; 6], peer_willing: bool, peer_mac: [u8; 6]) -> bool {
    own_willing && (!peer_willing || own_mac > peer_mac)
}

/// The operational configuration of a station that administratively runs
/// `admin` and received `peer`: a willing station takes the peer's PFC
/// vector, the peer's ETS recommendation as its ETS tables, and the peer's
/// application table (the host emulator answers a switch with this).
pub fn operational(admin: &Dcbx, own_mac: [u8; 6], peer: &Dcbx, peer_mac: [u8; 6]) -> Dcbx {
    let mut out = *admin;
    let own_willing = admin.pfc.is_some_and(|p| p.willing);
    if let (Some(own), Some(theirs)) = (out.pfc.as_mut(), peer.pfc) {
        if adopts(own.willing, own_mac, theirs.willing, peer_mac) {
            own.enable = theirs.enable;
        }
    }
    let ets_willing = admin.ets_config.is_some_and(|e| e.willing);
    let peer_ets_willing = peer.ets_config.is_some_and(|e| e.willing);
    if let (Some(own), Some(reco)) = (out.ets_config.as_mut(), peer.ets_reco) {
        if adopts(ets_willing, own_mac, peer_ets_willing, peer_mac) {
            own.tables = reco;
        }
    }
    let peer_willing = peer.pfc.is_some_and(|p| p.willing);
    if let Some(app) = peer.app {
        if adopts(own_willing, own_mac, peer_willing, peer_mac) {
            out.app = Some(app);
        }
    }
    out
}

/// An application table: UDP 4791 on `roce_priority` (when given), then
/// `DSCP -> priority` for every DSCP `dscp_to_prio` lists (`Some`).
pub fn app_table(roce_priority: Option<u8>, dscp_to_prio: &[Option<u8>; 64]) -> AppTable {
    use crate::wire::dcbx::{AppEntry, SEL_DSCP, SEL_UDP};
    let mut t = AppTable::default();
    if let Some(p) = roce_priority {
        t.push(AppEntry {
            priority: p & 7,
            selector: SEL_UDP,
            protocol: ROCEV2_PORT,
        });
    }
    for (dscp, p) in dscp_to_prio.iter().enumerate() {
        if let Some(p) = p {
            t.push(AppEntry {
                priority: p & 7,
                selector: SEL_DSCP,
                protocol: dscp as u16,
            });
        }
    }
    t
}
