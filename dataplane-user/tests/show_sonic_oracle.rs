//! sonic-utilities' own expected outputs as the oracle of our renderers
//! (tests/fixtures/sonic-utilities/, copied from its tests; README there
//! names each file's source). Their values go through our renderers and
//! the result must be theirs: byte for byte where the shapes agree,
//! field by field where their mock switch has more queues (UC8, UC9, MC,
//! ALL) than our eight unicast ones.

use std::path::PathBuf;

use dataplane_user::show::buffer;
use dataplane_user::show::queue_counters::{self, PortQueues, QueueRow, View};
use dataplane_user::show::watermark::{self, WmRow};

fn fixture(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sonic-utilities")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The whitespace-separated fields of a table's rows whose second field
/// starts with `prefix` and whose index is below 8 (UC0..UC7, PG0..PG7).
fn rows_of(text: &str, prefix: &str) -> Vec<Vec<String>> {
    text.lines()
        .map(|l| l.split_whitespace().map(String::from).collect::<Vec<_>>())
        .filter(|f| {
            f.len() > 1
                && f[1]
                    .strip_prefix(prefix)
                    .and_then(|n| n.parse::<usize>().ok())
                    .is_some_and(|n| n < 8)
        })
        .collect()
}

/// queuestat rows of `port` (UC0..UC7 of their text) as our PortQueues.
fn queues_from(text: &str, port: &str) -> PortQueues {
    let rows: Vec<_> = rows_of(text, "UC")
        .into_iter()
        .filter(|f| f[0] == port)
        .collect();
    let mut queues = [QueueRow::default(); 8];
    for f in &rows {
        let i: usize = f[1][2..].parse().unwrap();
        let n = |k: usize| f[k].replace(',', "").parse::<u64>().unwrap();
        queues[i] = QueueRow {
            pkts: n(2),
            bytes: n(3),
            drop_pkts: n(4),
            drop_bytes: n(5),
        };
    }
    PortQueues {
        port: port.into(),
        queues,
        cached: false,
    }
}

fn view(nonzero: bool) -> View<'static> {
    View {
        now: "2026-11-26T22:00:00.123456",
        cached: None,
        one_port: true,
        nonzero,
    }
}

#[test]
fn queue_counters_of_one_port_field_by_field() {
    // show_queue_counters_port: Ethernet8 has UC0 all zero
    let want = fixture("show_queue_counters_port.txt");
    let q = queues_from(&want, "Ethernet8");
    assert_eq!(q.queues[0], QueueRow::default());
    let got = queue_counters::render(std::slice::from_ref(&q), &view(false));
    assert_eq!(got.text.lines().next(), want.lines().next());
    assert_eq!(want.lines().next(), Some("For namespace :"));
    assert_eq!(rows_of(&got.text, "UC"), rows_of(&want, "UC"));
    assert_eq!(rows_of(&got.text, "UC").len(), 8);
    let header = |t: &str| {
        t.lines()
            .nth(1)
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(header(&got.text), header(&want));
    assert!(got.text.ends_with("\n\n") && want.ends_with("\n\n"));

    // -nz drops UC0, keeps the rest
    let want_nz = fixture("show_queue_counters_port_nz.txt");
    let got_nz = queue_counters::render(std::slice::from_ref(&q), &view(true));
    assert_eq!(rows_of(&got_nz.text, "UC"), rows_of(&want_nz, "UC"));
    assert_eq!(rows_of(&got_nz.text, "UC").len(), 7);
    assert_eq!(got_nz.text.lines().next(), Some("For namespace :"));

    // --json: string values, a "time" key per port (their test deletes it)
    let want_json: serde_json::Value =
        serde_json::from_str(&fixture("show_queue_counters_port_json.txt")).unwrap();
    let got_json: serde_json::Value = serde_json::from_str(&got.json_string()).unwrap();
    for i in 0..8 {
        let k = format!("UC{i}");
        assert_eq!(got_json["Ethernet8"][&k], want_json["Ethernet8"][&k], "{k}");
        assert!(got_json["Ethernet8"][&k]["totalpacket"].is_string());
    }
    assert_eq!(got_json["Ethernet8"]["time"], "2026-11-26T22:00:00.123456");
    // sorted keys, indent 2 (json_dump)
    assert!(got
        .json_string()
        .starts_with("{\n  \"Ethernet8\": {\n    \"UC0\": {\n      \"dropbytes\": \"0\",\n"));
}

/// watermarkstat rows (PORT V0..V7) of their text.
fn wm_rows(text: &str) -> Vec<WmRow> {
    text.lines()
        .skip(3)
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (
                f[0].to_string(),
                Some(std::array::from_fn(|i| f[1 + i].parse().unwrap())),
            )
        })
        .collect()
}

#[test]
fn pg_shared_watermark_byte_for_byte() {
    let want = fixture("show_pg_wm_shared_output.txt");
    let k = &watermark::WINDOWS[2].2;
    assert_eq!(watermark::WINDOWS[2].0, "priority-group watermark shared");
    let got = watermark::render(&wm_rows(&want), k);
    assert_eq!(got.text, want);
    assert_eq!(
        got.json_string(),
        fixture("show_pg_wm_shared_output_json.txt")
    );
}

#[test]
fn queue_unicast_watermark_first_eight_queues() {
    // theirs has UC0..UC9: keep the columns of UC0..UC7
    let full = fixture("show_queue_wm_unicast_output.txt");
    let dashes: Vec<usize> = full
        .lines()
        .nth(2)
        .unwrap()
        .split("  ")
        .map(str::len)
        .collect();
    let keep: usize = dashes[..9].iter().sum::<usize>() + 2 * 8;
    let want: String = full
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i == 0 {
                format!("{l}\n")
            } else {
                format!("{}\n", &l[..keep])
            }
        })
        .collect();
    let k = &watermark::WINDOWS[0].2;
    assert_eq!(watermark::WINDOWS[0].0, "queue watermark unicast");
    let got = watermark::render(&wm_rows(&want), k);
    assert_eq!(got.text, want);
    // their JSON less the lines of UC8 and UC9 (and the comma they left)
    let json = fixture("show_queue_wm_unicast_output_json.txt");
    let lines: Vec<&str> = json
        .lines()
        .filter(|l| !l.contains("\"UC8\"") && !l.contains("\"UC9\""))
        .collect();
    let mut want_json = String::new();
    for (i, l) in lines.iter().enumerate() {
        let next_closes = lines
            .get(i + 1)
            .is_some_and(|n| n.trim_start().starts_with('}'));
        let l = if next_closes {
            l.trim_end_matches(',')
        } else {
            l
        };
        want_json.push_str(l);
        want_json.push('\n');
    }
    assert_eq!(got.json_string(), want_json);
}

/// watermarkstat's pool rows (POOL BYTES) of their text; `N/A` as None.
fn pool_rows(text: &str) -> Vec<watermark::PoolRow> {
    text.lines()
        .skip(3)
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(f.len(), 2, "{l}");
            (f[0].to_string(), f[1].parse().ok())
        })
        .collect()
}

/// `show buffer_pool [persistent-]watermark` and `show headroom-pool
/// [persistent-]watermark`: their mock switch's pools and values through
/// our renderer come out byte for byte (three pools there, one here: the
/// renderer takes what it is given).
#[test]
fn pool_watermarks_byte_for_byte() {
    for (fixture_name, target) in [
        ("show_buffer_pool_wm_output.txt", "buffer_pool watermark"),
        (
            "show_buffer_pool_persistent_wm_output.txt",
            "buffer_pool persistent-watermark",
        ),
        ("show_hdrm_pool_wm_output.txt", "headroom-pool watermark"),
        (
            "show_hdrm_pool_persistent_wm_output.txt",
            "headroom-pool persistent-watermark",
        ),
    ] {
        let want = fixture(fixture_name);
        let (_, _, t) = watermark::POOLS
            .iter()
            .find(|(n, _, _)| *n == target)
            .unwrap_or_else(|| panic!("no pool target {target}"));
        let rows = pool_rows(&want);
        assert!(rows.iter().all(|(_, v)| v.is_some()), "{want}");
        let got = watermark::render_pools(&rows, t);
        assert_eq!(got.text, want, "{target}");
        let words: Vec<String> = target.split(' ').map(String::from).collect();
        assert_eq!(
            dataplane_user::show::find(&words, false).unwrap().0.name,
            target
        );
        assert_eq!(
            dataplane_user::show::find(&words, true).unwrap().0.name,
            target
        );
    }
    // the pool the buffer model has is the one their headroom pool lists
    let hdrm = pool_rows(&fixture("show_hdrm_pool_wm_output.txt"));
    assert_eq!(hdrm[0].0, watermark::POOL_NAME);
    // a switch whose pool has no XOFF-room watermark (their multi-ASIC
    // mock's asic0: no USER_WATERMARKS entry for the pool) prints N/A:
    // what our headroom pool prints, byte for byte less their namespace
    // suffix (single-ASIC: none)
    let all = fixture("show_hdrm_pool_wm_output_all_masic.txt");
    let asic0: String = all
        .lines()
        .take(4)
        .map(|l| format!("{}\n", l.replace(" (Namespace asic0)", "")))
        .collect();
    assert!(
        asic0.ends_with("ingress_lossless_pool      N/A\n"),
        "{asic0}"
    );
    for (name, _, t) in watermark::POOLS.iter().filter(|p| p.2.headroom) {
        let got = watermark::render_pools(&[(watermark::POOL_NAME.into(), None)], t);
        assert_eq!(got.text, asic0, "{name}");
    }
    // --json: watermarkstat -j's list of one-key objects, indent 4
    // (their tests have no JSON of the pool types: SONiC's `show
    // buffer_pool watermark` has no --json, `watermarkstat -t buffer_pool
    // -j` has)
    let got = watermark::render_pools(
        &pool_rows(&fixture("show_buffer_pool_wm_output.txt")),
        &watermark::POOLS[0].2,
    );
    assert_eq!(
        got.json_string(),
        "[\n    {\n        \"egress_lossless_pool\": \"1000\"\n    },\n    {\n        \"egress_lossy_pool\": \"2000\"\n    },\n    {\n        \"ingress_lossless_pool\": \"3000\"\n    }\n]\n"
    );
}

/// ecnconfig/mmuconfig blocks of their text: (title, dash line, rows).
fn blocks(text: &str) -> Vec<(String, String, Vec<String>)> {
    text.split("\n\n")
        .filter(|b| !b.trim().is_empty())
        .map(|b| {
            let l: Vec<&str> = b.lines().collect();
            assert_eq!(l[1], l[l.len() - 1], "{b}");
            let rows = l[2..l.len() - 1].iter().map(|s| s.to_string()).collect();
            (l[0].to_string(), l[1].to_string(), rows)
        })
        .collect()
}

/// Each of their blocks, its fields given to our renderer backwards, comes
/// out as theirs with the rows in byte order (CONFIG_DB's sorted hash;
/// their mock DB keeps the file's order): same title, same widths.
fn blocks_as_theirs(fixture_name: &str) {
    let want = fixture(fixture_name);
    for (title, dashes, rows) in blocks(&want) {
        let fields: Vec<(String, String)> = rows
            .iter()
            .rev()
            .map(|r| {
                let mut f = r.split_whitespace();
                (f.next().unwrap().to_string(), f.next().unwrap().to_string())
            })
            .collect();
        let got = buffer::render_blocks(&[(title.clone(), fields)]);
        let mut sorted = rows.clone();
        sorted.sort();
        let block = format!("{title}\n{dashes}\n{}\n{dashes}\n\n", sorted.join("\n"));
        assert_eq!(got.text, block, "{fixture_name}: {title}");
    }
}

#[test]
fn ecn_and_mmu_blocks_field_by_field() {
    blocks_as_theirs("ecn_show_config_output.txt");
    blocks_as_theirs("show_mmu_config.txt");
    // their mock's blocks already in byte order come out byte for byte
    let mmu = fixture("show_mmu_config.txt");
    let pattern = blocks(&mmu).into_iter().next().unwrap();
    assert_eq!(pattern.0, "Lossless traffic pattern:");
    let got = buffer::render_blocks(&[(
        pattern.0.clone(),
        vec![
            ("over_subscribe_ratio".into(), "2".into()),
            ("default_dynamic_th".into(), "0".into()),
        ],
    )]);
    assert!(mmu.starts_with(&got.text), "{}", got.text);
}

#[test]
fn multicast_watermark_without_multicast_queues() {
    let want = fixture("show_queue_wm_multicast_neg_output.txt");
    let got = watermark::no_multicast();
    assert_eq!(got.text, want);
    assert_eq!(
        got.json_string(),
        want,
        "watermarkstat prints the line, not JSON"
    );
    for name in [
        "queue watermark multicast",
        "queue persistent-watermark multicast",
    ] {
        let words: Vec<String> = name.split(' ').map(String::from).collect();
        assert_eq!(
            dataplane_user::show::find(&words, false).unwrap().0.name,
            name
        );
    }
}

/// The fields of a pfcstat history line (its timestamp has one space).
fn hist_fields(l: &str) -> Vec<String> {
    l.split("  ")
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .map(String::from)
        .collect()
}

#[test]
fn pfc_history_byte_for_byte() {
    use dataplane_user::show::baseline::civil_utc;
    use dataplane_user::show::pfc_history::{self, HistRow, PrioHist};
    let want = fixture("show_pfc_counters_history_output.txt");
    let wl: Vec<&str> = want.lines().collect();
    let num = |f: &str| f.replace(',', "").parse::<u64>().unwrap();
    let mut rows: Vec<HistRow> = Vec::new();
    for l in &wl[2..] {
        let f = hist_fields(l);
        if f.is_empty() {
            continue;
        }
        if rows.last().map(|r| r.port.as_str()) != Some(f[0].as_str()) {
            rows.push(HistRow {
                port: f[0].clone(),
                ..HistRow::default()
            });
        }
        let i: usize = f[1][3..].parse().unwrap();
        // "MM/DD/YYYY, HH:MM:SS" as [year, month, day, hour, minute, second]
        let t: Vec<i64> = f[5]
            .split(|c: char| !c.is_ascii_digit())
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().unwrap())
            .collect();
        rows.last_mut().unwrap().prio[i] = PrioHist {
            transitions: Some(num(&f[2])),
            pause_us: Some(num(&f[3])),
            recent_us: Some(num(&f[4])),
            recent_at: Some([t[2], t[0], t[1], t[3], t[4], t[5]]),
        };
    }
    assert_eq!(rows.len(), 3);
    assert_eq!(pfc_history::render(&rows, None).text, want);
    // their mock's timestamps are microseconds since the epoch, printed in
    // the local time of their test (UTC): Ethernet0's PFC0 and PFC1
    assert_eq!(
        pfc_history::stamp(&civil_utc(1_200_000_000_000_000 / 1_000_000)),
        "01/10/2008, 21:20:00"
    );
    assert_eq!(
        pfc_history::stamp(&civil_utc(2_000_000_000_000_001 / 1_000_000)),
        "05/18/2033, 03:33:20"
    );
    assert_eq!(hist_fields(wl[2])[5], "01/10/2008, 21:20:00");
    assert_eq!(hist_fields(wl[3])[5], "05/18/2033, 03:33:20");
}

// ---- portstat (show interfaces counters) ----

use dataplane_user::show::interfaces::{self, Head, IfRow, Reading, C, NC};

/// One port of their mock switch: state, counters (None: the mock has no
/// such counter, N/A), rates (bytes/s, packets/s), speed.
struct MockPort {
    port: &'static str,
    state: &'static str,
    /// RX_OK RX_ERR RX_DRP RX_OVR TX_OK TX_ERR TX_DRP TX_OVR
    c: [Option<u64>; 8],
    /// TRIM, TRIM_TX, TRIM_DRP
    trim: Option<[u64; 3]>,
    /// RX_BPS RX_PPS TX_BPS TX_PPS
    rates: [f64; 4],
    speed: Option<u64>,
}

/// Their portstat mock switch: COUNTERS and RATES of
/// tests/portstat_db/counters_db.json, the speed and state of
/// tests/mock_tables/appl_db.json (Ethernet0: admin up, oper down, speed
/// 25000; STATE_DB's 100000 is skipped while oper is down); the others
/// have no PORT_TABLE entry (STATE N/A, UTIL N/A).
fn portstat_mock() -> Vec<MockPort> {
    let n = None;
    vec![
        MockPort {
            port: "Ethernet0",
            state: "D",
            c: [Some(8), Some(10), Some(100), n, Some(10), n, n, n],
            trim: Some([0, 0, 0]),
            rates: [2e9, 247e3, 1.5e9, 183e3],
            speed: Some(25_000),
        },
        MockPort {
            port: "Ethernet4",
            state: "N/A",
            c: [Some(4), Some(0), Some(1000), n, Some(40), n, n, n],
            trim: Some([100, 50, 50]),
            rates: [204_800.0, 200.0, 204_848.0, 201.0],
            speed: None,
        },
        MockPort {
            port: "Ethernet8",
            state: "N/A",
            c: [Some(6), Some(100), Some(10), n, Some(60), n, n, n],
            trim: Some([20_000, 10_000, 10_000]),
            rates: [1.35e6, 9000.0, 13.37e6, 9000.0],
            speed: None,
        },
        MockPort {
            port: "Ethernet9",
            state: "N/A",
            c: [Some(0), Some(0), Some(0), n, Some(0), n, n, n],
            trim: None,
            rates: [0.0; 4],
            speed: None,
        },
    ]
}

/// Our counters of a mock port (the rate counters absent).
fn mock_counters(m: &MockPort) -> [Option<u64>; NC] {
    let mut c = [None; NC];
    c[..8].copy_from_slice(&m.c);
    if let Some(t) = m.trim {
        for (i, k) in [C::Trim, C::TrimSent, C::TrimDrop].into_iter().enumerate() {
            c[k as usize] = Some(t[i]);
        }
    }
    c
}

/// Their mock as our rows, counters as they are (no cache).
fn portstat_rows() -> Vec<IfRow> {
    portstat_mock()
        .iter()
        .map(|m| IfRow {
            port: m.port.into(),
            state: m.state.into(),
            c: mock_counters(m).map(|v| v.map(i128::from)),
            rx_bps: Some(m.rates[0]),
            rx_pps: Some(m.rates[1]),
            tx_bps: Some(m.rates[2]),
            tx_pps: Some(m.rates[3]),
            speed_mbps: m.speed,
        })
        .collect()
}

fn head(nonzero: bool) -> Head<'static> {
    Head {
        cached: None,
        period: None,
        nonzero,
    }
}

#[test]
fn portstat_tables_byte_for_byte() {
    use interfaces::View;
    let rows = portstat_rows();
    let r = |view, nz| interfaces::render(&rows, view, &head(nz)).text;
    assert_eq!(
        r(View::Std, false),
        fixture("intf_counters_before_clear.txt")
    );
    assert_eq!(r(View::All, false), fixture("intf_counters_all.txt"));
    assert_eq!(r(View::Rates, false), fixture("intf_rates.txt"));
    // --nonzero: Ethernet9 (all 0) goes
    assert_eq!(r(View::Std, true), fixture("intf_counters_nonzero.txt"));
    assert_eq!(r(View::Rates, true), fixture("intf_rates_nonzero.txt"));
    // one port (-i Ethernet4): the widths are that row's
    let eth4 = interfaces::render(&rows[1..2], View::Std, &head(false));
    assert_eq!(eth4.text, fixture("intf_counters_ethernet4.txt"));
}

#[test]
fn portstat_period_and_after_clear() {
    use interfaces::View;
    // -p 3: the counters over the period (0 here: their mock does not
    // change), the rates as before, the period line first
    let mut rows = portstat_rows();
    for r in &mut rows {
        for v in r.c.iter_mut().flatten() {
            *v = 0;
        }
    }
    let h = Head {
        cached: None,
        period: Some(3),
        nonzero: false,
    };
    assert_eq!(
        interfaces::render(&rows, View::Std, &h).text,
        fixture("intf_counters_period.txt")
    );

    // after a clear, through `rows`: the baseline is the reading itself,
    // the rates come from an earlier reading one second before, whose
    // byte and packet counters were lower by the mock's rates
    let mock = portstat_mock();
    let reading = |at_ns: u64, earlier: bool| Reading {
        at_ns,
        ports: mock
            .iter()
            .map(|m| {
                let mut c = mock_counters(m);
                let big = 1_000_000_000_000u64;
                let back = |r: f64| if earlier { 0 } else { r as u64 };
                c[C::RxBytes as usize] = Some(big + back(m.rates[0]));
                c[C::TxBytes as usize] = Some(big + back(m.rates[2]));
                c[C::RxOk as usize] = c[C::RxOk as usize].map(|v| v + big + back(m.rates[1]));
                c[C::TxOk as usize] = c[C::TxOk as usize].map(|v| v + big + back(m.rates[3]));
                (m.port.to_string(), m.state.to_string(), c, m.speed)
            })
            .collect(),
    };
    let before = reading(5_000_000_000, true);
    let now = reading(6_000_000_000, false);
    let base = now.as_baseline();
    let cleared = interfaces::rows(&now, Some(&base), Some(&before));
    let cached = "2026-11-26T22:00:00.123456";
    let h = Head {
        cached: Some(cached),
        period: None,
        nonzero: false,
    };
    let got = interfaces::render(&cleared, View::Std, &h).text;
    // their test drops the first line (the time) and the last newline
    let mut lines = got.lines();
    assert_eq!(
        lines.next(),
        Some(format!("Last cached time was {cached}").as_str())
    );
    assert_eq!(
        lines.collect::<Vec<_>>().join("\n"),
        fixture("intf_counter_after_clear.txt")
    );
    let h = Head { nonzero: true, ..h };
    let got = interfaces::render(&cleared, View::Std, &h).text;
    assert_eq!(
        got.lines().skip(1).collect::<Vec<_>>().join("\n"),
        fixture("intf_counter_after_clear_nonzero.txt")
    );
}

#[test]
fn portstat_errors_are_the_standard_tables_columns() {
    // no expected output of portstat -e in their tests: its columns are
    // the standard table's, cell for cell
    use interfaces::View;
    let rows = portstat_rows();
    let std = fixture("intf_counters_before_clear.txt");
    let got = interfaces::render(&rows, View::Errors, &head(false)).text;
    let fields = |l: &str| l.split_whitespace().map(String::from).collect::<Vec<_>>();
    let (g, w): (Vec<&str>, Vec<&str>) = (got.lines().collect(), std.lines().collect());
    assert_eq!(g.len(), w.len());
    for (i, (g, w)) in g.iter().zip(&w).enumerate() {
        if i == 1 {
            continue; // the rule
        }
        // RX_BPS and TX_BPS hold a space ("2000.00 MB/s"): on the data
        // rows they are two fields
        let w = fields(w);
        let pick: &[usize] = if i == 0 {
            &[0, 1, 5, 6, 7, 11, 12, 13]
        } else {
            &[0, 1, 6, 7, 8, 13, 14, 15]
        };
        let want: Vec<String> = pick.iter().map(|&k| w[k].clone()).collect();
        assert_eq!(fields(g), want, "line {i}");
    }
}

#[test]
fn portstat_trim_byte_for_byte() {
    use interfaces::View;
    // the trim tests read tests/mock_tables/counters_db.json: Ethernet0
    // 100/50/50 (admin up, oper down), Ethernet4 20000/10000/10000,
    // Ethernet8 without trim counters
    let row = |port: &str, state: &str, t: Option<[i128; 3]>| {
        let mut r = IfRow {
            port: port.into(),
            state: state.into(),
            ..IfRow::default()
        };
        if let Some(t) = t {
            r.c[C::Trim as usize] = Some(t[0]);
            r.c[C::TrimSent as usize] = Some(t[1]);
            r.c[C::TrimDrop as usize] = Some(t[2]);
        }
        r
    };
    let rows = vec![
        row("Ethernet0", "D", Some([100, 50, 50])),
        row("Ethernet4", "N/A", Some([20_000, 10_000, 10_000])),
        row("Ethernet8", "N/A", None),
    ];
    let all = interfaces::render(&rows, View::Trim, &head(false));
    assert_eq!(all.text, fixture("trim_counters_all.txt"));
    assert_eq!(all.json_string(), fixture("trim_counters_all_json.txt"));
    let eth0 = interfaces::render(&rows[..1], View::Trim, &head(false));
    assert_eq!(eth0.text, fixture("trim_eth0_counters.txt"));
    assert_eq!(eth0.json_string(), fixture("trim_eth0_counters_json.txt"));
}

// ---- pg-drop (show priority-group drop counters) ----

#[test]
fn pg_drop_byte_for_byte() {
    use dataplane_user::show::pg_drop::{self, PgDropRow};
    // their mock (tests/pgdrop_input/counters_db.json): Ethernet0 800..807,
    // Ethernet4 400..407, Ethernet8 100..107
    let row = |port: &str, base: u64| PgDropRow {
        port: port.into(),
        drops: std::array::from_fn(|i| Some(base + i as u64)),
    };
    let rows = vec![
        row("Ethernet0", 800),
        row("Ethernet4", 400),
        row("Ethernet8", 100),
    ];
    assert_eq!(
        pg_drop::render(&rows, None).text,
        fixture("show_pg_dropped_packet_stat.txt")
    );
    // after a clear: zeros, and no cached-time line
    let cleared: Vec<PgDropRow> = rows
        .iter()
        .map(|r| PgDropRow {
            port: r.port.clone(),
            drops: [Some(0); 8],
        })
        .collect();
    assert_eq!(
        pg_drop::render(&cleared, Some("2026-11-26T22:00:00")).text,
        fixture("show_cleared_pg_dropped_packet_stat.txt")
    );
}
