//! Shared meaning of the data plane.
//!
//! Everything the pipeline decides lives here as a pure function over plain
//! state, so the eBPF programs, the host tests, the testbed and any simulator
//! run the very same code:
//!
//! * [`wire`]: typed, bounds-checked readers for every header we parse;
//! * [`parse`]: the one parser every stage shares, with a defined error per
//!   header boundary;
//! * [`classify`]: trust mode, DSCP/PCP to traffic class, RoCEv2 and CNP
//!   detection, lossless priorities;
//! * [`maps`]: the `#[repr(C)]` keys and values the programs and the
//!   controller exchange (no implicit padding; `aya::Pod` with the `user`
//!   feature);
//! * [`reason`]: the one table of reason codes (malformed, to the kernel,
//!   dropped) that counters, events, metrics, the P4 programs and the
//!   conformance corpus share;
//! * [`names`]: every map and program name of the eBPF object;
//! * [`dcbx`]: does a DCBX peer agree about PFC, what a willing station
//!   adopts (the LLDP/802.1Qaz codec is in [`wire::lldp`], [`wire::dcbx`]);
//! * [`rand`]: seeded generators for tests, the lab and simulations;
//! * [`trim`]: packet trimming (SONiC's design): which of the buffer
//!   model's drops become trims, and the trimmed frame's headers.
#![no_std]

#[cfg(feature = "user")]
extern crate alloc;

pub mod buffer;
pub mod classify;
pub mod dcbx;
pub mod dcqcn;
pub mod events;
pub mod lb;
pub mod lossless;
pub mod maps;
pub mod names;
pub mod parse;
pub mod rand;
pub mod reason;
pub mod route;
pub mod slots;
pub mod trim;
pub mod verdict;
pub mod wire;

#[cfg(feature = "user")]
pub mod build;
