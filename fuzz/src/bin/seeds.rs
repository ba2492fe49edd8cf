//! `fuzz-seeds DIR`: writes the seed corpus to `DIR/<target>/` (what
//! `cargo xtask fuzz` starts each target from).

fn main() {
    let out = std::env::args().nth(1).expect("usage: fuzz-seeds DIR");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap();
    let seeds = dataplane_fuzz::seeds::seeds(root);
    for (target, name, bytes) in &seeds {
        let dir = std::path::Path::new(&out).join(target);
        std::fs::create_dir_all(&dir).expect("creating the corpus directory");
        std::fs::write(dir.join(format!("seed-{name}")), bytes).expect("writing a seed");
    }
    println!("{} seeds in {out}", seeds.len());
}
