//! fio's latency-target profiling (io_u.c lat_target_*, fio 3.33):
//! `latency_target`, `latency_window`, `latency_percentile`,
//! `latency_run`. The job starts at queue depth 1; after each window it
//! counts the I/Os that completed over the target: with at least the
//! percentile within it, the depth doubles (up to `iodepth`, then bisects
//! towards the last failing depth), else it halves towards the last good
//! one. A completion over the target with `latency_percentile=100` ramps
//! down at once, and at depth 1 fails the job with ETIMEDOUT. Once the
//! depth stops changing the job's statistics restart for one more window
//! at that depth and then the job ends (unless `latency_run`).
//! Written afresh from io_u.c.

#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct LatOpts {
    pub target_ns: u64,
    pub window_ns: u64,
    pub percentile: f64,
    pub run: bool,
}

impl Default for LatOpts {
    fn default() -> Self {
        LatOpts {
            target_ns: 0,
            window_ns: 0,
            percentile: 100.0,
            run: false,
        }
    }
}

/// One latency option: `Some(result)` if `key` is one, else None.
pub fn option(o: &mut LatOpts, key: &str, val: Option<&str>) -> Option<Result<(), String>> {
    let v = val
        .filter(|v| !v.is_empty())
        .ok_or_else(|| "needs a value".to_string());
    // FIO_OPT_STR_VAL_TIME without is_seconds: microseconds by default.
    let us = |v: Result<&str, String>| v.and_then(|v| crate::fio::parse_time_us(v, false));
    Some(match key {
        "latency_target" => us(v).map(|u| o.target_ns = u.saturating_mul(1000)),
        "latency_window" => us(v).map(|u| o.window_ns = u.saturating_mul(1000)),
        "latency_percentile" => v.and_then(|v| {
            let p: f64 = v
                .parse()
                .ok()
                .filter(|p| (0.0..=100.0).contains(p))
                .ok_or_else(|| format!("'{v}': a percentage from 0 to 100"))?;
            o.percentile = p;
            Ok(())
        }),
        "latency_run" => match val.unwrap_or("1") {
            "1" | "" => {
                o.run = true;
                Ok(())
            }
            "0" => {
                o.run = false;
                Ok(())
            }
            v => Err(format!("'{v}': 0 or 1")),
        },
        _ => return None,
    })
}

/// What the job does after a check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LatEvent {
    None,
    /// reset_all_stats(): the final window at the found depth begins.
    FinalRun,
    /// td->done: the job ends.
    Done,
    /// lat_fatal(): over the target at depth 1 (ETIMEDOUT).
    Fatal,
}

/// A job's search state (thread_data's latency_* fields).
#[derive(Clone, Debug)]
pub struct LatTarget {
    o: LatOpts,
    iodepth: u32,
    /// The depth the job may use now (latency_qd).
    pub qd: u32,
    qd_high: u32,
    qd_low: u32,
    stable: u32,
    /// Start of the window and the I/Os done then.
    ts: u64,
    ios0: u64,
    failed: u64,
    end_run: bool,
}

impl LatTarget {
    /// lat_target_init() at `now`; None without a target.
    pub fn new(o: &LatOpts, iodepth: u32, now: u64, ios: u64) -> Option<LatTarget> {
        (o.target_ns > 0).then(|| LatTarget {
            o: *o,
            iodepth: iodepth.max(1),
            qd: 1,
            qd_high: iodepth.max(1),
            qd_low: 1,
            stable: 0,
            ts: now,
            ios0: ios,
            failed: 0,
            end_run: false,
        })
    }

    fn new_cycle(&mut self, now: u64, ios: u64) {
        self.ts = now;
        self.ios0 = ios;
        self.failed = 0;
    }

    /// __lat_target_failed(): true at depth 1 (give up).
    fn ramp_down(&mut self, now: u64, ios: u64) -> bool {
        if self.qd == 1 {
            return true;
        }
        self.qd_high = self.qd;
        if self.qd == self.qd_low {
            self.qd_low -= 1;
        }
        self.qd = (self.qd + self.qd_low) / 2;
        self.stable = 0;
        self.new_cycle(now, ios);
        false
    }

    pub fn target_ns(&self) -> u64 {
        self.o.target_ns
    }

    /// A completion `lat_ns` long (io_u.c account_io_completion).
    pub fn complete(&mut self, lat_ns: u64, now: u64, ios: u64) -> LatEvent {
        if lat_ns <= self.o.target_ns {
            return LatEvent::None;
        }
        if self.o.percentile == 100.0 {
            if self.ramp_down(now, ios) {
                return LatEvent::Fatal;
            }
        } else {
            self.failed += 1;
        }
        LatEvent::None
    }

    /// lat_target_check() after an I/O, `ios` done so far.
    pub fn check(&mut self, now: u64, ios: u64) -> LatEvent {
        if now.saturating_sub(self.ts) < self.o.window_ns {
            return LatEvent::None;
        }
        let n = ios - self.ios0;
        let ok = 100.0 * (n.saturating_sub(self.failed)) as f64 / n as f64;
        if ok >= self.o.percentile {
            return self.success(now, ios);
        }
        // fio ramps down here too, but does not give up at depth 1.
        self.ramp_down(now, ios);
        LatEvent::None
    }

    /// lat_target_success().
    fn success(&mut self, now: u64, ios: u64) -> LatEvent {
        let qd = self.qd;
        self.qd_low = self.qd;
        if self.qd + 1 == self.qd_high {
            self.stable += 1;
            if self.stable >= 3 {
                self.qd_high += 1;
                self.stable = 0;
            }
        }
        if self.qd_high != self.iodepth {
            self.qd = (self.qd + self.qd_high) / 2;
        } else {
            self.qd *= 2;
        }
        self.qd = self.qd.min(self.iodepth);
        let mut ev = LatEvent::None;
        if !self.o.run && self.qd == qd {
            if self.end_run {
                return LatEvent::Done;
            }
            self.end_run = true;
            ev = LatEvent::FinalRun;
        }
        self.new_cycle(now, ios);
        ev
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn lt(pct: &str) -> LatTarget {
        let mut o = LatOpts::default();
        for (k, v) in [
            ("latency_target", "500000"),
            ("latency_window", "5000000"),
            ("latency_percentile", pct),
        ] {
            option(&mut o, k, Some(v)).unwrap().unwrap();
        }
        assert_eq!((o.target_ns, o.window_ns), (500_000_000, 5 * S));
        LatTarget::new(&o, 128, 0, 0).unwrap()
    }

    #[test]
    fn fast_device_doubles_to_iodepth_then_one_final_window() {
        let mut l = lt("99.9");
        let mut qds = vec![l.qd];
        let mut t = 0;
        let mut ios = 0;
        let ev = loop {
            t += 5 * S;
            ios += 1000;
            // Nothing before the window is over.
            assert_eq!(l.check(t - 1, ios), LatEvent::None);
            let ev = l.check(t, ios);
            if ev != LatEvent::None {
                qds.push(l.qd);
                if ev == LatEvent::Done {
                    break ev;
                }
                assert_eq!(ev, LatEvent::FinalRun);
                continue;
            }
            qds.push(l.qd);
        };
        assert_eq!(ev, LatEvent::Done);
        assert_eq!(qds, vec![1, 2, 4, 8, 16, 32, 64, 128, 128, 128]);
    }

    #[test]
    fn slow_completions_bisect_down_and_fail_at_depth_one() {
        let mut l = lt("99");
        // Up to 8 in three windows; then 2% over the target: halfway back
        // to the last good depth, 4.
        let (mut t, mut ios) = (0, 0);
        for _ in 0..3 {
            t += 5 * S;
            ios += 100;
            l.check(t, ios);
        }
        assert_eq!(l.qd, 8);
        for _ in 0..2 {
            l.complete(600_000_000, t, ios);
        }
        t += 5 * S;
        ios += 100;
        l.check(t, ios);
        assert_eq!(l.qd, 6);
        // latency_percentile=100: every slow completion ramps down now,
        // and at depth 1 the job fails.
        let mut l = lt("100");
        assert_eq!(l.complete(600_000_000, 0, 0), LatEvent::Fatal);
        assert_eq!(l.complete(400_000_000, 0, 0), LatEvent::None);
    }
}
