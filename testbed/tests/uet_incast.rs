//! The UET host emulator through a trimming switch, end to end: a 4:1
//! incast of UET messages into a 64 KB pool (namespaces `dpt-uh*`). The
//! switch trims what its buffer cannot take; the receiver recognises every
//! trimmed packet (trim DSCP, cut payload) and NACKs it at once, the
//! senders resend those packets, every message completes, and the
//! switch's trim counters equal the NACKs the hosts saw.

use std::time::{Duration, Instant};

use testbed::uetincast::{run_uet_incast, UetIncast};

#[test]
fn trimmed_packets_are_nacked_and_resent_until_every_message_completes() {
    let t0 = Instant::now();
    let spec = UetIncast {
        senders: 4,
        messages: 8,
        message_bytes: 16 * 1024,
        timeout: Duration::from_secs(15),
        progress: false,
        ..UetIncast::default()
    };
    let bin = testbed::dataplane_bin();
    let r = run_uet_incast(std::path::Path::new(&bin), "uh", &spec, true).unwrap();
    let j = r.to_json();
    eprintln!("{j:#}");
    assert!(r.complete, "every host done: {j}");
    assert_eq!(r.mct_ms.len(), 4 * 8, "every message acknowledged: {j}");
    assert_eq!(r.hosts[0].messages_rx, 4 * 8, "{j}");
    // the buffer overflowed and the switch trimmed instead of dropping
    assert!(
        r.switch.trim > 0,
        "no trim: the incast did not overflow: {j}"
    );
    assert_eq!(
        r.switch.trim,
        r.switch.trim_sent + r.switch.trim_drop,
        "{j}"
    );
    assert_eq!(
        r.switch.drop_shared_full, 0,
        "a trimming queue drops nothing: {j}"
    );
    // the receiver saw exactly the trimmed packets the switch sent, and
    // NACKed each; the senders got every NACK and resent
    assert_eq!(r.trimmed_rx(), r.switch.trim_sent, "{j}");
    assert_eq!(r.nacks_tx(), r.switch.trim_sent, "{j}");
    assert_eq!(r.nacks_rx(), r.nacks_tx(), "{j}");
    assert!(r.retransmitted() >= r.nacks_rx(), "{j}");
    assert_eq!(r.hosts[0].cut_rx, 0, "{j}");
    eprintln!("uet_incast: {:.1} s", t0.elapsed().as_secs_f64());
}
