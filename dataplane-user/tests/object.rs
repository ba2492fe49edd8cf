//! The built eBPF object holds exactly the maps and programs
//! `dataplane_common::names` lists (the eBPF side names them by symbol, so
//! this is where the two are held together).

use std::collections::BTreeSet;

use dataplane_common::names;
use dataplane_user::object::EBPF_OBJECT;

#[test]
fn object_maps_and_programs_are_the_named_ones() {
    if EBPF_OBJECT.is_empty() {
        eprintln!("skipped: built with AYA_BUILD_SKIP=1 (no eBPF object)");
        return;
    }
    let obj = aya_obj::Object::parse(EBPF_OBJECT).expect("parsing the eBPF object");
    let maps: BTreeSet<&str> = obj
        .maps
        .keys()
        .map(String::as_str)
        .filter(|m| !m.starts_with('.') && !m.starts_with("AYA_"))
        .collect();
    let want: BTreeSet<&str> = names::map::ALL.into_iter().collect();
    assert_eq!(maps, want, "maps of the object vs names::map::ALL");
    let progs: BTreeSet<&str> = obj.programs.keys().map(String::as_str).collect();
    let want: BTreeSet<&str> = names::prog::ALL.into_iter().collect();
    assert_eq!(progs, want, "programs of the object vs names::prog::ALL");
}
