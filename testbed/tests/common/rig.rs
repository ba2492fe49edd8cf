//! What a BPF_PROG_TEST_RUN test of the data plane starts from.

use testbed::netns::{Entered, Netns};

/// Namespace `tag` with veth ports (peers `<port>-peer`) and the calling
/// thread inside it until this drops (then the namespace goes).
pub struct Rig {
    _in: Entered,
    pub ns: Netns,
}

/// [`Rig`] for test `test` with `ports`, and the eBPF object loaded in it
/// (no configuration yet); `None`, with a SKIPPED line naming the test,
/// when not root. Bind the rig to a name (`_rig`, not `_`): it must live
/// as long as the test.
pub fn rig(test: &str, tag: &str, ports: &[&str]) -> Option<(Rig, aya::Ebpf)> {
    // SAFETY: no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIPPED {test}: not root");
        return None;
    }
    let ns = Netns::create(tag).unwrap();
    ns.add_ports(ports).unwrap();
    let entered = ns.enter().unwrap();
    let bpf = dataplane_user::object::load_object().unwrap();
    Some((Rig { _in: entered, ns }, bpf))
}
