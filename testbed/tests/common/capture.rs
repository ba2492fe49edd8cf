//! Frames off the wire in a test namespace: tshark capturing on an
//! interface, started the same way by every wire test, and the next
//! frame of an EtherType on a raw socket.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Starts `tshark -l -n -i <iface> -f <filter> -c <count> -T fields` in
/// namespace `ns` (its full name), with `-o` for each of `prefs` and `-e`
/// for each of `fields`; returns once tshark says it is capturing, 200 ms
/// later. Its stdout: one line a packet, the fields tab-separated. Panics
/// if tshark is missing or does not start within 20 s.
pub fn tshark_capture(
    ns: &str,
    iface: &str,
    filter: &str,
    count: u32,
    prefs: &[&str],
    fields: &[&str],
) -> Child {
    let count = count.to_string();
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", ns, "tshark", "-l", "-n", "-i", iface])
        .args(["-f", filter, "-c", &count, "-T", "fields"]);
    for p in prefs {
        cmd.args(["-o", p]);
    }
    for f in fields {
        cmd.args(["-e", f]);
    }
    let mut tshark = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tshark (installed by `cargo xtask setup`)");
    // wait until tshark captures
    let err = tshark.stderr.take().unwrap();
    let mut err_lines = BufReader::new(err).lines();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match err_lines.next() {
            Some(Ok(l)) if l.contains("Capturing on") => break,
            Some(Ok(_)) => {}
            _ => panic!("tshark did not start"),
        }
        assert!(Instant::now() < deadline);
    }
    std::thread::sleep(Duration::from_millis(200));
    tshark
}

/// The next frame of EtherType `et` received on `s` within a second
/// (times the slow-machine factor, `testbed::slow`).
pub fn next_frame(s: &testbed::raw::RawSocket, et: u16) -> Option<Vec<u8>> {
    let deadline = Instant::now() + testbed::slow::scaled(Duration::from_secs(1));
    let mut buf = [0u8; 2048];
    while Instant::now() < deadline {
        while let Some(rx) = s.recv(&mut buf).unwrap() {
            let f = &buf[..rx.len.min(buf.len())];
            if rx.pkttype != libc::PACKET_OUTGOING && f.len() >= 14 && f[12..14] == et.to_be_bytes()
            {
                return Some(f.to_vec());
            }
        }
        s.wait(Duration::from_millis(10));
    }
    None
}
