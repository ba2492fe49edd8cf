//! Bench records are never lost: two simulator bench runs and a record of
//! another bench (the lab's, in the shared `bench_results::Record` shape,
//! and one of a shape this build does not know) merged into one results
//! file all survive; a results file that does not parse stops the bench
//! with an error naming it, and is left as it was.

use std::path::PathBuf;
use std::process::Command;

fn tmp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("dp-sim-bench-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A 4-host leaf-spine run of 50 us, as a bench named `name` into `out`.
fn bench(out: &std::path::Path, name: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_dataplane-sim"))
        .args([
            "--topology",
            "leafspine:2x2:2",
            "--workload",
            "websearch",
            "--load",
            "0.3",
            "--duration",
            "50us",
            "--quiet",
            "--bench-name",
            name,
            "--bench-out",
        ])
        .arg(out)
        .output()
        .unwrap()
}

fn figures(out: &std::path::Path) -> Vec<String> {
    bench_results::read(out)
        .unwrap()
        .iter()
        .map(|r| r["figure"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn two_benches_and_other_records_all_survive() {
    let d = tmp("merge");
    let out = d.join("results.json");
    std::fs::write(&out, r#"[{"figure": "other.shape", "value": [1, 2]}]"#).unwrap();
    bench_results::merge(
        &out,
        &[bench_results::Record::new(
            "lab.figure".into(),
            1.0,
            "ns",
            "m",
            String::new(),
        )],
    )
    .unwrap();
    for name in ["one", "two"] {
        let o = bench(&out, name);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let f = figures(&out);
    for want in [
        "other.shape",
        "lab.figure",
        "sim.one_wall_s",
        "sim.one_peak_rss_mib",
        "sim.two_wall_s",
        "sim.two_events_per_cpu_s",
    ] {
        assert!(f.iter().any(|x| x == want), "{want} missing from {f:?}");
    }
    // a second run of a bench replaces its figures, never adds twins
    let o = bench(&out, "one");
    assert!(o.status.success());
    let again = figures(&out);
    assert_eq!(again.len(), f.len(), "{again:?}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_results_file_that_does_not_parse_stops_the_bench() {
    let d = tmp("bad");
    let out = d.join("results.json");
    let bad = b"[{\"figure\": \"x\", \"value\": 1},\n  {\"figure\": ";
    std::fs::write(&out, bad).unwrap();
    let o = bench(&out, "one");
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("results.json") && err.contains("line 2"),
        "{err}"
    );
    assert_eq!(std::fs::read(&out).unwrap(), bad, "the file was changed");
    std::fs::remove_dir_all(&d).unwrap();
}
