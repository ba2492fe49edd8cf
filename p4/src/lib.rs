//! P4 targets: table entries for the v1model program (bmv2 simple_switch,
//! `p4/v1model/dataplane.p4`) and the TNA program (Tofino,
//! `p4/tna/dataplane.p4`), generated from the same validated [`Plan`] the
//! eBPF data plane is configured from.
//!
//! [`entries`] renders, for a [`Target`]:
//!
//! * `cli`: simple_switch_CLI commands (bmv2; empty for Tofino);
//! * `p4runtime_json`: a P4Runtime `WriteRequest` in the protobuf JSON
//!   mapping (table ids, field ids, action and parameter ids are the `@id`
//!   annotations and declaration orders of the P4 sources, so no p4info is
//!   needed to produce it);
//! * `bfrt_py`: a bfrt_python script for Tofino (tables, ports, and the
//!   traffic-manager settings that carry PFC and the buffer: pools, lossless
//!   priority groups with headroom and dynamic thresholds, MAC PFC enables).
//!
//! Output is deterministic (plan order, maps in first-use order). A
//! configuration using something the target cannot express is refused
//! whole ([`RefusedFeature`]), each reason naming its configuration field.
//!
//! The table, key and action names, widths and ids the generator uses are
//! its schema ([`tables`], [`actions`]); [`check_p4_source`] compares it with
//! the P4 text (parsed by [`table_names_in_p4`]) so the two cannot drift.
//!
//! [`corpus`] is the conformance corpus shared by the targets: cases
//! (configuration, input frame, ingress port, expected output or drop) that
//! the eBPF programs run through BPF_PROG_TEST_RUN and that become p4c STF
//! tests for bmv2.
//!
//! Verified where the p4lang tools are installed (`cargo xtask p4 test`,
//! p4/README.md): the CLI files load into simple_switch, the P4Runtime
//! entries match p4c's and bf-p4c's p4info, the bfrt_python calls match
//! bf-p4c's bfrt.json and the SDE's tm/port schemas. Not run on a Tofino.
//!
//! | module | concern |
//! |---|---|
//! | [`target`] | targets, options, refusal types, LPM sizes |
//! | [`entries`] | a plan's entries for a target, every format |
//! | [`schema`] | tables, keys, actions of the P4 programs |
//! | [`ops`] | the plan as table operations |
//! | [`refusals`] | what a target cannot express, by field |
//! | [`render`] | CLI, P4Runtime JSON, bfrt_python, STF |
//! | [`source`] | reading the P4 sources; their names against the schema |
//! | [`hash`] | bmv2's CRC-32 flow hash |
//! | [`corpus`] | the conformance corpus shared with eBPF |
//! | [`stats`] | bmv2 counters, pfcstat-style |

pub mod corpus;
pub mod entries;
pub mod hash;
pub mod ops;
pub mod refusals;
pub mod render;
pub mod schema;
pub mod source;
pub mod stats;
pub mod target;

pub use entries::*;
pub use hash::*;
pub use ops::*;
pub use refusals::*;
pub use render::{bfrt::*, cli::*, p4runtime::*, stf::*};
pub use schema::*;
pub use source::check::check_p4_source;
pub use source::read::table_names_in_p4;
pub use source::{P4Action, P4Key, P4Symbols, P4Table};
pub use target::*;
