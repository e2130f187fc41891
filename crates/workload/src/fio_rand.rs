//! fio's random number generators and maps, written afresh from fio 3.33's
//! lib/rand.[ch], lib/lfsr.c, lib/zipf.c, lib/gauss.c, lib/axmap.c, hash.h
//! and the seeding in init.c, so a job draws exactly the numbers fio draws.
//!
//! Everything here is plain integers (the axmap is one dense bit array
//! allocated once): drawing a number allocates nothing. Integer widths and
//! the float conversions follow fio's C code, because they decide which
//! block comes out (e.g. `lastb * (r / (max + 1.0))` is computed in double).

/// fio's `FIO_RANDSEED` (init.c): the base of the repeatable block seed.
pub const FIO_RANDSEED: u64 = 0xb189_9bed;
/// fio's `randseed=` default.
pub const DEFAULT_RANDSEED: u64 = 0x89;

/// Indices into a job's `rand_seeds[]` (fio.h `FIO_RAND_*_OFF`), in fio's order.
pub const FIO_RAND_BS_OFF: usize = 0;
pub const FIO_RAND_BS1_OFF: usize = 1;
pub const FIO_RAND_MIX_OFF: usize = 4;
pub const FIO_RAND_FILE_OFF: usize = 5;
pub const FIO_RAND_BLOCK_OFF: usize = 6;
pub const FIO_RAND_SEQ_RAND_READ_OFF: usize = 10;
pub const FIO_RAND_POISSON_OFF: usize = 15;
pub const FIO_RAND_ZONE_OFF: usize = 16;
pub const FIO_RAND_NR_OFFS: usize = 21;

/// fio's `__hash_u64()`: multiply by the 64-bit golden ratio.
pub fn hash_u64(v: u64) -> u64 {
    v.wrapping_mul(0x61C8_8646_80B5_83EB)
}

/// fio's `jhash()` (hash.h). fio's main loop adds one *byte* from each of
/// the three words of a 12-byte block (`a += *k`), not the whole word; that
/// is kept, since it decides the zipf/pareto/normal seed.
pub fn jhash(key: &[u8], initval: u32) -> u32 {
    let rol = |w: u32, s: u32| w.rotate_left(s);
    let init = 0x61C8_8647u32
        .wrapping_add(key.len() as u32)
        .wrapping_add(initval);
    let (mut a, mut b, mut c) = (init, init, init);
    let mut k = key;
    while k.len() > 12 {
        a = a.wrapping_add(k[0] as u32);
        b = b.wrapping_add(k[4] as u32);
        c = c.wrapping_add(k[8] as u32);
        // __jhash_mix
        a = a.wrapping_sub(c);
        a ^= rol(c, 4);
        c = c.wrapping_add(b);
        b = b.wrapping_sub(a);
        b ^= rol(a, 6);
        a = a.wrapping_add(c);
        c = c.wrapping_sub(b);
        c ^= rol(b, 8);
        b = b.wrapping_add(a);
        a = a.wrapping_sub(c);
        a ^= rol(c, 16);
        c = c.wrapping_add(b);
        b = b.wrapping_sub(a);
        b ^= rol(a, 19);
        a = a.wrapping_add(c);
        c = c.wrapping_sub(b);
        c ^= rol(b, 4);
        b = b.wrapping_add(a);
        k = &k[12..];
    }
    if k.is_empty() {
        return c;
    }
    // The tail: byte i goes to word i/4 at bit 8*(i%4).
    for (i, &byte) in k.iter().enumerate() {
        let v = (byte as u32) << (8 * (i % 4));
        match i / 4 {
            0 => a = a.wrapping_add(v),
            1 => b = b.wrapping_add(v),
            _ => c = c.wrapping_add(v),
        }
    }
    // __jhash_final
    c ^= b;
    c = c.wrapping_sub(rol(b, 14));
    a ^= c;
    a = a.wrapping_sub(rol(c, 11));
    b ^= a;
    b = b.wrapping_sub(rol(a, 25));
    c ^= b;
    c = c.wrapping_sub(rol(b, 16));
    a ^= c;
    a = a.wrapping_sub(rol(c, 4));
    b ^= a;
    b = b.wrapping_sub(rol(a, 14));
    c ^= b;
    c = c.wrapping_sub(rol(b, 24));
    c
}

/// fio's `struct frand_state`: the 32-bit Tausworthe generator (taus88,
/// three words) or the 64-bit one (taus258, five words).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FRand {
    use64: bool,
    s: [u64; 5],
}

/// `__seed()`: the words must be above a minimum to be valid.
fn min_seed(x: u64, m: u64) -> u64 {
    if x < m {
        x + m
    } else {
        x
    }
}

/// fio writes `(2^31) + (2^17) + (2^7)` with C's `^` (xor): 29 + 19 + 5.
const LCG_START: u64 = (2 ^ 31) + (2 ^ 17) + (2 ^ 7);

impl FRand {
    /// fio's `init_rand_seed()`. A 32-bit state takes the low 32 bits of
    /// `seed` (fio passes it as `unsigned int`).
    pub fn new(seed: u64, use64: bool) -> FRand {
        let mut st = FRand { use64, s: [0; 5] };
        if use64 {
            let lcg = |x: u64| x.wrapping_mul(6_906_969_069) ^ seed;
            st.s[0] = min_seed(lcg(LCG_START), 1);
            st.s[1] = min_seed(lcg(st.s[0]), 7);
            st.s[2] = min_seed(lcg(st.s[1]), 15);
            st.s[3] = min_seed(lcg(st.s[2]), 33);
            st.s[4] = min_seed(lcg(st.s[3]), 49);
        } else {
            let seed = seed as u32;
            let lcg = |x: u64| ((x as u32).wrapping_mul(69069) ^ seed) as u64;
            // The minimum is added in 64 bits, then stored in 32.
            st.s[0] = min_seed(lcg(LCG_START), 1) as u32 as u64;
            st.s[1] = min_seed(lcg(st.s[0]), 7) as u32 as u64;
            st.s[2] = min_seed(lcg(st.s[1]), 15) as u32 as u64;
        }
        for _ in 0..6 {
            st.rand();
        }
        st
    }

    pub fn is_64(&self) -> bool {
        self.use64
    }

    /// fio's `rand_max()`.
    pub fn max(&self) -> u64 {
        if self.use64 {
            u64::MAX
        } else {
            u32::MAX as u64
        }
    }

    /// fio's `__rand()`: the next number, 32 or 64 bits wide.
    #[inline]
    pub fn rand(&mut self) -> u64 {
        if self.use64 {
            let s = &mut self.s;
            let x = ((s[0] << 1) ^ s[0]) >> 53;
            s[0] = ((s[0] & 0xFFFF_FFFF_FFFF_FFFE) << 10) ^ x;
            let x = ((s[1] << 24) ^ s[1]) >> 50;
            s[1] = ((s[1] & 0xFFFF_FFFF_FFFF_FE00) << 5) ^ x;
            let x = ((s[2] << 3) ^ s[2]) >> 23;
            s[2] = ((s[2] & 0xFFFF_FFFF_FFFF_F000) << 29) ^ x;
            let x = ((s[3] << 5) ^ s[3]) >> 24;
            s[3] = ((s[3] & 0xFFFF_FFFF_FFFE_0000) << 23) ^ x;
            let x = ((s[4] << 3) ^ s[4]) >> 33;
            s[4] = ((s[4] & 0xFFFF_FFFF_FF80_0000) << 8) ^ x;
            s[0] ^ s[1] ^ s[2] ^ s[3] ^ s[4]
        } else {
            let taus = |s: u64, a: u32, b: u32, c: u32, d: u32| -> u64 {
                let s = s as u32;
                (((s & c) << d) ^ (((s << a) ^ s) >> b)) as u64
            };
            self.s[0] = taus(self.s[0], 13, 19, 0xFFFF_FFFE, 12);
            self.s[1] = taus(self.s[1], 2, 25, 0xFFFF_FFF8, 4);
            self.s[2] = taus(self.s[2], 3, 11, 0xFFFF_FFF0, 17);
            self.s[0] ^ self.s[1] ^ self.s[2]
        }
    }

    /// fio's `rand_between()`: uniform in `[start, end]`, both inclusive,
    /// via `rand32_upto()` / `rand64_upto()` (a double multiply).
    #[inline]
    pub fn between(&mut self, start: u64, end: u64) -> u64 {
        let r = self.rand();
        let span = end - start;
        if self.use64 {
            let e = span.wrapping_add(1) as f64;
            start + (e * (r as f64 / 18_446_744_073_709_551_616.0)) as u64
        } else {
            let e = (span as u32).wrapping_add(1) as f64;
            start + ((e * (r as f64 / 4_294_967_296.0)) as i32 as u32) as u64
        }
    }
}

/// fio's per-job `rand_seeds[]` (init.c `setup_random_seeds()` and
/// `td_fill_rand_seeds()`), for a job with 1-based `thread_number`.
///
/// * `randseed` scrambled by four multiplications, then one value per index:
///   `seed * thread_number + i`, the seed multiplied again after each.
/// * `allrandrepeat` replaces all of them with `FIO_RANDSEED * tn + i`.
/// * A random job seeded with `randrepeat=1` (the default; fio seeds
///   before a `randseed=` clears it) takes `FIO_RANDSEED * tn` as its
///   block seed, whatever `randseed` is.
pub fn rand_seeds(
    randseed: u64,
    thread_number: u32,
    allrandrepeat: bool,
    rand_repeatable: bool,
    random_job: bool,
) -> [u64; FIO_RAND_NR_OFFS] {
    let tn = thread_number as u64;
    let mut seeds = [0u64; FIO_RAND_NR_OFFS];
    let mut seed = randseed;
    for _ in 0..4 {
        seed = seed.wrapping_mul(0x9e37_0001);
    }
    for (i, s) in seeds.iter_mut().enumerate() {
        *s = seed.wrapping_mul(tn).wrapping_add(i as u64);
        seed = seed.wrapping_mul(0x9e37_0001);
    }
    if allrandrepeat {
        for (i, s) in seeds.iter_mut().enumerate() {
            *s = FIO_RANDSEED.wrapping_mul(tn).wrapping_add(i as u64);
        }
    }
    if random_job && rand_repeatable {
        seeds[FIO_RAND_BLOCK_OFF] = FIO_RANDSEED.wrapping_mul(tn);
    }
    seeds
}

/// The job's `rand_seeds[]` as fio's setup_random_seeds() makes them.
/// With `randrepeat=0` and no `randseed`, fio reads them from the system
/// RNG (init_random_seeds), so every run differs; foliosim is
/// deterministic and derives them instead from the run's `--seed` and the
/// job's thread number: different `--seed`s give different offsets, the
/// same `--seed` the same. `allrandrepeat` then overrides them all, as in
/// fio's td_fill_rand_seeds().
pub fn job_rand_seeds(job: &crate::fio::FioJob, run_seed: u64) -> [u64; FIO_RAND_NR_OFFS] {
    let mut seeds = rand_seeds(
        job.randseed,
        job.thread_number.max(1),
        job.allrandrepeat,
        job.randrepeat,
        job.rw.is_random(),
    );
    if !job.randrepeat && !job.randseed_set && !job.allrandrepeat {
        // splitmix64 over (run seed, thread number): well-mixed 64-bit
        // values, like the RNG's.
        let mut z = run_seed ^ u64::from(job.thread_number).rotate_left(32);
        for s in seeds.iter_mut() {
            z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut x = z;
            x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            *s = x ^ (x >> 31);
        }
    }
    seeds
}

/// LFSR taps per register width (lib/lfsr.c's table, from the published
/// maximal-length tap list); index = bits, 0 terminates.
const LFSR_TAPS: [[u8; 6]; 64] = [
    [0; 6],
    [0; 6],
    [0; 6],
    [3, 2, 0, 0, 0, 0],
    [4, 3, 0, 0, 0, 0],
    [5, 3, 0, 0, 0, 0],
    [6, 5, 0, 0, 0, 0],
    [7, 6, 0, 0, 0, 0],
    [8, 6, 5, 4, 0, 0],
    [9, 5, 0, 0, 0, 0],
    [10, 7, 0, 0, 0, 0],
    [11, 9, 0, 0, 0, 0],
    [12, 6, 4, 1, 0, 0],
    [13, 4, 3, 1, 0, 0],
    [14, 5, 3, 1, 0, 0],
    [15, 14, 0, 0, 0, 0],
    [16, 15, 13, 4, 0, 0],
    [17, 14, 0, 0, 0, 0],
    [18, 11, 0, 0, 0, 0],
    [19, 6, 2, 1, 0, 0],
    [20, 17, 0, 0, 0, 0],
    [21, 19, 0, 0, 0, 0],
    [22, 21, 0, 0, 0, 0],
    [23, 18, 0, 0, 0, 0],
    [24, 23, 22, 17, 0, 0],
    [25, 22, 0, 0, 0, 0],
    [26, 6, 2, 1, 0, 0],
    [27, 5, 2, 1, 0, 0],
    [28, 25, 0, 0, 0, 0],
    [29, 27, 0, 0, 0, 0],
    [30, 6, 4, 1, 0, 0],
    [31, 28, 0, 0, 0, 0],
    [32, 31, 29, 1, 0, 0],
    [33, 20, 0, 0, 0, 0],
    [34, 27, 2, 1, 0, 0],
    [35, 33, 0, 0, 0, 0],
    [36, 25, 0, 0, 0, 0],
    [37, 5, 4, 3, 2, 1],
    [38, 6, 5, 1, 0, 0],
    [39, 35, 0, 0, 0, 0],
    [40, 38, 21, 19, 0, 0],
    [41, 38, 0, 0, 0, 0],
    [42, 41, 20, 19, 0, 0],
    [43, 42, 38, 37, 0, 0],
    [44, 43, 18, 17, 0, 0],
    [45, 44, 42, 41, 0, 0],
    [46, 45, 26, 25, 0, 0],
    [47, 42, 0, 0, 0, 0],
    [48, 47, 21, 20, 0, 0],
    [49, 40, 0, 0, 0, 0],
    [50, 49, 24, 23, 0, 0],
    [51, 50, 36, 35, 0, 0],
    [52, 49, 0, 0, 0, 0],
    [53, 52, 38, 37, 0, 0],
    [54, 53, 18, 17, 0, 0],
    [55, 31, 0, 0, 0, 0],
    [56, 55, 35, 34, 0, 0],
    [57, 50, 0, 0, 0, 0],
    [58, 39, 0, 0, 0, 0],
    [59, 58, 38, 37, 0, 0],
    [60, 59, 0, 0, 0, 0],
    [61, 60, 46, 45, 0, 0],
    [62, 61, 6, 5, 0, 0],
    [63, 62, 0, 0, 0, 0],
];

/// fio's `struct fio_lfsr` (`random_generator=lfsr`): an XNOR LFSR one
/// bit wider than needed, whose values above `max_val` are skipped, so
/// every block comes up exactly once per pass without a map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lfsr {
    xormask: u64,
    last_val: u64,
    cached_bit: u64,
    max_val: u64,
    num_vals: u64,
    cycle_length: u64,
    cached_cycle_length: u64,
    spin: u32,
}

impl Lfsr {
    /// fio's `lfsr_init(nums, seed, spin)`; None where fio fails (no
    /// register wide enough, spin > 15, or a seed giving the all-ones state).
    pub fn new(nums: u64, seed: u64, spin: u32) -> Option<Lfsr> {
        let taps = (3..64)
            .find(|&i| (1u64 << i) > nums)
            .map(|i| &LFSR_TAPS[i])?;
        let xormask = taps
            .iter()
            .take_while(|&&t| t != 0)
            .fold(0u64, |m, &t| m | 1u64 << (t - 1));
        let mut fl = Lfsr {
            xormask,
            last_val: 0,
            cached_bit: 1u64 << (taps[0] - 1),
            max_val: nums.wrapping_sub(1),
            num_vals: 0,
            cycle_length: 0,
            cached_cycle_length: 0,
            spin,
        };
        // prepare_spin(): a spin may close a shorter cycle; fio then adds
        // one extra step each cycle. The first cycle counter is one longer.
        if spin > 15 {
            return None;
        }
        let max = (fl.cached_bit << 1) - 1;
        let (x, y) = (max / (spin as u64 + 1), max % (spin as u64 + 1));
        for i in 1..=spin as u64 {
            if (y * i) % (spin as u64 + 1) == 0 {
                fl.cycle_length = x * i + (y * i) / (spin as u64 + 1);
                break;
            }
        }
        fl.cached_cycle_length = fl.cycle_length;
        fl.cycle_length += 1;
        fl.reset(seed).then_some(fl)
    }

    /// fio's `lfsr_reset()`: start again from `seed`; false for the
    /// all-ones state, which an XNOR LFSR never leaves.
    pub fn reset(&mut self, seed: u64) -> bool {
        let mask = (self.cached_bit << 1) - 1;
        self.num_vals = 0;
        self.last_val = seed & mask;
        self.last_val != mask
    }

    #[inline]
    fn step(&mut self, n: u32) {
        for _ in 0..=n {
            let v = self.last_val;
            self.last_val = ((v >> 1) | self.cached_bit) ^ ((v & 1).wrapping_sub(1) & self.xormask);
        }
    }

    /// fio's `lfsr_next()`: the next value in `[0, nums)`, None once all
    /// `nums` values were returned.
    #[inline]
    pub fn next_value(&mut self) -> Option<u64> {
        let n = self.num_vals;
        self.num_vals += 1;
        if n > self.max_val {
            return None;
        }
        loop {
            if self.cycle_length != 0 {
                self.cycle_length -= 1;
                if self.cycle_length == 0 {
                    self.step(self.spin + 1);
                    self.cycle_length = self.cached_cycle_length;
                } else {
                    self.step(self.spin);
                }
            } else {
                self.step(self.spin);
            }
            if self.last_val <= self.max_val {
                return Some(self.last_val);
            }
        }
    }
}

/// fio caps the zipf normalisation sum at 10M terms (lib/zipf.c).
const ZIPF_MAX_GEN: u64 = 10_000_000;

/// fio's `struct zipf_state`, used for zipf and pareto. Its own 32-bit
/// generator; `rand_off` (its first draw) rotates the hashed ranks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Zipf {
    nranges: u64,
    zetan: f64,
    // zipf_next()'s per-call constants, computed once by the same
    // expressions fio evaluates on every call (same bits, two powf()
    // fewer a draw).
    alpha: f64,
    eta: f64,
    half_pow_theta: f64,
    pareto_pow: f64,
    rand: FRand,
    rand_off: u64,
}

impl Zipf {
    fn shared(nranges: u64, seed: u32) -> Zipf {
        let mut rand = FRand::new(seed as u64, false);
        let rand_off = rand.rand();
        Zipf {
            nranges,
            zetan: 0.0,
            alpha: 0.0,
            eta: 0.0,
            half_pow_theta: 0.0,
            pareto_pow: 0.0,
            rand,
            rand_off,
        }
    }

    /// fio's `zipf_init()` (no center).
    pub fn new_zipf(nranges: u64, theta: f64, seed: u32) -> Zipf {
        let mut z = Zipf::shared(nranges, seed);
        let zeta2 = 1.0f64.powf(theta) + 0.5f64.powf(theta);
        // zipf_update(): summed in fio's order so the double matches.
        for i in 0..nranges.min(ZIPF_MAX_GEN) {
            z.zetan += (1.0 / (i + 1) as f64).powf(theta);
        }
        z.alpha = 1.0 / (1.0 - theta);
        z.eta = (1.0 - (2.0 / nranges as f64).powf(1.0 - theta)) / (1.0 - zeta2 / z.zetan);
        z.half_pow_theta = 0.5f64.powf(theta);
        z
    }

    /// fio's `pareto_init()` (no center).
    pub fn new_pareto(nranges: u64, h: f64, seed: u32) -> Zipf {
        let mut z = Zipf::shared(nranges, seed);
        z.pareto_pow = h.ln() / (1.0 - h).ln();
        z
    }

    /// fio's `zipf_next()`: Gray et al.'s quick zipf rank, hashed.
    pub fn next_zipf(&mut self) -> u64 {
        let n = self.nranges;
        let (alpha, eta) = (self.alpha, self.eta);
        let rand_uni = self.rand.rand() as f64 / u32::MAX as f64;
        let rand_z = rand_uni * self.zetan;
        let val: u64 = if rand_z < 1.0 {
            1
        } else if rand_z < 1.0 + self.half_pow_theta {
            2
        } else {
            1u64.wrapping_add((n as f64 * (eta * rand_uni - eta + 1.0).powf(alpha)) as u64)
        };
        hash_u64(val.wrapping_sub(1)).wrapping_add(self.rand_off) % n
    }

    /// fio's `pareto_next()`.
    pub fn next_pareto(&mut self) -> u64 {
        let r = self.rand.rand() as f64 / u32::MAX as f64;
        let v = ((self.nranges - 1) as f64 * r.powf(self.pareto_pow)) as u64;
        hash_u64(v).wrapping_add(self.rand_off) % self.nranges
    }
}

/// fio's `struct gauss_state` (`random_distribution=normal`): the mean of
/// 12 uniform draws, plus a uniform deviation, hashed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gauss {
    rand: FRand,
    nranges: u64,
    stddev: u32,
}

const GAUSS_ITERS: u64 = 12;

impl Gauss {
    /// fio's `gauss_init()` (no center: `rand_off` 0).
    pub fn new(nranges: u64, dev: f64, seed: u32) -> Gauss {
        let mut stddev = 0u32;
        if dev != 0.0 {
            stddev = ((nranges as f64 * dev) / 100.0).ceil() as u32;
            if stddev as u64 > nranges / 2 {
                stddev = (nranges / 2) as u32;
            }
        }
        Gauss {
            rand: FRand::new(seed as u64, false),
            nranges,
            stddev,
        }
    }

    /// fio's `gauss_next()`.
    pub fn next_value(&mut self) -> u64 {
        let mut sum = 0u64;
        for _ in 0..GAUSS_ITERS {
            sum = sum.wrapping_add(self.rand.rand() % (self.nranges + 1));
        }
        sum = sum.div_ceil(GAUSS_ITERS);
        if self.stddev != 0 {
            // gauss_dev(): int arithmetic, as in fio.
            let r = self.rand.rand() as u32;
            let vr = (self.stddev as f64 * (r as f64 / 4_294_967_296.0)) as i32;
            let mut dev = vr.wrapping_sub((self.stddev / 2) as i32);
            // fio halves a deviation that would leave the range; it would
            // spin forever at 0 if sum itself were out of range, which the
            // mean of 12 draws in [0, nranges] only reaches at nranges.
            while (dev as i64 as u64).wrapping_add(sum) >= self.nranges && dev != 0 {
                dev /= 2;
            }
            sum = sum.wrapping_add(dev as i64 as u64);
        }
        hash_u64(sum) % self.nranges
    }
}

/// fio's random map (`struct axmap`), kept as its bottom level only: one
/// bit per block, allocated once. fio's upper levels only speed up the
/// search; every query below answers what fio's answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AxMap {
    words: Vec<u64>,
    nr_bits: u64,
}

impl AxMap {
    pub fn new(nr_bits: u64) -> AxMap {
        AxMap {
            words: vec![0; nr_bits.div_ceil(64).max(1) as usize],
            nr_bits,
        }
    }

    pub fn nr_bits(&self) -> u64 {
        self.nr_bits
    }

    /// fio's `axmap_reset()`.
    pub fn reset(&mut self) {
        self.words.iter_mut().for_each(|w| *w = 0);
    }

    /// fio's `axmap_isset()` (false past the end).
    #[inline]
    pub fn isset(&self, bit: u64) -> bool {
        let w = (bit / 64) as usize;
        bit <= self.nr_bits && w < self.words.len() && self.words[w] & (1 << (bit % 64)) != 0
    }

    /// fio's `axmap_set_nr()`: set up to `nr` bits from `bit`, stopping at
    /// the first bit already set; returns how many were set. Like fio, bits
    /// of the last word past `nr_bits` may be set (they are never returned
    /// as free).
    pub fn set_nr(&mut self, mut bit: u64, mut nr: u64) -> u64 {
        let mut set = 0;
        while nr > 0 {
            let w = (bit / 64) as usize;
            if bit > self.nr_bits || w >= self.words.len() {
                break;
            }
            let b = bit % 64;
            let want = nr.min(64 - b);
            let mask = (if want == 64 { !0 } else { (1u64 << want) - 1 }) << b;
            let overlap = self.words[w] & mask;
            // Free bits from `b` up to the first busy one.
            let n = if overlap == 0 {
                want
            } else {
                overlap.trailing_zeros() as u64 - b
            };
            if n > 0 {
                let m = (if n == 64 { !0 } else { (1u64 << n) - 1 }) << b;
                self.words[w] |= m;
            }
            set += n;
            if n != want {
                break;
            }
            nr -= n;
            bit += n;
        }
        set
    }

    /// First free bit in `[from, nr_bits)`.
    fn first_free(&self, from: u64) -> Option<u64> {
        if from >= self.nr_bits {
            return None;
        }
        let mut w = (from / 64) as usize;
        let mut free = !self.words[w] & (!0u64 << (from % 64));
        loop {
            if free != 0 {
                let bit = w as u64 * 64 + free.trailing_zeros() as u64;
                return (bit < self.nr_bits).then_some(bit);
            }
            w += 1;
            if w >= self.words.len() {
                return None;
            }
            free = !self.words[w];
        }
    }

    /// fio's `axmap_next_free()`: the first free bit after `bit`, wrapping
    /// to the start of the map; None when the map is full.
    pub fn next_free(&self, bit: u64) -> Option<u64> {
        if bit >= self.nr_bits {
            return None;
        }
        let next = if bit + 1 == self.nr_bits { 0 } else { bit + 1 };
        self.first_free(next)
            .or_else(|| if next != 0 { self.first_free(0) } else { None })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taus88_matches_gsl_reference() {
        // GSL's test suite checks its taus generator (the same taus88
        // recurrence, seeded by a plain LCG) with seed 1: the 10000th
        // output is 2733957125. Seed the words GSL's way, warm up 6 times.
        let lcg = |n: u64| (69069 * n) & 0xFFFF_FFFF;
        let s1 = lcg(1);
        let s2 = lcg(s1);
        let s3 = lcg(s2);
        let mut st = FRand {
            use64: false,
            s: [s1, s2, s3, 0, 0],
        };
        for _ in 0..6 {
            st.rand();
        }
        let mut k = 0;
        for _ in 0..10_000 {
            k = st.rand();
        }
        assert_eq!(k, 2_733_957_125);
    }

    #[test]
    fn seeding_takes_fios_width() {
        // Only the low 32 bits of a seed reach a 32-bit state.
        assert_eq!(FRand::new(7, false), FRand::new(7 | 1 << 40, false));
        assert_ne!(FRand::new(7, true), FRand::new(7 | 1 << 40, true));
        let mut a = FRand::new(1, false);
        assert!((0..1000).all(|_| a.rand() <= u32::MAX as u64));
        assert_eq!(
            (a.max(), FRand::new(1, true).max()),
            (u32::MAX as u64, u64::MAX)
        );
    }

    #[test]
    fn between_is_inclusive_and_in_range() {
        for use64 in [false, true] {
            let mut r = FRand::new(99, use64);
            let mut seen = [false; 100];
            for _ in 0..20_000 {
                let v = r.between(1, 100);
                assert!((1..=100).contains(&v));
                seen[v as usize - 1] = true;
            }
            assert!(seen.iter().all(|&s| s));
        }
    }

    #[test]
    fn seeds_follow_fio_rules() {
        let s = rand_seeds(DEFAULT_RANDSEED, 1, false, true, true);
        assert_eq!(s[FIO_RAND_BLOCK_OFF], FIO_RANDSEED);
        let s2 = rand_seeds(DEFAULT_RANDSEED, 2, false, true, true);
        assert_eq!(s2[FIO_RAND_BLOCK_OFF], FIO_RANDSEED * 2);
        // Not a random job: the block seed stays the scrambled one.
        let n = rand_seeds(DEFAULT_RANDSEED, 1, false, true, false);
        assert_ne!(n[FIO_RAND_BLOCK_OFF], FIO_RANDSEED);
        // randseed scrambled 4 times, then seed_i * tn + i, scrambling on.
        let m = 0x9e37_0001u64;
        let s0 = 1234u64.wrapping_mul(m.wrapping_pow(4));
        let t = rand_seeds(1234, 3, false, false, true);
        assert_eq!(t[0], s0.wrapping_mul(3));
        assert_eq!(t[1], s0.wrapping_mul(m).wrapping_mul(3) + 1);
        assert_ne!(t[FIO_RAND_BLOCK_OFF], FIO_RANDSEED * 3);
        let a = rand_seeds(1234, 3, true, false, false);
        assert_eq!(a[5], FIO_RANDSEED * 3 + 5);
    }

    #[test]
    fn lfsr_visits_each_value_once() {
        for nums in [5u64, 8, 100, 1000, 4096] {
            let mut l = Lfsr::new(nums, FIO_RANDSEED, 0).unwrap();
            let mut seen = vec![false; nums as usize];
            for _ in 0..nums {
                let v = l.next_value().unwrap();
                assert!(!seen[v as usize], "{nums}: {v} twice");
                seen[v as usize] = true;
            }
            assert_eq!(l.next_value(), None);
            assert!(l.reset(FIO_RANDSEED));
            assert!(l.next_value().is_some());
        }
        // The all-ones state is refused.
        assert!(Lfsr::new(100, 127, 0).is_none());
    }

    #[test]
    fn jhash_tail_and_blocks() {
        // Same key, same hash; one byte changes it, also past 12 bytes.
        let k = b"/tmp/some/file.0.0";
        assert_eq!(jhash(k, 0), jhash(k, 0));
        assert_ne!(jhash(k, 0), jhash(b"/tmp/some/file.0.1", 0));
        assert_ne!(jhash(k, 0), jhash(b"/tmp/somX/file.0.0", 0));
        // Empty key: the initial value, untouched.
        assert_eq!(jhash(b"", 0), 0x61C8_8647);
    }

    #[test]
    fn axmap_set_nr_and_next_free() {
        let mut m = AxMap::new(130);
        assert_eq!(m.set_nr(0, 3), 3);
        assert_eq!(m.set_nr(62, 4), 4, "crosses a word");
        assert!(m.isset(65) && !m.isset(66));
        assert_eq!(m.set_nr(1, 2), 0, "busy start sets nothing");
        assert_eq!(m.set_nr(60, 4), 2, "stops at the first busy bit");
        assert_eq!(m.next_free(0), Some(3));
        assert_eq!(m.next_free(129), Some(3), "wraps");
        for b in 0..130 {
            m.set_nr(b, 1);
        }
        assert_eq!(m.next_free(5), None);
        m.reset();
        assert_eq!(m.next_free(129), Some(0));
    }

    #[test]
    fn distributions_stay_in_range() {
        let mut z = Zipf::new_zipf(1000, 1.2, 77);
        let mut p = Zipf::new_pareto(1000, 0.3, 77);
        let mut g = Gauss::new(1000, 10.0, 77);
        for _ in 0..10_000 {
            assert!(z.next_zipf() < 1000);
            assert!(p.next_pareto() < 1000);
            assert!(g.next_value() < 1000);
        }
    }
}
