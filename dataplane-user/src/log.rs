//! The controller's log: levels set from the command line (`--log-level`),
//! plain lines by default or one JSON object per line (`--log-json`) for
//! log collectors. Info goes to stdout, warnings and errors to stderr; a
//! closed stream is not an error for a long-running controller.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Error = 0,
    Warn = 1,
    Info = 2,
    Debug = 3,
}

static LEVEL: AtomicU8 = AtomicU8::new(Level::Info as u8);
static JSON: AtomicBool = AtomicBool::new(false);

/// Parses "error" / "warn" / "info" / "debug".
pub fn parse_level(s: &str) -> Option<Level> {
    match s {
        "error" => Some(Level::Error),
        "warn" => Some(Level::Warn),
        "info" => Some(Level::Info),
        "debug" => Some(Level::Debug),
        _ => None,
    }
}

pub fn set(level: Level, json: bool) {
    LEVEL.store(level as u8, Ordering::Relaxed);
    JSON.store(json, Ordering::Relaxed);
}

pub fn enabled(level: Level) -> bool {
    level as u8 <= LEVEL.load(Ordering::Relaxed)
}

pub fn log(level: Level, msg: &str) {
    if !enabled(level) {
        return;
    }
    let msg = msg.trim_end_matches('\n');
    let line = if JSON.load(Ordering::Relaxed) {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64();
        let lv = ["error", "warn", "info", "debug"][level as usize];
        serde_json::json!({ "time": t, "level": lv, "msg": msg }).to_string()
    } else {
        msg.to_string()
    };
    if level <= Level::Warn {
        let mut e = std::io::stderr().lock();
        let _ = writeln!(e, "{line}");
    } else {
        let mut o = std::io::stdout().lock();
        let _ = writeln!(o, "{line}");
        let _ = o.flush();
    }
}

pub fn info(msg: &str) {
    log(Level::Info, msg)
}
pub fn warn(msg: &str) {
    log(Level::Warn, msg)
}
pub fn error(msg: &str) {
    log(Level::Error, msg)
}
pub fn debug(msg: &str) {
    log(Level::Debug, msg)
}
