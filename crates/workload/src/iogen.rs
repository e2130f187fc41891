//! Per-job I/O sequence generator following fio 3.42's rules (io_u.c,
//! backend.c, filesetup.c, lib/zipf.c, lib/gauss.c), written afresh.
//!
//! What fio does, and what this generator reproduces:
//!
//! * Sequential jobs keep one position per direction (`last_pos[ddir]`): a
//!   `rw=rw` job reads and writes the file as two independent streams.
//! * Random jobs pick block `b` uniformly in `[0, blocks)`. Unless
//!   `norandommap`, a map of done blocks makes every block come up exactly
//!   once per pass: a busy pick moves to the next free block after it
//!   (wrapping), like fio's `axmap_next_free()`. zipf / pareto / normal
//!   never consult the map (as in fio) and scatter their hot blocks over
//!   the file with fio's golden-ratio hash, `(b * 0x61C8864680B583EB +
//!   rand_off) % blocks`.
//! * `rw`/`randrw` pick the direction the way fio's `get_rw_ddir()` does: a
//!   direction is kept until its issue count reaches `rwmix_issues`, then
//!   a new one is drawn with P(read) = rwmixread%; on a switch,
//!   `rwmix_issues = issues[old] * rwmix[new] / 100`.
//! * `zonemode=strided` (`setup_strided_zone_mode()`): I/O stays in a zone
//!   starting at `file_offset` until `zonesize` bytes were done there; then
//!   `file_offset += zonerange + zoneskip` and, once that is at or past the
//!   end of the file, it goes back to the job's start offset (not to
//!   "offset 0 + something": the stride pattern simply restarts). Within a
//!   zone, positions wrap inside `zonerange`; the random map covers one
//!   zone (`zonerange / bs` blocks) and is cleared whenever the bytes done
//!   in the zone are a multiple of `zonerange` (so at every zone start).
//!   For seed 000 (`bs=4K zonesize=4K zonerange=64K size=600M`) this gives
//!   0, 64K, 128K, ..., 600M-64K, 0, 64K, ... and the wrap does NOT drop the
//!   page cache.
//! * End of the region: a `time_based` sequential job goes back to the zone
//!   start and, with `invalidate=1` and buffered I/O, drops the file's page
//!   cache (fio's `loop_cache_invalidate()`); so does a time_based random
//!   job whose random map is full. A job that is not time_based ends a pass
//!   there; if bytes remain (total = `(io_size or size) * loops`), fio closes
//!   and reopens the file (invalidating the cache again when enabled) and
//!   starts a new pass from the start offset with a clear map.
//! * Limits (not time_based): stop once `(io_size or size) * loops` bytes
//!   were issued, or `number_ios * loops` I/Os. A time_based job never ends
//!   here; the driver stops it on simulated time (runtime).
//!
//! Simplifications, documented: fixed block size only; a region that is
//! not a multiple of `bs` ends at its last whole block (fio would stop the
//! job at the partial block); the distributions use `blocks` whole blocks
//! (fio rounds up); the random numbers come from PCG, not fio's Tausworthe,
//! so individual random offsets differ from fio's while the rules above hold.
//!
//! Seeding: the generator's seed is a 64-bit FNV-1a hash of the job name,
//! its resolved filename, its jobnum, its `randseed` and the run's `seed`,
//! finished with splitmix64; offsets, direction choice and distribution get
//! separate PCG streams derived from it. Same job + same seed -> same I/O.

use crate::fio::{FioJob, RandomDist, Rw};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Dir {
    Read,
    Write,
}

impl Dir {
    fn idx(self) -> usize {
        self as usize
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Io {
    /// Absolute byte offset in the file.
    pub offset: u64,
    pub len: u64,
    pub dir: Dir,
}

/// fio's golden-ratio multiplier (`__hash_u64`).
const GOLDEN_RATIO_64: u64 = 0x61C8_8646_80B5_83EB;
/// fio caps the zipf normalisation sum at 10M terms.
const ZIPF_MAX_GEN: u64 = 10_000_000;
const GAUSS_ITERS: u64 = 12;

/// Done-block map: a plain bitmap, one bit per block of the region.
#[derive(Clone, Debug)]
struct BlockMap {
    words: Vec<u64>,
    nbits: u64,
    set: u64,
}

impl BlockMap {
    fn new(nbits: u64) -> Self {
        BlockMap {
            words: vec![0; nbits.div_ceil(64) as usize],
            nbits,
            set: 0,
        }
    }
    fn is_set(&self, b: u64) -> bool {
        self.words[(b / 64) as usize] & (1 << (b % 64)) != 0
    }
    fn set(&mut self, b: u64) {
        let w = &mut self.words[(b / 64) as usize];
        if *w & (1 << (b % 64)) == 0 {
            *w |= 1 << (b % 64);
            self.set += 1;
        }
    }
    fn full(&self) -> bool {
        self.set >= self.nbits
    }
    fn clear(&mut self) {
        self.words.iter_mut().for_each(|w| *w = 0);
        self.set = 0;
    }
    /// First free block after `b`, wrapping at the end; None when full.
    fn next_free(&self, b: u64) -> Option<u64> {
        if self.full() {
            return None;
        }
        let start = (b + 1) % self.nbits;
        let scan = |from: u64, to: u64| -> Option<u64> {
            let mut i = from;
            while i < to {
                let wi = (i / 64) as usize;
                let free = !self.words[wi] & (!0u64 << (i % 64));
                if free != 0 {
                    let bit = wi as u64 * 64 + free.trailing_zeros() as u64;
                    return (bit < to).then_some(bit);
                }
                i = (wi as u64 + 1) * 64;
            }
            None
        };
        scan(start, self.nbits).or_else(|| scan(0, start))
    }
}

#[derive(Clone, Debug)]
enum DistState {
    Uniform,
    Zipf { theta: f64, zetan: f64, zeta2: f64 },
    Pareto { pow: f64 },
    Normal { stddev: u64 },
}

#[derive(Clone, Debug)]
pub struct IoGen {
    /// `rw=read:N`: bytes skipped after each sequential I/O.
    seq_add: u64,
    rw: Rw,
    bs: u64,
    start: u64,
    real_file_size: u64,
    /// Whole blocks of the region, in bytes (fio's f->io_size).
    region_len: u64,
    time_based: bool,
    writes_wrap: bool,
    limit_bytes: Option<u64>,
    limit_ios: Option<u64>,
    strided: bool,
    zonesize: u64,
    zonerange: u64,
    zoneskip: u64,
    /// Blocks random offsets are drawn from.
    blocks: u64,
    map: Option<BlockMap>,
    dist: DistState,
    dist_off: u64,
    rwmix: [u64; 2],
    invalidate_enabled: bool,

    rng_off: Pcg64Mcg,
    rng_mix: Pcg64Mcg,
    rng_dist: Pcg64Mcg,
    file_offset: u64,
    last_pos: [u64; 2],
    zone_bytes: u64,
    rwmix_ddir: Dir,
    rwmix_issues: u64,
    io_issues: [u64; 2],
    bytes_issued: u64,
    ios_issued: u64,
    passes: u64,
    /// io_size: the bytes of one loop when set (fio ends a loop there,
    /// wherever in the file it is); bytes issued when this pass began.
    pass_bytes: Option<u64>,
    pass_start: u64,
    pending_invalidate: bool,
    done: bool,
}

fn fnv1a(h: &mut u64, bytes: &[u8]) {
    for b in bytes {
        *h ^= *b as u64;
        *h = h.wrapping_mul(0x0000_0100_0000_01B3);
    }
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The generator seed for `job` in a run seeded with `seed` (see module doc).
pub fn job_seed(job: &FioJob, seed: u64) -> u64 {
    let mut h = 0xCBF2_9CE4_8422_2325u64;
    fnv1a(&mut h, job.name.as_bytes());
    fnv1a(&mut h, &[0]);
    fnv1a(&mut h, job.filename.as_bytes());
    fnv1a(&mut h, &[0]);
    fnv1a(&mut h, &job.jobnum.to_le_bytes());
    fnv1a(&mut h, &job.randseed.to_le_bytes());
    fnv1a(&mut h, &seed.to_le_bytes());
    splitmix64(h)
}

impl IoGen {
    pub fn new(job: &FioJob, seed: u64) -> IoGen {
        let s = job_seed(job, seed);
        let bs = job.bs.max(1);
        let whole = job.size / bs;
        let blocks = if job.zonemode_strided {
            job.zonerange / bs
        } else {
            whole
        };
        let uniform_map = job.rw.is_random()
            && !job.norandommap
            && job.random_distribution == RandomDist::Random
            && blocks > 0;
        let mut rng_dist = Pcg64Mcg::seed_from_u64(s ^ 0x3);
        let n = blocks.max(1);
        let dist = match job.random_distribution {
            RandomDist::Random => DistState::Uniform,
            RandomDist::Zipf(theta) => {
                let zetan = (1..=n.min(ZIPF_MAX_GEN))
                    .map(|i| (1.0 / i as f64).powf(theta))
                    .sum();
                DistState::Zipf {
                    theta,
                    zetan,
                    zeta2: 1.0 + 0.5f64.powf(theta),
                }
            }
            RandomDist::Pareto(h) => DistState::Pareto {
                pow: h.ln() / (1.0 - h).ln(),
            },
            RandomDist::Normal(dev) => {
                let sd = if dev != 0.0 {
                    ((n as f64 * dev) / 100.0).ceil() as u64
                } else {
                    0
                };
                DistState::Normal {
                    stddev: sd.min(n / 2),
                }
            }
        };
        // fio: a random offset for zipf/pareto, none for normal (no center).
        let dist_off = match dist {
            DistState::Zipf { .. } | DistState::Pareto { .. } => rng_dist.gen::<u32>() as u64,
            _ => 0,
        };
        let limit = job
            .io_size
            .unwrap_or(job.size)
            .saturating_mul(job.loops.max(1));
        IoGen {
            rw: job.rw,
            bs,
            start: job.offset,
            real_file_size: job.offset.saturating_add(job.size),
            region_len: whole * bs,
            time_based: job.time_based,
            writes_wrap: job.rw.has_writes() && job.io_size.is_some_and(|i| i > job.size),
            limit_bytes: (!job.time_based).then_some(limit),
            pass_bytes: if job.time_based { None } else { job.io_size },
            pass_start: 0,
            limit_ios: if job.time_based {
                None
            } else {
                job.number_ios.map(|n| n.saturating_mul(job.loops.max(1)))
            },
            strided: job.zonemode_strided,
            zonesize: job.zonesize,
            zonerange: job.zonerange.max(1),
            zoneskip: job.zoneskip,
            blocks,
            map: uniform_map.then(|| BlockMap::new(blocks)),
            dist,
            dist_off,
            rwmix: [job.rwmixread as u64, 100 - job.rwmixread.min(100) as u64],
            invalidate_enabled: job.invalidate && !job.direct,
            rng_off: Pcg64Mcg::seed_from_u64(s ^ 0x1),
            rng_mix: Pcg64Mcg::seed_from_u64(s ^ 0x2),
            rng_dist,
            file_offset: job.offset,
            last_pos: [job.offset; 2],
            zone_bytes: 0,
            seq_add: job.rw_seq_add,
            rwmix_ddir: Dir::Read,
            rwmix_issues: 0,
            io_issues: [0; 2],
            bytes_issued: 0,
            ios_issued: 0,
            passes: 1,
            // fio drops the file's cache when it opens it (invalidate=1).
            pending_invalidate: job.invalidate && !job.direct,
            done: whole == 0,
        }
    }

    /// The next I/O, or None when the job is done.
    pub fn next_io(&mut self) -> Option<Io> {
        if self.done {
            return None;
        }
        if self.limit_bytes.is_some_and(|l| self.bytes_issued >= l)
            || self.limit_ios.is_some_and(|l| self.ios_issued >= l)
        {
            self.done = true;
            return None;
        }
        let pass_full = self
            .pass_bytes
            .is_some_and(|p| self.bytes_issued - self.pass_start >= p);
        if !pass_full {
            if let Some(io) = self.fill() {
                return Some(self.account(io));
            }
        }
        // End of a pass. fio: a time_based job always loops again; others
        // loop while at least one block of the byte budget is left.
        let more = self.time_based
            || self
                .limit_bytes
                .is_some_and(|l| l.saturating_sub(self.bytes_issued) >= self.bs);
        if more {
            self.new_pass();
            if let Some(io) = self.fill() {
                return Some(self.account(io));
            }
        }
        self.done = true;
        None
    }

    /// True once after fio would have dropped the file's page cache
    /// (`invalidate=1`, buffered I/O): when the file is opened, before the
    /// first I/O, and at each wrap or new pass described in the module doc.
    /// Call after `next_io()`; the drop comes before the I/O just returned.
    pub fn take_invalidate(&mut self) -> bool {
        std::mem::take(&mut self.pending_invalidate)
    }

    /// Passes started (fio's loops; 1 from the start).
    pub fn passes(&self) -> u64 {
        self.passes
    }

    pub fn bytes_issued(&self) -> u64 {
        self.bytes_issued
    }

    pub fn ios_issued(&self) -> u64 {
        self.ios_issued
    }

    fn account(&mut self, io: Io) -> Io {
        self.bytes_issued += io.len;
        self.ios_issued += 1;
        self.io_issues[io.dir.idx()] += 1;
        self.zone_bytes += io.len;
        self.last_pos[io.dir.idx()] = io.offset + io.len;
        io
    }

    /// fio's clear_io_state() between loops: back to the start offset,
    /// fresh map, file reopened.
    fn new_pass(&mut self) {
        self.passes += 1;
        self.pass_start = self.bytes_issued;
        self.file_offset = self.start;
        self.zone_bytes = 0;
        self.rwmix_issues = 0;
        self.file_reset();
        if self.invalidate_enabled {
            self.pending_invalidate = true;
        }
    }

    /// fio_file_reset(): positions back to the zone start, map cleared.
    fn file_reset(&mut self) {
        self.last_pos = [self.file_offset; 2];
        if let Some(m) = &mut self.map {
            m.clear();
        }
    }

    fn loop_cache_invalidate(&mut self) {
        if self.invalidate_enabled {
            self.pending_invalidate = true;
        }
    }

    fn choose_dir(&mut self) -> Dir {
        if !self.rw.is_mixed() {
            return if self.rw.has_reads() {
                Dir::Read
            } else {
                Dir::Write
            };
        }
        let cur = self.rwmix_ddir;
        if self.io_issues[cur.idx()] >= self.rwmix_issues {
            let v: u64 = self.rng_mix.gen_range(1..=100);
            let new = if v <= self.rwmix[0] {
                Dir::Read
            } else {
                Dir::Write
            };
            if new != cur {
                self.rwmix_issues = self.io_issues[cur.idx()] * self.rwmix[new.idx()] / 100;
            }
            self.rwmix_ddir = new;
        }
        self.rwmix_ddir
    }

    fn setup_strided_zone(&mut self, dir: Dir) {
        if self.zone_bytes >= self.zonesize {
            self.zone_bytes = 0;
            self.file_offset = self
                .file_offset
                .saturating_add(self.zonerange)
                .saturating_add(self.zoneskip);
            if self.file_offset >= self.real_file_size {
                self.file_offset = self.start;
            }
            self.last_pos[dir.idx()] = self.file_offset;
        }
        if self.last_pos[dir.idx()] >= self.file_offset.saturating_add(self.zonerange) {
            self.last_pos[dir.idx()] = self.file_offset;
        }
        if self.zone_bytes.is_multiple_of(self.zonerange) {
            self.file_reset();
        }
    }

    fn fill(&mut self) -> Option<Io> {
        let dir = self.choose_dir();
        if self.strided {
            self.setup_strided_zone(dir);
        }
        let rel = if self.rw.is_random() {
            self.rand_block()? * self.bs
        } else {
            self.seq_offset(dir)?
        };
        if rel >= self.region_len {
            return None;
        }
        let offset = rel.saturating_add(self.file_offset);
        if offset.saturating_add(self.bs) > self.real_file_size {
            return None;
        }
        if let Some(m) = &mut self.map {
            let b = rel / self.bs;
            if b < m.nbits {
                m.set(b);
            }
        }
        Some(Io {
            offset,
            len: self.bs,
            dir,
        })
    }

    /// fio's get_next_seq_offset(): offset relative to the zone start.
    fn seq_offset(&mut self, dir: Dir) -> Option<u64> {
        let end = self.start + self.region_len;
        let d = dir.idx();
        if self.last_pos[d] >= end && (self.time_based || (self.writes_wrap && dir == Dir::Write)) {
            self.last_pos[d] = self.file_offset;
            self.loop_cache_invalidate();
        }
        if self.last_pos[d] >= self.real_file_size {
            return None;
        }
        let mut pos = self.last_pos[d].saturating_sub(self.file_offset);
        // get_next_seq_offset(): holed sequential I/O skips seq_add after
        // every I/O but the first, wrapping to the start past the end.
        if pos > 0 && self.seq_add > 0 {
            pos += self.seq_add;
            if self.file_offset + pos >= end {
                pos = 0;
            }
        }
        Some(pos)
    }

    /// fio's get_next_rand_block(): a block index, None at the end of a pass.
    fn rand_block(&mut self) -> Option<u64> {
        if let Some(b) = self.next_rand() {
            return Some(b);
        }
        if self.time_based {
            self.file_reset();
            self.loop_cache_invalidate();
            return self.next_rand();
        }
        None
    }

    fn next_rand(&mut self) -> Option<u64> {
        let n = self.blocks;
        if n == 0 {
            return None;
        }
        match self.dist {
            DistState::Uniform => {
                let b = self.rng_off.gen_range(0..n);
                match &self.map {
                    Some(m) if m.is_set(b) => m.next_free(b),
                    Some(m) if m.full() => None,
                    _ => Some(b),
                }
            }
            DistState::Zipf {
                theta,
                zetan,
                zeta2,
            } => {
                // Gray et al.'s quick zipf sampler, as fio's zipf_next().
                let alpha = 1.0 / (1.0 - theta);
                let eta = (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
                let u: f64 = self.rng_dist.gen();
                let uz = u * zetan;
                let rank = if uz < 1.0 {
                    1
                } else if uz < 1.0 + 0.5f64.powf(theta) {
                    2
                } else {
                    1 + (n as f64 * (eta * u - eta + 1.0).powf(alpha)) as u64
                };
                Some(self.scatter(rank - 1))
            }
            DistState::Pareto { pow } => {
                let u: f64 = self.rng_dist.gen();
                let v = ((n - 1) as f64 * u.powf(pow)) as u64;
                Some(self.scatter(v))
            }
            DistState::Normal { stddev } => {
                let mut sum = 0u64;
                for _ in 0..GAUSS_ITERS {
                    sum += self.rng_dist.gen_range(0..=n);
                }
                sum = sum.div_ceil(GAUSS_ITERS);
                if stddev > 0 {
                    let r: u64 = self.rng_dist.gen_range(0..stddev);
                    let mut dev = r as i64 - (stddev / 2) as i64;
                    while (sum as i64 + dev) >= n as i64 {
                        dev /= 2;
                    }
                    sum = (sum as i64 + dev).max(0) as u64;
                }
                Some(self.scatter(sum))
            }
        }
    }

    /// fio's hash of a distribution rank onto a block, so hot blocks are
    /// spread over the file instead of bunched at its start.
    fn scatter(&self, v: u64) -> u64 {
        v.wrapping_mul(GOLDEN_RATIO_64).wrapping_add(self.dist_off) % self.blocks
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fio::parse_job_str;
    use std::collections::BTreeMap;

    fn job(text: &str) -> FioJob {
        parse_job_str(&format!("[j]\n{text}"), "t.fio")
            .unwrap()
            .remove(0)
    }

    fn all(j: &FioJob, max: usize) -> Vec<Io> {
        let mut g = IoGen::new(j, 1);
        let mut v = Vec::new();
        while let Some(io) = g.next_io() {
            v.push(io);
            if v.len() >= max {
                break;
            }
        }
        v
    }

    #[test]
    fn sequential_read_covers_region_once() {
        let j = job("size=64k\noffset=8k\nbs=4k\n");
        let v = all(&j, 1000);
        let offs: Vec<u64> = v.iter().map(|io| io.offset).collect();
        assert_eq!(offs, (0..16).map(|i| 8192 + i * 4096).collect::<Vec<_>>());
        assert!(v.iter().all(|io| io.len == 4096 && io.dir == Dir::Read));
    }

    #[test]
    fn loops_and_io_size_and_number_ios() {
        let j = job("size=16k\nloops=3\n");
        let mut g = IoGen::new(&j, 1);
        let mut offs = Vec::new();
        let mut inval = Vec::new();
        while let Some(io) = g.next_io() {
            offs.push(io.offset / 4096);
            inval.push(g.take_invalidate());
        }
        assert_eq!(offs, vec![0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3]);
        assert_eq!(g.passes(), 3);
        // Cache dropped on open and at each reopen, nowhere else.
        let at: Vec<usize> = inval
            .iter()
            .enumerate()
            .filter(|x| *x.1)
            .map(|x| x.0)
            .collect();
        assert_eq!(at, vec![0, 4, 8]);
        let j = job("size=16k\nio_size=24k\n");
        assert_eq!(all(&j, 100).len(), 6);
        let j = job("size=16k\nloops=2\nnumber_ios=3\n");
        assert_eq!(
            all(&j, 100).len(),
            6,
            "number_ios counts per loop, like fio"
        );
        let j = job("size=16k\ninvalidate=0\n");
        let mut g = IoGen::new(&j, 1);
        g.next_io();
        assert!(!g.take_invalidate());
    }

    #[test]
    fn seed000_strided_offsets_wrap_without_invalidate() {
        let j = job(
            "rw=read\nbs=4K\nsize=600M\nzonemode=strided\nzonesize=4K\nzonerange=64K\ntime_based\nruntime=1\n",
        );
        let mut g = IoGen::new(&j, 7);
        let zones = (600u64 << 20) / 65536;
        assert_eq!(zones, 9600);
        let mut drops = 0;
        for i in 0..(2 * zones + 3) {
            let io = g.next_io().unwrap();
            assert_eq!(io.offset, (i % zones) * 65536, "io {i}");
            assert_eq!(io.len, 4096);
            if g.take_invalidate() {
                drops += 1;
            }
        }
        assert_eq!(drops, 1, "only the open drops the cache");
    }

    #[test]
    fn io_size_ends_each_loop_and_invalidates() {
        // loops=2, io_size=16k of a 64k file: each loop does 16k from the
        // start, and the cache is dropped when the file is reopened.
        let j = job("rw=read\nsize=64k\nio_size=16k\nloops=2\n");
        let mut g = IoGen::new(&j, 1);
        let mut seen = Vec::new();
        while let Some(io) = g.next_io() {
            seen.push((io.offset >> 10, g.take_invalidate()));
        }
        assert_eq!(
            seen,
            vec![
                (0, true),
                (4, false),
                (8, false),
                (12, false),
                (0, true),
                (4, false),
                (8, false),
                (12, false)
            ]
        );
    }

    #[test]
    fn holed_sequential_read_skips_and_wraps() {
        // rw=read:60k: 4k read, 60k skipped; wraps to the start past the end.
        let j = job("rw=read:60k\nsize=256k\nio_size=32k\n");
        assert_eq!(j.rw_seq_add, 60 << 10);
        let mut g = IoGen::new(&j, 1);
        let offs: Vec<u64> = std::iter::from_fn(|| g.next_io())
            .map(|io| io.offset >> 10)
            .collect();
        assert_eq!(offs, vec![0, 64, 128, 192, 0, 64, 128, 192]);
    }

    #[test]
    fn strided_with_zoneskip_and_bigger_zonesize() {
        // zonesize 8k in 16k zones, 16k skipped after each: 0,4k | 32k,36k | ...
        let j = job("size=128k\nzonesize=8k\nzonerange=16k\nzoneskip=16k\n");
        let offs: Vec<u64> = all(&j, 100).iter().map(|io| io.offset / 1024).collect();
        // 32 I/Os of 4k (size budget), wrapping every 4 zones.
        assert_eq!(offs.len(), 32);
        assert_eq!(&offs[..10], &[0, 4, 32, 36, 64, 68, 96, 100, 0, 4]);
        // zonesize > zonerange: stays in the zone, wrapping inside it.
        let j = job("size=64k\nzonesize=16k\nzonerange=8k\n");
        let offs: Vec<u64> = all(&j, 8).iter().map(|io| io.offset / 1024).collect();
        assert_eq!(offs, vec![0, 4, 0, 4, 8, 12, 8, 12]);
    }

    #[test]
    fn randommap_visits_every_block_once_per_pass() {
        let j = job("rw=randread\nsize=1m\nloops=2\n");
        let v = all(&j, 10_000);
        assert_eq!(v.len(), 512);
        for pass in v.chunks(256) {
            let mut seen: Vec<u64> = pass.iter().map(|io| io.offset / 4096).collect();
            seen.sort();
            assert_eq!(seen, (0..256).collect::<Vec<_>>());
        }
        assert_ne!(v[..256], v[256..], "each pass draws a new order");
        // Not sequential.
        assert!(
            v.windows(2)
                .filter(|w| w[1].offset == w[0].offset + 4096)
                .count()
                < 64
        );
    }

    #[test]
    fn norandommap_repeats_blocks() {
        let j = job("rw=randread\nsize=1m\nnorandommap\n");
        let v = all(&j, 10_000);
        assert_eq!(v.len(), 256);
        let mut seen: Vec<u64> = v.iter().map(|io| io.offset).collect();
        seen.sort();
        seen.dedup();
        assert!(seen.len() < 256, "uniform draws with replacement repeat");
        assert!(seen.len() > 128);
    }

    #[test]
    fn time_based_random_map_wraps_with_invalidate() {
        let j = job("rw=randread\nsize=64k\ntime_based\nruntime=1\n");
        let mut g = IoGen::new(&j, 3);
        let mut drops = vec![];
        for i in 0..40 {
            g.next_io().unwrap();
            if g.take_invalidate() {
                drops.push(i);
            }
        }
        assert_eq!(drops, vec![0, 16, 32]);
    }

    #[test]
    fn time_based_sequential_wraps() {
        let j = job("size=16k\ntime_based\ndirect=1\nruntime=1\n");
        let mut g = IoGen::new(&j, 3);
        let offs: Vec<u64> = (0..9).map(|_| g.next_io().unwrap().offset / 4096).collect();
        assert_eq!(offs, vec![0, 1, 2, 3, 0, 1, 2, 3, 0]);
        assert!(!g.take_invalidate(), "direct I/O never drops the cache");
    }

    #[test]
    fn rwmix_ratio_and_separate_streams() {
        let j = job("rw=rw\nrwmixread=70\nsize=64m\n");
        let v = all(&j, 100_000);
        let reads = v.iter().filter(|io| io.dir == Dir::Read).count();
        assert_eq!(v.len(), 16384);
        let frac = reads as f64 / v.len() as f64;
        assert!((0.65..0.75).contains(&frac), "read fraction {frac}");
        // Reads and writes each walk the file sequentially on their own.
        for d in [Dir::Read, Dir::Write] {
            let offs: Vec<u64> = v
                .iter()
                .filter(|io| io.dir == d)
                .map(|io| io.offset)
                .collect();
            assert!(offs.windows(2).all(|w| w[1] == w[0] + 4096));
            assert_eq!(offs[0], 0);
        }
        let j = job("rw=randrw\nrwmixread=0\nsize=1m\n");
        assert!(all(&j, 1000).iter().all(|io| io.dir == Dir::Write));
    }

    #[test]
    fn zipf_is_skewed_and_scattered() {
        let j = job("rw=randread\nsize=64m\nrandom_distribution=zipf:1.2\nnumber_ios=20000\n");
        let v = all(&j, 100_000);
        assert_eq!(v.len(), 16384, "size still bounds the job");
        let mut hits: BTreeMap<u64, u64> = BTreeMap::new();
        for io in &v {
            *hits.entry(io.offset / 4096).or_default() += 1;
        }
        let mut counts: Vec<u64> = hits.values().copied().collect();
        counts.sort_unstable_by(|a, b| b.cmp(a));
        let top10: u64 = counts.iter().take(10).sum();
        assert!(top10 as f64 > 0.3 * v.len() as f64, "top10 {top10}");
        // The hottest blocks are not all at the start of the file.
        let mut hot: Vec<(u64, u64)> = hits.iter().map(|(b, c)| (*c, *b)).collect();
        hot.sort_unstable_by(|a, b| b.cmp(a));
        assert!(hot.iter().take(5).any(|(_, b)| *b > 1000));
        // Pareto and normal stay in range and are skewed.
        for d in ["pareto:0.3", "normal:5"] {
            let j = job(&format!("rw=randread\nsize=4m\nrandom_distribution={d}\n"));
            let v = all(&j, 100_000);
            assert_eq!(v.len(), 1024);
            let distinct: std::collections::BTreeSet<u64> = v.iter().map(|io| io.offset).collect();
            assert!(distinct.len() < 700, "{d}: {}", distinct.len());
            assert!(v.iter().all(|io| io.offset + 4096 <= 4 << 20));
        }
    }

    #[test]
    fn deterministic_and_seed_sensitive() {
        let j = job("rw=randrw\nsize=1m\n");
        let a = all(&j, 1000);
        assert_eq!(a, all(&j, 1000));
        let mut g = IoGen::new(&j, 2);
        let b: Vec<Io> = std::iter::from_fn(|| g.next_io()).collect();
        assert_ne!(a, b);
        let mut j2 = j.clone();
        j2.jobnum = 1;
        assert_ne!(job_seed(&j, 1), job_seed(&j2, 1));
        j2.jobnum = 0;
        j2.randseed = 1;
        assert_ne!(job_seed(&j, 1), job_seed(&j2, 1));
    }

    /// Random option soup: parsing never panics, and every job it accepts
    /// generates in-range I/O without panicking.
    #[test]
    fn garbage_in_no_panic() {
        let keys = [
            "size",
            "offset",
            "bs",
            "rw",
            "rwmixread",
            "zonesize",
            "zonerange",
            "zoneskip",
            "zonemode",
            "random_distribution",
            "io_size",
            "number_ios",
            "loops",
            "norandommap",
            "time_based",
            "filesize",
            "kb_base",
            "numjobs",
            "runtime",
            "thinktime",
        ];
        let vals = [
            "0",
            "1",
            "4k",
            "7",
            "64K",
            "1m",
            "12Q",
            "-3",
            "0x10",
            "randread",
            "randrw",
            "rw",
            "strided",
            "none",
            "zipf",
            "zipf:2",
            "pareto:0.9",
            "normal:50",
            "",
            "%",
            "1:2",
            "99999999999999999999",
            "8p",
            "1000",
            "1kib",
            "3s",
        ];
        let mut rng = Pcg64Mcg::seed_from_u64(5);
        let mut accepted = 0;
        for _ in 0..3000 {
            let mut text = String::from("[j]\nsize=1m\n");
            for _ in 0..rng.gen_range(1..8) {
                let k = keys[rng.gen_range(0..keys.len())];
                let v = if rng.gen_bool(0.6) {
                    ["4k", "64K", "1", "7", "2m"][rng.gen_range(0..5)]
                } else {
                    vals[rng.gen_range(0..vals.len())]
                };
                text.push_str(&format!("{k}={v}\n"));
            }
            if let Ok(jobs) = parse_job_str(&text, "fuzz.fio") {
                accepted += 1;
                let j = &jobs[0];
                let mut g = IoGen::new(j, 9);
                for _ in 0..64 {
                    let Some(io) = g.next_io() else { break };
                    assert!(io.offset + io.len <= j.file_size(), "{text}: {io:?}");
                    assert!(io.offset >= j.offset, "{text}: {io:?}");
                }
            }
        }
        assert!(accepted > 100, "fuzz accepted only {accepted}");
    }

    #[test]
    #[ignore = "timing, run by hand"]
    fn timing() {
        for text in [
            "rw=read\nbs=4K\nsize=600M\nzonemode=strided\nzonesize=4K\nzonerange=64K\ntime_based\nruntime=1\n",
            "rw=randread\nsize=3072M\nnorandommap\ntime_based\nruntime=1\n",
            "rw=randread\nsize=3072M\n",
            "rw=randread\nsize=3072M\nrandom_distribution=zipf:1.2\n",
        ] {
            let j = job(text);
            let t = std::time::Instant::now();
            let mut g = IoGen::new(&j, 1);
            let mut n = 0u64;
            let mut x = 0u64;
            while n < 786_432 {
                let Some(io) = g.next_io() else { break };
                x ^= io.offset;
                n += 1;
            }
            let dt = t.elapsed();
            eprintln!(
                "{:?}: {n} ios in {dt:?} ({:.1} ns/io) {x}",
                text.replace('\n', " "),
                dt.as_nanos() as f64 / n as f64
            );
        }
    }

    #[test]
    fn blockmap_next_free_wraps() {
        let mut m = BlockMap::new(130);
        for b in 0..130 {
            if b != 5 && b != 129 {
                m.set(b);
            }
        }
        assert_eq!(m.next_free(5), Some(129));
        assert_eq!(m.next_free(129), Some(5));
        assert_eq!(m.next_free(100), Some(129));
        m.set(5);
        m.set(129);
        assert!(m.full());
        assert_eq!(m.next_free(3), None);
    }
}
