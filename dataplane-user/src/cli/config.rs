//! `dataplane config check`: validation, and what the plan holds (ports,
//! headroom, routing, buffer model, watchdog).

use std::path::Path;

use anyhow::Result;
use dataplane_user::ports;

use super::args::plan_of;

/// Validates a file (and resolves its ports when asked) and summarises it.
pub fn check(config: &Path, resolve: bool) -> Result<()> {
    let plan = plan_of(config).map_err(|e| {
        anyhow::anyhow!(
            "{e:#}\nevery key with its type, default and range: `dataplane config reference` \
             (the guide's page docs/src/reference/config.md)"
        )
    })?;
    if resolve {
        ports::resolve_ports(&plan)?;
    }
    println!(
        "{}: valid, instance {:?}, {} port(s)",
        config.display(),
        plan.instance,
        plan.ports.len()
    );
    for (i, p) in plan.ports.iter().enumerate() {
        let c = &p.config;
        let lossless: Vec<String> = (0..8)
            .filter(|i| c.pfc_enable & (1 << i) != 0)
            .map(|i| i.to_string())
            .collect();
        let head = plan
            .buffer
            .as_ref()
            .and_then(|b| b.headroom.get(i))
            .map(|(h, how)| format!(" headroom xoff {} xon {} ({how})", h.xoff, h.xon))
            .unwrap_or_default();
        println!(
            "  {:<16} {:>7} Mb/s trust {:<5} lossless [{}] cnp_tc {} default_tc {} malformed {}{head}",
            p.name,
            c.speed_mbps,
            if c.trust == 0 { "dscp" } else { "dot1p" },
            lossless.join(","),
            c.cnp_tc,
            c.default_tc,
            if c.malformed_action == 0 { "pass" } else { "drop" }
        );
    }
    if plan.forwarding() {
        println!(
            "  routing: {} route(s), {} next hop(s), {} group(s) [{}], hash seed {}",
            plan.routes.len(),
            plan.nexthops.len(),
            plan.groups.len(),
            plan.groups
                .iter()
                .map(|g| format!(
                    "{} {}{} x{}",
                    g.name,
                    dataplane_config::MODES[g.mode as usize],
                    if g.uet_entropy { "+uet_entropy" } else { "" },
                    g.members.len()
                ))
                .collect::<Vec<_>>()
                .join(", "),
            plan.hash_seed
        );
    }
    if let Some(b) = &plan.buffer {
        println!(
            "  buffer model: pool {} bytes, tick {} us",
            b.pool_size,
            b.tick_ns / 1000
        );
    }
    if let Some(c) = plan.ports.first().map(|p| p.config.uet_feedback_tc) {
        if c != 0 {
            println!("  uet: feedback (PDS ACK/NACK/control) to class {}", c & 7);
        }
    }
    if let Some(t) = &plan.trim {
        let queues: Vec<String> = plan
            .ports
            .iter()
            .zip(&t.queues)
            .filter(|(_, &q)| q != 0)
            .map(|(p, &q)| {
                let list: Vec<String> = (0..8)
                    .filter(|i| q & (1 << i) != 0)
                    .map(|i| i.to_string())
                    .collect();
                format!("{} [{}]", p.name, list.join(","))
            })
            .collect();
        let dscp = match t.from_tc {
            Some(tc) => format!("from-tc (tc_value {tc})"),
            None => t.config.dscp.to_string(),
        };
        let queue = match t.config.queue {
            dataplane_common::trim::QUEUE_DYNAMIC => "dynamic".to_string(),
            q => q.to_string(),
        };
        println!(
            "  trimming: size {} dscp {dscp} queue {queue}; trimming queues: {}",
            t.config.size,
            if queues.is_empty() {
                "none".to_string()
            } else {
                queues.join(", ")
            }
        );
    }
    if let Some((w, poll)) = &plan.pfcwd {
        println!(
            "  pfcwd: detection {} ms, restoration {} ms, poll {poll} ms, action {}",
            w.detection_time_ms,
            w.restoration_time_ms,
            ["drop", "forward", "alert"][usize::from(w.action.min(2))]
        );
    }
    if let Some(d) = &plan.dcbx {
        println!(
            "  dcbx: LLDP every {} s (TTL {} s), willing {}, RoCE on {}",
            d.tx_interval_s,
            d.ttl_s,
            d.willing,
            d.roce_priority
                .map(|p| format!("priority {p}"))
                .unwrap_or_else(|| "each port's lowest lossless priority".into())
        );
        for p in &plan.ports {
            let app = dataplane_user::dcbx::advert::dcbx(d, p)
                .app
                .unwrap_or_default();
            println!(
                "    {}: PFC {:#04x}, app table {} entries (RoCE on {})",
                p.name,
                p.config.pfc_enable,
                app.entries().len(),
                dataplane_user::dcbx::advert::roce_priority(d, p)
                    .map(|x| x.to_string())
                    .unwrap_or_else(|| "none: no lossless priority".into())
            );
        }
    }
    Ok(())
}
