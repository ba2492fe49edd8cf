//! `dataplane p4 entries` and `dataplane p4 stats`: the P4 targets
//! configured from the same file.

use std::path::Path;

use anyhow::Result;
use dataplane_p4 as p4;
use dataplane_p4::stats as p4stats;

use super::args::plan_of;

/// Writes the target's entries (CLI, P4Runtime JSON, bfrt script) to `out`.
pub fn entries(
    target: &str,
    config: &Path,
    out: &Path,
    bmv2_packet_bytes: u32,
    tofino_cell_bytes: u32,
    learned: bool,
) -> Result<()> {
    let t: p4::Target = target
        .parse()
        .map_err(|e: String| anyhow::anyhow!("--target: {e}"))?;
    let mut plan = plan_of(config)?;
    if learned {
        let path = dataplane_user::routing::listing_path(&plan.instance);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            anyhow::anyhow!("--learned: no route listing of instance {:?} ({}): {e}; is its controller running?", plan.instance, path.display())
        })?;
        let listing: dataplane_user::routing::Listing = serde_json::from_str(&text)?;
        plan = dataplane_user::routing::export::with_learned(&plan, &listing)?;
        println!(
            "with {} learned route(s) of the running controller",
            plan.routes.len()
        );
    }
    let opts = p4::Options {
        bmv2_packet_bytes,
        tofino_cell_bytes,
    };
    let e = p4::entries_with(&plan, t, &opts).map_err(|r| anyhow::anyhow!("{r}"))?;
    std::fs::create_dir_all(out)?;
    let name = |suffix: &str| out.join(format!("{}.{suffix}", plan.instance));
    let mut written = Vec::new();
    if !e.cli.is_empty() {
        std::fs::write(name("bmv2.txt"), &e.cli)?;
        written.push(name("bmv2.txt"));
    }
    let rt = name(&format!("{}.p4runtime.json", target));
    std::fs::write(&rt, &e.p4runtime_json)?;
    written.push(rt);
    if let Some(py) = &e.bfrt_py {
        std::fs::write(name("tofino_bfrt.py"), py)?;
        written.push(name("tofino_bfrt.py"));
    }
    for w in written {
        println!("wrote {}", w.display());
    }
    Ok(())
}

/// Reads a running bmv2 switch's counters and shows them as pfcstat does.
pub fn stats(target: &str, config: &Path, thrift_port: u16, json: bool) -> Result<()> {
    let t: p4::Target = target
        .parse()
        .map_err(|e: String| anyhow::anyhow!("--target: {e}"))?;
    if t != p4::Target::Bmv2 {
        anyhow::bail!("--target {target}: counters are read from bmv2 only; on Tofino read them with bfrt_python (e.g. bfrt.dataplane.pipe.DpIngress.rx_tc_count.dump(from_hw=True))");
    }
    let plan = plan_of(config)?;
    let c = p4stats::read_bmv2(thrift_port, &plan)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&c)?);
    } else {
        print!("{}", p4stats::render(&c));
    }
    Ok(())
}
