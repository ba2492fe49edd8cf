//! PFC honouring as a NIC does it, for every sending role of the emulator:
//! a received PFC or PAUSE frame that concerns the gate's priority
//! ([`MacCtl::quanta_for_prio`], the switch's own reading) stops it for
//! `quanta x 512` bit times at the line rate, each frame reloading the
//! timer (802.1Qbb); a time of 0 (XON) resumes it at once. The gate keeps
//! the books: frames heard, pause episodes and their intervals.
//!
//! Times are nanoseconds on the caller's clock.

use dataplane_common::wire::macctl::{quanta_to_nanos, MacCtl};

/// What a MAC control frame was to the gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Heard {
    /// It paused (or kept pausing) the priority.
    Xoff,
    /// It resumed the priority (time 0).
    Xon,
    /// It did not concern the priority.
    Other,
}

/// One priority's pause state and its books.
#[derive(Clone, Debug)]
pub struct PauseGate {
    prio: usize,
    line_mbps: u64,
    /// Paused while `now < until_ns`.
    until_ns: u64,
    /// Start of the pause in progress.
    start_ns: Option<u64>,
    pub xoff_rx: u64,
    pub xon_rx: u64,
    /// MAC control frames that did not concern the priority.
    pub other_rx: u64,
    /// Transitions from sending to paused.
    pub episodes: u64,
    pub paused_ns: u64,
    pub longest_ns: u64,
    /// Every finished pause: (start, end).
    pub intervals: Vec<(u64, u64)>,
}

impl PauseGate {
    /// A gate for priority `prio` (0..8) on a link of `line_mbps`.
    pub fn new(prio: u8, line_mbps: u64) -> PauseGate {
        PauseGate {
            prio: usize::from(prio & 7),
            line_mbps,
            until_ns: 0,
            start_ns: None,
            xoff_rx: 0,
            xon_rx: 0,
            other_rx: 0,
            episodes: 0,
            paused_ns: 0,
            longest_ns: 0,
            intervals: Vec::new(),
        }
    }

    /// Takes a MAC control frame received at `now`.
    pub fn on_frame(&mut self, m: &MacCtl, now: u64) -> Heard {
        match m.quanta_for_prio(self.prio) {
            None => {
                self.other_rx += 1;
                Heard::Other
            }
            Some(0) => {
                self.xon_rx += 1;
                self.until_ns = self.until_ns.min(now);
                Heard::Xon
            }
            Some(q) => {
                self.xoff_rx += 1;
                if !self.paused(now) {
                    self.episodes += 1;
                    self.start_ns = Some(now);
                }
                self.until_ns = now + quanta_to_nanos(q, self.line_mbps);
                Heard::Xoff
            }
        }
    }

    /// Whether the priority is paused at `now`; a pause that has ended is
    /// booked (at its end time).
    pub fn paused(&mut self, now: u64) -> bool {
        if now < self.until_ns {
            return true;
        }
        if let Some(st) = self.start_ns.take() {
            self.book(st, self.until_ns.max(st));
        }
        false
    }

    /// When the pause in progress ends (meaningful while paused).
    pub fn until(&self) -> u64 {
        self.until_ns
    }

    /// Books the pause in progress as ending at `now` at the latest (the
    /// end of a run).
    pub fn finish(&mut self, now: u64) {
        if let Some(st) = self.start_ns.take() {
            self.book(st, self.until_ns.min(now).max(st));
        }
    }

    fn book(&mut self, start: u64, end: u64) {
        let d = end - start;
        self.paused_ns += d;
        self.longest_ns = self.longest_ns.max(d);
        self.intervals.push((start, end));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dataplane_common::wire::macctl::{OPCODE_PAUSE, OPCODE_PFC};

    fn pfc(cev: u16, t3: u16) -> MacCtl {
        let mut times = [0; 8];
        times[3] = t3;
        MacCtl {
            opcode: OPCODE_PFC,
            class_enable: cev,
            times,
        }
    }

    #[test]
    fn xoff_pauses_for_its_quanta_and_each_frame_reloads() {
        // 100 Mb/s: a quantum is 5120 ns
        let mut g = PauseGate::new(3, 100);
        assert_eq!(g.on_frame(&pfc(1 << 3, 10), 1_000), Heard::Xoff);
        assert!(g.paused(1_000 + 51_199));
        assert_eq!(g.on_frame(&pfc(1 << 3, 10), 40_000), Heard::Xoff);
        assert!(g.paused(60_000));
        assert!(!g.paused(40_000 + 51_200));
        assert_eq!((g.episodes, g.xoff_rx), (1, 2));
        assert_eq!(g.intervals, [(1_000, 91_200)]);
    }

    #[test]
    fn xon_resumes_at_once_and_other_priorities_are_ignored() {
        let mut g = PauseGate::new(3, 100);
        assert_eq!(g.on_frame(&pfc(1 << 4, 100), 0), Heard::Other);
        assert!(!g.paused(1));
        g.on_frame(&pfc(1 << 3, 0xffff), 10);
        assert_eq!(g.on_frame(&pfc(1 << 3, 0), 500), Heard::Xon);
        assert!(!g.paused(500));
        assert_eq!(g.intervals, [(10, 500)]);
        // a legacy PAUSE stops every priority
        let mut times = [0; 8];
        times[0] = 1;
        let pause = MacCtl {
            opcode: OPCODE_PAUSE,
            class_enable: 0,
            times,
        };
        assert_eq!(g.on_frame(&pause, 1_000), Heard::Xoff);
        assert!(g.paused(1_001));
        g.finish(2_000);
        assert_eq!(g.episodes, 2);
        // the run ended at 2000, inside the PAUSE
        assert_eq!(g.paused_ns, 490 + 1_000);
    }
}
