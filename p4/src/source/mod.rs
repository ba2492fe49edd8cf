//! The P4 text as the generator sees it: the tables and actions a program
//! declares ([`read`], over [`tokens`]), compared with the schema
//! ([`check`]).

pub mod check;
pub mod read;
pub mod tokens;

use std::collections::BTreeMap;

/// A key field as written in a P4 table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct P4Key {
    /// The field expression (`hdr.ipv4.dst_addr`).
    pub expr: String,
    pub kind: String,
    /// `@name("...")`, if any.
    pub name: Option<String>,
}

/// A table as declared in a P4 control.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct P4Table {
    pub control: String,
    pub name: String,
    pub id: Option<u32>,
    pub keys: Vec<P4Key>,
    pub actions: Vec<String>,
    /// The program fills it itself: `const entries`, or no key and a
    /// `const default_action` (a step of the pipeline written as a table).
    pub fixed: bool,
    /// `size = N`.
    pub size: Option<u64>,
}

/// An action as declared in a P4 source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct P4Action {
    pub control: String,
    pub name: String,
    pub id: Option<u32>,
    /// (name, width; 0 when the type is not a known bit<N>)
    pub params: Vec<(String, u32)>,
}

/// The tables and actions declared in a P4 source, by qualified name
/// (`Control.name`; top-level actions unqualified).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct P4Symbols {
    pub tables: BTreeMap<String, P4Table>,
    pub actions: BTreeMap<String, P4Action>,
}
