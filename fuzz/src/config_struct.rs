//! Validation on generated configurations with any values: every
//! section's checks, not only the TOML reader.

use arbitrary::{Arbitrary, Unstructured};

use crate::gen::GenConfig;

pub fn check(data: &[u8]) {
    let Ok(g) = GenConfig::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    let text = g.render(true);
    let _ = crate::config_text::validated(&text);
}
