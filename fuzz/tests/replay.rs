//! The fuzz targets as ordinary tests (stable, no engine): the seed
//! corpus and every input a fuzzer found (`regressions/<target>/`, one
//! file per crash that was fixed) replayed through each target's checks.

use std::path::Path;

use dataplane_fuzz::{seeds::seeds, TARGETS};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
}

fn target(name: &str) -> fn(&[u8]) {
    TARGETS
        .iter()
        .find(|(n, _)| *n == name)
        .expect("a target")
        .1
}

#[test]
fn seed_corpus_passes_every_target() {
    let seeds = seeds(root());
    for (name, _) in TARGETS {
        let n = seeds.iter().filter(|s| s.0 == name).count();
        assert!(n >= 3, "target {name} has {n} seeds");
    }
    for (t, name, bytes) in &seeds {
        eprintln!("{t}/{name}");
        target(t)(bytes);
    }
}

/// Every file under `regressions/` is replayed: each directory must name
/// a target (a misspelt one would otherwise be skipped), and there must be
/// inputs (the directory lost in a move would otherwise pass).
#[test]
fn found_inputs_pass_after_their_fixes() {
    let dir = root().join("fuzz/regressions");
    let entries = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e} (the fixed crashes live there)", dir.display()));
    let mut n = 0;
    for entry in entries {
        let path = entry.unwrap().path();
        if !path.is_dir() {
            continue; // README.md
        }
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let check = TARGETS
            .iter()
            .find(|(t, _)| *t == name)
            .unwrap_or_else(|| panic!("{}: no fuzz target is named {name}", path.display()))
            .1;
        for f in std::fs::read_dir(&path).unwrap() {
            let p = f.unwrap().path();
            eprintln!("{}", p.display());
            check(&std::fs::read(&p).unwrap());
            n += 1;
        }
    }
    eprintln!("{n} regression inputs");
    assert!(n >= 1, "no regression input under {}", dir.display());
}

/// Generated valid configurations mostly validate (else the P4 target
/// would fuzz little behind validation), and wild ones mostly do not.
#[test]
fn generated_configs_reach_the_plan() {
    use arbitrary::{Arbitrary, Unstructured};
    let mut r = dataplane_common::rand::SplitMix64(5);
    let (mut valid, mut wild_valid, mut n) = (0, 0, 0);
    for i in 0..300 {
        let b: Vec<u8> = (0..(64 << (i % 5))).map(|_| r.next_u64() as u8).collect();
        let Ok(g) = dataplane_fuzz::gen::GenConfig::arbitrary_take_rest(Unstructured::new(&b))
        else {
            continue;
        };
        n += 1;
        if dataplane_fuzz::config_text::validated(&g.render(false)).is_some() {
            valid += 1;
        }
        if dataplane_fuzz::config_text::validated(&g.render(true)).is_some() {
            wild_valid += 1;
        }
    }
    eprintln!("{n} generated: {valid} valid in range, {wild_valid} valid wild");
    assert!(
        valid * 2 > n,
        "only {valid} of {n} generated in-range configs validate"
    );
    assert!(wild_valid * 2 < n);
}
