//! Scenarios: cgroups and the processes in them, step by step (anonymous
//! mappings, files on disk or tmpfs, fio jobs, pauses, barriers). The
//! types here are what the TOML parser produces and what both the model's
//! driver (`foliosim::scenario`) and the oracle's real executor run; they
//! hold no kernel model.
//!
//! Sizes are bytes, times nanoseconds. Every step keeps the line of the
//! scenario file it came from, so a runtime refusal can name it.
//!
//! `parse`/`parse_file` read the TOML form (docs/scenarios.md), `usemem`
//! the usemem command line, `gen` writes random valid scenarios.

use serde::{Deserialize, Serialize};

/// A buffered 4 KiB read of a `read` step this long or longer went to the
/// device (ns): a hit copies one page from the cache in 1-3 us, a miss
/// waits for the device (40-80 us on the oracle's virtio disk). The model's
/// driver and the oracle's executor time their reads against the same
/// floor, so that their miss counts and means compare.
pub const READ_MISS_FLOOR_NS: u64 = 10_000;

/// A whole scenario file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    /// The file it was read from (for error messages).
    pub file: String,
    /// `[machine]`: defaults a command line may override.
    pub machine: MachineDefaults,
    /// `[[cgroup]]`, parents before children (the parser sorts them).
    pub cgroups: Vec<Cgroup>,
    /// `[[file]]`: files the processes name.
    pub files: Vec<FileSpec>,
    /// `[[process]]`.
    pub processes: Vec<Process>,
    /// Barrier names with the number of threads that must arrive (computed
    /// by the parser: every thread whose steps name the barrier takes part,
    /// once per time its steps reach it).
    pub barriers: Vec<Barrier>,
}

/// `[machine]`: the machine options a scenario may carry (all optional; a
/// command-line option wins).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MachineDefaults {
    pub memory: Option<u64>,
    /// "zram:4G", "disk:8G", "none" (parsed by the CLI's --swap parser).
    pub swap: Option<String>,
    pub lru: Option<String>,
    pub swappiness: Option<u32>,
    pub device: Option<String>,
    pub read_ahead_kb: Option<u64>,
    /// zram's compression ratio (uncompressed / compressed), e.g. 3.0.
    pub zram_ratio: Option<f64>,
    /// The tmpfs mount's huge= (never, always, within_size, advise).
    pub tmpfs_huge: Option<String>,
    /// Free-form key=value sysctls, as `--sysctl`.
    pub sysctl: Vec<(String, String)>,
    pub seed: Option<u64>,
}

/// `[[cgroup]]`: one memory cgroup. Knobs left out are the kernel's
/// defaults (max / unlimited, 0 protection, the parent's swappiness).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Cgroup {
    /// "db" or "jobs/a": a path under the scenario's root cgroup, '/'
    /// separated; each parent must be declared too.
    pub path: String,
    pub line: usize,
    /// memory.max (v2) or memory.limit_in_bytes (v1).
    pub max: Option<u64>,
    /// memory.high (v2).
    pub high: Option<u64>,
    /// memory.low (v2).
    pub low: Option<u64>,
    /// memory.min (v2).
    pub min: Option<u64>,
    /// memory.swappiness (v1; per cgroup).
    pub swappiness: Option<u32>,
    /// memory.swap.max (v2): swap only.
    pub swap_max: Option<u64>,
    /// memory.memsw.limit_in_bytes (v1): memory + swap.
    pub memsw_limit: Option<u64>,
    /// memory.oom.group (v2): the OOM killer kills the whole cgroup.
    pub oom_group: bool,
    /// memory.oom_control's oom_kill_disable (v1).
    pub oom_kill_disable: bool,
    /// The cgroup's cache_ext policy spec (`NAME[:key=val,...]`), checked
    /// by the model (this crate knows no policies).
    pub policy: Option<String>,
}

/// Where a file lives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileFs {
    /// A regular file on the block device (ext4 in the oracle).
    #[default]
    Disk,
    /// tmpfs: shmem pages, swap-backed, on the anon LRU, charged to the
    /// cgroup that first touches them.
    Tmpfs,
}

/// `[[file]]`: a file processes open by name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FileSpec {
    pub name: String,
    pub line: usize,
    pub size: u64,
    pub fs: FileFs,
    /// The file exists with data before the run (laid out, not cached).
    /// False: it starts empty and steps write it. tmpfs files always
    /// start empty.
    pub prefill: bool,
}

/// `[[process]]`: `count` identical processes (separate address spaces),
/// each with its threads.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Process {
    pub name: String,
    pub line: usize,
    /// The cgroup path ("" = the scenario's root cgroup).
    pub cgroup: String,
    /// Identical processes started at once (as `usemem -n`).
    pub count: u32,
    /// The threads of each process; threads share its mappings. A process
    /// written with plain `steps` has one thread.
    ///
    /// Map names: a name bound by an mmap step of a body with `count` 1 is
    /// visible to every thread of the process; a body with `count` > 1
    /// binds one mapping per thread under each name it maps (each of the
    /// identical threads uses its own, as usemem's threads do).
    pub threads: Vec<Thread>,
    /// /proc/PID/oom_score_adj.
    pub oom_score_adj: i32,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Thread {
    /// `count` identical threads of this body.
    pub count: u32,
    pub steps: Vec<Step>,
}

/// A barrier: `parties` arrivals release everyone waiting on it; it then
/// resets for its next round (pthread_barrier semantics).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Barrier {
    pub name: String,
    pub parties: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub line: usize,
    /// The step's number in its scenario (Scenario::number_steps()): its
    /// random streams are seeded by it, not by the line, so that editing
    /// comments or blank lines changes no result and two steps written on
    /// one line draw streams of their own.
    #[serde(default)]
    pub id: u64,
    pub op: Op,
}

/// Which pages of a region a touch or an I/O step visits, in what order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pattern {
    /// Every page in order (or every `bs` block for I/O).
    Seq,
    /// Write steps: each write goes after the last one any writer
    /// appended to the file (O_APPEND's shared end of file), wrapping at
    /// its size. The drivers keep that offset per file; a stream made of
    /// this pattern alone goes on in order across a loop's runs.
    Append,
    /// Uniform random pages, with replacement.
    Random,
    /// Zipf with exponent theta over the pages (hottest first, then
    /// scattered by a fixed permutation).
    Zipf { theta: f64 },
    /// YCSB's scrambled zipfian (theta 0.99 by default).
    Ycsb { theta: f64 },
    /// TPC-C's NURand(A, 0, n-1).
    Nurand { a: u64 },
    /// `hot_pct` percent of the accesses go to the first `hot_size_pct`
    /// percent of the pages, the rest to the others, uniformly.
    HotCold { hot_pct: u32, hot_size_pct: u32 },
    /// Every `stride`-th page, wrapping with an offset of one each lap,
    /// until every page was visited once.
    Stride { stride: u64 },
}

/// How long a touch or I/O step goes on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Amount {
    /// `n` passes over the region (a pass is as many accesses as the
    /// region has pages or blocks; for `seq`, each page once).
    Passes(u64),
    /// Exactly `n` accesses.
    Accesses(u64),
    /// For a simulated duration (ns).
    Duration(u64),
}

/// fadvise(2) advice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Advice {
    Normal,
    Sequential,
    Random,
    Willneed,
    Dontneed,
    Noreuse,
}

/// madvise(2) advice a scenario may give a mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Madvice {
    Normal,
    Sequential,
    Random,
    Willneed,
    Dontneed,
    Cold,
    Pageout,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// mmap(MAP_PRIVATE|MAP_ANONYMOUS) of `size` bytes, named `map`
    /// (process-wide). Nothing is faulted until touched.
    MmapAnon {
        map: String,
        size: u64,
    },
    /// mmap of a `[[file]]` (MAP_SHARED, or MAP_PRIVATE when `private`),
    /// named `map`, over [offset, offset+len) (len 0: to the end).
    MmapFile(MmapFileStep),
    /// Loads (or stores when `write`) to pages of a mapping. `bytes_per_page`
    /// is how much of each visited page is touched (cost only).
    Touch(TouchStep),
    /// munmap (or free(3) of a malloc'ed region) of a mapping: anon pages
    /// and their swap entries are freed.
    Munmap {
        map: String,
    },
    /// madvise of a mapping.
    Madvise {
        map: String,
        advice: Madvice,
    },
    /// pread (or pwrite when `write`) of `bs` blocks of a file.
    Io(IoStep),
    /// GETs (records = 1) or SCANs of a key-value store's sorted tables
    /// in `file` (crate::lsm): each access is one operation of
    /// `records` records from a key drawn by `pattern` over `keys`.
    KvGet(KvGetStep),
    Fsync {
        file: String,
    },
    Fadvise(FadviseStep),
    /// ftruncate to `size`.
    Truncate {
        file: String,
        size: u64,
    },
    /// A fio job file (path relative to the scenario file) run by this
    /// thread in the process's cgroup; its jobs run as fio's threads would.
    Fio {
        job: String,
    },
    /// nanosleep.
    Sleep {
        ns: u64,
    },
    /// Spin on the CPU (computation between memory phases). With `sys`,
    /// the time is spent in the kernel: work of system calls the model does
    /// not simulate (exec, path lookups, the VFS), counted in the task's
    /// stime.
    Compute {
        ns: u64,
        sys: bool,
    },
    /// Wait at a named barrier.
    Barrier {
        name: String,
    },
    /// Repeat the inner steps `count` times, or until `duration_ns` of
    /// simulated time has passed since the loop began (checked at the top
    /// of each iteration); with both, whichever ends it first.
    Loop {
        count: Option<u64>,
        duration_ns: Option<u64>,
        steps: Vec<Step>,
    },
    /// fork() `count` children in the same cgroup that run `steps` and
    /// exit; the parent waits for them (waitpid) when `wait`. Children
    /// start with none of the parent's mappings (a fork+exec'ed worker):
    /// the model does not share anonymous pages copy-on-write.
    Fork {
        count: u32,
        wait: bool,
        steps: Vec<Step>,
    },
    /// exit(0) of this thread's process before its steps end.
    Exit,
}

/// The fields of the steps that carry more than a name: one description
/// each, which the parser fills, the model runs (foliosim::scenario) and
/// the oracle's executor runs on the real kernel (oracle::scn::exec).
/// mmap of a `[[file]]` (MAP_SHARED, or MAP_PRIVATE when `private`),
/// named `map`, over [offset, offset+len) (len 0: to the end).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MmapFileStep {
    pub map: String,
    pub file: String,
    pub offset: u64,
    pub len: u64,
    pub private: bool,
}

/// Loads (or stores when `write`) to pages of a mapping. `bytes_per_page`
/// is how much of each visited page is touched (cost only).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TouchStep {
    pub map: String,
    pub pattern: Pattern,
    pub write: bool,
    pub amount: Amount,
    /// Pause after each access (the reproducers' think time), ns.
    pub think_ns: u64,
}

/// pread (or pwrite when `write`) of `bs` blocks of a file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IoStep {
    pub file: String,
    pub pattern: Pattern,
    pub write: bool,
    pub bs: u64,
    pub amount: Amount,
    /// O_DIRECT.
    pub direct: bool,
    pub think_ns: u64,
}

/// GETs (records = 1) or SCANs of a key-value store's sorted tables
/// in `file` (crate::lsm): each access is one operation of
/// `records` records from a key drawn by `pattern` over `keys`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KvGetStep {
    pub file: String,
    pub keys: u64,
    pub record: u64,
    pub table_size: u64,
    pub table_cache: u64,
    /// Bytes of LevelDB's block cache (crate::lsm::BlockCache), shared
    /// by the process's threads; 0 keeps no blocks.
    pub block_cache: u64,
    /// Bytes of level 1; each level below holds ten times more.
    pub level_base: u64,
    pub records: u64,
    pub pattern: Pattern,
    pub amount: Amount,
    pub think_ns: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FadviseStep {
    pub file: String,
    pub advice: Advice,
    pub offset: u64,
    /// 0: to the end of the file.
    pub len: u64,
}

impl Scenario {
    /// Numbers every step: processes in file order, their threads, then
    /// steps depth-first (a loop or fork before the steps inside it).
    /// parse() does this; a scenario built in code calls it (or sets ids
    /// of its own, unique within a process).
    pub fn number_steps(&mut self) {
        fn walk(next: &mut u64, steps: &mut [Step]) {
            for s in steps {
                s.id = *next;
                *next += 1;
                if let Op::Loop { steps, .. } | Op::Fork { steps, .. } = &mut s.op {
                    walk(next, steps);
                }
            }
        }
        let mut next = 0;
        for p in &mut self.processes {
            for t in &mut p.threads {
                walk(&mut next, &mut t.steps);
            }
        }
    }

    /// The line of the step numbered `id` in process `process`.
    pub fn step_line(&self, process: usize, id: u64) -> Option<usize> {
        fn find(steps: &[Step], id: u64) -> Option<usize> {
            steps.iter().find_map(|s| {
                if s.id == id {
                    return Some(s.line);
                }
                match &s.op {
                    Op::Loop { steps, .. } | Op::Fork { steps, .. } => find(steps, id),
                    _ => None,
                }
            })
        }
        let p = self.processes.get(process)?;
        p.threads.iter().find_map(|t| find(&t.steps, id))
    }
}

mod check;
pub mod gen;
mod parse;
pub mod usemem;

pub use parse::{flatten_table, parse, parse_file};
