//! The real-kernel side of `foliosim oracle`: runs a workload (a fio job or
//! the mmap probe) on the host kernel inside a fresh memory cgroup, reads the
//! group's `memory.stat` and the deltas of `/proc/vmstat`, repeats the run,
//! and compares the real medians with the model's figures.
//!
//! # The counter contract (shared with the model callback)
//!
//! A run, real or modelled, is a `BTreeMap<String, f64>` keyed by counter:
//!
//! * **memcg counters** use the kernel's cgroup-v2 `memory.stat` names, also on
//!   a v1 host: `pgfault`, `pgmajfault`, `workingset_refault_file`,
//!   `workingset_activate_file`, `active_file`, `inactive_file`, `file`,
//!   `anon`, `file_mapped`, `file_dirty`, `file_writeback`, ... (v1's `cache`,
//!   `rss`, `rss_huge`, `mapped_file`, `dirty`, `writeback` are renamed to
//!   `file`, `anon`, `anon_thp`, `file_mapped`, `file_dirty`,
//!   `file_writeback`). v1-only counters keep their v1 names: `pgpgin` and
//!   `pgpgout` there count folio charges to / uncharges from the group (one
//!   event per folio, whatever its size), not block I/O. Event counters are
//!   the group's totals
//!   over the run (the group is created fresh for every run); size counters
//!   (`active_file`, `file`, ...) are in bytes, as the kernel prints them, and
//!   are the state when the workload has exited.
//! * **/proc/vmstat counters** are the run's deltas, prefixed `vmstat.`, with
//!   the kernel's units: `vmstat.pgpgin` and `vmstat.pgpgout` in KiB of block
//!   I/O, the others in events (`vmstat.pgmajfault`, `vmstat.pgfault`,
//!   `vmstat.workingset_refault_file`, `vmstat.pgscan_direct`, ...). They are
//!   system-wide: anything else running on the host adds to them.
//! * **per-group block I/O** on the scratch disk, from the run's v1 blkio
//!   group or v2 `io.stat`, with v2's names: `io.rbytes`, `io.wbytes` (bytes),
//!   `io.rios`, `io.wios` (bios). `io.rbytes` is `vmstat.pgpgin` * 1024 without
//!   the rest of the host's reads: the suite scores "pgpgin" on it. Absent
//!   when the host has no per-group I/O accounting. (Writeback by the
//!   flusher threads is not charged to the group on v1.)
//! * **`elapsed_s`**: wall-clock seconds of the measured pass (the probe's
//!   access loop, or fio's whole run). Informative; the model may omit it.
//! * **`fio.read_bytes`, `fio.write_bytes`** (fio cases): bytes fio's jobs
//!   moved, from its JSON output. Informative, a check that the job ran.
//! * **`ops[PROCESS]`, `start_s[NAME]`, `end_s[NAME]`, `per_op.COUNTER`**
//!   (scenario cases; [`scn`]): operations of kv_get steps, when each
//!   process instance or forked child started and ended, and counters per
//!   operation, which compare runs whose length is a duration (their totals
//!   follow throughput, which the model's device sets). Times are
//!   informative, not scored.
//!
//! The model returns the subset it models under the same names; counters that
//! only one side has are listed in the report but not scored. [`units::unit_of`]
//! names the unit of every counter.
//!
//! The model is configured from [`HostInfo`]: the kernel release, RAM, page
//! size, the read-ahead of the scratch directory's device (a case's own
//! `read_ahead_kb`, if set, wins: see [`Case::effective_read_ahead_kb`]),
//! swappiness, `fault_around_bytes`, THP mode and `lru_gen`.

pub mod calibrate;
pub mod cases;
pub mod cgroup;
pub mod compare;
pub mod ext4;
pub mod fio;
pub mod host;
pub mod jobsafe;
pub mod journal;
pub mod kpageflags;
pub mod probe;
pub mod record;
pub mod run;
pub mod scn;
pub mod statsflush;
pub mod suite;
pub mod units;

/// The tests' rule for a missing tool or host feature: skip with the
/// reason, or fail under CI=true (shared with the integration tests).
#[cfg(test)]
#[path = "../../../tests/require.rs"]
mod require;

pub use cases::{Case, CaseKind, Need};
pub use compare::{compare, CounterRow};
pub use host::{CgroupFlavor, HostInfo};
pub use run::{CaseResult, Outcome, RunOpts};
pub use suite::{Report, SuiteOpts};

use std::collections::BTreeMap;

/// The model side, supplied by the caller (the CLI wires in the `foliosim`
/// model): given the host's facts and a case, the model's counters under the
/// names of the crate-level contract.
pub type ModelFn<'a> = &'a dyn Fn(&HostInfo, &Case) -> Result<BTreeMap<String, f64>, String>;
