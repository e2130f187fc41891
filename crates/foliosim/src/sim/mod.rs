//! The driver: runs workloads (fio jobs, the mmap probe, cache traces)
//! through the kernel model and collects what fio and the kernel would
//! print. Workloads come from `foliosim-workload`; nothing here models the
//! kernel.

use std::collections::BTreeMap;

use foliosim_workload::fio::{ExitWhat, FadviseHint, FioJob, IoEngine, RateProcess};
use foliosim_workload::iogen::Dir;
use foliosim_workload::jobio::{IoKind, JobIo, Op as JobOp, SyncKind};
use foliosim_workload::lat_target::{LatEvent, LatTarget};
use foliosim_workload::mmap_probe::ProbeSpec;
use foliosim_workload::steadystate::SteadyState;
use foliosim_workload::trace::TraceReq;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde::Serialize;

use crate::fs::ext4::{Ext4, NameSpec};
use crate::mm::filemap::OpenFile;
use crate::mm::memcontrol::MemcgId;
use crate::mm::readahead::FileRaState;
use crate::mm::vmscan::classic::ClassicLru;
use crate::mm::vmscan::ReclaimPolicy;
use crate::mm::vmstat::{Counters, Item, NAMES, NR_ITEMS};
use crate::mm::{Kernel, MmConfig, PAGE_SHIFT, PAGE_SIZE};

mod aio;
use aio::{buffered_rw, AsyncQueue};

/// Which reclaim policy runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum LruKind {
    Classic,
    Mglru,
}

impl LruKind {
    /// The name `--lru` takes and output prints.
    pub fn name(self) -> &'static str {
        match self {
            LruKind::Classic => "classic",
            LruKind::Mglru => "mglru",
        }
    }
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

/// Checks a machine's cache_ext policy before a run (the CLI reports the
/// error): a known spec, and the classic LRU (cache_ext hooks only its
/// shrink_lruvec()).
pub fn check_policy(cfg: &SimConfig) -> Result<(), String> {
    let Some(spec) = &cfg.mm.policy else {
        return Ok(());
    };
    let spec = crate::policy::PolicySpec::parse(spec)?;
    // A run-time (Python) policy is built once per run, not here: its
    // constructor is the user's code.
    if !spec.name.starts_with(crate::policy::EXTERNAL_PREFIX) {
        spec.build()?;
    }
    if !spec.is_default() && cfg.lru == LruKind::Mglru {
        return Err(format!(
            "policy {} needs the classic LRU (cache_ext does not hook MGLRU); use --lru classic",
            spec.name
        ));
    }
    Ok(())
}

use crate::fio_stat::LatDist;
pub use crate::report::{DirStats, FioJobStats, JobReport, LatHist, RunReport, TimelineSample};

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
            // A trace armed for this thread's next run (crate::trace::arm).
            k.core.trace = crate::trace::take_armed();
            if let Some(spec) = &cfg.mm.policy {
                // A Python policy can fail to build or to init: the run then
                // stops at once with that error (RunReport::policy_error).
                match crate::policy::new_policy(spec) {
                    Ok(Some(ops)) => {
                        if let Err(e) = k.core.cache_ext_attach(memcg, ops) {
                            k.core.cache_ext.error.get_or_insert(e);
                        }
                    }
                    Ok(None) => {}
                    Err(e) => {
                        k.core.cache_ext.error.get_or_insert(e);
                    }
                }
            }
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

    /// Attaches a cache_ext policy object (a test's, or a Python one) to
    /// the workload's memcg in place of `MmConfig::policy`'s; the classic
    /// LRU only.
    pub fn attach_policy(
        &mut self,
        ops: Box<dyn crate::mm::cache_ext::CacheExtOps>,
    ) -> Result<(), String> {
        if self.cfg.lru != LruKind::Classic {
            return Err(format!(
                "policy {} needs the classic LRU (cache_ext does not hook MGLRU); use --lru classic",
                ops.name()
            ));
        }
        let memcg = self.memcg;
        with_kernel!(&mut self.k, k => k.core.cache_ext_attach(memcg, ops))
    }

    pub(crate) fn report(&self, jobs: Vec<JobReport>) -> RunReport {
        with_kernel!(&self.k, k => {
            let core = &k.core;
            let m = &core.memcgs[self.memcg as usize];
            let mut memcg = counters_map(if self.memcg == 0 { &core.vm } else { &m.stat });
            if self.memcg == 0 {
                // The root's memcg-only events (v1 charge counts).
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
            // memory.stat `swap` as cgroup v1 (this host's) counts it.
            memcg.insert("swap", core.memcg1_swap(self.memcg) * PAGE_SIZE);
            memcg.insert("shmem", core.memcg_nr_shmem(self.memcg) * PAGE_SIZE);
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
                tl.iter()
                    .map(|(s, v, mc, usage)| {
                        let mut memcg = counters_map(if self.memcg == 0 { v } else { mc });
                        // A gauge beside the events: what `foliosim report` plots as memcg usage.
                        memcg.insert("usage_in_bytes", usage * PAGE_SIZE);
                        TimelineSample { second: *s, vmstat: counters_map(v), memcg }
                    })
                    .collect()
            });
            let mut vmstat = counters_map(&core.vm);
            // /proc/vmstat's workingset_nodes, a gauge: xa_nodes holding only
            // shadow entries (on the shadow_nodes list_lru), all memcgs.
            vmstat.insert(
                "workingset_nodes",
                (0..core.memcgs.len()).map(|m| core.shadow_nodes.count(m as crate::mm::memcontrol::MemcgId)).sum(),
            );
            RunReport {
                lru: self.cfg.lru,
                variants: self.cfg.mm.variants.clone(),
                elapsed_ns: core.now,
                io_wait_ns: core.io_wait,
                jobs,
                vmstat,
                memcg,
                timeline,
                lru_gen: k.policy.debug_view(core, self.memcg),
                lru_gen_timeline: if self.cfg.timeline && self.cfg.lru == LruKind::Mglru { Some(self.lru_gen_samples.clone()) } else { None },
                cache_ext: core.cache_ext.policy_name(self.memcg).map(|p| crate::report::CacheExtReport {
                    policy: p.to_string(),
                    stats: core.cache_ext.stats(self.memcg),
                }),
                policy_error: core.cache_ext.error.clone(),
                page_cache_folios: self.cfg.mm.large_folios.then(|| {
                    // The resident folios of the workload's files by order
                    // (what oracle/qemu/folioprobe.c reads from kpageflags).
                    let mut h = BTreeMap::new();
                    for f in &core.folios.f {
                        let data = core.files.get(f.mapping as usize).is_some_and(|a| a.max_order > 0);
                        if !f.test(crate::mm::folio::pg::FREE) && f.is_file_lru() && data {
                            *h.entry(f.order()).or_insert(0u64) += 1;
                        }
                    }
                    h
                }),
                mthp: {
                    // The anon sizes enabled and the sizes tmpfs may take.
                    let mask = self.cfg.mm.thp_anon_orders | self.cfg.mm.tmpfs_huge_orders();
                    (mask != 0).then(|| core.mthp.sysfs(mask))
                },
            }
        })
    }

    fn open(&mut self, size: u64, name: &str) -> OpenFile {
        let ra_kb = self.cfg.mm.read_ahead_kb;
        let mapping = with_kernel!(&mut self.k, k => {
            let m = k.core.add_data_file(size);
            if let Some(t) = k.core.trace.as_deref_mut() {
                t.name_file(m, name);
            }
            m
        });
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
        self.run_probe_mut(spec, &mut |_| {})
    }

    /// `diverged(i)` is called once, as soon as followed mmap_miss variant
    /// i (Core::mmap_miss_alts) diverges.
    fn run_probe_mut(&mut self, spec: &ProbeSpec, diverged: &mut dyn FnMut(usize)) -> RunReport {
        let mut f = self.open(spec.file_size, "mmap-probe");
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
                if k.core.mmap_miss_alts.fresh != 0 {
                    let m = k.core.mmap_miss_alts.take_fresh();
                    (0..8).filter(|i| m & (1 << i) != 0).for_each(&mut *diverged);
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
            trim: (0, 0),
            fio: FioJobStats::default(),
        }];
        self.report(jobs)
    }

    /// Replays a libCacheSim trace: each object id is a 4 KiB page of one
    /// file, read with pread and readahead off.
    pub fn run_trace<I, E>(mut self, reqs: I, file_pages: u64) -> Result<RunReport, E>
    where
        I: Iterator<Item = Result<TraceReq, E>>,
    {
        let mut f = self.open(file_pages * PAGE_SIZE, "replay");
        f.ra.ra_pages = 0;
        let mut h = LatHist::default();
        let mut dist = LatDist::default();
        let mut bytes = 0;
        let mut ios = 0;
        let mut oom = false;
        // The trace is read AHEAD requests early so that the page-cache
        // slots (and then the folios) of the next requests are on their
        // way from memory while this one runs: a replay is otherwise one
        // cache miss after another. The model sees the same requests in
        // the same order; an error read early is returned when the replay
        // reaches it (and never if an OOM ends the replay first).
        const AHEAD: usize = 16;
        const FOLIO_AHEAD: usize = 8;
        let mut reqs = reqs;
        let mut ring = [0u64; AHEAD];
        let (mut head, mut len) = (0usize, 0usize);
        let mut pending_err = None;
        with_kernel!(&mut self.k, k => {
            loop {
                while len < AHEAD && pending_err.is_none() {
                    match reqs.next() {
                        Some(Ok(r)) => {
                            // Ids are usually below the file's size: skip the division.
                            let page = if r.obj_id < file_pages {
                                r.obj_id
                            } else {
                                r.obj_id % file_pages
                            };
                            k.core.files[f.mapping as usize].prefetch_slot(page);
                            ring[(head + len) % AHEAD] = page;
                            len += 1;
                        }
                        Some(Err(e)) => pending_err = Some(e),
                        None => break,
                    }
                }
                if len == 0 {
                    break;
                }
                let page = ring[head];
                head = (head + 1) % AHEAD;
                len -= 1;
                if len > FOLIO_AHEAD {
                    let next = ring[(head + FOLIO_AHEAD) % AHEAD];
                    if let Some(id) = k.core.files[f.mapping as usize].folio(next) {
                        crate::mm::prefetch_read(k.core.folios.get(id));
                    }
                }
                let t0 = k.core.now;
                if k.filemap_read(&mut f, page << PAGE_SHIFT, PAGE_SIZE).is_none() {
                    oom = true;
                    break;
                }
                h.add(k.core.now - t0);
                dist.mark(k.core.now - t0);
                bytes += PAGE_SIZE;
                ios += 1;
            }
        });
        if !oom {
            if let Some(e) = pending_err {
                return Err(e);
            }
        }
        let elapsed = with_kernel!(&self.k, k => k.core.now);
        let jobs = vec![JobReport {
            jobname: "replay".into(),
            jobnum: 0,
            read: DirStats::from(&h, bytes, ios, elapsed),
            write: DirStats::default(),
            oom_killed: oom,
            error: 0,
            trim: (0, 0),
            fio: FioJobStats {
                clat: [h, LatHist::default()],
                lat_dist: dist,
                total_run_time_ms: elapsed / 1_000_000,
                ..FioJobStats::default()
            },
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
            stats: FioJobStats,
            bytes: [u64; 2],
            ios: [u64; 2],
            start_stats: Option<u64>,
            oom: bool,
            error: i32,
            /// Queued engines (libaio, io_uring, posixaio, null at depth > 1).
            q: Option<AsyncQueue>,
            /// File-metadata engines: operations left (one per file).
            fileops_left: u32,
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
            /// latency_target's queue-depth search.
            lat: Option<LatTarget>,
            /// Trims done (counted apart: the statistics are per read and
            /// write only).
            trim_ios: u64,
            trim_bytes: u64,
        }
        // Jobs naming the same file share it (one address space).
        let mut by_name: BTreeMap<String, u32> = BTreeMap::new();
        let mut st: Vec<JobState> = Vec::new();
        // cache_ext's `current` per job: pid and tid 1000 + job index (as
        // the tracer's), comm the job's name.
        let mut task_refs: Vec<Option<crate::mm::cache_ext::TaskRef>> = vec![None; jobs.len()];
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
                    // null, cpuio and the metadata engines read no file data.
                    _ if j.ioengine.is_diskless() => NO_MAPPING,
                    Some(&m) => m,
                    None => {
                        let f = self.open(size, &spec.name);
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
            // fio's poisson rate clock (FIO_RAND_POISSON_OFF, index 15 of
            // td->rand_seeds); the draws themselves are not fio's.
            let poisson_seed = foliosim_workload::fio_rand::job_rand_seeds(j, self.cfg.seed)
                [foliosim_workload::fio_rand::FIO_RAND_POISSON_OFF];
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
                stats: FioJobStats {
                    groupid: j.groupid,
                    group_reporting: j.group_reporting,
                    ..FioJobStats::default()
                },
                bytes: [0; 2],
                ios: [0; 2],
                start_stats: None,
                oom: false,
                error: 0,
                q: (!j.ioengine.is_sync() && j.ioengine != IoEngine::CpuIo)
                    .then(|| AsyncQueue::new(j)),
                fileops_left: j.nrfiles,
                rate_bytes: [0; 2],
                rate_next: [0; 2],
                poisson_ns: [0; 2],
                poisson: Pcg64Mcg::seed_from_u64(poisson_seed),
                done_ios: 0,
                last_tt_blocks: 0,
                last_thinktime: 0,
                rate_check_t: [0; 2],
                rate_check_bytes: [0; 2],
                all_bytes: [0; 2],
                flow_counter: 0,
                sleep_from: u64::MAX,
                lat: None,
                trim_ios: 0,
                trim_bytes: 0,
            });
        }
        // unlink(2) of a file another job uses: the inode and its cache live
        // until the last job using it is done (iput_final).
        let mut unlinked: Vec<u32> = Vec::new();
        // fio's exitall is global: any job asking for it makes every job's
        // exit terminate others (exitall_on_terminate).
        let exitall = jobs.iter().any(|j| j.ctl.exitall);
        // zonemode=zbd: the emulated zones of each file and each job's view
        // of them; a job fio's zone setup refuses fails with EINVAL.
        let (mut zbds, mut zjobs) = foliosim_workload::zbd::setup(jobs);
        for (s, z) in st.iter_mut().zip(&zjobs) {
            if let Some(Err(_)) = z {
                s.error = 22;
            }
        }
        // Steady state (steadystate_setup()): one window per job, or with
        // group_reporting on the last job of each group; each job's last
        // sample (time, ios, bytes) and whether its ramp is over.
        let mut ss: Vec<Option<SteadyState>> = vec![None; jobs.len()];
        let mut prev_gid = None;
        for (x, j) in jobs.iter().enumerate() {
            let Some(o) = &j.ss else { continue };
            if j.group_reporting && prev_gid == Some(j.groupid) {
                if let Some(last) = (0..x).rev().find(|&y| ss[y].is_some()) {
                    ss[last] = None;
                }
            }
            prev_gid = Some(j.groupid);
            ss[x] = SteadyState::new(o);
        }
        let mut ss_prev: Vec<(u64, u64, u64, bool, f64, u64)> =
            vec![(0, 0, 0, false, 0.0, 0); jobs.len()];
        let mut ss_attained = vec![false; jobs.len()];
        let ss_on = jobs.iter().any(|j| j.ss.is_some());
        // fio keeps one check interval for the run: the last job's.
        let ss_step = jobs
            .iter()
            .rev()
            .find_map(|j| j.ss)
            .map_or(1000, |o| o.interval_ms)
            * 1_000_000;
        let mut next_ss = ss_step;
        // fio's flows: per flow_id, the shared counter and total weight.
        let mut flows: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
        for j in jobs.iter().filter(|j| j.ctl.flow > 0) {
            flows.entry(j.ctl.flow_id).or_insert((0, 0)).1 += j.ctl.flow as u64;
        }
        let on = self.cfg.timeline && self.cfg.lru == LruKind::Mglru;
        let memcg = self.memcg;
        let mut samples = std::mem::take(&mut self.lru_gen_samples);
        let mut next = self.next_sample;
        // The file system's metadata (--fs ext4): the names the jobs use,
        // laid out before the run unless a job creates them.
        let fs_names: Vec<(String, bool)> = jobs
            .iter()
            .filter(|j| !matches!(j.ioengine, IoEngine::Null | IoEngine::CpuIo))
            .flat_map(|j| {
                let exists = !matches!(j.ioengine, IoEngine::FileCreate | IoEngine::DirCreate);
                job_file_names(j).map(move |n| (n.to_string(), exists))
            })
            .collect();
        let fs_cfg = self.cfg.mm.fs.clone();
        let fio_memory = self.cfg.mm.fio_process_memory;
        with_kernel!(&mut self.k, k => {
            // fio's processes (or threads) and their memory: touched at
            // startup, before any job's I/O.
            let mut job_mms = vec![crate::mm::mmap::NO_MM; jobs.len()];
            if fio_memory {
                for (x, j) in jobs.iter().enumerate() {
                    let pages = fio_process_pages(j, x == 0);
                    let mm = k.mm_alloc(memcg, 0);
                    let space = k.mmap_anon(mm, pages * PAGE_SIZE);
                    k.core.current = mm;
                    if !(0..pages).all(|p| k.anon_access(space, p, memcg, true)) {
                        st[x].oom = true;
                        st[x].run = Run::Done;
                    }
                    job_mms[x] = mm;
                }
                k.core.current = crate::mm::mmap::NO_MM;
            }
            let mut ext4 = fs_cfg.as_ref().map(|c| {
                let names: Vec<NameSpec> = fs_names.iter().map(|(n, e)| NameSpec { name: n, exists: *e }).collect();
                Ext4::new(k, c, &names)
            });
            let mut now = 0u64;
            let mut waiting = st.iter().filter(|s| s.run == Run::Waiting).count();
            loop {
                if k.core.cache_ext.error.is_some() {
                    break;
                }
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
                    // lat_target_init(): the search starts at depth 1.
                    s.lat = j.lat_target.and_then(|o| LatTarget::new(&o, j.iodepth, now, 0));
                    if let (Some(l), Some(q)) = (&s.lat, s.q.as_mut()) {
                        q.qd_limit = l.qd as usize;
                    }
                    if j.ctl.create_only {
                        // Only the setup phase (file layout, not modelled).
                        s.run = Run::Done;
                    } else if let (Some(fs), false) = (ext4.as_mut(), j.ioengine.is_diskless()) {
                        // td_io_open_file(): each file's path walk and
                        // inode before the first I/O.
                        k.core.now = now;
                        for name in job_file_names(j) {
                            if fs.open(k, name, memcg).is_none() {
                                s.oom = true;
                                s.run = Run::Done;
                                break;
                            }
                        }
                        s.t = k.core.now;
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
                // steadystate_check(), from fio's helper thread once a second.
                while ss_on && now >= next_ss {
                    let at = next_ss;
                    next_ss += ss_step;
                    let (mut group_bw, mut group_iops, mut ramped) = (0u64, 0u64, 0u32);
                    let (mut lat_sum, mut lat_n) = (0f64, 0u64);
                    let mut prev_gid = None;
                    for x in 0..jobs.len() {
                        let Some(o) = &jobs[x].ss else { continue };
                        if st[x].run != Run::Running || ss_attained[x] {
                            continue;
                        }
                        if !jobs[x].group_reporting || prev_gid != Some(jobs[x].groupid) {
                            (group_bw, group_iops, ramped) = (0, 0, 0);
                            (lat_sum, lat_n) = (0.0, 0);
                        }
                        prev_gid = Some(jobs[x].groupid);
                        let p = &mut ss_prev[x];
                        if p.0 < st[x].epoch {
                            *p = (st[x].epoch, 0, 0, o.ramp_us == 0, 0.0, 0);
                        }
                        // Sampling starts one interval after ss_ramp.
                        p.3 |= (at - st[x].epoch) / 1000 >= o.ramp_us + ss_step / 1000;
                        let ios = st[x].done_ios;
                        let bytes = st[x].all_bytes[0] + st[x].all_bytes[1];
                        // The completion latencies so far (clat mean x samples).
                        let c = &st[x].stats.clat;
                        let lsum = c[0].stat.mean * c[0].stat.samples as f64 + c[1].stat.mean * c[1].stat.samples as f64;
                        let ln = c[0].stat.samples + c[1].stat.samples;
                        let ms = ((at - p.0) / 1_000_000).max(1);
                        if p.3 {
                            group_bw += 1000 * (bytes - p.2) / ms;
                            group_iops += 1000 * (ios - p.1) / ms;
                            lat_sum += lsum - p.4;
                            lat_n += ln.saturating_sub(p.5);
                            ramped += 1;
                        }
                        *p = (at, ios, bytes, p.3, lsum, ln);
                        let Some(w) = ss[x].as_mut() else { continue };
                        let lat = if lat_n > 0 { lat_sum / lat_n as f64 } else { 0.0 };
                        if ramped == 0 || !w.add(group_iops, group_bw, lat) {
                            continue;
                        }
                        // fio_mark_td_terminate(): the job, or its group.
                        for y in 0..jobs.len() {
                            let hit = if jobs[x].group_reporting { jobs[y].groupid == jobs[x].groupid } else { y == x };
                            if hit {
                                ss_attained[y] = true;
                                st[y].stop_at = Some(st[y].stop_at.map_or(at, |t| t.min(at)));
                            }
                        }
                    }
                }
                let s = &mut st[i];
                let j = &jobs[i];
                // The job's task: the OOM killer may choose it (its memory
                // is fio's, --fio-memory), and then its I/O stops.
                k.core.current = job_mms[i];
                // Each job runs on a CPU of its own (its lru_add batch).
                k.core.cpu = i as u32;
                if let Some(t) = k.core.trace.as_deref_mut() {
                    // Every fio job is a process named fio.
                    t.set_task("fio", 1000 + i as u32);
                }
                if k.core.cache_ext.any_active() {
                    let ce = &mut k.core.cache_ext;
                    let t = *task_refs[i].get_or_insert_with(|| {
                        let comm: String = jobs[i].name.chars().take(15).collect();
                        ce.register_task(1000 + i as u32, 1000 + i as u32, &comm)
                    });
                    ce.set_current(t);
                }
                s.sleep_from = u64::MAX;
                let stopped = s.stop_at.is_some_and(|stop| s.t >= stop);
                if !stopped && j.ioengine == IoEngine::CpuIo {
                    // cpuio burns cpuchunks of CPU then sleeps to keep
                    // cpuload percent; it touches no memory the model
                    // tracks, so its job just lasts its runtime.
                    s.start_stats.get_or_insert(s.ramp_end);
                    s.t = s.stop_at.unwrap_or(s.t);
                    if s.stop_at.is_some() {
                        continue;
                    }
                }
                if !stopped && j.ioengine.is_file_op() && s.fileops_left > 0 {
                    s.fileops_left -= 1;
                    k.core.now = s.t;
                    s.start_stats.get_or_insert(k.core.now);
                    let t0 = k.core.now;
                    k.core.cpu(k.core.cost.fio_io);
                    let c = &k.core.cost;
                    let cost = match j.ioengine {
                        IoEngine::FileCreate | IoEngine::DirCreate => c.create,
                        IoEngine::FileStat | IoEngine::DirStat => c.stat,
                        _ => c.unlink,
                    };
                    k.core.cpu(cost);
                    let idx = (j.nrfiles - s.fileops_left - 1) as usize;
                    if let Some(fs) = ext4.as_mut() {
                        let name = j.files.get(idx).map_or(j.filename.as_str(), |f| f.name.as_str());
                        let r = match j.ioengine {
                            IoEngine::FileCreate | IoEngine::DirCreate => fs.ext4_create(k, name, memcg),
                            IoEngine::FileStat | IoEngine::DirStat => fs.open(k, name, memcg),
                            _ => fs.ext4_unlink(k, name, memcg),
                        };
                        if r.is_none() {
                            s.oom = true;
                            s.fileops_left = 0;
                        }
                    }
                    if j.ioengine == IoEngine::FileDelete && s.fileops_left + 1 == j.nrfiles {
                        // The job's first file is the one it names; a file
                        // other jobs read or wrote loses its cache when the
                        // last of them is done with it.
                        if let Some(&m) = by_name.get(&j.filename) {
                            unlinked.push(m);
                        }
                    }
                    // fio records each operation as one completed I/O of
                    // the file's size in the job's direction
                    // (fileoperations.c; checked on fio 3.33: 1200 stats of
                    // 4 KiB files report 4,915,200 bytes).
                    let d = (j.rw.has_writes() && !j.rw.has_reads()) as usize;
                    let fsize = j.files.get(idx).map_or(j.size / j.nrfiles.max(1) as u64, |f| f.size);
                    if s.start_stats.is_some() {
                        s.stats.io_complete(d, k.core.now - t0, k.core.now, fsize);
                        s.bytes[d] += fsize;
                        s.ios[d] += 1;
                    }
                    s.t = k.core.now;
                    release_unlinked(k, st.iter().flat_map(|s| s.mappings.iter().map(move |&m| (s.run == Run::Done, m))), &mut unlinked);
                    continue;
                }
                let diskless_done = j.ioengine == IoEngine::CpuIo || j.ioengine.is_file_op();
                let zbd_failed = s.error == 22 && matches!(zjobs[i], Some(Err(_)));
                let mut op = if stopped || diskless_done || zbd_failed { None } else { s.io.next_op() };
                // zbd_adjust_block(): fio moves the job's I/O to a zone's
                // write pointer or below it, or ends the job.
                if let (Some(JobOp::Io { io, kind: IoKind::Job, file }), Some(Ok((zi, zj)))) =
                    (op.as_mut(), zjobs[i].as_mut())
                {
                    let orig = *io;
                    io.dir = zbds[*zi].adjust_dir(zj, io.dir);
                    match zbds[*zi].adjust_block(zj, *io) {
                        Some(a) => {
                            *io = a;
                            s.io.adjusted(*file, orig, a);
                        }
                        None => op = None,
                    }
                }
                let Some(op) = op else {
                    if let Some(q) = s.q.as_mut() {
                        // cleanup_pending_aio(): what is queued completes.
                        k.core.now = s.t;
                        let stats = s.start_stats.is_some();
                        s.oom |= !q.drain(k, j, &mut s.file, &mut s.stats, &mut s.bytes, &mut s.ios, stats);
                        s.t = k.core.now;
                    }
                    s.run = Run::Done;
                    release_unlinked(k, st.iter().flat_map(|s| s.mappings.iter().map(move |&m| (s.run == Run::Done, m))), &mut unlinked);
                    let s = &st[i];
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
                        if !j.direct && s.mappings[f] != NO_MAPPING {
                            k.invalidate_mapping_pages(s.mappings[f]);
                        }
                        continue;
                    }
                    JobOp::Sync { file, kind, range } => {
                        k.core.cpu(k.core.cost.syscall);
                        let m = s.mappings[file];
                        let end = range.1.saturating_sub(1);
                        if m != NO_MAPPING {
                            match kind {
                                SyncKind::Fsync | SyncKind::Fdatasync => {
                                    k.file_write_and_wait_range(m, range.0, end)
                                }
                                SyncKind::SyncFileRange(r) => {
                                    k.sync_file_range(m, range.0, end, r.wait_before, r.write, r.wait_after)
                                }
                            }
                        }
                        s.t = k.core.now;
                        continue;
                    }
                    JobOp::Unlink(f) => {
                        k.core.cpu(k.core.cost.syscall);
                        let m = s.mappings[f];
                        if m != NO_MAPPING && !unlinked.contains(&m) {
                            unlinked.push(m);
                        }
                        s.t = k.core.now;
                        // fio closed the file first; other jobs may hold it.
                        release_unlinked(k, st.iter().enumerate().flat_map(|(x, s)| s.mappings.iter().map(move |&m| (x == i || s.run == Run::Done, m))), &mut unlinked);
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
                    s.stats.rates.start(k.core.now);
                }
                if io.dir == Dir::Trim {
                    // do_io_u_trim(), synchronous in every engine
                    // (FIO_ASYNCIO_SYNC_TRIM).
                    k.core.cpu(k.core.cost.fio_io);
                    k.core.cpu(k.core.cost.syscall);
                    let last = io.offset + io.len - 1;
                    let err = if let Some(Ok((zi, zj))) = zjobs[i].as_mut() {
                        // zbd_do_io_u_trim(): an emulated zone's reset only
                        // moves its write pointer.
                        zbds[*zi].do_trim(zj, io.offset).err().unwrap_or(0)
                    } else if j.ioengine == IoEngine::Falloc {
                        // The falloc engine: fallocate(PUNCH_HOLE | KEEP_SIZE).
                        use crate::mm::truncate::{FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE};
                        k.core.cpu(k.core.cost.fallocate);
                        let _ = k.vfs_fallocate(s.file.mapping, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, io.offset, io.len);
                        0
                    } else if j.filename.starts_with("/dev/") {
                        // os_trim(): BLKDISCARD, which drops the device's
                        // cached range first (truncate_bdev_range()).
                        k.truncate_inode_pages_range(s.file.mapping, io.offset, last);
                        0
                    } else {
                        // BLKDISCARD on a regular file: ENOTTY, and fio
                        // ends the job (not in its non-fatal errors).
                        25
                    };
                    s.t = k.core.now;
                    if err != 0 {
                        s.error = err;
                        s.stop_at = Some(s.t);
                        continue;
                    }
                    if s.start_stats.is_some() {
                        s.trim_ios += 1;
                        s.trim_bytes += io.len;
                    }
                    s.done_ios += 1;
                    continue;
                }
                let t0 = k.core.now;
                let faults0 = (k.core.vm.get(Item::PGFAULT), k.core.vm.get(Item::PGMAJFAULT));
                k.core.cpu(k.core.cost.fio_io);
                let write = matches!(io.dir, Dir::Write);
                // fio counts verify reads in the job's read statistics; the
                // pre-read comes before the job's clock starts.
                let record = s.start_stats.is_some() && kind != IoKind::PreRead;
                let queued = s.q.is_some();
                let ok = if let Some(q) = s.q.as_mut() {
                    // The queue records each I/O's statistics as it completes.
                    q.queue(k, j, &mut s.file, io, t0, &mut s.stats, &mut s.bytes, &mut s.ios, record)
                } else if j.ioengine == IoEngine::Null {
                    true
                } else if j.ioengine == IoEngine::Falloc {
                    // fio's falloc engine: reads allocate with KEEP_SIZE,
                    // writes allocate (mode 0); trims punch holes.
                    use crate::mm::truncate::FALLOC_FL_KEEP_SIZE;
                    let mode = if write { 0 } else { FALLOC_FL_KEEP_SIZE };
                    let _ = k.vfs_fallocate(s.file.mapping, mode, io.offset, io.len);
                    true
                } else if j.ioengine == IoEngine::Ftruncate {
                    // fio's ftruncate engine: ftruncate(fd, offset) per write.
                    k.core.cpu(k.core.cost.fallocate);
                    k.truncate_setsize(s.file.mapping, io.offset);
                    true
                } else if j.ioengine == IoEngine::IoUringCmd {
                    let done = k.nvme_uring_cmd_io(io.len, write);
                    k.core.wait_until(done);
                    true
                } else if j.direct {
                    let done = k.iomap_dio_rw(&s.file, io.offset, io.len, write);
                    k.core.wait_until(done);
                    true
                } else if j.ioengine == IoEngine::Mmap {
                    let first = io.offset >> PAGE_SHIFT;
                    let last = (io.offset + io.len - 1) >> PAGE_SHIFT;
                    let mut ok = true;
                    for p in first..=last {
                        let hit = if write {
                            k.mmap_write_access(&mut s.file, p).0
                        } else {
                            k.mmap_access(&mut s.file, p)
                        };
                        if !hit {
                            ok = false;
                            break;
                        }
                        k.core.cpu(k.core.cost.copy_page);
                    }
                    if write {
                        k.balance_dirty_pages();
                    }
                    ok
                } else {
                    buffered_rw(k, &mut s.file, io.offset, io.len, write)
                };
                if !ok || k.core.memcgs[s.file.memcg as usize].oom_killed {
                    s.oom = true;
                    s.run = Run::Done;
                    s.t = k.core.now;
                    continue;
                }
                let lat = k.core.now - t0;
                s.t = k.core.now;
                if record && !queued {
                    s.stats.io_complete(d, lat, k.core.now, io.len);
                    let majf = k.core.vm.get(Item::PGMAJFAULT) - faults0.1;
                    s.stats.majf += majf;
                    s.stats.minf += k.core.vm.get(Item::PGFAULT) - faults0.0 - majf;
                    s.bytes[d] += io.len;
                    s.ios[d] += 1;
                }
                if let (Some(l), true) = (s.lat.as_mut(), record && kind == IoKind::Job) {
                    let now = k.core.now;
                    // The job's I/Os so far (not reset by the final
                    // window's statistics reset).
                    let done = s.done_ios + 1;
                    // Completions over the target (account_io_completion),
                    // then lat_target_check() once the window is over.
                    let over = match s.q.as_mut() {
                        Some(q) => std::mem::take(&mut q.lat_over),
                        None => u64::from(lat > l.target_ns()),
                    };
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
                    if let Some(q) = s.q.as_mut() {
                        q.qd_limit = l.qd as usize;
                    }
                    match ev {
                        LatEvent::None => {}
                        // lat_fatal(): "max latency exceeded", ETIMEDOUT.
                        LatEvent::Fatal => {
                            s.error = 110;
                            s.stop_at = Some(now);
                        }
                        LatEvent::Done => s.stop_at = Some(now),
                        // reset_all_stats(): only the found depth counts.
                        LatEvent::FinalRun => {
                            s.stats = FioJobStats {
                                groupid: j.groupid,
                                group_reporting: j.group_reporting,
                                ..FioJobStats::default()
                            };
                            s.stats.rates.start(now);
                            s.start_stats = Some(now);
                            s.bytes = [0; 2];
                            s.ios = [0; 2];
                        }
                    }
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
                    // Issued and completed counts are taken as the same
                    // (exact for the synchronous engines).
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
            // fio exits: its processes' memory is freed, mmap'ed files are
            // unmapped, page tables freed.
            k.core.current = crate::mm::mmap::NO_MM;
            for cpu in 0..jobs.len() {
                k.lru_add_drain_cpu(cpu as u32);
            }
            k.core.cpu = 0;
            for &mm in job_mms.iter().filter(|&&mm| mm != crate::mm::mmap::NO_MM) {
                k.exit_mm(mm);
            }
            for (s, j) in st.iter().zip(jobs) {
                if j.ioengine == IoEngine::Mmap {
                    for &m in s.mappings.iter().filter(|&&m| m != NO_MAPPING) {
                        k.exit_mmap(m);
                    }
                }
            }
            // Every job has closed its files: unlinked inodes are evicted.
            for m in unlinked.drain(..) {
                k.truncate_inode_pages_final(m);
            }
            // Jobs end at their own time; the run lasts as long as the last.
            let end = st.iter().map(|s| s.t).max().unwrap_or(0);
            k.core.now = end;
            k.wb_complete();
        });
        self.lru_gen_samples = samples;
        let reports = st
            .into_iter()
            .zip(jobs)
            .zip(zjobs)
            .map(|((s, j), z)| {
                let runtime = s.t.saturating_sub(s.start_stats.unwrap_or(s.t));
                let mut stats = s.stats;
                if let Some(Ok((_, zj))) = z {
                    stats.zone_resets = zj.resets;
                }
                stats.total_run_time_ms = s.t.saturating_sub(s.epoch) / 1_000_000;
                JobReport {
                    jobname: j.name.clone(),
                    jobnum: j.jobnum,
                    read: DirStats::from(&stats.clat[0], s.bytes[0], s.ios[0], runtime),
                    write: DirStats::from(&stats.clat[1], s.bytes[1], s.ios[1], runtime),
                    oom_killed: s.oom,
                    error: s.error,
                    trim: (s.trim_ios, s.trim_bytes),
                    fio: stats,
                }
            })
            .collect();
        self.report(reports)
    }
}

/// A file unlinked while jobs still had it open: once none of them runs,
/// the last reference goes and the inode is evicted with its cache
/// (iput_final -> evict -> truncate_inode_pages_final).
/// `jobs` gives each job's (done, mapping).
fn release_unlinked<P: ReclaimPolicy>(
    k: &mut Kernel<P>,
    jobs: impl Iterator<Item = (bool, u32)> + Clone,
    unlinked: &mut Vec<u32>,
) {
    unlinked.retain(|&m| {
        let open = jobs.clone().any(|(done, mapping)| !done && mapping == m);
        if !open {
            k.truncate_inode_pages_final(m);
        }
        open
    });
}

/// The mapping of a job that opens no file for data.
const NO_MAPPING: u32 = u32::MAX;

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

/// Bytes the model allocates up front for a machine and its files: one
/// folio frame per page of managed RAM and, per file, an xarray slot per
/// page plus a leaf node per 64 pages. A front end compares this with the
/// host's memory before a run (an allocation failure aborts the process).
pub fn footprint_bytes(mm: &MmConfig, file_sizes: impl IntoIterator<Item = u64>) -> u128 {
    let ram_frames = (mm.ram_bytes.saturating_sub(mm.reserved_bytes) / PAGE_SIZE) as u128;
    let folio = std::mem::size_of::<crate::mm::folio::Folio>() as u128;
    let mut pages_total: u128 = 0;
    let files: u128 = file_sizes
        .into_iter()
        .map(|b| {
            let pages = b.div_ceil(PAGE_SIZE) as u128;
            pages_total += pages;
            // The xarray: a 4-byte directory entry and at most one
            // 528-byte leaf per 64 pages.
            pages.div_ceil(64) * (4 + 528)
        })
        .sum();
    // Frames are made as they are first used: never more than the
    // machine has, nor more than the pages the workload can hold (its
    // files and mappings, plus room for metadata such as ext4's blocks).
    let frames = ram_frames.min(pages_total + (1 << 16));
    frames * folio + files
}

/// Runs a probe under `cfg`.
pub fn run_probe(cfg: SimConfig, spec: &ProbeSpec) -> RunReport {
    Sim::new(cfg).run_probe(spec)
}

/// Runs seed 002's probe under `cfg` and follows the mmap_miss variants
/// `alts` ((p1, p2) each) alongside (mm::filemap::MmapMissAlts). Returns
/// the report and, per variant, the simulated time at which its read-around
/// decision first differed: None means the variant's run is this one.
/// `on_diverge(i)` is called as soon as variant i diverges.
pub fn run_probe_following(
    cfg: SimConfig,
    spec: &ProbeSpec,
    alts: &[(bool, bool)],
    on_diverge: &mut dyn FnMut(usize),
) -> (RunReport, Vec<Option<u64>>) {
    let mut sim = Sim::new(cfg);
    let follow = crate::mm::filemap::MmapMissAlts::follow(alts);
    with_kernel!(&mut sim.k, k => k.core.mmap_miss_alts = follow);
    let r = sim.run_probe_mut(spec, on_diverge);
    let diverged = with_kernel!(&sim.k, k => k.core.mmap_miss_alts.diverged);
    (r, diverged[..alts.len()].to_vec())
}

/// Runs fio jobs under `cfg`.
/// fio's own memory, in pages charged at its startup: the main process
/// and the first job's process (FIO_BASE_PAGES), each further job's
/// process or thread, and the job's I/O buffers (max_bs x iodepth, as
/// fio's init_io_u() sizes them). Measured with fio-3.33 on this
/// project's host, in a memory cgroup (v1 charge events, which count
/// these pages once each when charged and once when fio exits):
/// one job of 4 KiB blocks 2059 to 2081 events, median 2069; 128 KiB
/// blocks +33; 1 MiB +256; numjobs=2 +70, numjobs=4 +240 (processes);
/// thread=1 numjobs=4 +161. docs/large_folios.md has the runs.
pub fn fio_process_pages(j: &FioJob, first: bool) -> u64 {
    const FIO_BASE_PAGES: u64 = 2068;
    const FIO_JOB_PROCESS_PAGES: u64 = 75;
    const FIO_JOB_THREAD_PAGES: u64 = 54;
    let own = if first {
        FIO_BASE_PAGES
    } else if j.ctl.thread {
        FIO_JOB_THREAD_PAGES
    } else {
        FIO_JOB_PROCESS_PAGES
    };
    let max_bs = j.max_bs[0].max(j.max_bs[1]).max(j.bs);
    own + (max_bs * j.iodepth.max(1) as u64).div_ceil(PAGE_SIZE)
}

pub fn run_fio(cfg: SimConfig, jobs: &[FioJob]) -> RunReport {
    Sim::new(cfg).run_fio(jobs)
}

/// The value of a counter by name from a report: memcg first, then vmstat.
pub fn counter(r: &RunReport, name: &str) -> Option<u64> {
    r.memcg.get(name).or_else(|| r.vmstat.get(name)).copied()
}

/// The names of a job's files on the file system, as fio names them
/// (`j.files`, or its one `filename`); block devices are not on it.
fn job_file_names(j: &FioJob) -> impl Iterator<Item = &str> {
    let one = j.files.is_empty().then_some(j.filename.as_str());
    j.files
        .iter()
        .map(|f| f.name.as_str())
        .chain(one)
        .filter(|n| !n.starts_with("/dev/"))
}
