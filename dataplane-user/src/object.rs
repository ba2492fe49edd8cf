//! The eBPF object built by build.rs: loading it, its map layouts, and
//! loading it against a pinned data plane's maps (refused when they differ).

use anyhow::{anyhow, bail, Context, Result};
use aya::maps::MapData;
use aya::programs::Xdp;
use aya::Ebpf;
use std::path::{Path, PathBuf};

/// The eBPF object built by build.rs.
pub static EBPF_OBJECT: &[u8] =
    aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/dataplane-ebpf"));

/// Loads the object (all programs verified by the kernel, none attached).
pub fn load_object() -> Result<Ebpf> {
    if EBPF_OBJECT.is_empty() {
        bail!("this binary was built with AYA_BUILD_SKIP=1 and carries no eBPF programs; rebuild without it");
    }
    let mut bpf = Ebpf::load(EBPF_OBJECT).context("loading the eBPF object")?;
    load_xdp_programs(&mut bpf)?;
    Ok(bpf)
}

/// Loads every XDP program of `bpf` into the kernel (the verifier's turn);
/// the tracing program (telemetry::xmit) is loaded where it attaches, the
/// feature probes' programs by the probes (`crate::probe`).
fn load_xdp_programs(bpf: &mut Ebpf) -> Result<()> {
    let names: Vec<String> = bpf
        .programs()
        .map(|(n, _)| n.to_string())
        .filter(|n| !dataplane_common::names::prog::PROBES.contains(&n.as_str()))
        .collect();
    for name in names {
        let prog = bpf
            .program_mut(&name)
            .ok_or_else(|| anyhow!("program {name} vanished"))?;
        let Ok(p) = <&mut Xdp>::try_from(prog) else {
            continue;
        };
        p.load()
            .with_context(|| format!("verifier rejected {name}"))?;
    }
    Ok(())
}

/// A map's layout: (name, type, key size, value size, max entries, the
/// flags that change how it is used: [`LAYOUT_FLAGS`]).
pub type MapLayout = (String, u32, u32, u32, u32, u32);

/// Map flags that are part of a layout: BPF_F_MMAPABLE (the controller
/// maps `WATERMARKS` into memory; a pinned map without it cannot be).
pub const LAYOUT_FLAGS: u32 = 1 << 10;

/// Every map of the eBPF object with its layout, from the ELF.
pub fn object_maps() -> Result<Vec<MapLayout>> {
    if EBPF_OBJECT.is_empty() {
        bail!("this binary was built with AYA_BUILD_SKIP=1 and carries no eBPF programs; rebuild without it");
    }
    let obj = aya_obj::Object::parse(EBPF_OBJECT).context("parsing the eBPF object")?;
    // data sections (.rodata, .bss: the compiler's constants) hold no state
    // and are not pinned
    let mut v: Vec<_> = obj
        .maps
        .iter()
        .filter(|(n, _)| !n.starts_with('.'))
        .map(|(n, m)| {
            (
                n.clone(),
                m.map_type(),
                m.key_size(),
                m.value_size(),
                m.max_entries(),
                m.map_flags() & LAYOUT_FLAGS,
            )
        })
        .collect();
    v.sort();
    Ok(v)
}

/// Map sizes a configuration sets at load (`[routing] max_routes_*`: the
/// route tables), as (map name, max entries).
pub type MapSizes = Vec<(&'static str, u32)>;

/// The object's maps with `sizes` applied.
pub fn object_maps_sized(sizes: &[(&str, u32)]) -> Result<Vec<MapLayout>> {
    let mut v = object_maps()?;
    for m in &mut v {
        if let Some((_, n)) = sizes.iter().find(|(name, _)| *name == m.0) {
            m.4 = *n;
        }
    }
    Ok(v)
}

/// Refuses to adopt pinned maps whose layout differs from this build's: a
/// data plane of another version is running there, and reusing its maps
/// would corrupt them.
pub fn check_pinned_layouts(dir: &Path) -> Result<()> {
    check_pinned_layouts_sized(dir, &[])
}

/// [`check_pinned_layouts`] against the layouts with `sizes` applied (a
/// route table of another size is another layout: `down` first).
pub fn check_pinned_layouts_sized(dir: &Path, sizes: &[(&str, u32)]) -> Result<()> {
    let mut bad = Vec::new();
    for (name, ty, k, v, n, f) in object_maps_sized(sizes)? {
        let path = dir.join(&name);
        if !path.exists() {
            continue;
        }
        let info = MapData::from_pin(&path)
            .with_context(|| format!("opening {}", path.display()))?
            .info()?;
        let got = (
            info.map_type().map(|t| t as u32).unwrap_or(u32::MAX),
            info.key_size(),
            info.value_size(),
            info.max_entries(),
            info.map_flags() & LAYOUT_FLAGS,
        );
        if got != (ty, k, v, n, f) {
            let mut m = format!(
                "{name}: pinned type {} key {} value {} entries {}, this build expects type {ty} key {k} value {v} entries {n}",
                got.0, got.1, got.2, got.3
            );
            if got.4 != f {
                m.push_str(&format!(
                    " (BPF_F_MMAPABLE: pinned {}, this build {})",
                    got.4 != 0,
                    f != 0
                ));
            }
            bad.push(m);
        }
    }
    if !bad.is_empty() {
        bail!(
            "the data plane pinned in {} has another layout than this build (another version runs there); nothing was changed:\n  {}\n\
             detach it with `dataplane down` (its state is lost) or use the binary that matches it",
            dir.display(),
            bad.join("\n  ")
        );
    }
    Ok(())
}

/// Loads the object with every map pinned under `dir`: maps already pinned
/// there are reused (state, counters, flowlets and the buffer model
/// survive), the others are created and pinned.
pub fn load_object_pinned(dir: &Path) -> Result<Ebpf> {
    load_object_pinned_sized(dir, &[])
}

/// [`load_object_pinned`] with the maps of `sizes` created at those sizes.
pub fn load_object_pinned_sized(dir: &Path, sizes: &[(&str, u32)]) -> Result<Ebpf> {
    let names: Vec<String> = object_maps()?.into_iter().map(|m| m.0).collect();
    let paths: Vec<PathBuf> = names.iter().map(|n| dir.join(n)).collect();
    let mut loader = aya::EbpfLoader::new();
    for (n, p) in names.iter().zip(&paths) {
        loader.map_pin_path(n.as_str(), p.as_path());
    }
    for (n, size) in sizes {
        loader.map_max_entries(n, *size);
    }
    let mut bpf = loader
        .load(EBPF_OBJECT)
        .context("loading the eBPF object with pinned maps")?;
    load_xdp_programs(&mut bpf)?;
    Ok(bpf)
}

/// The route tables' sizes a plan asks for: `[routing] max_routes_v4/v6`
/// for the trie and the host table of each family (none without
/// `[routing]`: the compiled sizes).
pub fn route_table_sizes(plan: &dataplane_config::Plan) -> MapSizes {
    match &plan.routing {
        Some(r) => vec![
            (dataplane_common::names::map::ROUTES_V4, r.max_routes_v4),
            (dataplane_common::names::map::ROUTES_V6, r.max_routes_v6),
            (dataplane_common::names::map::HOSTS_V4, r.max_routes_v4),
            (dataplane_common::names::map::HOSTS_V6, r.max_routes_v6),
        ],
        None => Vec::new(),
    }
}
