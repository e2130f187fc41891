//! fio's job control as a run goes (fio 3.33's backend.c run_threads() and
//! thread_main(), io_u.c rate_ddir() and usec_for_io(), flow.c,
//! steadystate.c, latency_target): when each job starts, sleeps, stops and
//! ends others. It keeps each job's clock and holds no kernel state: the
//! kernel-side driver (`foliosim::sim::fio`) asks it which job runs next
//! and whether an I/O may go, and tells it when one completes.

use std::collections::BTreeMap;

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

use super::{ExitWhat, FioJob, RateProcess};
use crate::fio_rand::{job_rand_seeds, FIO_RAND_POISSON_OFF};
use crate::lat_target::{LatEvent, LatTarget};
use crate::steadystate::SteadyState;

/// A job's run state (fio's TD_NOT_CREATED .. TD_EXITED, folded).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunState {
    Waiting,
    Running,
    Done,
}

/// One job's clock and control state (fio's thread_data timing fields).
pub struct JobRun {
    pub run: RunState,
    /// The job's own clock, ns: each job runs on a CPU of its own.
    pub t: u64,
    /// When the job started.
    pub epoch: u64,
    /// When runtime, an error or steady state ends the job.
    pub stop_at: Option<u64>,
    /// When ramp_time ends and statistics start.
    pub ramp_end: u64,
    /// fio's td->error (an errno); non-zero once the job failed.
    pub error: i32,
    /// I/Os done (both directions), thinktime's block counter.
    pub done_ios: u64,
    /// Bytes done per direction, ramp included (check_min_rate()'s).
    pub all_bytes: [u64; 2],
    /// latency_target's queue-depth search.
    pub lat: Option<LatTarget>,
    /// fio's rate state: bytes issued, next issue time (ns after the
    /// epoch) and the poisson clock, per direction.
    rate_bytes: [u64; 2],
    rate_next: [u64; 2],
    poisson_ns: [u64; 2],
    poisson: Pcg64Mcg,
    last_tt_blocks: u64,
    last_thinktime: u64,
    /// check_min_rate(): when and at how many bytes it last looked.
    rate_check_t: [u64; 2],
    rate_check_bytes: [u64; 2],
    flow_counter: u64,
    /// When the job's pending sleep began (thinktime, flow); u64::MAX when
    /// it is not asleep.
    sleep_from: u64,
    /// fio's last_issue: when the job last issued an I/O or sync, or a
    /// replayed log entry; what read_iolog's delays count from.
    pub last_issue: Option<u64>,
}

/// What the backend asks of the driver before a job's I/O may go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Issue {
    /// Issue it at the job's clock (which a rate wait may have moved).
    Go,
    /// Put it back: the job sleeps (flow, or a rate wait past its end).
    Hold,
    /// Put it back after one turn of fio's loop on the CPU (flow without
    /// flow_sleep).
    Spin,
}

/// What runs next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// This job's turn.
    Run(usize),
    /// Time moved on to a start delay: ask again.
    Again,
    /// Every job is done.
    End,
}

impl JobRun {
    fn new(j: &FioJob, seed: u64) -> JobRun {
        // fio's poisson rate clock (FIO_RAND_POISSON_OFF, index 15 of
        // td->rand_seeds); the draws themselves are not fio's.
        let poisson_seed = job_rand_seeds(j, seed)[FIO_RAND_POISSON_OFF];
        JobRun {
            run: RunState::Waiting,
            t: 0,
            epoch: 0,
            stop_at: None,
            ramp_end: 0,
            error: 0,
            done_ios: 0,
            all_bytes: [0; 2],
            lat: None,
            rate_bytes: [0; 2],
            rate_next: [0; 2],
            poisson_ns: [0; 2],
            poisson: Pcg64Mcg::seed_from_u64(poisson_seed),
            last_tt_blocks: 0,
            last_thinktime: 0,
            rate_check_t: [0; 2],
            rate_check_bytes: [0; 2],
            flow_counter: 0,
            sleep_from: u64::MAX,
            last_issue: None,
        }
    }

    /// The job starts at `now`: its clocks, runtime and latency search
    /// (lat_target_init(): the search starts at depth 1).
    fn start(&mut self, j: &FioJob, now: u64) {
        self.run = RunState::Running;
        self.t = now;
        self.epoch = now;
        self.last_thinktime = now;
        self.rate_check_t = [now; 2];
        self.ramp_end = now + j.ramp_time_ns;
        self.stop_at = j.runtime_ns.map(|r| now + j.ramp_time_ns + r);
        self.lat = j
            .lat_target
            .and_then(|o| LatTarget::new(&o, j.iodepth, now, 0));
        if j.ctl.create_only {
            // Only the setup phase (file layout, not modelled).
            self.run = RunState::Done;
        }
    }

    /// The job's turn has come: it is awake.
    #[inline]
    pub fn wake(&mut self) {
        self.sleep_from = u64::MAX;
    }

    /// Its runtime is over (or an error or steady state ended it).
    #[inline]
    pub fn stopped(&self) -> bool {
        self.stop_at.is_some_and(|stop| self.t >= stop)
    }

    /// read_iolog: iolog_delay() (or v2's `wait`) sleeps until the next
    /// entry is due, not past the job's end; without an issue yet there
    /// is nothing to count from (fio's last_issue is 0 then).
    pub fn iolog_stall(&mut self, s: crate::jobio::Stall) {
        use crate::jobio::Stall;
        let at = match s {
            Stall::AfterIssue(d) => self.last_issue.map_or(0, |l| l.saturating_add(d)),
            Stall::SinceStart(at) => at,
        };
        if at > self.t {
            self.sleep_from = self.t;
            self.t = self.stop_at.map_or(at, |stop| at.min(stop.max(self.t)));
        }
        if let Stall::AfterIssue(_) = s {
            self.last_issue = Some(self.t);
        }
    }

    /// The job fails with `errno` now: it issues nothing more.
    pub fn fail(&mut self, errno: i32) {
        self.error = errno;
        self.stop_at = Some(self.t);
    }

    /// rate_ddir(): sleep until direction `d` may issue; Hold when that is
    /// past the job's end.
    #[inline]
    fn rate_ddir(&mut self, j: &FioJob, d: usize) -> Issue {
        if j.ctl.rate_bps[d] == 0 {
            return Issue::Go;
        }
        let at = self.epoch + self.rate_next[d];
        if at > self.t {
            if self.stop_at.is_some_and(|stop| at > stop) {
                self.t = self.stop_at.unwrap_or(at);
                return Issue::Hold;
            }
            self.t = at;
        }
        Issue::Go
    }

    /// A job I/O of `len` bytes in direction `d` completed at the job's
    /// clock: usec_for_io()'s next due time, then handle_thinktime()'s
    /// decision. Returns the CPU time to spin before sleeping when the job
    /// thinks now (the driver spends it, then calls `think`).
    #[inline]
    pub fn io_done(&mut self, j: &FioJob, d: usize, len: u64) -> Option<u64> {
        self.all_bytes[d] += len;
        self.done_ios += 1;
        self.usec_for_io(j, d, len);
        let think_ns = j.thinktime_us * 1000;
        if think_ns == 0 {
            return None;
        }
        let c = &j.ctl;
        let mut stall = false;
        if c.thinktime_iotime_us > 0 {
            if self.t - self.last_thinktime >= (c.thinktime_iotime_us + j.thinktime_us) * 1000 {
                stall = true;
            } else if !c.thinktime_blocks_set {
                return None;
            }
        }
        // Issued and completed counts are taken as the same (exact for the
        // synchronous engines).
        if self.done_ios >= self.last_tt_blocks + c.thinktime_blocks {
            stall = true;
        }
        stall.then(|| (c.thinktime_spin_us * 1000).min(think_ns))
    }

    /// usec_for_io(): when the next I/O of direction `d` is due.
    #[inline]
    fn usec_for_io(&mut self, j: &FioJob, d: usize, len: u64) {
        let bps = j.ctl.rate_bps[d];
        if bps == 0 {
            return;
        }
        self.rate_bytes[d] += len;
        self.rate_next[d] = match j.ctl.rate_process {
            RateProcess::Linear => {
                (self.rate_bytes[d] as u128 * 1_000_000_000 / bps as u128) as u64
            }
            RateProcess::Poisson => {
                let iops = (bps / j.bs.max(1)).max(1);
                let u: f64 = self.poisson.gen::<f64>();
                let gap = (1_000_000_000 / iops) as f64 * -(1.0 - u).ln();
                self.poisson_ns[d] += gap as u64;
                self.poisson_ns[d]
            }
        };
    }

    /// handle_thinktime()'s sleep, after `spin` ns spent on the CPU up to
    /// `now`.
    pub fn think(&mut self, j: &FioJob, d: usize, now: u64, spin: u64) {
        let c = &j.ctl;
        let think_ns = j.thinktime_us * 1000;
        self.sleep_from = now;
        self.t = now + (think_ns - spin);
        let bps = c.rate_bps[d];
        if bps > 0 && c.rate_ignore_thinktime {
            // The bytes the rate would have allowed while asleep, less a
            // block so the next I/O goes now.
            let total_us = think_ns / 1000;
            let missed = bps * total_us / 1_000_000;
            let usperop = j.bs * 1_000_000 / bps;
            let over = if usperop <= total_us { j.bs } else { 0 };
            self.rate_bytes[d] = (self.rate_bytes[d] + missed).saturating_sub(over);
            self.poisson_ns[d] += think_ns;
        }
        self.last_tt_blocks = self.done_ios;
        if c.thinktime_iotime_us > 0 {
            self.last_thinktime = self.t;
        }
    }

    /// check_min_rate(), once per rate_cycle once statistics run
    /// (`started`): below rate_min the job fails with EIO.
    pub fn check_min_rate(&mut self, j: &FioJob, d: usize, started: bool) {
        if !started || j.ctl.rate_min_bps[d] == 0 {
            return;
        }
        let cycle = j.ctl.rate_cycle_ms * 1_000_000;
        let spent = self.t - self.rate_check_t[d];
        if self.t - self.epoch >= cycle && spent >= cycle {
            let done = self.all_bytes[d] - self.rate_check_bytes[d];
            let rate = done as u128 * 1_000_000_000 / spent as u128;
            if rate < j.ctl.rate_min_bps[d] as u128 {
                // td_verror(td, EIO, "check_min_rate")
                self.fail(5);
            }
            self.rate_check_t[d] = self.t;
            self.rate_check_bytes[d] = self.all_bytes[d];
        }
    }

    /// lat_target_check() after a recorded job I/O, at `now`: `over` is how
    /// many completions went over the target since the last call.
    /// Returns the search's event and the queue depth it allows.
    pub fn lat_target_check(&mut self, over: u64, now: u64) -> (LatEvent, u32) {
        let Some(l) = self.lat.as_mut() else {
            return (LatEvent::None, 0);
        };
        // The job's I/Os so far (not reset by the final window's
        // statistics reset).
        let done = self.done_ios + 1;
        let mut ev = LatEvent::None;
        for _ in 0..over {
            if l.complete(u64::MAX, now, done) == LatEvent::Fatal {
                ev = LatEvent::Fatal;
                break;
            }
        }
        if ev == LatEvent::None {
            ev = l.check(now, done);
        }
        let qd = l.qd;
        match ev {
            // lat_fatal(): "max latency exceeded", ETIMEDOUT.
            LatEvent::Fatal => {
                self.error = 110;
                self.stop_at = Some(now);
            }
            LatEvent::Done => self.stop_at = Some(now),
            LatEvent::None | LatEvent::FinalRun => {}
        }
        (ev, qd)
    }
}

/// steadystate_check()'s last sample of one job.
#[derive(Clone, Copy, Default)]
struct SsSample {
    at: u64,
    ios: u64,
    bytes: u64,
    ramped: bool,
    lat_sum: f64,
    lat_n: u64,
}

/// Steady state (steadystate_setup()): one window per job, or with
/// group_reporting on the last job of each group, checked at one interval
/// for the run (the last job's).
struct SteadyStates {
    on: bool,
    step: u64,
    next: u64,
    win: Vec<Option<SteadyState>>,
    prev: Vec<SsSample>,
    attained: Vec<bool>,
}

impl SteadyStates {
    fn new(jobs: &[FioJob]) -> SteadyStates {
        let mut win: Vec<Option<SteadyState>> = vec![None; jobs.len()];
        let mut prev_gid = None;
        for (x, j) in jobs.iter().enumerate() {
            let Some(o) = &j.ss else { continue };
            if j.group_reporting && prev_gid == Some(j.groupid) {
                if let Some(last) = (0..x).rev().find(|&y| win[y].is_some()) {
                    win[last] = None;
                }
            }
            prev_gid = Some(j.groupid);
            win[x] = SteadyState::new(o);
        }
        let step = jobs
            .iter()
            .rev()
            .find_map(|j| j.ss)
            .map_or(1000, |o| o.interval_ms)
            * 1_000_000;
        SteadyStates {
            on: jobs.iter().any(|j| j.ss.is_some()),
            step,
            next: step,
            win,
            prev: vec![SsSample::default(); jobs.len()],
            attained: vec![false; jobs.len()],
        }
    }
}

/// The group's sums in one steadystate_check() pass.
#[derive(Default)]
struct SsGroup {
    bw: u64,
    iops: u64,
    ramped: u32,
    lat_sum: f64,
    lat_n: u64,
}

/// fio's backend for one run: every job's state, the jobs still waiting
/// to start, flows and steady state.
pub struct Backend {
    pub td: Vec<JobRun>,
    /// The run's clock: the time of the job running now.
    pub now: u64,
    waiting: usize,
    /// fio's exitall is global: any job asking for it makes every job's
    /// exit terminate others (exitall_on_terminate).
    exitall: bool,
    /// fio's flows: per flow_id, the shared counter and total weight.
    flows: BTreeMap<u32, (u64, u64)>,
    ss: SteadyStates,
}

impl Backend {
    pub fn new(jobs: &[FioJob], seed: u64) -> Backend {
        let mut flows: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
        for j in jobs.iter().filter(|j| j.ctl.flow > 0) {
            flows.entry(j.ctl.flow_id).or_insert((0, 0)).1 += j.ctl.flow as u64;
        }
        Backend {
            td: jobs.iter().map(|j| JobRun::new(j, seed)).collect(),
            now: 0,
            waiting: jobs.len(),
            exitall: jobs.iter().any(|j| j.ctl.exitall),
            flows,
            ss: SteadyStates::new(jobs),
        }
    }

    /// A job that never starts (its setup failed before the run).
    pub fn never_starts(&mut self, i: usize) {
        if self.td[i].run == RunState::Waiting {
            self.waiting -= 1;
        }
        self.td[i].run = RunState::Done;
    }

    /// run_threads(): starts what may start now, in order (`on_start` is
    /// the driver's part of each start), then picks the job furthest behind
    /// in time (ties: lowest index), or moves time on to a start delay.
    #[inline]
    pub fn schedule(&mut self, jobs: &[FioJob], on_start: impl FnMut(usize, &mut JobRun)) -> Next {
        let next_delay = if self.waiting > 0 {
            self.start_ready(jobs, on_start)
        } else {
            None
        };
        let pick = (0..self.td.len())
            .filter(|&i| self.td[i].run == RunState::Running)
            .min_by_key(|&i| self.td[i].t);
        match (pick, next_delay) {
            (None, Some(d)) => {
                self.now = self.now.max(d);
                Next::Again
            }
            (Some(i), Some(d)) if d < self.td[i].t => {
                self.now = self.now.max(d);
                Next::Again
            }
            (None, None) => Next::End,
            (Some(i), _) => {
                self.now = self.now.max(self.td[i].t);
                Next::Run(i)
            }
        }
    }

    /// Starts the waiting jobs whose startdelay has passed, stopping at a
    /// stonewall while others run and skipping those waiting for another
    /// (wait_for); returns the earliest delay still ahead.
    fn start_ready(
        &mut self,
        jobs: &[FioJob],
        mut on_start: impl FnMut(usize, &mut JobRun),
    ) -> Option<u64> {
        let mut next_delay: Option<u64> = None;
        let now = self.now;
        for i in 0..self.td.len() {
            if self.td[i].run != RunState::Waiting {
                continue;
            }
            let j = &jobs[i];
            let d = j.ctl.startdelay_us * 1000;
            if d > now {
                next_delay = Some(next_delay.map_or(d, |x: u64| x.min(d)));
                continue;
            }
            if j.ctl.stonewall && self.td.iter().any(|s| s.run == RunState::Running) {
                break;
            }
            let waits = j.ctl.wait_for.as_deref().is_some_and(|w| {
                jobs.iter()
                    .zip(&self.td)
                    .any(|(o, s)| o.name == w && o.name != j.name && s.run != RunState::Done)
            });
            if waits {
                continue;
            }
            self.waiting -= 1;
            self.td[i].start(j, now);
            on_start(i, &mut self.td[i]);
        }
        next_delay
    }

    /// Before job `i`'s I/O in direction `d`: flow_threshold_exceeded()
    /// (hold back while the job is ahead of its share of the flow's I/Os),
    /// then rate_ddir().
    #[inline]
    pub fn may_issue(&mut self, i: usize, j: &FioJob, d: usize) -> Issue {
        let s = &mut self.td[i];
        if let Some(fl) = (j.ctl.flow > 0)
            .then(|| self.flows.get_mut(&j.ctl.flow_id))
            .flatten()
        {
            let total = fl.1 as f64;
            if (s.flow_counter as f64) / (fl.0 as f64) > j.ctl.flow as f64 / total {
                if j.ctl.flow_sleep_us == 0 {
                    // fio spins back to the top of its loop.
                    return Issue::Spin;
                }
                s.sleep_from = s.t;
                s.t += j.ctl.flow_sleep_us * 1000;
                return Issue::Hold;
            }
            fl.0 += 1;
            s.flow_counter += 1;
        }
        s.rate_ddir(j, d)
    }

    /// Job `i` has no more I/O: it exits.
    pub fn finish(&mut self, i: usize) {
        self.td[i].run = RunState::Done;
    }

    /// After job `i` exited: with exitall (or exitall_on_error and an
    /// error) it terminates the jobs exit_what names
    /// (fio_terminate_threads()); a sleeping one wakes at once.
    pub fn terminate_others(&mut self, i: usize, jobs: &[FioJob]) {
        let j = &jobs[i];
        if !(self.exitall || (j.ctl.exitall_on_error && self.td[i].error != 0)) {
            return;
        }
        let (gid, what, now) = (j.groupid, j.ctl.exit_what, self.now);
        for (o, os) in jobs.iter().zip(self.td.iter_mut()) {
            let hit = match what {
                ExitWhat::Group => o.groupid == gid,
                ExitWhat::Stonewall => os.run == RunState::Running,
                ExitWhat::All => true,
            };
            if hit && os.run != RunState::Done {
                if os.run == RunState::Waiting {
                    os.t = now;
                    self.waiting -= 1;
                }
                if os.sleep_from <= now && os.t > now {
                    os.t = now;
                }
                os.run = RunState::Done;
            }
        }
    }

    /// steadystate_check(), from fio's helper thread once an interval up to
    /// now. `clat(x)` is job x's completion latencies so far: (sum, count).
    #[inline]
    pub fn steadystate_check(&mut self, jobs: &[FioJob], clat: impl Fn(usize) -> (f64, u64)) {
        if self.ss.on && self.now >= self.ss.next {
            self.steadystate_pass(jobs, clat);
        }
    }

    fn steadystate_pass(&mut self, jobs: &[FioJob], clat: impl Fn(usize) -> (f64, u64)) {
        while self.now >= self.ss.next {
            let at = self.ss.next;
            self.ss.next += self.ss.step;
            let mut g = SsGroup::default();
            let mut prev_gid = None;
            for x in 0..jobs.len() {
                let Some(o) = &jobs[x].ss else { continue };
                if self.td[x].run != RunState::Running || self.ss.attained[x] {
                    continue;
                }
                if !jobs[x].group_reporting || prev_gid != Some(jobs[x].groupid) {
                    g = SsGroup::default();
                }
                prev_gid = Some(jobs[x].groupid);
                self.ss_sample(x, o.ramp_us, at, clat(x), &mut g);
                let Some(w) = self.ss.win[x].as_mut() else {
                    continue;
                };
                let lat = if g.lat_n > 0 {
                    g.lat_sum / g.lat_n as f64
                } else {
                    0.0
                };
                if g.ramped == 0 || !w.add(g.iops, g.bw, lat) {
                    continue;
                }
                self.ss_attained(jobs, x, at);
            }
        }
    }

    /// Job x's sample at `at` into its group's sums (once past ss_ramp).
    fn ss_sample(
        &mut self,
        x: usize,
        ramp_us: u64,
        at: u64,
        (lsum, ln): (f64, u64),
        g: &mut SsGroup,
    ) {
        let s = &self.td[x];
        let p = &mut self.ss.prev[x];
        if p.at < s.epoch {
            *p = SsSample {
                at: s.epoch,
                ramped: ramp_us == 0,
                ..SsSample::default()
            };
        }
        // Sampling starts one interval after ss_ramp.
        p.ramped |= (at - s.epoch) / 1000 >= ramp_us + self.ss.step / 1000;
        let ios = s.done_ios;
        let bytes = s.all_bytes[0] + s.all_bytes[1];
        let ms = ((at - p.at) / 1_000_000).max(1);
        if p.ramped {
            g.bw += 1000 * (bytes - p.bytes) / ms;
            g.iops += 1000 * (ios - p.ios) / ms;
            g.lat_sum += lsum - p.lat_sum;
            g.lat_n += ln.saturating_sub(p.lat_n);
            g.ramped += 1;
        }
        *p = SsSample {
            at,
            ios,
            bytes,
            ramped: p.ramped,
            lat_sum: lsum,
            lat_n: ln,
        };
    }

    /// fio_mark_td_terminate(): job x, or its group, reached steady state.
    fn ss_attained(&mut self, jobs: &[FioJob], x: usize, at: u64) {
        for y in 0..jobs.len() {
            let hit = if jobs[x].group_reporting {
                jobs[y].groupid == jobs[x].groupid
            } else {
                y == x
            };
            if hit {
                self.ss.attained[y] = true;
                let s = &mut self.td[y];
                s.stop_at = Some(s.stop_at.map_or(at, |t| t.min(at)));
            }
        }
    }
}
