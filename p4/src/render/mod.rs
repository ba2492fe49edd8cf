//! One renderer per output format of the table operations.

pub mod bfrt;
pub mod cli;
pub mod p4runtime;
pub mod stf;

/// A MAC as the renderers write it (`02:00:00:00:00:01`).
pub(crate) fn mac_str(m: &[u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}
