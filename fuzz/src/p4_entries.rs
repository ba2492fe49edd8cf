//! The P4 entry generator on generated valid configurations: both
//! targets, every format; a refusal names its field.

use arbitrary::{Arbitrary, Unstructured};
use dataplane_p4::target::Target;

use crate::gen::GenConfig;

pub fn check(data: &[u8]) {
    let Ok(g) = GenConfig::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    let text = g.render(false);
    let Some(plan) = crate::config_text::validated(&text) else {
        return;
    };
    for target in Target::ALL {
        match dataplane_p4::entries(&plan, target) {
            Ok(e) => {
                if target == Target::Bmv2 {
                    assert!(!e.cli.is_empty());
                }
                assert!(e.p4runtime_json.starts_with('{'));
                assert_eq!(e.bfrt_py.is_some(), target == Target::Tofino);
            }
            Err(r) => {
                assert!(!r.refusals.is_empty());
                for f in &r.refusals {
                    assert!(!f.field.is_empty() && !f.reason.is_empty(), "{f:?}");
                }
                let _ = r.to_string();
            }
        }
    }
}
