//! The seed corpus, built from the project's own fixtures: the conformance
//! corpus's frames (every header chain the data plane knows, malformed
//! ones included) with a few port settings each, PFC and PAUSE frames, the
//! example and corpus configurations, and fixed pseudo-random inputs for
//! the generated-config targets.

use std::path::Path;

use dataplane_common::build;
use dataplane_common::rand::SplitMix64;

/// One seed: target, name, bytes.
pub type Seed = (&'static str, String, Vec<u8>);

/// Every seed; `root` is the workspace root.
pub fn seeds(root: &Path) -> Vec<Seed> {
    let mut out = Vec::new();
    let corpus = dataplane_p4::corpus::load(&root.join("p4/corpus")).expect("the P4 corpus loads");
    let mut frames: Vec<(String, Vec<u8>)> = corpus
        .cases
        .iter()
        .map(|c| (c.name.clone(), c.frame.clone()))
        .collect();
    let src = [0x02, 0, 0, 0, 0, 7];
    frames.push((
        "pfc".into(),
        build::pfc_frame(src, 0x18, [0, 0, 0, 0xffff, 7, 0, 0, 0]),
    ));
    frames.push(("pause".into(), build::pause_frame(src, 0xffff)));
    // settings: trust dscp / dot1p, pass / drop, pfc 3,4, CNP on 6
    let settings: [[u8; 8]; 3] = [
        [0, 0, 0x18, 0, 6, 3, 0, 1],
        [1, 3, 0x08, 1, 6, 9, 0x63, 2],
        [2, 2, 0xff, 9, 14, 0, 0, 3],
    ];
    for (name, f) in &frames {
        for (i, s) in settings.iter().enumerate() {
            out.push(("frame", format!("{name}-{i}"), [s.as_slice(), f].concat()));
        }
    }
    for (name, f) in &frames {
        if f.len() > 14 && f[12..14] == [0x88, 0x08] {
            // mac_control: two ports' settings, then events; the frame's
            // bytes after its Ethernet header as a PFC event
            let mut b = vec![3, 0, 0, 0x18, 0, 0, 0, 0x18, 0, 0, 0, 0, 0, 0, 0, 0];
            for ev in [0u8, 1] {
                b.extend_from_slice(&[0, 0, 0, 0, 0, ev]);
                b.extend_from_slice(&[f.len() as u8 - 14]);
                b.extend_from_slice(&f[14..]);
            }
            out.push(("mac_control", name.clone(), b));
        }
    }
    let mut texts: Vec<(String, String)> = corpus
        .configs
        .iter()
        .map(|(n, (t, _))| (format!("corpus-{n}"), t.clone()))
        .collect();
    for ex in std::fs::read_dir(root.join("examples")).expect("examples/") {
        let p = ex.expect("examples/ entry").path();
        if p.extension().is_some_and(|x| x == "toml") {
            let name = p.file_stem().unwrap().to_string_lossy().to_string();
            texts.push((
                format!("example-{name}"),
                std::fs::read_to_string(&p).expect("example"),
            ));
        }
    }
    for (n, t) in texts {
        out.push(("config_text", n, t.into_bytes()));
    }
    for (name, b) in crate::lldp::seed_frames() {
        out.push(("lldp", name, b));
    }
    let mut r = SplitMix64(17);
    for target in ["config_struct", "p4_entries", "mac_control", "lldp"] {
        for i in 0..8 {
            let len = 64 << (i % 4);
            let b: Vec<u8> = (0..len).map(|_| r.next_u64() as u8).collect();
            out.push((target, format!("random-{i}"), b));
        }
    }
    out
}
