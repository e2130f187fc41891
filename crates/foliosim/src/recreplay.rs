//! Replays a recorded application (foliosim-trace v1, `foliosim record`,
//! docs/trace-format.md) through the model: every recorded task is a task
//! of its own with its own clock (threads share their process's mm,
//! processes have one each), and the runnable task furthest behind runs
//! its next event, as the scenario driver schedules its threads. Reads,
//! writes, fsync and fadvise go through the model's syscall paths, file
//! faults through its fault path (which does its own readahead and
//! fault-around), anonymous faults through its anonymous path. Nothing
//! here models the kernel.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::io::BufRead;

use foliosim_workload::rectrace::{self, Event, FileDecl, IdMap as HashMap, Op, Reader, MISC_VMA};
use foliosim_workload::scenario::{Advice, Madvice};

use crate::mm::filemap::OpenFile;
use crate::mm::memcontrol::MemcgId;
use crate::mm::mmap::MmId;
use crate::mm::vmscan::ReclaimPolicy;
use crate::mm::vmstat::Item;
use crate::mm::{Kernel, PAGE_SIZE};
use crate::report::RunReport;
use crate::sim::{Sim, SimConfig};
use crate::with_kernel;

/// How think time between a task's events is replayed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReplayOpts {
    /// `--timing afap`: none at all.
    pub afap: bool,
    /// `--compute-scale`: recorded think time times this.
    pub compute_scale: f64,
}

impl Default for ReplayOpts {
    fn default() -> Self {
        ReplayOpts {
            afap: false,
            compute_scale: 1.0,
        }
    }
}

/// What the replay did, beside the kernel's counters.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct ReplayStats {
    pub events: u64,
    pub tasks: u64,
    pub processes: u64,
    pub files: u64,
    pub reads: u64,
    pub read_bytes: u64,
    pub writes: u64,
    pub write_bytes: u64,
    pub file_faults: u64,
    pub anon_faults: u64,
    /// Fault-around ranges the real kernel mapped (informative: the model
    /// maps its own).
    pub real_fault_around_pages: u64,
    /// Events the model cannot run, by reason (docs/trace-format.md).
    pub skipped: BTreeMap<String, u64>,
    /// Processes the model's OOM killer ended.
    pub oom_killed: u64,
}

/// The largest anonymous space the model makes for one mapping (64 GiB):
/// a larger mapping's pages are packed by page-table region.
const ANON_CAP_PAGES: u64 = 1 << 24;
const PTRS_PER_PTE: u64 = 512;

/// An anonymous mapping's model space, made at its first fault.
#[derive(Default)]
struct Anon {
    pages: u64,
    space: Option<u32>,
    /// Page-table region -> packed region, for mappings over the cap.
    regions: HashMap<u64, u64>,
}

impl Anon {
    fn index(&mut self, page: u64) -> u64 {
        if self.pages <= ANON_CAP_PAGES {
            return page;
        }
        let n = self.regions.len() as u64;
        let r = *self.regions.entry(page / PTRS_PER_PTE).or_insert(n);
        (r * PTRS_PER_PTE + page % PTRS_PER_PTE) % ANON_CAP_PAGES
    }
}

enum Vma {
    Anon(Anon),
    File {
        file: u32,
        open: OpenFile,
        pages: u64,
        pgoff: u64,
        shared: bool,
    },
}

struct Proc {
    mm: MmId,
    vmas: BTreeMap<u32, Vma>,
    /// Mapping 0: heap, stacks, the executable's data.
    misc: Anon,
    live: u32,
    done: bool,
}

struct Task {
    proc: usize,
    clock: u64,
    /// The recorded time its last event ended (µs).
    rec_end: u64,
    queue: VecDeque<Event>,
    done: bool,
}

struct FileRt {
    mapping: u32,
    opens: u32,
    mappers: u32,
    unlinked: bool,
}

struct Replay<R> {
    rd: Reader<R>,
    eof: bool,
    opts: ReplayOpts,
    memcg: MemcgId,
    ra_kb: u64,
    tasks: Vec<Task>,
    tids: HashMap<u32, usize>,
    procs: Vec<Proc>,
    files: HashMap<u32, FileRt>,
    ofds: HashMap<u32, (u32, OpenFile)>,
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    /// The last task id looked up (events come in runs of one task).
    last: (u32, usize),
    oom_seen: u64,
    st: ReplayStats,
}

/// Replays the trace `rd` on a machine configured by `cfg`.
pub fn replay<R: BufRead>(
    cfg: SimConfig,
    rd: Reader<R>,
    opts: ReplayOpts,
) -> Result<(RunReport, ReplayStats), String> {
    let mut sim = Sim::new(cfg);
    let memcg = sim.memcg;
    let ra_kb = sim.cfg.mm.read_ahead_kb;
    let st = with_kernel!(&mut sim.k, k => {
        let mut r = Replay {
            rd,
            eof: false,
            opts,
            memcg,
            ra_kb,
            tasks: Vec::new(),
            tids: HashMap::default(),
            procs: Vec::new(),
            files: HashMap::default(),
            ofds: HashMap::default(),
            heap: BinaryHeap::new(),
            last: (u32::MAX, 0),
            oom_seen: k.core.vm.get(Item::OOM_KILL),
            st: ReplayStats::default(),
        };
        r.run(k)?;
        let end = r.tasks.iter().map(|t| t.clock).max().unwrap_or(0);
        k.core.now = k.core.now.max(end);
        k.wb_complete();
        r.st
    });
    let mut rep = sim.report(Vec::new());
    if let Some(e) = rep.policy_error.take() {
        return Err(format!("--policy: {e}"));
    }
    rep.elapsed_ns = with_kernel!(&sim.k, k => k.core.now);
    Ok((rep, st))
}

impl<R: BufRead> Replay<R> {
    /// Reads events into their tasks' queues until `want` has one (or
    /// the trace ends); file declarations are applied as read.
    fn fill<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        want: Option<usize>,
    ) -> Result<(), String> {
        while !self.eof {
            if let Some(w) = want {
                if !self.tasks[w].queue.is_empty() {
                    return Ok(());
                }
            }
            match self.rd.next_event() {
                None => self.eof = true,
                Some(Err(e)) => return Err(e.to_string()),
                Some(Ok(ev)) => match &ev.op {
                    Op::File(d) => self.add_file(k, d),
                    &Op::Cached { file, first, pages } => {
                        self.precache(k, file, first, pages, ev.line)?
                    }
                    Op::New { .. } if ev.task == 0 => {
                        self.st.events += 1;
                        self.new_task(k, &ev, 0)
                    }
                    _ => {
                        let t = self.task_of(ev.task);
                        self.tasks[t].queue.push_back(ev);
                    }
                },
            }
            if want.is_none() {
                return Ok(());
            }
        }
        Ok(())
    }

    /// The task a trace id names, made (not started) on first sight.
    fn task_of(&mut self, tid: u32) -> usize {
        if self.last.0 == tid {
            return self.last.1;
        }
        if let Some(&t) = self.tids.get(&tid) {
            self.last = (tid, t);
            return t;
        }
        self.tasks.push(Task {
            proc: usize::MAX,
            clock: 0,
            rec_end: 0,
            queue: VecDeque::new(),
            done: false,
        });
        self.tids.insert(tid, self.tasks.len() - 1);
        self.tasks.len() - 1
    }

    fn add_file<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>, d: &FileDecl) {
        // Laid out at its largest size, then cut to the size the run
        // found: the run's own writes grow it back.
        let mapping = k.core.add_data_file(d.size.max(1));
        if let Some(t) = k.core.trace.as_deref_mut() {
            t.name_file(mapping, &d.path);
        }
        if d.initial < d.size {
            k.truncate_setsize(mapping, d.initial);
        }
        self.st.files += 1;
        self.files.insert(
            d.id,
            FileRt {
                mapping,
                opens: 0,
                mappers: 0,
                unlinked: false,
            },
        );
    }

    /// Pages cached before the run, outside its cgroup (files other
    /// processes had mapped): order-0 folios of the root cgroup, read
    /// long ago, so no I/O and no charge to the run.
    fn precache<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        file: u32,
        first: u64,
        pages: u64,
        line: usize,
    ) -> Result<(), String> {
        let mapping = self.file(file, line)?.mapping;
        let end = (first + pages).min(k.core.files[mapping as usize].nr_pages());
        for idx in first..end {
            if k.core.files[mapping as usize].folio(idx).is_none() {
                k.filemap_add_folio(mapping, idx, crate::mm::memcontrol::ROOT_MEMCG, true);
            }
        }
        Ok(())
    }

    fn run<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>) -> Result<(), String> {
        // The first task comes from the recorder's 'n' line.
        while self.heap.is_empty() && !self.eof {
            self.fill(k, None)?;
        }
        while let Some(Reverse((_, t))) = self.heap.pop() {
            if self.tasks[t].done {
                continue;
            }
            self.fill(k, Some(t))?;
            let Some(ev) = self.tasks[t].queue.pop_front() else {
                // The trace ended without its exit.
                self.exit_task(k, t);
                continue;
            };
            self.step(k, t, ev)?;
            if !self.tasks[t].done {
                self.heap.push(Reverse((self.tasks[t].clock, t)));
            }
        }
        Ok(())
    }

    /// Runs one event of task `t` at its clock plus the think time before it.
    fn step<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        t: usize,
        ev: Event,
    ) -> Result<(), String> {
        self.st.events += 1;
        let task = &mut self.tasks[t];
        if !self.opts.afap && ev.t_us > task.rec_end {
            let think = (ev.t_us - task.rec_end) as f64 * 1000.0 * self.opts.compute_scale;
            task.clock = task.clock.saturating_add(think as u64);
        }
        task.rec_end = task.rec_end.max(ev.t_us);
        let p = task.proc;
        k.core.now = task.clock;
        k.core.current = self.procs[p].mm;
        k.core.cpu = t as u32;
        let t_end = self.op(k, t, &ev)?;
        let task = &mut self.tasks[t];
        task.clock = k.core.now;
        task.rec_end = task.rec_end.max(t_end);
        k.mem_cgroup_handle_over_high();
        if k.core.vm.get(Item::OOM_KILL) != self.oom_seen {
            self.oom_kills(k);
        }
        Ok(())
    }

    fn skip(&mut self, why: &str) {
        *self.st.skipped.entry(why.to_string()).or_insert(0) += 1;
    }

    fn file(&self, id: u32, line: usize) -> Result<&FileRt, String> {
        self.files
            .get(&id)
            .ok_or_else(|| format!("line {line}: file {id} unknown"))
    }

    /// The event's work; returns the recorded time it ended (µs).
    fn op<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        t: usize,
        ev: &Event,
    ) -> Result<u64, String> {
        let p = self.tasks[t].proc;
        let mut end = ev.t_us;
        match ev.op {
            Op::File(_) | Op::Cached { .. } => unreachable!("applied as read"),
            Op::New { .. } => self.new_task(k, ev, t),
            Op::Exec => {
                self.release_mm(k, p);
                self.procs[p].mm = k.mm_alloc(self.memcg, 0);
                self.procs[p].misc = Anon::default();
            }
            Op::Exit => self.exit_task(k, t),
            Op::Open { ofd, file } => {
                let mapping = self.file(file, ev.line)?.mapping;
                let open = OpenFile::new(mapping, self.ra_kb, self.memcg);
                self.files.get_mut(&file).expect("checked").opens += 1;
                self.ofds.insert(ofd, (file, open));
            }
            Op::Close { ofd } => {
                if let Some((file, _)) = self.ofds.remove(&ofd) {
                    self.files.get_mut(&file).expect("declared").opens -= 1;
                    self.maybe_evict(k, file);
                }
            }
            Op::Read {
                ofd,
                off,
                len,
                dur_us,
            }
            | Op::Write {
                ofd,
                off,
                len,
                dur_us,
            } => {
                end = ev.t_us.saturating_add(dur_us);
                let write = matches!(ev.op, Op::Write { .. });
                if len == 0 {
                    return Ok(end);
                }
                // Another thread of the process may have closed it first
                // in the model's order.
                let Some((_, open)) = self.ofds.get_mut(&ofd) else {
                    self.skip("I/O on a file another task closed first");
                    return Ok(end);
                };
                k.core.cpu(k.core.cost.syscall);
                if write {
                    self.st.writes += 1;
                    self.st.write_bytes += len;
                    k.filemap_write(open, off, len);
                } else {
                    self.st.reads += 1;
                    self.st.read_bytes += len;
                    k.filemap_read(open, off, len);
                }
            }
            Op::Fsync { file, dur_us } => {
                end = ev.t_us.saturating_add(dur_us);
                let m = self.file(file, ev.line)?.mapping;
                k.core.cpu(k.core.cost.syscall);
                k.file_write_and_wait_range(m, 0, u64::MAX);
            }
            Op::Fadvise {
                ofd,
                advice,
                off,
                len,
            } => self.fadvise(k, ofd, advice, off, len),
            Op::Truncate { file, size } => {
                let m = self.file(file, ev.line)?.mapping;
                k.core.cpu(k.core.cost.syscall);
                k.truncate_setsize(m, size);
            }
            Op::Unlink { file } => {
                self.files.get_mut(&file).expect("checked").unlinked = true;
                self.maybe_evict(k, file);
            }
            Op::Rename { .. } => {}
            Op::MmapAnon { vma, pages } => {
                k.core.cpu(k.core.cost.syscall);
                let a = Anon {
                    pages,
                    ..Anon::default()
                };
                self.procs[p].vmas.insert(vma, Vma::Anon(a));
            }
            Op::MmapFile {
                vma,
                pages,
                file,
                pgoff,
                shared,
            } => {
                k.core.cpu(k.core.cost.syscall);
                let f = self.files.get_mut(&file).expect("checked");
                f.mappers += 1;
                let mut open = OpenFile::new(f.mapping, self.ra_kb, self.memcg);
                open.pte = k.core.mmap_ptes(f.mapping, self.memcg);
                let v = Vma::File {
                    file,
                    open,
                    pages,
                    pgoff,
                    shared,
                };
                self.procs[p].vmas.insert(vma, v);
            }
            Op::Munmap { vma } => {
                k.core.cpu(k.core.cost.syscall);
                if let Some(v) = self.procs[p].vmas.remove(&vma) {
                    self.unmap(k, p, v);
                }
            }
            Op::Madvise {
                vma,
                advice,
                first,
                pages,
            } => self.madvise(k, p, vma, advice, first, pages),
            Op::FileFault { vma, index, write } => self.file_fault(k, p, vma, index, write),
            Op::AnonFault { vma, page, write } => {
                self.st.anon_faults += 1;
                let (mm, memcg) = (self.procs[p].mm, self.memcg);
                let pr = &mut self.procs[p];
                let a = if vma == MISC_VMA {
                    if pr.misc.pages == 0 {
                        pr.misc.pages = u64::MAX;
                    }
                    &mut pr.misc
                } else {
                    match pr.vmas.get_mut(&vma) {
                        Some(Vma::Anon(a)) => a,
                        _ => {
                            self.skip("fault on a mapping another task unmapped first");
                            return Ok(end);
                        }
                    }
                };
                let space = *a.space.get_or_insert_with(|| {
                    k.mmap_anon(mm, a.pages.min(ANON_CAP_PAGES) * PAGE_SIZE)
                });
                let idx = a.index(page);
                k.anon_access(space, idx, memcg, write);
            }
            Op::FaultAround { first, last, .. } => {
                self.st.real_fault_around_pages += last - first + 1;
            }
        }
        Ok(end)
    }

    fn file_fault<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        p: usize,
        vma: u32,
        index: u64,
        write: bool,
    ) {
        self.st.file_faults += 1;
        let Some(Vma::File { open, shared, .. }) = self.procs[p].vmas.get_mut(&vma) else {
            self.skip("fault on a mapping another task unmapped first");
            return;
        };
        if index >= k.core.files[open.mapping as usize].nr_pages() {
            // Past the end of the file as the model has it now (SIGBUS).
            self.skip("fault past the end of the file");
            return;
        }
        if write && *shared {
            let (_, dirtied) = k.mmap_write_access(open, index);
            if dirtied {
                k.balance_dirty_pages();
            }
        } else {
            // A store to a private mapping is a read fault here: the
            // model has no copy-on-write.
            k.mmap_access(open, index);
        }
    }

    fn new_task<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>, ev: &Event, parent: usize) {
        let Op::New { child, thread } = ev.op else {
            return;
        };
        let c = self.task_of(child);
        let (clock, rec) = if ev.task == 0 {
            (0, ev.t_us)
        } else {
            (self.tasks[parent].clock, ev.t_us)
        };
        let proc = if thread && ev.task != 0 {
            self.tasks[parent].proc
        } else {
            // A process of its own: no mappings inherited (the model has
            // no copy-on-write; the trace maps the child's copies anew).
            self.procs.push(Proc {
                mm: k.mm_alloc(self.memcg, 0),
                vmas: BTreeMap::new(),
                misc: Anon::default(),
                live: 0,
                done: false,
            });
            self.st.processes += 1;
            self.procs.len() - 1
        };
        self.procs[proc].live += 1;
        self.st.tasks += 1;
        let task = &mut self.tasks[c];
        task.proc = proc;
        task.clock = clock;
        task.rec_end = rec;
        self.heap.push(Reverse((clock, c)));
    }

    fn exit_task<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>, t: usize) {
        if self.tasks[t].done {
            return;
        }
        self.tasks[t].done = true;
        k.lru_add_drain_cpu(t as u32);
        let p = self.tasks[t].proc;
        self.procs[p].live -= 1;
        if self.procs[p].live == 0 {
            self.release_mm(k, p);
            self.procs[p].done = true;
        }
    }

    /// exit_mmap(): every mapping of the process goes, then its mm.
    fn release_mm<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>, p: usize) {
        let vmas = std::mem::take(&mut self.procs[p].vmas);
        for (_, v) in vmas {
            self.unmap(k, p, v);
        }
        k.exit_mm(self.procs[p].mm);
    }

    fn unmap<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>, p: usize, v: Vma) {
        match v {
            Vma::Anon(a) => {
                if let Some(s) = a.space {
                    k.munmap_anon(self.procs[p].mm, s);
                }
            }
            Vma::File { file, open, .. } => {
                k.munmap_ptes(&open, true);
                let f = self.files.get_mut(&file).expect("declared");
                f.mappers -= 1;
                if f.mappers == 0 {
                    k.exit_mmap(f.mapping);
                }
                self.maybe_evict(k, file);
            }
        }
    }

    /// The last reference to an unlinked file goes: its cache with it.
    fn maybe_evict<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>, file: u32) {
        let f = &self.files[&file];
        if f.unlinked && f.opens == 0 && f.mappers == 0 {
            k.truncate_inode_pages_final(f.mapping);
        }
    }

    /// generic_fadvise() on an open file.
    fn fadvise<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        ofd: u32,
        advice: Advice,
        off: u64,
        len: u64,
    ) {
        let ra_kb = self.ra_kb;
        let Some((_, f)) = self.ofds.get_mut(&ofd) else {
            return;
        };
        k.core.cpu(k.core.cost.syscall);
        let a = crate::scenario::fadv(advice);
        if k.generic_fadvise(f, ra_kb, a, off, len).is_err() {
            self.skip(match a {
                crate::mm::fadvise::Fadv::Noreuse => "fadvise noreuse",
                _ => "fadvise dontneed of part of a file",
            });
        }
    }

    fn madvise<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        p: usize,
        vma: u32,
        advice: Madvice,
        first: u64,
        pages: u64,
    ) {
        let mm = self.procs[p].mm;
        let Some(v) = self.procs[p].vmas.get_mut(&vma) else {
            return;
        };
        k.core.cpu(k.core.cost.syscall);
        let why = match (v, advice) {
            (_, Madvice::Cold | Madvice::Pageout) => "madvise cold/pageout",
            (Vma::Anon(a), Madvice::Dontneed) if first == 0 && pages >= a.pages => {
                if let Some(s) = a.space.take() {
                    k.munmap_anon(mm, s);
                }
                a.regions.clear();
                return;
            }
            (Vma::Anon(_), Madvice::Dontneed) => "madvise dontneed of part of an anonymous mapping",
            (Vma::Anon(_), _) => return,
            (Vma::File { open, .. }, Madvice::Normal) => {
                (open.vm_rand_read, open.vm_seq_read) = (false, false);
                return;
            }
            (Vma::File { open, .. }, Madvice::Sequential) => {
                (open.vm_rand_read, open.vm_seq_read) = (false, true);
                return;
            }
            (Vma::File { open, .. }, Madvice::Random) => {
                (open.vm_rand_read, open.vm_seq_read) = (true, false);
                return;
            }
            (Vma::File { open, pgoff, .. }, Madvice::Willneed) => {
                let f = open.clone();
                k.force_page_cache_ra(&f, *pgoff + first, pages);
                return;
            }
            (Vma::File { open, pages: n, .. }, Madvice::Dontneed) if first == 0 && pages >= *n => {
                k.munmap_ptes(open, false);
                return;
            }
            (Vma::File { .. }, Madvice::Dontneed) => "madvise dontneed of part of a file mapping",
        };
        self.skip(why);
    }

    /// The model's OOM killer chose: the processes whose mm it marked end.
    fn oom_kills<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>) {
        self.oom_seen = k.core.vm.get(Item::OOM_KILL);
        for p in 0..self.procs.len() {
            if self.procs[p].done || !k.core.mms[self.procs[p].mm as usize].oom_killed {
                continue;
            }
            self.st.oom_killed += 1;
            for t in 0..self.tasks.len() {
                if self.tasks[t].proc == p && !self.tasks[t].done {
                    self.tasks[t].queue.clear();
                    self.exit_task(k, t);
                }
            }
            // Its later events in the trace are dropped as they are read.
            self.procs[p].done = true;
        }
    }
}

/// The recorded run's counters in a trace header (`real.memcg.NAME`,
/// `real.vmstat.NAME`, `real.wall_s`...), by name without `real.`.
pub fn recorded_counters<R: BufRead>(rd: &Reader<R>) -> BTreeMap<String, f64> {
    rd.header()
        .iter()
        .filter_map(|(k, v)| Some((k.strip_prefix("real.")?.to_string(), v.parse().ok()?)))
        .collect()
}

pub use rectrace::is_rectrace;
