//! Partitions on the ranks of an MPI job (the `mpi` feature; Open MPI
//! through the `mpi` crate): `mpirun -np R dataplane-sim --partitions N
//! ...` runs the partitions `p` with `p mod R = rank` on each rank (on
//! its threads as in one process, [`crate::partition`]).
//!
//! Every rank builds the run as one process would (the same seed gives
//! the same topology, switches and flows), keeps only its partitions'
//! flows' halves ([`crate::cells`]: the flows' addresses are every
//! rank's) and runs only its partitions.
//! After each window a rank sends each rank whose partitions can receive
//! from its own one message (empty when nothing crossed: the window's
//! message is the null message of the conservative protocol) holding
//! what its partitions posted to theirs, and receives one from each rank
//! that can send to it, into the same mailboxes a single process uses:
//! the receivers take them in the same order, so the report depends on
//! `N`, never on `R`. One all-gather of five words per window gives every
//! rank the run's figures (earliest event, flows done, ...), so all of
//! them decide the same next window. At the end every rank sends rank 0
//! a message a partition, its counters and packets and its nodes' and
//! flows' figures ([`crate::wire`]), then its own (peak RSS, times);
//! rank 0 makes the report, its flows' figures from a compact record a
//! flow ([`crate::report::ends`]).
//!
//! A rank that dies ends the job: Open MPI's launcher kills the others
//! when one exits abnormally, and a panic here aborts the job
//! ([`abort_on_panic`]) instead of leaving the others waiting.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

use crate::cells::Shared;
use crate::engine::Sim;
use crate::event::Msg;
use crate::ranks::{Figures, Ranks};
use crate::report::Report;
use crate::wire::{self, Reader};
use crate::Scenario;

/// The tags of a window's messages and of the end-of-run ones to rank
/// 0: a rank's figures, and what the report reads of one of its
/// partitions.
const TAG_WINDOW: i32 = 0;
const TAG_END: i32 = 1;
const TAG_PART: i32 = 2;

/// True when an MPI launcher (Open MPI's mpirun, a PMI / PMIx one)
/// started this process.
pub fn launched() -> bool {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"]
        .iter()
        .any(|v| std::env::var_os(v).is_some())
}

/// This process's MPI job: initialised once, finalised when dropped.
pub struct Job {
    _universe: mpi::environment::Universe,
    world: SimpleCommunicator,
}

impl Job {
    /// Initialises MPI (the threads of a rank never call it: funneled).
    pub fn init() -> Result<Job> {
        let (universe, _) = mpi::initialize_with_threading(mpi::Threading::Funneled)
            .context("MPI: initialised twice")?;
        let world = universe.world();
        abort_on_panic();
        Ok(Job {
            _universe: universe,
            world,
        })
    }

    pub fn rank(&self) -> usize {
        self.world.rank() as usize
    }

    pub fn size(&self) -> usize {
        self.world.size() as usize
    }
}

/// A panic in a rank aborts the whole job (after the usual message):
/// the other ranks would wait for its next window forever.
fn abort_on_panic() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default(info);
        eprintln!("dataplane-sim: this rank panicked: aborting the MPI job");
        // SAFETY: MPI is initialised (the hook is set after it); abort
        // ends every process of the job
        unsafe { mpi::ffi::MPI_Abort(mpi::ffi::RSMPI_COMM_WORLD, 70) };
    }));
}

/// What one run over the job gave: the report on rank 0, and each rank's
/// peak resident set (KiB) there too.
pub struct Outcome {
    pub report: Option<Report>,
    pub peak_rss_kib: Vec<u64>,
    /// Per rank, the flows' sender and receiver halves it held (its
    /// partitions' hosts'), on rank 0.
    pub held: Vec<(u64, u64)>,
    /// Windows of the run, and per rank the wall seconds it spent
    /// exchanging and agreeing between windows (waits included).
    pub windows: u64,
    pub sync_s: Vec<f64>,
    /// The ranks' work between their exchanges, on rank 0.
    pub work: Work,
}

/// What the ranks' windows cost in work (running their partitions'
/// events), apart from exchanging and waiting: per rank the CPU and wall
/// seconds (CPU: every thread of the rank together), and the sums over
/// the windows of the busiest rank's: with one thread a rank, the wall
/// time the run cannot go below on cores of its own (the critical path:
/// any more is exchange, waits, or work not done at once because the
/// rank's core was taken).
#[derive(Clone, Debug, Default)]
pub struct Work {
    pub cpu_s: Vec<f64>,
    pub wall_s: Vec<f64>,
    pub critical_cpu_s: f64,
    pub critical_wall_s: f64,
    /// Per rank, the seconds its coordinating thread was ready to run but
    /// waited for a core (the kernel's run delay, /proc/self/task/*/
    /// schedstat; 0 if unknown): its core taken by other work.
    pub run_delay_s: Vec<f64>,
}

/// The nanoseconds this process's threads waited for a core while ready
/// to run (the kernel's run delay; 0 if unknown): of the threads alive
/// now, the one that coordinated the windows (the others of a rank of
/// several threads have ended).
fn run_delay_ns() -> u64 {
    let mut total = 0;
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    for t in dir.flatten() {
        if let Ok(s) = std::fs::read_to_string(t.path().join("schedstat")) {
            total += s
                .split_whitespace()
                .nth(1)
                .and_then(|v| v.parse().ok())
                .unwrap_or(0u64);
        }
    }
    total
}

impl Work {
    /// From every rank's per-window CPU and wall nanoseconds.
    fn of(per_rank: &[(Vec<u64>, Vec<u64>)]) -> Work {
        let sum = |v: &[u64]| v.iter().sum::<u64>() as f64 * 1e-9;
        // per window, the largest of the ranks' figures, summed
        let critical = |per: Vec<&Vec<u64>>| {
            let windows = per.iter().map(|v| v.len()).max().unwrap_or(0);
            (0..windows)
                .map(|k| {
                    per.iter()
                        .map(|v| v.get(k).copied().unwrap_or(0))
                        .max()
                        .unwrap_or(0)
                })
                .sum::<u64>() as f64
                * 1e-9
        };
        Work {
            cpu_s: per_rank.iter().map(|r| sum(&r.0)).collect(),
            wall_s: per_rank.iter().map(|r| sum(&r.1)).collect(),
            critical_cpu_s: critical(per_rank.iter().map(|r| &r.0).collect()),
            critical_wall_s: critical(per_rank.iter().map(|r| &r.1).collect()),
            run_delay_s: Vec::new(),
        }
    }
}

pub use crate::memory::peak_rss_kib;

/// The flows' sender and receiver halves this rank holds.
fn held(sim: &Sim) -> (u64, u64) {
    (sim.flows.held() as u64, sim.rx.held() as u64)
}

/// Waiting without holding a core: a short spin, then yields, then
/// sleeps of 50 us. Open MPI's own waits spin, which on a machine whose
/// cores the ranks share (with each other or other work) takes the core
/// the rank being waited for needs; a window's work is milliseconds, so
/// 50 us of lateness costs little.
struct Backoff(u32);

impl Backoff {
    fn pause(&mut self) {
        self.0 += 1;
        if self.0 < 64 {
            std::hint::spin_loop();
        } else if self.0 < 128 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}

/// Waits for `r` ([`Backoff`]).
fn wait<'a, D: ?Sized, S: mpi::request::Scope<'a>>(mut r: mpi::request::Request<'a, D, S>) {
    let mut b = Backoff(0);
    loop {
        match r.test() {
            Ok(_) => return,
            Err(again) => r = again,
        }
        b.pause();
    }
}

/// The next message from rank `q` tagged `tag` ([`Backoff`]).
fn receive(world: &SimpleCommunicator, q: usize, tag: i32) -> Vec<u64> {
    let mut b = Backoff(0);
    let from = world.process_at_rank(q as i32);
    loop {
        if let Some((m, st)) = from.immediate_matched_probe_with_tag(tag) {
            return mpi::point_to_point::MatchedReceiveVec::matched_receive_vec((m, st)).0;
        }
        b.pause();
    }
}

/// The run's ranks as its coordinator sees them.
struct MpiRanks<'a> {
    world: &'a SimpleCommunicator,
    rank: usize,
    size: usize,
    n: usize,
    /// Each rank this one sends to (ascending), with the boxes (sending
    /// partition of this rank, receiving partition of that one) in order.
    send: Vec<(usize, Vec<(usize, usize)>)>,
    /// The ranks this one receives from (ascending).
    recv: Vec<usize>,
    /// Windows run, and the wall time spent exchanging and agreeing
    /// (waiting for the other ranks included).
    windows: u64,
    sync: Duration,
    /// Per window, the CPU and wall nanoseconds this rank spent running
    /// its partitions' events (from the end of the last agreement to the
    /// exchange), and where the current window's work began.
    work_cpu: Vec<u64>,
    work_wall: Vec<u64>,
    mark: (u64, Instant),
}

/// CPU nanoseconds of this process so far (every thread).
fn cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the call to fill
    if unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) } != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl<'a> MpiRanks<'a> {
    /// The ranks of `world` for `lead`'s partitions: who sends to whom
    /// from each partition's senders (the partitions with a link or a
    /// collective's dependency to it).
    fn new(world: &'a SimpleCommunicator, lead: &Sim) -> Self {
        let (rank, size) = (world.rank() as usize, world.size() as usize);
        let n = lead.n_parts;
        let senders: Vec<&[u32]> = std::iter::once(&lead.senders[..])
            .chain(lead.others.iter().map(|o| &o.senders[..]))
            .collect();
        let mut send: Vec<(usize, Vec<(usize, usize)>)> = Vec::new();
        let mut recv = std::collections::BTreeSet::new();
        for (to, from) in senders.iter().enumerate() {
            for &from in from.iter() {
                let from = from as usize;
                if to % size == rank && from % size != rank {
                    recv.insert(from % size);
                }
                if from % size == rank && to % size != rank {
                    let q = to % size;
                    match send.iter_mut().find(|(r, _)| *r == q) {
                        Some((_, boxes)) => boxes.push((from, to)),
                        None => send.push((q, vec![(from, to)])),
                    }
                }
            }
        }
        send.sort_by_key(|s| s.0);
        for (_, boxes) in &mut send {
            boxes.sort();
        }
        MpiRanks {
            world,
            rank,
            size,
            n,
            send,
            recv: recv.into_iter().collect(),
            windows: 0,
            sync: Duration::ZERO,
            work_cpu: Vec::new(),
            work_wall: Vec::new(),
            mark: (cpu_ns(), Instant::now()),
        }
    }
}

impl Ranks for MpiRanks<'_> {
    fn runs(&self, p: usize) -> bool {
        p % self.size == self.rank
    }

    fn exchange(&mut self, mail: &mut Shared<Vec<Msg>>, parity: usize) {
        let t0 = Instant::now();
        self.work_cpu.push(cpu_ns().saturating_sub(self.mark.0));
        self.work_wall
            .push(t0.duration_since(self.mark.1).as_nanos() as u64);
        self.windows += 1;
        let n = self.n;
        let base = parity * n * n;
        let bufs: Vec<Vec<u64>> = self
            .send
            .iter()
            .map(|(_, boxes)| {
                let mut out = Vec::new();
                for &(from, to) in boxes {
                    let b = &mut mail[base + from * n + to];
                    if b.is_empty() {
                        continue;
                    }
                    out.extend([from as u64, to as u64, b.len() as u64]);
                    for m in b.drain(..) {
                        wire::put_msg(&mut out, &m);
                    }
                }
                out
            })
            .collect();
        let world = self.world;
        mpi::request::scope(|sc| {
            let sent: Vec<_> = self
                .send
                .iter()
                .zip(&bufs)
                .map(|((q, _), b)| {
                    world
                        .process_at_rank(*q as i32)
                        .immediate_send_with_tag(sc, &b[..], TAG_WINDOW)
                })
                .collect();
            for &q in &self.recv {
                let v = receive(world, q, TAG_WINDOW);
                let mut r = Reader::new(&v);
                while !r.done() {
                    let from = r.next("a sending partition") as usize;
                    let to = r.next("a receiving partition") as usize;
                    assert!(
                        from % self.size == q && to % self.size == self.rank && to < n,
                        "window message from rank {q}: partitions {from} -> {to}"
                    );
                    let count = r.next("a message count");
                    let b = &mut mail[base + from * n + to];
                    for _ in 0..count {
                        b.push(wire::get_msg(&mut r));
                    }
                }
            }
            for s in sent {
                wait(s);
            }
        });
        self.sync += t0.elapsed();
    }

    fn figures(&mut self, mine: Figures) -> Figures {
        let t0 = Instant::now();
        let mut all = vec![0u64; 5 * self.size];
        let words = mine.words();
        mpi::request::scope(|sc| {
            wait(
                self.world
                    .immediate_all_gather_into(sc, &words[..], &mut all[..]),
            )
        });
        self.sync += t0.elapsed();
        self.mark = (cpu_ns(), Instant::now());
        all.chunks(5)
            .map(|w| Figures::from_words(w.try_into().expect("5 words")))
            .reduce(Figures::combine)
            .expect("a rank")
    }

    fn max(&mut self, v: u64) -> u64 {
        let mut out = 0u64;
        mpi::request::scope(|sc| {
            wait(self.world.immediate_all_reduce_into(
                sc,
                &v,
                &mut out,
                mpi::collective::SystemOperation::max(),
            ))
        });
        out
    }
}

/// Runs the scenario once with LB mode `lb` over the job's ranks, each
/// on `threads` threads (0: this machine's cores shared among the ranks
/// on it). Every rank calls it; rank 0 gets the report.
pub fn run(job: &Job, sc: &Scenario, lb: &str, progress: bool, threads: usize) -> Result<Outcome> {
    let (rank, size) = (job.rank(), job.size());
    let p = sc.params(lb)?;
    if (p.partitions as usize) < size {
        bail!(
            "partitions: {} is fewer than the MPI job's {size} ranks (rank r runs the partitions p with p mod {size} = r)",
            p.partitions
        );
    }
    let mut sim = Sim::new_rank(p, rank as u32, size as u32)?;
    sim.mark_uplinks();
    sim.progress = progress && rank == 0;
    sim.threads = match threads {
        0 => {
            let local = std::env::var("OMPI_COMM_WORLD_LOCAL_SIZE")
                .ok()
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(1);
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            (cores / local.max(1)).max(1)
        }
        t => t,
    };
    let t0 = Instant::now();
    if sim.others.is_empty() {
        // one partition (and so one rank): the serial run
        let wall = sim.run();
        return Ok(Outcome {
            report: Some(sim.report(wall)),
            peak_rss_kib: vec![peak_rss_kib()],
            held: vec![held(&sim)],
            windows: 0,
            sync_s: vec![0.0],
            work: Work::default(),
        });
    }
    let mut ranks = MpiRanks::new(&job.world, &sim);
    let fin = crate::partition::run_windows(&mut sim, &mut ranks);
    sim.print_footprint(&format!("rank {rank}: run"));
    let (windows, sync) = (ranks.windows, ranks.sync.as_secs_f64());
    if rank != 0 {
        // a message a partition (what a rank's partitions would make at
        // once is held here only one partition at a time), then the
        // rank's figures, its peak RSS with them
        for p in (rank..sim.n_parts).step_by(size) {
            let mut out = Vec::new();
            wire::put_partition(&mut out, &sim.others[p - 1]);
            job.world
                .process_at_rank(0)
                .send_with_tag(&out[..], TAG_PART);
        }
        let mut out = vec![
            peak_rss_kib(),
            sync.to_bits(),
            run_delay_ns(),
            held(&sim).0,
            held(&sim).1,
            ranks.work_cpu.len() as u64,
        ];
        out.extend(&ranks.work_cpu);
        out.extend(&ranks.work_wall);
        job.world
            .process_at_rank(0)
            .send_with_tag(&out[..], TAG_END);
        return Ok(Outcome {
            report: None,
            peak_rss_kib: Vec::new(),
            held: Vec::new(),
            windows,
            sync_s: Vec::new(),
            work: Work::default(),
        });
    }
    let (mut rss, mut sync_s) = (vec![peak_rss_kib()], vec![sync]);
    let mut delay = vec![run_delay_ns() as f64 * 1e-9];
    let mut halves = vec![held(&sim)];
    let mut work = vec![(
        std::mem::take(&mut ranks.work_cpu),
        std::mem::take(&mut ranks.work_wall),
    )];
    // what the report reads of every flow: rank 0's own, then the
    // others' as they come (one rank holds every flow: the report reads
    // them)
    let mut ends = (size > 1).then(|| {
        let e = sim.flow_record();
        sim.drop_halves();
        crate::memory::stage("rank 0: own flows' figures taken");
        e
    });
    for q in 1..size {
        for _ in (q..sim.n_parts).step_by(size) {
            let v = receive(&job.world, q, TAG_PART);
            let mut r = Reader::new(&v);
            let e = ends.as_mut().expect("a record with several ranks");
            wire::get_partition(&mut r, &mut sim, e);
            assert!(r.done(), "wire: rank {q}'s partition message has more");
        }
        let v = receive(&job.world, q, TAG_END);
        let mut r = Reader::new(&v);
        rss.push(r.next("a rank's peak RSS"));
        sync_s.push(f64::from_bits(r.next("a rank's time between windows")));
        delay.push(r.next("a rank's run delay") as f64 * 1e-9);
        halves.push((
            r.next("a rank's sender halves"),
            r.next("a rank's receiver halves"),
        ));
        let w = r.next("a rank's window count") as usize;
        let cpu = (0..w).map(|_| r.next("a window's CPU")).collect();
        let wall = (0..w).map(|_| r.next("a window's wall")).collect();
        work.push((cpu, wall));
        assert!(r.done(), "wire: rank {q}'s figures have more");
    }
    if let Some(mut e) = ends {
        e.finish();
        sim.ends = Some(e);
    }
    wire::merge_samples(&mut sim);
    crate::partition::gather(&mut sim, fin);
    let wall = t0.elapsed().as_secs_f64();
    if std::env::var_os("DATAPLANE_SIM_DUMP").is_some() {
        sim.dump();
    }
    let report = sim.report(wall);
    // rank 0's peak with what it gathered and the report made
    rss[0] = peak_rss_kib();
    Ok(Outcome {
        report: Some(report),
        peak_rss_kib: rss,
        held: halves,
        windows,
        sync_s,
        work: Work {
            run_delay_s: delay,
            ..Work::of(&work)
        },
    })
}
