//! Digest of the P4 entries of every input in a `p4_entries` corpus: one
//! line per input (file name, output length, SipHash of the CLI, P4Runtime
//! JSON, bfrt_python of both targets, or the refusal), to check that a
//! change to the generator leaves its output byte for byte the same:
//! `fuzz-p4-digest CORPUS_DIR > before.txt`, change, again, `diff`.

use std::hash::{Hash, Hasher};

use arbitrary::{Arbitrary, Unstructured};
use dataplane_fuzz::gen::GenConfig;
use dataplane_p4::target::Target;

fn main() {
    let dir = std::env::args()
        .nth(1)
        .expect("usage: fuzz-p4-digest CORPUS_DIR");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .expect("corpus dir")
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    let (mut plans, mut t) = (0, std::time::Duration::ZERO);
    for p in names {
        let data = std::fs::read(&p).unwrap();
        let Ok(g) = GenConfig::arbitrary_take_rest(Unstructured::new(&data)) else {
            continue;
        };
        let Some(plan) = dataplane_fuzz::config_text::validated(&g.render(false)) else {
            continue;
        };
        plans += 1;
        let mut h = std::collections::hash_map::DefaultHasher::new();
        let mut len = 0;
        let t0 = std::time::Instant::now();
        for target in Target::ALL {
            match dataplane_p4::entries(&plan, target) {
                Ok(e) => {
                    len += e.cli.len() + e.p4runtime_json.len();
                    e.cli.hash(&mut h);
                    e.p4runtime_json.hash(&mut h);
                    e.bfrt_py.hash(&mut h);
                    len += e.bfrt_py.map_or(0, |b| b.len());
                }
                Err(r) => r.to_string().hash(&mut h),
            }
        }
        t += t0.elapsed();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        println!("{name} {len} {:016x}", h.finish());
    }
    eprintln!("{plans} plans, generator {:.3} s", t.as_secs_f64());
}
