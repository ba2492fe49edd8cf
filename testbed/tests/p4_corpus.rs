//! The conformance corpus (`p4/corpus`) through the compiled eBPF programs
//! with BPF_PROG_TEST_RUN: each case's configuration applied by the
//! controller's own code, the input frame run on the ingress port, and the
//! verdict, egress port (by the per-port TX counters), output frame, class
//! and reason counters checked against the case.
//!
//! The same cases become bmv2 STF tests (`p4/tests/p4.rs`,
//! `dataplane_p4::corpus::write_stf`), so the eBPF and P4 targets are
//! held to one expectation.
//!
//! Needs root (BPF, network namespaces). Ports are veth devices in a
//! namespace this test creates and removes.

use dataplane_p4 as p4;

use std::collections::BTreeMap;
use std::path::Path;

use aya::Ebpf;
use dataplane_common::reason::{Reason, Why};
use dataplane_p4::corpus::{Case, Expect};
use dataplane_user::object::load_object;
use dataplane_user::tables::apply_config_text;
use testbed::netns::Netns;
use testbed::testrun::{action_name, counter_snapshot, run_xdp, XDP_DROP, XDP_PASS, XDP_REDIRECT};

const PORTS: [&str; 5] = ["p0", "p1", "p2", "p3", "px"];

struct Harness {
    bpf: Ebpf,
    ifindex: BTreeMap<String, u32>,
    applied: Option<String>,
    /// port name -> port id of the applied configuration
    ids: BTreeMap<String, u16>,
    forwarding: bool,
}

impl Harness {
    fn new(ns: &Netns) -> anyhow::Result<Harness> {
        ns.add_ports(&PORTS)?;
        let bpf = load_object()?;
        let mut ifindex = BTreeMap::new();
        for p in PORTS {
            ifindex.insert(
                p.to_string(),
                dataplane_user::sys::ifindex(p)
                    .ok_or_else(|| anyhow::anyhow!("no interface {p}"))?,
            );
        }
        Ok(Harness {
            bpf,
            ifindex,
            applied: None,
            ids: BTreeMap::new(),
            forwarding: false,
        })
    }

    fn apply(&mut self, name: &str, text: &str) -> anyhow::Result<()> {
        if self.applied.as_deref() == Some(name) {
            return Ok(());
        }
        let (plan, _) = apply_config_text(&mut self.bpf, text, name)?;
        self.ids = plan
            .ports
            .iter()
            .map(|p| (p.name.clone(), p.config.port_id))
            .collect();
        self.forwarding = plan.forwarding();
        self.applied = Some(name.to_string());
        Ok(())
    }

    fn run(&mut self, corpus: &p4::corpus::Corpus, c: &Case) -> anyhow::Result<String> {
        let (text, _) = &corpus.configs[&c.config];
        self.apply(&c.config, text)?;
        testbed::testrun::reset_model(&mut self.bpf)?;
        let prog = if self.forwarding {
            "xdp_forward"
        } else {
            "xdp_classify"
        };
        let ix = *self
            .ifindex
            .get(&c.port)
            .ok_or_else(|| anyhow::anyhow!("the harness has no port {}", c.port))?;
        let before = counter_snapshot(&self.bpf, true)?;
        let r = run_xdp(&self.bpf, prog, &c.frame, ix, 1)?;
        let after = counter_snapshot(&self.bpf, true)?;
        let delta: BTreeMap<String, i128> = after
            .iter()
            .filter_map(|(k, v)| {
                let b = before.get(k).copied().unwrap_or(0);
                (*v != b).then(|| (k.clone(), i128::from(*v) - i128::from(b)))
            })
            .collect();
        let me = |field: &str| -> String {
            match self.ids.get(&c.port) {
                Some(id) => format!("#{id}:{field}"),
                None => format!("(unconfigured):{field}"),
            }
        };
        let bumped = |key: &str| delta.get(key).copied() == Some(1);
        let mut problems = Vec::new();
        let want_verdict = match &c.expect {
            Expect::Forward(_) => XDP_REDIRECT,
            Expect::Drop(_) => XDP_DROP,
            Expect::Cpu(_) => XDP_PASS,
        };
        if r.action != want_verdict {
            problems.push(format!(
                "verdict {} (expected {})",
                action_name(r.action),
                action_name(want_verdict)
            ));
        }
        let mut outcome = String::new();
        match &c.expect {
            Expect::Forward(outs) => {
                // the egress port: the one whose TX counters moved
                let tx: Vec<(String, usize)> = delta
                    .iter()
                    .filter(|(k, v)| **v == 1 && k.contains(":tx_tc_pkts["))
                    .map(|(k, _)| {
                        let id: u16 = k[1..k.find(':').unwrap()].parse().unwrap();
                        let tc: usize = k[k.find('[').unwrap() + 1..k.len() - 1].parse().unwrap();
                        let name = self
                            .ids
                            .iter()
                            .find(|(_, v)| **v == id)
                            .map(|(n, _)| n.clone())
                            .unwrap_or(format!("#{id}"));
                        (name, tc)
                    })
                    .collect();
                match tx.as_slice() {
                    [(port, tc)] => {
                        outcome = format!("-> {port}");
                        match outs.iter().find(|(p, _)| p == port) {
                            None => problems.push(format!(
                                "left by {port}, expected one of {:?}",
                                outs.iter().map(|o| &o.0).collect::<Vec<_>>()
                            )),
                            Some((_, frame)) => {
                                if &r.out != frame {
                                    let at = r.out.iter().zip(frame).position(|(a, b)| a != b);
                                    problems.push(format!(
                                        "output frame differs ({} vs {} bytes, first difference at byte {at:?})",
                                        r.out.len(),
                                        frame.len()
                                    ));
                                }
                            }
                        }
                        let want = c.queue.or(c.tc);
                        if Some(*tc as u8) != want {
                            problems.push(format!("sent in queue {tc}, expected {want:?}"));
                        }
                    }
                    other => problems.push(format!(
                        "TX counters moved on {other:?}, expected exactly one port"
                    )),
                }
                if !bumped(&me("rx_routed")) {
                    problems.push("rx_routed not counted".into());
                }
            }
            Expect::Drop(reason) => {
                outcome = format!("dropped ({reason:?})");
                let key = match reason {
                    Why::Other(Reason::MacControl) => me("verdict_drop"),
                    Why::Malformed(e) => me(&format!("malformed.{}", e.name())),
                    // the forwarding counter of this reason
                    Why::Other(Reason::NoLiveMember) => me("drop_no_member"),
                    // the buffer model's, per class, on the egress port
                    Why::Other(Reason::SharedBufferFull) => delta
                        .keys()
                        .find(|k| k.ends_with(&format!(":drop_shared_full[{}]", c.tc.unwrap_or(0))))
                        .cloned()
                        .unwrap_or_else(|| format!("(any port):drop_shared_full[{:?}]", c.tc)),
                    Why::Other(r) => me(&format!("drop_{}", r.name())),
                };
                if !bumped(&key) {
                    problems.push(format!("{key} not counted (deltas {delta:?})"));
                }
                if delta.keys().any(|k| k.contains(":tx_tc_pkts[")) {
                    problems.push("a port counted a transmission".into());
                }
            }
            Expect::Cpu(reason) => {
                outcome = format!("to the kernel ({reason:?})");
                let key = match reason {
                    Why::Other(Reason::Classified) => me("verdict_pass"),
                    Why::Other(Reason::UnknownPort) => "global:unknown_port".to_string(),
                    Why::Malformed(e) => me(&format!("malformed.{}", e.name())),
                    // not routed: the forwarding counter pass_<reason>
                    Why::Other(r) => me(&format!("pass_{}", r.name())),
                };
                if !bumped(&key) {
                    problems.push(format!("{key} not counted (deltas {delta:?})"));
                }
                if r.out != c.frame {
                    problems.push("a frame handed to the kernel was modified".into());
                }
            }
        }
        // the class the frame was given (ingress counters)
        let classified = !matches!(
            c.expect,
            Expect::Cpu(Why::Other(Reason::UnknownPort) | Why::Malformed(_)) | Expect::Drop(_)
        );
        if classified {
            if let Some(tc) = c.tc {
                if !bumped(&me(&format!("rx_tc_pkts[{tc}]"))) {
                    let got: Vec<&String> =
                        delta.keys().filter(|k| k.contains("rx_tc_pkts")).collect();
                    problems.push(format!("not counted in class {tc} on ingress ({got:?})"));
                }
            }
        }
        if problems.is_empty() {
            Ok(outcome)
        } else {
            anyhow::bail!("{}", problems.join("; "))
        }
    }
}

#[test]
fn corpus_passes_on_ebpf() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../p4/corpus");
    let corpus = p4::corpus::load(&dir).unwrap_or_else(|e| panic!("{e}"));
    let ns = Netns::create("p4c")
        .unwrap_or_else(|e| panic!("cannot create a network namespace (root needed): {e:#}"));
    let entered = ns.enter().unwrap_or_else(|e| panic!("{e:#}"));
    let mut failed = Vec::new();
    {
        let mut h = Harness::new(&ns).unwrap_or_else(|e| panic!("harness: {e:#}"));
        println!(
            "running {} corpus cases through the eBPF programs (BPF_PROG_TEST_RUN)",
            corpus.cases.len()
        );
        for c in &corpus.cases {
            match h.run(&corpus, c) {
                Ok(o) => println!("  ok    {:<48} {:<3} {o}", c.name, c.port),
                Err(e) => {
                    println!("  FAIL  {:<48} {:<3} {e:#}", c.name, c.port);
                    failed.push(c.name.clone());
                }
            }
        }
    }
    drop(entered);
    drop(ns);
    assert!(
        failed.is_empty(),
        "{} of {} corpus cases failed on eBPF: {failed:?}",
        failed.len(),
        corpus.cases.len()
    );
}
