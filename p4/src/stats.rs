//! The v1model program's counters on a running simple_switch, read with
//! `simple_switch_CLI` (Thrift) and shown the way SONiC's `pfcstat` and
//! `show queue counters` show a switch's: PFC frames received and sent per
//! priority, packets and bytes per traffic class in and out, ECN-marked
//! and WRED-dropped packets per class, trimmed packets per queue (SONiC's
//! `Trim/pkts`, `TrimSent/pkts`, `TrimDrop/pkts`), malformed frames by
//! reason, UET packets received and the per-port events (drops by reason,
//! PFC XOFF/XON, punts).
//!
//! Ports are numbered by their order in the configuration, as the entry
//! generator numbers them (`p4::entries`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};
use dataplane_common::parse::ParseError;
use serde::Serialize;

use dataplane_config::Plan;

/// The program's per-port event slots (`port_events`, index port * 16 +
/// EV_*), by name. The program defines but does not count `punted` (punts
/// show on the CPU port) and `pfc_xon` (sent from egress: see `tx_pfc`,
/// which counts every PFC frame sent); `pfc_xoff` is the ingress PG
/// crossing its XOFF threshold.
pub const EVENTS: [&str; 16] = [
    "roce",
    "cnp",
    "lossless",
    "non_ip",
    "qinq",
    "pause",
    "mac_control_other",
    "routed",
    "punted",
    "drop_no_route",
    "drop_no_member",
    "drop_no_neighbour",
    "drop_headroom",
    "drop_shared_full",
    "pfc_xoff",
    "pfc_xon",
];

/// Per-class counters: (counter, slots per port).
const PER_CLASS: [&str; 8] = [
    "DpIngress.rx_tc_count",
    "DpIngress.rx_pfc_count",
    "DpEgress.tx_tc_count",
    "DpEgress.tx_pfc_count",
    "DpEgress.ecn_marked_count",
    "DpEgress.wred_drop_count",
    "DpIngress.trim_count",
    "DpEgress.trim_sent_count",
];
const RX_UET: &str = "DpIngress.rx_uet_count";
const MALFORMED: &str = "DpIngress.malformed_count";
const PORT_EVENTS: &str = "DpIngress.port_events";

/// One port's counters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PortCounters {
    pub name: String,
    pub port: u32,
    pub rx_packets: [u64; 8],
    pub rx_bytes: [u64; 8],
    pub tx_packets: [u64; 8],
    pub tx_bytes: [u64; 8],
    /// PFC frames received with the priority's enable bit set.
    pub rx_pfc: [u64; 8],
    /// PFC frames sent (XOFF and XON) for the priority.
    pub tx_pfc: [u64; 8],
    pub ecn_marked: [u64; 8],
    pub wred_dropped: [u64; 8],
    /// Packets of the queue trimmed instead of dropped (`Trim/pkts`; the
    /// egress port's, by the queue they were trimmed in).
    pub trim: [u64; 8],
    /// Trimmed packets that left (`TrimSent/pkts`); `TrimDrop/pkts` is
    /// `trim - trim_sent` (bmv2 drops a packet its queue cannot take
    /// without counting it).
    pub trim_sent: [u64; 8],
    /// UET packets received (`rx_uet`).
    pub rx_uet: u64,
    /// Malformed frames by reason (only reasons seen).
    pub malformed: BTreeMap<String, u64>,
    /// `EVENTS` seen, by name.
    pub events: BTreeMap<String, u64>,
}

/// One counter slot: the counter, the port, the slot within the port
/// (class, MAL_* code or EV_*) and the counter index.
struct Read {
    counter: &'static str,
    port: usize,
    slot: usize,
    index: u32,
}

/// Every counter slot of ports `0..n`, in order.
fn reads(n: u32) -> Vec<Read> {
    let mut out = Vec::new();
    let mut add = |counter, port: u32, per_port: u32, slots: std::ops::Range<u32>| {
        for slot in slots {
            out.push(Read {
                counter,
                port: port as usize,
                slot: slot as usize,
                index: port * per_port + slot,
            });
        }
    };
    for p in 0..n {
        for c in PER_CLASS {
            add(c, p, 8, 0..8);
        }
        // MAL_* = ParseError + 1 in 16 slots a port; MAL 16
        // (uet_truncated) takes slot 0, which MAL_NONE never uses
        add(MALFORMED, p, 16, 0..16);
        add(RX_UET, p, 1, 0..1);
        add(PORT_EVENTS, p, 16, 0..EVENTS.len() as u32);
    }
    out
}

/// The simple_switch_CLI commands that read the counters of ports `0..n`.
pub fn cli_script(n: u32) -> String {
    let mut s = String::new();
    for r in reads(n) {
        let _ = writeln!(s, "counter_read {} {}", r.counter, r.index);
    }
    s
}

/// One `NAME[i]= (B bytes, P packets)` line of simple_switch_CLI.
fn parse_line(line: &str) -> Option<(String, u32, u64, u64)> {
    let line = line.trim().trim_start_matches("RuntimeCmd:").trim();
    let (lhs, rhs) = line.split_once("]=")?;
    let (name, idx) = lhs.split_once('[')?;
    let rhs = rhs.trim().trim_start_matches('(').trim_end_matches(')');
    let (b, p) = rhs.split_once(',')?;
    let bytes = b.trim().strip_suffix("bytes")?.trim().parse().ok()?;
    let packets = p.trim().strip_suffix("packets")?.trim().parse().ok()?;
    Some((
        name.trim().to_string(),
        idx.trim().parse().ok()?,
        bytes,
        packets,
    ))
}

/// Parses simple_switch_CLI's answers to [`cli_script`] for the plan's
/// ports. Every counter read must be answered; a CLI error is returned
/// with its line.
pub fn parse_cli_output(text: &str, plan: &Plan) -> Result<Vec<PortCounters>> {
    let mut got: BTreeMap<(String, u32), (u64, u64)> = BTreeMap::new();
    for line in text.lines() {
        if let Some((name, idx, bytes, packets)) = parse_line(line) {
            got.insert((name, idx), (bytes, packets));
        } else if line.contains("Error") || line.contains("Invalid") {
            bail!("simple_switch_CLI: {}", line.trim());
        }
    }
    let n = plan.ports.len() as u32;
    let mut out = Vec::new();
    for (p, port) in plan.ports.iter().enumerate() {
        out.push(PortCounters {
            name: port.name.clone(),
            port: p as u32,
            ..PortCounters::default()
        });
    }
    for Read {
        counter,
        port,
        slot: t,
        index,
    } in reads(n)
    {
        let &(bytes, packets) = got.get(&(counter.to_string(), index)).with_context(|| {
            format!("simple_switch_CLI did not answer counter_read {counter} {index}")
        })?;
        let pc = &mut out[port];
        match counter {
            "DpIngress.rx_tc_count" => {
                pc.rx_packets[t] = packets;
                pc.rx_bytes[t] = bytes;
            }
            "DpEgress.tx_tc_count" => {
                pc.tx_packets[t] = packets;
                pc.tx_bytes[t] = bytes;
            }
            "DpIngress.rx_pfc_count" => pc.rx_pfc[t] = packets,
            "DpEgress.tx_pfc_count" => pc.tx_pfc[t] = packets,
            "DpEgress.ecn_marked_count" => pc.ecn_marked[t] = packets,
            "DpEgress.wred_drop_count" => pc.wred_dropped[t] = packets,
            "DpIngress.trim_count" => pc.trim[t] = packets,
            "DpEgress.trim_sent_count" => pc.trim_sent[t] = packets,
            RX_UET => pc.rx_uet = packets,
            MALFORMED if packets > 0 => {
                // MAL_* = ParseError + 1, slot = MAL & 15
                let mal = if t == 0 { 16 } else { t };
                if let Some(e) = ParseError::ALL.get(mal - 1) {
                    pc.malformed.insert(e.name().to_string(), packets);
                }
            }
            PORT_EVENTS if packets > 0 => {
                pc.events.insert(EVENTS[t].to_string(), packets);
            }
            _ => {}
        }
    }
    Ok(out)
}

/// Reads the counters from the simple_switch listening on `thrift_port`.
pub fn read_bmv2(thrift_port: u16, plan: &Plan) -> Result<Vec<PortCounters>> {
    let mut cli = Command::new("simple_switch_CLI")
        .args(["--thrift-port", &thrift_port.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting simple_switch_CLI (bmv2's runtime CLI) failed: is it installed?")?;
    cli.stdin
        .take()
        .context("simple_switch_CLI stdin")?
        .write_all(cli_script(plan.ports.len() as u32).as_bytes())?;
    let out = cli.wait_with_output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !text.contains("]=") {
        let said: Vec<String> = [
            text.to_string(),
            String::from_utf8_lossy(&out.stderr).into(),
        ]
        .iter()
        .flat_map(|t| {
            t.lines()
                .map(str::trim)
                .map(String::from)
                .collect::<Vec<_>>()
        })
        .filter(|l| !l.is_empty())
        .collect();
        bail!(
            "no counters from simple_switch on thrift port {thrift_port}: {}",
            said.join("; ")
        );
    }
    parse_cli_output(&text, plan)
}

fn row(label: &str, cells: &[u64]) -> String {
    let mut s = format!("{label:>10}");
    for c in cells {
        let _ = write!(s, " {c:>10}");
    }
    s
}

/// pfcstat-style tables: PFC received and sent per priority, then per
/// class packets/bytes in and out, ECN marked, WRED dropped, then the
/// malformed reasons and events of each port that saw any.
pub fn render(ports: &[PortCounters]) -> String {
    let mut s = String::new();
    let head = |s: &mut String, first: &str, what: &str| {
        let _ = write!(s, "{first:>10}");
        for t in 0..8 {
            let _ = write!(s, " {:>10}", format!("{what}{t}"));
        }
        s.push('\n');
        let _ = writeln!(s, "{}", "-".repeat(10 + 11 * 8));
    };
    head(&mut s, "Port Rx", "PFC");
    for p in ports {
        let _ = writeln!(s, "{}", row(&p.name, &p.rx_pfc));
    }
    s.push('\n');
    head(&mut s, "Port Tx", "PFC");
    for p in ports {
        let _ = writeln!(s, "{}", row(&p.name, &p.tx_pfc));
    }
    for (title, get) in [
        (
            "rx packets",
            (|p: &PortCounters| p.rx_packets) as fn(&PortCounters) -> [u64; 8],
        ),
        ("tx packets", |p| p.tx_packets),
        ("tx bytes", |p| p.tx_bytes),
        ("ECN marked", |p| p.ecn_marked),
        ("WRED drop", |p| p.wred_dropped),
        ("Trim/pkts", |p| p.trim),
        ("TrimSent/pkts", |p| p.trim_sent),
        ("TrimDrop/pkts", |p| {
            std::array::from_fn(|q| p.trim[q].saturating_sub(p.trim_sent[q]))
        }),
    ] {
        s.push('\n');
        let _ = writeln!(s, "{title} per traffic class");
        head(&mut s, "Port", "TC");
        for p in ports {
            let _ = writeln!(s, "{}", row(&p.name, &get(p)));
        }
    }
    for p in ports {
        if p.malformed.is_empty() && p.events.is_empty() && p.rx_uet == 0 {
            continue;
        }
        let _ = write!(s, "\n{}:", p.name);
        if p.rx_uet > 0 {
            let _ = write!(s, " rx_uet={}", p.rx_uet);
        }
        for (k, v) in p.events.iter().chain(&p.malformed) {
            let _ = write!(s, " {k}={v}");
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(ports: &[&str]) -> Plan {
        let mut text = String::new();
        for p in ports {
            text.push_str(&format!("[[port]]\nname = \"{p}\"\n"));
        }
        dataplane_config::Config::parse(&text, "t.toml")
            .and_then(|c| c.validate("t.toml"))
            .unwrap()
    }

    /// What simple_switch_CLI answers: every read zero except a few.
    fn answers(n: u32, set: &[(&str, u32, u64, u64)]) -> String {
        let mut s = String::from("Obtaining JSON from switch...\nDone\n");
        for r in reads(n) {
            let (c, i) = (r.counter, r.index);
            let (b, p) = set
                .iter()
                .find(|x| x.0 == c && x.1 == i)
                .map_or((0, 0), |x| (x.2, x.3));
            s.push_str(&format!("RuntimeCmd: {c}[{i}]= ({b} bytes, {p} packets)\n"));
        }
        s
    }

    #[test]
    fn reads_every_slot_of_every_port_and_files_them() {
        let plan = plan(&["a", "b"]);
        assert_eq!(cli_script(2).lines().count(), 2 * (8 * 8 + 16 + 1 + 16));
        let text = answers(
            2,
            &[
                ("DpEgress.tx_pfc_count", 8 + 3, 128, 2),
                ("DpIngress.rx_tc_count", 3, 40_000, 40),
                ("DpIngress.malformed_count", 16 + 12, 60, 1),
                ("DpIngress.port_events", 16 + 14, 0, 1),
                ("DpIngress.malformed_count", 0, 60, 2),
                ("DpIngress.trim_count", 1, 0, 3),
                ("DpEgress.trim_sent_count", 1, 0, 2),
                ("DpIngress.rx_uet_count", 1, 0, 4),
            ],
        );
        let c = parse_cli_output(&text, &plan).unwrap();
        assert_eq!(c[1].tx_pfc, [0, 0, 0, 2, 0, 0, 0, 0]);
        assert_eq!((c[0].rx_packets[3], c[0].rx_bytes[3]), (40, 40_000));
        // MAL 12 = ParseError 11
        assert_eq!(
            c[1].malformed.keys().collect::<Vec<_>>(),
            vec![ParseError::ALL[11].name()]
        );
        assert_eq!(c[1].events["pfc_xoff"], 1);
        // slot 0: MAL 16, uet_truncated
        assert_eq!(c[0].malformed["uet_truncated"], 2);
        assert_eq!((c[0].trim[1], c[0].trim_sent[1]), (3, 2));
        assert_eq!(c[1].rx_uet, 4);
        assert!(c[0].events.is_empty());
        let r = render(&c);
        assert!(r.contains("Port Tx") && r.contains("pfc_xoff=1"), "{r}");
        assert!(
            r.contains("TrimDrop/pkts per traffic class") && r.contains("rx_uet=4"),
            "{r}"
        );
    }

    #[test]
    fn a_missing_answer_or_a_cli_error_is_an_error() {
        let plan = plan(&["a"]);
        let text = answers(1, &[]);
        let cut: String = text.lines().take(10).collect::<Vec<_>>().join("\n");
        let e = parse_cli_output(&cut, &plan).unwrap_err().to_string();
        assert!(e.contains("did not answer counter_read"), "{e}");
        let bad = format!("{text}RuntimeCmd: Error: Invalid counter name (DpIngress.x)\n");
        let e = parse_cli_output(&bad, &plan).unwrap_err().to_string();
        assert!(e.contains("Invalid counter name"), "{e}");
    }

    #[test]
    fn parses_the_cli_line() {
        assert_eq!(
            parse_line("RuntimeCmd: DpIngress.rx_pfc_count[3]= (64 bytes, 1 packets)"),
            Some(("DpIngress.rx_pfc_count".to_string(), 3, 64, 1))
        );
        assert_eq!(parse_line("RuntimeCmd: "), None);
    }
}
