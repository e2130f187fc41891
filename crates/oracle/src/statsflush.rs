//! When the host's periodic memcg stats flush ran, from the
//! `memcg:memcg_flush_stats` tracepoint.
//!
//! Classic reclaim and workingset_test_recent() read memcg statistics as
//! last flushed, and flush_memcg_stats_dwork() flushes every FLUSH_TIME
//! (2 s) at a phase the workload does not choose; on the anon/file mixes
//! the outcome follows that phase (docs/fidelity/scenarios.md). The oracle
//! records, for each real run, when the first periodic flush came after
//! the start, and the model runs each real run's phase.
//!
//! The periodic flush is the only `force=1` flush of the root memcg
//! (__mem_cgroup_flush_stats(root_mem_cgroup, true)); the tracepoint is
//! enabled in a tracing instance of the oracle's own (its own buffer,
//! filter and clock: the host's tracing is not touched) on a tracefs
//! mounted inside scratch. Both are journaled: the instance is removed and
//! the mount detached after a kill -9.

use crate::journal::{self, Kind, Token};
use crate::scn::hostcfg::ScratchMount;
use std::fs;
use std::path::{Path, PathBuf};

/// FLUSH_TIME (mm/memcontrol.c).
pub const FLUSH_TIME_NS: u64 = 2_000_000_000;

/// A tracing instance recording the periodic memcg stats flushes, with
/// CLOCK_MONOTONIC timestamps. Fields drop in order: the instance is
/// removed (Drop) before the mount goes.
pub struct FlushWatch {
    inst: PathBuf,
    inst_token: Option<Token>,
    /// Held for its Drop (unmount), after the instance's.
    _mnt: ScratchMount,
}

impl FlushWatch {
    /// Mounts tracefs on `mnt` (a new directory inside scratch) and
    /// starts recording. An error says why (no tracefs, no such event).
    pub fn start(mnt: &Path) -> Result<FlushWatch, String> {
        let mnt = ScratchMount::tracefs(mnt)?;
        let ev = Path::new("events/memcg/memcg_flush_stats");
        if !mnt.dir.join(ev).is_dir() {
            return Err("no memcg:memcg_flush_stats tracepoint".into());
        }
        let inst = mnt
            .dir
            .join("instances")
            .join(format!("foliosim-{}", std::process::id()));
        let t = journal::record(Kind::TraceInstance, &inst, "")?;
        if let Err(e) = fs::create_dir(&inst) {
            t.done();
            return Err(format!("{}: {e}", inst.display()));
        }
        let w = FlushWatch {
            inst,
            inst_token: Some(t),
            _mnt: mnt,
        };
        let ev = w.inst.join(ev);
        write(&w.inst.join("trace_clock"), "mono")?;
        write(&ev.join("filter"), "force == 1")?;
        write(&ev.join("enable"), "1")?;
        Ok(w)
    }

    /// Waits (up to `limit`) for the first flush, so that a run starting
    /// after it has a flush before its start to count from when it is
    /// shorter than the period. False when none came.
    pub fn wait_first(&self, limit: std::time::Duration) -> Result<bool, String> {
        let t0 = std::time::Instant::now();
        loop {
            if !self.flushes()?.is_empty() {
                return Ok(true);
            }
            if t0.elapsed() > limit {
                return Ok(false);
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// The periodic flushes recorded since the start, in CLOCK_MONOTONIC
    /// ns (one every 2 s: the buffer holds hours of them).
    pub fn flushes(&self) -> Result<Vec<u64>, String> {
        let p = self.inst.join("trace");
        let text = fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        Ok(parse_flushes(&text))
    }
}

impl Drop for FlushWatch {
    fn drop(&mut self) {
        if let Some(t) = self.inst_token.take() {
            match fs::remove_dir(&self.inst) {
                Ok(()) => t.done(),
                Err(e) => eprintln!("foliosim oracle: removing {}: {e}", self.inst.display()),
            }
        }
    }
}

fn write(p: &Path, v: &str) -> Result<(), String> {
    fs::write(p, v).map_err(|e| format!("writing '{v}' to {}: {e}", p.display()))
}

/// The timestamps (ns) of the root memcg's forced flushes in a trace
/// file's text (`TASK-PID [CPU] FLAGS SECS.USECS: memcg_flush_stats:
/// memcg_id=1 ... force=1 ...`): the root memcg (id 1, the first the
/// memcg id allocator hands out) flushed with force set, which only the
/// periodic flusher does to the root.
pub fn parse_flushes(text: &str) -> Vec<u64> {
    let mut out = Vec::new();
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        let Some(at) = l.find(": memcg_flush_stats:") else {
            continue;
        };
        let fields = &l[at + ": memcg_flush_stats:".len()..];
        if !fields.split_whitespace().any(|f| f == "force=1")
            || !fields.split_whitespace().any(|f| f == "memcg_id=1")
        {
            continue;
        }
        let Some(ts) = l[..at].split_whitespace().last() else {
            continue;
        };
        let Some((s, us)) = ts.split_once('.') else {
            continue;
        };
        if let (Ok(s), Ok(frac)) = (s.parse::<u64>(), us.parse::<u64>()) {
            // The fraction's digits give its unit (usecs by default).
            let scale = 10u64.pow(9u32.saturating_sub(us.len() as u32));
            out.push(s * 1_000_000_000 + frac * scale);
        }
    }
    out
}

/// The first periodic flush at or after `start` (ns, same clock), as an
/// offset from it: the model's MmConfig::stats_flush_phase_ns. Without a
/// flush after the start (a run shorter than the period), the one the
/// last flush before it schedules.
pub fn phase_after(flushes: &[u64], start: u64) -> Option<u64> {
    if let Some(&f) = flushes.iter().find(|&&f| f >= start) {
        return Some((f - start).max(1));
    }
    let last = flushes.iter().copied().filter(|&f| f < start).max()?;
    Some((last + FLUSH_TIME_NS).saturating_sub(start).max(1))
}

/// The flusher's period as the recorded flushes show it (the mean of the
/// last intervals, at most five; the host's runs 2.02-2.05 s, jiffies and
/// queueing), FLUSH_TIME before two are seen.
pub fn period(flushes: &[u64]) -> u64 {
    let n = flushes.len().min(6);
    if n < 2 {
        return FLUSH_TIME_NS;
    }
    let last = &flushes[flushes.len() - n..];
    (last[n - 1] - last[0]) / (n as u64 - 1)
}

/// When to start a run (ns, same clock, not before `now`) so that the
/// flusher's next run comes `phase` after the start, predicted from the
/// last recorded flush and the period; `now` without a recorded flush.
pub fn start_for_phase(flushes: &[u64], now: u64, phase: u64) -> u64 {
    let Some(&last) = flushes.last() else {
        return now;
    };
    let p = period(flushes);
    let mut next = last + p;
    while next < now + phase {
        next += p;
    }
    next - phase
}

/// The phase run `i` of `n` aims at: the middle of the i-th of n equal
/// parts of the period, so that a case's runs sample the whole period
/// rather than wherever its setup time puts them.
pub fn target_phase(i: u32, n: u32, period: u64) -> u64 {
    (period * (2 * i as u64 + 1) / (2 * n.max(1) as u64)).max(1)
}

/// When run `i` of `n` starts (start_for_phase at its target_phase of the
/// measured period).
pub fn aimed_start(flushes: &[u64], now: u64, i: u32, n: u32) -> u64 {
    start_for_phase(flushes, now, target_phase(i, n, period(flushes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flushes_are_the_roots_forced_ones() {
        let t = "# tracer: nop\n\
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n\
    kworker/u8:3-19826   [001] ..... 32910.168824: memcg_flush_stats: memcg_id=1 stats_updates=192 force=1 needs_flush=1\n\
    kworker/u8:3-19826   [001] ..... 32912.184118: memcg_flush_stats: memcg_id=1 stats_updates=0 force=1 needs_flush=0\n\
    a.out-7   [000] ..... 32912.500000: memcg_flush_stats: memcg_id=5 stats_updates=9000 force=1 needs_flush=1\n\
    a.out-7   [000] ..... 32912.600000: memcg_flush_stats: memcg_id=1 stats_updates=9000 force=0 needs_flush=1\n\
    garbage line\n";
        assert_eq!(
            parse_flushes(t),
            vec![32_910_168_824_000, 32_912_184_118_000]
        );
    }

    #[test]
    fn phase_is_the_first_flush_after_the_start() {
        let f = [10_000_000_000, 12_030_000_000, 14_060_000_000];
        assert_eq!(phase_after(&f, 11_000_000_000), Some(1_030_000_000));
        assert_eq!(phase_after(&f, 12_030_000_000), Some(1));
        // After the last one seen: the next one it schedules.
        assert_eq!(phase_after(&f, 15_000_000_000), Some(1_060_000_000));
        assert_eq!(phase_after(&[], 1), None);
    }

    #[test]
    fn runs_are_aimed_at_evenly_spread_phases() {
        let f = [10_000_000_000, 12_030_000_000, 14_060_000_000];
        assert_eq!(period(&f), 2_030_000_000);
        assert_eq!(period(&f[..1]), FLUSH_TIME_NS);
        // Next flush predicted at 16.09 s: a 0.5 s phase starts at 15.59 s,
        // or one period later when that has passed.
        assert_eq!(
            start_for_phase(&f, 15_000_000_000, 500_000_000),
            15_590_000_000
        );
        assert_eq!(
            start_for_phase(&f, 15_700_000_000, 500_000_000),
            17_620_000_000
        );
        assert_eq!(start_for_phase(&[], 7, 500_000_000), 7);
        let p = 2_000_000_000;
        let t: Vec<u64> = (0..3).map(|i| target_phase(i, 3, p)).collect();
        assert_eq!(t, [333_333_333, 1_000_000_000, 1_666_666_666]);
        assert_eq!(target_phase(0, 1, p), 1_000_000_000);
        // Run 0 of 4 at a quarter period's middle (2.03 s / 8 after the
        // start), the next flush being 16.09 s.
        assert_eq!(
            aimed_start(&f, 15_000_000_000, 0, 4),
            16_090_000_000 - 253_750_000
        );
    }

    /// On a root host with tracefs, the watch sees the flusher (every
    /// 2 s) and leaves no instance or mount behind. Skipped elsewhere;
    /// under CI=true (root, a kernel with the tracepoint) that fails.
    #[test]
    fn the_watch_sees_the_periodic_flush_and_cleans_up() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            crate::require::skip("not root (it mounts tracefs)");
            return;
        }
        let dir = std::env::temp_dir().join(format!("foliosim-flushwatch-{}", std::process::id()));
        let w = match FlushWatch::start(&dir) {
            Ok(w) => w,
            Err(e) if e.contains("no memcg:memcg_flush_stats") => {
                crate::require::skip(&e);
                return;
            }
            Err(e) => panic!("{e}"),
        };
        let inst = w.inst.clone();
        assert!(w.wait_first(std::time::Duration::from_secs(5)).unwrap());
        // The second one: 2 s later, or later still on a loaded host (the
        // work is deferrable).
        let t0 = std::time::Instant::now();
        let f = loop {
            let f = w.flushes().unwrap();
            if f.len() >= 2 || t0.elapsed().as_secs() >= 10 {
                break f;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        assert!(f.len() >= 2, "{f:?}");
        for p in f.windows(2) {
            let d = p[1] - p[0];
            assert!((1_900_000_000..10_000_000_000).contains(&d), "{f:?}");
        }
        drop(w);
        assert!(!dir.exists(), "mount point removed");
        let mounts = fs::read_to_string("/proc/self/mounts").unwrap();
        assert!(!mounts.contains(dir.to_str().unwrap()));
        // The instance left tracefs itself: a new watch makes one of the
        // same name (mkdir would fail on a leftover).
        let w2 = FlushWatch::start(&dir).expect("instance name free again");
        assert_eq!(w2.inst, inst);
        drop(w2);
        assert!(!dir.exists());
    }
}
