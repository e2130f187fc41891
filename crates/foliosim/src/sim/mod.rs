//! The driver: runs workloads (fio jobs, the mmap probe, cache traces)
//! through the kernel model and collects what fio and the kernel would
//! print. Workloads come from `foliosim-workload`; nothing here models the
//! kernel.

use std::collections::BTreeMap;

use foliosim_workload::fio::FioJob;
use foliosim_workload::mmap_probe::ProbeSpec;
use foliosim_workload::trace::TraceReq;
use serde::Serialize;

use crate::mm::filemap::OpenFile;
use crate::mm::memcontrol::MemcgId;
use crate::mm::readahead::FileRaState;
use crate::mm::vmscan::classic::ClassicLru;
use crate::mm::vmscan::ReclaimPolicy;
use crate::mm::vmstat::{Counters, Item, NAMES, NR_ITEMS};
use crate::mm::{Kernel, MmConfig, PAGE_SHIFT, PAGE_SIZE};

mod aio;
mod fio;

/// Which reclaim policy runs. JSON spells it as `--lru` takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
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
                    // "madvise" sizes when a MADV_HUGEPAGE region used
                    // them (THP's default is madvise: not every run).
                    let used = (1..=crate::mm::folio::HPAGE_PMD_ORDER)
                        .filter(|&o| core.mthp.0[o as usize].iter().any(|&v| v != 0))
                        .fold(0u32, |m, o| m | 1 << o);
                    let mask = self.cfg.mm.thp_anon_orders
                        | (self.cfg.mm.thp_anon_madvise_orders & used)
                        | self.cfg.mm.tmpfs_huge_orders();
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
            pte: crate::mm::rmap::NO_PTES,
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
