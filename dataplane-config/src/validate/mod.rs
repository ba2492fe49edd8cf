//! Validation: parse the file, check every section, collect every error,
//! and build the plan only when there is none. One function per section;
//! the order of the checks is the order of the messages.

use std::path::Path;

use crate::values::*;
use crate::*;

mod buffer;
mod dcbx;
mod forwarding;
mod pfcwd;
mod ports;
mod routing;
mod trim;

impl Config {
    /// Parses TOML text. Syntax and unknown-field errors come from the TOML
    /// reader with line and column.
    pub fn parse(text: &str, source: &str) -> Result<Config, ConfigError> {
        toml::from_str(text).map_err(|e| ConfigError {
            source: source.into(),
            errors: vec![FieldError {
                field: "(file)".into(),
                message: e.to_string().trim_end().replace('\n', "\n    "),
            }],
        })
    }

    /// Reads and parses a file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let source = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            source: source.clone(),
            errors: vec![FieldError {
                field: "(file)".into(),
                message: format!("cannot read: {e}"),
            }],
        })?;
        Config::parse(&text, &source)
    }

    /// Validates everything and resolves the tables. Reports every error.
    pub fn validate(&self, source: &str) -> Result<Plan, ConfigError> {
        let mut errs = Vec::new();
        let mut err = |field: String, message: String| errs.push(FieldError { field, message });
        let (cnp_tc, default_malformed) = self.validate_switch(&mut err);
        let maps = self.tc_maps(&mut err);
        let mut ports = self.validate_ports(cnp_tc, default_malformed, &maps, &mut err);
        let (nexthops, groups, routes) = self.validate_forwarding(&ports, &mut err);
        let routing = self.validate_routing(&mut err);
        if !routes.is_empty() || routing.is_some() {
            for p in &mut ports {
                p.config.flags |= dataplane_common::maps::PORT_F_FORWARD;
            }
        }
        if let Some(tc) = self.uet.as_ref().and_then(|u| u.feedback_tc) {
            let tc = check_tc(tc, "uet.feedback_tc", &mut err);
            for p in &mut ports {
                p.config.uet_feedback_tc = dataplane_common::maps::UET_FEEDBACK_TC_SET | tc;
            }
        }
        let hash_seed = self.hash_seed(&mut err);
        let buffer = self.validate_buffer(&ports, &mut err);
        let pfcwd = self.validate_pfcwd(&mut err);
        let dcbx = self.validate_dcbx(&ports, &mut err);
        let trim = self.validate_trim(&ports, buffer.is_some(), &mut err);
        if pfcwd.is_some() && buffer.is_none() {
            err(
                "pfcwd".into(),
                "the watchdog watches the buffer model's queues: add a [buffer] section".into(),
            );
        }
        if !errs.is_empty() {
            return Err(ConfigError {
                source: source.into(),
                errors: errs,
            });
        }
        let buffer_response_ns = buffer.as_ref().map(|b| b.response_ns).unwrap_or(0);
        Ok(Plan {
            instance: self.switch.name.clone(),
            hash_seed,
            buffer,
            pfcwd,
            buffer_response_ns,
            ports,
            nexthops,
            groups,
            routes,
            routing,
            dcbx,
            trim,
        })
    }

    /// `[switch]`: the instance name, the CNP class, the malformed default.
    fn validate_switch(&self, err: &mut impl FnMut(String, String)) -> (u8, u8) {
        if let Err(m) = check_instance_name(&self.switch.name) {
            err("switch.name".into(), m);
        }
        let cnp_tc = check_tc(self.switch.cnp_tc, "switch.cnp_tc", err);
        let default_malformed = check_malformed(&self.switch.malformed, "switch.malformed", err);
        (cnp_tc, default_malformed)
    }

    /// `switch.hash_seed`, or one derived from the name (tiers differ).
    fn hash_seed(&self, err: &mut impl FnMut(String, String)) -> u32 {
        match self.switch.hash_seed {
            Some(s) if (0..=i64::from(u32::MAX)).contains(&s) => s as u32,
            Some(s) => {
                err(
                    "switch.hash_seed".into(),
                    format!("expected an integer 0-4294967295, got {s}"),
                );
                0
            }
            None => fnv1a(self.switch.name.as_bytes()),
        }
    }
}
