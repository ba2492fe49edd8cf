//! What a target cannot express in a plan, each refusal naming its
//! configuration field.

use dataplane_config::Plan;

use crate::target::{lpm_capacity, tofino_baf, Refusal, Target, TOFINO_SPEEDS};

/// What `target` cannot express in `plan`.
pub fn refusals(plan: &Plan, target: Target) -> Vec<Refusal> {
    let mut out = Vec::new();
    let mut refuse = |field: String, reason: String| out.push(Refusal { field, reason });
    if plan.pfcwd.is_some() {
        let why = match target {
            Target::Bmv2 => "bmv2 queues are never paused by a received PFC frame, so there is no storm to watch",
            Target::Tofino => "the watchdog is part of the switch OS on Tofino (SONiC pfcwd over SAI), not of this program's tables",
        };
        refuse(
            "pfcwd".into(),
            format!("the PFC watchdog is the eBPF controller's loop over its buffer model and has no {target} counterpart here ({why}); remove [pfcwd] to generate {target} entries"),
        );
    }
    if plan.forwarding() || plan.buffer.is_some() {
        for (i, p) in plan.ports.iter().enumerate() {
            if p.mac.is_none() {
                refuse(
                    format!("port[{i}] ({}).mac", p.name),
                    format!("{target} has no interface to read the MAC from: routed frames are matched against it and leave with it as source (and so do PFC frames); give it in the config"),
                );
            }
        }
    }
    for (i, p) in plan.ports.iter().enumerate() {
        if p.config.flags & dataplane_common::maps::PORT_F_FAR_NOTIFY != 0 {
            refuse(
                format!("port[{i}] ({}).far_notify", p.name),
                format!("the {target} program neither sends nor reads far-side notifications (it has no register of notes by port and prefix, and place mode's choice reads no far value); remove far_notify to generate {target} entries"),
            );
        }
    }
    // bmv2 parses UET's PDS prologue (uet_cfg, group_uet); the TNA program
    // does not (its PHV and stage budget is spent, p4/README.md)
    let no_uet = "the tofino program does not parse UET's PDS header (the v1model program does; adding the header to the TNA program was left out: it fits Tofino's budget only after the reshaping p4/README.md describes, and was not compiled with bf-p4c)";
    if target == Target::Tofino && plan.ports.iter().any(|p| p.config.uet_feedback_tc != 0) {
        refuse(
            "uet.feedback_tc".into(),
            format!("{no_uet}: it cannot tell UET feedback from UET data; remove uet.feedback_tc to generate tofino entries"),
        );
    }
    for (i, g) in plan.groups.iter().enumerate() {
        if target == Target::Tofino && g.uet_entropy {
            refuse(
                format!("group[{i}] ({}).uet_entropy", g.name),
                format!("{no_uet}: it cannot place UET packets apart from the group's mode; remove uet_entropy to generate tofino entries"),
            );
        }
    }
    // bmv2: learned groups (`p4 entries --learned`) carry the flag as
    // [[group]]s do, and group_uet expresses it
    if target == Target::Tofino && plan.routing.as_ref().is_some_and(|r| r.uet_entropy) {
        refuse(
            "routing.uet_entropy".into(),
            format!("{no_uet}: learned groups cannot place UET packets apart from their mode; remove routing.uet_entropy to generate tofino entries"),
        );
    }
    if plan.trim.is_some() && target == Target::Tofino {
        // bmv2 trims in the v1model program (trim_cfg, truncate()).
        refuse(
            "switch_trimming".into(),
            "Tofino's traffic manager decides a shared-buffer drop after ingress has run, so the program never sees the packet it would trim; trimming there needs deflect-on-drop (Tofino 2) and a truncating egress mirror, which this program does not have; remove [switch_trimming] and the \"trim\" profiles to generate tofino entries".into(),
        );
    }
    let (cap4, cap6) = lpm_capacity(target);
    let v4 = plan.routes.iter().filter(|r| r.addr.is_ipv4()).count();
    let v6 = plan.routes.len() - v4;
    for (n, cap, fam) in [(v4, cap4, "IPv4"), (v6, cap6, "IPv6")] {
        if n > cap {
            refuse(
                "route".into(),
                format!("{n} {fam} routes, but the {target} program's LPM table holds {cap}"),
            );
        }
    }
    if target == Target::Tofino {
        for (i, p) in plan.ports.iter().enumerate() {
            let s = p.config.speed_mbps;
            if !TOFINO_SPEEDS.iter().any(|&(v, _)| v == s) {
                refuse(
                    format!("port[{i}] ({}).speed", p.name),
                    format!("a Tofino port runs at 10G, 25G, 40G, 50G, 100G, 200G or 400G, not {s} Mb/s"),
                );
            }
        }
        // Lossless PGs: the threshold decides when XOFF goes out, which the
        // headroom is sized for, so it must be exact. (Lossy queues take the
        // nearest factor, see `lossy_baf`.)
        if let Some(b) = &plan.buffer {
            let bad = b
                .ports
                .iter()
                .flat_map(|pb| pb.pg_profile.iter())
                .find(|p| p.lossless != 0 && tofino_baf(p.dynamic_th).is_none());
            if let Some(prof) = bad {
                refuse(
                    "buffer.dynamic_th".into(),
                    format!("Tofino's dynamic thresholds are the burst absorption factors 1.5%..80%, i.e. dynamic_th -6..2; {} has none", prof.dynamic_th),
                );
            }
        }
    }
    out
}
