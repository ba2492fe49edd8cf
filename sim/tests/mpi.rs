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

/// The validation cases that fit a short test: each with its partitions
/// and the ranks it runs on.
#[rustfmt::skip]
const CASES: &[(&str, u32, &[&str])] = &[
    // every LB mode with the balancer's trace, 6 partitions on 3 ranks
    (
        "websearch_modes",
        3,
        &[
            "--topology", "leafspine:4x2:4", "--workload", "websearch", "--load", "0.7",
            "--duration", "300us", "--buffer", "4MB", "--partitions", "6",
            "--lb", "hash,flowlet,bandwidth,spray,place", "--trace-lb",
        ],
    ),
    // the 12:1 incast, drained, PFC on (lossless) and off (drops)
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
    // the testbed's scenarios (DCQCN scaled, delayed ACKs)
    (
        "testbed_incast",
        2,
        &["--scenario", "scenarios/testbed_incast.toml", "--partitions", "4"],
    ),
    // the 128-GPU all-reduce: steps learn of a flow in another
    // partition, by message, a window later
    (
        "allreduce_128gpu",
        2,
        &[
            "--scenario", "scenarios/allreduce_128gpu.toml", "--partitions", "24",
            "--dep-delay", "1us", "--size", "16MB", "--lb", "hash",
        ],
    ),
];

#[test]
fn ranks_give_the_one_process_report_byte_for_byte() {
    need_mpi!("ranks_give_the_one_process_report_byte_for_byte");
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
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
        assert_eq!(a, b, "{name}: the reports differ");
        let names: Vec<&String> = fa.iter().map(|f| &f.0).collect();
        assert_eq!(names, fb.iter().map(|f| &f.0).collect::<Vec<_>>());
        for ((n, x), (_, y)) in fa.iter().zip(&fb) {
            assert!(x == y, "{name}: {n} differs");
        }
        held_once(
            name,
            ranks,
            &text,
            a["runs"][0]["flows_total"].as_u64().unwrap(),
        );
        println!(
            "{name}: {ranks} ranks = one process ({} files), {:.1} s",
            fa.len() + 1,
            t0.elapsed().as_secs_f64()
        );
        let _ = std::fs::remove_dir_all(&one);
        let _ = std::fs::remove_dir_all(&many);
    }
}

/// Each flow's sender and receiver halves were held by one rank only
/// (rank 0's line of each run: per rank, `sender/receiver` halves held):
/// the ranks' counts add up to the run's flows, where every rank holding
/// the whole run would give `ranks` times as many. In the all-reduce,
/// whose 16 leaves (partitions 0-15 of 24) alternate between 2 ranks and
/// whose hosts send and receive alike, each rank holds half.
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
        if name == "allreduce_128gpu" {
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
