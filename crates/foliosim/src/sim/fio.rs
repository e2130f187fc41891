//! The kernel-side fio driver: each job's files and fadvise hints, its I/O
//! through the engine it names (psync, mmap, falloc, ftruncate, O_DIRECT,
//! NVMe passthrough, the queued engines of aio.rs, the file-metadata
//! engines), its statistics, and fio's exit. When jobs start, sleep and
//! stop is fio's job control (`foliosim_workload::fio::backend`), asked
//! per I/O.

use std::collections::BTreeMap;

use foliosim_workload::fio::backend::{Backend, Issue, JobRun, Next, RunState};
use foliosim_workload::fio::iolog::{Act, LogWriter};
use foliosim_workload::fio::{FadviseHint, FioJob, IoEngine, JobFile};
use foliosim_workload::iogen::{Dir, Io};
use foliosim_workload::jobio::{IoKind, JobIo, Op as JobOp, SyncKind};
use foliosim_workload::lat_target::LatEvent;
use foliosim_workload::zbd::{ZbdInfo, ZbdJob};

use super::aio::{buffered_rw, AsyncQueue};
use super::{fio_process_pages, job_file_names, release_unlinked, sample_policy, Sim, NO_MAPPING};
use crate::fs::ext4::{Ext4, Ext4Config, NameSpec};
use crate::mm::cache_ext::TaskRef;
use crate::mm::filemap::OpenFile;
use crate::mm::memcontrol::MemcgId;
use crate::mm::mmap::{MmId, NO_MM};
use crate::mm::readahead::FileRaState;
use crate::mm::vmscan::ReclaimPolicy;
use crate::mm::vmstat::Item;
use crate::mm::{Kernel, PAGE_SHIFT, PAGE_SIZE};
use crate::report::{DirStats, FioJobStats, JobReport, RunReport};
use crate::with_kernel;

/// One job's kernel-side state: its files, engine queue and statistics.
struct FioTask {
    io: JobIo,
    /// The file the job is on; `files[cur]` is its parked slot.
    file: OpenFile,
    files: Vec<OpenFile>,
    mappings: Vec<u32>,
    cur: usize,
    stats: FioJobStats,
    bytes: [u64; 2],
    ios: [u64; 2],
    /// When the job's statistics started (after its ramp).
    start_stats: Option<u64>,
    oom: bool,
    /// Queued engines (libaio, io_uring, posixaio, null at depth > 1).
    q: Option<AsyncQueue>,
    /// File-metadata engines: operations left (one per file).
    fileops_left: u32,
    /// Trims done (counted apart: the statistics are per read and write
    /// only).
    trim_ios: u64,
    trim_bytes: u64,
    /// write_iolog, from the job's start.
    wlog: Option<IologWriter>,
    /// ioengine=page_fault: the job's anonymous region.
    pf: Option<PfRegion>,
}

/// fio's page_fault engine's region (engines/page_fault.c): `size=` bytes
/// mmap'ed MAP_PRIVATE | MAP_ANONYMOUS in the job's process at init,
/// munmap'ed at close.
struct PfRegion {
    mm: MmId,
    space: u32,
    /// hugepage_delay: when the helper thread's MADV_HUGEPAGE lands (set
    /// at the job's start; None once done or without one).
    hugepage_at: Option<u64>,
}

type IologWriter = LogWriter<std::io::BufWriter<std::fs::File>>;

/// write_iolog's file, appended to as fio does (the CLI checks it opens).
fn open_iolog(j: &FioJob, now: u64) -> Option<IologWriter> {
    let path = j.write_iolog.as_deref()?;
    let f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .ok()?;
    let names = match j.files.is_empty() {
        true => vec![j.filename.clone()],
        false => j.files.iter().map(|f| f.name.clone()).collect(),
    };
    Some(LogWriter::new(std::io::BufWriter::new(f), names, now))
}

/// A run of fio jobs: the kernel-side tasks beside fio's backend.
struct FioRun<'j> {
    jobs: &'j [FioJob],
    tasks: Vec<FioTask>,
    be: Backend,
    /// Jobs naming the same file share it (one address space).
    by_name: BTreeMap<String, u32>,
    /// unlink(2) of a file another job uses: the inode and its cache live
    /// until the last job using it is done (iput_final).
    unlinked: Vec<u32>,
    /// zonemode=zbd: the emulated zones of each file and each job's view
    /// of them; a job fio's zone setup refuses fails with EINVAL.
    zbds: Vec<ZbdInfo>,
    zjobs: Vec<Option<Result<(usize, ZbdJob), String>>>,
    /// fio's processes (or threads), --fio-memory.
    job_mms: Vec<MmId>,
    /// cache_ext's `current` per job: pid and tid 1000 + job index (as the
    /// tracer's), comm the job's name.
    task_refs: Vec<Option<TaskRef>>,
    /// The file system's metadata (--fs ext4).
    ext4: Option<Ext4>,
    memcg: MemcgId,
    /// MGLRU's view sampled each simulated second (--timeline).
    sample: bool,
    samples: Vec<(u64, serde_json::Value)>,
    next_sample: u64,
}

fn fresh_stats(j: &FioJob) -> FioJobStats {
    FioJobStats {
        groupid: j.groupid,
        group_reporting: j.group_reporting,
        ..FioJobStats::default()
    }
}

/// The completion latencies so far: (mean x samples, samples).
fn clat_sum(s: &FioJobStats) -> (f64, u64) {
    let c = &s.clat;
    let sum = c[0].stat.mean * c[0].stat.samples as f64 + c[1].stat.mean * c[1].stat.samples as f64;
    (sum, c[0].stat.samples + c[1].stat.samples)
}

/// fio 3.33's td_io_open_file() fadvises the file for every engine, mmap
/// too; the mmap engine then madvises its mapping by the job's pattern
/// (fio_madvise_file(): by td_random(), whatever the hint's value).
fn fadvise_open(j: &FioJob, file: &mut OpenFile) {
    let random = match j.fadvise_hint {
        FadviseHint::Off => return,
        FadviseHint::On => j.rw.is_random(),
        FadviseHint::Sequential => false,
        FadviseHint::Random => true,
    };
    if random {
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

impl Sim {
    /// Job `j`'s files, opened (or shared by name) in order.
    fn open_job_files(&mut self, j: &FioJob, by_name: &mut BTreeMap<String, u32>) -> Vec<OpenFile> {
        let one = [JobFile {
            name: j.filename.clone(),
            offset: j.offset,
            size: j.size,
        }];
        let specs = if j.files.is_empty() {
            &one[..]
        } else {
            &j.files[..]
        };
        let mut files = Vec::new();
        for spec in specs {
            let mapping = match by_name.get(&spec.name) {
                // null, cpuio and the metadata engines read no file data.
                _ if j.ioengine.is_diskless() => NO_MAPPING,
                Some(&m) => m,
                None => {
                    let f = self.open(spec.offset + spec.size, &spec.name);
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
                pte: crate::mm::rmap::NO_PTES,
            };
            fadvise_open(j, &mut file);
            files.push(file);
        }
        files
    }

    /// Runs fio jobs concurrently: each job has its own clock (one CPU per
    /// job); the job furthest behind in time runs next, so the device and
    /// memory are shared as they would be. Jobs start as fio's run_threads()
    /// starts them (startdelay from the run's start, stonewall, wait_for)
    /// and exitall ends others as fio_terminate_threads() does; a job that
    /// sleeps (rate, thinktime, flow) only moves its own clock on. `thread`
    /// changes nothing here: the model has one address space either way.
    pub fn run_fio(mut self, jobs: &[FioJob]) -> RunReport {
        let mut run = FioRun::new(&mut self, jobs);
        let fs = self.cfg.mm.fs.clone();
        let fio_memory = self.cfg.mm.fio_process_memory;
        with_kernel!(&mut self.k, k => run.run(k, fs.as_ref(), fio_memory));
        self.lru_gen_samples = std::mem::take(&mut run.samples);
        let reports = run.reports();
        self.report(reports)
    }
}

impl<'j> FioRun<'j> {
    fn new(sim: &mut Sim, jobs: &'j [FioJob]) -> FioRun<'j> {
        let mut by_name = BTreeMap::new();
        let mut tasks = Vec::new();
        for j in jobs {
            let files = sim.open_job_files(j, &mut by_name);
            tasks.push(FioTask {
                io: JobIo::new(j, sim.cfg.seed),
                file: files[0].clone(),
                mappings: files.iter().map(|f| f.mapping).collect(),
                files,
                cur: 0,
                stats: fresh_stats(j),
                bytes: [0; 2],
                ios: [0; 2],
                start_stats: None,
                oom: false,
                q: (!j.ioengine.is_sync() && j.ioengine != IoEngine::CpuIo)
                    .then(|| AsyncQueue::new(j)),
                fileops_left: j.nrfiles,
                trim_ios: 0,
                trim_bytes: 0,
                wlog: None,
                pf: None,
            });
        }
        let mut be = Backend::new(jobs, sim.cfg.seed);
        let (zbds, zjobs) = foliosim_workload::zbd::setup(jobs);
        for (c, z) in be.td.iter_mut().zip(&zjobs) {
            if let Some(Err(_)) = z {
                c.error = 22;
            }
        }
        FioRun {
            jobs,
            tasks,
            be,
            by_name,
            unlinked: Vec::new(),
            zbds,
            zjobs,
            job_mms: vec![NO_MM; jobs.len()],
            task_refs: vec![None; jobs.len()],
            ext4: None,
            memcg: sim.memcg,
            sample: sim.cfg.timeline && sim.cfg.lru == super::LruKind::Mglru,
            samples: std::mem::take(&mut sim.lru_gen_samples),
            next_sample: sim.next_sample,
        }
    }

    fn run<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        fs: Option<&Ext4Config>,
        fio_memory: bool,
    ) {
        if fio_memory {
            self.fio_process_memory(k);
        }
        self.page_fault_regions(k);
        if let Some(c) = fs {
            // The names the jobs use, laid out before the run unless a job
            // creates them.
            let names: Vec<NameSpec> = self
                .jobs
                .iter()
                .filter(|j| {
                    !matches!(
                        j.ioengine,
                        IoEngine::Null | IoEngine::CpuIo | IoEngine::PageFault
                    )
                })
                .flat_map(|j| {
                    let exists = !matches!(j.ioengine, IoEngine::FileCreate | IoEngine::DirCreate);
                    job_file_names(j).map(move |name| NameSpec { name, exists })
                })
                .collect();
            self.ext4 = Some(Ext4::new(k, c, &names));
        }
        let jobs = self.jobs;
        loop {
            if k.core.cache_ext.error.is_some() {
                break;
            }
            let (tasks, ext4, memcg) = (&mut self.tasks, &mut self.ext4, self.memcg);
            let next = self.be.schedule(jobs, |i, c| {
                start_job(k, &jobs[i], &mut tasks[i], c, ext4.as_mut(), memcg)
            });
            let i = match next {
                Next::Again => continue,
                Next::End => break,
                Next::Run(i) => i,
            };
            let tasks = &self.tasks;
            self.be
                .steadystate_check(jobs, |x| clat_sum(&tasks[x].stats));
            self.turn(k, i);
        }
        self.exit(k);
    }

    /// fio's processes (or threads) and their memory: touched at startup,
    /// before any job's I/O; a job whose memory the OOM killer takes never
    /// starts.
    fn fio_process_memory<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>) {
        for (x, j) in self.jobs.iter().enumerate() {
            let pages = fio_process_pages(j, x == 0);
            let mm = k.mm_alloc(self.memcg, 0);
            let space = k.mmap_anon(mm, pages * PAGE_SIZE);
            k.core.current = mm;
            if !(0..pages).all(|p| k.anon_access(space, p, self.memcg, true)) {
                self.tasks[x].oom = true;
                self.be.never_starts(x);
            }
            self.job_mms[x] = mm;
        }
        k.core.current = NO_MM;
    }

    /// page_fault's init: each such job's region, mapped in its process
    /// (fio's own, --fio-memory, or one of its own) and madvised with
    /// madvise_hint, and MADV_NOHUGEPAGE when hugepage_delay is given.
    /// The mapping costs nothing until touched; the delay runs from the
    /// job's start (start_job).
    fn page_fault_regions<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>) {
        use foliosim_workload::fio::MadviseHint;
        for (x, j) in self.jobs.iter().enumerate() {
            if j.ioengine != IoEngine::PageFault || self.tasks[x].oom {
                continue;
            }
            if self.job_mms[x] == NO_MM {
                self.job_mms[x] = k.mm_alloc(self.memcg, 0);
            }
            let mm = self.job_mms[x];
            let space = k.mmap_anon(mm, j.size);
            let a = &mut k.core.files[space as usize];
            // MADV_RANDOM / MADV_SEQUENTIAL: VM_RAND_READ / VM_SEQ_READ.
            a.vm_no_recency = j.engine_opts.madvise_hint != MadviseHint::None;
            if j.engine_opts.hugepage_delay_ms > 0 {
                a.vm_hugepage = Some(false);
            }
            self.tasks[x].pf = Some(PfRegion {
                mm,
                space,
                hugepage_at: None,
            });
        }
    }

    /// Job `i` runs on its CPU as its task.
    #[inline]
    fn set_current<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>, i: usize) {
        // The OOM killer may choose the job's task (its memory is fio's,
        // --fio-memory), and then its I/O stops.
        k.core.current = self.job_mms[i];
        // Each job runs on a CPU of its own (its lru_add batch).
        k.core.cpu = i as u32;
        if let Some(t) = k.core.trace.as_deref_mut() {
            // Every fio job is a process named fio.
            t.set_task("fio", 1000 + i as u32);
        }
        if k.core.cache_ext.any_active() {
            let ce = &mut k.core.cache_ext;
            let name = &self.jobs[i].name;
            let t = *self.task_refs[i].get_or_insert_with(|| {
                let comm: String = name.chars().take(15).collect();
                ce.register_task(1000 + i as u32, 1000 + i as u32, &comm)
            });
            ce.set_current(t);
        }
    }

    /// Job `i`'s turn: one operation, or its exit.
    #[inline(always)]
    fn turn<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>, i: usize) {
        self.set_current(k, i);
        let j = &self.jobs[i];
        self.be.td[i].wake();
        let stopped = self.be.td[i].stopped();
        if !stopped && j.ioengine == IoEngine::CpuIo && self.cpuio(i) {
            return;
        }
        if !stopped && j.ioengine.is_file_op() && self.tasks[i].fileops_left > 0 {
            return self.file_op(k, i);
        }
        let Some(op) = self.next_op(i, stopped) else {
            return self.no_more_io(k, i);
        };
        k.core.now = self.be.td[i].t;
        match op {
            JobOp::Invalidate(f) => {
                let m = self.tasks[i].mappings[f];
                if !j.direct && m != NO_MAPPING {
                    k.invalidate_mapping_pages(m);
                }
            }
            JobOp::Sync { file, kind, range } => self.sync(k, i, file, kind, range),
            JobOp::Unlink(f) => self.unlink(k, i, f),
            JobOp::Io { file, io, kind } => self.job_io(k, i, op, file, io, kind),
            JobOp::Stall(st) => self.be.td[i].iolog_stall(st),
        }
    }

    /// cpuio burns cpuchunks of CPU then sleeps to keep cpuload percent;
    /// it touches no memory the model tracks, so its job just lasts its
    /// runtime. True when that is all of its turn.
    #[inline]
    fn cpuio(&mut self, i: usize) -> bool {
        let c = &mut self.be.td[i];
        self.tasks[i].start_stats.get_or_insert(c.ramp_end);
        c.t = c.stop_at.unwrap_or(c.t);
        c.stop_at.is_some()
    }

    /// The job's next operation, None when it is done: its runtime is over,
    /// its engine did all it does, or its zone setup failed.
    /// zbd_adjust_block() moves the I/O to a zone's write pointer or below
    /// it, or ends the job.
    #[inline(always)]
    fn next_op(&mut self, i: usize, stopped: bool) -> Option<JobOp> {
        let j = &self.jobs[i];
        let s = &mut self.tasks[i];
        let diskless_done = j.ioengine == IoEngine::CpuIo || j.ioengine.is_file_op();
        let zbd_failed = self.be.td[i].error == 22 && matches!(self.zjobs[i], Some(Err(_)));
        let mut op = if stopped || diskless_done || zbd_failed {
            None
        } else {
            s.io.next_op()
        };
        if let (
            Some(JobOp::Io {
                io,
                kind: IoKind::Job,
                file,
            }),
            Some(Ok((zi, zj))),
        ) = (op.as_mut(), self.zjobs[i].as_mut())
        {
            let orig = *io;
            io.dir = self.zbds[*zi].adjust_dir(zj, io.dir);
            match self.zbds[*zi].adjust_block(zj, *io) {
                Some(a) => {
                    *io = a;
                    s.io.adjusted(*file, orig, a);
                }
                None => op = None,
            }
        }
        op
    }

    /// A file-metadata engine's operation (filecreate, filestat, filedelete,
    /// dircreate, ...): one per file.
    fn file_op<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>, i: usize) {
        let j = &self.jobs[i];
        let s = &mut self.tasks[i];
        s.fileops_left -= 1;
        k.core.now = self.be.td[i].t;
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
        if let Some(fs) = self.ext4.as_mut() {
            let name = j
                .files
                .get(idx)
                .map_or(j.filename.as_str(), |f| f.name.as_str());
            let r = match j.ioengine {
                IoEngine::FileCreate | IoEngine::DirCreate => fs.ext4_create(k, name, self.memcg),
                IoEngine::FileStat | IoEngine::DirStat => fs.open(k, name, self.memcg),
                _ => fs.ext4_unlink(k, name, self.memcg),
            };
            if r.is_none() {
                s.oom = true;
                s.fileops_left = 0;
            }
        }
        if j.ioengine == IoEngine::FileDelete && s.fileops_left + 1 == j.nrfiles {
            // The job's first file is the one it names; a file other jobs
            // read or wrote loses its cache when the last of them is done
            // with it.
            if let Some(&m) = self.by_name.get(&j.filename) {
                self.unlinked.push(m);
            }
        }
        // fio records each operation as one completed I/O of the file's
        // size in the job's direction (fileoperations.c; checked on fio
        // 3.33: 1200 stats of 4 KiB files report 4,915,200 bytes).
        let d = (j.rw.has_writes() && !j.rw.has_reads()) as usize;
        let fsize = j
            .files
            .get(idx)
            .map_or(j.size / j.nrfiles.max(1) as u64, |f| f.size);
        if s.start_stats.is_some() {
            s.stats.io_complete(d, k.core.now - t0, k.core.now, fsize);
            s.bytes[d] += fsize;
            s.ios[d] += 1;
        }
        self.be.td[i].t = k.core.now;
        self.release_unlinked(k, None);
    }

    /// The job has no more I/O: what its queue holds completes
    /// (cleanup_pending_aio()), it exits, and may end others (exitall).
    fn no_more_io<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>, i: usize) {
        let j = &self.jobs[i];
        let s = &mut self.tasks[i];
        if let Some(q) = s.q.as_mut() {
            let c = &mut self.be.td[i];
            k.core.now = c.t;
            let stats = s.start_stats.is_some();
            s.oom |= !q.drain(
                k,
                j,
                &mut s.file,
                &mut s.stats,
                &mut s.bytes,
                &mut s.ios,
                stats,
            );
            c.t = k.core.now;
        }
        if let Some(r) = s.pf.take() {
            // close_file(): the helper thread is stopped, the region
            // unmapped.
            k.core.now = self.be.td[i].t;
            k.core.cpu(k.core.cost.syscall);
            k.munmap_anon(r.mm, r.space);
            self.be.td[i].t = k.core.now;
        }
        self.be.finish(i);
        self.release_unlinked(k, None);
        self.be.terminate_others(i, self.jobs);
    }

    /// Unlinked files no running job holds open go (`closing`: a job that
    /// has just closed its file, though it still runs).
    fn release_unlinked<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>, closing: Option<usize>) {
        let held = self
            .tasks
            .iter()
            .zip(&self.be.td)
            .enumerate()
            .flat_map(|(x, (s, c))| {
                let done = c.run == RunState::Done || closing == Some(x);
                s.mappings.iter().map(move |&m| (done, m))
            });
        release_unlinked(k, held, &mut self.unlinked);
    }

    /// fsync(2), fdatasync(2) or sync_file_range(2) of the job's file.
    fn sync<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        i: usize,
        file: usize,
        kind: SyncKind,
        range: (u64, u64),
    ) {
        self.be.td[i].last_issue = Some(k.core.now);
        if let Some(w) = self.tasks[i].wlog.as_mut() {
            match kind {
                SyncKind::Fsync => w.sync(k.core.now, file, Act::Sync),
                SyncKind::Fdatasync => w.sync(k.core.now, file, Act::Datasync),
                SyncKind::SyncFileRange(_) => w.sync_file_range(k.core.now, file, range.0, range.1),
            }
        }
        k.core.cpu(k.core.cost.syscall);
        let m = self.tasks[i].mappings[file];
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
        self.be.td[i].t = k.core.now;
    }

    /// unlink(2) of the job's file.
    fn unlink<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>, i: usize, f: usize) {
        k.core.cpu(k.core.cost.syscall);
        let m = self.tasks[i].mappings[f];
        if m != NO_MAPPING && !self.unlinked.contains(&m) {
            self.unlinked.push(m);
        }
        self.be.td[i].t = k.core.now;
        // fio closed the file first; other jobs may hold it.
        self.release_unlinked(k, Some(i));
    }

    /// One I/O of the job (its own, a verify read or the pre-read): job
    /// control first, then the engine, the statistics and what follows a
    /// completion.
    #[inline]
    fn job_io<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        i: usize,
        op: JobOp,
        f: usize,
        io: Io,
        kind: IoKind,
    ) {
        // The job's parts, looked up once: this runs per I/O.
        let (j, s, be) = (&self.jobs[i], &mut self.tasks[i], &mut self.be);
        if f != s.cur {
            std::mem::swap(&mut s.file, &mut s.files[s.cur]);
            std::mem::swap(&mut s.file, &mut s.files[f]);
            s.cur = f;
        }
        let d = (io.dir == Dir::Write) as usize;
        if kind == IoKind::Job {
            let issue = be.may_issue(i, j, d);
            let c = &mut be.td[i];
            match issue {
                Issue::Go => {
                    k.core.now = c.t;
                    c.last_issue = Some(c.t);
                }
                Issue::Hold => return s.io.unget(op),
                Issue::Spin => {
                    k.core.cpu(k.core.cost.fio_io);
                    c.t = k.core.now;
                    return s.io.unget(op);
                }
            }
        }
        let c = &mut be.td[i];
        if s.start_stats.is_none() && k.core.now >= c.ramp_end && kind != IoKind::PreRead {
            s.start_stats = Some(k.core.now);
            s.stats.rates.start(k.core.now);
        }
        if let Some(w) = s.wlog.as_mut().filter(|_| kind != IoKind::PreRead) {
            let act = match io.dir {
                Dir::Read => Act::Read,
                Dir::Write => Act::Write,
                Dir::Trim => Act::Trim,
            };
            w.io(k.core.now, f, act, io.offset, io.len);
        }
        if j.ioengine == IoEngine::PageFault && io.offset + io.len > j.size {
            // The engine's queue fails an I/O past the region (the parser
            // refuses the options that would issue one).
            c.t = k.core.now;
            return c.fail(22);
        }
        if io.dir == Dir::Trim {
            return self.trim(k, i, io);
        }
        let t0 = k.core.now;
        let faults0 = (
            k.core.vm.get(Item::PGFAULT),
            k.core.vm.get(Item::PGMAJFAULT),
        );
        k.core.cpu(k.core.cost.fio_io);
        // fio counts verify reads in the job's read statistics; the
        // pre-read comes before the job's clock starts.
        let record = s.start_stats.is_some() && kind != IoKind::PreRead;
        let queued = s.q.is_some();
        let ok = engine_io(k, j, s, io, t0, record);
        if !ok || k.core.memcgs[s.file.memcg as usize].oom_killed {
            s.oom = true;
            c.run = RunState::Done;
            c.t = k.core.now;
            return;
        }
        let lat = k.core.now - t0;
        c.t = k.core.now;
        if record && !queued {
            s.stats.io_complete(d, lat, k.core.now, io.len);
            let majf = k.core.vm.get(Item::PGMAJFAULT) - faults0.1;
            s.stats.majf += majf;
            s.stats.minf += k.core.vm.get(Item::PGFAULT) - faults0.0 - majf;
            s.bytes[d] += io.len;
            s.ios[d] += 1;
        }
        if record && kind == IoKind::Job {
            lat_target(j, s, c, k.core.now, lat);
        }
        if kind == IoKind::Job {
            if let Some(spin) = c.io_done(j, d, io.len) {
                k.core.cpu(spin);
                c.think(j, d, k.core.now, spin);
            }
            c.check_min_rate(j, d, s.start_stats.is_some());
        }
        sample_policy(
            k,
            self.memcg,
            self.sample,
            &mut self.samples,
            &mut self.next_sample,
        );
    }

    /// do_io_u_trim(), synchronous in every engine (FIO_ASYNCIO_SYNC_TRIM).
    fn trim<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>, i: usize, io: Io) {
        let j = &self.jobs[i];
        let s = &mut self.tasks[i];
        k.core.cpu(k.core.cost.fio_io);
        k.core.cpu(k.core.cost.syscall);
        let last = io.offset + io.len - 1;
        let err = if let Some(Ok((zi, zj))) = self.zjobs[i].as_mut() {
            // zbd_do_io_u_trim(): an emulated zone's reset only moves its
            // write pointer.
            self.zbds[*zi].do_trim(zj, io.offset).err().unwrap_or(0)
        } else if j.ioengine == IoEngine::Falloc {
            // The falloc engine: fallocate(PUNCH_HOLE | KEEP_SIZE).
            use crate::mm::truncate::{FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE};
            k.core.cpu(k.core.cost.fallocate);
            let mode = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
            let _ = k.vfs_fallocate(s.file.mapping, mode, io.offset, io.len);
            0
        } else if let Some(r) = s.pf.as_ref() {
            // page_fault_trim(): MADV_DONTNEED of the range widened to
            // whole pages, within the region.
            let first = io.offset >> PAGE_SHIFT;
            let end = (io.offset + io.len).div_ceil(PAGE_SIZE);
            k.madvise_dontneed_anon(r.mm, r.space, first, end);
            0
        } else if j.filename.starts_with("/dev/") {
            // os_trim(): BLKDISCARD, which drops the device's cached range
            // first (truncate_bdev_range()).
            k.truncate_inode_pages_range(s.file.mapping, io.offset, last);
            0
        } else {
            // BLKDISCARD on a regular file: ENOTTY, and fio ends the job
            // (not in its non-fatal errors).
            25
        };
        let c = &mut self.be.td[i];
        c.t = k.core.now;
        if err != 0 {
            return c.fail(err);
        }
        if s.start_stats.is_some() {
            s.trim_ios += 1;
            s.trim_bytes += io.len;
        }
        c.done_ios += 1;
    }

    /// fio exits: its processes' memory is freed, mmap'ed files are
    /// unmapped, page tables freed, unlinked inodes evicted; the run lasts
    /// as long as its last job.
    fn exit<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>) {
        k.core.current = NO_MM;
        for cpu in 0..self.jobs.len() {
            k.lru_add_drain_cpu(cpu as u32);
        }
        k.core.cpu = 0;
        for &mm in self.job_mms.iter().filter(|&&mm| mm != NO_MM) {
            k.exit_mm(mm);
        }
        for (s, j) in self.tasks.iter().zip(self.jobs) {
            if j.ioengine == IoEngine::Mmap {
                for &m in s.mappings.iter().filter(|&&m| m != NO_MAPPING) {
                    k.exit_mmap(m);
                }
            }
        }
        for m in self.unlinked.drain(..) {
            k.truncate_inode_pages_final(m);
        }
        for (s, c) in self.tasks.iter_mut().zip(&self.be.td) {
            // Nothing to report a failed write to: fio ignores them too.
            let _ = s.wlog.take().map(|w| w.finish(c.t));
        }
        k.core.now = self.be.td.iter().map(|c| c.t).max().unwrap_or(0);
        k.wb_complete();
    }

    /// Each job's report, as fio prints it.
    fn reports(self) -> Vec<JobReport> {
        let parts = self.tasks.into_iter().zip(self.be.td).zip(self.zjobs);
        parts
            .zip(self.jobs)
            .map(|(((s, c), z), j)| {
                let runtime = c.t.saturating_sub(s.start_stats.unwrap_or(c.t));
                let mut stats = s.stats;
                if let Some(Ok((_, zj))) = z {
                    stats.zone_resets = zj.resets;
                }
                stats.total_run_time_ms = c.t.saturating_sub(c.epoch) / 1_000_000;
                JobReport {
                    jobname: j.name.clone(),
                    jobnum: j.jobnum,
                    read: DirStats::from(&stats.clat[0], s.bytes[0], s.ios[0], runtime),
                    write: DirStats::from(&stats.clat[1], s.bytes[1], s.ios[1], runtime),
                    oom_killed: s.oom,
                    error: c.error,
                    trim: (s.trim_ios, s.trim_bytes),
                    fio: stats,
                }
            })
            .collect()
    }
}

/// latency_target's search after a recorded job I/O of latency `lat`: the
/// completions over the target (account_io_completion), then its check;
/// the final depth's run counts alone (reset_all_stats()).
#[inline]
fn lat_target(j: &FioJob, s: &mut FioTask, c: &mut JobRun, now: u64, lat: u64) {
    let Some(target) = c.lat.as_ref().map(|l| l.target_ns()) else {
        return;
    };
    let over = match s.q.as_mut() {
        Some(q) => std::mem::take(&mut q.lat_over),
        None => u64::from(lat > target),
    };
    let (ev, qd) = c.lat_target_check(over, now);
    if let Some(q) = s.q.as_mut() {
        q.qd_limit = qd as usize;
    }
    if ev == LatEvent::FinalRun {
        s.stats = fresh_stats(j);
        s.stats.rates.start(now);
        s.start_stats = Some(now);
        s.bytes = [0; 2];
        s.ios = [0; 2];
    }
}

/// The driver's part of a job's start: the queue depth latency_target
/// allows and, with a file system, td_io_open_file()'s path walk and inode
/// for each file before the first I/O.
fn start_job<P: ReclaimPolicy>(
    k: &mut Kernel<P>,
    j: &FioJob,
    s: &mut FioTask,
    c: &mut JobRun,
    ext4: Option<&mut Ext4>,
    memcg: MemcgId,
) {
    if let (Some(l), Some(q)) = (&c.lat, s.q.as_mut()) {
        q.qd_limit = l.qd as usize;
    }
    s.wlog = open_iolog(j, c.t);
    if let Some(r) =
        s.pf.as_mut()
            .filter(|_| j.engine_opts.hugepage_delay_ms > 0)
    {
        r.hugepage_at = Some(c.t + j.engine_opts.hugepage_delay_ms * 1_000_000);
    }
    let Some(fs) = ext4.filter(|_| c.run == RunState::Running && !j.ioengine.is_diskless()) else {
        return;
    };
    k.core.now = c.t;
    for name in job_file_names(j) {
        if fs.open(k, name, memcg).is_none() {
            s.oom = true;
            c.run = RunState::Done;
            break;
        }
    }
    c.t = k.core.now;
}

/// The I/O through the job's engine; false when it OOMed.
fn engine_io<P: ReclaimPolicy>(
    k: &mut Kernel<P>,
    j: &FioJob,
    s: &mut FioTask,
    io: Io,
    t0: u64,
    record: bool,
) -> bool {
    let write = matches!(io.dir, Dir::Write);
    if let Some(q) = s.q.as_mut() {
        // The queue records each I/O's statistics as it completes.
        return q.queue(
            k,
            j,
            &mut s.file,
            io,
            t0,
            &mut s.stats,
            &mut s.bytes,
            &mut s.ios,
            record,
        );
    }
    match j.ioengine {
        IoEngine::Null => {}
        IoEngine::PageFault => return page_fault_rw(k, s, io, write),
        IoEngine::Falloc => {
            // fio's falloc engine: reads allocate with KEEP_SIZE, writes
            // allocate (mode 0); trims punch holes.
            use crate::mm::truncate::FALLOC_FL_KEEP_SIZE;
            let mode = if write { 0 } else { FALLOC_FL_KEEP_SIZE };
            let _ = k.vfs_fallocate(s.file.mapping, mode, io.offset, io.len);
        }
        IoEngine::Ftruncate => {
            // fio's ftruncate engine: ftruncate(fd, offset) per write.
            k.core.cpu(k.core.cost.fallocate);
            k.truncate_setsize(s.file.mapping, io.offset);
        }
        IoEngine::IoUringCmd => {
            let done = k.nvme_uring_cmd_io(io.len, write);
            k.core.wait_until(done);
        }
        _ if j.direct => {
            let done = k.iomap_dio_rw(&s.file, io.offset, io.len, write);
            k.core.wait_until(done);
        }
        IoEngine::Mmap => return mmap_rw(k, &mut s.file, io, write),
        _ => return buffered_rw(k, &mut s.file, io.offset, io.len, write),
    }
    true
}

/// fio's mmap engine: a load or store per page, copying it.
fn mmap_rw<P: ReclaimPolicy>(k: &mut Kernel<P>, file: &mut OpenFile, io: Io, write: bool) -> bool {
    let first = io.offset >> PAGE_SHIFT;
    let last = (io.offset + io.len - 1) >> PAGE_SHIFT;
    let mut ok = true;
    for p in first..=last {
        let hit = if write {
            k.mmap_write_access(file, p).0
        } else {
            k.mmap_access(file, p)
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
}

/// fio's page_fault engine: the I/O's bytes copied from (read) or into
/// (write) the region one byte at a time, so each page of the range is a
/// user access: a present page a hit, else the anonymous fault paths
/// (do_anonymous_page(): the zero page on a read, a charged folio of the
/// VMA's THP order on a write; do_wp_page()'s copy on a write to the zero
/// page; do_swap_page() for a swapped-out page), then the copy (copy_page
/// for a whole page, its share for part of one). False when the task was
/// OOM-killed.
fn page_fault_rw<P: ReclaimPolicy>(
    k: &mut Kernel<P>,
    s: &mut FioTask,
    io: Io,
    write: bool,
) -> bool {
    let Some(r) = s.pf.as_mut() else {
        return false;
    };
    if r.hugepage_at.is_some_and(|at| k.core.now >= at) {
        // The helper thread's madvise(MADV_HUGEPAGE) of the whole region
        // (its own CPU, not the job's).
        k.core.files[r.space as usize].vm_hugepage = Some(true);
        r.hugepage_at = None;
    }
    let end = io.offset + io.len;
    let first = io.offset >> PAGE_SHIFT;
    let last = (end - 1) >> PAGE_SHIFT;
    for p in first..=last {
        if !k.anon_access(r.space, p, s.file.memcg, write) {
            return false;
        }
        let lo = io.offset.max(p << PAGE_SHIFT);
        let hi = end.min((p + 1) << PAGE_SHIFT);
        k.core.cpu(k.core.cost.copy_page * (hi - lo) / PAGE_SIZE);
    }
    true
}
