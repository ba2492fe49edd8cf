//! The per-stage cost breakdown of `xdp_forward`, by difference: the same
//! production program run on frames that leave the pipeline after
//! successive stages (a local route passes to the kernel right after the
//! lookup; a next-hop route goes through rewrite, the egress stage and the
//! redirect; a group route adds the member pick; a port in the buffer model
//! adds the model). No probe code in the data plane: each stage's cost is
//! the difference of two medians taken in the same rounds.
//!
//! | stage | difference |
//! |---|---|
//! | `parse` | parser alone − bare |
//! | `classify` | `xdp_classify` − parse (port lookup, DSCP/TC, counters) |
//! | `route_v4`, `route_v6` | to a local route − `xdp_classify` (pre-route checks, a host-table miss, LPM lookup) |
//! | `route_v4_host`, `route_v6_host` | to a local /32 (/128) route − `xdp_classify` (pre-route checks, a host-table hit) |
//! | `route_v4_big_trie`, `route_v4_big_host` | the same against 32768 host routes and 256 /24s ([`big_table`]): a /32 found in the LPM trie (where every route lived before the host table) − a /32 found in the host table |
//! | `forward` | to a next hop − to a local route (next-hop lookup, MAC/TTL rewrite, tail call to the egress stage, the model's port check, redirect, rate estimator, counters) |
//! | `group_<mode>` | to a one-member group in that mode − to a next hop |
//! | `buffer_model` | to a next hop with both ports in the model − without (drain, WRED/ECN, admission, PFC evaluation, the lock, the clock) |

use anyhow::{bail, Result};
use aya::Ebpf;
use dataplane_common::build::{self, Ip, L2};
use dataplane_common::wire::bth::{Bth, OP_WRITE_MIDDLE};
use dataplane_config::MODES;
use dataplane_user::object::load_object;
use dataplane_user::tables::apply_config_text;
use testbed::bench::Record;
use testbed::config_text::ConfigText;
use testbed::netns::Netns;
use testbed::testrun::{action_name, park_all, run_xdp, XDP_DROP, XDP_PASS, XDP_REDIRECT};

/// The ingress port's MAC, also every next hop's (so a routed frame stays
/// routable across the kernel's repeats).
pub const B0_MAC: [u8; 6] = [2, 0, 0, 0, 0xb, 0];
/// Runs per call: the frames carry TTL 255 and lose one per routed run.
const REPEAT: u32 = 250;
/// Calls per measurement (their median is the round's figure): a call of
/// a parked program ([`park_probes`]) takes about 0.1 ms.
const CALLS: usize = 61;

/// Third byte of the IPv4 destination (and 5th word of the IPv6 one) per
/// route kind.
const LOCAL: u8 = 9;
const NEXTHOP: u8 = 1;
/// A host route (/32, /128) to the frame's destination (`.1`, `::1`).
const HOST: u8 = 10;
fn group_net(i: usize) -> u8 {
    3 + i as u8
}

fn config(buffer: bool) -> String {
    let mut c = ConfigText::new("dataplane-bench (stages)");
    c.switch("stages", 7, "");
    if buffer {
        c.raw("[buffer]\npool_size = 16777216\n\n");
    }
    c.port("b0", B0_MAC, 100_000, "");
    c.port("b1", [2, 0, 0, 0, 0xb, 1], 100_000, "");
    c.nexthop("loop", "b1", B0_MAC);
    c.raw(&format!(
        "[[route]]\nprefix = \"198.18.{LOCAL}.0/24\"\nlocal = true\n\n[[route]]\nprefix = \"2001:db8:{LOCAL}::/48\"\nlocal = true\n\n"
    ));
    c.raw(&format!(
        "[[route]]\nprefix = \"198.18.{HOST}.1/32\"\nlocal = true\n\n[[route]]\nprefix = \"2001:db8:{HOST:x}::1/128\"\nlocal = true\n\n"
    ));
    c.route_nexthop(&format!("198.18.{NEXTHOP}.0/24"), "loop");
    c.route_nexthop(&format!("2001:db8:{NEXTHOP}::/48"), "loop");
    for (i, mode) in MODES.iter().enumerate() {
        let g = format!("g_{mode}");
        c.group(&g, mode, 100, &["loop".to_string()]);
        c.route_group(&format!("198.18.{}.0/24", group_net(i)), &g);
    }
    c.0
}

/// A 60-byte (64 on the wire) RoCEv2 frame to network `net`, IPv4 or IPv6,
/// TTL 255, addressed to the ingress port.
fn frame(net: u8, v6: bool) -> Vec<u8> {
    let ip = if v6 {
        let a = |n: u8| {
            let mut x = [0u8; 16];
            x[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
            x[5] = n;
            x[15] = 1;
            x
        };
        Ip::v6(a(0), a(net))
    } else {
        Ip::v4([198, 18, 0, 1], [198, 18, net, 1])
    };
    frame_to(ip, v6)
}

/// The probes' frame with addresses `ip`.
fn frame_to(ip: Ip, v6: bool) -> Vec<u8> {
    let l2 = L2::new(B0_MAC, [2, 0, 0, 0, 0, 1]);
    let bth = Bth::request(OP_WRITE_MIDDLE, 0x11, 7);
    let pad = if v6 { 0 } else { 2 };
    build::rocev2_frame(
        &l2,
        &ip.dscp(3).ecn(2).ttl(255),
        49152,
        &bth,
        None,
        &vec![0x5a; pad],
    )
}

/// The object a probe runs in: the small table, the same with the
/// buffer model, the small table plus [`big_table`].
#[derive(Clone, Copy, PartialEq)]
enum Obj {
    Plain,
    Buffered,
    Big,
}

/// /24s and /32s under 198.19.0.0/16 (first byte 198, second 19): every
/// /24, and the /32s `.1`-`.255` of the first 128 /24s in the LPM trie
/// (written past the controller: the layout before the host table), of
/// the other 128 in the host table. A fabric routing each GPU NIC.
fn big_table(bpf: &mut Ebpf) -> Result<()> {
    use aya::maps::lpm_trie::{Key, LpmTrie};
    use aya::maps::HashMap;
    use dataplane_common::names::map::{HOSTS_V4, ROUTES_V4};
    use dataplane_common::route::{RouteEntry, ROUTE_LOCAL};
    let local = RouteEntry {
        kind: ROUTE_LOCAL,
        plen: 0,
        id: 0,
    };
    {
        let mut t: LpmTrie<_, [u8; 4], RouteEntry> =
            LpmTrie::try_from(bpf.map_mut(ROUTES_V4).expect("ROUTES_V4"))?;
        for a in 0..=255u8 {
            t.insert(&Key::new(24, [198, 19, a, 0]), local, 0)?;
            if a < 128 {
                for b in 1..=255u8 {
                    t.insert(&Key::new(32, [198, 19, a, b]), local, 0)?;
                }
            }
        }
    }
    let mut h: HashMap<_, [u8; 4], RouteEntry> =
        HashMap::try_from(bpf.map_mut(HOSTS_V4).expect("HOSTS_V4"))?;
    for a in 128..=255u8 {
        for b in 1..=255u8 {
            h.insert([198, 19, a, b], local, 0)?;
        }
    }
    Ok(())
}

/// [`frame`] to 198.19.`c`.`d`.
fn frame_big(c: u8, d: u8) -> Vec<u8> {
    frame_to(Ip::v4([198, 18, 0, 1], [198, 19, c, d]), false)
}

/// One measurement: program, object, frame, the action it must return.
struct Probe {
    name: String,
    prog: &'static str,
    obj: Obj,
    frame: Vec<u8>,
    expect: u32,
}

fn probes() -> Vec<Probe> {
    let p = |name: &str, prog, buffered: bool, frame, expect| Probe {
        name: name.into(),
        prog,
        obj: if buffered { Obj::Buffered } else { Obj::Plain },
        frame,
        expect,
    };
    let mut v = vec![
        p(
            "tick",
            "xdp_lossless_tick",
            true,
            frame(LOCAL, false),
            XDP_DROP,
        ),
        p(
            "bare",
            "xdp_bench_bare",
            false,
            frame(LOCAL, false),
            XDP_PASS,
        ),
        p(
            "parse",
            "xdp_bench_parse",
            false,
            frame(LOCAL, false),
            XDP_PASS,
        ),
        p(
            "classify_v4",
            "xdp_classify",
            false,
            frame(LOCAL, false),
            XDP_PASS,
        ),
        p(
            "classify_v6",
            "xdp_classify",
            false,
            frame(LOCAL, true),
            XDP_PASS,
        ),
        p(
            "local_v4",
            "xdp_forward",
            false,
            frame(LOCAL, false),
            XDP_PASS,
        ),
        p(
            "local_v6",
            "xdp_forward",
            false,
            frame(LOCAL, true),
            XDP_PASS,
        ),
        p(
            "host_v4",
            "xdp_forward",
            false,
            frame(HOST, false),
            XDP_PASS,
        ),
        p("host_v6", "xdp_forward", false, frame(HOST, true), XDP_PASS),
        p(
            "nexthop_v4",
            "xdp_forward",
            false,
            frame(NEXTHOP, false),
            XDP_REDIRECT,
        ),
        p(
            "nexthop_v4_model",
            "xdp_forward",
            true,
            frame(NEXTHOP, false),
            XDP_REDIRECT,
        ),
    ];
    for (name, c) in [("big_trie_v4", 7), ("big_host_v4", 135)] {
        v.push(Probe {
            obj: Obj::Big,
            ..p(name, "xdp_forward", false, frame_big(c, 77), XDP_PASS)
        });
    }
    for (i, mode) in MODES.iter().enumerate() {
        v.push(p(
            &format!("group_{mode}"),
            "xdp_forward",
            false,
            frame(group_net(i), false),
            XDP_REDIRECT,
        ));
    }
    v
}

/// Parks every program the probes run, per object, on idle veths of `ns`
/// (`testbed::testrun::park_all`). A program attached nowhere is swapped
/// into the kernel's XDP dispatcher and out again around each call (a text
/// patch and an RCU wait, about 17 ms here): each call's 250 runs then
/// started with cold caches, and one probe read 215 to 330 ns from one
/// run to the next. Parked, the programs run warm, as on a busy port.
fn park_probes(ns: &Netns, objs: Vec<(Obj, &mut Ebpf)>, probes: &[Probe]) -> Result<()> {
    for (k, (obj, bpf)) in objs.into_iter().enumerate() {
        let mut progs: Vec<&str> = Vec::new();
        for p in probes.iter().filter(|p| p.obj == obj) {
            if !progs.contains(&p.prog) {
                progs.push(p.prog);
            }
        }
        park_all(ns, bpf, &progs, &format!("q{k}."))?;
    }
    Ok(())
}

/// Median over `CALLS` calls of the per-run time, ns; fails if a run
/// returned another action than `expect`.
fn time(bpf: &Ebpf, p: &Probe, ifindex: u32) -> Result<f64> {
    let mut v = Vec::with_capacity(CALLS);
    for _ in 0..CALLS {
        let r = run_xdp(bpf, p.prog, &p.frame, ifindex, REPEAT)?;
        if r.action != p.expect {
            bail!(
                "stage probe {}: {} returned {}, expected {}",
                p.name,
                p.prog,
                action_name(r.action),
                action_name(p.expect)
            );
        }
        v.push(r.per_run.as_nanos() as f64);
    }
    Ok(median(&v))
}

pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap());
    s[s.len() / 2]
}

/// Runs the probes named in `names` in turn for `seconds` (a profiler
/// watches) and prints each one's median ns per run over its calls.
pub fn profile(ns: &Netns, names: &[String], seconds: u64) -> Result<()> {
    let mut plain = load_object()?;
    let mut buffered = load_object()?;
    let (_, ports) = apply_config_text(&mut plain, &config(false), "stages")?;
    apply_config_text(&mut buffered, &config(true), "stages")?;
    let ifindex = ports[0].ifindex;
    let all = probes();
    park_probes(
        ns,
        vec![(Obj::Plain, &mut plain), (Obj::Buffered, &mut buffered)],
        &all,
    )?;
    let mut chosen = Vec::new();
    for n in names {
        match all.iter().find(|p| &p.name == n && p.obj != Obj::Big) {
            Some(p) => chosen.push(p),
            None => bail!("--profile: no probe {n:?} (the big-table probes are not offered)"),
        }
    }
    let mut samples = vec![Vec::new(); chosen.len()];
    let end = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    while std::time::Instant::now() < end {
        for (i, p) in chosen.iter().enumerate() {
            let bpf = if p.obj == Obj::Buffered {
                &buffered
            } else {
                &plain
            };
            samples[i].push(time(bpf, p, ifindex)?);
        }
    }
    for (p, s) in chosen.iter().zip(&samples) {
        println!(
            "{:<20} {:>8.1} ns/run (median of {} medians)",
            p.name,
            median(s),
            s.len()
        );
    }
    Ok(())
}

/// Measures every probe in `rounds` interleaved rounds (ports `b0`, `b1`
/// exist in the calling thread's namespace) and returns the stage records.
pub fn measure(ns: &Netns, rounds: usize, machine: &str) -> Result<Vec<Record>> {
    let mut plain = load_object()?;
    let mut buffered = load_object()?;
    let mut big = load_object()?;
    apply_config_text(&mut big, &config(false), "stages")?;
    big_table(&mut big)?;
    let (_, ports) = apply_config_text(&mut plain, &config(false), "stages")?;
    apply_config_text(&mut buffered, &config(true), "stages")?;
    let ifindex = ports[0].ifindex;
    let probes = probes();
    park_probes(
        ns,
        vec![
            (Obj::Plain, &mut plain),
            (Obj::Buffered, &mut buffered),
            (Obj::Big, &mut big),
        ],
        &probes,
    )?;
    let mut samples = vec![Vec::new(); probes.len()];
    eprintln!(
        "stages: {rounds} rounds x {} probes, {CALLS} calls x {REPEAT} runs each",
        probes.len()
    );
    for round in 0..rounds {
        for (i, p) in probes.iter().enumerate() {
            let bpf = match p.obj {
                Obj::Plain => &plain,
                Obj::Buffered => &buffered,
                Obj::Big => &big,
            };
            samples[i].push(time(bpf, p, ifindex)?);
        }
        eprintln!("  stages round {}/{rounds} done", round + 1);
    }
    let m: std::collections::BTreeMap<&str, f64> = probes
        .iter()
        .zip(&samples)
        .map(|(p, s)| (p.name.as_str(), median(s)))
        .collect();
    let bare = m["bare"];
    let mut stages: Vec<(String, f64, String)> = vec![
        ("parse".into(), m["parse"] - bare, "xdp_bench_parse - xdp_bench_bare".into()),
        (
            "classify".into(),
            m["classify_v4"] - m["parse"],
            "xdp_classify - xdp_bench_parse (port lookup, classification, counters)".into(),
        ),
        (
            "route_v4".into(),
            m["local_v4"] - m["classify_v4"],
            "xdp_forward to a local IPv4 /24 route - xdp_classify (pre-route checks, host-table miss, LPM lookup)".into(),
        ),
        (
            "route_v6".into(),
            m["local_v6"] - m["classify_v6"],
            "xdp_forward to a local IPv6 route - xdp_classify of the same frame".into(),
        ),
        (
            "route_v4_host".into(),
            m["host_v4"] - m["classify_v4"],
            "xdp_forward to a local /32 route - xdp_classify (pre-route checks, host-table hit)".into(),
        ),
        (
            "route_v6_host".into(),
            m["host_v6"] - m["classify_v6"],
            "xdp_forward to a local /128 route - xdp_classify of a frame to the same network".into(),
        ),
        (
            "route_v4_big_trie".into(),
            m["big_trie_v4"] - m["classify_v4"],
            "xdp_forward to a local /32 route in a 32768-entry LPM trie (host-table miss) - xdp_classify".into(),
        ),
        (
            "route_v4_big_host".into(),
            m["big_host_v4"] - m["classify_v4"],
            "xdp_forward to a local /32 route in a 32640-entry host table (beside that trie) - xdp_classify".into(),
        ),
        (
            "forward".into(),
            m["nexthop_v4"] - m["local_v4"],
            "to a next hop - to a local route (next-hop lookup, rewrite, egress tail call, redirect, rate estimator, counters)".into(),
        ),
        (
            "buffer_model".into(),
            m["nexthop_v4_model"] - m["nexthop_v4"],
            "to a next hop, both ports in the buffer model - the same without [buffer]".into(),
        ),
    ];
    for mode in MODES {
        stages.push((
            format!("group_{mode}"),
            m[format!("group_{mode}").as_str()] - m["nexthop_v4"],
            format!("to a one-member {mode}-mode group - to a next hop"),
        ));
    }
    let note = format!(
        "difference of medians, 60-byte RoCEv2 frames (TTL 255), BPF_PROG_TEST_RUN of the programs parked on idle veths (warm), {CALLS} calls x {REPEAT} runs per round, median of {rounds} rounds; baseline xdp_bench_bare ({bare:.1} ns) in the same rounds"
    );
    let mut out: Vec<Record> = stages
        .into_iter()
        .map(|(name, v, what)| {
            Record::against(
                format!("cost.stage.{name}.ns_per_pkt"),
                v,
                "ns/pkt",
                ("cost.stage.bare.ns_per_pkt", bare),
                machine,
                format!("{what}; {note}"),
            )
        })
        .collect();
    out.push(Record {
        figure: "cost.tick.ns_per_run".into(),
        value: m["tick"],
        unit: "ns/run".into(),
        baseline: None,
        ratio: None,
        machine: machine.into(),
        note: Some(format!(
            "xdp_lossless_tick, the buffer model's timer (every (port, TC): drain, release, PFC state), on a switch \
             with 2 ports in the model; the controller runs it every tick_us (default 200 us); {note}"
        )),
    });
    out.insert(
        0,
        Record {
            figure: "cost.stage.bare.ns_per_pkt".into(),
            value: bare,
            unit: "ns/pkt".into(),
            baseline: None,
            ratio: None,
            machine: machine.into(),
            note: Some(format!(
                "xdp_bench_bare, the stage breakdown's baseline; {note}"
            )),
        },
    );
    Ok(out)
}
