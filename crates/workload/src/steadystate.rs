//! fio's steady-state job termination (steadystate.c, fio 3.33): options
//! `steadystate` / `ss` (criterion and limit), `ss_dur` and `ss_ramp`.
//! Once a second (fio's helper thread) each job, or each reporting group
//! with `group_reporting`, adds its IOPS and bandwidth over the last
//! interval to a window of `ss_dur` seconds of samples, starting one second
//! after `ss_ramp`. With the window full, every check tests the criterion:
//! the least-squares slope of the samples (`iops_slope`, `bw_slope`) or
//! their largest deviation from the mean (`iops`, `bw`), as a percentage
//! of the mean when the limit ends in `%`; below the limit, the job (the
//! whole group) is terminated. Written afresh from steadystate.c.
//!
//! Also fio 3.42's additions (commit e6ef1c10 and the check interval):
//! `lat` / `lat_slope` judge the mean completion latency of each interval,
//! and `steadystate_check_interval` (`ss_interval`, default 1 s) spaces
//! the checks; the window holds `ss_dur / interval` samples and sampling
//! starts one interval after `ss_ramp`. fio 3.33 refuses both options.

/// Parsed options (thread_options' ss_* fields).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct SsOpts {
    /// IOPS (else bandwidth) samples.
    pub iops: bool,
    /// Mean latency samples (fio 3.42's FIO_SS_LAT).
    pub lat: bool,
    /// Slope (else deviation) criterion.
    pub slope: bool,
    /// The limit is a percentage of the mean.
    pub pct: bool,
    pub limit: f64,
    /// Window in whole seconds (fio's ss_dur / 1000000).
    pub dur: u64,
    pub ramp_us: u64,
    /// Time between checks, in milliseconds (fio's ss_check_interval).
    pub interval_ms: u64,
}

impl Default for SsOpts {
    /// fio's default criterion, `iops_slope:0.01%`, off until ss_dur.
    fn default() -> Self {
        SsOpts {
            iops: true,
            lat: false,
            slope: true,
            pct: true,
            limit: 0.01,
            dur: 0,
            ramp_us: 0,
            interval_ms: 1000,
        }
    }
}

/// One steady-state option: `Some(result)` if `key` is one, else None.
pub fn option(o: &mut SsOpts, key: &str, val: Option<&str>) -> Option<Result<(), String>> {
    let v = val
        .filter(|v| !v.is_empty())
        .ok_or_else(|| "needs a value".to_string());
    Some(match key {
        "steadystate" | "ss" => v.and_then(|v| {
            let (crit, nr) = v.split_once(':').ok_or_else(|| {
                format!("'{v}': a threshold must be given with the criterion (e.g. iops:10%)")
            })?;
            let (iops, lat, slope) = match crit {
                "iops" => (true, false, false),
                "iops_slope" => (true, false, true),
                "bw" => (false, false, false),
                "bw_slope" => (false, false, true),
                "lat" => (false, true, false),
                "lat_slope" => (false, true, true),
                other => {
                    return Err(format!(
                        "bad criterion '{other}' (iops, iops_slope, bw, bw_slope, lat, lat_slope)"
                    ))
                }
            };
            let (num, pct) = match nr.split_once('%') {
                Some((n, _)) => (n.trim(), true),
                None => (nr.trim(), false),
            };
            let limit: f64 = num
                .parse()
                .ok()
                .filter(|x: &f64| x.is_finite())
                .ok_or_else(|| format!("'{v}': bad threshold '{nr}'"))?;
            *o = SsOpts {
                iops,
                lat,
                slope,
                pct,
                limit,
                ..*o
            };
            Ok(())
        }),
        "steadystate_duration" | "ss_dur" => v
            .and_then(|v| crate::fio::parse_time_us(v, true))
            .map(|us| o.dur = us / 1_000_000),
        "steadystate_ramp_time" | "ss_ramp" => v
            .and_then(|v| crate::fio::parse_time_us(v, true))
            .map(|us| o.ramp_us = us),
        "steadystate_check_interval" | "ss_interval" => v
            .and_then(|v| crate::fio::parse_time_us(v, true))
            .and_then(|us| match us / 1000 {
                0 => Err("the check interval must be at least 1 ms".into()),
                ms => {
                    o.interval_ms = ms;
                    Ok(())
                }
            }),
        _ => return None,
    })
}

/// One window of samples (fio's steadystate_data).
#[derive(Clone, Debug)]
pub struct SteadyState {
    o: SsOpts,
    data: Vec<u64>,
    head: usize,
    tail: usize,
    full: bool,
    sum_y: u64,
    sum_xy: u64,
    oldest_y: u64,
    sum_x: u64,
    sum_x_sq: u64,
    /// The criterion's last value.
    pub criterion: f64,
}

impl SteadyState {
    /// None when `o` has no window (ss_dur under one check interval).
    pub fn new(o: &SsOpts) -> Option<SteadyState> {
        // The window's samples: ss_dur over the interval in whole seconds.
        let d = o.dur.checked_div(o.interval_ms / 1000).unwrap_or(0);
        (d > 0).then(|| SteadyState {
            o: *o,
            data: vec![0; d as usize],
            head: 0,
            tail: 0,
            full: false,
            sum_y: 0,
            sum_xy: 0,
            oldest_y: 0,
            sum_x: d * (d - 1) / 2,
            sum_x_sq: (d - 1) * d * (2 * d - 1) / 6,
            criterion: 0.0,
        })
    }

    /// Adds one interval's IOPS, bandwidth and mean latency (ns); true
    /// once steady.
    pub fn add(&mut self, iops: u64, bw: u64, lat: f64) -> bool {
        let v = if self.o.lat {
            lat as u64
        } else if self.o.iops {
            iops
        } else {
            bw
        };
        let dur = self.data.len();
        self.data[self.tail] = v;
        if self.full || self.tail as i64 - self.head as i64 == dur as i64 - 1 {
            if !self.full {
                self.sum_y = self.data.iter().sum();
                if self.o.slope {
                    self.sum_xy = (0..dur)
                        .map(|i| i as u64 * self.data[(self.head + i) % dur])
                        .sum();
                }
                self.full = true;
            } else {
                self.sum_y = self.sum_y - self.oldest_y + v;
                if self.o.slope {
                    // fio's update: every x moves down by one.
                    self.sum_xy = (self.sum_xy + dur as u64 * v).wrapping_sub(self.sum_y);
                }
            }
            self.oldest_y = self.data[self.head];
            let n = dur as f64;
            let mean = self.sum_y as f64 / n;
            let steady = if self.o.slope {
                let slope = (self.sum_xy as f64 - self.sum_x as f64 * self.sum_y as f64 / n)
                    / (self.sum_x_sq as f64 - self.sum_x as f64 * self.sum_x as f64 / n);
                self.criterion = if self.o.pct {
                    100.0 * slope / mean
                } else {
                    slope
                };
                self.criterion.abs() < self.o.limit
            } else {
                let dev = self
                    .data
                    .iter()
                    .map(|&x| (x as f64 - mean).abs())
                    .fold(0.0, f64::max);
                self.criterion = if self.o.pct { 100.0 * dev / mean } else { dev };
                self.criterion < self.o.limit
            };
            if steady {
                return true;
            }
        }
        self.tail = (self.tail + 1) % dur;
        if self.tail <= self.head {
            self.head = (self.head + 1) % dur;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(s: &str, dur: &str) -> SsOpts {
        let mut o = SsOpts::default();
        option(&mut o, "ss", Some(s)).unwrap().unwrap();
        option(&mut o, "ss_dur", Some(dur)).unwrap().unwrap();
        o
    }

    #[test]
    fn deviation_needs_a_full_window_within_the_limit() {
        let mut ss = SteadyState::new(&opts("iops:10%", "3")).unwrap();
        // Not before the window is full, however flat.
        assert!(!ss.add(100, 0, 0.0));
        assert!(!ss.add(100, 0, 0.0));
        // 100, 100, 150: mean 116.7, deviation 33.3 = 28.6%.
        assert!(!ss.add(150, 0, 0.0));
        assert!((ss.criterion - 100.0 * (100.0 / 3.0) / (350.0 / 3.0)).abs() < 1e-9);
        // 100, 150, 105 and 150, 105, 104 still deviate.
        assert!(!ss.add(105, 0, 0.0));
        assert!(!ss.add(104, 0, 0.0));
        // 105, 104, 106: mean 105, deviation 1 (0.95%).
        assert!(ss.add(106, 0, 0.0));
        assert!(
            (ss.criterion - 100.0 / 105.0).abs() < 1e-9,
            "{}",
            ss.criterion
        );
    }

    #[test]
    fn slope_of_a_rising_then_flat_series() {
        let mut ss = SteadyState::new(&opts("bw_slope:1%", "4")).unwrap();
        for bw in [100, 200, 300] {
            assert!(!ss.add(0, bw, 0.0));
        }
        // 100..400: slope 100 per second against mean 250: 40%.
        assert!(!ss.add(0, 400, 0.0));
        assert!((ss.criterion - 40.0).abs() < 1e-9, "{}", ss.criterion);
        // 200, 300, 400, 400: 70/325 = 21.5%; 300, 400, 400, 400: 8%.
        assert!(!ss.add(0, 400, 0.0));
        assert!((ss.criterion - 100.0 * 70.0 / 325.0).abs() < 1e-9);
        assert!(!ss.add(0, 400, 0.0));
        // 400, 400, 400, 400: slope 0.
        assert!(ss.add(0, 400, 0.0));
        assert_eq!(ss.criterion, 0.0);
    }

    #[test]
    fn option_errors() {
        let mut o = SsOpts::default();
        let e = |k: &str, v: &str, o: &mut SsOpts| option(o, k, Some(v)).unwrap().unwrap_err();
        assert!(e("ss", "iops", &mut o).contains("threshold"));
        assert!(e("ss", "clat:5%", &mut o).contains("bad criterion"));
        assert!(e("ss_interval", "100us", &mut o).contains("at least 1 ms"));
        assert!(e("ss", "iops:x%", &mut o).contains("bad threshold"));
        assert!(option(&mut o, "ss_foo", Some("1")).is_none());
        option(&mut o, "ss_dur", Some("500ms")).unwrap().unwrap();
        assert!(SteadyState::new(&o).is_none());
    }

    #[test]
    fn latency_window_of_intervals() {
        // fio 3.42's example: lat:5% over 300 s checked every 10 s: 30
        // samples; latencies within 5% of their mean are steady.
        let mut o = opts("lat:5%", "300");
        option(&mut o, "steadystate_check_interval", Some("10"))
            .unwrap()
            .unwrap();
        assert_eq!(o.interval_ms, 10_000);
        let mut ss = SteadyState::new(&o).unwrap();
        for k in 0..29 {
            assert!(!ss.add(1, 1, 1000.0 + (k % 2) as f64 * 40.0));
        }
        assert!(ss.add(1, 1, 1000.0));
        assert!(ss.criterion < 5.0 && ss.criterion > 0.0, "{}", ss.criterion);
    }
}
