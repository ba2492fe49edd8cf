//! A run cut into partitions that advance side by side, window by window
//! (conservative parallel simulation with a fixed lookahead).
//!
//! Every node (switch, host) belongs to one partition: switch `i` to
//! partition `i mod P`, a host to its switch's. A partition has its own
//! clock, event queue and packets, and runs only its nodes' events. An
//! event one partition causes at another's node can only be a frame or a
//! PFC frame crossing a link, which arrives a link delay or more after it
//! was sent (or a collective step's notice, below): so with windows no
//! longer than the shortest delay of a link between partitions (the
//! lookahead), nothing a partition does in a window can reach another
//! partition within that window. In each window
//! the threads claim the partitions one by one and run each one's events
//! before the window's end: each thread its own first (the same ones every
//! window, so a partition's state stays in one core's cache), then what
//! is left of the others'. What crossed waits in a mailbox (one per
//! window parity, sending and receiving partition) that the receiver
//! empties as its next window starts, by sending partition, then sending
//! order. Between windows the coordinating thread takes the queue samples
//! and decides the next window.
//!
//! The result depends on the partition count, never on the threads: a
//! partition's events and the order of delivery are the same whichever
//! thread runs it. One partition is the plain serial run
//! ([`Sim::run`]). More partitions change the order of events at the same
//! nanosecond in different partitions, so runs differ as two seeds' tie
//! orders would, not in what the model means; and a little of what is
//! counted: a drained run ends at its last completion as the serial one
//! does, but its counters include the events up to the end of that
//! window, the first queue sample comes before the events at time 0, and
//! none is taken after the last completion.
//!
//! A flow's sender half is its source host's partition's and its receiver
//! half its destination's ([`crate::cells`]). A collective's next step
//! learns that a flow it waits for completed `dep_delay` after it did
//! (the scenario's; 0 by default: at once); when the flow was received in
//! another partition than the step's sender's, that is a crossing too, so
//! the run is refused unless `dep_delay` is at least the window.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::Instant;

use anyhow::{bail, Result};

use crate::cells::Shared;
use crate::engine::Sim;
use crate::event::{Crossing, Ev, Msg, Queue};
use crate::ranks::{Figures, OneProcess, Ranks};
use crate::report::stats::Stats;
use crate::topo::Topology;

/// The partition of every node (hosts, then switches) of `topo` in
/// `parts` partitions.
pub(crate) fn assign(topo: &Topology, parts: u32) -> Vec<u32> {
    let hosts = topo.hosts;
    let mut owner: Vec<u32> = topo
        .host_links
        .iter()
        .map(|l| (l.peer - hosts) % parts)
        .collect();
    owner.extend((0..topo.switches.len() as u32).map(|i| i % parts));
    owner
}

/// The shortest delay of a link between two partitions (`u64::MAX`:
/// none): the window.
fn window_of(sim: &Sim, owner: &[u32]) -> u64 {
    let hosts = sim.topo.hosts;
    let mut window = u64::MAX;
    for (h, l) in sim.topo.host_links.iter().enumerate() {
        if owner[h] != owner[l.peer as usize] {
            window = window.min(l.delay_ns);
        }
    }
    for (i, s) in sim.topo.switches.iter().enumerate() {
        for l in &s.ports {
            if owner[hosts as usize + i] != owner[l.peer as usize] {
                window = window.min(l.delay_ns);
            }
        }
    }
    window
}

/// Before the flows are made: which partition each node is in, and the
/// window (`sim.owner`, `sim.window_ns`; [`split`] cuts the run).
pub(crate) fn plan(sim: &mut Sim, parts: u32) {
    let owner = assign(&sim.topo, parts);
    sim.window_ns = window_of(sim, &owner);
    sim.owner = std::sync::Arc::new(owner);
}

impl Sim {
    /// Flow `child` starts when `parent` completes (as the flows are made,
    /// after [`plan`]): a step that waits for a flow received in another
    /// partition learns of it `dep_delay` later, at least a window, or it
    /// could not cross.
    pub(crate) fn note_dep(&mut self, child: u32, parent: u32) {
        if self.owner.is_empty() {
            return;
        }
        // a flow of no bytes completes at its sender
        let done_at = self.rx_node(parent as usize);
        let c_src = self.addrs[child as usize].src;
        let (from, to) = (self.owner[done_at as usize], self.owner[c_src as usize]);
        if from == to {
            return;
        }
        let window = self.window_ns;
        if self.p.dep_delay_ns < window && self.deps.refused.is_none() {
            self.deps.refused = Some(format!(
                "partitions: flow {child} (host {c_src}) starts when flow {parent} completes at host {done_at}, in another partition: set dep_delay to at least the window ({window} ns, the shortest link delay between partitions), or run with partitions = 1"
            ));
        }
        self.deps.pairs.insert((to, from));
    }
}

/// Cuts `sim` into `parts` partitions: `sim` becomes partition 0 and holds
/// the others. Refused when a link between partitions has no delay (no
/// window), or a collective's step would learn within a window (its
/// `dep_delay` shorter than the window) of a flow received in another
/// partition.
pub fn split(sim: &mut Sim, parts: u32) -> Result<()> {
    let switches = sim.topo.switches.len() as u32;
    if parts > switches {
        bail!("partitions: {parts} is more than the topology's {switches} switches (a switch is the smallest partition)");
    }
    assert!(!sim.owner.is_empty(), "partitions planned before the split");
    let owner = sim.owner.to_vec();
    let hosts = sim.topo.hosts;
    let window = sim.window_ns;
    // who can send to whom: the partitions at the other end of a link (and,
    // below, of a collective's dependency)
    let mut senders = vec![std::collections::BTreeSet::new(); parts as usize];
    for (h, l) in sim.topo.host_links.iter().enumerate() {
        senders[owner[h] as usize].insert(owner[l.peer as usize]);
        senders[owner[l.peer as usize] as usize].insert(owner[h]);
    }
    for (i, s) in sim.topo.switches.iter().enumerate() {
        for l in &s.ports {
            let (a, b) = (owner[hosts as usize + i], owner[l.peer as usize]);
            senders[a as usize].insert(b);
            senders[b as usize].insert(a);
        }
    }
    if window == 0 {
        bail!("partitions: a link between partitions has no delay (link_delay 0), so partitions have no window to run in; use partitions = 1");
    }
    // a step that waits for a flow received in another partition learns
    // of it `dep_delay` later ([`Sim::note_dep`])
    if let Some(e) = sim.deps.refused.take() {
        bail!(e);
    }
    for &(to, from) in &sim.deps.pairs {
        senders[to as usize].insert(from);
    }
    let mut senders = senders.into_iter().enumerate().map(|(p, set)| {
        set.into_iter()
            .filter(|&q| q != p as u32)
            .collect::<Vec<u32>>()
    });
    let mut arrivals = vec![Vec::new(); parts as usize];
    for &f in &sim.arrivals {
        let src = sim.addrs[f as usize].src;
        arrivals[owner[src as usize] as usize].push(f);
    }
    let owner = std::sync::Arc::new(owner);
    let mut arrivals = arrivals.into_iter();
    sim.arrivals = arrivals.next().expect("partition 0");
    sim.next_arrival = 0;
    sim.part = 0;
    sim.owner = owner.clone();
    sim.n_parts = parts as usize;
    sim.mail = Shared::new(vec![Vec::new(); 2 * (parts * parts) as usize]);
    sim.window_ns = window;
    sim.senders = senders.next().expect("partition 0");
    // SAFETY: each partition writes only its own nodes' entries, its
    // flows' halves and its row of the mailboxes (crate::cells), and the
    // whole arrays are read only between windows (`run`)
    let others = arrivals
        .enumerate()
        .map(|(i, arrivals)| Sim {
            now: 0,
            q: Queue::new(),
            pkts: Vec::with_capacity(1 << 12),
            free: Vec::with_capacity(1 << 12),
            p: sim.p.clone(),
            topo: sim.topo.clone(),
            first_switch: sim.first_switch,
            switches: unsafe { sim.switches.share() },
            hosts: unsafe { sim.hosts.share() },
            flows: unsafe { sim.flows.share() },
            rx: unsafe { sim.rx.share() },
            addrs: unsafe { sim.addrs.share() },
            lens: unsafe { sim.lens.share() },
            rank: sim.rank,
            deps: Default::default(),
            ends: None,
            arrivals,
            next_arrival: 0,
            rng: sim.rng.clone(),
            stats: Stats::default(),
            events: 0,
            stop_ns: sim.stop_ns,
            progress: false,
            dcqcn: sim.dcqcn,
            part: i as u32 + 1,
            owner: owner.clone(),
            n_parts: parts as usize,
            mail: unsafe { sim.mail.share() },
            out_base: 0,
            out_min: u64::MAX,
            others: Vec::new(),
            threads: 0,
            window_ns: window,
            senders: senders.next().expect("a partition"),
            far: Default::default(),
        })
        .collect();
    sim.others = others;
    Ok(())
}

impl Sim {
    /// What another partition caused here (or this one: a PFC frame or a
    /// notice for a node of its own, [`Sim::push_pfc`]).
    pub(crate) fn receive(&mut self, m: Msg) {
        let ev = match m.what {
            Crossing::Frame { node, port, pkt } => Ev::Arrive {
                node,
                port,
                pkt: self.alloc(pkt),
            },
            Crossing::Pfc { node, port, quanta } => Ev::Pfc { node, port, quanta },
            Crossing::DepDone { flow } => Ev::DepDone { flow },
        };
        self.q.push(m.t, ev);
    }

    /// Takes the frames sent to this partition in the window of `parity`:
    /// by source partition, then sending order (the same whatever the
    /// threads). Run by this partition's thread as its next window starts
    /// (the sources then write the other parity's boxes), or by the
    /// coordinator after the last window.
    fn take_mail(&mut self, parity: usize) {
        let n = self.n_parts;
        for k in 0..self.senders.len() {
            let i = parity * n * n + self.senders[k] as usize * n + self.part as usize;
            if self.mail[i].is_empty() {
                continue;
            }
            let mut msgs = std::mem::take(&mut self.mail[i]);
            for m in msgs.drain(..) {
                self.receive(m);
            }
            self.mail[i] = msgs;
        }
    }

    /// Window `k` to `end`: the frames of window `k - 1` in, then the
    /// events; what this window sends goes to the boxes of parity `k`.
    fn window(&mut self, k: u64, end: u64) {
        let n = self.n_parts;
        let parity = (k & 1) as usize;
        self.take_mail(parity ^ 1);
        self.out_base = parity * n * n + self.part as usize * n;
        self.out_min = u64::MAX;
        self.run_window(end);
    }

    /// Runs a partitioned simulation (this is partition 0 and holds the
    /// others) to its stop time; returns the wall time in seconds.
    pub(crate) fn run_partitioned(&mut self) -> f64 {
        run(self)
    }
}

/// A partition as the threads of a run hold it: each thread reaches its
/// own partitions during a window, the coordinating thread all of them
/// between windows; the barriers between the two order every access.
#[derive(Clone, Copy)]
struct PartPtr(*mut Sim);
// SAFETY: see above: no partition is reached from two threads at once
unsafe impl Send for PartPtr {}
unsafe impl Sync for PartPtr {}

/// Every partition, between windows (no worker runs).
///
/// SAFETY: the caller is the coordinating thread outside a window.
// the pointers are the partitions the run borrowed mutably; the barriers,
// not the borrow of the slice, make this thread their only user now
#[allow(clippy::mut_from_ref)]
unsafe fn all(ptrs: &[PartPtr]) -> Vec<&mut Sim> {
    ptrs.iter().map(|p| unsafe { &mut *p.0 }).collect()
}

/// Which partitions each thread claims first: thread `t` the partitions
/// `p` with `p mod T = t`, in descending index (with a switch per
/// partition the higher tiers, numbered last and with the longest
/// windows, go first, so the last claims are short ones and the threads
/// end the window together). A thread runs its own in every window, so a
/// partition's state stays in its core's cache; one that ran out of its
/// own takes the rest of another's (the window's balance).
struct Claims {
    /// Per thread, its partitions in claiming order.
    lists: Vec<Vec<usize>>,
    /// Per thread, how many of its list were claimed this window.
    next: Vec<AtomicUsize>,
}

impl Claims {
    fn new(partitions: usize, threads: usize) -> Self {
        Claims {
            lists: (0..threads)
                .map(|t| (0..partitions).rev().filter(|p| p % threads == t).collect())
                .collect(),
            next: (0..threads).map(|_| AtomicUsize::new(0)).collect(),
        }
    }

    /// Every list unclaimed (the coordinator, between windows).
    fn reset(&self) {
        for n in &self.next {
            n.store(0, Ordering::Relaxed);
        }
    }

    /// The next partition for thread `me`: its own first, then another
    /// thread's; `None` when every partition of the window is claimed.
    fn claim(&self, me: usize) -> Option<usize> {
        let t = self.lists.len();
        (0..t).map(|d| (me + d) % t).find_map(|u| {
            let i = self.next[u].fetch_add(1, Ordering::Relaxed);
            self.lists[u].get(i).copied()
        })
    }
}

/// Runs window `k` to `end` of the partitions thread `me` claims; a
/// panic is caught and kept for the coordinator to raise once every thread
/// is out of the window.
///
/// SAFETY: the caller is a thread of the run, inside a window: a claimed
/// partition is this thread's alone until the window ends.
unsafe fn run_claimed(
    ptrs: &[PartPtr],
    claims: &Claims,
    me: usize,
    (k, end): (u64, u64),
    failed: &Mutex<Option<Box<dyn std::any::Any + Send>>>,
) {
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        while let Some(i) = claims.claim(me) {
            let p = ptrs[i];
            // SAFETY: claimed by this thread, inside a window
            unsafe { (*p.0).window(k, end) };
        }
    }));
    if let Err(e) = r {
        failed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert(e);
    }
}

/// The state of a partitioned run between windows: what the coordinator
/// decides the next window from.
struct Coord {
    /// The next window's number.
    k: u64,
    stop: u64,
    window: u64,
    every: u64,
    drain: bool,
    n_flows: u64,
    next_sample: u64,
    sampling: bool,
    progress: bool,
    t0: Instant,
    last: Instant,
    last_events: u64,
}

/// What the coordinator decides between windows.
enum Next {
    /// Run every partition's events before this time.
    Window(u64),
    /// The run is over; its final time.
    Done(u64),
}

impl Coord {
    /// Takes the queue samples due by the next event (the state holds
    /// until then), while anything is pending and not every flow is done:
    /// of this process's switches, into its first partition (the others'
    /// are idle in its copy; a run over MPI adds the processes' samples up
    /// at the end, [`crate::wire::merge_samples`]).
    fn take_samples(&mut self, parts: &mut [&mut Sim], g: &Figures) {
        let next = (g.next != u64::MAX).then_some(g.next);
        while self.sampling && self.next_sample <= next.unwrap_or(0).min(self.stop) {
            let done = g.flows_done == self.n_flows && g.arriving == 0;
            if next.is_none() || done {
                self.sampling = false;
                break;
            }
            parts[0].sample_at(self.next_sample);
            self.next_sample += self.every;
        }
    }

    /// The next window after the samples due before it.
    fn next_window(&mut self, parts: &mut [&mut Sim], g: &Figures) -> Next {
        self.take_samples(parts, g);
        if g.next == u64::MAX {
            return Next::Done(g.now);
        }
        if g.next > self.stop {
            return Next::Done(self.stop);
        }
        let mut end = g
            .next
            .saturating_add(self.window)
            .min(self.stop.saturating_add(1));
        if self.sampling {
            end = end.min(self.next_sample);
        }
        Next::Window(end)
    }

    /// After the window to `end`: shows progress, and returns the final
    /// time if a drained run is over.
    fn after_window(
        &mut self,
        parts: &mut [&mut Sim],
        g: &Figures,
        ranks: &mut dyn Ranks,
        end: u64,
    ) -> Option<u64> {
        self.k += 1;
        if self.drain && g.flows_done == self.n_flows {
            // a drained run ends at its last completion (each process's
            // copy has the completions of its partitions' flows)
            let last = parts[0].rx.iter().map(|r| r.finish_ns).max().unwrap_or(0);
            let last = ranks.max(last);
            return Some(if last > 0 { last } else { g.now });
        }
        if self.progress {
            let now = Instant::now();
            let dt = now.duration_since(self.last).as_secs_f64();
            if dt >= 1.0 {
                parts[0].print_progress(
                    end,
                    (g.events - self.last_events) as f64 / dt,
                    g.flows_done,
                    now.duration_since(self.t0),
                );
                self.last = now;
                self.last_events = g.events;
            }
        }
        None
    }
}

/// Runs a partitioned simulation (`lead` is partition 0 and holds the
/// others) to its stop time, each window's partitions claimed one by one
/// by the threads; returns the wall time in seconds.
fn run(lead: &mut Sim) -> f64 {
    let t0 = Instant::now();
    let fin = run_windows(lead, &mut OneProcess);
    gather(lead, fin);
    t0.elapsed().as_secs_f64()
}

/// Adds the partitions' counters and events into the lead's, every clock
/// at the run's final time `fin`.
pub(crate) fn gather(lead: &mut Sim, fin: u64) {
    let mut others = std::mem::take(&mut lead.others);
    lead.now = fin;
    for o in &mut others {
        o.now = fin;
        lead.stats.add(&o.stats);
        lead.events += o.events;
    }
    lead.others = others;
}

/// Runs the partitions of a partitioned simulation (`lead` is partition
/// 0 and holds the others) that `ranks` says run in this process, window
/// by window to the stop time, on its threads; returns the run's final
/// time. The partitions' counters stay theirs ([`gather`]).
pub(crate) fn run_windows(lead: &mut Sim, ranks: &mut dyn Ranks) -> u64 {
    let mut others = std::mem::take(&mut lead.others);
    // SAFETY: another handle on the mailboxes, used between windows only
    let mut mail = unsafe { lead.mail.share() };
    let ptrs: Vec<PartPtr> = std::iter::once(&mut *lead as *mut Sim)
        .chain(others.iter_mut().map(|o| o as *mut Sim))
        .enumerate()
        .filter(|&(i, _)| ranks.runs(i))
        .map(|(_, p)| PartPtr(p))
        .collect();
    let threads = match lead.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        t => t,
    }
    .clamp(1, ptrs.len().max(1));
    assert!(!ptrs.is_empty(), "a process with no partition to run");
    // SAFETY: the pointers were just taken from `lead` and `others`; this
    // reference ends with the coordinator's settings
    let (first, t0) = (unsafe { &*ptrs[0].0 }, Instant::now());
    let mut c = Coord {
        k: 0,
        stop: first.stop_ns,
        window: first.window_ns,
        every: first.sample_every(),
        drain: first.p.drain,
        n_flows: first.flows.len() as u64,
        next_sample: 0,
        sampling: true,
        progress: first.progress,
        t0,
        last: t0,
        last_events: 0,
    };
    // SAFETY: no worker runs yet
    for p in unsafe { all(&ptrs) } {
        p.schedule_next_arrival();
    }
    // SAFETY: no worker runs yet
    let mut g = ranks.figures(Figures::of(&unsafe { all(&ptrs) }));
    let failed = Mutex::new(None);
    let final_now = if threads == 1 {
        loop {
            // SAFETY: one thread: every partition is this one's
            let mut parts = unsafe { all(&ptrs) };
            let end = match c.next_window(&mut parts, &g) {
                Next::Window(end) => end,
                Next::Done(fin) => break fin,
            };
            for p in parts.iter_mut() {
                p.window(c.k, end);
            }
            ranks.exchange(&mut mail, (c.k & 1) as usize);
            g = ranks.figures(Figures::of(&parts));
            if let Some(fin) = c.after_window(&mut parts, &g, ranks, end) {
                break fin;
            }
        }
    } else {
        let start = Barrier::new(threads);
        let done = Barrier::new(threads);
        let (window_end, window_k) = (AtomicU64::new(0), AtomicU64::new(0));
        let claims = Claims::new(ptrs.len(), threads);
        std::thread::scope(|sc| {
            for me in 1..threads {
                let (ptrs, start, done, window_end, window_k, claims, failed) = (
                    &ptrs,
                    &start,
                    &done,
                    &window_end,
                    &window_k,
                    &claims,
                    &failed,
                );
                sc.spawn(move || loop {
                    start.wait();
                    let end = window_end.load(Ordering::Acquire);
                    if end == u64::MAX {
                        break;
                    }
                    let k = window_k.load(Ordering::Acquire);
                    // SAFETY: inside the window
                    unsafe { run_claimed(ptrs, claims, me, (k, end), failed) };
                    done.wait();
                });
            }
            // a panic here must still release the workers from `start`
            let fin = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| loop {
                // SAFETY: between windows (the workers wait at `start`)
                let mut parts = unsafe { all(&ptrs) };
                let end = match c.next_window(&mut parts, &g) {
                    Next::Window(end) => end,
                    Next::Done(fin) => break fin,
                };
                drop(parts);
                window_k.store(c.k, Ordering::Release);
                window_end.store(end, Ordering::Release);
                claims.reset();
                start.wait();
                // SAFETY: inside the window
                unsafe { run_claimed(&ptrs, &claims, 0, (c.k, end), &failed) };
                done.wait();
                if failed.lock().unwrap_or_else(|e| e.into_inner()).is_some() {
                    break 0;
                }
                ranks.exchange(&mut mail, (c.k & 1) as usize);
                // SAFETY: between windows
                let mut parts = unsafe { all(&ptrs) };
                g = ranks.figures(Figures::of(&parts));
                if let Some(fin) = c.after_window(&mut parts, &g, ranks, end) {
                    break fin;
                }
            }));
            window_end.store(u64::MAX, Ordering::Release);
            start.wait();
            fin.unwrap_or_else(|e| std::panic::resume_unwind(e))
        })
    };
    if let Some(e) = failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
        std::panic::resume_unwind(e);
    }
    if c.progress {
        eprintln!();
    }
    // the frames of the last window, into their partitions' packets
    // SAFETY: the run is over
    for p in unsafe { all(&ptrs) } {
        p.take_mail(0);
        p.take_mail(1);
    }
    drop(mail);
    debug_assert!(
        lead.mail.iter().all(|v| v.is_empty()),
        "a message nobody took"
    );
    lead.others = others;
    final_now
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Claims in a window by the threads of `order`, in turn, until none
    /// of them gets one: how often each partition was claimed, and each
    /// claim's thread and partition.
    fn window(c: &Claims, parts: usize, order: &[usize]) -> (Vec<u32>, Vec<(usize, usize)>) {
        c.reset();
        let mut seen = vec![0u32; parts];
        let mut claims = Vec::new();
        loop {
            let mut got = false;
            for &me in order {
                if let Some(p) = c.claim(me) {
                    seen[p] += 1;
                    claims.push((me, p));
                    got = true;
                }
            }
            if !got {
                break;
            }
        }
        (seen, claims)
    }

    /// Every partition of a window is claimed exactly once, whether the
    /// threads claim in turn or one thread does it all; a thread takes
    /// its own partitions (`p mod T`, descending) before any other's; a
    /// reset starts the next window over.
    #[test]
    fn every_partition_is_claimed_once_each_thread_its_own_first() {
        for (parts, threads) in [(1, 1), (5, 2), (12, 3), (80, 2), (3, 6)] {
            let c = Claims::new(parts, threads);
            let turns: Vec<usize> = (0..threads).collect();
            for order in [&turns[..], &[0][..], &turns[..]] {
                let (seen, claims) = window(&c, parts, order);
                assert!(seen.iter().all(|&n| n == 1), "{parts}/{threads}: {seen:?}");
                for me in 0..threads {
                    let mine: Vec<usize> = claims
                        .iter()
                        .filter(|&&(t, _)| t == me)
                        .map(|&(_, p)| p)
                        .collect();
                    let own = mine.iter().take_while(|&&p| p % threads == me).count();
                    assert!(
                        mine[own..].iter().all(|&p| p % threads != me),
                        "{parts}/{threads}: thread {me} took another's before its own: {mine:?}"
                    );
                    assert!(mine[..own].windows(2).all(|w| w[0] > w[1]));
                }
            }
        }
    }
}
