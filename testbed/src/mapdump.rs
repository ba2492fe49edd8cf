//! Every entry of a pinned map as bytes, to compare a data plane's tables
//! before and after something that must not change them (a refused
//! reload, a fault). Raw BPF_MAP_GET_NEXT_KEY / BPF_MAP_LOOKUP_ELEM on the
//! pin, so any map type and layout is read the same way.

use std::collections::BTreeMap;
use std::os::fd::{AsFd, AsRawFd};
use std::path::Path;

use anyhow::{Context, Result};
use aya::maps::MapData;

/// Key bytes -> value bytes (per-CPU maps: every CPU's value).
pub type Dump = BTreeMap<Vec<u8>, Vec<u8>>;

const BPF_MAP_LOOKUP_ELEM: libc::c_long = 1;
const BPF_MAP_GET_NEXT_KEY: libc::c_long = 4;
/// Room for a per-CPU value on up to 512 CPUs.
const MAX_CPUS: usize = 512;

fn bpf(cmd: libc::c_long, fd: i32, key: *const u8, out: *mut u8) -> std::io::Result<()> {
    // union bpf_attr, the map element member: map_fd 0, key 8, value or
    // next_key 16, flags 24
    let mut attr = [0u8; 32];
    attr[0..4].copy_from_slice(&(fd as u32).to_ne_bytes());
    attr[8..16].copy_from_slice(&(key as u64).to_ne_bytes());
    attr[16..24].copy_from_slice(&(out as u64).to_ne_bytes());
    // SAFETY: bpf(2) with the documented attr; key and out point to
    // buffers of the map's key size and (per-CPU) value size that outlive
    // the call.
    let rc = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.as_mut_ptr(), attr.len() as u32) };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Every entry of the map pinned at `path`.
pub fn dump(path: &Path) -> Result<Dump> {
    let map = MapData::from_pin(path).with_context(|| format!("opening {}", path.display()))?;
    let info = map.info()?;
    let (ks, vs) = (info.key_size() as usize, info.value_size() as usize);
    let fd = map.fd().as_fd().as_raw_fd();
    let mut out = Dump::new();
    let mut key: Option<Vec<u8>> = None;
    loop {
        let mut next = vec![0u8; ks];
        let k = key.as_ref().map_or(std::ptr::null(), |k| k.as_ptr());
        match bpf(BPF_MAP_GET_NEXT_KEY, fd, k, next.as_mut_ptr()) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => break,
            Err(e) => return Err(e).with_context(|| format!("iterating {}", path.display())),
        }
        let mut value = vec![0u8; vs.next_multiple_of(8) * MAX_CPUS];
        match bpf(BPF_MAP_LOOKUP_ELEM, fd, next.as_ptr(), value.as_mut_ptr()) {
            Ok(()) => {
                out.insert(next.clone(), value);
            }
            // deleted between the two calls
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        }
        key = Some(next);
    }
    Ok(out)
}

/// The maps the controller writes from the configuration (what a refused
/// reload must leave alone), by name.
pub const CONFIG_TABLES: [&str; 17] = {
    use dataplane_common::names::map::*;
    [
        PORT_CONFIG,
        PORT_INDEX,
        PORTS,
        PORT_SLOT,
        ROUTES_V4,
        ROUTES_V6,
        HOSTS_V4,
        HOSTS_V6,
        HOST_ROUTES,
        NEXTHOPS,
        NEXTHOP_SLOT,
        TX_PORTS,
        GROUPS,
        GROUP_SLOT,
        HASH_SEED,
        PORT_BUF,
        POOL,
    ]
};

/// Dumps of `names` pinned in the instance's directory.
pub fn tables(instance: &str, names: &[&str]) -> Result<BTreeMap<String, Dump>> {
    let dir = Path::new("/sys/fs/bpf/dataplane").join(instance);
    names
        .iter()
        .map(|n| Ok((n.to_string(), dump(&dir.join(n))?)))
        .collect()
}

/// The names of the maps whose dumps differ.
pub fn changed(a: &BTreeMap<String, Dump>, b: &BTreeMap<String, Dump>) -> Vec<String> {
    a.iter()
        .filter(|(n, d)| b.get(*n) != Some(*d))
        .map(|(n, _)| n.clone())
        .collect()
}
