//! fio job files and fio's command-line form, parsed into [`FioJob`]s.
//!
//! Semantics follow fio 3.33, the version Debian ships and the tests run
//! beside (options.c, parse.c, init.c, filesetup.c): option names, aliases
//! and defaults are fio's. Options that cannot change what the model
//! computes (reporting, logging, CPU placement) are accepted and ignored;
//! every other option fio knows but foliosim does not model is refused with
//! an error naming the file, line and option. The option builder lives in
//! `fio/builder.rs`, job-control options in `fio/jobctl.rs`, engine checks
//! and device sizes in `fio/setup.rs`; `fio/backend.rs` runs the job
//! control (start, rate, thinktime, flow, stop) for the kernel-side driver.
//!
//! Sizes follow fio's `kb_base` rules: with the default `kb_base=1024`,
//! `k`/`kb`/`m`/... are powers of 1024 and the IEC-looking `kib`/`mib`/...
//! are powers of 1000 ("opposite units", kept by fio for old scripts); with
//! `kb_base=1000` it is the other way round. The bare `ki`/`mi` forms are
//! refused because fio's HOWTO and its parser disagree on them. Percentages
//! (`size=50%`) are refused: they need a real device. Zone units (`size=8z`,
//! fio's `*_nz`) are `zonesize` multiples (zbd_recalc_options_with_zone_granularity).

use serde::Serialize;
use std::fmt;
use std::path::Path;

pub mod backend;
pub mod iolog;
mod jobctl;
pub use jobctl::{
    split_filenames, ExitWhat, FileService, JobControl, JobFile, Keywords, RateProcess,
    SyncFileRange, ThinktimeBlocksType,
};

/// A job file / command-line error: one line, "{file}:{line}: {option}: {msg}".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub file: String,
    pub line: usize,
    pub option: String,
    pub msg: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::units::one_line;
        let (file, option, msg) = (
            one_line(&self.file),
            one_line(&self.option),
            one_line(&self.msg),
        );
        match (self.file.as_str(), self.line) {
            // fio's options on foliosim's command line: argument N.
            ("<command line>", n) if n > 0 => {
                write!(f, "fio option --{option} (argument {n}): {msg}")
            }
            // Not at a line: the file itself (unreadable, empty).
            (_, 0) => write!(f, "{file}: {option}: {msg}"),
            _ => write!(f, "{file}:{}: {option}: {msg}", self.line),
        }
    }
}

impl std::error::Error for ParseError {}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Rw {
    Read,
    Write,
    RandRead,
    RandWrite,
    /// fio's `rw` / `readwrite`: sequential mix.
    ReadWrite,
    RandRw,
    /// `trim` / `randtrim`: every I/O is a trim (fio's DDIR_TRIM).
    Trim,
    RandTrim,
}

impl Rw {
    pub fn is_random(&self) -> bool {
        matches!(
            self,
            Rw::RandRead | Rw::RandWrite | Rw::RandRw | Rw::RandTrim
        )
    }
    pub fn is_trim(&self) -> bool {
        matches!(self, Rw::Trim | Rw::RandTrim)
    }
    pub fn has_reads(&self) -> bool {
        matches!(self, Rw::Read | Rw::RandRead | Rw::ReadWrite | Rw::RandRw)
    }
    pub fn has_writes(&self) -> bool {
        matches!(self, Rw::Write | Rw::RandWrite | Rw::ReadWrite | Rw::RandRw)
    }
    /// Both directions (fio's `td_rw()`): `rwmixread` applies.
    pub fn is_mixed(&self) -> bool {
        matches!(self, Rw::ReadWrite | Rw::RandRw)
    }
}

pub use crate::engines::{EngineOpts, IoEngine, MadviseHint};
pub use setup::resolve_device_sizes;

mod setup;

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum RandomDist {
    Random,
    /// zipf:theta (fio default 1.1; theta != 1).
    Zipf(f64),
    /// pareto:h (fio default 0.2; 0 < h < 1).
    Pareto(f64),
    /// normal:dev, deviation in percent of the region (fio default 0; 0 <= dev < 100).
    Normal(f64),
    /// `zoned:a/s:...`: a% of accesses to the next s% of the region; the
    /// per-direction zones are in [`FioJob::zone_split`].
    Zoned,
    /// `zoned_abs:a/size:...`: like zoned with absolute zone sizes.
    ZonedAbs,
}

/// One `zoned`/`zoned_abs` entry (fio's `struct zone_split`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ZoneSplit {
    /// Percent of the accesses.
    pub access_perc: u8,
    /// Percent of the region (zoned).
    pub size_perc: u8,
    /// Bytes (zoned_abs).
    pub size: u64,
}

/// One `bssplit` entry (fio's `struct bssplit`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct BsSplit {
    pub bs: u64,
    pub perc: u32,
}

/// fio's `random_generator`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum RandomGenerator {
    Tausworthe,
    Lfsr,
    Tausworthe64,
}

/// fio's `rw_sequencer`: what the non-random I/Os of `rw=randread:N` do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum RwSequencer {
    Sequential,
    Identical,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum FadviseHint {
    /// `fadvise_hint=0`: no fadvise/madvise.
    Off,
    /// fio's default `1`: POSIX_FADV_RANDOM for random jobs, SEQUENTIAL otherwise.
    On,
    Sequential,
    Random,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FioJob {
    pub name: String,
    /// Resolved: `directory/filename`, or fio's `filename_format`
    /// (default `$jobname.$jobnum.$filenum`) in `directory`.
    pub filename: String,
    /// Bytes of the I/O region, starting at `offset`. The file is
    /// `offset + size` bytes long.
    pub size: u64,
    pub offset: u64,
    pub rw: Rw,
    pub rwmixread: u32,
    /// The smallest block size of any direction (fio's `rw_min_bs`): the
    /// unit of the random map; the only size of a fixed-`bs` job.
    pub bs: u64,
    /// Per direction (read, write): smallest and largest I/O size, and
    /// the alignment of random offsets (fio's `min_bs`, `max_bs`, `ba`).
    pub min_bs: [u64; 2],
    pub max_bs: [u64; 2],
    pub ba: [u64; 2],
    /// `bssplit` per direction, sorted by percentage as fio keeps it.
    pub bssplit: [Vec<BsSplit>; 2],
    /// `bs_unaligned`: sizes from a range are not rounded to `min_bs`.
    pub bs_unaligned: bool,
    pub random_generator: RandomGenerator,
    /// `random_generator=` given: fio then keeps 32-bit tausworthe even
    /// for more than 2^32 blocks (otherwise it switches to tausworthe64).
    pub random_generator_set: bool,
    /// `randrepeat` as given (default 1). fio seeds the job with it, and only
    /// then clears it when `randseed` is set (init.c runs
    /// setup_random_seeds() before fixup_options()): so a `randseed`
    /// alone leaves the block generator at `FIO_RANDSEED * thread_number`.
    /// `randrepeat=0` without `randseed` seeds from fio's system RNG;
    /// foliosim, deterministic, derives those seeds from the run's
    /// `--seed` instead (`fio_rand::job_rand_seeds`).
    pub randrepeat: bool,
    /// `randseed=` given: fio's `rand_repeatable` is off after seeding
    /// (no re-seeding per loop; zipf/pareto/normal seeded from the block seed).
    pub randseed_set: bool,
    pub allrandrepeat: bool,
    /// zoned / zoned_abs zones per direction (read, write).
    pub zone_split: [Vec<ZoneSplit>; 2],
    /// `percentage_random` per direction (read, write).
    pub percentage_random: [u32; 2],
    /// `rw=randread:N`: a new random offset every N I/Os (fio's
    /// `ddir_seq_nr`), 1 without the modifier.
    pub rw_seq_nr: u32,
    pub rw_sequencer: RwSequencer,
    /// 1-based position of the job among all jobs of the run, clones
    /// included (fio's `thread_number`): it enters every random seed.
    pub thread_number: u32,
    pub ioengine: IoEngine,
    pub direct: bool,
    /// Queue depth after fio's rules: 1 for FIO_SYNCIO engines whatever
    /// iodepth says, and iodepth_batch / _low / _complete_max fixed up
    /// as init.c's fixup_options() does.
    pub iodepth: u32,
    pub iodepth_batch: u32,
    pub iodepth_batch_complete_min: u32,
    pub iodepth_batch_complete_max: u32,
    pub iodepth_low: u32,
    pub engine_opts: EngineOpts,
    /// fio's nr_files (the names in `filename`, else `nrfiles`).
    pub nrfiles: u32,
    /// unlink: delete the job's file when the job is done (its cache goes
    /// with the last user).
    pub unlink: bool,
    /// The file is a block device (`/dev/...`) given without size=: its
    /// size is the device capacity, filled in by [`resolve_device_sizes`].
    pub size_from_device: bool,
    pub runtime_ns: Option<u64>,
    pub time_based: bool,
    pub ramp_time_ns: u64,
    pub loops: u64,
    pub io_size: Option<u64>,
    pub number_ios: Option<u64>,
    pub zonemode_strided: bool,
    /// `zonemode=zbd`: fio's emulated zones ([`crate::zbd`]).
    pub zbd: Option<crate::zbd::ZbdOpts>,
    /// Steady-state termination (`ss_dur` of a second or more).
    pub ss: Option<crate::steadystate::SsOpts>,
    /// `latency_target` profiling (a target above 0).
    pub lat_target: Option<crate::lat_target::LatOpts>,
    pub zonesize: u64,
    pub zonerange: u64,
    pub zoneskip: u64,
    pub norandommap: bool,
    pub randseed: u64,
    pub random_distribution: RandomDist,
    pub fadvise_hint: FadviseHint,
    pub invalidate: bool,
    pub thinktime_us: u64,
    /// `rw=read:N`: bytes skipped after each sequential I/O (fio's
    /// ddir_seq_add), 0 without the modifier; negative reads backwards.
    pub rw_seq_add: i64,
    /// end_fsync: fsync the file when the job ends.
    pub end_fsync: bool,
    /// Always 1 after numjobs expansion (each clone is its own job).
    pub numjobs: u32,
    /// fio's subjob_number (`$jobnum`): 0 for the parent, then numjobs-1
    /// down to 1 for the clones in thread order.
    pub jobnum: u32,
    /// "file:line" of the job's section header (or `--name`).
    pub source: String,
    /// fio's reporting group (init.c add_job): starts at 0 and goes up by
    /// one at each job with `new_group` or `stonewall` that has jobs
    /// before it in the current group; numjobs clones share their
    /// parent's group.
    pub groupid: u32,
    /// group_reporting: the jobs of this group are reported as one.
    pub group_reporting: bool,
    /// The job's files (fio's td->files): `filename` is the first one's name.
    pub files: Vec<JobFile>,
    /// Job-control, file, sync, verify, rate and flow options.
    pub ctl: JobControl,
    /// read_iolog: the log the job replays; its files and I/O replace
    /// what rw, bs, size and filename would give.
    #[serde(skip)]
    pub iolog: Option<std::sync::Arc<iolog::IoLog>>,
    /// write_iolog: where the run appends the job's issued I/O (v3).
    #[serde(skip)]
    pub write_iolog: Option<String>,
}

impl FioJob {
    /// Length of the file the job works on (fio's real_file_size for a
    /// file it lays out itself).
    pub fn file_size(&self) -> u64 {
        self.offset + self.size
    }
}

/// Parse a fio job file.
pub fn parse_job_file(path: &Path) -> Result<Vec<FioJob>, ParseError> {
    parse_job_file_with(path, &Keywords::default())
}

/// Parse a fio job file; `$pagesize`, `$mb_memory` and `$ncpus` are `kw`'s.
pub fn parse_job_file_with(path: &Path, kw: &Keywords) -> Result<Vec<FioJob>, ParseError> {
    let label = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ParseError {
        file: label.clone(),
        line: 0,
        option: "job file".into(),
        msg: format!("cannot read: {e}"),
    })?;
    parse_job_str_with(&text, &label, kw)
}

/// Parse the text of a fio job file; `file_label` names it in errors.
pub fn parse_job_str(text: &str, file_label: &str) -> Result<Vec<FioJob>, ParseError> {
    parse_job_str_with(text, file_label, &Keywords::default())
}

/// [`parse_job_str`] with the machine's keyword values.
pub fn parse_job_str_with(
    text: &str,
    file_label: &str,
    kw: &Keywords,
) -> Result<Vec<FioJob>, ParseError> {
    parse_job_str_base(text, file_label, kw, &Builder::default())
}

/// A job file whose relative `read_iolog` paths are read from `log_dir`
/// instead of the working directory: `foliosim oracle` copies a case's
/// logs from beside its job file to fio's working directory, and its model
/// run reads them where they were copied from. The logs' own file names
/// are kept as written (fio's working directory's, in the model's file
/// system).
pub fn parse_job_file_logs_in(
    path: &Path,
    kw: &Keywords,
    log_dir: &Path,
) -> Result<Vec<FioJob>, ParseError> {
    let label = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ParseError {
        file: label.clone(),
        line: 0,
        option: "job file".into(),
        msg: format!("cannot read: {e}"),
    })?;
    parse_job_str_logs_in(&text, &label, kw, log_dir)
}

/// [`parse_job_file_logs_in`] on a job file's text.
pub fn parse_job_str_logs_in(
    text: &str,
    file_label: &str,
    kw: &Keywords,
    log_dir: &Path,
) -> Result<Vec<FioJob>, ParseError> {
    let mut base = Builder::default();
    base.iolog.dir = Some(log_dir.to_path_buf());
    parse_job_str_base(text, file_label, kw, &base)
}

fn parse_job_str_base(
    text: &str,
    file_label: &str,
    kw: &Keywords,
    base: &Builder,
) -> Result<Vec<FioJob>, ParseError> {
    let sections = split_ini(text, file_label, kw)?;
    let no_overrides = Section {
        name: "override".into(),
        line: 0,
        entries: Vec::new(),
    };
    let mut jobs = build_jobs(base, sections, file_label, &no_overrides)?;
    if jobs.is_empty() {
        return Err(no_jobs(file_label));
    }
    number_threads(&mut jobs);
    assign_groups(&mut jobs);
    check_waitees(&jobs)?;
    check_steadystate(&jobs)?;
    setup::size_from_written_files(&mut jobs, false, kw.existing_file_size)?;
    Ok(jobs)
}

/// fio numbers every job of a run, clones included, from 1 in the order
/// it adds them (`thread_number`); the random seeds depend on it.
fn number_threads(jobs: &mut [FioJob]) {
    for (i, j) in jobs.iter_mut().enumerate() {
        j.thread_number = i as u32 + 1;
    }
}

/// td_steadystate_init(): the jobs of a reporting group share one
/// steady-state window, so their options must agree.
fn check_steadystate(jobs: &[FioJob]) -> Result<(), ParseError> {
    for (i, j) in jobs.iter().enumerate() {
        if let Some(o) = jobs[..i]
            .iter()
            .find(|o| o.groupid == j.groupid && o.ss != j.ss)
        {
            let (file, line) = j.source.rsplit_once(':').unwrap_or((&j.source, "0"));
            return Err(perr(file, line.parse().unwrap_or(0), "steadystate", format!(
                "job '{}': steadystate options must be consistent within reporting groups (job '{}' differs)",
                j.name, o.name
            )));
        }
    }
    Ok(())
}

/// fio's wait_for_ok(): the waitee is one job defined before this one.
fn check_waitees(jobs: &[FioJob]) -> Result<(), ParseError> {
    for (i, j) in jobs.iter().enumerate() {
        let Some(w) = j.ctl.wait_for.as_deref().filter(|_| j.jobnum == 0) else {
            continue;
        };
        let n = jobs[..i]
            .iter()
            .filter(|o| o.jobnum == 0 && o.name == w)
            .count();
        if n != 1 {
            let (file, line) = j.source.rsplit_once(':').unwrap_or((&j.source, "0"));
            let msg = if n == 0 {
                format!(
                    "job '{}': waitee job '{w}' unknown (it must come before)",
                    j.name
                )
            } else {
                format!("job '{}': several jobs named '{w}' to wait for", j.name)
            };
            return Err(perr(file, line.parse().unwrap_or(0), "wait_for", msg));
        }
    }
    Ok(())
}

/// fio's groupid (init.c add_job): a job with `stonewall` or `new_group`
/// starts a new group unless the current one has no job yet.
fn assign_groups(jobs: &mut [FioJob]) {
    let mut groupid = 0;
    let mut prev_group_jobs = 0;
    for j in jobs {
        if (j.ctl.stonewall || j.ctl.new_group) && prev_group_jobs > 0 {
            prev_group_jobs = 0;
            groupid += 1;
        }
        j.groupid = groupid;
        prev_group_jobs += 1;
    }
}

fn no_jobs(file: &str) -> ParseError {
    perr(
        file,
        0,
        "[job]",
        "no job sections (only [global] or nothing)",
    )
}

/// Whether fio (as the model takes it) has an option `key`: a job built
/// with it fails, if at all, for any reason but an unknown option.
pub fn is_option(key: &str) -> bool {
    if CMDLINE_IGNORED.contains(&key) || key == "name" {
        return true;
    }
    let args = ["--name=probe".to_string(), format!("--{key}=1")];
    match parse_cmdline(&args) {
        Ok(_) => true,
        Err(e) => !(e.option == key && e.msg.starts_with("unknown or unsupported")),
    }
}

/// fio's command-line form: `--name=a --rw=read ... --name=b ...`. Options
/// before the first `--name` are global (they also apply to the jobs of any
/// job files named). Positional arguments are job files, parsed after the
/// command-line jobs as fio does. `--opt value` is accepted for options that
/// take a value. Errors use file "<command line>" and line = the 1-based
/// argument position.
pub fn parse_cmdline(args: &[String]) -> Result<Vec<FioJob>, ParseError> {
    parse_cmdline_with(args, &Keywords::default())
}

/// [`parse_cmdline`] with the machine's keyword values for the job files.
///
/// Precedence is fio 3.33's (checked against /usr/bin/fio): job options
/// given before or after a job file without a `--name` are global defaults;
/// a job file's `[global]` and job sections override them. The second and
/// later job files start with a stonewall (fio's parse_jobs_ini with
/// stonewall_flag).
pub fn parse_cmdline_with(args: &[String], kw: &Keywords) -> Result<Vec<FioJob>, ParseError> {
    parse_cmdline_overriding(args, kw, &[])
}

/// [`parse_cmdline_with`], then `overrides` (option, value) applied to
/// every job after its own section, job files' included: what a sweep
/// varies wins over the job file (fio's command line only gives defaults).
/// Errors in an override name the file "<override>".
pub fn parse_cmdline_overriding(
    args: &[String],
    kw: &Keywords,
    overrides: &[(String, String)],
) -> Result<Vec<FioJob>, ParseError> {
    const CMDLINE: &str = "<command line>";
    let forced = Section {
        name: "override".into(),
        line: 0,
        entries: overrides
            .iter()
            .enumerate()
            .map(|(i, (k, v))| Entry {
                key: k.clone(),
                val: Some(v.clone()),
                line: i + 1,
            })
            .collect(),
    };
    let mut global = Section {
        name: "global".into(),
        line: 0,
        entries: Vec::new(),
    };
    let mut jobs: Vec<Section> = Vec::new();
    let mut files: Vec<String> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let pos = i + 1;
        let arg = &args[i];
        i += 1;
        let Some(opt) = arg.strip_prefix("--").or_else(|| {
            // fio uses getopt_long_only: a single dash works too.
            arg.strip_prefix('-').filter(|s| !s.is_empty())
        }) else {
            files.push(arg.clone());
            continue;
        };
        let (key, mut val) = match opt.split_once('=') {
            Some((k, v)) => (k.to_string(), Some(v.to_string())),
            None => (opt.to_string(), None),
        };
        // `--opt value`: take the next argument unless it is an option itself.
        if val.is_none() && takes_value(&key) {
            if let Some(v) = args.get(i).filter(|v| !v.starts_with('-')) {
                val = Some(v.clone());
                i += 1;
            }
        }
        if CMDLINE_IGNORED.contains(&key.as_str()) {
            continue;
        }
        if key == "name" {
            let name = val.unwrap_or_default();
            if name.is_empty() {
                return Err(perr(CMDLINE, pos, "name", "empty job name"));
            }
            if name == "global" {
                return Err(perr(
                    CMDLINE,
                    pos,
                    "name",
                    "'global' is not a job name on the command line",
                ));
            }
            jobs.push(Section {
                name,
                line: pos,
                entries: Vec::new(),
            });
            continue;
        }
        let entry = Entry {
            key,
            val,
            line: pos,
        };
        match jobs.last_mut() {
            Some(j) => j.entries.push(entry),
            None => global.entries.push(entry),
        }
    }
    let mut base = Builder::default();
    base.apply_section(&global, CMDLINE)?;
    let mut out = build_jobs(&base, jobs, CMDLINE, &forced)?;
    for (fileno, f) in files.into_iter().enumerate() {
        let text = std::fs::read_to_string(&f).map_err(|e| ParseError {
            file: f.clone(),
            line: 0,
            option: "job file".into(),
            msg: format!("cannot read: {e}"),
        })?;
        let sections = split_ini(&text, &f, kw)?;
        let mut jobs = build_jobs(&base, sections, &f, &forced)?;
        if jobs.is_empty() {
            return Err(no_jobs(&f));
        }
        if fileno > 0 {
            jobs[0].ctl.stonewall = true;
        }
        out.extend(jobs);
    }
    if out.is_empty() {
        return Err(perr(
            CMDLINE,
            0,
            "name",
            "no jobs given (--name=... or a job file)",
        ));
    }
    number_threads(&mut out);
    assign_groups(&mut out);
    check_waitees(&out)?;
    setup::size_from_written_files(&mut out, false, kw.existing_file_size)?;
    Ok(out)
}

mod ini;
pub use ini::expand_vars;
use ini::{perr, split_ini, Entry, Section};

fn build_jobs(
    base: &Builder,
    sections: Vec<Section>,
    file: &str,
    forced: &Section,
) -> Result<Vec<FioJob>, ParseError> {
    let mut global = base.clone();
    let mut out = Vec::new();
    for s in sections {
        if s.name.starts_with("global") {
            // fio: a later [global] adds to the defaults of the jobs after it.
            global.apply_section(&s, file)?;
            continue;
        }
        let mut b = global.clone();
        b.name = Some(s.name.clone());
        b.apply_section(&s, file)?;
        b.apply_section(forced, "<override>")?;
        out.extend(b.finish(file, s.line)?);
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// option table

/// Options that cannot change what the model computes: reporting, logging,
/// CPU placement.
const IGNORED: &[&str] = &[
    "description",
    "per_job_logs",
    "write_bw_log",
    "write_lat_log",
    "write_iops_log",
    "write_hist_log",
    "log_avg_msec",
    "log_hist_msec",
    "log_hist_coarseness",
    "log_max_value",
    "log_offset",
    "log_compression",
    "log_store_compressed",
    "log_unix_epoch",
    "log_alternate_epoch",
    "log_prio",
    "clat_percentiles",
    "lat_percentiles",
    "slat_percentiles",
    "percentile_list",
    "significant_figures",
    "disable_lat",
    "disable_clat",
    "disable_slat",
    "disable_bw_measurement",
    "disable_bw",
    "gtod_reduce",
    "gtod_cpu",
    "unified_rw_reporting",
    "stats",
    "bwavgtime",
    "iopsavgtime",
    "clocksource",
    "cpus_allowed",
    "cpus_allowed_policy",
    "cpumask",
    "numa_cpu_nodes",
    "unit_base",
    "unique_filename",
    "allow_file_create",
    "create_serialize",
    // Only matters when the random map cannot be allocated; foliosim's
    // map always is.
    "softrandommap",
];

/// fio command-line options that are not job options and only shape fio's
/// own output.
pub const CMDLINE_IGNORED: &[&str] = &[
    "output",
    "output-format",
    "minimal",
    "eta",
    "eta-newline",
    "eta-interval",
    "status-interval",
    "terse-version",
    "append-terse",
    "bandwidth-log",
];

/// Flags (fio's FIO_OPT_STR_SET / bool): bare means 1 and does not take the
/// next command-line argument as its value.
const FLAGS: &[&str] = &[
    "time_based",
    "norandommap",
    "group_reporting",
    "direct",
    "buffered",
    "atomic",
    "invalidate",
    "thread",
    "per_job_logs",
    "stats",
    "gtod_reduce",
    "disable_lat",
    "disable_clat",
    "disable_slat",
    "disable_bw_measurement",
    "clat_percentiles",
    "lat_percentiles",
    "slat_percentiles",
    "new_group",
    "stonewall",
    "wait_for_previous",
    "unified_rw_reporting",
    "unique_filename",
    "allow_file_create",
    "create_serialize",
    "create_on_open",
    "unlink",
    "softrandommap",
    "randrepeat",
    "allrandrepeat",
    "bs_unaligned",
    "blocksize_unaligned",
    "minimal",
    "append-terse",
    "eta-newline",
];

/// Whether `--key next` takes `next` as its value (fio's flags do not).
pub fn takes_value(key: &str) -> bool {
    !FLAGS.contains(&key) && !jobctl::FLAGS.contains(&key) && !iolog::FLAGS.contains(&key)
}

mod builder;
use builder::Builder;

/// fio's make_filename(): `$jobname`, `$jobnum`, `$filenum` (matched without
/// regard to case) in `filename_format`, default `$jobname.$jobnum.$filenum`.
fn make_filename(format: Option<&str>, jobname: &str, jobnum: u32, filenum: u32) -> String {
    let Some(fmt) = format.filter(|f| !f.is_empty()) else {
        return format!("{jobname}.{jobnum}.{filenum}");
    };
    let mut s = fmt.to_string();
    for (kw, val) in [
        ("$jobname", jobname.to_string()),
        ("$jobnum", jobnum.to_string()),
        ("$filenum", filenum.to_string()),
    ] {
        while let Some(p) = s.to_ascii_lowercase().find(kw) {
            s.replace_range(p..p + kw.len(), &val);
        }
    }
    s
}

mod values;
use values::*;
pub use values::{parse_size, parse_time_us};

/// Job `[j]` of `options` (key=value lines), for the unit tests of the
/// modules that run jobs.
#[cfg(test)]
pub(crate) fn test_job(options: &str) -> FioJob {
    parse_job_str(&format!("[j]\n{options}"), "t.fio")
        .unwrap()
        .remove(0)
}

#[cfg(test)]
mod tests;
