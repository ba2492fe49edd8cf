//! Every refusal of the configuration against a running instance: for each
//! case of the refusal table (dataplane-config/tests/common/refusal_cases.rs)
//! `dataplane reload -c FILE` fails naming the field, and the same bytes
//! written over the controller's own config file followed by a bare SIGHUP
//! are refused by the controller, naming the field; afterwards no table the
//! controller writes has changed (every entry of every config table, as
//! bytes), and the controller still applies a valid reload.

#[path = "../../dataplane-config/tests/common/refusal_cases.rs"]
mod refusal_cases;

use std::process::Command;
use std::time::Duration;

use testbed::controller::Controller;
use testbed::mapdump::{changed, tables, CONFIG_TABLES};
use testbed::netns::{veth, Netns};

#[test]
fn every_refusal_leaves_a_running_instance_unchanged() {
    let bin = testbed::dataplane_bin();
    let sw = Netns::create("hrf").unwrap();
    let h = Netns::create("hrfh").unwrap();
    let (p0, p1) = ("hrf-p0", "hrf-p1");
    veth(
        &sw,
        p0,
        "02:00:00:00:71:00",
        &h,
        "hrf-h0",
        "02:00:00:00:71:10",
    )
    .unwrap();
    veth(
        &sw,
        p1,
        "02:00:00:00:71:01",
        &h,
        "hrf-h1",
        "02:00:00:00:71:11",
    )
    .unwrap();
    let instance = format!("hrefuse{}", std::process::id());
    let base = refusal_cases::base(&instance, p0, p1);
    let ctl = Controller::start(bin.as_ref(), &sw, &instance, &base, "hrf").unwrap();
    let before = tables(&instance, &CONFIG_TABLES).unwrap();
    assert!(!before["PORT_CONFIG"].is_empty() && !before["GROUPS"].is_empty());
    let dir = std::env::temp_dir().join(format!("hrf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut failed = Vec::new();
    let cases = refusal_cases::cases();
    for (i, c) in cases.iter().enumerate() {
        let bytes = refusal_cases::render(c, &instance, p0, p1);
        let field = refusal_cases::field(c, p0, p1);
        // 1. `dataplane reload -c FILE`
        let file = dir.join(format!("case{i}.toml"));
        std::fs::write(&file, &bytes).unwrap();
        let o = Command::new(&bin)
            .args(["--netns", &sw.name, "reload", "-c"])
            .arg(&file)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        if o.status.success() || !err.contains(&field) || !err.contains(c.says) {
            failed.push(format!(
                "reload -c, {}: exit {}, stderr:\n{err}",
                c.name, o.status
            ));
        }
        // 2. the running file replaced, then a bare SIGHUP
        std::fs::write(ctl.config_path(), &bytes).unwrap();
        ctl.signal(libc::SIGHUP);
        match ctl.wait_for(
            "reload: refused, nothing changed",
            Duration::from_secs(5),
            "hrf",
        ) {
            None => failed.push(format!("SIGHUP, {}: no refusal printed", c.name)),
            Some(first) => {
                std::thread::sleep(Duration::from_millis(30));
                let text = format!("{first}\n{}", ctl.drain("hrf").join("\n"));
                if !text.contains(&field) || !text.contains(c.says) {
                    failed.push(format!(
                        "SIGHUP, {}: the refusal does not name {field:?} / {:?}:\n{text}",
                        c.name, c.says
                    ));
                }
            }
        }
    }
    let after = tables(&instance, &CONFIG_TABLES).unwrap();
    let diff = changed(&before, &after);
    assert!(
        diff.is_empty(),
        "refused reloads changed the tables {diff:?}"
    );
    assert!(
        failed.is_empty(),
        "{} of {} cases:\n{}",
        failed.len(),
        cases.len(),
        failed.join("\n")
    );
    // the controller still applies a valid file
    std::fs::write(ctl.config_path(), base.replace("weight = 2", "weight = 3")).unwrap();
    ctl.signal(libc::SIGHUP);
    let line = ctl.wait_for("reload: applied", Duration::from_secs(5), "hrf");
    assert!(
        line.is_some(),
        "a valid reload after the refusals was not applied"
    );
    let after = tables(&instance, &CONFIG_TABLES).unwrap();
    // the group's spare slot written, then made live
    assert_eq!(
        changed(&before, &after),
        vec!["GROUPS".to_string(), "GROUP_SLOT".to_string()]
    );
    let _ = std::fs::remove_dir_all(&dir);
}
