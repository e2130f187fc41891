//! Per-job I/O sequence generator: the offsets, sizes and directions fio
//! 3.33 issues for a job (io_u.c, backend.c, filesetup.c, init.c), drawn
//! with fio's own generators ([`crate::fio_rand`]), so a job touches the
//! same (offset, len, dir) sequence as real fio. Written afresh.
//!
//! What fio does, and what this generator reproduces:
//!
//! * Seeds: fio's per-job `rand_seeds[]` from `randseed` and the job's
//!   `thread_number`; with `randrepeat` (the default, unless `randseed` is
//!   given) the block generator starts at `FIO_RANDSEED * thread_number`
//!   and every generator is re-seeded at each new loop, so each loop
//!   repeats the same offsets. The run's `seed` plays no part (fio's
//!   offsets depend on the job alone), except with `randrepeat=0` and no
//!   `randseed`, where fio seeds from the system RNG and foliosim from
//!   the run's `seed` instead.
//! * Sequential jobs keep one position per direction (`last_pos[ddir]`): a
//!   `rw=rw` job reads and writes the file as two independent streams.
//!   `rw=read:N` skips N bytes after each I/O; a negative N reads
//!   backwards, wrapping to the end of the file.
//! * Random jobs pick block `b = lastb * (r / (max + 1.0))` with fio's
//!   tausworthe (32 or 64 bit), or take the next LFSR value
//!   (`random_generator=lfsr`). Unless `norandommap`, fio's random map
//!   makes every block come up once per pass: a busy pick moves to the next
//!   free block after it (wrapping), fio's `axmap_next_free()`. zipf,
//!   pareto and normal (lib/zipf.c, lib/gauss.c) never use the map and
//!   scatter ranks with fio's golden-ratio hash; zoned and zoned_abs pick a
//!   zone with fio's zone generator, then a block within it.
//! * `rw=randread:N`: only every Nth I/O takes a new random offset, the
//!   others continue sequentially (`rw_sequencer=sequential`) or repeat the
//!   last offset (`identical`); `percentage_random` makes a share of the
//!   random I/Os sequential.
//! * Block sizes: fixed `bs` (per direction), or drawn per I/O from
//!   `bsrange` / `bssplit` with the direction's bsrange generator. A range
//!   size is `min + max * u`, rounded down to `min_bs` (unless
//!   `bs_unaligned`) and capped at max; a split takes the first entry, in
//!   ascending percentage order, whose cumulative share covers the draw.
//! * `rw`/`randrw` pick the direction the way fio's `get_rw_ddir()` does: a
//!   direction is kept until its issue count reaches `rwmix_issues`, then
//!   a new one is drawn with fio's rwmix generator (P(read) = rwmixread%);
//!   on a switch, `rwmix_issues = issues[old] * rwmix[new] / 100`.
//! * `zonemode=strided` (`setup_strided_zone_mode()`): I/O stays in a zone
//!   starting at `file_offset` until `zonesize` bytes were done there; then
//!   `file_offset += zonerange + zoneskip` and, once that is at or past the
//!   end of the file, it goes back to the job's start offset. Within a
//!   zone, positions wrap inside `zonerange`; the random map covers one
//!   zone (`zonerange / bs` blocks) and is cleared whenever the bytes done
//!   in the zone are a multiple of `zonerange` (so at every zone start).
//!   For seed 000 (`bs=4K zonesize=4K zonerange=64K size=600M`) this gives
//!   0, 64K, 128K, ..., 600M-64K, 0, 64K, ... and the wrap does NOT drop the
//!   page cache.
//! * Writes with `io_size` > `size` wrap to the start of the file like a
//!   time_based job (from a fio later than 3.33, commit b8766129).
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
//! * An I/O that would pass the end of the file ends the job, as in fio
//!   (so a region that is not a multiple of `bs` stops at its last whole
//!   block).

use crate::fio::{BsSplit, FioJob, RandomDist, RandomGenerator, Rw, RwSequencer};
use crate::fio_rand::{
    self, AxMap, FRand, Gauss, Lfsr, Zipf, FIO_RAND_BLOCK_OFF, FIO_RAND_BS1_OFF, FIO_RAND_BS_OFF,
    FIO_RAND_MIX_OFF, FIO_RAND_NR_OFFS, FIO_RAND_SEQ_RAND_READ_OFF, FIO_RAND_ZONE_OFF,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Dir {
    Read,
    Write,
    /// A trim job's I/O (fio's DDIR_TRIM).
    Trim,
}

impl Dir {
    /// The generator's per-direction slot: a trim job has only trims and
    /// draws them in the write slot.
    fn idx(self) -> usize {
        match self {
            Dir::Read => 0,
            Dir::Write | Dir::Trim => 1,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Io {
    /// Absolute byte offset in the file.
    pub offset: u64,
    pub len: u64,
    pub dir: Dir,
}

#[derive(Clone, Debug)]
enum Dist {
    Uniform,
    Zipf(Zipf),
    Pareto(Zipf),
    Gauss(Gauss),
    /// zoned / zoned_abs: per direction and per access percent v-1, the
    /// zone's (start, end), in percent of the region (zoned) or bytes
    /// (zoned_abs) -- fio's `zone_state_index`. None: no zones for that
    /// direction, plain uniform.
    Zoned {
        abs: bool,
        index: Box<[Option<ZoneIndex>; 2]>,
    },
}

/// Per access percent v-1: a zone's (start, end).
type ZoneIndex = [(u64, u64); 100];

/// fio's per-job generator states (`td_fill_rand_seeds_internal()`).
#[derive(Clone, Debug)]
struct States {
    random: FRand,
    bsrange: [FRand; 2],
    rwmix: FRand,
    seq_rand: [FRand; 2],
    zone: FRand,
}

impl States {
    fn new(seeds: &[u64; FIO_RAND_NR_OFFS], use64: bool) -> States {
        States {
            random: FRand::new(seeds[FIO_RAND_BLOCK_OFF], use64),
            bsrange: [
                FRand::new(seeds[FIO_RAND_BS_OFF], use64),
                FRand::new(seeds[FIO_RAND_BS1_OFF], use64),
            ],
            rwmix: FRand::new(seeds[FIO_RAND_MIX_OFF], false),
            // Both directions start from the read seed, as in fio.
            seq_rand: [FRand::new(seeds[FIO_RAND_SEQ_RAND_READ_OFF], false); 2],
            zone: FRand::new(seeds[FIO_RAND_ZONE_OFF], false),
        }
    }
}

#[derive(Clone, Debug)]
pub struct IoGen {
    rw: Rw,
    /// `rw=read:N`: bytes added after each sequential I/O (may be < 0).
    seq_add: i64,
    /// `rw=randread:N` (fio's o->ddir_seq_nr) and its countdown.
    seq_nr: u32,
    ddir_seq_nr: u32,
    sequencer: RwSequencer,
    perc_rand: [u32; 2],
    min_bs: [u64; 2],
    max_bs: [u64; 2],
    ba: [u64; 2],
    bssplit: [Vec<BsSplit>; 2],
    bs_unaligned: bool,
    /// Job start offset (fio's get_start_offset()).
    start: u64,
    /// fio's f->io_size (the job's size) and f->real_file_size.
    io_size: u64,
    real_file_size: u64,
    time_based: bool,
    writes_wrap: bool,
    limit_bytes: Option<u64>,
    limit_ios: Option<u64>,
    strided: bool,
    zonesize: u64,
    zonerange: u64,
    zoneskip: u64,
    dist: Dist,
    map: Option<AxMap>,
    lfsr: Option<Lfsr>,
    seeds: [u64; FIO_RAND_NR_OFFS],
    /// tausworthe64 for the states seeded at each new loop (fio may switch
    /// to it for > 2^32 blocks after the first seeding).
    use64: bool,
    rand_repeatable: bool,
    st: States,
    rwmix: [u64; 2],
    invalidate_enabled: bool,

    file_offset: u64,
    last_pos: [u64; 2],
    last_start: [Option<u64>; 2],
    zone_bytes: u64,
    rwmix_ddir: Dir,
    rwmix_issues: u64,
    io_issues: [u64; 2],
    bytes_issued: u64,
    ios_issued: u64,
    passes: u64,
    /// Loops still to start (fio's o->loops once keep_running() took the
    /// first); max_bs over the directions, for keep_running()'s
    /// "less than one I/O left" rule.
    loops_left: u64,
    max_io: u64,
    /// io_size: the bytes of one loop when set (fio ends a loop there,
    /// wherever in the file it is); bytes issued when this pass began.
    pass_bytes: Option<u64>,
    pass_start: u64,
    pending_invalidate: bool,
    done: bool,
}

/// Most draws fio's get_next_buflen() may need before a size fits; fio
/// would loop forever where none can (a bssplit whose only weighted sizes
/// never fit), this generator ends the job instead.
const BUFLEN_TRIES: u32 = 10_000;

/// fio's `zone_state_index` for one direction (`__td_zone_gen_index()`).
fn zone_index(zones: &[crate::fio::ZoneSplit], abs: bool) -> Option<ZoneIndex> {
    if zones.is_empty() {
        return None;
    }
    let mut idx = [(0u64, 0u64); 100];
    let (mut aprev, mut sprev) = (0usize, 0u64);
    for z in zones {
        let len = if abs { z.size } else { z.size_perc as u64 };
        for e in idx.iter_mut().skip(aprev).take(z.access_perc as usize) {
            *e = (sprev, sprev + len);
        }
        aprev += z.access_perc as usize;
        sprev += len;
    }
    Some(idx)
}

impl IoGen {
    /// The generator for `job`. fio's offsets depend only on the job
    /// (randseed, randrepeat, its thread number and file name); the run's
    /// `seed` stands in for fio's system RNG only with `randrepeat=0` and
    /// no `randseed` ([`fio_rand::job_rand_seeds`]).
    pub fn new(job: &FioJob, seed: u64) -> IoGen {
        let random = job.rw.is_random();
        let io_size = job.size;
        let real_file_size = job.offset.saturating_add(job.size);
        // Seeded with randrepeat as given; fio clears rand_repeatable for
        // a randseed only afterwards (see FioJob::randrepeat).
        let seeds = fio_rand::job_rand_seeds(job, seed);
        let rand_repeatable = job.randrepeat && !job.randseed_set;
        let mut use64 = job.random_generator == RandomGenerator::Tausworthe64;
        // Seeded at job setup, before init_random_map() may switch.
        let st = States::new(&seeds, use64);

        // init_random_map(): distributions first (they need no map).
        let fsize = real_file_size.min(io_size);
        let range_size = job.min_bs[0].min(job.min_bs[1]).max(1);
        let nranges = fsize.div_ceil(range_size).max(1);
        let dist_seed = if rand_repeatable {
            fio_rand::jhash(job.filename.as_bytes(), 0).wrapping_mul(job.thread_number.max(1))
        } else {
            seeds[FIO_RAND_BLOCK_OFF] as u32
        };
        let dist = match job.random_distribution {
            RandomDist::Random => Dist::Uniform,
            RandomDist::Zipf(t) => Dist::Zipf(Zipf::new_zipf(nranges, t, dist_seed)),
            RandomDist::Pareto(h) => Dist::Pareto(Zipf::new_pareto(nranges, h, dist_seed)),
            RandomDist::Normal(d) => Dist::Gauss(Gauss::new(nranges, d, dist_seed)),
            RandomDist::Zoned | RandomDist::ZonedAbs => {
                let abs = job.random_distribution == RandomDist::ZonedAbs;
                Dist::Zoned {
                    abs,
                    index: Box::new([
                        zone_index(&job.zone_split[0], abs),
                        zone_index(&job.zone_split[1], abs),
                    ]),
                }
            }
        };
        let mut map = None;
        let mut lfsr = None;
        let mut failed = false;
        let plain = matches!(dist, Dist::Uniform | Dist::Zoned { .. });
        if random && plain {
            let span = if job.zonemode_strided {
                job.zonerange
            } else {
                fsize
            };
            let blocks = span / job.bs.max(1);
            // check_rand_gen_limits(): 32-bit tausworthe cannot reach past
            // 2^32 blocks; fio switches to tausworthe64 unless told.
            if blocks > u32::MAX as u64
                && job.random_generator == RandomGenerator::Tausworthe
                && !job.random_generator_set
            {
                use64 = true;
            }
            if job.random_generator == RandomGenerator::Lfsr {
                // fio fails the job where lfsr_init() fails.
                lfsr = Lfsr::new(blocks, seeds[FIO_RAND_BLOCK_OFF], 0);
                failed = lfsr.is_none();
            } else if !job.norandommap {
                map = Some(AxMap::new(blocks));
            }
        }

        let limit = job
            .io_size
            .unwrap_or(job.size)
            .saturating_mul(job.loops.max(1));
        IoGen {
            rw: job.rw,
            seq_add: job.rw_seq_add,
            seq_nr: job.rw_seq_nr,
            // fio starts the countdown at 1: the first I/O is random.
            ddir_seq_nr: 1,
            sequencer: job.rw_sequencer,
            perc_rand: job.percentage_random,
            min_bs: job.min_bs.map(|b| b.max(1)),
            max_bs: job.max_bs.map(|b| b.max(1)),
            ba: job.ba.map(|b| b.max(1)),
            bssplit: job.bssplit.clone(),
            bs_unaligned: job.bs_unaligned,
            start: job.offset,
            io_size,
            real_file_size,
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
            dist,
            map,
            lfsr,
            seeds,
            use64,
            rand_repeatable,
            st,
            rwmix: [job.rwmixread as u64, 100 - job.rwmixread.min(100) as u64],
            invalidate_enabled: job.invalidate && !job.direct,
            file_offset: job.offset,
            last_pos: [job.offset; 2],
            last_start: [None; 2],
            zone_bytes: 0,
            rwmix_ddir: Dir::Read,
            rwmix_issues: 0,
            io_issues: [0; 2],
            bytes_issued: 0,
            ios_issued: 0,
            passes: 1,
            loops_left: job.loops.max(1) - 1,
            max_io: job.max_bs[0].max(job.max_bs[1]),
            // fio drops the file's cache when it opens it (invalidate=1).
            pending_invalidate: job.invalidate && !job.direct,
            done: failed || job.size < job.bs,
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
        // End of a pass: fio's keep_running(). A time_based job always
        // loops again; otherwise the loops left, then (only with io_size:
        // without it, a file that ran out is done) while at least one
        // largest I/O of the byte budget is left.
        let more = if self.time_based {
            true
        } else if self.loops_left > 0 {
            self.loops_left -= 1;
            true
        } else {
            self.pass_bytes.is_some()
                && self
                    .limit_bytes
                    .is_some_and(|l| l.saturating_sub(self.bytes_issued) >= self.max_io)
        };
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

    /// The I/O `orig` was issued as `new` (zonemode=zbd moved or cut it):
    /// fio keeps the adjusted io_u's position and length, so the next
    /// sequential I/O follows it and the byte budget counts what was done.
    pub fn adjusted(&mut self, orig: Io, new: Io) {
        let d = new.dir.idx();
        self.last_start[d] = Some(new.offset);
        self.last_pos[d] = new.offset + new.len;
        self.bytes_issued = (self.bytes_issued + new.len).saturating_sub(orig.len);
        self.zone_bytes = (self.zone_bytes + new.len).saturating_sub(orig.len);
    }

    fn account(&mut self, io: Io) -> Io {
        self.bytes_issued += io.len;
        self.ios_issued += 1;
        self.io_issues[io.dir.idx()] += 1;
        self.zone_bytes += io.len;
        self.last_start[io.dir.idx()] = Some(io.offset);
        self.last_pos[io.dir.idx()] = io.offset + io.len;
        io
    }

    /// fio's clear_io_state() between loops: back to the start offset,
    /// fresh map, file reopened, and (randrepeat) the generators re-seeded
    /// so the loop repeats the same pattern.
    fn new_pass(&mut self) {
        self.passes += 1;
        self.pass_start = self.bytes_issued;
        self.file_offset = self.start;
        self.zone_bytes = 0;
        self.rwmix_issues = 0;
        if self.rand_repeatable {
            self.st = States::new(&self.seeds, self.use64);
        }
        self.file_reset();
        if self.invalidate_enabled {
            self.pending_invalidate = true;
        }
    }

    /// fio_file_reset(): positions back to the zone start, map cleared,
    /// LFSR restarted from its seed.
    fn file_reset(&mut self) {
        self.last_pos = [self.file_offset; 2];
        self.last_start = [None; 2];
        if let Some(m) = &mut self.map {
            m.reset();
        }
        if let Some(l) = &mut self.lfsr {
            l.reset(self.seeds[FIO_RAND_BLOCK_OFF]);
        }
    }

    fn loop_cache_invalidate(&mut self) {
        if self.invalidate_enabled {
            self.pending_invalidate = true;
        }
    }

    /// fio's get_rw_ddir().
    fn choose_dir(&mut self) -> Dir {
        if !self.rw.is_mixed() {
            return if self.rw.has_reads() {
                Dir::Read
            } else if self.rw.is_trim() {
                Dir::Trim
            } else {
                Dir::Write
            };
        }
        let cur = self.rwmix_ddir;
        if self.io_issues[cur.idx()] >= self.rwmix_issues {
            let v = self.st.rwmix.between(1, 100);
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

    /// fio's fill_io_u() for a read or write.
    fn fill(&mut self) -> Option<Io> {
        let dir = self.choose_dir();
        if self.strided {
            self.setup_strided_zone(dir);
        }
        let (rel, busy_ok) = self.next_offset(dir)?;
        if rel >= self.io_size {
            return None;
        }
        let offset = rel.checked_add(self.file_offset)?;
        if offset >= self.real_file_size {
            return None;
        }
        let mut len = self.next_buflen(dir, offset)?;
        if offset.saturating_add(len) > self.real_file_size {
            return None;
        }
        // mark_random_map(): an I/O is cut where it meets a block already
        // done. (fio asserts at least one block was free; were none, the
        // I/O keeps its length here.)
        if let (Some(m), false) = (&mut self.map, busy_ok) {
            let min_bs = self.min_bs[dir.idx()];
            let block = (offset - self.file_offset) / min_bs;
            let nr = m.set_nr(block, len.div_ceil(min_bs));
            if nr > 0 && nr * min_bs < len {
                len = nr * min_bs;
            }
        }
        Some(Io { offset, len, dir })
    }

    /// fio's get_next_offset() + get_next_block(): the offset relative to
    /// the zone start, and whether the random map is left alone
    /// (IO_U_F_BUSY_OK: the sequential I/Os of a random job).
    fn next_offset(&mut self, dir: Dir) -> Option<(u64, bool)> {
        let mut rw_seq_hit = false;
        if self.seq_nr != 0 {
            self.ddir_seq_nr = self.ddir_seq_nr.wrapping_sub(1);
            if self.ddir_seq_nr == 0 {
                rw_seq_hit = true;
                self.ddir_seq_nr = self.seq_nr;
            }
        }
        let ba = self.ba[dir.idx()];
        if rw_seq_hit {
            if !self.rw.is_random() {
                return self.seq_offset(dir).map(|o| (o, false));
            }
            if self.should_do_random(dir) {
                let b = self.rand_block(dir)?;
                return Some((b.wrapping_mul(ba), false));
            }
            if let Some(o) = self.seq_offset(dir) {
                return Some((o, true));
            }
            let b = self.rand_block(dir)?;
            return Some((b.wrapping_mul(ba), true));
        }
        match self.sequencer {
            RwSequencer::Sequential => {
                if let Some(o) = self.seq_offset(dir) {
                    return Some((o, true));
                }
                let b = self.rand_block(dir)?;
                Some((b.wrapping_mul(ba), true))
            }
            RwSequencer::Identical => {
                let o = self.last_start[dir.idx()].map_or(0, |s| s.wrapping_sub(self.file_offset));
                Some((o, true))
            }
        }
    }

    /// fio's should_do_random() (`percentage_random`).
    fn should_do_random(&mut self, dir: Dir) -> bool {
        let p = self.perc_rand[dir.idx()] as u64;
        p == 100 || self.st.seq_rand[dir.idx()].between(1, 100) <= p
    }

    /// fio 3.33's get_next_seq_offset(): offset relative to the zone start.
    fn seq_offset(&mut self, dir: Dir) -> Option<u64> {
        let d = dir.idx();
        let end = self.io_size.saturating_add(self.start);
        if self.last_pos[d] >= end && (self.time_based || (self.writes_wrap && dir == Dir::Write)) {
            self.last_pos[d] = self.file_offset;
            self.loop_cache_invalidate();
        }
        if self.last_pos[d] >= self.real_file_size {
            return None;
        }
        // Backwards I/O starting at a non-zero offset begins at the end.
        let top = self.io_size.min(self.real_file_size);
        if self.last_pos[d] == self.file_offset && self.file_offset != 0 && self.seq_add < 0 {
            self.last_pos[d] = top;
        }
        let mut pos = self.last_pos[d].wrapping_sub(self.file_offset);
        if pos != 0 && self.seq_add != 0 {
            pos = pos.wrapping_add(self.seq_add as u64);
            // Holed I/O past the end wraps to the start (fio compares the
            // zone-relative position with the file size); backwards I/O
            // below the start wraps to the end.
            if pos >= self.real_file_size {
                pos = if self.seq_add > 0 {
                    self.file_offset
                } else {
                    top.wrapping_add(self.seq_add as u64)
                };
            }
        }
        Some(pos)
    }

    /// fio's get_next_rand_block(): a block index, None at the end of a pass.
    fn rand_block(&mut self, dir: Dir) -> Option<u64> {
        if let Some(b) = self.rand_offset(dir) {
            return Some(b);
        }
        if self.time_based {
            self.file_reset();
            self.loop_cache_invalidate();
            return self.rand_offset(dir);
        }
        None
    }

    /// fio's last_block(): blocks of `ba` random offsets are drawn from.
    fn last_block(&self, dir: Dir) -> u64 {
        let d = dir.idx();
        let mut max_size = self.io_size.min(self.real_file_size);
        if self.strided {
            max_size = self.zonerange;
        }
        if self.min_bs[d] > self.ba[d] {
            max_size = max_size.saturating_sub(self.min_bs[d] - self.ba[d]);
        }
        max_size / self.ba[d]
    }

    /// fio's get_next_rand_offset().
    fn rand_offset(&mut self, dir: Dir) -> Option<u64> {
        match &mut self.dist {
            Dist::Zipf(z) => return Some(z.next_zipf()),
            Dist::Pareto(z) => return Some(z.next_pareto()),
            Dist::Gauss(g) => return Some(g.next_value()),
            Dist::Uniform | Dist::Zoned { .. } => {}
        }
        let lastb = self.last_block(dir);
        if lastb == 0 {
            return None;
        }
        let (abs, zone) = match &self.dist {
            Dist::Zoned { abs, index } => match &index[dir.idx()] {
                Some(idx) => {
                    let v = self.st.zone.between(1, 100);
                    (*abs, Some(idx[v as usize - 1]))
                }
                None => (false, None),
            },
            _ => (false, None),
        };
        let Some((zstart, zend)) = zone else {
            return self.uniform_block(lastb);
        };
        if abs {
            // __get_next_rand_offset_zoned_abs(): zones in bytes.
            let ba = self.ba[dir.idx()];
            let (stotal, send) = (zstart / ba, zend / ba);
            if send > lastb {
                return None; // fio: "zoned_abs sizes exceed file size"
            }
            Some(self.uniform_block(send - stotal)? + stotal)
        } else {
            // __get_next_rand_offset_zoned(): zones in percent. The map
            // is consulted with the zone-relative block, as fio does.
            let offset = zstart * lastb / 100;
            let b = self.uniform_block(lastb * (zend - zstart) / 100)?;
            Some(b + offset)
        }
    }

    /// fio's __get_next_rand_offset(): a block in `[0, lastb)` (an LFSR
    /// ignores `lastb`: it covers the whole map), moved to the next free
    /// block when the random map says it was done.
    fn uniform_block(&mut self, lastb: u64) -> Option<u64> {
        let b = match &mut self.lfsr {
            Some(l) => l.next_value()?,
            None => {
                let r = self.st.random.rand();
                let max = self.st.random.max();
                (lastb as f64 * (r as f64 / (max as f64 + 1.0))) as u64
            }
        };
        match &self.map {
            Some(m) if m.isset(b) => m.next_free(b),
            _ => Some(b),
        }
    }

    /// fio 3.33's get_next_buflen(): the I/O size; None where fio fails
    /// the I/O (not even `min_bs` fits before the end of the region).
    fn next_buflen(&mut self, dir: Dir, offset: u64) -> Option<u64> {
        let d = dir.idx();
        let (minbs, maxbs) = (self.min_bs[d], self.max_bs[d]);
        if minbs == maxbs {
            return Some(minbs);
        }
        let end = self.io_size.saturating_add(self.start);
        let fits = |len: u64| offset.saturating_add(len) <= end;
        if !fits(minbs) {
            return None;
        }
        let frand_max = self.st.bsrange[d].max();
        let mut buflen = 0u64;
        for _ in 0..BUFLEN_TRIES {
            let r = self.st.bsrange[d].rand();
            if self.bssplit[d].is_empty() {
                buflen = minbs + (maxbs as f64 * (r as f64 / (frand_max as f64 + 1.0))) as u64;
            } else {
                let mut perc = 0u64;
                for bsp in &self.bssplit[d] {
                    if bsp.perc == 0 {
                        continue;
                    }
                    buflen = bsp.bs;
                    perc += bsp.perc as u64;
                    if r / perc <= frand_max / 100 && fits(buflen) {
                        break;
                    }
                }
            }
            if !self.bs_unaligned {
                if minbs.is_power_of_two() {
                    buflen &= !(minbs - 1);
                } else {
                    buflen -= buflen % minbs;
                }
            }
            buflen = buflen.min(maxbs);
            if fits(buflen) {
                return (buflen > 0).then_some(buflen);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fio::{parse_job_str, test_job as job};
    use rand::{Rng, SeedableRng};
    use rand_pcg::Pcg64Mcg;
    use std::collections::BTreeMap;

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
        // randrepeat (the default): fio re-seeds at each loop, so the
        // second loop repeats the first one's order; with randseed= it
        // does not re-seed and draws a new order.
        assert_eq!(v[..256], v[256..], "randrepeat repeats the pattern");
        let j = job("rw=randread\nsize=1m\nloops=2\nrandseed=7\n");
        let w = all(&j, 10_000);
        assert_eq!(w.len(), 512);
        assert_ne!(w[..256], w[256..], "randseed: a new order each loop");
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
    fn bssplit_and_bsrange_sizes() {
        // Sorted 4k/25, 64k/75: a draw in the lowest quarter of the range
        // picks 4k, every other one 64k.
        let j = job("rw=randread\nsize=64m\nnorandommap\nbssplit=64k/75:4k/25\n");
        let v = all(&j, 4000);
        assert!(v.iter().all(|io| io.len == 4096 || io.len == 65536));
        let small = v.iter().filter(|io| io.len == 4096).count() as f64 / v.len() as f64;
        assert!((0.22..0.28).contains(&small), "4k share {small}");
        // min + max * u, floored to 4k, capped at 10k: 4k and 8k take 40%
        // each, the rest is capped to 10k.
        let j = job("rw=randread\nsize=64m\nnorandommap\nbsrange=4k-10k\n");
        let v = all(&j, 5000);
        let share = |len: u64| v.iter().filter(|io| io.len == len).count() as f64 / v.len() as f64;
        assert!((0.37..0.43).contains(&share(4096)), "{}", share(4096));
        assert!((0.37..0.43).contains(&share(8192)), "{}", share(8192));
        assert!((0.17..0.23).contains(&share(10240)), "{}", share(10240));
        // Offsets stay aligned to min_bs (ba defaults to it).
        assert!(v.iter().all(|io| io.offset % 4096 == 0));
        // bs_unaligned keeps the raw size.
        let j = job("rw=read\nsize=64m\nbsrange=1k-10k\nbs_unaligned\n");
        assert!(all(&j, 200).iter().any(|io| io.len % 1024 != 0));
    }

    #[test]
    fn random_map_cuts_ios_at_done_blocks() {
        // Variable sizes with the map: each I/O is cut where it meets a
        // block already done, so a pass never does a block twice.
        let j = job("rw=randread\nsize=4m\nbsrange=4k-64k\n");
        let v = all(&j, 100_000);
        let mut done = vec![false; 1024];
        let mut bytes = 0;
        for io in &v {
            for b in io.offset / 4096..(io.offset + io.len) / 4096 {
                assert!(!done[b as usize], "block {b} twice: {io:?}");
                done[b as usize] = true;
            }
            bytes += io.len;
        }
        assert_eq!(bytes, 4 << 20, "the pass covers the file exactly once");
        assert!(v.iter().any(|io| io.len > 4096));
        // The LFSR covers every block once without a map.
        let j = job("rw=randread\nsize=4m\nrandom_generator=lfsr\n");
        let mut offs: Vec<u64> = all(&j, 10_000).iter().map(|io| io.offset / 4096).collect();
        assert_eq!(offs.len(), 1024);
        offs.sort_unstable();
        assert_eq!(offs, (0..1024).collect::<Vec<_>>());
    }

    #[test]
    fn rw_modifiers_and_percentage_random() {
        // Backwards: 0, then from 8k below the end down by 4k (the I/O
        // adds 4k, the modifier takes 8k).
        let j = job("rw=read:-8k\nsize=64k\n");
        let offs: Vec<u64> = all(&j, 100).iter().map(|io| io.offset >> 10).collect();
        assert_eq!(&offs[..5], &[0, 56, 52, 48, 44]);
        assert_eq!(offs.len(), 16);
        // randread:4: one random offset, then three sequential I/Os after it.
        let j = job("rw=randread:4\nsize=16m\n");
        let v = all(&j, 400);
        for w in v.chunks(4) {
            for k in 1..w.len() {
                assert_eq!(w[k].offset, w[k - 1].offset + 4096, "{w:?}");
            }
        }
        // rw_sequencer=identical repeats the random offset instead.
        let j = job("rw=randread:4\nrw_sequencer=identical\nsize=16m\n");
        for w in all(&j, 400).chunks(4) {
            assert!(w.iter().all(|io| io.offset == w[0].offset), "{w:?}");
        }
        // percentage_random=0: a random job goes sequentially.
        let j = job("rw=randread\npercentage_random=0\nsize=1m\n");
        let offs: Vec<u64> = all(&j, 1000).iter().map(|io| io.offset / 4096).collect();
        assert_eq!(offs, (0..256).collect::<Vec<_>>());
    }

    #[test]
    fn zoned_puts_accesses_in_their_zones() {
        let j = job("rw=randread\nsize=64m\nrandom_distribution=zoned:50/5:30/15:20/80\n");
        let v = all(&j, 10_000);
        let frac = |lo: u64, hi: u64| {
            v.iter()
                .filter(|io| (lo..hi).contains(&(io.offset * 100 / (64 << 20))))
                .count() as f64
                / v.len() as f64
        };
        assert!((0.47..0.53).contains(&frac(0, 5)), "{}", frac(0, 5));
        assert!((0.27..0.33).contains(&frac(5, 20)), "{}", frac(5, 20));
        assert!((0.17..0.23).contains(&frac(20, 100)), "{}", frac(20, 100));
        let j = job("rw=randread\nsize=64m\nrandom_distribution=zoned_abs:70/1m:30/63m\n");
        let v = all(&j, 10_000);
        let low = v.iter().filter(|io| io.offset < 1 << 20).count() as f64 / v.len() as f64;
        assert!((0.67..0.73).contains(&low), "{low}");
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
        // The run's seed does not enter: fio's offsets depend on the job.
        let mut g = IoGen::new(&j, 2);
        let b: Vec<Io> = std::iter::from_fn(|| g.next_io()).collect();
        assert_eq!(a, b);
        // fio's seeds depend on the job's thread number and randseed.
        let mut j2 = j.clone();
        j2.thread_number = 2;
        assert_ne!(a, all(&j2, 1000));
        let j3 = job("rw=randrw\nsize=1m\nrandseed=1\n");
        assert_ne!(a, all(&j3, 1000));
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
            "bsrange",
            "bssplit",
            "ba",
            "bs_unaligned",
            "random_generator",
            "percentage_random",
            "rw_sequencer",
            "randseed",
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
            "read:-8k",
            "randrw:3",
            "write:12k",
            "4k-64k",
            "1k:7k,2k-3k",
            "4k/50:64k/50",
            "4k/20:8k:16k/,8k",
            "zoned:50/5:30/15:20/80",
            "zoned_abs:50/64k:50/512k",
            "zoned:100",
            "lfsr",
            "tausworthe64",
            "identical",
            "30,70",
            "4k,8k",
            "512",
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
                    assert!(
                        io.len > 0 && io.len <= j.max_bs[0].max(j.max_bs[1]),
                        "{text}: {io:?}"
                    );
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
}
