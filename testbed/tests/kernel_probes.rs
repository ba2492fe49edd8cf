//! The kernel feature probes on the running kernel, in a network namespace
//! this test creates (removed by its guard on every path):
//! - every probe whose feature this kernel's version has must report it
//!   available (a kernel with the feature and a probe that says otherwise
//!   is a broken probe, or a kernel that cannot run that path);
//! - `dataplane up` prints the same table, every row available, and says
//!   which PFC path it chose and why;
//! - a forced PFC path that fails its self-test (`pfc_tx = "dataplane"`
//!   with ports in generic XDP, where the broadcast copies lose their
//!   metadata) is refused naming the key, and nothing is left attached or
//!   pinned.
//!
//! Part of the kernel matrix (`cargo xtask test --kernel 6.1 --only
//! kernel_probes`).

mod common;

use std::process::Command;
use std::time::Instant;

use common::switch_with_ports;
use dataplane_user::probe::{kernel, Feature, Status};
use testbed::controller::Controller;
use testbed::netns::Netns;

static BIN: std::sync::LazyLock<String> = std::sync::LazyLock::new(testbed::dataplane_bin);

/// (major, minor) of the running kernel.
fn kernel_version() -> (u32, u32) {
    let r = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut it = r
        .trim()
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|x| x.parse::<u32>().ok());
    (it.next().unwrap_or(0), it.next().unwrap_or(0))
}

fn since(f: Feature) -> (u32, u32) {
    let mut it = f.since().split('.').map(|x| x.parse::<u32>().unwrap());
    (it.next().unwrap(), it.next().unwrap())
}

#[test]
fn every_probe_reports_the_features_this_kernel_has() {
    let ns = Netns::create("kprobe").unwrap();
    let _inside = ns.enter().unwrap();
    let t0 = Instant::now();
    let probes = kernel::run_all();
    let release = dataplane_user::probe::kernel_release();
    println!(
        "{}(probed in {} ms)",
        probes.table(&release),
        t0.elapsed().as_millis()
    );
    assert_eq!(
        probes.features.len(),
        Feature::ALL.len(),
        "one result per probe"
    );
    let have = kernel_version();
    let mut wrong = Vec::new();
    for p in &probes.features {
        if since(p.feature) <= have && !matches!(p.status, Status::Available(_)) {
            wrong.push(format!(
                "{} (Linux {}+) on {release}: {} {}",
                p.feature.name(),
                p.feature.since(),
                p.status.word(),
                p.status.detail()
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "probes that do not report a feature this kernel has:\n  {}",
        wrong.join("\n  ")
    );
    // a port's native XDP: a veth of the test's namespace (its driver
    // reports its XDP features from 6.3 on)
    ns.add_ports(&["kpv0"]).unwrap();
    let port = kernel::port_native("kpv0");
    println!(
        "{}: {} {}",
        port.name(),
        port.status.word(),
        port.status.detail()
    );
    assert_eq!(port.driver.as_deref(), Some("veth"), "{port:?}");
    if have >= (6, 3) {
        assert!(port.status.is_available(), "{port:?}");
    } else {
        assert!(matches!(port.status, Status::NotProbed(_)), "{port:?}");
    }
}

fn config(instance: &str, pfc_tx: &str, xdp_mode: &str) -> String {
    format!(
        r#"
[switch]
name = "{instance}"

[buffer]
pfc_tx = "{pfc_tx}"

[[port]]
name = "kp0"
mac = "02:00:00:00:6b:00"
pfc_enable = "3"
xdp_mode = "{xdp_mode}"

[[port]]
name = "kp1"
mac = "02:00:00:00:6b:01"
pfc_enable = "3"
xdp_mode = "{xdp_mode}"

[[nexthop]]
name = "sink"
port = "kp1"
mac = "02:00:00:00:6b:11"

[[route]]
prefix = "198.18.1.0/24"
nexthop = "sink"
"#
    )
}

#[test]
fn up_prints_the_probe_table_and_why_it_chose_its_pfc_path() {
    let (sw, _h, _sink) = switch_with_ports("kpu", "kp0", "kp1", 0x6b);
    let instance = format!("kpu{}", std::process::id());
    let ctl = Controller::start(
        std::path::Path::new(BIN.as_str()),
        &sw,
        &instance,
        &config(&instance, "auto", "native"),
        "kp-up",
    )
    .unwrap();
    let lines = ctl.history();
    ctl.stop("kp-up");
    let head = lines
        .iter()
        .position(|l| l.starts_with("kernel features ("))
        .unwrap_or_else(|| panic!("no probe table in up's output:\n{}", lines.join("\n")));
    let rows = &lines[head + 2..head + 2 + Feature::ALL.len()];
    let have = kernel_version();
    for (f, row) in Feature::ALL.iter().zip(rows) {
        assert!(
            row.trim_start().starts_with(f.name()),
            "row {row:?} is not {f:?}"
        );
        if since(*f) <= have {
            assert!(
                row.contains(" available "),
                "{} not available: {row}",
                f.name()
            );
        }
    }
    for (i, port) in ["kp0", "kp1"].iter().enumerate() {
        let row = &lines[head + 2 + Feature::ALL.len() + i];
        assert!(
            row.trim_start()
                .starts_with(&format!("native XDP on {port} (veth)")),
            "no port row for {port}: {row}"
        );
        let want = if have >= (6, 3) {
            " available "
        } else {
            " not probed "
        };
        assert!(row.contains(want), "{port}: {row}");
    }
    let pfc = lines
        .iter()
        .find(|l| l.starts_with("pfc: frames sent by"))
        .unwrap_or_else(|| panic!("no pfc line:\n{}", lines.join("\n")));
    assert!(
        pfc.contains("frames sent by the data plane")
            && pfc.contains("buffer.pfc_tx = \"auto\"")
            && pfc.contains("self-test passed"),
        "auto did not pick the data plane's path, or did not say why: {pfc}"
    );
}

#[test]
fn forced_dataplane_pfc_failing_its_self_test_is_refused_and_nothing_is_left() {
    let (sw, _h, _sink) = switch_with_ports("kpr", "kp0", "kp1", 0x6c);
    let instance = format!("kpr{}", std::process::id());
    let file = std::env::temp_dir().join(format!("{instance}.toml"));
    std::fs::write(&file, config(&instance, "dataplane", "generic")).unwrap();
    let pins = std::path::Path::new("/sys/fs/bpf/dataplane").join(&instance);
    // whatever happens, no data plane stays pinned behind
    struct Down(String, std::path::PathBuf);
    impl Drop for Down {
        fn drop(&mut self) {
            let _ = Command::new(BIN.as_str())
                .args(["down", "--instance", &self.0])
                .output();
            let _ = std::fs::remove_file(&self.1);
        }
    }
    let _down = Down(instance.clone(), file.clone());
    let t0 = Instant::now();
    let out = Command::new(BIN.as_str())
        .args(["--netns", &sw.name, "up", "-c"])
        .arg(&file)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{text}(exited in {} ms)", t0.elapsed().as_millis());
    assert!(!out.status.success(), "up was not refused:\n{text}");
    assert!(
        text.contains("buffer.pfc_tx = \"dataplane\" refused")
            && text.contains("self-test")
            && text.contains("nothing was left attached or pinned"),
        "the refusal does not name the key and the self-test:\n{text}"
    );
    assert!(
        !pins.exists(),
        "{} is still pinned after the refusal",
        pins.display()
    );
    for port in ["kp0", "kp1"] {
        let link = sw.exec(&["ip", "-d", "link", "show", port]).unwrap();
        assert!(
            !link.contains("xdp") && !link.contains("prog/"),
            "{port} still has an XDP program after the refusal:\n{link}"
        );
    }
}
