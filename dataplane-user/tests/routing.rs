//! The route sync without root, from messages recorded from the kernel
//! (decoding: `routing_decode.rs`): the pure mapping, the ordered
//! difference and the sync engine against a model of the tables.

use std::collections::{BTreeMap, HashMap, HashSet};

use dataplane_common::lb::Group;
use dataplane_common::route::{
    NextHop, RouteEntry, NH_UNRESOLVED, NH_VALID, ROUTE_GROUP, ROUTE_LOCAL, ROUTE_NEXTHOP,
};
use dataplane_config::RoutingPlan;
use dataplane_user::routing::kernel::*;
use dataplane_user::routing::rib::Rib;
use dataplane_user::routing::tables::{
    build, consistent, diff, record, IdSpace, Ids, PortInfo, Tables,
};
use dataplane_user::routing::want::{wanted, Managed, Policy, Source, Target};
use dataplane_user::routing::{RouteSync, Writer};

#[path = "common/netlink.rs"]
mod netlink;
use netlink::*;

fn routing_plan() -> RoutingPlan {
    RoutingPlan {
        table: 254,
        default_mode: 0,
        flowlet_timeout_ns: 100_000,
        max_routes_v4: 131072,
        max_routes_v6: 32768,
        policy: vec![(ip("198.18.8.0"), 22, 2)],
        uet_entropy: false,
    }
}

fn policy() -> Policy {
    Policy {
        routing: routing_plan(),
        static_prefixes: HashSet::new(),
        free_nexthops: 200,
        free_groups: 60,
    }
}

/// eth1 and eth2 are managed, eth9 is not.
fn managed() -> Managed {
    Managed {
        by_ifindex: [(ETH1, 0), (ETH2, 1)].into_iter().collect(),
    }
}

fn recorded_rib() -> Rib {
    let mut rib = Rib::default();
    for e in all_events() {
        rib.apply(&e);
    }
    rib
}

#[test]
fn mapping_of_the_recorded_tables() {
    let w = wanted(&recorded_rib(), &managed(), &policy());
    let get = |p: &str| {
        w.routes
            .iter()
            .find(|r| r.0 == pfx(p))
            .map(|r| (r.1.clone(), r.2))
    };
    // single path -> next hop
    assert_eq!(
        get("198.18.3.0/24"),
        Some((Target::Nexthop((ETH1, ip("198.18.0.1"))), Source::Kernel))
    );
    // multipath -> group with the default mode, weights kept
    match get("198.18.2.0/24") {
        Some((Target::Group(g), Source::Kernel)) => {
            assert_eq!(g.mode, 0);
            assert_eq!(
                w.groups[&g],
                vec![((ETH1, ip("198.18.0.1")), 1), ((ETH2, ip("198.18.0.3")), 2)]
            );
        }
        x => panic!("{x:?}"),
    }
    // nexthop-object group -> a group keyed by the object; the policy's
    // override (198.18.8.0/22 -> bandwidth) applies
    match get("198.18.8.0/24") {
        Some((Target::Group(g), _)) => {
            assert_eq!(g.mode, 2);
            assert_eq!(g.origin, dataplane_user::routing::want::Origin::Object(10));
            assert_eq!(
                w.groups[&g],
                vec![((ETH1, ip("198.18.0.1")), 1), ((ETH2, ip("198.18.0.3")), 3)]
            );
        }
        x => panic!("{x:?}"),
    }
    // connected of a managed port -> kernel (local)
    assert_eq!(
        get("198.18.0.0/31"),
        Some((Target::Kernel, Source::Connected))
    );
    // out of an unmanaged interface -> kernel
    assert_eq!(get("198.18.6.0/24"), Some((Target::Kernel, Source::Kernel)));
    assert_eq!(get("198.18.9.0/24"), Some((Target::Kernel, Source::Kernel)));
    // unsupported -> kernel, listed
    for p in ["198.18.4.0/24", "198.18.5.0/24", "198.18.7.0/24"] {
        assert_eq!(get(p), Some((Target::Kernel, Source::Kernel)), "{p}");
        assert!(w.unsupported.iter().any(|u| u.0 == pfx(p)), "{p}");
    }
    // IPv6 via link-local next hops; a nexthop object with one next hop
    assert_eq!(
        get("2001:db8:2::/64"),
        Some((Target::Nexthop((ETH1, ip("fe80::1"))), Source::Kernel))
    );
    assert_eq!(
        get("2001:db8:4::/64"),
        Some((Target::Nexthop((ETH1, ip("fe80::1"))), Source::Kernel))
    );
    assert!(matches!(
        get("2001:db8:3::/64"),
        Some((Target::Group(_), _))
    ));
    // resolved neighbours inside a managed connected prefix -> host routes
    assert_eq!(
        get("198.18.0.1/32"),
        Some((Target::Nexthop((ETH1, ip("198.18.0.1"))), Source::Neighbour))
    );
    assert_eq!(
        get("198.18.0.3/32"),
        Some((Target::Nexthop((ETH2, ip("198.18.0.3"))), Source::Neighbour))
    );
    // own addresses and IPv6 link-local: the kernel's
    assert_eq!(get("198.18.0.0/32"), Some((Target::Kernel, Source::Local)));
    assert_eq!(get("fe80::/10"), Some((Target::Kernel, Source::Local)));
    // not for neighbours of an unmanaged port
    assert_eq!(get("198.18.9.7/32"), None);
}

#[test]
fn static_routes_stay_and_limits_hold() {
    let mut p = policy();
    p.static_prefixes.insert(pfx("198.18.3.0/24"));
    let w = wanted(&recorded_rib(), &managed(), &p);
    assert!(!w.routes.iter().any(|r| r.0 == pfx("198.18.3.0/24")));
    // a full group table: routes needing a new group are not written, counted
    let mut p = policy();
    p.free_groups = 1;
    let w = wanted(&recorded_rib(), &managed(), &p);
    assert_eq!(w.groups.len(), 1);
    assert!(w.over_limit.len() >= 2, "{:?}", w.over_limit);
    // a route limit
    let mut p = policy();
    p.routing.max_routes_v4 = 3;
    let w = wanted(&recorded_rib(), &managed(), &p);
    assert_eq!(w.routes.iter().filter(|r| r.0.addr.is_ipv4()).count(), 3);
}

#[test]
fn too_many_paths_go_to_the_kernel() {
    let mut rib = Rib::default();
    let paths: Vec<KPath> = (0..17)
        .map(|i| path(&format!("198.18.0.{}", 2 * i + 1), ETH1, 1))
        .collect();
    rib.apply(&Event::NewRoute(KRoute {
        table: 254,
        prefix: pfx("198.18.100.0/24"),
        metric: 0,
        protocol: 186,
        via: Via::Paths(paths),
    }));
    let w = wanted(&rib, &managed(), &policy());
    assert!(w
        .routes
        .contains(&(pfx("198.18.100.0/24"), Target::Kernel, Source::Kernel)));
    assert_eq!(
        w.unsupported,
        vec![(pfx("198.18.100.0/24"), Unsupported::TooManyPaths)]
    );
}

/// The tables a model writer holds, checked after every single write: no
/// route or group ever points at an entry that is not there.
#[derive(Default)]
struct Model {
    nexthops: BTreeMap<u16, NextHop>,
    groups: BTreeMap<u16, Group>,
    routes: HashMap<Prefix, RouteEntry>,
    writes: usize,
    fail_after: Option<usize>,
}

impl Model {
    fn check(&self) {
        for (id, g) in &self.groups {
            for m in &g.members[..g.n_members as usize] {
                assert!(
                    self.nexthops.contains_key(&m.id),
                    "group {id} -> missing next hop {}",
                    m.id
                );
            }
        }
        for (p, r) in &self.routes {
            match r.kind {
                ROUTE_NEXTHOP => assert!(
                    self.nexthops.contains_key(&r.id),
                    "{p} -> missing next hop {}",
                    r.id
                ),
                ROUTE_GROUP => assert!(
                    self.groups.contains_key(&r.id),
                    "{p} -> missing group {}",
                    r.id
                ),
                _ => {}
            }
        }
    }

    fn step(&mut self) -> anyhow::Result<()> {
        self.writes += 1;
        if std::env::var("MODEL_TRACE").is_ok() {
            eprintln!(
                "write {}: {}",
                self.writes,
                std::backtrace::Backtrace::force_capture()
                    .to_string()
                    .lines()
                    .filter(|l| l.contains("routing"))
                    .take(3)
                    .collect::<Vec<_>>()
                    .join(" | ")
            );
        }
        if self.fail_after.is_some_and(|n| self.writes > n) {
            anyhow::bail!("injected write error");
        }
        Ok(())
    }
}

impl Writer for Model {
    fn nexthop(&mut self, id: u16, v: Option<&NextHop>) -> anyhow::Result<()> {
        self.step()?;
        match v {
            Some(v) => self.nexthops.insert(id, *v),
            None => self.nexthops.remove(&id),
        };
        self.check();
        Ok(())
    }
    fn group(&mut self, id: u16, v: Option<&Group>) -> anyhow::Result<()> {
        self.step()?;
        match v {
            Some(v) => self.groups.insert(id, *v),
            None => self.groups.remove(&id),
        };
        self.check();
        Ok(())
    }
    fn route(&mut self, p: &Prefix, v: Option<&RouteEntry>) -> anyhow::Result<()> {
        self.step()?;
        match v {
            Some(v) => self.routes.insert(*p, *v),
            None => self.routes.remove(p),
        };
        self.check();
        Ok(())
    }
}

fn ports() -> Vec<PortInfo> {
    vec![
        PortInfo {
            ifindex: ETH1,
            port_id: 0,
            mac: [2, 0, 0, 0, 0, 1],
        },
        PortInfo {
            ifindex: ETH2,
            port_id: 1,
            mac: [2, 0, 0, 0, 0, 2],
        },
    ]
}

fn engine() -> RouteSync {
    RouteSync::new(ports(), policy(), 0, 0, 256, 64)
}

#[test]
fn sync_writes_the_recorded_tables_and_nothing_twice() {
    let mut s = engine();
    s.handle(&all_events());
    let mut m = Model::default();
    let r = s.sync(&mut m).unwrap();
    assert!(r.routes > 10, "{r:?}");
    let g = m.routes[&pfx("198.18.2.0/24")];
    assert_eq!(g.kind, ROUTE_GROUP);
    let grp = m.groups[&g.id];
    assert_eq!(grp.n_members, 2);
    assert!(grp.members[..2].iter().all(|x| x.live == 1));
    assert_eq!(m.routes[&pfx("198.18.0.0/31")].kind, ROUTE_LOCAL);
    let nh = m.nexthops[&m.routes[&pfx("2001:db8:2::/64")].id];
    assert_eq!(
        (nh.dst_mac, nh.src_mac, nh.ifindex, nh.port_id, nh.valid),
        ([2, 0, 0, 0, 1, 1], [2, 0, 0, 0, 0, 1], ETH1, 0, NH_VALID)
    );
    // nothing changed: nothing written
    let before = m.writes;
    assert!(!s.handle(&all_events()));
    s.sync(&mut m).unwrap();
    assert_eq!(m.writes, before);
}

fn neigh(ifindex: u32, a: &str, mac: Option<[u8; 6]>) -> Event {
    Event::NewNeigh(KNeigh {
        ifindex,
        addr: ip(a),
        mac,
    })
}

#[test]
fn unresolved_next_hop_goes_to_the_kernel_until_resolved() {
    let mut s = engine();
    s.handle(&[Event::NewRoute(KRoute {
        table: 254,
        prefix: pfx("198.18.50.0/24"),
        metric: 0,
        protocol: 186,
        via: Via::Paths(vec![path("198.18.0.5", ETH1, 1)]),
    })]);
    let mut m = Model::default();
    s.sync(&mut m).unwrap();
    let r = m.routes[&pfx("198.18.50.0/24")];
    assert_eq!(m.nexthops[&r.id].valid, NH_UNRESOLVED);
    assert_eq!(s.counters.unresolved_nexthops, 1);
    // resolution: one write, the next hop's
    let before = m.writes;
    s.handle(&[neigh(ETH1, "198.18.0.5", Some([2, 9, 9, 9, 9, 9]))]);
    let rep = s.sync(&mut m).unwrap();
    assert_eq!(m.writes - before, 1, "{rep:?}");
    assert_eq!(m.nexthops[&r.id].valid, NH_VALID);
    assert_eq!(m.nexthops[&r.id].dst_mac, [2, 9, 9, 9, 9, 9]);
    assert_eq!(
        m.routes[&pfx("198.18.50.0/24")],
        r,
        "the route is untouched"
    );
}

#[test]
fn object_group_change_touches_the_group_only() {
    let mut s = engine();
    let mut ev = all_events();
    // 50 more routes through nexthop group 10
    for i in 0..50 {
        ev.push(Event::NewRoute(KRoute {
            table: 254,
            prefix: pfx(&format!("198.18.{}.0/24", 100 + i)),
            metric: 0,
            protocol: 186,
            via: Via::Object(10),
        }));
    }
    s.handle(&ev);
    let mut m = Model::default();
    s.sync(&mut m).unwrap();
    let gid = m.routes[&pfx("198.18.100.0/24")].id;
    let routes = m.routes.clone();
    let before = m.writes;
    // the group loses a member
    s.handle(&[Event::NewNexthop(KNexthop {
        id: 10,
        kind: NexthopKind::Group(vec![(1, 1)]),
    })]);
    s.sync(&mut m).unwrap();
    // object 10 is two data-plane groups: 198.18.8.0/24 has the policy's
    // bandwidth mode, the 50 routes the default mode
    assert_eq!(m.writes - before, 2, "two writes: the groups");
    assert_eq!(m.groups[&gid].n_members, 1);
    assert_eq!(m.routes, routes);
}

#[test]
fn link_down_is_local_repair_and_the_withdraw_converges() {
    let mut s = engine();
    s.handle(&all_events());
    let mut m = Model::default();
    s.sync(&mut m).unwrap();
    let gid = m.routes[&pfx("198.18.2.0/24")].id;
    let buckets = m.groups[&gid].buckets;
    let before = m.writes;
    // eth2 goes down: only the groups are rewritten, eth2's member not live
    s.set_port_up(&[true, false]);
    s.sync(&mut m).unwrap();
    let g = m.groups[&gid];
    assert_eq!(g.members[1].live, 0);
    let ngroups = m.groups.len();
    assert!(
        m.writes - before <= ngroups,
        "{} writes for {ngroups} groups",
        m.writes - before
    );
    // only eth2's buckets moved
    for (a, b) in buckets.iter().zip(g.buckets.iter()) {
        if *a == 0 {
            assert_eq!(*b, 0);
        }
    }
    // the withdraw: the kernel's route loses the eth2 path
    s.handle(&[Event::NewRoute(KRoute {
        table: 254,
        prefix: pfx("198.18.2.0/24"),
        metric: 0,
        protocol: 186,
        via: Via::Paths(vec![path("198.18.0.1", ETH1, 1)]),
    })]);
    s.sync(&mut m).unwrap();
    assert_eq!(
        m.routes[&pfx("198.18.2.0/24")],
        RouteEntry {
            kind: ROUTE_NEXTHOP,
            plen: 25,
            id: m.routes[&pfx("198.18.3.0/24")].id
        }
    );
    // back up, path re-advertised: a group with both members live again
    s.set_port_up(&[true, true]);
    s.handle(&[route_of(&all_events(), "198.18.2.0/24")].map(Event::NewRoute));
    s.sync(&mut m).unwrap();
    let r = m.routes[&pfx("198.18.2.0/24")];
    assert_eq!(r.kind, ROUTE_GROUP);
    assert!(m.groups[&r.id].members[..2].iter().all(|x| x.live == 1));
}

/// Local repair alone (`repair_links`, what the controller runs on a
/// link change before re-reading the kernel): the groups holding the
/// port are rewritten with its member not live, nothing else is written,
/// and the full sync that follows finds the groups as it wants them.
#[test]
fn repair_links_rewrites_only_the_groups_of_the_port() {
    let mut s = engine();
    s.handle(&all_events());
    let mut m = Model::default();
    s.sync(&mut m).unwrap();
    let gid = m.routes[&pfx("198.18.2.0/24")].id;
    let buckets = m.groups[&gid].buckets;
    let (routes, nexthops) = (m.routes.clone(), m.nexthops.clone());
    let before = m.writes;
    s.set_port_up(&[true, false]);
    let n = s.repair_links(&mut m).unwrap();
    assert!(n >= 1 && n <= m.groups.len(), "{n} groups rewritten");
    assert_eq!(
        m.writes - before,
        n,
        "only the repaired groups were written"
    );
    assert_eq!(m.groups[&gid].members[1].live, 0);
    assert_eq!(m.groups[&gid].members[0].live, 1);
    for (a, b) in buckets.iter().zip(m.groups[&gid].buckets.iter()) {
        if *a == 0 {
            assert_eq!(*b, 0, "a live member's bucket moved");
        }
    }
    assert_eq!((&m.routes, &m.nexthops), (&routes, &nexthops));
    // nothing left to repair; the full sync rewrites no group
    assert_eq!(s.repair_links(&mut m).unwrap(), 0);
    let rep = s.sync(&mut m).unwrap();
    assert_eq!(rep.groups, 0, "{rep:?}");
    // back up: repaired again, both live
    s.set_port_up(&[true, true]);
    assert!(s.repair_links(&mut m).unwrap() >= 1);
    assert!(m.groups[&gid].members[..2].iter().all(|x| x.live == 1));
}

#[test]
fn a_failed_write_leaves_a_consistent_table_and_the_next_sync_finishes() {
    for fail_after in [0, 1, 3, 7, 12, 20] {
        let mut s = engine();
        s.handle(&all_events());
        let mut m = Model {
            fail_after: Some(fail_after),
            ..Default::default()
        };
        assert!(s.sync(&mut m).is_err());
        m.check();
        m.fail_after = None;
        s.sync(&mut m).unwrap();
        let mut clean = Model::default();
        let mut s2 = engine();
        s2.handle(&all_events());
        s2.sync(&mut clean).unwrap();
        assert_eq!(m.routes, clean.routes, "fail after {fail_after}");
        assert_eq!(m.nexthops, clean.nexthops);
    }
}

/// Random churn (routes added, changed, withdrawn; neighbours; objects):
/// every prefix of every diff keeps the tables consistent, and the loaded
/// tables always end equal to what is wanted.
#[test]
fn churn_never_leaves_a_dangling_reference() {
    let mut rng = dataplane_common::rand::SplitMix64(7);
    let mut s = engine();
    s.handle(&all_events());
    let mut m = Model::default();
    s.sync(&mut m).unwrap();
    let gws: Vec<(u32, String)> = (0..12)
        .map(|i| {
            (
                if i % 2 == 0 { ETH1 } else { ETH2 },
                format!("198.18.0.{}", 2 * i + 1),
            )
        })
        .collect();
    for round in 0..300 {
        let mut ev = Vec::new();
        for _ in 0..(rng.next_u64() % 6) {
            let p = pfx(&format!("198.18.{}.0/24", 100 + rng.next_u64() % 40));
            let n = (rng.next_u64() % 4) as usize;
            let r = KRoute {
                table: 254,
                prefix: p,
                metric: 0,
                protocol: 186,
                via: Via::Paths(
                    (0..n)
                        .map(|_| {
                            let (i, g) = &gws[(rng.next_u64() % gws.len() as u64) as usize];
                            path(g, *i, 1)
                        })
                        .collect(),
                ),
            };
            ev.push(if n == 0 {
                Event::DelRoute(r)
            } else {
                Event::NewRoute(r)
            });
            let (i, g) = &gws[(rng.next_u64() % gws.len() as u64) as usize];
            let mac = rng.next_u64().is_multiple_of(2).then_some([
                2,
                0,
                0,
                0,
                7,
                (rng.next_u64() % 3) as u8,
            ]);
            ev.push(neigh(*i, g, mac));
        }
        s.handle(&ev);
        if round % 17 == 0 {
            s.set_port_up(&[round % 34 != 0, true]);
        }
        s.sync(&mut m)
            .unwrap_or_else(|e| panic!("round {round}: {e:#}"));
    }
    // what is loaded is what a fresh sync of the same kernel state writes
    // (ids aside): compare route -> next-hop values
    let resolve = |m: &Model, e: &RouteEntry| -> Vec<(u32, [u8; 6], u8)> {
        match e.kind {
            ROUTE_NEXTHOP => vec![{
                let n = m.nexthops[&e.id];
                (n.ifindex, n.dst_mac, n.valid)
            }],
            ROUTE_GROUP => {
                let g = m.groups[&e.id];
                let mut v: Vec<_> = g.members[..g.n_members as usize]
                    .iter()
                    .map(|x| {
                        let n = m.nexthops[&x.id];
                        (n.ifindex, n.dst_mac, n.valid)
                    })
                    .collect();
                v.sort();
                v
            }
            _ => vec![],
        }
    };
    let mut fresh = engine();
    fresh.rib = s.rib.clone();
    fresh.set_port_up(&[true, true]);
    s.set_port_up(&[true, true]);
    s.sync(&mut m).unwrap();
    let mut m2 = Model::default();
    fresh.sync(&mut m2).unwrap();
    assert_eq!(m.routes.len(), m2.routes.len());
    for (p, e) in &m.routes {
        assert_eq!(resolve(&m, e), resolve(&m2, &m2.routes[p]), "{p}");
    }
}

#[test]
fn ids_freed_by_a_sync_are_reused_only_after_it() {
    let mut ids: IdSpace<u32> = IdSpace::new(5, 7);
    assert_eq!(ids.id(&1), Some(5));
    assert_eq!(ids.id(&2), Some(6));
    assert_eq!(ids.id(&3), None, "full");
    ids.retain(|k| *k != 1);
    assert_eq!(ids.id(&3), None, "5 is released, not yet free");
    ids.commit();
    assert_eq!(ids.id(&3), Some(5));
    // build + diff + record keep the consistency invariant
    let rib = recorded_rib();
    let w = wanted(&rib, &managed(), &policy());
    let mut ids = Ids {
        nexthops: IdSpace::new(0, 256),
        groups: IdSpace::new(0, 64),
    };
    let by: HashMap<u32, usize> = managed().by_ifindex;
    let t = build(&w, &rib, &mut ids, &ports(), &by, 100_000);
    let mut have = Tables::default();
    for op in diff(&Tables::default(), &t) {
        record(&mut have, &op);
        consistent(&have, 0, 0).unwrap();
    }
    assert_eq!(have, t);
}

/// The kernel flushes the routes of a deleted nexthop object (and removes
/// it from its groups) without a RTM_DELROUTE per route: the mirror does
/// the same on the RTM_DELNEXTHOP.
#[test]
fn a_deleted_nexthop_object_takes_its_routes_and_group_membership() {
    let mut rib = recorded_rib();
    assert_eq!(rib.best(&pfx("2001:db8:4::/64")), Some(&Via::Object(3)));
    rib.apply(&Event::DelNexthop(3));
    assert_eq!(rib.best(&pfx("2001:db8:4::/64")), None);
    rib.apply(&Event::DelNexthop(2));
    assert_eq!(rib.nexthop(10), Some(&NexthopKind::Group(vec![(1, 1)])));
    assert!(
        rib.best(&pfx("198.18.8.0/24")).is_some(),
        "group 10 still has a member"
    );
    rib.apply(&Event::DelNexthop(1));
    assert_eq!(rib.nexthop(10), None, "empty group gone");
    assert_eq!(rib.best(&pfx("198.18.8.0/24")), None);
    assert_eq!(rib.best(&pfx("198.18.11.0/24")), None);
}

/// The learned routes become plan entries and P4 entries: a group of two
/// next hops with their MACs and weights, a next hop, the kernel's as local.
#[test]
fn learned_routes_become_p4_entries() {
    let mut s = engine();
    s.handle(&all_events());
    let mut m = Model::default();
    s.sync(&mut m).unwrap();
    let mut listing = s.listing();
    listing.ports = vec!["eth1".into(), "eth2".into()];
    let text = "[switch]\nname = \"p4l\"\n[[port]]\nname = \"eth1\"\nmac = \"02:00:00:00:00:01\"\n[[port]]\nname = \"eth2\"\nmac = \"02:00:00:00:00:02\"\n[routing]\nsource = \"kernel\"\n";
    let plan = dataplane_config::Config::parse(text, "t")
        .unwrap()
        .validate("t")
        .unwrap();
    let p = dataplane_user::routing::export::with_learned(&plan, &listing).unwrap();
    let find = |pf: &str| {
        let (a, l) = dataplane_config::parse_prefix(pf).unwrap();
        p.routes
            .iter()
            .find(|r| (r.addr, r.len) == (a, l))
            .unwrap_or_else(|| panic!("{pf}"))
            .target
    };
    match find("198.18.2.0/24") {
        dataplane_config::Target::Group(g) => {
            let g = &p.groups[usize::from(g)];
            assert_eq!(g.members.len(), 2);
            let macs: Vec<[u8; 6]> = g
                .members
                .iter()
                .map(|(n, _)| p.nexthops[usize::from(*n)].mac)
                .collect();
            assert!(
                macs.contains(&[2, 0, 0, 0, 1, 1]) && macs.contains(&[2, 0, 0, 0, 2, 1]),
                "{macs:?}"
            );
            assert_eq!(
                g.members.iter().map(|x| x.1).sum::<u8>(),
                3,
                "weights 1 + 2"
            );
        }
        t => panic!("{t:?}"),
    }
    assert!(matches!(
        find("198.18.3.0/24"),
        dataplane_config::Target::NextHop(_)
    ));
    assert_eq!(find("198.18.4.0/24"), dataplane_config::Target::Local);
    let e = dataplane_p4::entries(&p, dataplane_p4::Target::Bmv2).unwrap();
    assert!(
        e.cli.contains("198.18.2.0/24") || e.cli.contains("0xc6120200/24"),
        "{}",
        &e.cli[..e.cli.len().min(3000)]
    );
}

#[test]
fn learned_groups_carry_the_uet_entropy_flag_when_routing_says_so() {
    use dataplane_common::lb::GROUP_F_UET_ENTROPY;
    for on in [false, true] {
        let mut p = policy();
        p.routing.uet_entropy = on;
        let mut s = RouteSync::new(ports(), p, 0, 0, 256, 64);
        s.handle(&all_events());
        let mut m = Model::default();
        s.sync(&mut m).unwrap();
        assert!(!m.groups.is_empty());
        for g in m.groups.values() {
            assert_eq!(g.flags & GROUP_F_UET_ENTROPY != 0, on);
        }
    }
}
