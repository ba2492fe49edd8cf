//! Adoption and upgrade against a pinned data plane that does not fit:
//! maps pinned with another layout are refused by `up` and by `upgrade`
//! (every difference listed, nothing attached or pinned, a running
//! controller left running), and a pinned link that cannot take the new
//! program (its interface was recreated) falls back to a fresh attach that
//! is logged and counted.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use testbed::controller::Controller;
use testbed::netns::{veth, Netns};

/// Pins a hash map of the given layout at `path` (raw BPF_MAP_CREATE and
/// BPF_OBJ_PIN: a map of "another version").
fn pin_map(path: &Path, key: u32, value: u32, entries: u32) {
    let mut attr = [0u8; 72];
    attr[0..4].copy_from_slice(&1u32.to_ne_bytes()); // BPF_MAP_TYPE_HASH
    attr[4..8].copy_from_slice(&key.to_ne_bytes());
    attr[8..12].copy_from_slice(&value.to_ne_bytes());
    attr[12..16].copy_from_slice(&entries.to_ne_bytes());
    // SAFETY: bpf(BPF_MAP_CREATE) with the documented attr.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            0 as libc::c_long,
            attr.as_mut_ptr(),
            attr.len() as u32,
        )
    };
    assert!(
        fd >= 0,
        "BPF_MAP_CREATE: {}",
        std::io::Error::last_os_error()
    );
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    let mut pin = [0u8; 16];
    pin[0..8].copy_from_slice(&(c.as_ptr() as u64).to_ne_bytes());
    pin[8..12].copy_from_slice(&(fd as u32).to_ne_bytes());
    // SAFETY: bpf(BPF_OBJ_PIN) with the path and the fd just created.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            6 as libc::c_long,
            pin.as_mut_ptr(),
            pin.len() as u32,
        )
    };
    assert_eq!(
        rc,
        0,
        "BPF_OBJ_PIN {}: {}",
        path.display(),
        std::io::Error::last_os_error()
    );
    // SAFETY: our own fd; the pin keeps the map.
    unsafe { libc::close(fd as i32) };
}

fn config(instance: &str, ports: &[&str]) -> String {
    let mut t = format!("[switch]\nname = \"{instance}\"\n");
    for p in ports {
        t.push_str(&format!("\n[[port]]\nname = \"{p}\"\npfc_enable = \"3\"\n"));
    }
    t
}

fn has_xdp(ns: &Netns, dev: &str) -> bool {
    ns.exec(&["ip", "link", "show", dev])
        .unwrap()
        .contains("xdp")
}

/// Removes the instance's pins whatever happened.
struct Pins(String);
impl Drop for Pins {
    fn drop(&mut self) {
        let _ = Command::new(testbed::dataplane_bin())
            .args(["down", "--instance", &self.0])
            .output();
        let _ = std::fs::remove_dir_all(Path::new("/sys/fs/bpf/dataplane").join(&self.0));
    }
}

#[test]
fn another_layout_is_refused_by_up_and_upgrade_with_every_difference() {
    let bin = testbed::dataplane_bin();
    let sw = Netns::create("hly").unwrap();
    let h = Netns::create("hlyh").unwrap();
    veth(
        &sw,
        "hly-p0",
        "02:00:00:00:72:00",
        &h,
        "hly-h0",
        "02:00:00:00:72:10",
    )
    .unwrap();
    let instance = format!("hlayout{}", std::process::id());
    let _pins = Pins(instance.clone());
    let dir = Path::new("/sys/fs/bpf/dataplane").join(&instance);
    std::fs::create_dir_all(&dir).unwrap();
    pin_map(&dir.join("PORT_CONFIG"), 4, 7, 3);
    pin_map(&dir.join("GROUPS"), 2, 8, 5);
    let cfg = std::env::temp_dir().join(format!("{instance}.toml"));
    std::fs::write(&cfg, config(&instance, &["hly-p0"])).unwrap();
    for cmd in ["up", "upgrade"] {
        let o = Command::new(&bin)
            .args(["--netns", &sw.name, cmd, "-c"])
            .arg(&cfg)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{cmd} adopted maps of another layout");
        for want in [
            "another layout than this build",
            "nothing was changed",
            "PORT_CONFIG: pinned type 1 key 4 value 7 entries 3, this build expects",
            "GROUPS: pinned type 1 key 2 value 8 entries 5, this build expects",
        ] {
            assert!(err.contains(want), "{cmd}: {want:?} missing in:\n{err}");
        }
        assert!(
            !has_xdp(&sw, "hly-p0"),
            "{cmd} attached despite the refusal"
        );
        let mut pinned: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        pinned.sort();
        assert_eq!(pinned, ["GROUPS", "PORT_CONFIG"], "{cmd} pinned something");
    }
    // a running controller: `upgrade` of a binary that does not fit is
    // refused before the controller is stopped
    std::fs::remove_dir_all(&dir).unwrap();
    let text = config(&instance, &["hly-p0"]);
    let ctl = Controller::start(bin.as_ref(), &sw, &instance, &text, "hly").unwrap();
    std::fs::remove_file(dir.join("GROUPS")).unwrap();
    pin_map(&dir.join("GROUPS"), 2, 8, 5);
    let o = Command::new(&bin)
        .args(["--netns", &sw.name, "upgrade", "-c"])
        .arg(&cfg)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("GROUPS: pinned type 1 key 2 value 8"),
        "{err}"
    );
    std::thread::sleep(Duration::from_millis(300));
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", ctl.pid())).unwrap();
    let state = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    assert!(
        state != "Z" && state != "X",
        "upgrade stopped the running controller before refusing (state {state})"
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!out.contains("stopping controller"), "{out}");
    assert!(has_xdp(&sw, "hly-p0"));
    drop(ctl);
    let _ = std::fs::remove_file(&cfg);
}

#[test]
fn a_failed_swap_falls_back_logged_and_counted() {
    let bin = testbed::dataplane_bin();
    let sw = Netns::create("hsw").unwrap();
    let h = Netns::create("hswh").unwrap();
    veth(
        &sw,
        "hsw-p0",
        "02:00:00:00:73:00",
        &h,
        "hsw-h0",
        "02:00:00:00:73:10",
    )
    .unwrap();
    veth(
        &sw,
        "hsw-p1",
        "02:00:00:00:73:01",
        &h,
        "hsw-h1",
        "02:00:00:00:73:11",
    )
    .unwrap();
    let instance = format!("hswap{}", std::process::id());
    let _pins = Pins(instance.clone());
    let text = config(&instance, &["hsw-p0", "hsw-p1"]);
    let mut first = Controller::start(bin.as_ref(), &sw, &instance, &text, "hsw").unwrap();
    first.kill();
    // hsw-p1 recreated: its pinned link is defunct and cannot take a program
    sw.ip(&["link", "del", "hsw-p1"]).unwrap();
    veth(
        &sw,
        "hsw-p1",
        "02:00:00:00:73:01",
        &h,
        "hsw-h1",
        "02:00:00:00:73:11",
    )
    .unwrap();
    assert!(!has_xdp(&sw, "hsw-p1"));
    let second = Controller::start(bin.as_ref(), &sw, &instance, &text, "hsw2").unwrap();
    let lines = second.history();
    let all = lines.join("\n");
    assert!(all.contains("adopted the running data plane"), "{all}");
    assert!(
        all.contains("attached xdp_classify to hsw-p0 (kept, program swapped)"),
        "{all}"
    );
    assert!(
        all.contains(
            "non-atomic attach: 1 port(s) re-attached after a failed program swap: hsw-p1"
        ),
        "the fallback was not counted:\n{all}"
    );
    assert!(has_xdp(&sw, "hsw-p1") && has_xdp(&sw, "hsw-p0"));
    drop(second);
    drop(first);
}

#[test]
fn instance_names_are_checked_like_the_config_name() {
    let bin = testbed::dataplane_bin();
    // a directory `down --instance ../NAME` would reach from the pin root
    let outside = format!("hinst{}", std::process::id());
    let sentinel = Path::new("/sys/fs/bpf").join(&outside);
    std::fs::create_dir_all(&sentinel).unwrap();
    let bad = format!("../{outside}");
    let cfg = std::env::temp_dir().join(format!("{outside}.toml"));
    std::fs::write(
        &cfg,
        format!("[switch]\nname = \"{bad}\"\n[[port]]\nname = \"lo\"\n"),
    )
    .unwrap();
    let cases: Vec<Vec<String>> = vec![
        vec!["down".into(), "--instance".into(), bad.clone()],
        vec!["stats".into(), "--instance".into(), bad.clone()],
        vec!["events".into(), "--instance".into(), bad.clone()],
        vec!["down".into(), "--instance".into(), "".into()],
        vec!["down".into(), "--instance".into(), "a/b".into()],
        vec!["down".into(), "-c".into(), cfg.display().to_string()],
    ];
    for args in &cases {
        let o = Command::new(&bin).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?} was accepted");
        assert!(
            err.contains("expected 1-64 characters from [A-Za-z0-9_-]"),
            "{args:?}: {err}"
        );
        assert!(
            err.contains("--instance") || err.contains("switch.name"),
            "{args:?} does not name the field: {err}"
        );
    }
    assert!(
        sentinel.exists(),
        "a refused instance name reached outside the pin root"
    );
    std::fs::remove_dir(&sentinel).unwrap();
    let _ = std::fs::remove_file(&cfg);
}
