//! The route sync inside the running controller: subscribe, dump, write,
//! then follow events and link changes; leave a listing for
//! `dataplane routes`.

use std::collections::HashSet;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use dataplane_common::route::{MAX_GROUPS, MAX_NEXTHOPS};
use dataplane_config::{Plan, RoutePlan, Target as PlanTarget};

use super::kernel::Prefix;
use super::netlink::{dump_all, RouteEvents};
use super::sync::{Listing, RouteRow, RouteSync};
use super::tables::PortInfo;
use super::want::{Policy, Source};
use super::writer::MapWriter;
use crate::ports::Resolved;

/// The controller's route sync: events socket, engine, map writer.
pub struct KernelRoutes {
    pub events: RouteEvents,
    sync: RouteSync,
    writer: MapWriter,
    table: u32,
    instance: String,
    statics: Vec<RouteRow>,
    ports: Vec<String>,
    listing_due: bool,
}

fn static_rows(plan: &Plan) -> Vec<RouteRow> {
    plan.routes
        .iter()
        .map(|r: &RoutePlan| RouteRow {
            prefix: Prefix::new(r.addr, r.len).to_string(),
            source: Source::Static,
            target: match r.target {
                PlanTarget::NextHop(i) => format!("nexthop {}", plan.nexthops[usize::from(i)].name),
                PlanTarget::Group(i) => format!("group {}", plan.groups[usize::from(i)].name),
                PlanTarget::Local => "local".into(),
            },
            mode: match r.target {
                PlanTarget::Group(i) => Some(
                    dataplane_config::MODES[usize::from(plan.groups[usize::from(i)].mode)].into(),
                ),
                _ => None,
            },
            nexthops: Vec::new(),
        })
        .collect()
}

/// Writes the listing of a static-only instance (no `[routing]`).
pub fn write_static_listing(plan: &Plan) {
    let l = Listing {
        routes: static_rows(plan),
        counters: Default::default(),
        unsupported: Vec::new(),
        ports: plan.ports.iter().map(|p| p.name.clone()).collect(),
    };
    let _ = store(&plan.instance, &l);
}

fn store(instance: &str, l: &Listing) -> Result<()> {
    let path = super::listing_path(instance);
    let tmp = path.with_extension("json.tmp");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
    serde_json::to_writer(&mut f, l)?;
    std::io::Write::flush(&mut f)?;
    drop(f);
    std::fs::rename(&tmp, &path)?;
    Ok(())
}

impl KernelRoutes {
    /// Subscribes, dumps the kernel's tables and writes them (the first
    /// sync); `pin_dir` holds the instance's maps.
    pub fn start(
        plan: &Plan,
        ports: &[Resolved],
        pin_dir: &Path,
        port_up: &[bool],
    ) -> Result<Option<KernelRoutes>> {
        let Some(r) = &plan.routing else {
            write_static_listing(plan);
            return Ok(None);
        };
        let events = RouteEvents::open(r.table).context("netlink route events")?;
        let policy = Policy {
            routing: r.clone(),
            static_prefixes: plan
                .routes
                .iter()
                .map(|x| Prefix::new(x.addr, x.len))
                .collect::<HashSet<_>>(),
            free_nexthops: MAX_NEXTHOPS as usize - plan.nexthops.len(),
            free_groups: MAX_GROUPS as usize - plan.groups.len(),
        };
        let infos = ports
            .iter()
            .map(|p| PortInfo {
                ifindex: p.ifindex,
                port_id: p.config.port_id,
                mac: p.config.mac,
            })
            .collect();
        let mut sync = RouteSync::new(
            infos,
            policy,
            plan.nexthops.len() as u16,
            plan.groups.len() as u16,
            MAX_NEXTHOPS as u16,
            MAX_GROUPS as u16,
        );
        let writer = MapWriter::open(pin_dir)?;
        // what an earlier controller learned: rewritten or removed
        sync.adopt(
            writer.loaded_routes(),
            writer.loaded_nexthops(),
            writer.loaded_groups(),
        );
        sync.set_port_up(port_up);
        let mut k = KernelRoutes {
            events,
            sync,
            writer,
            table: r.table,
            instance: plan.instance.clone(),
            statics: static_rows(plan),
            ports: plan.ports.iter().map(|p| p.name.clone()).collect(),
            listing_due: true,
        };
        k.full_sync()?;
        Ok(Some(k))
    }

    /// Dumps everything and writes the difference (start, and after the
    /// kernel dropped events).
    pub fn full_sync(&mut self) -> Result<()> {
        let t0 = Instant::now();
        let ev = dump_all(self.table)?;
        let dumped = t0.elapsed();
        self.sync.rib = Default::default();
        self.sync.handle(&ev);
        drop(ev);
        let rep = self.sync.sync(&mut self.writer)?;
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        crate::log::info(&format!(
            "routing: kernel table {}: {} routes; wrote {} route(s), {} next hop(s), {} group(s), removed {} in {:.1} ms (dump and decode {:.1} ms, mapping {:.1} ms, writes {:.1} ms)",
            self.table,
            self.sync.rib.route_count(),
            rep.routes,
            rep.nexthops,
            rep.groups,
            rep.removed,
            ms(t0.elapsed()),
            ms(dumped),
            ms(self.sync.timing.0),
            ms(self.sync.timing.1)
        ));
        self.listing_due = true;
        Ok(())
    }

    /// The events socket is readable: apply and write.
    pub fn on_events(&mut self) {
        match self.events.read() {
            Ok(ev) => {
                if self.sync.handle(&ev) {
                    self.write();
                }
            }
            Err(e) => {
                crate::log::warn(&format!("routing: {e:#}; dumping the kernel tables again"));
                if let Err(e) = self.full_sync() {
                    crate::log::error(&format!("routing: resync: {e:#}"));
                }
            }
        }
    }

    /// Ports went down or up: groups get their members' live bits (the
    /// kernel's withdraw follows later and converges to the same table).
    pub fn on_links(&mut self, up: &[bool]) {
        self.sync.set_port_up(up);
        if self.sync.dirty() {
            let t0 = Instant::now();
            match self.sync.repair_links(&mut self.writer) {
                Ok(n) => crate::log::info(&format!(
                    "routing: link change: {n} group(s) rewritten at once (local repair, {} us); reading the kernel tables again",
                    t0.elapsed().as_micros()
                )),
                Err(e) => crate::log::error(&format!("{e:#}")),
            }
            // the kernel flushes the routes of a device that went down
            // without a notification for each (IPv4): read them all again
            if let Err(e) = self.full_sync() {
                crate::log::error(&format!("routing: resync after a link change: {e:#}"));
            }
        }
    }

    /// A slow tick: retry a failed sync, refresh the listing.
    pub fn tick(&mut self) {
        if self.sync.dirty() {
            self.write();
        }
        if self.listing_due {
            let mut l = self.sync.listing();
            l.routes.splice(0..0, self.statics.iter().cloned());
            l.ports = self.ports.clone();
            match store(&self.instance, &l) {
                Ok(()) => self.listing_due = false,
                Err(e) => crate::log::warn(&format!("routing: listing: {e:#}")),
            }
            drop(l);
            // a full table's dump and listing are transient: give their
            // memory back (glibc keeps freed memory otherwise)
            #[cfg(target_env = "gnu")]
            // SAFETY: no preconditions.
            unsafe {
                libc::malloc_trim(0);
            }
        }
    }

    fn write(&mut self) -> Option<super::sync::SyncReport> {
        match self.sync.sync(&mut self.writer) {
            Ok(rep) => {
                if rep != Default::default() {
                    crate::log::debug(&format!("routing: wrote {rep:?}"));
                    self.listing_due = true;
                }
                Some(rep)
            }
            Err(e) => {
                crate::log::error(&format!("{e:#} (retried at the next change or tick)"));
                None
            }
        }
    }
}
