//! The controller's log on `tracing`: levels set from the command line
//! (`--log-level`), plain lines by default or one JSON object per line
//! (`--log-json`: time, level, msg) for log collectors. Info and debug go
//! to stdout, warnings and errors to stderr; a closed stream is not an
//! error for a long-running controller. `info`/`warn`/`error`/`debug` are
//! the call sites' short names for tracing events.

use std::fmt;

use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::writer::MakeWriterExt;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

pub use tracing::Level;

/// Parses "error" / "warn" / "info" / "debug".
pub fn parse_level(s: &str) -> Option<Level> {
    match s {
        "error" => Some(Level::ERROR),
        "warn" => Some(Level::WARN),
        "info" => Some(Level::INFO),
        "debug" => Some(Level::DEBUG),
        _ => None,
    }
}

/// Installs the process's subscriber (once; later calls change nothing).
pub fn set(level: Level, json: bool) {
    let out = std::io::stderr
        .with_max_level(Level::WARN)
        .or_else(std::io::stdout);
    let _ = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(out)
        .event_format(Lines { json })
        .try_init();
}

/// Our line format: the message alone, or `{"time","level","msg"}`.
pub struct Lines {
    pub json: bool,
}

impl<S, N> FormatEvent<S, N> for Lines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut w: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut msg = Message(String::new());
        event.record(&mut msg);
        let msg = msg.0.trim_end_matches('\n');
        if self.json {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs_f64();
            let level = event.metadata().level().as_str().to_lowercase();
            let line = serde_json::json!({ "time": t, "level": level, "msg": msg });
            writeln!(w, "{line}")
        } else {
            writeln!(w, "{msg}")
        }
    }
}

/// The `message` field of an event.
struct Message(String);

impl tracing::field::Visit for Message {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "message" {
            self.0 = value.to_string();
        }
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

pub fn info(msg: &str) {
    tracing::info!("{msg}")
}
pub fn warn(msg: &str) {
    tracing::warn!("{msg}")
}
pub fn error(msg: &str) {
    tracing::error!("{msg}")
}
pub fn debug(msg: &str) {
    tracing::debug!("{msg}")
}
