//! Configuration errors: every problem names its field and what was
//! expected; all of them are reported at once.

use std::fmt;

/// One problem in a configuration: where, and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// Path of the field, e.g. `port[1].pfc_enable`.
    pub field: String,
    pub message: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// Every problem found in a configuration.
#[derive(Debug, Clone)]
pub struct ConfigError {
    pub source: String,
    pub errors: Vec<FieldError>,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{}: {} error(s), nothing applied:",
            self.source,
            self.errors.len()
        )?;
        for e in &self.errors {
            writeln!(f, "  {e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigError {}
