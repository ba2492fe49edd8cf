//! The show tables are drawn as Python's tabulate draws them (what
//! sonic-utilities prints with): the same rows go through our
//! `show::table` and through tabulate (Debian's python3-tabulate, which
//! `cargo xtask setup` installs), and must come out byte for byte equal.

use std::io::Write;
use std::process::{Command, Stdio};

use dataplane_user::show::table::{plain, simple};

/// Rows of a table.
type Rows = Vec<Vec<String>>;

/// Tables with headers (tablefmt='simple', stralign='right') and
/// headerless ones (default format), as JSON for the Python side.
fn cases() -> (Vec<(Vec<String>, Rows)>, Vec<Rows>) {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let with_headers = vec![
        (
            s(&["Port Rx", "PFC0", "PFC1", "PFC2"]),
            vec![
                s(&["Ethernet0", "0", "1,234", "12,345,678"]),
                s(&["veth-very-long-port-name", "7", "0", "N/A"]),
            ],
        ),
        (
            s(&[
                "Port",
                "TxQ",
                "Counter/pkts",
                "Counter/bytes",
                "Drop/pkts",
                "Drop/bytes",
            ]),
            vec![
                s(&["eth0", "UC0", "18446744073709551615", "0", "5", "1500"]),
                s(&["eth0", "UC7", "1", "2", "3", "4"]),
            ],
        ),
        (s(&["Port", "PG0", "PG1"]), vec![]),
        (
            s(&["Port", "UC0"]),
            vec![s(&["Ethernet8", "N/A"]), s(&["e1", "123456789"])],
        ),
        // portstat: a rate with a space, a state letter, N/A
        (
            s(&["IFACE", "STATE", "RX_OK", "RX_BPS", "RX_UTIL", "TX_OVR"]),
            vec![
                s(&[
                    "Ethernet0",
                    "X",
                    "18,446,744,073,709,551,615",
                    "2000.00 MB/s",
                    "64.00%",
                    "0",
                ]),
                s(&["enp1s0f0np0", "N/A", "N/A", "0.00 B/s", "N/A", "N/A"]),
            ],
        ),
    ];
    let headerless = vec![
        vec![
            s(&["ecn", "ecn_all"]),
            s(&["green_min_threshold", "1048576"]),
            s(&["green_drop_probability", "5"]),
            s(&["wred_green_enable", "true"]),
        ],
        vec![s(&["size", "16777216"]), s(&["xoff", "5"])],
        vec![s(&["dynamic_th", "-8"]), s(&["static_th", "262144"])],
        vec![s(&["pool", "ingress_lossless_pool"]), s(&["size", "0"])],
    ];
    (with_headers, headerless)
}

const SCRIPT: &str = r#"
import json, sys
from tabulate import tabulate
cases = json.load(sys.stdin)
out = []
for headers, rows in cases["with_headers"]:
    out.append(tabulate(rows, headers, tablefmt="simple", stralign="right"))
for rows in cases["headerless"]:
    out.append(tabulate(rows))
json.dump(out, sys.stdout)
"#;

#[test]
fn tables_match_python_tabulate() {
    let (with_headers, headerless) = cases();
    let input = serde_json::json!({ "with_headers": with_headers, "headerless": headerless });
    // Debian's interpreter: python3-tabulate lives in its dist-packages
    let mut child = Command::new("/usr/bin/python3")
        .args(["-c", SCRIPT])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("/usr/bin/python3 (cargo xtask setup installs python3-tabulate)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "python tabulate failed (cargo xtask setup installs python3-tabulate): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want: Vec<String> = serde_json::from_slice(&out.stdout).unwrap();
    let mut got = Vec::new();
    for (h, rows) in &with_headers {
        let h: Vec<&str> = h.iter().map(String::as_str).collect();
        got.push(simple(&h, rows));
    }
    for rows in &headerless {
        got.push(plain(rows));
    }
    assert_eq!(want.len(), got.len());
    for (w, g) in want.iter().zip(&got) {
        assert_eq!(g, w, "\n--- tabulate\n{w}\n--- ours\n{g}");
    }
}
