//! The controller's log lines: plain (the message alone, which the lab's
//! tests wait for, e.g. `ready:`) and JSON (`time`, `level`, `msg`).

use std::io::Write;
use std::sync::{Arc, Mutex};

use dataplane_user::log::Lines;

#[derive(Clone, Default)]
struct Buf(Arc<Mutex<Vec<u8>>>);

impl Write for Buf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn lines(json: bool, emit: impl FnOnce()) -> String {
    let buf = Buf::default();
    let out = buf.clone();
    let sub = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_writer(move || out.clone())
        .event_format(Lines { json })
        .finish();
    tracing::subscriber::with_default(sub, emit);
    let v = buf.0.lock().unwrap().clone();
    String::from_utf8(v).unwrap()
}

#[test]
fn plain_lines_are_the_message_alone() {
    let got = lines(false, || {
        dataplane_user::log::info("ready: instance sw1 pinned at /x\n");
        dataplane_user::log::debug("not shown at info");
        dataplane_user::log::warn("careful");
    });
    assert_eq!(got, "ready: instance sw1 pinned at /x\ncareful\n");
}

#[test]
fn json_lines_carry_time_level_msg() {
    let got = lines(true, || dataplane_user::log::error("pfcwd: \"x\" failed"));
    let v: serde_json::Value = serde_json::from_str(got.trim()).expect("one JSON object");
    assert_eq!(v["level"], "error");
    assert_eq!(v["msg"], "pfcwd: \"x\" failed");
    assert!(v["time"].as_f64().unwrap() > 1.6e9, "{v}");
    assert_eq!(v.as_object().unwrap().len(), 3, "{v}");
}
