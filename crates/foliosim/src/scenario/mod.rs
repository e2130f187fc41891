//! The scenario driver: runs a `foliosim_workload::scenario::Scenario`
//! (cgroups, processes, threads, steps) through the kernel model.
//!
//! A deterministic discrete-event scheduler over threads, as `run_fio`
//! runs jobs: each thread has its own clock (its own CPU), a program
//! counter into its compiled steps and a state; the runnable thread with
//! the smallest clock (ties: lowest id) runs one slice (one page touch,
//! one I/O block, one other step), setting the kernel's clock to its own
//! first. One access per slice keeps the memory pressure of every thread
//! interleaved with the others' at page granularity. Nothing here models
//! the kernel.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use foliosim_workload::access::{stream_seed, AccessGen};
use foliosim_workload::lsm::{BlockCache, KvRead, SstLayout, TableCache};
use foliosim_workload::scenario::{
    Amount, FileFs, IoStep, KvGetStep, MmapFileStep, Op, Pattern, Scenario, Step, TouchStep,
};

use crate::mm::filemap::OpenFile;
use crate::mm::memcontrol::{MemcgId, MemcgKnobs};
use crate::mm::mmap::{MmId, MM_ANONPAGES, MM_FILEPAGES, MM_SHMEMPAGES, MM_SWAPENTS};
use crate::mm::readahead::FileRaState;
use crate::mm::vmscan::ReclaimPolicy;
use crate::mm::vmstat::Item;
use crate::mm::{Kernel, PAGE_SHIFT, PAGE_SIZE};
use crate::sim::{Sim, SimConfig};
use crate::with_kernel;

mod advice;
mod report;
mod setup;
mod step;

pub(crate) use advice::fadv;
pub use report::{render_text, ProcessReport, ScenarioReport};
pub use setup::setup_cgroups;

/// Runs `sc` on a machine configured by `cfg`.
pub fn run_scenario(cfg: SimConfig, sc: &Scenario) -> Result<ScenarioReport, String> {
    let mut sim = Sim::new(cfg);
    // The scenario's cgroups live under one group of their own, as the
    // oracle makes one (setup_cgroups): `--memcg-limit`'s when given, an
    // unlimited one otherwise.
    if sim.memcg == 0 && !sc.cgroups.is_empty() {
        sim.memcg =
            with_kernel!(&mut sim.k, k => k.add_memcg_child(0, "foliosim", MemcgKnobs::default()));
        // --timeline samples the group the report prints.
        let memcg = sim.memcg;
        with_kernel!(&mut sim.k, k => k.core.timeline_memcg = memcg);
    }
    let root = sim.memcg;
    let seed = sim.cfg.seed;
    let ra_kb = sim.cfg.mm.read_ahead_kb;
    let check = sim.cfg.mm.check_invariants;
    let (cgroups, procs) = with_kernel!(&mut sim.k, k => {
        let cgroups = setup_cgroups(k, root, sc)?;
        let mut d = Driver::new(sc, k, &cgroups, root, seed, ra_kb, check)?;
        d.run(k)?;
        (cgroups, d.procs)
    });
    let mut run = sim.report(Vec::new());
    run.elapsed_ns = procs.iter().map(|p| p.end).max().unwrap_or(0);
    if root != 0 {
        run.memcg = hierarchical_map(&mut sim, root);
    }
    let mut maps = BTreeMap::new();
    let mut first_limit_ns: Option<u64> = None;
    let mut cgroup_lru_gen = BTreeMap::new();
    let mut cgroup_cache_ext = BTreeMap::new();
    for (path, id) in &cgroups {
        if let Some(v) = with_kernel!(&sim.k, k => k.policy.debug_view(&k.core, *id)) {
            cgroup_lru_gen.insert(path.clone(), v);
        }
        if let Some(c) = with_kernel!(&sim.k, k => k.core.cache_ext.policy_name(*id).map(|p| {
            crate::report::CacheExtReport {
                policy: p.to_string(),
                stats: k.core.cache_ext.stats(*id),
            }
        })) {
            cgroup_cache_ext.insert(path.clone(), c);
        }
        let mut m = hierarchical_map(&mut sim, *id);
        with_kernel!(&sim.k, k => {
            // memory.events (hierarchical), v1 memory.oom_control (local:
            // oom_kill is the group's own kills), failcnt.
            let mc = &k.core.memcgs[*id as usize];
            for (i, (_, v)) in mc.memory_events(false).into_iter().enumerate() {
                m.insert(EVENT_KEYS[i], v);
            }
            for (key, v) in mc.memcg1_oom_control() {
                m.insert(key, v);
            }
            m.insert("failcnt", mc.failcnt);
            if mc.first_fail_ns > 0 {
                first_limit_ns = Some(first_limit_ns.map_or(mc.first_fail_ns, |t| t.min(mc.first_fail_ns)));
            }
            // Swap counters, hierarchical already: v1 memsw, v2 swap.
            let sw = &k.core.memcg_swap[*id as usize];
            m.insert("memsw.usage_in_bytes", k.core.memcg_memsw_usage(*id) * PAGE_SIZE);
            m.insert("memsw.max_usage_in_bytes", sw.memsw_watermark * PAGE_SIZE);
            m.insert("memsw.failcnt", sw.memsw_failcnt);
            m.insert("swap.current", sw.usage * PAGE_SIZE);
            m.insert("swap.events.max", sw.events_max);
        });
        maps.insert(path.clone(), m);
    }
    sim.memcg = root;
    let processes = procs
        .into_iter()
        .map(|p| ProcessReport {
            name: p.name,
            cgroup: p.cgroup,
            oom_killed: p.killed_at.is_some(),
            killed_at_ns: p.killed_at,
            start_ns: p.start,
            end_ns: p.end,
            elapsed_ns: p.end - p.start,
            rss_anon: p.rss[MM_ANONPAGES] * PAGE_SIZE,
            rss_file: p.rss[MM_FILEPAGES] * PAGE_SIZE,
            rss_shmem: p.rss[MM_SHMEMPAGES] * PAGE_SIZE,
            swapents: p.rss[MM_SWAPENTS] * PAGE_SIZE,
            touches: p.touches,
            stime_ns: p.stime,
            ios: p.ios,
            io_bytes: p.io_bytes,
            ops: p.ops,
            read_misses: p.read_misses,
        })
        .collect();
    Ok(ScenarioReport {
        run,
        cgroups: maps,
        cgroup_lru_gen,
        cgroup_cache_ext,
        first_limit_ns,
        processes,
    })
}

/// A group's memory.stat over its subtree, as the oracle reads each
/// group (v1 total_* under the plain names; v2's memory.stat is
/// hierarchical): the sizes and counters of every memcg in it summed, the
/// usage and its watermark the group's own page counter's (hierarchical
/// already). v1 `swap` is memcg1_swap(): data only on swap.
fn hierarchical_map(sim: &mut Sim, id: MemcgId) -> BTreeMap<&'static str, u64> {
    let ids: Vec<MemcgId> = with_kernel!(&sim.k, k => k.core.memcg_subtree(id).collect());
    let keep = sim.memcg;
    sim.memcg = id;
    let mut out = sim.report(Vec::new()).memcg;
    for &c in ids.iter().filter(|&&c| c != id) {
        sim.memcg = c;
        for (key, v) in sim.report(Vec::new()).memcg {
            if key != "usage_in_bytes" && key != "max_usage_in_bytes" {
                *out.entry(key).or_insert(0) += v;
            }
        }
    }
    sim.memcg = keep;
    out
}

/// memory.events keys in a cgroup's map, by MemcgEvent (MEMCG_EVENT_NAMES
/// prefixed: "max", "low" alone would read as limits).
const EVENT_KEYS: [&str; crate::mm::memcontrol::MEMCG_NR_MEMORY_EVENTS] = [
    "events.low",
    "events.high",
    "events.max",
    "events.oom",
    "events.oom_kill",
    "events.oom_group_kill",
];

/// "file:line: key: msg", the scenario's error form.
fn err(sc: &Scenario, line: usize, key: &str, msg: impl std::fmt::Display) -> String {
    format!("{}:{}: {}: {}", sc.file, line, key, msg)
}

/// A compiled step. Loops become a head and a tail; a fork names the body
/// its children run.
#[derive(Clone, Copy)]
enum Ins<'a> {
    /// A step that is neither a loop nor a fork; `gen` is the thread's
    /// generator slot of a touch or I/O step.
    Op {
        step: &'a Step,
        gen: usize,
    },
    LoopHead {
        step: &'a Step,
        count: Option<u64>,
        dur: Option<u64>,
        slot: usize,
        tail: usize,
    },
    LoopTail {
        head: usize,
    },
    Fork {
        step: &'a Step,
        body: usize,
        count: u32,
        wait: bool,
    },
}

struct Body<'a> {
    ins: Vec<Ins<'a>>,
    nloops: usize,
    ngens: usize,
    /// Barriers this body's steps name (a thread running it is one of
    /// their parties while it lives).
    bars: Vec<usize>,
    /// The anonymous pages a thread running it holds of its own
    /// (thread_own_pages), charged with MmConfig::process_memory.
    own_pages: u64,
}

/// The oracle's executor as measured in its memcg (memory.stat rss,
/// cgroup v1, Linux 6.18, glibc 2.41): 540,672 bytes, 132 pages, for a
/// process of one to eight threads before any step (the program, its
/// heap, the scenario it parsed).
const PROCESS_IMAGE_PAGES: u64 = 132;
/// The executor's own pages it reads at the start of each step and before
/// it exits, traced on this host (Linux 6.18, 2026-12-02,
/// exceptions:page_fault_{user,kernel} of the executor's threads under
/// anon pressure, faults outside the scenario's own mappings): at a step
/// boundary its step thread read 14 pages it had swapped out (heap,
/// .data, stack, libc's data; oracle/cases/scn-anon-seq-zram.toml); at
/// exit its step thread and main thread (which joins the step threads
/// and reports) read 53 (a development case of 112 MiB cold anon beside
/// random 16 KiB reads, in neither half; 63 in scn-anon-seq-zram). A
/// lower bound: pages still resident do not fault.
const STEP_OWN_PAGES: u64 = 14;
const EXIT_OWN_PAGES: u64 = 53;
/// Accesses `pages` of a process's own anonymous space in order, as its
/// task (the caller sets `Core::current` and the time); stops at a charge
/// that ended in an OOM kill.
fn access_own_pages<P: ReclaimPolicy>(
    k: &mut Kernel<P>,
    space: u32,
    pages: std::ops::Range<u64>,
    memcg: MemcgId,
    write: bool,
) {
    for p in pages {
        if !k.anon_access(space, p, memcg, write) {
            break;
        }
    }
}

/// Each thread's touched stack and arena: 4 pages (4 threads of 4 KiB
/// reads: 22 pages over the image, 32 KiB reads 50, 8 threads of 32 KiB
/// reads 102: 4 to 5.5 a thread beyond the buffer).
const THREAD_OWN_PAGES: u64 = 4;
/// glibc's malloc serves a read or write step's buffer from the thread's
/// arena below its mmap threshold (128 KiB), where it stays resident once
/// freed; a larger one is mapped and unmapped around the step (4 threads
/// of 128 KiB reads left 11 pages over the image).
/// (The executor's buffer of a larger step is written through at its
/// allocation, so each such step faults and charges all its pages: traced
/// on this host, exceptions:page_fault_user, a 1 MiB writer's two steps
/// faulted 256 pages each, at a new mapping each time. glibc's dynamic
/// threshold would serve a later, smaller one from the arena: not
/// modelled.)
const ARENA_BUF_MAX: u64 = 128 << 10;

/// The pages a thread running `steps` holds of its own: its stack and
/// arena, and its largest read or write buffer kept in the arena (a
/// `compute` with `sys` reads /dev/zero into 64 KiB). Forked workers are
/// processes of their own.
fn thread_own_pages(steps: &[Step]) -> u64 {
    fn buf(steps: &[Step]) -> u64 {
        steps
            .iter()
            .map(|s| match &s.op {
                Op::Io(IoStep { bs, .. }) if *bs < ARENA_BUF_MAX => bs.div_ceil(PAGE_SIZE),
                Op::Compute { sys: true, .. } => (64 << 10) / PAGE_SIZE,
                Op::Loop { steps, .. } => buf(steps),
                _ => 0,
            })
            .max()
            .unwrap_or(0)
    }
    THREAD_OWN_PAGES + buf(steps)
}

#[derive(Clone, Copy, Default)]
struct LoopFrame {
    iter: u64,
    start: u64,
    last: u64,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum St {
    Run,
    Barrier(usize),
    Children,
    Done,
}

/// A touch or I/O step in progress.
#[derive(Clone, Copy)]
struct Cur {
    /// Accesses left, or the clock at which it stops.
    left: Left,
    think: u64,
    write: bool,
    gen: usize,
    what: Target,
}

#[derive(Clone, Copy)]
enum Left {
    Count(u64),
    Until(u64),
}

#[derive(Clone, Copy)]
enum Target {
    /// A mapping of the process (its id in `Proc::maps`).
    Map(u32),
    /// I/O of `bs` bytes per block to a scenario file; `append` writes
    /// go to the file's shared end instead of the thread's stream.
    Io {
        file: usize,
        bs: u64,
        direct: bool,
        append: bool,
    },
    /// GETs or SCANs of `records` records in a file of sorted tables
    /// (laid out as the thread's `kv` slot of the step says).
    Kv { file: usize, records: u64 },
}

struct Thread {
    proc: usize,
    body: usize,
    pc: usize,
    t: u64,
    st: St,
    loops: Vec<LoopFrame>,
    gens: Vec<Option<AccessGen>>,
    cur: Option<Cur>,
    /// Who the thread is, for its random streams' seeds.
    ident: Vec<u64>,
    /// Its open files (each thread opens a file itself: its own readahead
    /// state and fadvise hints).
    fds: Vec<Option<OpenFile>>,
    /// Each kv_get step's layout and table cache (by generator slot),
    /// kept out of the per-access `Cur`; the cache, like LevelDB's, lives
    /// as long as the database is open.
    kv: Vec<Option<(SstLayout, TableCache)>>,
    children_left: u32,
    children_end: u64,
    forks: u64,
    /// One of `count > 1` identical threads: the maps it creates are its own.
    own_maps: bool,
    /// Waiting in mem_cgroup_oom_synchronize() (v1 oom_kill_disable): the
    /// OOM domain, and the index whose access is retried once it has room.
    oom_wait: Option<(MemcgId, u64)>,
    /// The CPU it is pinned to (MmConfig::nr_cpus; 0 without).
    cpu: u32,
    /// Its read and write buffer's first page in its process's own space
    /// (MmConfig::process_memory; 0: none).
    own_buf: u64,
    /// The mapping of the step in progress's buffer of ARENA_BUF_MAX or
    /// more, mapped at the step's start and unmapped at its end.
    step_buf: Option<u32>,
}

enum MapKind {
    Anon {
        space: u32,
    },
    File {
        file: usize,
        open: OpenFile,
        first: u64,
        private: bool,
    },
}

struct Map<'a> {
    id: u32,
    name: &'a str,
    /// The thread that mapped it: its name binds there first.
    creator: usize,
    /// Other threads of the process see it too (its creator's body has
    /// `count = 1`; one of several identical threads keeps its own).
    shared: bool,
    pages: u64,
    kind: MapKind,
}

struct Proc<'a> {
    /// The CPU its first thread is pinned to; its other threads and its
    /// forked children take the next ones (the oracle's cpu_for()).
    cpu: u32,
    name: String,
    cgroup: String,
    memcg: MemcgId,
    mm: MmId,
    oom_score_adj: i32,
    maps: Vec<Map<'a>>,
    next_map: u32,
    threads: Vec<usize>,
    live: u32,
    /// The thread waiting for this child (fork with wait).
    parent: Option<usize>,
    start: u64,
    end: u64,
    done: bool,
    killed_at: Option<u64>,
    rss: [u64; 4],
    touches: u64,
    ios: u64,
    io_bytes: u64,
    ops: u64,
    /// Kernel CPU time of its threads' steps (Core::stime).
    stime: u64,
    /// ProcessReport::read_misses.
    read_misses: [(u64, u64); 2],
    /// kv_get's LevelDB block cache per file, shared by the threads (one
    /// DB instance per process and file).
    block_caches: Vec<Option<BlockCache>>,
    /// The anonymous space of its own memory (MmConfig::process_memory).
    own_space: Option<u32>,
}

struct FileRt {
    mapping: u32,
    /// Processes' mappings of it: the last munmap frees its page tables.
    mappers: u32,
    /// Where the next `append` write goes (bytes): O_APPEND's end of
    /// file, shared by every writer, wrapping at the file's size.
    append_at: u64,
}

struct Bar {
    parties: u32,
    waiting: Vec<usize>,
}

enum Flow {
    Continue,
    Parked,
}

struct Driver<'a> {
    sc: &'a Scenario,
    bodies: Vec<Body<'a>>,
    bar_names: Vec<&'a str>,
    bars: Vec<Bar>,
    threads: Vec<Thread>,
    /// cache_ext's `current` of each thread, registered on first use.
    ce_tasks: Vec<Option<crate::mm::cache_ext::TaskRef>>,
    procs: Vec<Proc<'a>>,
    files: Vec<FileRt>,
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    seed: u64,
    ra_kb: u64,
    check: bool,
    /// oom_kill events already handled.
    oom_seen: u64,
    /// Per CPU (MmConfig::nr_cpus), when the task running on it leaves it
    /// free; empty when every thread has a CPU of its own.
    cpu_free: Vec<u64>,
    /// User CPU time spent so far (`compute` steps without `sys`).
    user_ns: u64,
}

impl<'a> Driver<'a> {
    fn new<P: ReclaimPolicy>(
        sc: &'a Scenario,
        k: &mut Kernel<P>,
        cgroups: &[(String, MemcgId)],
        root: MemcgId,
        seed: u64,
        ra_kb: u64,
        check: bool,
    ) -> Result<Self, String> {
        let mut d = Driver {
            sc,
            bodies: Vec::new(),
            bar_names: Vec::new(),
            bars: Vec::new(),
            threads: Vec::new(),
            ce_tasks: Vec::new(),
            procs: Vec::new(),
            files: Vec::new(),
            heap: BinaryHeap::new(),
            seed,
            ra_kb,
            check,
            oom_seen: k.core.vm.get(Item::OOM_KILL),
            cpu_free: vec![0; k.core.cfg.nr_cpus as usize],
            user_ns: 0,
        };
        // Process instances are dealt to the CPUs in turn from the last,
        // as the oracle pins them (scn::run_instances()).
        let mut nth_proc = 0u32;
        for f in &sc.files {
            if f.size == 0 {
                return Err(err(
                    sc,
                    f.line,
                    "size",
                    format!("file '{}': size must be > 0", f.name),
                ));
            }
            // Laid out on disk, nothing cached; a file that is not
            // prefilled starts empty and grows back to `size` at most.
            // A tmpfs file (never prefilled) holds no pages but is sized
            // (i_size = `size`, as the oracle's ftruncate makes the real
            // one: huge=within_size reads it).
            let mapping = match f.fs {
                FileFs::Disk => k.core.add_data_file(f.size),
                FileFs::Tmpfs => k.core.shmem_file_setup(f.size),
            };
            if let Some(t) = k.core.trace.as_deref_mut() {
                t.name_file(mapping, &f.name);
            }
            if !f.prefill && f.fs == FileFs::Disk {
                k.truncate_setsize(mapping, 0);
            }
            d.files.push(FileRt {
                mapping,
                mappers: 0,
                append_at: 0,
            });
        }
        for (pi, p) in sc.processes.iter().enumerate() {
            let memcg = if p.cgroup.is_empty() {
                root
            } else {
                cgroups
                    .iter()
                    .find(|(path, _)| *path == p.cgroup)
                    .map(|&(_, id)| id)
                    .ok_or_else(|| {
                        err(
                            sc,
                            p.line,
                            "cgroup",
                            format!("'{}' is not a declared [[cgroup]]", p.cgroup),
                        )
                    })?
            };
            let bodies: Vec<usize> = p
                .threads
                .iter()
                .map(|t| d.compile(&t.steps))
                .collect::<Result<_, _>>()?;
            for inst in 0..p.count {
                let proc = d.new_proc(
                    k,
                    format!("{}[{inst}]", p.name),
                    p.cgroup.clone(),
                    memcg,
                    p.oom_score_adj,
                    None,
                    0,
                );
                d.procs[proc].cpu = d.cpu_after(d.cpu_free.len().max(1) as u32 - 1, nth_proc);
                nth_proc += 1;
                for (ti, t) in p.threads.iter().enumerate() {
                    for copy in 0..t.count {
                        let ident = vec![pi as u64, inst as u64, ti as u64, copy as u64];
                        let th = d.new_thread(proc, bodies[ti], 0, ident);
                        d.threads[th].own_maps = t.count > 1;
                    }
                }
                let mm = d.procs[proc].mm;
                k.core.mms[mm as usize].nr_cpus = d.procs[proc].threads.len().max(1) as u32;
                d.charge_own_memory(k, proc, 0);
                if d.procs[proc].live == 0 {
                    d.finish_proc(k, proc, 0);
                }
            }
        }
        // The parser counted each barrier's parties (every thread whose
        // steps name it); the driver's live count starts the same.
        for b in &sc.barriers {
            let mine = d
                .bar_names
                .iter()
                .position(|n| *n == b.name)
                .map_or(0, |i| d.bars[i].parties);
            if mine != b.parties {
                return Err(format!(
                    "{}: barrier '{}': the scenario counts {} parties, its threads are {mine}",
                    sc.file, b.name, b.parties
                ));
            }
        }
        Ok(d)
    }

    /// Compiles steps into a body; returns its index.
    fn compile(&mut self, steps: &'a [Step]) -> Result<usize, String> {
        let idx = self.bodies.len();
        self.bodies.push(Body {
            ins: Vec::new(),
            nloops: 0,
            ngens: 0,
            bars: Vec::new(),
            own_pages: 0,
        });
        let mut b = Body {
            ins: Vec::new(),
            nloops: 0,
            ngens: 0,
            bars: Vec::new(),
            own_pages: thread_own_pages(steps),
        };
        self.compile_into(steps, &mut b)?;
        self.bodies[idx] = b;
        Ok(idx)
    }

    fn compile_into(&mut self, steps: &'a [Step], b: &mut Body<'a>) -> Result<(), String> {
        let sc = self.sc;
        for step in steps {
            match &step.op {
                Op::Loop {
                    count,
                    duration_ns,
                    steps,
                } => {
                    if count.is_none() && duration_ns.is_none() {
                        return Err(err(sc, step.line, "loop", "needs a count or a duration"));
                    }
                    if steps.is_empty() {
                        return Err(err(sc, step.line, "loop", "has no steps"));
                    }
                    let head = b.ins.len();
                    let slot = b.nloops;
                    b.nloops += 1;
                    b.ins.push(Ins::LoopTail { head }); // patched below
                    self.compile_into(steps, b)?;
                    let tail = b.ins.len();
                    b.ins.push(Ins::LoopTail { head });
                    b.ins[head] = Ins::LoopHead {
                        step,
                        count: *count,
                        dur: *duration_ns,
                        slot,
                        tail,
                    };
                }
                Op::Fork { count, wait, steps } => {
                    let body = self.compile(steps)?;
                    b.ins.push(Ins::Fork {
                        step,
                        body,
                        count: *count,
                        wait: *wait,
                    });
                }
                Op::Fio { .. } => {
                    // run_fio's per-job state machine is not steppable from
                    // here without duplicating it.
                    return Err(err(
                        sc,
                        step.line,
                        "fio",
                        "fio jobs inside a scenario are not run by the model yet (use `foliosim fio`)",
                    ));
                }
                Op::Barrier { name } => {
                    let bi = match self.bar_names.iter().position(|n| n == name) {
                        Some(i) => i,
                        None => {
                            self.bar_names.push(name);
                            self.bars.push(Bar {
                                parties: 0,
                                waiting: Vec::new(),
                            });
                            self.bar_names.len() - 1
                        }
                    };
                    if !b.bars.contains(&bi) {
                        b.bars.push(bi);
                    }
                    b.ins.push(Ins::Op {
                        step,
                        gen: usize::MAX,
                    });
                }
                Op::Touch(TouchStep { .. })
                | Op::Io(IoStep { .. })
                | Op::KvGet(KvGetStep { .. }) => {
                    let gen = b.ngens;
                    b.ngens += 1;
                    b.ins.push(Ins::Op { step, gen });
                }
                _ => b.ins.push(Ins::Op {
                    step,
                    gen: usize::MAX,
                }),
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn new_proc<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        name: String,
        cgroup: String,
        memcg: MemcgId,
        adj: i32,
        parent: Option<usize>,
        t: u64,
    ) -> usize {
        let mm = k.mm_alloc(memcg, adj);
        self.procs.push(Proc {
            cpu: 0,
            name,
            cgroup,
            memcg,
            mm,
            oom_score_adj: adj,
            maps: Vec::new(),
            next_map: 0,
            threads: Vec::new(),
            live: 0,
            parent,
            start: t,
            end: t,
            done: false,
            killed_at: None,
            rss: [0; 4],
            touches: 0,
            stime: 0,
            ios: 0,
            ops: 0,
            io_bytes: 0,
            read_misses: [(0, 0); 2],
            block_caches: (0..self.files.len()).map(|_| None).collect(),
            own_space: None,
        });
        self.procs.len() - 1
    }

    /// MmConfig::process_memory: the process's image and heap and its
    /// threads' own pages, written at `t` into an anonymous mapping the
    /// steps never touch again (so they age as the real executor's do),
    /// freed with the mm at exit. A charge that ends in an OOM kill stops
    /// here; the driver carries the kill out after the next slice, as for
    /// any access (a charge failing with no victim leaves the rest
    /// uncharged).
    fn charge_own_memory<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>, proc: usize, t: u64) {
        if !k.core.cfg.process_memory {
            return;
        }
        let pr = &self.procs[proc];
        let pages = PROCESS_IMAGE_PAGES
            + pr.threads
                .iter()
                .map(|&th| self.bodies[self.threads[th].body].own_pages)
                .sum::<u64>();
        let (mm, memcg) = (pr.mm, pr.memcg);
        // Each thread's stack and arena, its buffer in the arena after them.
        let mut at = PROCESS_IMAGE_PAGES;
        for i in 0..self.procs[proc].threads.len() {
            let th = self.procs[proc].threads[i];
            self.threads[th].own_buf = at + THREAD_OWN_PAGES;
            at += self.bodies[self.threads[th].body].own_pages;
        }
        let (saved_now, saved_mm) = (k.core.now, k.core.current);
        k.core.now = t;
        k.core.current = mm;
        let space = k.mmap_anon(mm, pages * PAGE_SIZE);
        self.procs[proc].own_space = Some(space);
        access_own_pages(k, space, 0..pages, memcg, true);
        k.core.current = saved_mm;
        k.core.now = saved_now.max(t);
    }

    /// A read's copy to the thread's buffer (`write`: copy_to_user) or a
    /// write's copy from it: its pages are touched, and faulted back in
    /// where reclaim swapped them out while the thread was not copying.
    fn touch_io_buffer<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        id: usize,
        bs: u64,
        write: bool,
    ) {
        let th = &self.threads[id];
        let pr = &self.procs[th.proc];
        if let Some(space) = th.step_buf {
            access_own_pages(k, space, 0..bs.div_ceil(PAGE_SIZE), pr.memcg, write);
        } else if let (Some(space), first @ 1.., true) =
            (pr.own_space, th.own_buf, bs < ARENA_BUF_MAX)
        {
            let pages = first..first + bs.div_ceil(PAGE_SIZE);
            access_own_pages(k, space, pages, pr.memcg, write);
        }
    }

    /// An I/O step's buffer of ARENA_BUF_MAX or more (MmConfig::
    /// process_memory): mmap()ed and written through at the step's start,
    /// as the executor fills it.
    fn map_step_buf<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>, id: usize, bs: u64) {
        let pr = &self.procs[self.threads[id].proc];
        if !k.core.cfg.process_memory || pr.own_space.is_none() || bs < ARENA_BUF_MAX {
            return;
        }
        let (mm, memcg) = (pr.mm, pr.memcg);
        let saved = k.core.current;
        k.core.current = mm;
        let space = k.mmap_anon(mm, bs.div_ceil(PAGE_SIZE) * PAGE_SIZE);
        self.threads[id].step_buf = Some(space);
        access_own_pages(k, space, 0..bs.div_ceil(PAGE_SIZE), memcg, true);
        k.core.current = saved;
    }

    /// The step's end: its buffer is freed (munmap).
    fn unmap_step_buf<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>, id: usize) {
        if let Some(space) = self.threads[id].step_buf.take() {
            let mm = self.procs[self.threads[id].proc].mm;
            k.munmap_anon(mm, space);
        }
    }

    /// The executor's own pages it reads again between steps and at exit
    /// (MmConfig::process_memory): the first `pages` of its image, read
    /// at `t`. A page swapped out since is faulted back in, as the real
    /// executor's are (STEP_OWN_PAGES, EXIT_OWN_PAGES).
    fn touch_own_memory<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        proc: usize,
        pages: u64,
        t: u64,
    ) {
        let pr = &self.procs[proc];
        let Some(space) = pr.own_space else {
            return;
        };
        let (mm, memcg) = (pr.mm, pr.memcg);
        let (saved_now, saved_mm) = (k.core.now, k.core.current);
        k.core.now = t;
        k.core.current = mm;
        access_own_pages(k, space, 0..pages, memcg, false);
        k.core.current = saved_mm;
        k.core.now = k.core.now.max(saved_now);
    }

    fn new_thread(&mut self, proc: usize, body: usize, t: u64, ident: Vec<u64>) -> usize {
        let id = self.threads.len();
        let b = &self.bodies[body];
        for &bi in &b.bars {
            self.bars[bi].parties += 1;
        }
        self.threads.push(Thread {
            proc,
            body,
            pc: 0,
            t,
            st: St::Run,
            loops: vec![LoopFrame::default(); b.nloops],
            gens: (0..b.ngens).map(|_| None).collect(),
            kv: (0..b.ngens).map(|_| None).collect(),
            cur: None,
            ident,
            fds: (0..self.files.len()).map(|_| None).collect(),
            children_left: 0,
            children_end: 0,
            forks: 0,
            own_maps: false,
            oom_wait: None,
            cpu: self.cpu_after(self.procs[proc].cpu, self.procs[proc].threads.len() as u32),
            own_buf: 0,
            step_buf: None,
        });
        self.procs[proc].threads.push(id);
        self.procs[proc].live += 1;
        self.heap.push(Reverse((t, id)));
        id
    }

    fn run<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>) -> Result<(), String> {
        let mut next = self.heap.pop();
        while let Some(Reverse((_, id))) = next.take() {
            if self.threads[id].st != St::Run {
                next = self.heap.pop();
                continue;
            }
            loop {
                // A cache_ext policy failed (a Python policy raising).
                if let Some(e) = &k.core.cache_ext.error {
                    return Err(e.clone());
                }
                if let Some(free) = self.cpu_busy_until(id) {
                    // Its CPU runs another task: it runs when that leaves
                    // it, unless another thread is now further behind.
                    self.threads[id].t = free;
                    let me = (free, id);
                    if let Some(mut top) = self.heap.peek_mut() {
                        if me > top.0 {
                            next = Some(std::mem::replace(&mut *top, Reverse(me)));
                            break;
                        }
                    }
                }
                let (t0, s0, u0) = (self.threads[id].t, k.core.stime, self.user_ns);
                let flow = self.exec(k, id)?;
                let p = self.threads[id].proc;
                self.procs[p].stime += k.core.stime - s0;
                self.took_cpu(id, t0, k.core.stime - s0 + self.user_ns - u0);
                match flow {
                    Flow::Parked => break,
                    Flow::Continue => {
                        if self.threads[id].st != St::Run {
                            break;
                        }
                        // Keep running while still the furthest behind;
                        // else swap places with the thread that is (one
                        // sift instead of a push and a pop: keys are
                        // unique, so the order threads run in is the same).
                        let me = (self.threads[id].t, id);
                        if let Some(mut top) = self.heap.peek_mut() {
                            if me > top.0 {
                                next = Some(std::mem::replace(&mut *top, Reverse(me)));
                                break;
                            }
                        }
                    }
                }
            }
            if next.is_none() {
                next = self.heap.pop();
            }
        }
        if let Some(th) = self.threads.iter().find(|t| t.st != St::Done) {
            let p = &self.procs[th.proc];
            let what = match th.st {
                St::Barrier(b) => format!(
                    "waits at barrier '{}' ({} of {} parties arrived) and nothing else can run",
                    self.bar_names[b],
                    self.bars[b].waiting.len(),
                    self.bars[b].parties
                ),
                _ => "waits for its children and nothing else can run".into(),
            };
            let line = self.step_line(th);
            return Err(err(
                self.sc,
                line,
                "deadlock",
                format!("process {} {what}", p.name),
            ));
        }
        // The run lasts as long as its last process; writeback in flight by
        // then completes.
        let end = self.procs.iter().map(|p| p.end).max().unwrap_or(0);
        k.core.now = k.core.now.max(end);
        k.wb_complete();
        if self.check {
            k.check_invariants()
                .map_err(|e| format!("{}: invariant broken at the end: {e}", self.sc.file))?;
        }
        Ok(())
    }

    /// The CPU `nth` places after `from`, of MmConfig::nr_cpus (0 without).
    fn cpu_after(&self, from: u32, nth: u32) -> u32 {
        match self.cpu_free.len() as u32 {
            0 => 0,
            n => (from + nth) % n,
        }
    }

    /// When thread `id`'s CPU is free, if after the thread's clock.
    fn cpu_busy_until(&self, id: usize) -> Option<u64> {
        let th = &self.threads[id];
        let free = *self.cpu_free.get(th.cpu as usize)?;
        (free > th.t).then_some(free)
    }

    /// A slice of thread `id` that started at `t0` held its CPU for `cpu`
    /// ns of work (its waits for I/O and sleeps leave it to others).
    fn took_cpu(&mut self, id: usize, t0: u64, cpu: u64) {
        let c = self.threads[id].cpu as usize;
        if let Some(free) = self.cpu_free.get_mut(c) {
            *free = (*free).max(t0 + cpu);
        }
    }

    fn step_line(&self, th: &Thread) -> usize {
        match self.bodies[th.body].ins.get(th.pc) {
            Some(Ins::Op { step, .. })
            | Some(Ins::LoopHead { step, .. })
            | Some(Ins::Fork { step, .. }) => step.line,
            _ => 0,
        }
    }

    /// Runs one slice of thread `id`.
    fn exec<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>, id: usize) -> Result<Flow, String> {
        // Its CPU's lru_add batch: a CPU of its own, or the one it is
        // pinned to (MmConfig::nr_cpus), shared with the tasks there.
        k.core.cpu = if self.cpu_free.is_empty() {
            id as u32
        } else {
            self.threads[id].cpu
        };
        if self.threads[id].cur.is_some() {
            return self.access(k, id);
        }
        let th = &self.threads[id];
        let body = th.body;
        let pc = th.pc;
        let Some(&ins) = self.bodies[body].ins.get(pc) else {
            self.thread_end(k, id);
            return Ok(Flow::Parked);
        };
        let sc = self.sc;
        match ins {
            Ins::LoopHead {
                count,
                dur,
                slot,
                tail,
                ..
            } => {
                let th = &mut self.threads[id];
                th.loops[slot] = LoopFrame {
                    iter: 0,
                    start: th.t,
                    last: th.t,
                };
                th.pc = if loop_goes_on(&th.loops[slot], count, dur, th.t) {
                    pc + 1
                } else {
                    tail + 1
                };
                Ok(Flow::Continue)
            }
            Ins::LoopTail { head } => {
                let Ins::LoopHead {
                    step,
                    count,
                    dur,
                    slot,
                    tail,
                } = self.bodies[body].ins[head]
                else {
                    unreachable!("a loop tail points at its head")
                };
                let th = &mut self.threads[id];
                let f = &mut th.loops[slot];
                f.iter += 1;
                if dur.is_some() && count.is_none() && th.t == f.last {
                    return Err(err(
                        sc,
                        step.line,
                        "loop",
                        "a duration loop whose steps take no simulated time never ends",
                    ));
                }
                f.last = th.t;
                th.pc = if loop_goes_on(f, count, dur, th.t) {
                    head + 1
                } else {
                    tail + 1
                };
                Ok(Flow::Continue)
            }
            Ins::Fork {
                step,
                body: child_body,
                count,
                wait,
            } => {
                let (t, proc) = (self.threads[id].t, self.threads[id].proc);
                let seq = self.threads[id].forks;
                self.threads[id].forks += 1;
                let mut ident = self.threads[id].ident.clone();
                ident.extend([step.id, seq]);
                let (memcg, adj) = (self.procs[proc].memcg, self.procs[proc].oom_score_adj);
                let cgroup = self.procs[proc].cgroup.clone();
                for j in 0..count {
                    let name = format!("{}/fork@{}[{j}]", self.procs[proc].name, step.line);
                    let parent = wait.then_some(id);
                    let c = self.new_proc(k, name, cgroup.clone(), memcg, adj, parent, t);
                    self.procs[c].cpu = self.cpu_after(self.procs[proc].cpu, 1 + j);
                    let mut ci = ident.clone();
                    ci.push(j as u64);
                    self.new_thread(c, child_body, t, ci);
                    self.charge_own_memory(k, c, t);
                }
                let th = &mut self.threads[id];
                th.pc += 1;
                if wait && count > 0 {
                    th.children_left = count;
                    th.children_end = t;
                    th.st = St::Children;
                    return Ok(Flow::Parked);
                }
                Ok(Flow::Continue)
            }
            Ins::Op { step, gen } => self.op(k, id, step, gen),
        }
    }

    /// After each slice: OOM kills the kernel model decided are carried
    /// out (the victims' threads stop, exit_mmap frees their memory).
    #[inline]
    fn after_slice<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        id: usize,
        ok: bool,
    ) -> Result<Flow, String> {
        if ok && k.core.vm.get(Item::OOM_KILL) == self.oom_seen {
            return Ok(Flow::Continue);
        }
        self.oom_kill(k, id, ok);
        Ok(if self.threads[id].st == St::Run {
            Flow::Continue
        } else {
            Flow::Parked
        })
    }

    /// The OOM killer chose: every live process whose mm it marked
    /// oom_killed stops (the faulting one or others, a whole oom.group),
    /// its memory freed by exit_mmap.
    #[cold]
    fn oom_kill<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>, _id: usize, _ok: bool) {
        let t = k.core.now;
        let victims: Vec<usize> = (0..self.procs.len())
            .filter(|&p| !self.procs[p].done && k.core.mms[self.procs[p].mm as usize].oom_killed)
            .collect();
        for p in victims {
            self.end_proc(k, p, t, true);
        }
        self.oom_seen = k.core.vm.get(Item::OOM_KILL);
    }

    /// A task waiting under OOM (oom_kill_disable) gets its turn:
    /// mem_cgroup_oom_synchronize() lets it retry its access once the
    /// domain has room (returns the index), or it sleeps a jiffy more.
    /// With no other task able to run, nothing will ever uncharge: that
    /// is the kernel's hang, reported.
    #[cold]
    fn oom_synchronize<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        id: usize,
        (domain, idx): (MemcgId, u64),
    ) -> Result<Option<u64>, String> {
        k.core.memcg_in_oom = Some(domain);
        if k.mem_cgroup_oom_synchronize() {
            self.threads[id].oom_wait = None;
            return Ok(Some(idx));
        }
        k.core.memcg_in_oom = None;
        let others = self
            .threads
            .iter()
            .enumerate()
            .any(|(i, t)| i != id && t.st == St::Run && t.oom_wait.is_none());
        if !others {
            let line = self.step_line(&self.threads[id]);
            return Err(err(
                self.sc,
                line,
                "deadlock",
                format!(
                    "process {} waits under OOM in cgroup '{}' (oom_kill_disable) and no other task can free memory",
                    self.procs[self.threads[id].proc].name,
                    k.core.memcgs[domain as usize].name
                ),
            ));
        }
        self.threads[id].t += 1_000_000_000 / crate::mm::memcontrol::HZ;
        Ok(None)
    }

    /// The process ends at `t`: exit(2), or SIGKILL from the OOM killer.
    fn end_proc<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>, p: usize, t: u64, oom: bool) {
        if self.procs[p].done {
            return;
        }
        if oom {
            self.procs[p].killed_at = Some(t);
        }
        for i in 0..self.procs[p].threads.len() {
            let th = self.procs[p].threads[i];
            if self.threads[th].st != St::Done {
                self.threads[th].st = St::Done;
                self.threads[th].cur = None;
                // Freed with the mm.
                self.threads[th].step_buf = None;
                self.leave_barriers(th);
                k.lru_add_drain_cpu(th as u32);
            }
        }
        self.procs[p].live = 0;
        self.finish_proc(k, p, t);
    }

    fn thread_end<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>, id: usize) {
        let p = self.threads[id].proc;
        // The CPU's next task would drain what it left; each task has
        // its own here, so the batch goes to the LRU as the thread ends.
        k.lru_add_drain_cpu(id as u32);
        self.threads[id].st = St::Done;
        self.leave_barriers(id);
        let t = self.threads[id].t;
        let pr = &mut self.procs[p];
        pr.end = pr.end.max(t);
        pr.live -= 1;
        if pr.live == 0 {
            let end = pr.end;
            self.finish_proc(k, p, end);
        }
    }

    /// exit_mm(): the process's memory goes; a waiting parent is told.
    fn finish_proc<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>, p: usize, end: u64) {
        // Its last work before exit (a killed process does none).
        if self.procs[p].killed_at.is_none() {
            self.touch_own_memory(k, p, EXIT_OWN_PAGES, end);
        }
        let pr = &mut self.procs[p];
        pr.done = true;
        pr.end = pr.end.max(end);
        pr.rss = k.core.mms[pr.mm as usize].rss;
        let maps = std::mem::take(&mut pr.maps);
        let saved = k.core.now;
        k.core.now = end;
        for m in maps {
            self.unmap(k, p, m);
        }
        k.exit_mm(self.procs[p].mm);
        k.core.now = saved.max(end);
        if let Some(parent) = self.procs[p].parent {
            let end = self.procs[p].end;
            let th = &mut self.threads[parent];
            th.children_end = th.children_end.max(end);
            th.children_left -= 1;
            if th.children_left == 0 && th.st == St::Children {
                th.t = th.t.max(th.children_end);
                // The fork step was already passed when it parked.
                th.st = St::Run;
                self.heap.push(Reverse((th.t, parent)));
            }
        }
    }

    fn unmap<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>, p: usize, m: Map) {
        match m.kind {
            MapKind::Anon { space } => k.munmap_anon(self.procs[p].mm, space),
            MapKind::File { file, open, .. } => {
                // This process's PTEs go; without page tables of its own
                // (tmpfs) the one set per file goes with the last process
                // mapping it.
                k.munmap_ptes(&open, true);
                let f = &mut self.files[file];
                f.mappers -= 1;
                if f.mappers == 0 {
                    k.exit_mmap(f.mapping);
                }
            }
        }
    }

    /// A thread that ends is no longer a party of the barriers it names.
    fn leave_barriers(&mut self, id: usize) {
        let body = self.threads[id].body;
        for i in 0..self.bodies[body].bars.len() {
            let bi = self.bodies[body].bars[i];
            let b = &mut self.bars[bi];
            b.parties -= 1;
            b.waiting.retain(|&w| w != id);
            self.try_release(bi);
        }
    }

    /// Every party arrived: all go on at the last arrival's time.
    fn try_release(&mut self, bi: usize) {
        let b = &mut self.bars[bi];
        if b.waiting.is_empty() || (b.waiting.len() as u32) < b.parties {
            return;
        }
        let t = b
            .waiting
            .iter()
            .map(|&w| self.threads[w].t)
            .max()
            .unwrap_or(0);
        for w in b.waiting.drain(..) {
            let th = &mut self.threads[w];
            th.t = t;
            th.st = St::Run;
            th.pc += 1;
            self.heap.push(Reverse((t, w)));
        }
    }

    /// The map `name` as thread `th` sees it: its own binding first, then
    /// one another thread shares (docs/scenarios.md, Maps).
    fn find_map(&self, th: usize, name: &str) -> Option<usize> {
        let maps = &self.procs[self.threads[th].proc].maps;
        maps.iter()
            .position(|m| m.name == name && m.creator == th)
            .or_else(|| maps.iter().position(|m| m.name == name && m.shared))
    }

    /// Whether thread `th` itself has a map bound to `name`.
    fn own_map(&self, th: usize, name: &str) -> bool {
        let maps = &self.procs[self.threads[th].proc].maps;
        maps.iter().any(|m| m.name == name && m.creator == th)
    }

    fn add_map(&mut self, th: usize, name: &'a str, pages: u64, kind: MapKind) {
        let shared = !self.threads[th].own_maps;
        let pr = &mut self.procs[self.threads[th].proc];
        pr.maps.push(Map {
            id: pr.next_map,
            name,
            creator: th,
            shared,
            pages,
            kind,
        });
        pr.next_map += 1;
    }

    fn file_index(&self, name: &str, line: usize) -> Result<usize, String> {
        self.sc
            .files
            .iter()
            .position(|f| f.name == name)
            .ok_or_else(|| {
                err(
                    self.sc,
                    line,
                    "file",
                    format!("'{name}' is not a declared [[file]]"),
                )
            })
    }

    fn open_file(&self, fi: usize, memcg: MemcgId) -> OpenFile {
        OpenFile {
            mapping: self.files[fi].mapping,
            ra: FileRaState::new(self.ra_kb),
            fmode_random: false,
            vm_rand_read: false,
            vm_seq_read: false,
            memcg,
            pte: crate::mm::rmap::NO_PTES,
        }
    }

    /// The thread's open file `fi` (opened on first use).
    fn fd(&mut self, id: usize, fi: usize) -> &mut OpenFile {
        let memcg = self.procs[self.threads[id].proc].memcg;
        if self.threads[id].fds[fi].is_none() {
            let f = self.open_file(fi, memcg);
            self.threads[id].fds[fi] = Some(f);
        }
        self.threads[id].fds[fi].as_mut().expect("just opened")
    }
}

fn loop_goes_on(f: &LoopFrame, count: Option<u64>, dur: Option<u64>, t: u64) -> bool {
    count.is_none_or(|c| f.iter < c) && dur.is_none_or(|d| t - f.start < d)
}
