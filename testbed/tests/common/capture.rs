//! tshark capturing on an interface inside a test namespace, started the
//! same way by every wire test.

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
