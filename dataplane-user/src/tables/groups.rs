//! Next-hop groups in the data plane: built from the plan with stable member
//! slots and a resilient bucket table (`dataplane_common::lb`), written whole
//! so a packet never sees a half-written group, and updated when a member's
//! port goes down or comes back (only that member's flows move).

use anyhow::{Context, Result};
use aya::maps::{Array, MapData};

use super::slotted::Slotted;
use aya::Ebpf;
use dataplane_common::lb::{Group, PortRate};
use dataplane_common::names;

use crate::ports::Resolved;
use dataplane_config::group_value;
use dataplane_config::Plan;

/// Is interface `ifindex` operationally up (IFF_RUNNING) here?
pub fn link_up(name: &str) -> bool {
    let Ok(c) = std::ffi::CString::new(name) else {
        return false;
    };
    if name.len() >= libc::IF_NAMESIZE {
        return false;
    }
    // SAFETY: zeroed ifreq with the name copied in; ioctl on our socket.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0);
        if fd < 0 {
            return false;
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        for (d, s) in req.ifr_name.iter_mut().zip(c.as_bytes()) {
            *d = *s as libc::c_char;
        }
        let rc = libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut req);
        libc::close(fd);
        rc == 0 && (req.ifr_ifru.ifru_flags as i32 & libc::IFF_RUNNING) != 0
    }
}

/// Writes every group (whole-value updates), the port rate estimators'
/// speeds and the hash seed.
pub fn write_groups(bpf: &mut Ebpf, plan: &Plan, ports: &[Resolved]) -> Result<usize> {
    {
        let mut seed: Array<&mut MapData, u32> = Array::try_from(
            bpf.map_mut(names::map::HASH_SEED)
                .context(names::map::HASH_SEED)?,
        )?;
        seed.set(0, plan.hash_seed, 0)?;
    }
    {
        let mut rate: Array<&mut MapData, PortRate> = Array::try_from(
            bpf.map_mut(names::map::PORT_RATE)
                .context(names::map::PORT_RATE)?,
        )?;
        for r in ports {
            let id = u32::from(r.config.port_id);
            let mut cur = rate.get(&id, 0)?;
            if cur.speed_mbps != r.config.speed_mbps {
                cur = PortRate::new(r.config.speed_mbps);
                rate.set(id, cur, 0)?;
            }
        }
    }
    update_groups(bpf, plan, &|i| link_up(&plan.ports[i].name))
}

/// The group table of a loaded object.
pub fn groups(bpf: &mut Ebpf) -> Result<Slotted<&mut MapData, Group>> {
    Slotted::of(bpf, names::map::GROUPS, names::map::GROUP_SLOT)
}

/// Rewrites the groups that changed for the current port states; returns
/// how many. Each group is one whole-value update.
pub fn update_groups(
    bpf: &mut Ebpf,
    plan: &Plan,
    port_up: &dyn Fn(usize) -> bool,
) -> Result<usize> {
    let mut m = groups(bpf)?;
    let mut n = 0;
    for (i, g) in plan.groups.iter().enumerate() {
        let prev = m.get(i as u32)?;
        let v = group_value(plan, g, port_up, prev.as_ref())?;
        if prev.as_ref() != Some(&v) {
            m.set(i as u32, Some(&v))
                .with_context(|| format!("group {}", g.name))?;
            n += 1;
        }
    }
    Ok(n)
}

/// Removes groups the plan no longer has (after routes stopped using them).
pub fn remove_stale_groups(bpf: &mut Ebpf, plan: &Plan) -> Result<usize> {
    groups(bpf)?.remove_from(plan.groups.len() as u32)
}
