//! Access-pattern generators for scenario steps (`scenario::Pattern`): which
//! page (or block) of a region each access visits. No kernel model here; the
//! model's driver and a real executor draw the same sequences from the same
//! seed. Each generator owns its random state, so a thread's sequence does
//! not depend on how threads interleave. `next()` allocates nothing.

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

use crate::fio_rand::Zipf;
use crate::scenario::Pattern;

/// YCSB's ScrambledZipfianGenerator constants: the zipfian runs over
/// ITEM_COUNT items whatever the key space, and its zeta for theta 0.99 is
/// precomputed (ZETAN).
pub const YCSB_ITEM_COUNT: u64 = 10_000_000_000;
pub const YCSB_ZETAN: f64 = 26.46902820178302;
pub const YCSB_USED_ZIPFIAN_CONSTANT: f64 = 0.99;

/// A seed for one stream: the run's seed mixed with the drawing thread's
/// identity (process, instance, thread, copy, ...) and the step's line, so
/// every stream is distinct and fixed by the scenario alone.
pub fn stream_seed(run_seed: u64, identity: &[u64]) -> u64 {
    // splitmix64 over the words: cheap, well mixed, stable across builds.
    let mut h = run_seed ^ 0x9E37_79B9_7F4A_7C15;
    for &w in identity {
        h = splitmix64(h ^ w);
    }
    h
}

/// SplitMix64's finalizer: a cheap, well-mixed hash of a word (stream
/// seeds here, fio's job draws, which LSM level holds a key).
pub fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// YCSB's Utils.fnvhash64: FNV-1a over the 8 bytes of the value, low byte
/// first, made non-negative with Java's Math.abs.
pub fn fnvhash64(mut val: u64) -> u64 {
    const FNV_OFFSET_BASIS_64: u64 = 0xCBF2_9CE4_8422_2325;
    const FNV_PRIME_64: u64 = 1_099_511_628_211;
    let mut h = FNV_OFFSET_BASIS_64;
    for _ in 0..8 {
        h ^= val & 0xff;
        val >>= 8;
        h = h.wrapping_mul(FNV_PRIME_64);
    }
    (h as i64).wrapping_abs() as u64
}

/// sum_{i=1}^{n} i^-theta. Exact for small n; past that the first terms
/// exactly and the tail by Euler-Maclaurin (YCSB sums all 10^10 terms for a
/// theta other than 0.99, which would take minutes).
fn zeta(n: u64, theta: f64) -> f64 {
    const EXACT: u64 = 100_000;
    let m = n.min(EXACT);
    let mut s = 0.0;
    for i in 1..=m {
        s += (i as f64).powf(-theta);
    }
    if n > m {
        let (a, b) = (m as f64, n as f64);
        let integral = if (theta - 1.0).abs() < 1e-12 {
            b.ln() - a.ln()
        } else {
            (b.powf(1.0 - theta) - a.powf(1.0 - theta)) / (1.0 - theta)
        };
        let f = |x: f64| x.powf(-theta);
        let df = |x: f64| -theta * x.powf(-theta - 1.0);
        // sum_{m+1}^{n} f = integral + (f(n) - f(m)) / 2 + (f'(n) - f'(m)) / 12
        s += integral + (f(b) - f(a)) / 2.0 + (df(b) - df(a)) / 12.0;
    }
    s
}

/// YCSB's ZipfianGenerator over [0, items) (Gray et al.'s algorithm).
#[derive(Clone, Debug)]
struct YcsbZipfian {
    items: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
}

impl YcsbZipfian {
    fn new(items: u64, theta: f64, zetan: f64) -> Self {
        let zeta2theta = zeta(2, theta);
        YcsbZipfian {
            items,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta: (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta2theta / zetan),
        }
    }

    fn next(&self, u: f64) -> u64 {
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1;
        }
        (self.items as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64
    }
}

#[derive(Clone, Debug)]
enum Kind {
    Seq,
    Append,
    Random,
    Zipf(Box<Zipf>),
    Ycsb(YcsbZipfian),
    Nurand { a: u64, c: u64 },
    HotCold { hot_pct: u32, hot_pages: u64 },
    Stride { stride: u64 },
}

/// One step's stream of page (or block) indices in [0, n).
#[derive(Clone, Debug)]
pub struct AccessGen {
    kind: Kind,
    n: u64,
    rng: Pcg64Mcg,
    /// Accesses drawn since the last `restart()` (the sequential patterns'
    /// position).
    i: u64,
}

impl AccessGen {
    /// A generator over `n` items (n > 0). Errors name what is wrong with
    /// the pattern's parameters for this region.
    pub fn new(pattern: &Pattern, n: u64, seed: u64) -> Result<AccessGen, String> {
        if n == 0 {
            return Err("the region has no pages".into());
        }
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let kind = match *pattern {
            Pattern::Seq => Kind::Seq,
            Pattern::Append => Kind::Append,
            Pattern::Random => Kind::Random,
            Pattern::Zipf { theta } => {
                if !(theta > 0.0 && theta.is_finite()) || theta == 1.0 {
                    return Err(format!("zipf theta {theta}: must be > 0 and not 1"));
                }
                // fio's zipf (lib/zipf.c): its own 32-bit generator.
                Kind::Zipf(Box::new(Zipf::new_zipf(n, theta, rng.gen::<u32>())))
            }
            Pattern::Ycsb { theta } => {
                if !(theta > 0.0 && theta < 1.0) {
                    return Err(format!("ycsb theta {theta}: must be in (0, 1)"));
                }
                // new ZipfianGenerator(0, ITEM_COUNT, theta[, ZETAN]): items
                // is max - min + 1.
                let items = YCSB_ITEM_COUNT + 1;
                let zetan = if theta == YCSB_USED_ZIPFIAN_CONSTANT {
                    YCSB_ZETAN
                } else {
                    zeta(items, theta)
                };
                Kind::Ycsb(YcsbZipfian::new(items, theta, zetan))
            }
            Pattern::Nurand { a } => {
                // TPC-C 2.1.6: C is a run-time constant drawn in [0, A].
                let c = rng.gen_range(0..=a);
                Kind::Nurand { a, c }
            }
            Pattern::HotCold {
                hot_pct,
                hot_size_pct,
            } => {
                if hot_pct > 100 || hot_size_pct > 100 {
                    return Err("hotcold percentages must be at most 100".into());
                }
                let hot_pages = (n as u128 * hot_size_pct as u128 / 100) as u64;
                Kind::HotCold { hot_pct, hot_pages }
            }
            Pattern::Stride { stride } => {
                if stride == 0 {
                    return Err("stride must be > 0".into());
                }
                Kind::Stride { stride }
            }
        };
        Ok(AccessGen { kind, n, rng, i: 0 })
    }

    /// Items in the region: one pass is this many accesses.
    pub fn len(&self) -> u64 {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The step runs again (a loop): `seq` starts over from the first
    /// page; `append` and the random streams go on where they were.
    pub fn restart(&mut self) {
        if !matches!(self.kind, Kind::Append) {
            self.i = 0;
        }
    }

    /// The next index, in [0, n).
    #[inline]
    pub fn next_index(&mut self) -> u64 {
        let n = self.n;
        let i = self.i;
        self.i += 1;
        match &mut self.kind {
            Kind::Seq | Kind::Append => i % n,
            Kind::Random => self.rng.gen_range(0..n),
            Kind::Zipf(z) => z.next_zipf(),
            Kind::Ycsb(z) => {
                // ScrambledZipfianGenerator.nextValue(): min + fnvhash64(r) % itemcount.
                let u: f64 = self.rng.gen();
                fnvhash64(z.next(u)) % n
            }
            Kind::Nurand { a, c } => {
                // NURand(A, 0, n-1) = (((random(0, A) | random(0, n-1)) + C) % n.
                let x = self.rng.gen_range(0..=*a);
                let y = self.rng.gen_range(0..n);
                ((x | y).wrapping_add(*c)) % n
            }
            Kind::HotCold { hot_pct, hot_pages } => {
                let hot = self.rng.gen_range(0..100u32) < *hot_pct;
                if (hot && *hot_pages > 0) || *hot_pages == n {
                    self.rng.gen_range(0..*hot_pages)
                } else {
                    *hot_pages + self.rng.gen_range(0..n - *hot_pages)
                }
            }
            Kind::Stride { stride } => {
                // Lap l visits l, l+stride, l+2*stride... A lap of page
                // offsets r (r < stride) holds ceil((n - r) / stride) pages.
                let s = *stride;
                let k = i % n;
                let mut lap = 0;
                let mut left = k;
                loop {
                    let in_lap = n.saturating_sub(lap).div_ceil(s);
                    if left < in_lap {
                        return lap + left * s;
                    }
                    left -= in_lap;
                    lap += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draw(p: &Pattern, n: u64, seed: u64, k: usize) -> Vec<u64> {
        let mut g = AccessGen::new(p, n, seed).unwrap();
        (0..k).map(|_| g.next_index()).collect()
    }

    #[test]
    fn seq_and_stride_visit_every_page_once_per_pass() {
        assert_eq!(draw(&Pattern::Seq, 4, 1, 6), vec![0, 1, 2, 3, 0, 1]);
        let s = draw(&Pattern::Stride { stride: 3 }, 7, 1, 7);
        assert_eq!(s, vec![0, 3, 6, 1, 4, 2, 5]);
        let mut sorted = draw(&Pattern::Stride { stride: 4 }, 1000, 1, 1000);
        sorted.sort();
        assert_eq!(sorted, (0..1000).collect::<Vec<_>>());
    }

    #[test]
    fn append_goes_on_across_restarts_where_seq_starts_over() {
        let mut seq = AccessGen::new(&Pattern::Seq, 5, 1).unwrap();
        let mut app = AccessGen::new(&Pattern::Append, 5, 1).unwrap();
        let run = |g: &mut AccessGen| {
            let mut v = Vec::new();
            for _ in 0..3 {
                g.restart();
                v.push(g.next_index());
                v.push(g.next_index());
            }
            v
        };
        assert_eq!(run(&mut seq), vec![0, 1, 0, 1, 0, 1]);
        assert_eq!(run(&mut app), vec![0, 1, 2, 3, 4, 0]);
    }

    #[test]
    fn streams_are_fixed_by_seed_and_differ_between_seeds() {
        for p in [
            Pattern::Random,
            Pattern::Zipf { theta: 1.2 },
            Pattern::Ycsb { theta: 0.99 },
            Pattern::Nurand { a: 255 },
            Pattern::HotCold {
                hot_pct: 90,
                hot_size_pct: 10,
            },
        ] {
            let a = draw(&p, 5000, 7, 200);
            assert_eq!(a, draw(&p, 5000, 7, 200), "{p:?}");
            assert_ne!(a, draw(&p, 5000, 8, 200), "{p:?}");
            assert!(a.iter().all(|&x| x < 5000), "{p:?}");
        }
    }

    #[test]
    fn skewed_patterns_are_skewed() {
        let n = 10_000;
        let count_top = |v: &[u64]| {
            let mut c = vec![0u32; n as usize];
            for &x in v {
                c[x as usize] += 1;
            }
            c.sort_unstable_by(|a, b| b.cmp(a));
            c[..(n as usize / 100)].iter().sum::<u32>()
        };
        // Uniform: the top 1% of pages get a little over 1% of 100k draws.
        let uni = count_top(&draw(&Pattern::Random, n, 3, 100_000));
        let y = count_top(&draw(&Pattern::Ycsb { theta: 0.99 }, n, 3, 100_000));
        let z = count_top(&draw(&Pattern::Zipf { theta: 1.2 }, n, 3, 100_000));
        assert!(uni < 3_000, "{uni}");
        // YCSB's zipfian runs over 10^10 ranks: the 100 hottest carry
        // zeta(100, 0.99) / ZETAN, about 19% (hash collisions add a little).
        assert!((16_000..30_000).contains(&y), "{y}");
        assert!(z > 50_000, "{z}");
        // hotcold 90/10: ~90% of draws land in the first 10% of pages.
        let hc = draw(
            &Pattern::HotCold {
                hot_pct: 90,
                hot_size_pct: 10,
            },
            n,
            3,
            100_000,
        );
        let hot = hc.iter().filter(|&&x| x < n / 10).count();
        assert!((88_000..92_000).contains(&hot), "{hot}");
    }

    #[test]
    fn zeta_tail_matches_the_exact_sum() {
        let exact: f64 = (1..=300_000u64).map(|i| (i as f64).powf(-0.8)).sum();
        assert!((zeta(300_000, 0.8) - exact).abs() < 1e-6);
        // YCSB's precomputed ZETAN is zeta(10^10 + 1, 0.99).
        assert!((zeta(YCSB_ITEM_COUNT + 1, 0.99) - YCSB_ZETAN).abs() < 1e-6);
    }

    #[test]
    fn fnvhash64_is_ycsbs() {
        // FNV-1a of eight zero bytes, as YCSB's loop computes it.
        let mut h: u64 = 0xCBF2_9CE4_8422_2325;
        for _ in 0..8 {
            h = h.wrapping_mul(1_099_511_628_211);
        }
        assert_eq!(fnvhash64(0), (h as i64).wrapping_abs() as u64);
        assert_ne!(fnvhash64(1), fnvhash64(256));
    }

    #[test]
    fn bad_parameters_are_refused() {
        assert!(AccessGen::new(&Pattern::Stride { stride: 0 }, 10, 1).is_err());
        assert!(AccessGen::new(&Pattern::Ycsb { theta: 1.5 }, 10, 1).is_err());
        assert!(AccessGen::new(&Pattern::Seq, 0, 1).is_err());
    }
}
