//! The reason table: codes unique and ordered, every name once, parse
//! errors first.

use dataplane_common::parse::ParseError;
use dataplane_common::reason::{code_name, malformed, Reason};

#[test]
fn codes_are_unique_ordered_and_named_once() {
    for w in Reason::ALL.windows(2) {
        assert!(w[0].code() < w[1].code(), "{w:?} out of order");
    }
    for r in Reason::ALL {
        assert_eq!(Reason::from_code(r.code()), Some(r));
        assert_eq!(code_name(r.code()), r.name());
    }
    for e in ParseError::ALL {
        assert_eq!(code_name(malformed(e)), e.name());
        assert_eq!(Reason::from_code(malformed(e)), None);
    }
    let mut names = vec![""; ParseError::ALL.len() + Reason::ALL.len()];
    let all = ParseError::ALL
        .iter()
        .map(|e| e.name())
        .chain(Reason::ALL.iter().map(|r| r.name()));
    for (i, n) in all.enumerate() {
        assert!(!names[..i].contains(&n), "name {n} used twice");
        names[i] = n;
    }
    assert_eq!(code_name(255), "unknown");
}
