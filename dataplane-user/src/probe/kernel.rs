//! The probes themselves: one function per feature, on the running kernel.
//!
//! `bpf_loop` uses aya's own helper probe. The others need the object's
//! probe programs (`dataplane-ebpf/src/probe.rs`) and veths: they run in a
//! thread with a network namespace of its own, on one private copy of the
//! object whose switch programs are never loaded (only the probes and two
//! one-line benchmark programs go through the verifier, so this is quick
//! even where the verifier is slow).
//!
//! Where aya reports only yes or no (its helper probe reads the verifier's
//! log itself and keeps no text), the reason says what was asked; every
//! other refusal carries the kernel's error as aya returned it (the
//! verifier's log for a load, the errno for a map update or attach).

use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use aya::maps::{Array, DevMap, MapData};
use aya::programs::{ProgramType, TestRun, TestRunOptions, Xdp, XdpMode};
use aya::sys::BpfHelper;
use aya::Ebpf;
use dataplane_common::names;

use super::{Feature, PortProbe, Probe, Probes, Status};
use crate::lossless::selftest::{veths, Tap};

/// How long a frame may take to reach a probe program or a veth's peer.
pub const WAIT: Duration = Duration::from_secs(2);

const XDP_PASS: u32 = 2;

/// Every probe of the kernel's features, then native XDP on each of
/// `ports` (in the caller's namespace).
pub fn run_with_ports(ports: &[String]) -> Probes {
    let mut p = run_all();
    p.ports = ports.iter().map(|n| port_native(n)).collect();
    p
}

/// Native XDP on port `name`'s driver, from the XDP features it reports
/// (nothing is attached to the port).
pub fn port_native(name: &str) -> PortProbe {
    let driver = crate::doctor::read::driver(name).ok().map(|d| d.driver);
    let status = match crate::sys::ifindex(name) {
        None => Status::NotProbed(format!("no interface {name} in this namespace")),
        Some(ix) => judge_port(crate::telemetry::xmit::xdp_features(ix)),
    };
    PortProbe {
        port: name.to_string(),
        driver,
        status,
    }
}

/// Native XDP from a driver's reported XDP features (pure): it needs
/// NETDEV_XDP_ACT_BASIC and REDIRECT; `None`: the kernel reports none.
pub fn judge_port(features: Option<u64>) -> Status {
    use crate::doctor::checks::{xdp_act, xdp_feature_names};
    let Some(f) = features else {
        return Status::NotProbed(
            "the kernel does not report XDP features (netdev netlink family, 6.3+): the attach decides".into(),
        );
    };
    let names = xdp_feature_names(f);
    if f & xdp_act::BASIC != 0 && f & xdp_act::REDIRECT != 0 {
        Status::Available(format!(
            "the driver reports native XDP with redirect ({names})"
        ))
    } else {
        Status::Missing(format!(
            "the driver reports no native XDP with redirect (XDP features: {names})"
        ))
    }
}

/// Every probe of the kernel's features, in [`Feature::ALL`]'s order
/// (needs root; the veth probes run in a namespace of their own).
pub fn run_all() -> Probes {
    let mut out = vec![Probe {
        feature: Feature::BpfLoop,
        status: bpf_loop(),
    }];
    let rest = in_own_netns(object_probes).unwrap_or_else(|e| {
        let why = format!("{e:#}");
        Feature::ALL
            .iter()
            .filter(|f| **f != Feature::BpfLoop)
            .map(|f| (*f, Status::NotProbed(why.clone())))
            .collect()
    });
    for f in Feature::ALL.iter().filter(|f| **f != Feature::BpfLoop) {
        let status = rest
            .iter()
            .find(|(g, _)| g == f)
            .map(|(_, s)| s.clone())
            .unwrap_or_else(|| Status::NotProbed("no result".into()));
        out.push(Probe {
            feature: *f,
            status,
        });
    }
    Probes {
        features: out,
        ports: Vec::new(),
    }
}

/// bpf_loop from an XDP program (aya's helper probe: a two-instruction
/// program calling it, judged by the verifier's log).
pub fn bpf_loop() -> Status {
    match aya::sys::is_helper_supported(ProgramType::Xdp, BpfHelper::BPF_FUNC_loop) {
        Ok(true) => Status::Available("the verifier accepts a call to bpf_loop from XDP".into()),
        Ok(false) => Status::Missing(
            "the verifier refused a call to bpf_loop from XDP (unknown helper)".into(),
        ),
        Err(e) => Status::NotProbed(format!("aya's helper probe failed: {e}")),
    }
}

/// The probes that need the object and veths, in the caller's namespace.
fn object_probes() -> Result<Vec<(Feature, Status)>> {
    let mut bpf = Ebpf::load(crate::object::EBPF_OBJECT)
        .context("loading the eBPF object's maps (no program verified)")?;
    let mut out = vec![
        (Feature::TestRun, test_run(&mut bpf)),
        (Feature::MultiBuffer, multi_buffer(&mut bpf)),
    ];
    let made = veths(&["pr0", "pr1"]);
    if let Err(e) = made {
        let why = format!("{e:#}");
        for f in Feature::REDIRECT.into_iter().chain([Feature::LiveFrames]) {
            out.push((f, Status::NotProbed(why.clone())));
        }
        return Ok(out);
    }
    out.extend(redirect_probes(&mut bpf));
    out.push((Feature::LiveFrames, live_frames(&mut bpf)));
    Ok(out)
}

fn load(bpf: &mut Ebpf, name: &str) -> Result<()> {
    let p: &mut Xdp = bpf
        .program_mut(name)
        .ok_or_else(|| anyhow!("program {name} missing from the object"))?
        .try_into()?;
    p.load().with_context(|| format!("loading {name}"))?;
    Ok(())
}

/// One BPF_PROG_TEST_RUN of `xdp_bench_bare`, which returns XDP_PASS (the
/// buffer model's timer is run this way).
pub fn test_run(bpf: &mut Ebpf) -> Status {
    let r = (|| -> Result<u32> {
        load(bpf, names::prog::XDP_BENCH_BARE)?;
        let p: &Xdp = bpf
            .program(names::prog::XDP_BENCH_BARE)
            .ok_or_else(|| anyhow!("program missing"))?
            .try_into()?;
        let frame = [0u8; 64];
        let r = p
            .test_run(TestRunOptions {
                data_in: Some(&frame),
                ..Default::default()
            })
            .context("BPF_PROG_TEST_RUN")?;
        Ok(r.return_value)
    })();
    match r {
        Ok(XDP_PASS) => Status::Available("an XDP program ran once with BPF_PROG_TEST_RUN".into()),
        Ok(v) => Status::Missing(format!(
            "BPF_PROG_TEST_RUN returned {v}, the program returns XDP_PASS (2)"
        )),
        Err(e) => Status::Missing(format!("{e:#}")),
    }
}

/// `probe_xdp_frags` (BPF_F_XDP_HAS_FRAGS) loads.
pub fn multi_buffer(bpf: &mut Ebpf) -> Status {
    match load(bpf, names::prog::PROBE_XDP_FRAGS) {
        Ok(()) => {
            Status::Available("the kernel loaded an XDP program with BPF_F_XDP_HAS_FRAGS".into())
        }
        Err(e) => Status::Missing(format!("{e:#}")),
    }
}

/// bpf_link on XDP, native XDP, devmap egress programs, BPF_F_BROADCAST
/// and XDP metadata through a devmap, on the veths `pr0`/`pr0p`,
/// `pr1`/`pr1p`: `probe_xdp_redirect` in driver mode on `pr0`, both
/// veths in `PROBE_DEVMAP` with `probe_devmap_meta`, one frame sent into
/// `pr0` from its peer.
pub fn redirect_probes(bpf: &mut Ebpf) -> Vec<(Feature, Status)> {
    let mut out = Vec::new();
    let dependent = |out: &mut Vec<(Feature, Status)>, fs: &[Feature], why: &str| {
        for f in fs {
            out.push((*f, Status::NotProbed(why.to_string())));
        }
    };
    if let Err(e) = load(bpf, names::prog::PROBE_XDP_REDIRECT) {
        let why = format!("the probe program does not load: {e:#}");
        dependent(&mut out, &Feature::REDIRECT, &why);
        return out;
    }
    // native XDP, and whether the attachment is a bpf_link
    let attached = (|| -> Result<Result<aya::programs::links::FdLink, String>> {
        let p: &mut Xdp = bpf
            .program_mut(names::prog::PROBE_XDP_REDIRECT)
            .ok_or_else(|| anyhow!("program missing"))?
            .try_into()?;
        let id = p
            .attach("pr0", XdpMode::Driver)
            .context("attaching in driver mode to a veth")?;
        let link = p.take_link(id)?;
        Ok(aya::programs::links::FdLink::try_from(link).map_err(|e| {
            format!("the kernel refused BPF_LINK_CREATE for XDP; aya attached through netlink instead ({e})")
        }))
    })();
    let _link = match attached {
        Err(e) => {
            out.push((Feature::NativeXdp, Status::Missing(format!("{e:#}"))));
            out.push((
                Feature::XdpLink,
                Status::NotProbed("needs the native attachment, which failed".into()),
            ));
            dependent(
                &mut out,
                &Feature::PFC_DATAPLANE,
                "needs native XDP on the probe's veth",
            );
            return out;
        }
        Ok(l) => {
            out.push((
                Feature::NativeXdp,
                Status::Available("attached to a veth in driver mode".into()),
            ));
            match l {
                Ok(fd) => {
                    out.push((
                        Feature::XdpLink,
                        Status::Available("the XDP attachment is a bpf_link".into()),
                    ));
                    Some(fd)
                }
                Err(e) => {
                    out.push((Feature::XdpLink, Status::Missing(e)));
                    None
                }
            }
        }
    };
    // devmap entries with an egress program
    let filled = (|| -> Result<()> {
        load(bpf, names::prog::PROBE_DEVMAP_META)?;
        let p: &Xdp = bpf
            .program(names::prog::PROBE_DEVMAP_META)
            .ok_or_else(|| anyhow!("program missing"))?
            .try_into()?;
        let fd = p.fd()?.try_clone()?;
        let mut m: DevMap<&mut MapData> = DevMap::try_from(
            bpf.map_mut(names::map::PROBE_DEVMAP)
                .ok_or_else(|| anyhow!("map PROBE_DEVMAP missing"))?,
        )?;
        for (i, dev) in ["pr0", "pr1"].iter().enumerate() {
            let ix = crate::sys::ifindex(dev).ok_or_else(|| anyhow!("no interface {dev}"))?;
            m.set(i as u32, ix, Some(&fd), 0).with_context(|| {
                format!(
                    "a devmap entry for {dev} with {}",
                    names::prog::PROBE_DEVMAP_META
                )
            })?;
        }
        Ok(())
    })();
    if let Err(e) = filled {
        out.push((Feature::DevmapProg, Status::Missing(format!("{e:#}"))));
        dependent(
            &mut out,
            &[Feature::Broadcast, Feature::DevmapMeta],
            "needs devmap egress programs",
        );
        return out;
    }
    // one frame into pr0
    let seen = (|| -> Result<[u32; 5]> {
        let tap = Tap::open("pr0p")?;
        crate::sys::packet_send(tap.fd(), tap.ifindex, &probe_frame(0x01))
            .context("sending the probe frame")?;
        let deadline = Instant::now() + WAIT;
        loop {
            let s = seen(bpf)?;
            if s[1] >= 2 || Instant::now() > deadline {
                // a moment for a late second copy
                std::thread::sleep(Duration::from_millis(20));
                return seen(bpf);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    })();
    let s = match seen {
        Ok(s) => s,
        Err(e) => {
            dependent(&mut out, &Feature::PFC_DATAPLANE, &format!("{e:#}"));
            return out;
        }
    };
    out.extend(judge_redirect(s));
    out
}

/// The three redirect features from `PROBE_SEEN` after one frame (pure:
/// frames, copies, copies with the marker, metadata refused, redirects
/// refused).
pub fn judge_redirect(s: [u32; 5]) -> Vec<(Feature, Status)> {
    let [frames, copies, marked, no_meta, refused] = s;
    if frames == 0 {
        let why = format!(
            "the probe frame did not reach the XDP program on the veth within {} ms",
            WAIT.as_millis()
        );
        return vec![
            (Feature::DevmapProg, Status::NotProbed(why.clone())),
            (Feature::Broadcast, Status::NotProbed(why.clone())),
            (Feature::DevmapMeta, Status::NotProbed(why)),
        ];
    }
    let prog = if copies > 0 {
        Status::Available(format!(
            "the devmap's egress program ran on {copies} redirected cop{}",
            if copies == 1 { "y" } else { "ies" }
        ))
    } else {
        Status::Missing(format!(
            "the kernel took devmap entries with a program, but it ran on no redirected frame \
             ({refused} redirect(s) refused by the helper)"
        ))
    };
    let bcast = match (refused, copies) {
        (r, _) if r > 0 => Status::Missing(
            "bpf_redirect_map with BPF_F_BROADCAST did not return XDP_REDIRECT".into(),
        ),
        (_, 2) => Status::Available("one redirect reached both devmap entries".into()),
        (_, 0) => Status::NotProbed("no copy reached a devmap program".into()),
        (_, n) => Status::Missing(format!(
            "one redirect reached {n} of the devmap's 2 entries"
        )),
    };
    let meta = if no_meta > 0 {
        Status::Missing("bpf_xdp_adjust_meta refused 4 bytes of metadata on the veth".into())
    } else if copies == 0 {
        Status::NotProbed("no copy reached a devmap program".into())
    } else if marked == copies {
        Status::Available(format!("{marked} of {copies} copies carried the metadata"))
    } else {
        Status::Missing(format!(
            "{marked} of {copies} copies carried the metadata to the devmap program"
        ))
    };
    vec![
        (Feature::DevmapProg, prog),
        (Feature::Broadcast, bcast),
        (Feature::DevmapMeta, meta),
    ]
}

fn seen(bpf: &Ebpf) -> Result<[u32; 5]> {
    let m: Array<&MapData, u32> = Array::try_from(
        bpf.map(names::map::PROBE_SEEN)
            .ok_or_else(|| anyhow!("map PROBE_SEEN missing"))?,
    )?;
    let mut s = [0u32; 5];
    for (i, v) in s.iter_mut().enumerate() {
        *v = m.get(&(i as u32), 0)?;
    }
    Ok(s)
}

/// A 64-byte frame of the local experimental EtherType 88b5, `tag` in its
/// payload.
fn probe_frame(tag: u8) -> Vec<u8> {
    let mut f = vec![0u8; 64];
    f[..6].copy_from_slice(&[0x02, 0, 0, 0, 0x5d, 0x00]);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0x5d, 0x01]);
    f[12] = 0x88;
    f[13] = 0xb5;
    f[14] = tag;
    f
}

/// `xdp_bench_tx` (XDP_TX) run once in live-frames mode on `pr1`: its frame
/// must arrive on `pr1p`.
pub fn live_frames(bpf: &mut Ebpf) -> Status {
    let r = (|| -> Result<()> {
        load(bpf, names::prog::XDP_BENCH_TX)?;
        let ix = crate::sys::ifindex("pr1").ok_or_else(|| anyhow!("no interface pr1"))?;
        let tap = Tap::open("pr1p")?;
        let frame = probe_frame(0x02);
        // struct xdp_md: data, data_end, data_meta, ingress_ifindex,
        // rx_queue_index, egress_ifindex
        let mut md = [0u8; 24];
        md[4..8].copy_from_slice(&(frame.len() as u32).to_ne_bytes());
        md[12..16].copy_from_slice(&ix.to_ne_bytes());
        let p: &Xdp = bpf
            .program(names::prog::XDP_BENCH_TX)
            .ok_or_else(|| anyhow!("program missing"))?
            .try_into()?;
        p.test_run(TestRunOptions {
            data_in: Some(&frame),
            ctx_in: Some(&md),
            attrs: aya::programs::TestRunAttrs::new().xdp_live_frames(1),
            ..Default::default()
        })
        .context("BPF_PROG_TEST_RUN with BPF_F_TEST_XDP_LIVE_FRAMES")?;
        match tap.wait_for(&frame, WAIT)? {
            (true, _) => Ok(()),
            (false, others) => bail!(
                "the run returned, but its XDP_TX frame did not arrive on the veth's peer within {} ms (got {})",
                WAIT.as_millis(),
                if others.is_empty() { "nothing".into() } else { others.join(", ") }
            ),
        }
    })();
    match r {
        Ok(()) => Status::Available(
            "an XDP_TX frame of a live-frames run arrived on the veth's peer".into(),
        ),
        Err(e) => Status::Missing(format!("{e:#}")),
    }
}

/// Runs `f` in a thread that first moves into a new network namespace
/// (gone, with its veths, when the thread ends).
fn in_own_netns<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    std::thread::Builder::new()
        .name("feature-probe".into())
        .spawn(move || {
            // SAFETY: unshare on this thread only; it ends with the thread.
            if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                bail!(
                    "unshare(CLONE_NEWNET): {} (the probes need a namespace of their own)",
                    std::io::Error::last_os_error()
                );
            }
            f()
        })
        .context("starting the probe thread")?
        .join()
        .unwrap_or_else(|_| Err(anyhow!("the probe thread panicked")))
}
