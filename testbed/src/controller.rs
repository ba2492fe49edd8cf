//! The `dataplane` controller as a child process of a test, bench or demo:
//! started in a switch namespace with a config, waited for until it prints
//! `ready:`, its output collected, stopped with SIGTERM and its data plane
//! detached (`dataplane down`) when the guard drops, on every path.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::netns::Netns;

/// A running controller.
pub struct Controller {
    child: Child,
    config: PathBuf,
    bin: PathBuf,
    netns: String,
    /// Its instance name (`[switch] name`).
    pub instance: String,
    lines: mpsc::Receiver<String>,
    /// Every stdout line with its arrival time, kept for the whole run.
    history: Arc<Mutex<Vec<(Instant, String)>>>,
    /// Its stdout closed (it exited).
    eof: Arc<std::sync::atomic::AtomicBool>,
}

impl Controller {
    /// Writes `text` to a temporary config file and runs
    /// `<bin> --netns <ns> up -c <file>`; returns once it printed `ready:`
    /// (its lines are echoed on stderr, prefixed with `label`).
    pub fn start(
        bin: &Path,
        ns: &Netns,
        instance: &str,
        text: &str,
        label: &str,
    ) -> Result<Controller> {
        Controller::start_with(bin, ns, instance, text, label, &[])
    }

    /// [`Controller::start`] with more arguments to `up`.
    pub fn start_with(
        bin: &Path,
        ns: &Netns,
        instance: &str,
        text: &str,
        label: &str,
        up_args: &[&str],
    ) -> Result<Controller> {
        let config = std::env::temp_dir().join(format!("{instance}-{}.toml", std::process::id()));
        std::fs::write(&config, text).with_context(|| format!("writing {}", config.display()))?;
        let mut cmd = Command::new(bin);
        cmd.args(["--netns", &ns.name, "up"])
            .args(up_args)
            .arg("-c")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        // SAFETY: prctl is async-signal-safe. Should this process die without
        // running its destructors (SIGKILL), the controller gets SIGTERM and
        // detaches instead of keeping the namespace's programs attached.
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            })
        };
        let spawned = cmd.spawn();
        let mut child = match spawned {
            Ok(c) => c,
            Err(e) => {
                let _ = std::fs::remove_file(&config);
                bail!("starting {}: {e}", bin.display());
            }
        };
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        let history: Arc<Mutex<Vec<(Instant, String)>>> = Arc::default();
        let eof = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (h, e) = (history.clone(), eof.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
                if let Ok(mut v) = h.lock() {
                    v.push((Instant::now(), line.clone()));
                }
                let _ = tx.send(line);
            }
            e.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        let ctl = Controller {
            child,
            config,
            bin: bin.to_path_buf(),
            netns: ns.name.clone(),
            instance: instance.into(),
            lines: rx,
            history,
            eof,
        };
        // the first `up` of a boot also self-tests the PFC path (a second
        // object load); TCG is slower still: scaled by DATAPLANE_TEST_SLOW
        let ready_in = crate::slow::scaled(Duration::from_secs(30));
        let deadline = Instant::now() + ready_in;
        loop {
            match ctl.lines.recv_timeout(Duration::from_millis(100)) {
                Ok(line) => {
                    eprintln!("[{label}] dataplane: {line}");
                    if line.starts_with("ready:") {
                        return Ok(ctl);
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    bail!("the controller exited before printing `ready:` (its errors are above); config:\n{text}");
                }
            }
            if Instant::now() > deadline {
                bail!(
                    "the controller did not print `ready:` within {} s",
                    ready_in.as_secs()
                );
            }
        }
    }

    /// Lines printed since the last call (also echoed on stderr).
    pub fn drain(&self, label: &str) -> Vec<String> {
        let mut out = Vec::new();
        while let Ok(line) = self.lines.try_recv() {
            eprintln!("[{label}] dataplane: {line}");
            out.push(line);
        }
        out
    }

    /// The controller's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits up to `timeout` for a line containing `pat`; returns it.
    pub fn wait_for(&self, pat: &str, timeout: Duration, label: &str) -> Option<String> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Ok(line) = self.lines.recv_timeout(Duration::from_millis(50)) {
                eprintln!("[{label}] dataplane: {line}");
                if line.contains(pat) {
                    return Some(line);
                }
            }
        }
        None
    }

    /// Every line it printed so far (also those `drain` and `wait_for`
    /// consumed).
    pub fn history(&self) -> Vec<String> {
        self.history
            .lock()
            .map(|v| v.iter().map(|(_, l)| l.clone()).collect())
            .unwrap_or_default()
    }

    /// The first line matching `pred`, already printed or arriving within
    /// `timeout`, with the time it arrived.
    pub fn wait_line(
        &self,
        pred: impl Fn(&str) -> bool,
        timeout: Duration,
    ) -> Option<(Instant, String)> {
        let deadline = Instant::now() + timeout;
        loop {
            let exited = self.eof.load(std::sync::atomic::Ordering::SeqCst);
            if let Some(x) = self.history.lock().ok()?.iter().find(|(_, l)| pred(l)) {
                return Some(x.clone());
            }
            if exited || Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// SIGTERM and wait (the controller prints its summary on the way
    /// out), keeping the guard: its lines stay readable, and the data plane
    /// is detached when it drops.
    pub fn halt(&mut self) {
        self.terminate();
        let deadline = Instant::now() + Duration::from_secs(2);
        while !self.eof.load(std::sync::atomic::Ordering::SeqCst) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Stops it (SIGTERM) and returns what it printed on the way out; the
    /// data plane is detached when the guard drops.
    pub fn stop(mut self, label: &str) -> Vec<String> {
        self.terminate();
        std::thread::sleep(Duration::from_millis(20));
        self.drain(label)
    }

    /// The config file it runs (a bare SIGHUP re-reads it).
    pub fn config_path(&self) -> &Path {
        &self.config
    }

    /// Sends it `sig` (e.g. SIGHUP: reload its config file).
    pub fn signal(&self, sig: i32) {
        // SAFETY: signalling our own child by its pid.
        unsafe { libc::kill(self.child.id() as libc::pid_t, sig) };
    }

    /// Kills it (SIGKILL) without detaching anything, as a crash would.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn terminate(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            // SAFETY: signalling our own child by its pid; SIGTERM detaches.
            unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = self.child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            if let Ok(None) = self.child.try_wait() {
                let _ = self.child.kill();
            }
        }
        let _ = self.child.wait();
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        self.terminate();
        // the data plane outlives its controller: detach it too
        let _ = Command::new(&self.bin)
            .args(["--netns", &self.netns, "down", "--instance", &self.instance])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_file(&self.config);
    }
}

/// `<bin> --netns <ns> stats --instance <instance> --json`, parsed.
pub fn stats_json(bin: &Path, ns: &str, instance: &str) -> Result<serde_json::Value> {
    let out = Command::new(bin)
        .args(["--netns", ns, "stats", "--instance", instance, "--json"])
        .output()
        .context("running dataplane stats")?;
    if !out.status.success() {
        bail!(
            "dataplane stats: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    serde_json::from_slice(&out.stdout).context("parsing dataplane stats --json")
}

/// A counter of one port in a `stats --json` snapshot.
pub fn port_counter(s: &serde_json::Value, port: &str, name: &str) -> Option<u64> {
    s["ports"].as_array()?.iter().find(|p| p["name"] == port)?["counters"][name].as_u64()
}

/// The sum over every port of the counters whose name starts with `prefix`
/// (e.g. `"ecn_marked["` for all classes).
pub fn sum_counters(s: &serde_json::Value, prefix: &str) -> u64 {
    s["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|p| p["counters"].as_object().into_iter().flatten())
        .filter(|(k, _)| k.starts_with(prefix))
        .map(|(_, x)| x.as_u64().unwrap_or(0))
        .sum()
}
