//! fio's per-job statistics as fio 3.3x keeps them (stat.h, stat.c,
//! io_u.c): the `io_stat` running mean/variance, the latency histogram in
//! fio's plat bucket layout (FIO_IO_U_PLAT_BITS=6: 64 buckets per power of
//! two, 29 groups), the ns/us/ms latency distribution and the bandwidth /
//! IOPS samples. Recording allocates nothing; everything that formats is
//! in `fio_output`.

/// Bits of a latency kept exactly in its bucket (fio's FIO_IO_U_PLAT_BITS).
pub const FIO_IO_U_PLAT_BITS: u32 = 6;
/// Buckets per group (FIO_IO_U_PLAT_VAL).
pub const FIO_IO_U_PLAT_VAL: usize = 1 << FIO_IO_U_PLAT_BITS;
/// Groups (FIO_IO_U_PLAT_GROUP_NR); latencies past the last land in the
/// last bucket, as in fio.
pub const FIO_IO_U_PLAT_GROUP_NR: usize = 29;
/// All buckets (FIO_IO_U_PLAT_NR).
pub const FIO_IO_U_PLAT_NR: usize = FIO_IO_U_PLAT_GROUP_NR * FIO_IO_U_PLAT_VAL;

/// fio's default `percentile_list` (options.c).
pub const DEFAULT_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// fio's default bwavgtime / iopsavgtime, in ns.
pub const BW_AVG_TIME_NS: u64 = 500_000_000;

/// The bucket of a latency (stat.c plat_val_to_idx): values below 128 are
/// their own bucket; above, the 6 bits after the most significant one pick
/// one of 64 buckets of the value's power of two.
#[inline]
pub fn plat_val_to_idx(val: u64) -> usize {
    let msb = if val == 0 {
        0
    } else {
        63 - val.leading_zeros()
    };
    if msb <= FIO_IO_U_PLAT_BITS {
        return val as usize;
    }
    let error_bits = msb - FIO_IO_U_PLAT_BITS;
    let base = ((error_bits + 1) as usize) << FIO_IO_U_PLAT_BITS;
    let offset = (FIO_IO_U_PLAT_VAL - 1) & (val >> error_bits) as usize;
    (base + offset).min(FIO_IO_U_PLAT_NR - 1)
}

/// The latency a bucket stands for (stat.c plat_idx_to_val): the middle
/// of its range; what fio prints as percentiles and json+ bin keys.
pub fn plat_idx_to_val(idx: usize) -> u64 {
    assert!(idx < FIO_IO_U_PLAT_NR);
    if idx < FIO_IO_U_PLAT_VAL << 1 {
        return idx as u64;
    }
    let error_bits = (idx >> FIO_IO_U_PLAT_BITS) as u32 - 1;
    let base = 1u64 << (error_bits + FIO_IO_U_PLAT_BITS);
    let k = (idx % FIO_IO_U_PLAT_VAL) as u64;
    // base + (k + 0.5) << error_bits; error_bits >= 1 here, so exact.
    base + (k << error_bits) + (1u64 << (error_bits - 1))
}

/// fio's `struct io_stat`: min, max and Welford's running mean and sum of
/// squared deviations (stat.c add_stat_sample).
#[derive(Clone, Copy, Debug)]
pub struct IoStat {
    pub min: u64,
    pub max: u64,
    pub samples: u64,
    pub mean: f64,
    pub s: f64,
}

impl Default for IoStat {
    fn default() -> Self {
        // init_thread_stat_min_vals: min starts at the largest value.
        IoStat {
            min: u64::MAX,
            max: 0,
            samples: 0,
            mean: 0.0,
            s: 0.0,
        }
    }
}

impl IoStat {
    #[inline]
    pub fn add(&mut self, data: u64) {
        let val = data as f64;
        self.max = self.max.max(data);
        self.min = self.min.min(data);
        let delta = val - self.mean;
        if delta != 0.0 {
            self.mean += delta / (self.samples as f64 + 1.0);
            self.s += delta * (val - self.mean);
        }
        self.samples += 1;
    }

    /// stat.c calc_lat: (min, max, mean, sample stddev), None without samples.
    pub fn calc(&self) -> Option<(u64, u64, f64, f64)> {
        if self.samples == 0 {
            return None;
        }
        let n = self.samples as f64;
        let dev = if n > 1.0 {
            (self.s / (n - 1.0)).sqrt()
        } else {
            0.0
        };
        Some((self.min, self.max, self.mean, dev))
    }

    /// stat.c sum_stat for latencies (pure_sum false): the parallel
    /// variance merge.
    pub fn merge(&mut self, src: &IoStat) {
        if src.samples == 0 {
            return;
        }
        let first = self.samples == 0;
        self.min = self.min.min(src.min);
        self.max = self.max.max(src.max);
        let (mean, s) = if first {
            (src.mean, src.s)
        } else {
            let (ns, nd) = (src.samples as f64, self.samples as f64);
            let delta = src.mean - self.mean;
            (
                (src.mean * ns + self.mean * nd) / (nd + ns),
                src.s + self.s + delta.powi(2) * (nd * ns) / (nd + ns),
            )
        };
        self.samples += src.samples;
        self.mean = mean;
        self.s = s;
    }

    /// stat.c sum_stat for bandwidth and IOPS (pure_sum true): group
    /// members' rates add up.
    pub fn sum(&mut self, src: &IoStat) {
        if src.samples == 0 {
            return;
        }
        if self.samples == 0 {
            *self = *src;
        } else {
            self.min += src.min;
            self.max += src.max;
            self.samples += src.samples;
            self.mean += src.mean;
            self.s += src.s;
        }
    }
}

/// Completion latencies of one direction: fio's clat io_stat and its plat
/// histogram.
#[derive(Clone, Debug)]
pub struct LatHist {
    plat: Box<[u64; FIO_IO_U_PLAT_NR]>,
    pub stat: IoStat,
}

impl Default for LatHist {
    fn default() -> Self {
        LatHist {
            plat: Box::new([0; FIO_IO_U_PLAT_NR]),
            stat: IoStat::default(),
        }
    }
}

impl LatHist {
    #[inline]
    pub fn add(&mut self, nsec: u64) {
        self.plat[plat_val_to_idx(nsec)] += 1;
        self.stat.add(nsec);
    }

    pub fn samples(&self) -> u64 {
        self.stat.samples
    }

    /// Adds another job's latencies (group_reporting).
    pub fn merge(&mut self, o: &LatHist) {
        for (a, b) in self.plat.iter_mut().zip(o.plat.iter()) {
            *a += b;
        }
        self.stat.merge(&o.stat);
    }

    /// stat.c calc_clat_percentiles: the list sorted, each percentile the
    /// value of the first bucket whose running count reaches p% of the
    /// samples. Empty without samples.
    pub fn percentiles(&self, list: &[f64]) -> Vec<(f64, u64)> {
        let nr = self.stat.samples;
        let mut plist: Vec<f64> = list.iter().copied().filter(|&p| p != 0.0).collect();
        if nr == 0 || plist.is_empty() {
            return Vec::new();
        }
        plist.sort_by(f64::total_cmp);
        let thresholds: Vec<u64> = plist.iter().map(|&p| x87_percentile_rank(p, nr)).collect();
        let mut out = Vec::with_capacity(plist.len());
        let mut sum = 0u64;
        for (i, &c) in self.plat.iter().enumerate() {
            sum += c;
            while out.len() < plist.len() && sum >= thresholds[out.len()] {
                out.push((plist[out.len()], plat_idx_to_val(i)));
            }
            if out.len() == plist.len() {
                break;
            }
        }
        out
    }

    /// The non-empty buckets as (representative latency, count): json+'s
    /// `bins`.
    pub fn bins(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.plat
            .iter()
            .enumerate()
            .filter(|(_, &c)| c != 0)
            .map(|(i, &c)| (plat_idx_to_val(i), c))
    }
}

/// The smallest count `sum` for which fio's `sum >= (long double) p /
/// 100.0 * nr` holds. fio computes the bound in long double, which on
/// x86-64 is the x87 format (64-bit significand, round to nearest even):
/// with f64 the 60th percentile of 25 samples would be the 15th, with
/// fio's rounding it is the 16th. Emulated exactly in integers.
pub fn x87_percentile_rank(p: f64, nr: u64) -> u64 {
    assert!(p > 0.0 && p.is_finite());
    // p = mant * 2^exp exactly.
    let bits = p.to_bits();
    let e = ((bits >> 52) & 0x7ff) as i32;
    let (mant, exp) = if e == 0 {
        (bits & ((1 << 52) - 1), -1074)
    } else {
        ((bits & ((1 << 52) - 1)) | (1 << 52), e - 1075)
    };
    // q = p / 100 rounded to a 64-bit significand: shift so that the
    // quotient has exactly 64 bits, then round on the remainder.
    let shift = 64 + 7 - (64 - mant.leading_zeros() as i32);
    let num = (mant as u128) << shift;
    let (mut q, r) = (num / 100, num % 100);
    let mut qexp = exp - shift;
    if q >> 64 != 0 {
        let lost = q & 1;
        q >>= 1;
        qexp += 1;
        q = round_half_even(q, lost == 1, r != 0);
    } else {
        q = round_half_even(q, r * 2 >= 100, r * 2 != 100);
    }
    if q >> 64 != 0 {
        q >>= 1;
        qexp += 1;
    }
    // t = q * nr rounded to a 64-bit significand.
    let prod = q * nr as u128;
    if prod == 0 {
        return 0;
    }
    let len = 128 - prod.leading_zeros() as i32;
    let (mut t, mut texp) = (prod, qexp);
    if len > 64 {
        let drop = len - 64;
        let half = 1u128 << (drop - 1);
        let rest = prod & ((1u128 << drop) - 1);
        t = round_half_even(prod >> drop, rest >= half, rest != half);
        texp += drop;
    }
    // Smallest integer >= t * 2^texp.
    if texp >= 0 {
        return u64::try_from(t.checked_shl(texp as u32).unwrap_or(u128::MAX)).unwrap_or(u64::MAX);
    }
    let sh = (-texp) as u32;
    if sh >= 128 {
        return 1;
    }
    ((t + (1u128 << sh) - 1) >> sh) as u64
}

/// Rounds `v` (already truncated) to nearest, ties to even: `above_half`
/// says the dropped part is >= one half, `not_tie` that it is not exactly
/// one half.
fn round_half_even(v: u128, above_half: bool, not_tie: bool) -> u128 {
    if above_half && (not_tie || v & 1 == 1) {
        v + 1
    } else {
        v
    }
}

/// fio's io_u_lat_n / io_u_lat_u / io_u_lat_m (io_u.c io_u_mark_latency):
/// completion latencies counted in ranges below 2, 4, 10, ... 1000 of each
/// unit, and 2000 / >=2000 ms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LatDist {
    pub n: [u64; 10],
    pub u: [u64; 10],
    pub m: [u64; 12],
}

/// Lower bounds of the ranges after the first (`2..3` is index 1).
const LAT_EDGES: [u64; 11] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000, 2000];

impl LatDist {
    #[inline]
    pub fn mark(&mut self, nsec: u64) {
        let idx = |v: u64| LAT_EDGES.iter().take_while(|&&e| v >= e).count();
        if nsec < 1000 {
            self.n[idx(nsec)] += 1;
        } else if nsec < 1_000_000 {
            self.u[idx(nsec / 1000)] += 1;
        } else {
            self.m[idx(nsec / 1_000_000)] += 1;
        }
    }

    pub fn add(&mut self, o: &LatDist) {
        for (a, b) in self
            .n
            .iter_mut()
            .chain(self.u.iter_mut())
            .chain(self.m.iter_mut())
            .zip(o.n.iter().chain(o.u.iter()).chain(o.m.iter()))
        {
            *a += b;
        }
    }
}

/// Bandwidth (KiB/s) and IOPS samples over fio's averaging window
/// (stat.c __add_samples), read and write. fio's helper thread takes them
/// every bwavgtime; here they are taken at the window boundaries of
/// simulated time, counting the I/O completed before each boundary.
#[derive(Clone, Debug, Default)]
pub struct RateSamples {
    pub bw: [IoStat; 2],
    pub iops: [IoStat; 2],
    next: u64,
    bytes: [u64; 2],
    ios: [u64; 2],
    stat_bytes: [u64; 2],
    stat_ios: [u64; 2],
}

impl RateSamples {
    /// Starts the windows at `t` (when the job's statistics start).
    pub fn start(&mut self, t: u64) {
        self.next = t + BW_AVG_TIME_NS;
    }

    /// One I/O of `dir` (0 read, 1 write) completed at `t`.
    #[inline]
    pub fn io_done(&mut self, t: u64, dir: usize, bytes: u64) {
        while t >= self.next {
            let spent_ms = BW_AVG_TIME_NS / 1_000_000;
            for d in 0..2 {
                let db = self.bytes[d] - self.stat_bytes[d];
                if db != 0 {
                    self.bw[d].add(db * 1000 / spent_ms / 1024);
                    self.stat_bytes[d] = self.bytes[d];
                }
                let di = self.ios[d] - self.stat_ios[d];
                if di != 0 {
                    self.iops[d].add(di * 1000 / spent_ms);
                    self.stat_ios[d] = self.ios[d];
                }
            }
            self.next += BW_AVG_TIME_NS;
        }
        self.bytes[dir] += bytes;
        self.ios[dir] += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plat_layout_matches_fio() {
        // Exact below 128; then 64 buckets per power of two.
        assert_eq!(plat_val_to_idx(0), 0);
        assert_eq!(plat_val_to_idx(127), 127);
        assert_eq!(plat_val_to_idx(128), 128);
        assert_eq!(plat_val_to_idx(129), 128);
        assert_eq!(plat_val_to_idx(130), 129);
        assert_eq!(plat_val_to_idx(256), 192);
        assert_eq!(plat_idx_to_val(128), 129);
        assert_eq!(plat_idx_to_val(192), 258);
        // Every bucket's value maps back to the bucket; values rise.
        for i in 0..FIO_IO_U_PLAT_NR {
            assert_eq!(plat_val_to_idx(plat_idx_to_val(i)), i, "bucket {i}");
            if i > 0 {
                assert!(plat_idx_to_val(i) > plat_idx_to_val(i - 1));
            }
        }
        // Keys real fio 3.33 printed in a json+ run here (67072, 132096,
        // 3227648 ns) are bucket values.
        for v in [67072u64, 132096, 3227648] {
            assert_eq!(plat_idx_to_val(plat_val_to_idx(v)), v);
        }
        // Past the last group: the last bucket.
        assert_eq!(plat_val_to_idx(u64::MAX), FIO_IO_U_PLAT_NR - 1);
    }

    #[test]
    fn io_stat_is_welford_with_sample_stddev() {
        let mut s = IoStat::default();
        for v in [2, 4, 4, 4, 5, 5, 7, 9] {
            s.add(v);
        }
        let (min, max, mean, dev) = s.calc().unwrap();
        assert_eq!((min, max), (2, 9));
        assert!((mean - 5.0).abs() < 1e-12);
        // Sum of squared deviations 32 over n-1 = 7.
        assert!((dev - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        // Merging two halves gives the whole.
        let (mut a, mut b) = (IoStat::default(), IoStat::default());
        for v in [2, 4, 4, 4] {
            a.add(v);
        }
        for v in [5, 5, 7, 9] {
            b.add(v);
        }
        a.merge(&b);
        let (_, _, m2, d2) = a.calc().unwrap();
        assert!((m2 - mean).abs() < 1e-12 && (d2 - dev).abs() < 1e-12);
        assert_eq!(IoStat::default().calc(), None);
    }

    #[test]
    fn percentiles_from_a_known_histogram() {
        // 100 samples: 1..=100 ns, each its own bucket (below 128).
        let mut h = LatHist::default();
        for v in (1..=100).rev() {
            h.add(v);
        }
        let p = h.percentiles(&[99.0, 1.0, 50.0, 99.99, 5.0]);
        // Sorted numerically, and the p-th value is the first v with
        // v >= p% of 100.
        assert_eq!(
            p,
            vec![(1.0, 1), (5.0, 5), (50.0, 50), (99.0, 99), (99.99, 100)]
        );
        // Past 128 the bucket's middle is printed: 1000 ns is in [1000,
        // 1008) (8 ns wide at 2^9), printed 1004; 1_000_000 in [999424,
        // 1007616) (8192 wide at 2^19), printed 1003520.
        let mut h = LatHist::default();
        h.add(1000);
        h.add(1_000_000);
        assert_eq!(
            h.percentiles(&[50.0, 100.0]),
            vec![(50.0, 1004), (100.0, 1003520)]
        );
        assert_eq!(h.bins().collect::<Vec<_>>(), vec![(1004, 1), (1003520, 1)]);
        assert!(LatHist::default()
            .percentiles(&DEFAULT_PERCENTILES)
            .is_empty());
    }

    // Ranks checked against a C program computing fio's expression with
    // x86-64 long double over 630,000 (p, nr) pairs; these are ones where
    // f64 arithmetic gives one less.
    #[test]
    fn percentile_rank_rounds_as_x87_long_double() {
        assert_eq!(x87_percentile_rank(60.0, 25), 16);
        assert_eq!(x87_percentile_rank(30.0, 50), 16);
        assert_eq!(x87_percentile_rank(60.0, 85), 52);
        assert_eq!(x87_percentile_rank(50.0, 2048), 1024);
        assert_eq!(x87_percentile_rank(99.99, 2048), 2048);
        assert_eq!(x87_percentile_rank(100.0, 7), 7);
        // So with 25 samples 1..=25 the 60th percentile is the 16th.
        let mut h = LatHist::default();
        for v in 1..=25 {
            h.add(v);
        }
        assert_eq!(h.percentiles(&[60.0]), vec![(60.0, 16)]);
    }

    #[test]
    fn latency_distribution_ranges() {
        let mut d = LatDist::default();
        for ns in [
            0,
            1,
            2,
            3,
            999,
            1000,
            1999,
            2000,
            999_999,
            1_000_000,
            1_999_999_999,
            2_000_000_000,
        ] {
            d.mark(ns);
        }
        assert_eq!(d.n, [2, 2, 0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(d.u, [2, 1, 0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(d.m, [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1]);
    }

    #[test]
    fn rate_samples_per_window() {
        let mut r = RateSamples::default();
        r.start(0);
        // 1 MiB read in each of the first two windows, then an I/O in the
        // fourth: window three has nothing and gets no sample.
        for i in 0..256 {
            r.io_done(i * 1_000_000, 0, 4096);
        }
        for i in 0..256 {
            r.io_done(500_000_000 + i * 1_000_000, 0, 4096);
        }
        r.io_done(1_600_000_000, 0, 4096);
        assert_eq!(r.bw[0].samples, 2);
        assert_eq!(r.bw[0].mean, 2048.0, "1 MiB per 500 ms is 2048 KiB/s");
        assert_eq!(r.iops[0].min, 512);
        assert_eq!(r.bw[1].samples, 0);
    }
}
