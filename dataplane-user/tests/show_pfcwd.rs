//! Golden-file tests of `show pfcwd config` / `show pfcwd stats`: fixed
//! data in, the text (sonic-utilities' layout) and JSON out, compared with
//! the files under `tests/golden/`. `GOLDEN_BLESS=1` rewrites the files
//! (review the diff); a missing file fails.

use dataplane_user::show::pfcwd::*;

fn golden(name: &str, got: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var("GOLDEN_BLESS").as_deref() == Ok("1") {
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (GOLDEN_BLESS=1 writes it)", path.display()));
    assert_eq!(got, want, "{name} differs from its golden file");
}

fn json(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).unwrap() + "\n"
}

fn port(name: &str, action: &str, d: u32, r: u32) -> PortWdConfig {
    PortWdConfig {
        port: name.into(),
        action: action.into(),
        detection_time_ms: d,
        restoration_time_ms: r,
    }
}

/// Ports given out of natural order (eth10 after eth2).
fn config() -> ConfigView {
    ConfigView {
        poll_interval_ms: Some(200),
        ports: vec![
            port("eth10", "drop", 200, 200),
            port("eth2", "forward", 400, 1200),
            port("Ethernet100", "alert", 5000, 60000),
        ],
    }
}

fn queue(port: &str, q: u8, status: QueueStatus, c: [u64; 10]) -> QueueWdStats {
    QueueWdStats {
        port: port.into(),
        queue: q,
        status,
        storm_detected: c[0],
        storm_restored: c[1],
        tx_ok: c[2],
        tx_drop: c[3],
        rx_ok: c[4],
        rx_drop: c[5],
        tx_last_ok: c[6],
        tx_last_drop: c[7],
        rx_last_ok: c[8],
        rx_last_drop: c[9],
    }
}

fn stats() -> Vec<QueueWdStats> {
    use QueueStatus::*;
    vec![
        queue(
            "eth10",
            3,
            Stormed,
            [1, 0, 0, 48213, 0, 907, 0, 48213, 0, 907],
        ),
        queue("eth10", 4, Operational, [0; 10]),
        queue("eth2", 4, Operational, [3, 3, 120, 0, 77, 0, 20, 0, 7, 0]),
        queue("eth2", 3, Stormed, [2, 1, 1234567, 0, 0, 0, 1000, 0, 0, 0]),
        queue("eth2", 0, NotWatched, [0; 10]),
        queue(
            "Ethernet100",
            3,
            Operational,
            [1, 1, 0, 0, 0, 0, 0, 0, 0, 0],
        ),
    ]
}

#[test]
fn config_all_ports() {
    golden("pfcwd_config.txt", &config_text(&config(), &[]));
    golden("pfcwd_config.json", &json(&config_json(&config(), &[])));
}

#[test]
fn config_of_named_ports() {
    let only = vec!["eth2".to_string()];
    golden("pfcwd_config_eth2.txt", &config_text(&config(), &only));
    // an unknown port: the headers alone, no poll interval (as SONiC)
    let none = vec!["eth99".to_string()];
    golden("pfcwd_config_none.txt", &config_text(&config(), &none));
    assert_eq!(config_json(&config(), &none), serde_json::json!({}));
}

#[test]
fn config_without_the_watchdog() {
    let off = ConfigView::default();
    assert_eq!(
        config_text(&off, &[]),
        config_text(&config(), &["eth99".to_string()])
    );
}

#[test]
fn stats_nonzero_queues() {
    golden("pfcwd_stats.txt", &stats_text(&stats(), false, &[]));
    golden("pfcwd_stats.json", &json(&stats_json(&stats(), false, &[])));
}

#[test]
fn stats_empty_shows_every_queue() {
    golden("pfcwd_stats_empty.txt", &stats_text(&stats(), true, &[]));
}

#[test]
fn stats_of_named_queues() {
    let q = vec!["eth2:3".to_string(), "eth10:4".to_string()];
    // eth10:4 is all zero: left out without -e
    golden("pfcwd_stats_eth2_3.txt", &stats_text(&stats(), false, &q));
    golden(
        "pfcwd_stats_none.txt",
        &stats_text(&stats(), false, &["x:9".into()]),
    );
}

#[test]
fn natural_order_is_natsort() {
    let mut v = vec![
        "eth10:3",
        "eth2:10",
        "eth2:3",
        "Ethernet4",
        "Ethernet100",
        "eth1",
    ];
    v.sort_by(|a, b| natural_cmp(a, b));
    assert_eq!(
        v,
        [
            "Ethernet4",
            "Ethernet100",
            "eth1",
            "eth2:3",
            "eth2:10",
            "eth10:3"
        ]
    );
}
