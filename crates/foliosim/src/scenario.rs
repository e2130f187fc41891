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
use foliosim_workload::scenario::{
    Advice, Amount, FileFs, Madvice, Op, Pattern, Scenario, Step,
};
use serde::Serialize;

use crate::mm::filemap::OpenFile;
use crate::mm::memcontrol::MemcgId;
use crate::mm::mmap::{MmId, MM_ANONPAGES, MM_FILEPAGES, MM_SHMEMPAGES, MM_SWAPENTS};
use crate::mm::readahead::FileRaState;
use crate::mm::vmscan::ReclaimPolicy;
use crate::mm::vmstat::Item;
use crate::mm::{Kernel, PAGE_SHIFT, PAGE_SIZE};
use crate::sim::{RunReport, Sim, SimConfig};
use crate::with_kernel;

/// What one process instance did.
#[derive(Clone, Debug, Serialize)]
pub struct ProcessReport {
    /// "name[i]" for the i-th of a `[[process]]`'s instances; a forked
    /// child is "parent/fork@LINE[j]" (the j-th child of that fork).
    pub name: String,
    pub cgroup: String,
    pub oom_killed: bool,
    /// Simulated time of the OOM kill.
    pub killed_at_ns: Option<u64>,
    pub start_ns: u64,
    pub end_ns: u64,
    pub elapsed_ns: u64,
    /// get_mm_counter() at the end (just before exit_mmap), in bytes.
    pub rss_anon: u64,
    pub rss_file: u64,
    pub rss_shmem: u64,
    pub swapents: u64,
    /// Page touches of mappings, and I/O blocks read or written.
    pub touches: u64,
    pub ios: u64,
    pub io_bytes: u64,
}

/// `foliosim fio`'s report plus one memory.stat map per cgroup and the
/// processes.
#[derive(Clone, Debug, Serialize)]
pub struct ScenarioReport {
    #[serde(flatten)]
    pub run: RunReport,
    /// memory.stat-style maps keyed by cgroup path (the scenario root's is
    /// `memcg`).
    pub cgroups: BTreeMap<String, BTreeMap<&'static str, u64>>,
    pub processes: Vec<ProcessReport>,
}

/// Runs `sc` on a machine configured by `cfg`.
pub fn run_scenario(cfg: SimConfig, sc: &Scenario) -> Result<ScenarioReport, String> {
    let mut sim = Sim::new(cfg);
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
    let mut maps = BTreeMap::new();
    for (path, id) in &cgroups {
        sim.memcg = *id;
        let mut m = sim.report(Vec::new()).memcg;
        with_kernel!(&sim.k, k => {
            // Swap entries held by the cgroup's processes (memory.stat's
            // swap, v1); shmem is 0 until the model has tmpfs.
            let swap: u64 = k.core.mms.iter().filter(|mm| mm.memcg == *id).map(|mm| mm.rss[MM_SWAPENTS]).sum();
            m.insert("swap", swap * PAGE_SIZE);
            m.insert("shmem", 0);
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
            ios: p.ios,
            io_bytes: p.io_bytes,
        })
        .collect();
    Ok(ScenarioReport {
        run,
        cgroups: maps,
        processes,
    })
}

/// Text for people: the counters as `foliosim fio` prints them, then each
/// cgroup's memory.stat and the processes.
pub fn render_text(r: &ScenarioReport) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    for p in r.processes.iter().filter(|p| p.oom_killed) {
        let _ = writeln!(
            out,
            "run: process {} (cgroup '{}') was OOM-killed at {:.6}s",
            p.name,
            p.cgroup,
            p.killed_at_ns.unwrap_or(0) as f64 / 1e9
        );
    }
    out.push_str(&crate::report::render_counters(&r.run, "run"));
    for (path, m) in &r.cgroups {
        let _ = writeln!(out, "\nmemory.stat of cgroup {path} (bytes; pgpgin/pgpgout in KiB):");
        for (k, v) in m {
            if *v != 0 {
                let _ = writeln!(out, "{k} {v}");
            }
        }
    }
    let _ = writeln!(
        out,
        "\n{:<28} {:<12} {:>6} {:>10} {:>12} {:>12} {:>12} {:>10} {:>12}",
        "process", "cgroup", "killed", "elapsed_s", "rss_anon", "swapents", "touches", "ios", "io_bytes"
    );
    for p in &r.processes {
        let _ = writeln!(
            out,
            "{:<28} {:<12} {:>6} {:>10.3} {:>12} {:>12} {:>12} {:>10} {:>12}",
            p.name,
            if p.cgroup.is_empty() { "/" } else { &p.cgroup },
            if p.oom_killed { "yes" } else { "no" },
            p.elapsed_ns as f64 / 1e9,
            p.rss_anon,
            p.swapents,
            p.touches,
            p.ios,
            p.io_bytes
        );
    }
    out
}

/// "file:line: key: msg", the scenario's error form.
fn err(sc: &Scenario, line: usize, key: &str, msg: impl std::fmt::Display) -> String {
    format!("{}:{}: {}: {}", sc.file, line, key, msg)
}

/// Creates the scenario's cgroups under its root memcg and returns their
/// (path, memcg) in declaration order. The one place cgroups are set up:
/// with the memcg hierarchy (add_memcg_child and its knobs) this is what
/// changes. Until then the model's memcgs are flat with a hard limit, so
/// knobs it cannot honour are refused, not dropped.
pub fn setup_cgroups<P: ReclaimPolicy>(
    k: &mut Kernel<P>,
    root: MemcgId,
    sc: &Scenario,
) -> Result<Vec<(String, MemcgId)>, String> {
    let mut out: Vec<(String, MemcgId)> = Vec::new();
    if root != 0 && !sc.cgroups.is_empty() {
        return Err(format!(
            "{}: --memcg-limit with [[cgroup]]s needs the memcg hierarchy (not in this build): give the limits in the scenario",
            sc.file
        ));
    }
    for c in &sc.cgroups {
        let need = |knob: &str| {
            err(
                sc,
                c.line,
                knob,
                format!("cgroup '{}': needs the memcg hierarchy and its knobs (not in this build)", c.path),
            )
        };
        if c.high.is_some() {
            return Err(need("high"));
        }
        if c.low.is_some() {
            return Err(need("low"));
        }
        if c.min.is_some() {
            return Err(need("min"));
        }
        if c.swappiness.is_some() {
            return Err(need("swappiness"));
        }
        if c.swap_max.is_some() {
            return Err(need("swap_max"));
        }
        if c.memsw_limit.is_some() {
            return Err(need("memsw_limit"));
        }
        if c.oom_group {
            return Err(need("oom_group"));
        }
        if c.oom_kill_disable {
            return Err(need("oom_kill_disable"));
        }
        if let Some((parent, _)) = c.path.rsplit_once('/') {
            let p = sc.cgroups.iter().find(|p| p.path == parent);
            if p.is_some_and(|p| p.max.is_some()) || c.max.is_some() {
                return Err(need("max"));
            }
            if !out.iter().any(|(q, _)| q == parent) {
                return Err(err(sc, c.line, "path", format!("parent '{parent}' is not declared before it")));
            }
        }
        let id = k.add_memcg(&c.path, c.max.map(|b| b.div_ceil(PAGE_SIZE)));
        out.push((c.path.clone(), id));
    }
    Ok(out)
}

/// A compiled step. Loops become a head and a tail; a fork names the body
/// its children run.
#[derive(Clone, Copy)]
enum Ins<'a> {
    /// A step that is neither a loop nor a fork; `gen` is the thread's
    /// generator slot of a touch or I/O step.
    Op { step: &'a Step, gen: usize },
    LoopHead {
        step: &'a Step,
        count: Option<u64>,
        dur: Option<u64>,
        slot: usize,
        tail: usize,
    },
    LoopTail { head: usize },
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
    /// I/O of `bs` bytes per block to a scenario file.
    Io { file: usize, bs: u64, direct: bool },
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
    children_left: u32,
    children_end: u64,
    forks: u64,
}

enum MapKind {
    Anon { space: u32 },
    File { file: usize, open: OpenFile, first: u64, private: bool },
}

struct Map<'a> {
    id: u32,
    name: &'a str,
    pages: u64,
    kind: MapKind,
}

struct Proc<'a> {
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
}

struct FileRt {
    mapping: u32,
    /// Processes' mappings of it: the last munmap frees its page tables.
    mappers: u32,
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
    procs: Vec<Proc<'a>>,
    files: Vec<FileRt>,
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    seed: u64,
    ra_kb: u64,
    check: bool,
    /// oom_kill events already handled.
    oom_seen: u64,
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
            procs: Vec::new(),
            files: Vec::new(),
            heap: BinaryHeap::new(),
            seed,
            ra_kb,
            check,
            oom_seen: k.core.vm.get(Item::OOM_KILL),
        };
        for f in &sc.files {
            if f.fs == FileFs::Tmpfs {
                return Err(err(
                    sc,
                    f.line,
                    "fs",
                    format!("file '{}': tmpfs files need shmem in the kernel model (not in this build)", f.name),
                ));
            }
            if f.size == 0 {
                return Err(err(sc, f.line, "size", format!("file '{}': size must be > 0", f.name)));
            }
            // Laid out on disk, nothing cached; a file that is not
            // prefilled starts empty and grows back to `size` at most.
            let mapping = k.core.add_file(f.size);
            if !f.prefill {
                k.truncate_setsize(mapping, 0);
            }
            d.files.push(FileRt { mapping, mappers: 0 });
        }
        for (pi, p) in sc.processes.iter().enumerate() {
            let memcg = if p.cgroup.is_empty() {
                root
            } else {
                cgroups
                    .iter()
                    .find(|(path, _)| *path == p.cgroup)
                    .map(|&(_, id)| id)
                    .ok_or_else(|| err(sc, p.line, "cgroup", format!("'{}' is not a declared [[cgroup]]", p.cgroup)))?
            };
            let bodies: Vec<usize> = p
                .threads
                .iter()
                .map(|t| d.compile(&t.steps))
                .collect::<Result<_, _>>()?;
            for inst in 0..p.count {
                let proc = d.new_proc(k, format!("{}[{inst}]", p.name), p.cgroup.clone(), memcg, p.oom_score_adj, None, 0);
                for (ti, t) in p.threads.iter().enumerate() {
                    for copy in 0..t.count {
                        let ident = vec![pi as u64, inst as u64, ti as u64, copy as u64];
                        d.new_thread(proc, bodies[ti], 0, ident);
                    }
                }
                if d.procs[proc].live == 0 {
                    d.finish_proc(k, proc, 0);
                }
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
        });
        let mut b = Body {
            ins: Vec::new(),
            nloops: 0,
            ngens: 0,
            bars: Vec::new(),
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
                    b.ins.push(Ins::Op { step, gen: usize::MAX });
                }
                Op::Touch { .. } | Op::Io { .. } => {
                    let gen = b.ngens;
                    b.ngens += 1;
                    b.ins.push(Ins::Op { step, gen });
                }
                _ => b.ins.push(Ins::Op { step, gen: usize::MAX }),
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
            ios: 0,
            io_bytes: 0,
        });
        self.procs.len() - 1
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
            cur: None,
            ident,
            fds: (0..self.files.len()).map(|_| None).collect(),
            children_left: 0,
            children_end: 0,
            forks: 0,
        });
        self.procs[proc].threads.push(id);
        self.procs[proc].live += 1;
        self.heap.push(Reverse((t, id)));
        id
    }

    fn run<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>) -> Result<(), String> {
        while let Some(Reverse((_, id))) = self.heap.pop() {
            if self.threads[id].st != St::Run {
                continue;
            }
            loop {
                match self.exec(k, id)? {
                    Flow::Parked => break,
                    Flow::Continue => {
                        if self.threads[id].st != St::Run {
                            break;
                        }
                        // Keep running while still the furthest behind.
                        let me = (self.threads[id].t, id);
                        if let Some(&Reverse(top)) = self.heap.peek() {
                            if me > top {
                                self.heap.push(Reverse(me));
                                break;
                            }
                        }
                    }
                }
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
            return Err(err(self.sc, line, "deadlock", format!("process {} {what}", p.name)));
        }
        // The run lasts as long as its last process; writeback in flight by
        // then completes.
        let end = self.procs.iter().map(|p| p.end).max().unwrap_or(0);
        k.core.now = k.core.now.max(end);
        k.wb_complete();
        if self.check {
            k.check_invariants().map_err(|e| format!("{}: invariant broken at the end: {e}", self.sc.file))?;
        }
        Ok(())
    }

    fn step_line(&self, th: &Thread) -> usize {
        match self.bodies[th.body].ins.get(th.pc) {
            Some(Ins::Op { step, .. }) | Some(Ins::LoopHead { step, .. }) | Some(Ins::Fork { step, .. }) => step.line,
            _ => 0,
        }
    }

    /// Runs one slice of thread `id`.
    fn exec<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>, id: usize) -> Result<Flow, String> {
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
                th.pc = if loop_goes_on(&th.loops[slot], count, dur, th.t) { pc + 1 } else { tail + 1 };
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
                    return Err(err(sc, step.line, "loop", "a duration loop whose steps take no simulated time never ends"));
                }
                f.last = th.t;
                th.pc = if loop_goes_on(f, count, dur, th.t) { head + 1 } else { tail + 1 };
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
                ident.extend([step.line as u64, seq]);
                let (memcg, adj) = (self.procs[proc].memcg, self.procs[proc].oom_score_adj);
                let cgroup = self.procs[proc].cgroup.clone();
                for j in 0..count {
                    let name = format!("{}/fork@{}[{j}]", self.procs[proc].name, step.line);
                    let parent = wait.then_some(id);
                    let c = self.new_proc(k, name, cgroup.clone(), memcg, adj, parent, t);
                    let mut ci = ident.clone();
                    ci.push(j as u64);
                    self.new_thread(c, child_body, t, ci);
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

    /// A step other than a loop or fork.
    fn op<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>, id: usize, step: &'a Step, gen: usize) -> Result<Flow, String> {
        let sc = self.sc;
        let line = step.line;
        let proc = self.threads[id].proc;
        k.core.now = self.threads[id].t;
        match &step.op {
            Op::MmapAnon { map, size } => {
                if self.find_map(proc, map).is_some() {
                    return Err(err(sc, line, "map", format!("'{map}' is already mapped")));
                }
                if *size == 0 {
                    return Err(err(sc, line, "size", "must be > 0"));
                }
                k.core.cpu(k.core.cost.syscall);
                let space = k.mmap_anon(self.procs[proc].mm, *size);
                self.add_map(proc, map, size.div_ceil(PAGE_SIZE), MapKind::Anon { space });
            }
            Op::MmapFile {
                map,
                file,
                offset,
                len,
                private,
            } => {
                if self.find_map(proc, map).is_some() {
                    return Err(err(sc, line, "map", format!("'{map}' is already mapped")));
                }
                let fi = self.file_index(file, line)?;
                let fsize = sc.files[fi].size;
                let len = if *len == 0 { fsize.saturating_sub(*offset) } else { *len };
                if offset % PAGE_SIZE != 0 || offset + len > fsize || len == 0 {
                    return Err(err(sc, line, "offset", format!("[{offset}, +{len}) is not a page-aligned range inside file '{file}' ({fsize} bytes)")));
                }
                k.core.cpu(k.core.cost.syscall);
                let open = self.open_file(fi, self.procs[proc].memcg);
                self.files[fi].mappers += 1;
                self.add_map(
                    proc,
                    map,
                    len.div_ceil(PAGE_SIZE),
                    MapKind::File {
                        file: fi,
                        open,
                        first: offset >> PAGE_SHIFT,
                        private: *private,
                    },
                );
            }
            Op::Touch {
                map,
                pattern,
                write,
                amount,
                think_ns,
            } => {
                let Some(mi) = self.find_map(proc, map) else {
                    return Err(err(sc, line, "map", format!("'{map}' is not mapped by this process")));
                };
                let m = &self.procs[proc].maps[mi];
                if let MapKind::File { private: true, .. } = m.kind {
                    if *write {
                        return Err(err(sc, line, "write", "stores to a private file mapping (copy-on-write) are not modelled"));
                    }
                }
                let (mid, pages) = (m.id, m.pages);
                self.start_access(id, step, gen, pattern, pages, amount, *write, *think_ns, Target::Map(mid))?;
            }
            Op::Io {
                file,
                pattern,
                write,
                bs,
                amount,
                direct,
                think_ns,
            } => {
                let fi = self.file_index(file, line)?;
                if *bs == 0 || (*direct && bs % 512 != 0) {
                    return Err(err(sc, line, "bs", format!("{bs} is not a valid block size{}", if *direct { " for O_DIRECT (a multiple of 512)" } else { "" })));
                }
                let blocks = sc.files[fi].size / bs;
                if blocks == 0 {
                    return Err(err(sc, line, "bs", format!("{bs} is larger than file '{file}'")));
                }
                self.fd(id, fi);
                let target = Target::Io {
                    file: fi,
                    bs: *bs,
                    direct: *direct,
                };
                self.start_access(id, step, gen, pattern, blocks, amount, *write, *think_ns, target)?;
            }
            Op::Munmap { map } => {
                let Some(mi) = self.find_map(proc, map) else {
                    return Err(err(sc, line, "map", format!("'{map}' is not mapped by this process")));
                };
                k.core.cpu(k.core.cost.syscall);
                let m = self.procs[proc].maps.swap_remove(mi);
                self.unmap(k, proc, m);
            }
            Op::Madvise { map, advice } => {
                let Some(mi) = self.find_map(proc, map) else {
                    return Err(err(sc, line, "map", format!("'{map}' is not mapped by this process")));
                };
                k.core.cpu(k.core.cost.syscall);
                self.madvise(k, proc, mi, *advice, line)?;
            }
            Op::Fsync { file } => {
                let fi = self.file_index(file, line)?;
                k.core.cpu(k.core.cost.syscall);
                k.file_write_and_wait_range(self.files[fi].mapping, 0, u64::MAX);
            }
            Op::Fadvise {
                file,
                advice,
                offset,
                len,
            } => {
                let fi = self.file_index(file, line)?;
                k.core.cpu(k.core.cost.syscall);
                self.fadvise(k, id, fi, *advice, *offset, *len, line)?;
            }
            Op::Truncate { file, size } => {
                let fi = self.file_index(file, line)?;
                if *size > sc.files[fi].size {
                    return Err(err(sc, line, "size", format!("file '{file}' cannot grow past its [[file]] size ({} bytes) in the model", sc.files[fi].size)));
                }
                k.core.cpu(k.core.cost.syscall);
                k.truncate_setsize(self.files[fi].mapping, *size);
            }
            Op::Sleep { ns } | Op::Compute { ns } => {
                // Each thread has its own CPU: sleeping and computing
                // both just move its clock.
                k.core.now += ns;
            }
            Op::Barrier { name } => {
                let bi = self.bar_names.iter().position(|n| n == name).expect("compiled barrier");
                self.threads[id].t = k.core.now;
                self.threads[id].st = St::Barrier(bi);
                self.bars[bi].waiting.push(id);
                self.try_release(bi);
                return Ok(Flow::Parked);
            }
            Op::Exit => {
                let t = k.core.now;
                self.threads[id].t = t;
                self.end_proc(k, proc, t, false);
                return Ok(Flow::Parked);
            }
            Op::Loop { .. } | Op::Fork { .. } | Op::Fio { .. } => unreachable!("compiled away"),
        }
        let th = &mut self.threads[id];
        th.t = k.core.now;
        if th.cur.is_none() {
            th.pc += 1;
        }
        self.after_slice(k, id, true)
    }

    #[allow(clippy::too_many_arguments)]
    fn start_access(
        &mut self,
        id: usize,
        step: &Step,
        gen: usize,
        pattern: &Pattern,
        n: u64,
        amount: &Amount,
        write: bool,
        think: u64,
        what: Target,
    ) -> Result<(), String> {
        let seed = {
            let th = &self.threads[id];
            let mut ident = th.ident.clone();
            ident.push(step.line as u64);
            stream_seed(self.seed, &ident)
        };
        let th = &mut self.threads[id];
        let g = match &mut th.gens[gen] {
            // The same step again (a loop): the stream goes on, a
            // sequential pass starts over. A region of another size
            // (remapped) gets a new stream.
            Some(g) if g.len() == n => {
                g.restart();
                g
            }
            slot => slot.insert(AccessGen::new(pattern, n, seed).map_err(|e| err(self.sc, step.line, "pattern", e))?),
        };
        let left = match *amount {
            Amount::Passes(p) => Left::Count(p.saturating_mul(g.len())),
            Amount::Accesses(a) => Left::Count(a),
            Amount::Duration(d) => Left::Until(th.t.saturating_add(d)),
        };
        let done = match left {
            Left::Count(c) => c == 0,
            Left::Until(u) => th.t >= u,
        };
        if !done {
            th.cur = Some(Cur {
                left,
                think,
                write,
                gen,
                what,
            });
        }
        Ok(())
    }

    /// One access of the step in progress.
    fn access<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>, id: usize) -> Result<Flow, String> {
        let th = &mut self.threads[id];
        let mut cur = th.cur.expect("a step in progress");
        let idx = th.gens[cur.gen].as_mut().expect("generator").next_index();
        let proc = th.proc;
        k.core.now = th.t;
        let ok = match cur.what {
            Target::Map(mid) => {
                let p = &mut self.procs[proc];
                let Some(m) = p.maps.iter_mut().find(|m| m.id == mid) else {
                    let line = self.step_line(&self.threads[id]);
                    return Err(err(self.sc, line, "map", "touched after another thread unmapped it"));
                };
                p.touches += 1;
                match &mut m.kind {
                    MapKind::Anon { space } => k.anon_access(*space, idx, p.memcg, cur.write),
                    MapKind::File { open, first, .. } => {
                        let index = *first + idx;
                        let ok = k.mmap_access(open, index);
                        if ok && cur.write {
                            if let Some(f) = k.core.files[open.mapping as usize].folio(index) {
                                k.folio_mark_dirty(f);
                            }
                            k.balance_dirty_pages();
                        }
                        ok
                    }
                }
            }
            Target::Io { file, bs, direct } => {
                let p = &mut self.procs[proc];
                p.ios += 1;
                p.io_bytes += bs;
                let open = self.threads[id].fds[file].as_mut().expect("opened at the step's start");
                let pos = idx * bs;
                if direct {
                    let done = k.iomap_dio_rw(open, pos, bs, cur.write);
                    k.core.wait_until(done);
                    true
                } else if cur.write {
                    k.filemap_write(open, pos, bs).is_some()
                } else {
                    k.filemap_read(open, pos, bs).is_some()
                }
            }
        };
        let th = &mut self.threads[id];
        th.t = k.core.now + cur.think;
        let finished = match &mut cur.left {
            Left::Count(c) => {
                *c -= 1;
                *c == 0
            }
            Left::Until(u) => th.t >= *u,
        };
        if finished {
            th.cur = None;
            th.pc += 1;
        } else {
            th.cur = Some(cur);
        }
        self.after_slice(k, id, ok)
    }

    /// After each slice: OOM kills the kernel model decided are carried
    /// out (the victims' threads stop, exit_mmap frees their memory).
    #[inline]
    fn after_slice<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>, id: usize, ok: bool) -> Result<Flow, String> {
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

    /// The OOM killer chose: an mm marked oom_killed is the victim; with
    /// none marked, the task whose charge failed is (the model's
    /// mem_cgroup_oom kills the charging task). Once the victims are gone
    /// the memcgs may charge again: the model's per-memcg oom_killed flag
    /// stands for "the victim has not exited yet".
    #[cold]
    fn oom_kill<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>, id: usize, ok: bool) {
        let t = k.core.now;
        let mut victims: Vec<usize> = (0..self.procs.len())
            .filter(|&p| !self.procs[p].done && k.core.mms[self.procs[p].mm as usize].oom_killed)
            .collect();
        if victims.is_empty() && !ok {
            victims.push(self.threads[id].proc);
        }
        for p in victims {
            self.end_proc(k, p, t, true);
        }
        for m in k.core.memcgs.iter_mut() {
            m.oom_killed = false;
        }
        self.oom_seen = k.core.vm.get(Item::OOM_KILL);
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
                self.leave_barriers(th);
            }
        }
        self.procs[p].live = 0;
        self.finish_proc(k, p, t);
    }

    fn thread_end<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>, id: usize) {
        let p = self.threads[id].proc;
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
            MapKind::File { file, .. } => {
                // The model keeps one set of PTEs per file: they go with
                // the last process mapping it.
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
        let t = b.waiting.iter().map(|&w| self.threads[w].t).max().unwrap_or(0);
        for w in b.waiting.drain(..) {
            let th = &mut self.threads[w];
            th.t = t;
            th.st = St::Run;
            th.pc += 1;
            self.heap.push(Reverse((t, w)));
        }
    }

    fn find_map(&self, p: usize, name: &str) -> Option<usize> {
        self.procs[p].maps.iter().position(|m| m.name == name)
    }

    fn add_map(&mut self, p: usize, name: &'a str, pages: u64, kind: MapKind) {
        let pr = &mut self.procs[p];
        pr.maps.push(Map {
            id: pr.next_map,
            name,
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
            .ok_or_else(|| err(self.sc, line, "file", format!("'{name}' is not a declared [[file]]")))
    }

    fn open_file(&self, fi: usize, memcg: MemcgId) -> OpenFile {
        OpenFile {
            mapping: self.files[fi].mapping,
            ra: FileRaState::new(self.ra_kb),
            fmode_random: false,
            vm_rand_read: false,
            vm_seq_read: false,
            memcg,
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

    /// madvise(2) of a whole mapping.
    fn madvise<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>, p: usize, mi: usize, advice: Madvice, line: usize) -> Result<(), String> {
        let sc = self.sc;
        let mm = self.procs[p].mm;
        let single = |files: &[FileRt], fi: usize| files[fi].mappers == 1;
        let m = &mut self.procs[p].maps[mi];
        match (&mut m.kind, advice) {
            (_, Madvice::Cold | Madvice::Pageout) => {
                return Err(err(sc, line, "advice", "MADV_COLD / MADV_PAGEOUT need reclaim of a range, which the model does not have yet"));
            }
            (MapKind::Anon { .. }, Madvice::Normal) => {}
            (MapKind::Anon { .. }, Madvice::Sequential | Madvice::Random | Madvice::Willneed) => {
                return Err(err(sc, line, "advice", "random / sequential / willneed on an anonymous mapping: the model's anon fault and swap-in paths take no VMA hints yet"));
            }
            (MapKind::Anon { space }, Madvice::Dontneed) => {
                // zap_page_range: the pages and swap entries go, the VMA
                // stays (a fresh, empty anonymous region).
                let bytes = k.core.files[*space as usize].size;
                k.munmap_anon(mm, *space);
                *space = k.mmap_anon(mm, bytes);
            }
            (MapKind::File { open, .. }, Madvice::Normal) => {
                open.vm_rand_read = false;
                open.vm_seq_read = false;
            }
            (MapKind::File { open, .. }, Madvice::Sequential) => {
                open.vm_rand_read = false;
                open.vm_seq_read = true;
            }
            (MapKind::File { open, .. }, Madvice::Random) => {
                open.vm_rand_read = true;
                open.vm_seq_read = false;
            }
            (MapKind::File { open, first, .. }, Madvice::Willneed) => {
                // madvise_willneed() -> vfs_fadvise(POSIX_FADV_WILLNEED).
                let f = open.clone();
                k.force_page_cache_ra(&f, *first, m.pages);
            }
            (MapKind::File { file, open, .. }, Madvice::Dontneed) => {
                if !single(&self.files, *file) {
                    return Err(err(sc, line, "advice", "dontneed on a file several processes map: the model keeps one set of PTEs per file"));
                }
                k.exit_mmap(open.mapping);
            }
        }
        Ok(())
    }

    /// generic_fadvise() on the thread's open file.
    #[allow(clippy::too_many_arguments)]
    fn fadvise<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>, id: usize, fi: usize, advice: Advice, offset: u64, len: u64, line: usize) -> Result<(), String> {
        let sc = self.sc;
        let size = k.core.files[self.files[fi].mapping as usize].size;
        let ra_kb = self.ra_kb;
        let f = self.fd(id, fi);
        match advice {
            Advice::Normal => {
                f.ra.ra_pages = ra_kb / 4;
                f.fmode_random = false;
            }
            Advice::Sequential => {
                f.ra.ra_pages = ra_kb / 4 * 2;
                f.fmode_random = false;
            }
            Advice::Random => f.fmode_random = true,
            Advice::Willneed => {
                let end = if len == 0 { size } else { (offset + len).min(size) };
                if end > offset {
                    let first = offset >> PAGE_SHIFT;
                    let last = (end - 1) >> PAGE_SHIFT;
                    let f = f.clone();
                    k.force_page_cache_ra(&f, first, last - first + 1);
                }
            }
            Advice::Dontneed => {
                let whole = offset == 0 && (len == 0 || len >= size);
                if !whole {
                    return Err(err(sc, line, "offset", "dontneed of part of a file: the model invalidates whole files only"));
                }
                // Dirty pages are written first (WB_SYNC_NONE); those still
                // dirty or under writeback stay cached.
                let m = f.mapping;
                k.filemap_fdatawrite_range(m, 0, u64::MAX >> PAGE_SHIFT, false);
                k.invalidate_mapping_pages(m);
            }
            Advice::Noreuse => {
                return Err(err(sc, line, "advice", "noreuse (FMODE_NOREUSE) is not modelled"));
            }
        }
        Ok(())
    }
}

fn loop_goes_on(f: &LoopFrame, count: Option<u64>, dur: Option<u64>, t: u64) -> bool {
    count.is_none_or(|c| f.iter < c) && dur.is_none_or(|d| t - f.start < d)
}
