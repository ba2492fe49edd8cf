//! One renderer per output format of the table operations.

pub mod bfrt;
pub mod cli;
pub mod p4runtime;
pub mod stf;
