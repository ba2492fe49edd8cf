//! `dataplane routes`: the routes a running controller has written, from
//! the listing it keeps in /run/dataplane/<instance>.routes.json
//! (refreshed within a second of a change).

use anyhow::{Context, Result};
use dataplane_user::routing::{listing_path, Listing};

pub fn show(instance: &str, json: bool) -> Result<()> {
    let path = listing_path(instance);
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "no route listing for instance {instance:?} ({}): is its controller running (`dataplane up`)?",
            path.display()
        )
    })?;
    if json {
        println!("{text}");
        return Ok(());
    }
    let l: Listing =
        serde_json::from_str(&text).with_context(|| format!("reading {}", path.display()))?;
    println!(
        "{:<44} {:<9} {:<12} {:<9} next hops (gateway port mac weight link/neighbour)",
        "Prefix", "Source", "Target", "Mode"
    );
    for r in &l.routes {
        let hops: Vec<String> = r
            .nexthops
            .iter()
            .map(|h| {
                format!(
                    "{} {} {} w{} {}/{}",
                    h.gateway,
                    l.ports.get(h.port).map(String::as_str).unwrap_or("?"),
                    h.mac
                        .iter()
                        .map(|b| format!("{b:02x}"))
                        .collect::<Vec<_>>()
                        .join(":"),
                    h.weight,
                    if h.live { "up" } else { "down" },
                    if h.resolved { "resolved" } else { "unresolved" }
                )
            })
            .collect();
        println!(
            "{:<44} {:<9} {:<12} {:<9} {}",
            r.prefix,
            format!("{:?}", r.source).to_lowercase(),
            r.target,
            r.mode.as_deref().unwrap_or("-"),
            hops.join(", ")
        );
    }
    let c = &l.counters;
    println!(
        "\n{} route(s); sync: {} event(s), {} write(s) ({} failed), {} unresolved next hop(s), {} unsupported route(s) handed to the kernel, {} not written (table full), {} malformed message(s)",
        l.routes.len(),
        c.events,
        c.writes,
        c.write_errors,
        c.unresolved_nexthops,
        c.unsupported,
        c.over_limit,
        c.malformed
    );
    for (p, why) in &l.unsupported {
        println!("  unsupported: {p}: {why}");
    }
    Ok(())
}
