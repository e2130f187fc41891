//! The driver: runs workloads (fio jobs, the mmap probe, cache traces)
//! through the kernel model and collects what fio and the kernel would
//! print. Workloads come from `foliosim-workload`; nothing here models the
//! kernel.

use std::collections::BTreeMap;

use foliosim_workload::fio::{ExitWhat, FadviseHint, FioJob, IoEngine, RateProcess};
use foliosim_workload::iogen::{job_seed, Dir};
use foliosim_workload::jobio::{IoKind, JobIo, Op as JobOp, SyncKind};
use foliosim_workload::mmap_probe::ProbeSpec;
use foliosim_workload::trace::TraceReq;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde::Serialize;

use crate::mm::filemap::OpenFile;
use crate::mm::memcontrol::MemcgId;
use crate::mm::readahead::FileRaState;
use crate::mm::vmscan::classic::ClassicLru;
use crate::mm::vmscan::ReclaimPolicy;
use crate::mm::vmstat::{Counters, NAMES, NR_ITEMS};
use crate::mm::{Kernel, MmConfig, PAGE_SHIFT, PAGE_SIZE};

/// Which reclaim policy runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum LruKind {
    Classic,
    Mglru,
}

impl std::str::FromStr for LruKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "classic" => Ok(LruKind::Classic),
            "mglru" => Ok(LruKind::Mglru),
            _ => Err(format!("unknown lru '{s}' (classic, mglru)")),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct SimConfig {
    pub mm: MmConfig,
    pub lru: LruKind,
    /// The workload's memcg limit in bytes; None runs it in the root.
    pub memcg_limit: Option<u64>,
    pub seed: u64,
    pub timeline: bool,
    /// MGLRU's sysfs knobs (/sys/kernel/mm/lru_gen/*), as key=value pairs:
    /// lru_gen.enabled (y, n or a caps mask) and lru_gen.min_ttl_ms.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lru_gen_sysctl: Vec<(String, String)>,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            mm: MmConfig::default(),
            lru: LruKind::Classic,
            memcg_limit: None,
            seed: 1,
            timeline: false,
            lru_gen_sysctl: Vec::new(),
        }
    }
}

/// Checks MGLRU sysfs knobs before a run (the CLI reports the error).
pub fn check_lru_gen_sysctl(kv: &[(String, String)]) -> Result<(), String> {
    let mut g = crate::mm::vmscan::lru_gen::LruGen::new();
    for (k, v) in kv {
        g.set_sysctl(k, v)?;
    }
    Ok(())
}

/// Latency histogram: log2 buckets with 16 linear sub-buckets, fixed size,
/// so recording allocates nothing.
#[derive(Clone, Debug)]
pub struct LatHist {
    buckets: Vec<u64>,
    pub n: u64,
    pub sum: u128,
    pub sumsq: f64,
    pub min: u64,
    pub max: u64,
}

const SUB: u64 = 16;

impl Default for LatHist {
    fn default() -> Self {
        LatHist {
            buckets: vec![0; 64 * SUB as usize],
            n: 0,
            sum: 0,
            sumsq: 0.0,
            min: u64::MAX,
            max: 0,
        }
    }
}

impl LatHist {
    #[inline]
    fn idx(v: u64) -> usize {
        if v < SUB {
            return v as usize;
        }
        let lg = 63 - v.leading_zeros() as u64;
        let sub = (v >> (lg - 4)) & (SUB - 1);
        ((lg - 3) * SUB + sub) as usize
    }
    fn value(i: usize) -> u64 {
        let i = i as u64;
        if i < SUB {
            return i;
        }
        let lg = i / SUB + 3;
        let sub = i % SUB;
        ((SUB + sub) << (lg - 4)) + (1u64 << (lg - 4)) / 2
    }
    #[inline]
    pub fn add(&mut self, v: u64) {
        self.buckets[Self::idx(v)] += 1;
        self.n += 1;
        self.sum += v as u128;
        self.sumsq += (v as f64) * (v as f64);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }
    pub fn percentile(&self, p: f64) -> u64 {
        if self.n == 0 {
            return 0;
        }
        let target = ((p / 100.0) * self.n as f64).ceil().max(1.0) as u64;
        let mut acc = 0;
        for (i, &c) in self.buckets.iter().enumerate() {
            acc += c;
            if acc >= target {
                return Self::value(i).clamp(self.min, self.max);
            }
        }
        self.max
    }
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum as f64 / self.n as f64
        }
    }
    pub fn stdev(&self) -> f64 {
        if self.n < 2 {
            return 0.0;
        }
        let m = self.mean();
        ((self.sumsq / self.n as f64 - m * m).max(0.0)).sqrt()
    }
}

/// fio's per-direction statistics of one job.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DirStats {
    pub io_bytes: u64,
    pub total_ios: u64,
    pub runtime_ms: u64,
    pub bw_bytes: u64,
    pub iops: f64,
    pub clat_ns: BTreeMap<String, u64>,
    pub clat_mean_ns: f64,
    pub clat_stdev_ns: f64,
    pub clat_min_ns: u64,
    pub clat_max_ns: u64,
}

impl DirStats {
    fn from(h: &LatHist, bytes: u64, ios: u64, runtime_ns: u64) -> Self {
        let mut p = BTreeMap::new();
        for q in [
            1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9,
            99.95, 99.99,
        ] {
            p.insert(format!("{q:.6}"), h.percentile(q));
        }
        let secs = runtime_ns as f64 / 1e9;
        DirStats {
            io_bytes: bytes,
            total_ios: ios,
            runtime_ms: runtime_ns / 1_000_000,
            bw_bytes: if secs > 0.0 {
                (bytes as f64 / secs) as u64
            } else {
                0
            },
            iops: if secs > 0.0 { ios as f64 / secs } else { 0.0 },
            clat_ns: p,
            clat_mean_ns: h.mean(),
            clat_stdev_ns: h.stdev(),
            clat_min_ns: if h.n > 0 { h.min } else { 0 },
            clat_max_ns: h.max,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct JobReport {
    pub jobname: String,
    pub jobnum: u32,
    pub read: DirStats,
    pub write: DirStats,
    pub oom_killed: bool,
    /// fio's per-job error (errno; 5 = EIO when rate_min was not met).
    pub error: i32,
}

/// One timeline sample: counters at the end of a simulated second.
#[derive(Clone, Debug, Serialize)]
pub struct TimelineSample {
    pub second: u64,
    pub vmstat: BTreeMap<&'static str, u64>,
    pub memcg: BTreeMap<&'static str, u64>,
}

/// Everything a run prints.
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    pub lru: LruKind,
    pub variants: crate::mm::Variants,
    pub elapsed_ns: u64,
    pub io_wait_ns: u64,
    pub jobs: Vec<JobReport>,
    /// /proc/vmstat-style counters of the machine (pgpgin/pgpgout in KiB).
    pub vmstat: BTreeMap<&'static str, u64>,
    /// memory.stat-style counters of the workload's memcg (the root's when
    /// no limit was set).
    pub memcg: BTreeMap<&'static str, u64>,
    pub timeline: Option<Vec<TimelineSample>>,
    pub lru_gen: Option<serde_json::Value>,
    /// With --timeline under MGLRU: the lru_gen view at each simulated second.
    pub lru_gen_timeline: Option<Vec<(u64, serde_json::Value)>>,
}

fn counters_map(c: &Counters) -> BTreeMap<&'static str, u64> {
    (0..NR_ITEMS).map(|i| (NAMES[i], c.0[i])).collect()
}

/// A running model with its policy chosen at run time.
pub enum AnyKernel {
    Classic(Kernel<ClassicLru>),
    Mglru(Kernel<crate::mm::vmscan::lru_gen::LruGen>),
}

/// Calls `$body` with `$k` bound to the concrete kernel.
#[macro_export]
macro_rules! with_kernel {
    ($any:expr, $k:ident => $body:expr) => {
        match $any {
            $crate::sim::AnyKernel::Classic($k) => $body,
            $crate::sim::AnyKernel::Mglru($k) => $body,
        }
    };
}

/// The model set up for a run: kernel, the workload's memcg, its files.
pub struct Sim {
    pub k: AnyKernel,
    pub memcg: MemcgId,
    pub cfg: SimConfig,
    lru_gen_samples: Vec<(u64, serde_json::Value)>,
    next_sample: u64,
}

impl Sim {
    pub fn new(cfg: SimConfig) -> Sim {
        let mut k = match cfg.lru {
            LruKind::Classic => AnyKernel::Classic(Kernel::new(cfg.mm.clone(), ClassicLru::new())),
            LruKind::Mglru => {
                let mut g = crate::mm::vmscan::lru_gen::LruGen::new();
                for (key, v) in &cfg.lru_gen_sysctl {
                    g.set_sysctl(key, v)
                        .expect("lru_gen sysctls are checked before the run");
                }
                AnyKernel::Mglru(Kernel::new(cfg.mm.clone(), g))
            }
        };
        let memcg = match cfg.memcg_limit {
            Some(l) => with_kernel!(&mut k, k => k.add_memcg("foliosim", Some(l / PAGE_SIZE))),
            None => 0,
        };
        with_kernel!(&mut k, k => {
            if cfg.timeline {
                k.core.timeline = Some(Vec::new());
                k.core.timeline_memcg = memcg;
            }
        });
        Sim {
            k,
            memcg,
            cfg,
            lru_gen_samples: Vec::new(),
            next_sample: 1_000_000_000,
        }
    }

    fn report(&self, jobs: Vec<JobReport>) -> RunReport {
        with_kernel!(&self.k, k => {
            let core = &k.core;
            let m = &core.memcgs[self.memcg as usize];
            let mut memcg = counters_map(if self.memcg == 0 { &core.vm } else { &m.stat });
            if self.memcg == 0 {
                // The root's memcg-only events (v1 charge counts).
                use crate::mm::vmstat::Item;
                for it in [Item::MEMCG_PGPGIN, Item::MEMCG_PGPGOUT] {
                    memcg.insert(NAMES[it as usize], m.stat.get(it));
                }
            }
            let sizes = k.policy.lru_sizes(self.memcg);
            let (file, anon, mapped, dirty, wb) = if self.memcg == 0 {
                let s = |f: fn(&crate::mm::memcontrol::MemCgroup) -> u64| core.memcgs.iter().map(f).sum::<u64>();
                (s(|m| m.nr_file), s(|m| m.nr_anon), s(|m| m.nr_mapped), s(|m| m.nr_dirty), s(|m| m.nr_writeback))
            } else {
                (m.nr_file, m.nr_anon, m.nr_mapped, m.nr_dirty, m.nr_writeback)
            };
            memcg.insert("file", file * PAGE_SIZE);
            memcg.insert("anon", anon * PAGE_SIZE);
            memcg.insert("file_mapped", mapped * PAGE_SIZE);
            memcg.insert("file_dirty", dirty * PAGE_SIZE);
            memcg.insert("file_writeback", wb * PAGE_SIZE);
            memcg.insert("inactive_file", sizes.inactive_file * PAGE_SIZE);
            memcg.insert("active_file", sizes.active_file * PAGE_SIZE);
            memcg.insert("inactive_anon", sizes.inactive_anon * PAGE_SIZE);
            memcg.insert("active_anon", sizes.active_anon * PAGE_SIZE);
            memcg.insert("unevictable", sizes.unevictable * PAGE_SIZE);
            memcg.insert("pagetables", m.nr_pagetables * PAGE_SIZE);
            // Why a variant wins: folios read ahead that nothing ever used,
            // still resident at the end (the evicted ones are counted in
            // foliosim_ra_unused_evicted as they go).
            let ra_unused = core
                .folios
                .f
                .iter()
                .filter(|f| !f.test(crate::mm::folio::pg::FREE) && f.test(crate::mm::folio::pg::RA_UNUSED) && (self.memcg == 0 || f.memcg == self.memcg))
                .count() as u64;
            memcg.insert("foliosim_ra_unused_resident", ra_unused);
            memcg.insert("usage_in_bytes", (m.usage) * PAGE_SIZE);
            memcg.insert("max_usage_in_bytes", m.watermark * PAGE_SIZE);
            let timeline = core.timeline.as_ref().map(|tl| {
                tl.iter().map(|(s, v, mc)| TimelineSample { second: *s, vmstat: counters_map(v), memcg: counters_map(if self.memcg == 0 { v } else { mc }) }).collect()
            });
            RunReport {
                lru: self.cfg.lru,
                variants: self.cfg.mm.variants.clone(),
                elapsed_ns: core.now,
                io_wait_ns: core.io_wait,
                jobs,
                vmstat: counters_map(&core.vm),
                memcg,
                timeline,
                lru_gen: k.policy.debug_view(core, self.memcg),
                lru_gen_timeline: if self.cfg.timeline && self.cfg.lru == LruKind::Mglru { Some(self.lru_gen_samples.clone()) } else { None },
            }
        })
    }

    fn open(&mut self, size: u64) -> OpenFile {
        let ra_kb = self.cfg.mm.read_ahead_kb;
        let mapping = with_kernel!(&mut self.k, k => k.core.add_file(size));
        OpenFile {
            mapping,
            ra: FileRaState::new(ra_kb),
            fmode_random: false,
            vm_rand_read: false,
            vm_seq_read: false,
            memcg: self.memcg,
        }
    }

    /// Seed 002's mmap_miss_probe: touch one byte at each chosen page.
    pub fn run_probe(mut self, spec: &ProbeSpec) -> RunReport {
        let mut f = self.open(spec.file_size);
        let mut oom = false;
        let on = self.cfg.timeline && self.cfg.lru == LruKind::Mglru;
        let memcg = self.memcg;
        let mut samples = std::mem::take(&mut self.lru_gen_samples);
        let mut next = self.next_sample;
        with_kernel!(&mut self.k, k => {
            for page in spec.pages() {
                if !k.mmap_access(&mut f, page) {
                    oom = true;
                    break;
                }
                sample_policy(k, memcg, on, &mut samples, &mut next);
            }
            // The probe exits: its mapping and page tables go.
            k.exit_mmap(f.mapping);
        });
        self.lru_gen_samples = samples;
        let jobs = vec![JobReport {
            jobname: "mmap_miss_probe".into(),
            jobnum: 0,
            read: DirStats::default(),
            write: DirStats::default(),
            oom_killed: oom,
            error: 0,
        }];
        self.report(jobs)
    }

    /// Replays a libCacheSim trace: each object id is a 4 KiB page of one
    /// file, read with pread and readahead off.
    pub fn run_trace<I, E>(mut self, reqs: I, file_pages: u64) -> Result<RunReport, E>
    where
        I: Iterator<Item = Result<TraceReq, E>>,
    {
        let mut f = self.open(file_pages * PAGE_SIZE);
        f.ra.ra_pages = 0;
        let mut h = LatHist::default();
        let mut bytes = 0;
        let mut ios = 0;
        let mut oom = false;
        with_kernel!(&mut self.k, k => {
            for r in reqs {
                let r = r?;
                let page = r.obj_id % file_pages;
                let t0 = k.core.now;
                if k.filemap_read(&mut f, page << PAGE_SHIFT, PAGE_SIZE).is_none() {
                    oom = true;
                    break;
                }
                h.add(k.core.now - t0);
                bytes += PAGE_SIZE;
                ios += 1;
            }
        });
        let elapsed = with_kernel!(&self.k, k => k.core.now);
        let jobs = vec![JobReport {
            jobname: "replay".into(),
            jobnum: 0,
            read: DirStats::from(&h, bytes, ios, elapsed),
            write: DirStats::default(),
            oom_killed: oom,
            error: 0,
        }];
        Ok(self.report(jobs))
    }

    /// Runs fio jobs concurrently: each job has its own clock (one CPU per
    /// job); the job furthest behind in time runs next, so the device and
    /// memory are shared as they would be. Jobs start as fio's run_threads()
    /// starts them (startdelay from the run's start, stonewall, wait_for)
    /// and exitall ends others as fio_terminate_threads() does; a job that
    /// sleeps (rate, thinktime, flow) only moves its own clock on. `thread`
    /// changes nothing here: the model has one address space either way.
    pub fn run_fio(mut self, jobs: &[FioJob]) -> RunReport {
        #[derive(Clone, Copy, PartialEq, Eq)]
        enum Run {
            Waiting,
            Running,
            Done,
        }
        struct JobState {
            io: JobIo,
            /// The file the job is on; `files[cur]` is its parked slot.
            file: OpenFile,
            files: Vec<OpenFile>,
            mappings: Vec<u32>,
            cur: usize,
            run: Run,
            t: u64,
            epoch: u64,
            stop_at: Option<u64>,
            ramp_end: u64,
            h: [LatHist; 2],
            bytes: [u64; 2],
            ios: [u64; 2],
            start_stats: Option<u64>,
            oom: bool,
            error: i32,
            /// fio's rate state: bytes issued, next issue time (ns after
            /// the epoch) and the poisson clock, per direction.
            rate_bytes: [u64; 2],
            rate_next: [u64; 2],
            poisson_ns: [u64; 2],
            poisson: Pcg64Mcg,
            /// I/Os done (both directions), thinktime's block counter.
            done_ios: u64,
            last_tt_blocks: u64,
            last_thinktime: u64,
            /// check_min_rate(): when and at how many bytes it last looked.
            rate_check_t: [u64; 2],
            rate_check_bytes: [u64; 2],
            all_bytes: [u64; 2],
            flow_counter: u64,
            /// When the job's pending sleep began (thinktime, flow);
            /// u64::MAX when it is not asleep.
            sleep_from: u64,
        }
        // Jobs naming the same file share it (one address space).
        let mut by_name: BTreeMap<String, u32> = BTreeMap::new();
        let mut st: Vec<JobState> = Vec::new();
        for j in jobs {
            let mut files = Vec::new();
            let mut mappings = Vec::new();
            let specs = if j.files.is_empty() {
                vec![foliosim_workload::fio::JobFile {
                    name: j.filename.clone(),
                    offset: j.offset,
                    size: j.size,
                }]
            } else {
                j.files.clone()
            };
            for spec in &specs {
                let size = spec.offset + spec.size;
                let mapping = match by_name.get(&spec.name) {
                    Some(&m) => m,
                    None => {
                        let f = self.open(size);
                        by_name.insert(spec.name.clone(), f.mapping);
                        f.mapping
                    }
                };
                let mut file = OpenFile {
                    mapping,
                    ra: FileRaState::new(self.cfg.mm.read_ahead_kb),
                    fmode_random: false,
                    vm_rand_read: false,
                    vm_seq_read: false,
                    memcg: self.memcg,
                };
                let random = match j.fadvise_hint {
                    FadviseHint::Off => None,
                    FadviseHint::On => Some(j.rw.is_random()),
                    FadviseHint::Sequential => Some(false),
                    FadviseHint::Random => Some(true),
                };
                // fio 3.33's td_io_open_file() fadvises the file for every
                // engine, mmap too; the mmap engine then madvises its
                // mapping by the job's pattern (fio_madvise_file(): by
                // td_random(), whatever the hint's value).
                if let Some(r) = random {
                    if r {
                        file.fmode_random = true;
                    } else {
                        // POSIX_FADV_SEQUENTIAL doubles the window.
                        file.ra.ra_pages *= 2;
                    }
                    if j.ioengine == IoEngine::Mmap {
                        // posix_madvise(MADV_RANDOM / MADV_SEQUENTIAL)
                        file.vm_rand_read = j.rw.is_random();
                        file.vm_seq_read = !j.rw.is_random();
                    }
                }
                files.push(file);
                mappings.push(mapping);
            }
            st.push(JobState {
                io: JobIo::new(j, self.cfg.seed),
                file: files[0].clone(),
                files,
                mappings,
                cur: 0,
                run: Run::Waiting,
                t: 0,
                epoch: 0,
                stop_at: None,
                ramp_end: 0,
                h: [LatHist::default(), LatHist::default()],
                bytes: [0; 2],
                ios: [0; 2],
                start_stats: None,
                oom: false,
                error: 0,
                rate_bytes: [0; 2],
                rate_next: [0; 2],
                poisson_ns: [0; 2],
                poisson: Pcg64Mcg::seed_from_u64(job_seed(j, self.cfg.seed) ^ 0x7),
                done_ios: 0,
                last_tt_blocks: 0,
                last_thinktime: 0,
                rate_check_t: [0; 2],
                rate_check_bytes: [0; 2],
                all_bytes: [0; 2],
                flow_counter: 0,
                sleep_from: u64::MAX,
            });
        }
        // fio's exitall is global: any job asking for it makes every job's
        // exit terminate others (exitall_on_terminate).
        let exitall = jobs.iter().any(|j| j.ctl.exitall);
        // fio's flows: per flow_id, the shared counter and total weight.
        let mut flows: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
        for j in jobs.iter().filter(|j| j.ctl.flow > 0) {
            flows.entry(j.ctl.flow_id).or_insert((0, 0)).1 += j.ctl.flow as u64;
        }
        let on = self.cfg.timeline && self.cfg.lru == LruKind::Mglru;
        let memcg = self.memcg;
        let mut samples = std::mem::take(&mut self.lru_gen_samples);
        let mut next = self.next_sample;
        with_kernel!(&mut self.k, k => {
            let mut now = 0u64;
            let mut waiting = st.len();
            loop {
                // fio's run_threads(): start what may start now, in order.
                let mut next_delay: Option<u64> = None;
                for i in 0..if waiting > 0 { st.len() } else { 0 } {
                    if st[i].run != Run::Waiting {
                        continue;
                    }
                    let j = &jobs[i];
                    if j.ctl.startdelay_us * 1000 > now {
                        let d = j.ctl.startdelay_us * 1000;
                        next_delay = Some(next_delay.map_or(d, |x: u64| x.min(d)));
                        continue;
                    }
                    if j.ctl.stonewall && st.iter().any(|s| s.run == Run::Running) {
                        break;
                    }
                    let waits = j.ctl.wait_for.as_deref().is_some_and(|w| {
                        jobs.iter()
                            .zip(&st)
                            .any(|(o, s)| o.name == w && o.name != j.name && s.run != Run::Done)
                    });
                    if waits {
                        continue;
                    }
                    let s = &mut st[i];
                    waiting -= 1;
                    s.run = Run::Running;
                    s.t = now;
                    s.epoch = now;
                    s.last_thinktime = now;
                    s.rate_check_t = [now; 2];
                    s.ramp_end = now + j.ramp_time_ns;
                    s.stop_at = j.runtime_ns.map(|r| now + j.ramp_time_ns + r);
                    if j.ctl.create_only {
                        // Only the setup phase (file layout, not modelled).
                        s.run = Run::Done;
                    }
                }
                // The job furthest behind runs next (ties: lowest index).
                let pick = (0..st.len()).filter(|&i| st[i].run == Run::Running).min_by_key(|&i| st[i].t);
                match (pick, next_delay) {
                    (None, Some(d)) => {
                        now = now.max(d);
                        continue;
                    }
                    (Some(i), Some(d)) if d < st[i].t => {
                        now = now.max(d);
                        continue;
                    }
                    (None, None) => break,
                    _ => {}
                }
                let i = pick.expect("a running job");
                now = now.max(st[i].t);
                let s = &mut st[i];
                let j = &jobs[i];
                s.sleep_from = u64::MAX;
                let stopped = s.stop_at.is_some_and(|stop| s.t >= stop);
                let op = if stopped { None } else { s.io.next_op() };
                let Some(op) = op else {
                    s.run = Run::Done;
                    let (gid, what) = (j.groupid, j.ctl.exit_what);
                    if exitall || (j.ctl.exitall_on_error && s.error != 0) {
                        // fio_terminate_threads()
                        for (o, os) in jobs.iter().zip(st.iter_mut()) {
                            let hit = match what {
                                ExitWhat::Group => o.groupid == gid,
                                ExitWhat::Stonewall => os.run == Run::Running,
                                ExitWhat::All => true,
                            };
                            if hit && os.run != Run::Done {
                                if os.run == Run::Waiting {
                                    os.t = now;
                                    waiting -= 1;
                                }
                                if os.sleep_from <= now && os.t > now {
                                    // A terminated job wakes from its sleep.
                                    os.t = now;
                                }
                                os.run = Run::Done;
                            }
                        }
                    }
                    continue;
                };
                k.core.now = s.t;
                let (f, io, kind) = match op {
                    JobOp::Invalidate(f) => {
                        if !j.direct {
                            k.invalidate_mapping_pages(s.mappings[f]);
                        }
                        continue;
                    }
                    JobOp::Sync { file, kind, range } => {
                        k.core.cpu(k.core.cost.syscall);
                        let m = s.mappings[file];
                        let end = range.1.saturating_sub(1);
                        match kind {
                            SyncKind::Fsync | SyncKind::Fdatasync => {
                                k.file_write_and_wait_range(m, range.0, end)
                            }
                            SyncKind::SyncFileRange(r) => {
                                k.sync_file_range(m, range.0, end, r.wait_before, r.write, r.wait_after)
                            }
                        }
                        s.t = k.core.now;
                        continue;
                    }
                    JobOp::Unlink(f) => {
                        k.core.cpu(k.core.cost.syscall);
                        k.truncate_inode_pages_final(s.mappings[f]);
                        s.t = k.core.now;
                        continue;
                    }
                    JobOp::Io { file, io, kind } => (file, io, kind),
                };
                if f != s.cur {
                    std::mem::swap(&mut s.file, &mut s.files[s.cur]);
                    std::mem::swap(&mut s.file, &mut s.files[f]);
                    s.cur = f;
                }
                let d = (io.dir == Dir::Write) as usize;
                if kind == IoKind::Job {
                    // flow_threshold_exceeded(): hold back while this job is
                    // ahead of its share of the flow's I/Os.
                    if let Some(fl) = (j.ctl.flow > 0).then(|| flows.get_mut(&j.ctl.flow_id)).flatten() {
                        let total = fl.1 as f64;
                        if (s.flow_counter as f64) / (fl.0 as f64) > j.ctl.flow as f64 / total {
                            if j.ctl.flow_sleep_us > 0 {
                                s.sleep_from = s.t;
                                s.t += j.ctl.flow_sleep_us * 1000;
                            } else {
                                // fio spins back to the top of its loop.
                                k.core.cpu(k.core.cost.fio_io);
                                s.t = k.core.now;
                            }
                            s.io.unget(op);
                            continue;
                        }
                        fl.0 += 1;
                        s.flow_counter += 1;
                    }
                    // rate_ddir(): sleep until this direction may issue.
                    if j.ctl.rate_bps[d] > 0 {
                        let at = s.epoch + s.rate_next[d];
                        if at > s.t {
                            if s.stop_at.is_some_and(|stop| at > stop) {
                                s.t = s.stop_at.unwrap_or(at);
                                s.io.unget(op);
                                continue;
                            }
                            s.t = at;
                            k.core.now = s.t;
                        }
                    }
                }
                if s.start_stats.is_none() && k.core.now >= s.ramp_end && kind != IoKind::PreRead {
                    s.start_stats = Some(k.core.now);
                }
                let t0 = k.core.now;
                k.core.cpu(k.core.cost.fio_io);
                let write = matches!(io.dir, Dir::Write);
                let ok = if j.direct {
                    k.direct_io(&s.file, io.len, write);
                    true
                } else if j.ioengine == IoEngine::Mmap {
                    let first = io.offset >> PAGE_SHIFT;
                    let last = (io.offset + io.len - 1) >> PAGE_SHIFT;
                    let mut ok = true;
                    for p in first..=last {
                        if !k.mmap_access(&mut s.file, p) {
                            ok = false;
                            break;
                        }
                        if write {
                            if let Some(id) = k.core.files[s.file.mapping as usize].folio(p) {
                                k.folio_mark_dirty(id);
                            }
                        }
                        k.core.cpu(k.core.cost.copy_page);
                    }
                    if write {
                        k.balance_dirty_pages();
                    }
                    ok
                } else if write {
                    k.filemap_write(&mut s.file, io.offset, io.len).is_some()
                } else {
                    k.filemap_read(&mut s.file, io.offset, io.len).is_some()
                };
                if !ok || k.core.memcgs[s.file.memcg as usize].oom_killed {
                    s.oom = true;
                    s.run = Run::Done;
                    s.t = k.core.now;
                    continue;
                }
                let lat = k.core.now - t0;
                s.t = k.core.now;
                // fio counts verify reads in the job's read statistics; the
                // pre-read comes before the job's clock starts.
                if s.start_stats.is_some() && kind != IoKind::PreRead {
                    s.h[d].add(lat);
                    s.bytes[d] += io.len;
                    s.ios[d] += 1;
                }
                if kind != IoKind::Job {
                    sample_policy(k, memcg, on, &mut samples, &mut next);
                    continue;
                }
                s.all_bytes[d] += io.len;
                s.done_ios += 1;
                // usec_for_io(): when the next I/O of this direction is due.
                let bps = j.ctl.rate_bps[d];
                if bps > 0 {
                    s.rate_bytes[d] += io.len;
                    s.rate_next[d] = match j.ctl.rate_process {
                        RateProcess::Linear => {
                            (s.rate_bytes[d] as u128 * 1_000_000_000 / bps as u128) as u64
                        }
                        RateProcess::Poisson => {
                            let iops = (bps / j.bs.max(1)).max(1);
                            let u: f64 = s.poisson.gen::<f64>();
                            let gap = (1_000_000_000 / iops) as f64 * -(1.0 - u).ln();
                            s.poisson_ns[d] += gap as u64;
                            s.poisson_ns[d]
                        }
                    };
                }
                // handle_thinktime()
                let think_ns = j.thinktime_us * 1000;
                if think_ns > 0 {
                    let c = &j.ctl;
                    let mut stall = false;
                    let mut skip = false;
                    if c.thinktime_iotime_us > 0 {
                        if s.t - s.last_thinktime >= (c.thinktime_iotime_us + j.thinktime_us) * 1000 {
                            stall = true;
                        } else if !c.thinktime_blocks_set {
                            skip = true;
                        }
                    }
                    // Synchronous engines complete each I/O before the
                    // next: issued and completed counts are the same.
                    let b = s.done_ios;
                    if !skip && b >= s.last_tt_blocks + c.thinktime_blocks {
                        stall = true;
                    }
                    if stall && !skip {
                        let spin = (c.thinktime_spin_us * 1000).min(think_ns);
                        k.core.cpu(spin);
                        s.sleep_from = k.core.now;
                        s.t = k.core.now + (think_ns - spin);
                        if bps > 0 && c.rate_ignore_thinktime {
                            // The bytes the rate would have allowed while
                            // asleep, less a block so the next I/O goes now.
                            let total_us = think_ns / 1000;
                            let missed = bps * total_us / 1_000_000;
                            let usperop = j.bs * 1_000_000 / bps;
                            let over = if usperop <= total_us { j.bs } else { 0 };
                            s.rate_bytes[d] = (s.rate_bytes[d] + missed).saturating_sub(over);
                            s.poisson_ns[d] += think_ns;
                        }
                        s.last_tt_blocks = b;
                        if c.thinktime_iotime_us > 0 {
                            s.last_thinktime = s.t;
                        }
                    }
                }
                // check_min_rate(), once per rate_cycle after the ramp.
                if s.start_stats.is_some() && j.ctl.rate_min_bps[d] > 0 {
                    let cycle = j.ctl.rate_cycle_ms * 1_000_000;
                    let spent = s.t - s.rate_check_t[d];
                    if s.t - s.epoch >= cycle && spent >= cycle {
                        let done = s.all_bytes[d] - s.rate_check_bytes[d];
                        let rate = done as u128 * 1_000_000_000 / spent as u128;
                        if rate < j.ctl.rate_min_bps[d] as u128 {
                            // td_verror(td, EIO, "check_min_rate")
                            s.error = 5;
                            s.stop_at = Some(s.t);
                        }
                        s.rate_check_t[d] = s.t;
                        s.rate_check_bytes[d] = s.all_bytes[d];
                    }
                }
                sample_policy(k, memcg, on, &mut samples, &mut next);
            }
            // fio exits: mmap'ed files are unmapped, page tables freed.
            for (s, j) in st.iter().zip(jobs) {
                if j.ioengine == IoEngine::Mmap {
                    for &m in &s.mappings {
                        k.exit_mmap(m);
                    }
                }
            }
            // Jobs end at their own time; the run lasts as long as the last.
            let end = st.iter().map(|s| s.t).max().unwrap_or(0);
            k.core.now = end;
            k.wb_complete();
        });
        self.lru_gen_samples = samples;
        let reports = st
            .iter()
            .zip(jobs)
            .map(|(s, j)| {
                let runtime = s.t.saturating_sub(s.start_stats.unwrap_or(s.t));
                JobReport {
                    jobname: j.name.clone(),
                    jobnum: j.jobnum,
                    read: DirStats::from(&s.h[0], s.bytes[0], s.ios[0], runtime),
                    write: DirStats::from(&s.h[1], s.bytes[1], s.ios[1], runtime),
                    oom_killed: s.oom,
                    error: s.error,
                }
            })
            .collect();
        self.report(reports)
    }
}

/// Samples the policy's view at each simulated second passed (with
/// --timeline under MGLRU; one compare per operation otherwise).
#[inline]
fn sample_policy<P: ReclaimPolicy>(
    k: &Kernel<P>,
    memcg: MemcgId,
    on: bool,
    samples: &mut Vec<(u64, serde_json::Value)>,
    next: &mut u64,
) {
    if !on {
        return;
    }
    while k.core.now >= *next {
        if let Some(v) = k.policy.debug_view(&k.core, memcg) {
            samples.push((*next / 1_000_000_000, v));
        }
        *next += 1_000_000_000;
    }
}

/// Runs a probe under `cfg`.
pub fn run_probe(cfg: SimConfig, spec: &ProbeSpec) -> RunReport {
    Sim::new(cfg).run_probe(spec)
}

/// Runs fio jobs under `cfg`.
pub fn run_fio(cfg: SimConfig, jobs: &[FioJob]) -> RunReport {
    Sim::new(cfg).run_fio(jobs)
}

/// The value of a counter by name from a report: memcg first, then vmstat.
pub fn counter(r: &RunReport, name: &str) -> Option<u64> {
    r.memcg.get(name).or_else(|| r.vmstat.get(name)).copied()
}
