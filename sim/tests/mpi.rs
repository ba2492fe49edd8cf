//! Partitions on MPI ranks (`--features mpi`, Open MPI's `mpirun` on
//! PATH): `mpirun -np 2` on this machine (one or two threads a rank) gives the
//! same report and plots, byte for byte but the wall-clock figures, as
//! the same partitions in one process on one thread; a rank killed mid-run ends the job within seconds with
//! an error naming the signal; too few partitions for the ranks are
//! refused naming `partitions`. Without the feature or mpirun each test
//! prints SKIPPED and why, and passes.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The simulator binary of this test build (with the `mpi` feature when
/// the test has it).
const SIM: &str = env!("CARGO_BIN_EXE_dataplane-sim");

/// Why the MPI tests cannot run here, if they cannot.
fn skip_reason() -> Option<&'static str> {
    if !cfg!(feature = "mpi") {
        return Some("built without the mpi feature (cargo test -p dataplane-sim --features mpi)");
    }
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join("mpirun").is_file()))
        .unwrap_or(false);
    if !found {
        return Some("no mpirun on PATH (cargo xtask setup installs Open MPI)");
    }
    None
}

macro_rules! need_mpi {
    ($test:literal) => {
        if let Some(why) = skip_reason() {
            println!("SKIPPED {}: {why}", $test);
            return;
        }
    };
}

/// `mpirun -np ranks`, as root, ended by mpirun after 120 s at most (a
/// hung job fails the test instead of hanging it).
fn mpirun(ranks: u32) -> Command {
    let mut c = Command::new("mpirun");
    c.args([
        "--allow-run-as-root",
        "--oversubscribe",
        "--timeout",
        "120",
        "-np",
    ])
    .arg(ranks.to_string());
    c
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("dataplane-sim-mpi-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// The run's report without the wall-clock figures, and every other file
/// it wrote (plots, traces) by name.
fn outputs(dir: &Path) -> (serde_json::Value, Vec<(String, Vec<u8>)>) {
    let mut report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("report.json")).unwrap()).unwrap();
    for r in report["runs"].as_array_mut().unwrap() {
        let o = r.as_object_mut().unwrap();
        assert!(o.remove("wall_s").is_some());
        assert!(o.remove("events_per_s").is_some());
    }
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap() != "report.json")
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    files.sort();
    (report, files)
}

fn ok(c: &mut Command, what: &str) -> String {
    let o = c.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "{what} failed: {}\n{text}", o.status);
    text
}

/// The simulator's validation cases (`docs/src/benchmarks/validation.md`:
/// seven against the testbed, four of load balancing against the ideal), each
/// with its partitions and the ranks it runs on; the collectives scaled
/// down (smaller messages, the 1024-GPU ring on fewer servers), every
/// other case at full size. In every case each partition is a switch and
/// the ranks alternate over them, so traffic and collective steps cross
/// between ranks.
#[rustfmt::skip]
const CASES: &[(&str, u32, &[&str])] = &[
    // (none of the eleven) every LB mode with the balancer's trace, 6
    // partitions on 3 ranks
    (
        "websearch_modes",
        3,
        &[
            "--topology", "leafspine:4x2:4", "--workload", "websearch", "--load", "0.7",
            "--duration", "300us", "--buffer", "4MB", "--partitions", "6",
            "--lb", "hash,flowlet,bandwidth,spray,place", "--trace-lb",
        ],
    ),
    // (none of the eleven) the 12:1 incast, drained, PFC on (lossless)
    // and off (drops)
    (
        "incast_pfc",
        2,
        &[
            "--topology", "leafspine:2x2:8", "--workload", "incast", "--fanin", "12",
            "--size", "2MB", "--buffer", "4MB", "--pfc", "on", "--cc", "none", "--drain",
            "--max-time", "200ms", "--partitions", "4",
        ],
    ),
    (
        "incast_no_pfc",
        2,
        &[
            "--topology", "leafspine:2x2:8", "--workload", "incast", "--fanin", "12",
            "--size", "2MB", "--buffer", "4MB", "--pfc", "off", "--cc", "none", "--drain",
            "--max-time", "200ms", "--partitions", "4",
        ],
    ),
    // against the testbed (DCQCN scaled, delayed ACKs), full size, a
    // switch a partition (leaf 0 and spine 0 on rank 0, leaf 1 and
    // spine 1 on rank 1): rows 1 and 2, incast 7 x 256 KB with PFC,
    // flowlet (the scenario's mode) and hash (no flowlet move)
    (
        "testbed_incast",
        2,
        &["--scenario", "scenarios/testbed_incast.toml", "--partitions", "4", "--lb", "flowlet,hash"],
    ),
    // row 3: the same incast with flowlet, PFC off (drops, RTOs)
    (
        "testbed_incast_no_pfc",
        2,
        &["--scenario", "scenarios/testbed_incast.toml", "--partitions", "4", "--pfc", "off"],
    ),
    // rows 4-7: elephants 8 x 1 MB under hash, flowlet, bandwidth,
    // place, PFC on; seed 4 polarises hash (a leaf's 4 flows on one
    // uplink, as on the testbed)
    (
        "testbed_elephants",
        2,
        &[
            "--scenario", "scenarios/testbed_elephants.toml", "--partitions", "4",
            "--lb", "hash,flowlet,bandwidth,place", "--seed", "4",
        ],
    ),
    // load balancing against the ideal (dataplane-sim-lbbench's cases),
    // a switch a partition, the leaves alternating between the ranks:
    // allreduce_128 (16 MB a GPU, not 64), the bench's modes (spray with
    // RC receivers, then with out-of-order placement, below); steps
    // learn of a flow in another partition, by message, a window later
    (
        "allreduce_128gpu",
        2,
        &[
            "--scenario", "scenarios/allreduce_128gpu.toml", "--partitions", "24",
            "--dep-delay", "1us", "--size", "16MB", "--lb", "hash,flowlet,bandwidth,spray,place",
        ],
    ),
    (
        "allreduce_128gpu_ooo",
        2,
        &[
            "--scenario", "scenarios/allreduce_128gpu.toml", "--partitions", "24",
            "--dep-delay", "1us", "--size", "16MB", "--lb", "spray", "--receiver", "ooo",
        ],
    ),
    // allreduce_1024 scaled to 128 GPUs: the scenario's two servers a
    // leaf (16 hosts) and 16 spines, so half of a ring's hops stay under
    // a leaf and a leaf starts 8 flows over 16 uplinks a step, on 8
    // leaves instead of 64; 1 MB a GPU; hash, bandwidth, place
    (
        "allreduce_1024gpu",
        2,
        &[
            "--scenario", "scenarios/allreduce_1024gpu.toml", "--topology", "leafspine:8x16:16",
            "--size", "1MB", "--partitions", "24", "--dep-delay", "1us",
        ],
    ),
    // alltoall_128 and halving_doubling_128: the bench's 128-GPU fabric
    // (16 leaves x 8 spines, 400G, Mlx DCQCN, drained), 4 MB a GPU, not
    // 64; hash, bandwidth, place (the all-to-all has no dependencies)
    (
        "alltoall_128gpu",
        2,
        &[
            "--topology", "leafspine:16x8:8", "--speed", "400G", "--workload", "alltoall",
            "--size", "4MB", "--cc", "mlx", "--drain", "--lb", "hash,bandwidth,place",
            "--partitions", "24",
        ],
    ),
    (
        "halving_doubling_128gpu",
        2,
        &[
            "--topology", "leafspine:16x8:8", "--speed", "400G", "--workload", "halving-doubling",
            "--size", "4MB", "--cc", "mlx", "--drain", "--lb", "hash,bandwidth,place",
            "--partitions", "24", "--dep-delay", "1us",
        ],
    ),
];

#[test]
fn ranks_give_the_one_process_report_byte_for_byte() {
    need_mpi!("ranks_give_the_one_process_report_byte_for_byte");
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut differ = Vec::new();
    for &(name, ranks, args) in CASES {
        let t0 = Instant::now();
        let (one, many) = (
            scratch(&format!("{name}-1")),
            scratch(&format!("{name}-{ranks}")),
        );
        // one thread in one process; in each rank one, or two for the
        // first case (neither counts; more threads than cores make the
        // windows of the long testbed runs slow)
        let common = ["--quiet"];
        let threads = if name == "websearch_modes" { "2" } else { "1" };
        ok(
            Command::new(SIM)
                .current_dir(manifest)
                .args(args)
                .args(common)
                .args(["--threads", "1"])
                .arg("--out")
                .arg(&one),
            &format!("{name} in one process"),
        );
        let text = ok(
            mpirun(ranks)
                .current_dir(manifest)
                .arg(SIM)
                .args(args)
                .args(common)
                .args(["--threads", threads])
                .arg("--out")
                .arg(&many),
            &format!("{name} on {ranks} ranks"),
        );
        assert!(
            text.contains(&format!("MPI: {ranks} ranks")),
            "{name}: the run did not go over MPI:\n{text}"
        );
        let (a, fa) = outputs(&one);
        let (b, fb) = outputs(&many);
        assert!(
            a["runs"][0]["flows_completed"].as_u64().unwrap() >= 7,
            "{name}: too few flows to compare"
        );
        // every difference of every case, then fail
        let before = differ.len();
        if let Some(d) = first_difference(&a, &b, "report.json") {
            differ.push(format!("{name}: {d}"));
        }
        let names: Vec<&String> = fa.iter().map(|f| &f.0).collect();
        let names_b: Vec<&String> = fb.iter().map(|f| &f.0).collect();
        if names != names_b {
            differ.push(format!("{name}: files {names:?} against {names_b:?}"));
        } else {
            for ((n, x), (_, y)) in fa.iter().zip(&fb) {
                if x != y {
                    differ.push(format!("{name}: {n} differs"));
                }
            }
        }
        held_once(
            name,
            ranks,
            &text,
            a["runs"][0]["flows_total"].as_u64().unwrap(),
        );
        println!(
            "{name}: {ranks} ranks {} one process ({} files), {:.1} s",
            if differ.len() == before { "=" } else { "!=" },
            fa.len() + 1,
            t0.elapsed().as_secs_f64()
        );
        let _ = std::fs::remove_dir_all(&one);
        let _ = std::fs::remove_dir_all(&many);
    }
    assert!(
        differ.is_empty(),
        "the ranks' outputs differ from one process's:\n{}",
        differ.join("\n")
    );
}

/// Where `a` and `b` first differ (a JSON path, both values), if they do.
fn first_difference(a: &serde_json::Value, b: &serde_json::Value, at: &str) -> Option<String> {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                let here = format!("{at}.{k}");
                match y.get(k) {
                    None => return Some(format!("{here} only in one process's")),
                    Some(w) => {
                        if let Some(d) = first_difference(v, w, &here) {
                            return Some(d);
                        }
                    }
                }
            }
            y.keys()
                .find(|k| !x.contains_key(*k))
                .map(|k| format!("{at}.{k} only in the ranks'"))
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (v, w))| first_difference(v, w, &format!("{at}[{i}]"))),
        _ if a == b => None,
        _ => {
            let short = |v: &Value| {
                let t = v.to_string();
                if t.len() > 80 {
                    format!("{}...", &t[..80])
                } else {
                    t
                }
            };
            Some(format!(
                "{at}: {} in one process, {} on the ranks",
                short(a),
                short(b)
            ))
        }
    }
}

/// The collectives: their leaves (partitions 0-15 or 0-7 of 24)
/// alternate between 2 ranks and their hosts send and receive alike.
const HALVES: &[&str] = &[
    "allreduce_128gpu",
    "allreduce_128gpu_ooo",
    "allreduce_1024gpu",
    "alltoall_128gpu",
    "halving_doubling_128gpu",
];

/// Each flow's sender and receiver halves were held by one rank only
/// (rank 0's line of each run: per rank, `sender/receiver` halves held):
/// the ranks' counts add up to the run's flows, where every rank holding
/// the whole run would give `ranks` times as many. In the collectives
/// (`HALVES`) each rank holds half.
fn held_once(name: &str, ranks: u32, text: &str, flows: u64) {
    let key = "flows' halves held per rank (sender/receiver, of ";
    let lines: Vec<&str> = text.lines().filter(|l| l.contains(key)).collect();
    assert!(!lines.is_empty(), "{name}: no line of flows held:\n{text}");
    for l in lines {
        let rest = &l[l.find(key).unwrap() + key.len()..];
        let (total, per_rank) = rest.split_once(" flows): ").expect("the line's end");
        assert_eq!(total.parse::<u64>().unwrap(), flows, "{name}: {l}");
        let held: Vec<(u64, u64)> = per_rank
            .split(' ')
            .map(|h| {
                let (t, r) = h.split_once('/').expect("sender/receiver");
                (t.parse().unwrap(), r.parse().unwrap())
            })
            .collect();
        assert_eq!(held.len(), ranks as usize, "{name}: {l}");
        let (tx, rx) = held.iter().fold((0, 0), |a, h| (a.0 + h.0, a.1 + h.1));
        assert_eq!((tx, rx), (flows, flows), "{name}: {l}");
        if HALVES.contains(&name) {
            assert!(
                held.iter().all(|&h| h == (flows / 2, flows / 2)),
                "{name}: {l}"
            );
        }
    }
}

/// The processes whose parent is `pid` (from /proc).
fn children(pid: u32) -> Vec<u32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid ...: comm may hold spaces, not ')'
        let after = &stat[stat.rfind(')').map_or(0, |i| i + 2)..];
        let ppid = after.split(' ').nth(1).and_then(|s| s.parse().ok());
        let comm = stat.split('(').nth(1).unwrap_or("");
        if ppid == Some(pid) && comm.starts_with("dataplane-sim") {
            v.push(p);
        }
    }
    v
}

/// Process `pid` has ended (no longer there, or a zombie).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => s[s.rfind(')').map_or(0, |i| i + 2)..].starts_with('Z'),
    }
}

#[test]
fn a_rank_killed_mid_run_ends_the_job_within_seconds() {
    need_mpi!("a_rank_killed_mid_run_ends_the_job_within_seconds");
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    // a run of a minute or more: killed long before its end
    let mut job = mpirun(2)
        .current_dir(manifest)
        .arg(SIM)
        .args([
            "--scenario",
            "scenarios/websearch_1024.toml",
            "--threads",
            "1",
            "--quiet",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mpirun_pid = job.id();
    // both ranks up and past their set-up (a second of building)
    let t = Instant::now();
    let ranks = loop {
        let c = children(mpirun_pid);
        if c.len() == 2 {
            break c;
        }
        assert!(t.elapsed() < Duration::from_secs(30), "ranks never started");
        std::thread::sleep(Duration::from_millis(100));
    };
    std::thread::sleep(Duration::from_secs(3));
    assert!(job.try_wait().unwrap().is_none(), "the job ended by itself");
    let victim = ranks[1];
    // SAFETY: a plain kill(2) of a process this test started (mpirun's child)
    assert_eq!(unsafe { libc::kill(victim as i32, libc::SIGKILL) }, 0);
    let killed = Instant::now();
    let status = loop {
        if let Some(s) = job.try_wait().unwrap() {
            break s;
        }
        if killed.elapsed() > Duration::from_secs(20) {
            let _ = job.kill();
            panic!("the job still ran 20 s after a rank was killed");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let took = killed.elapsed();
    let o = job.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!status.success(), "the job succeeded without a rank");
    assert!(
        err.contains("signal 9") || err.contains("Killed"),
        "mpirun did not say a rank was killed:\n{err}"
    );
    let t = Instant::now();
    while !gone(ranks[0]) {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "rank 0 outlived the job"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        took < Duration::from_secs(10),
        "the job took {took:?} to end"
    );
    println!("the job ended {took:?} after rank 1 was killed: {status}");
}

#[test]
fn fewer_partitions_than_ranks_are_refused_naming_the_field() {
    need_mpi!("fewer_partitions_than_ranks_are_refused_naming_the_field");
    let o = mpirun(2)
        .arg(SIM)
        .args([
            "--topology",
            "leafspine:2x2:2",
            "--duration",
            "10us",
            "--quiet",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("partitions: 1 is fewer than the MPI job's 2 ranks"),
        "{err}"
    );
}
