//! fio job files and fio's command-line form, parsed into [`FioJob`]s.
//!
//! Semantics follow fio 3.33, the version Debian ships and the tests run
//! beside (options.c, parse.c, init.c, filesetup.c): option names, aliases
//! and defaults are fio's. Options that cannot change what the model
//! computes (reporting, logging, CPU placement) are accepted and ignored;
//! every other option fio knows but foliosim does not model is refused with
//! an error naming the file, line and option. Job-control options live in
//! `fio/jobctl.rs`, engine checks and device sizes in `fio/setup.rs`.
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
        write!(
            f,
            "{}:{}: {}: {}",
            one_line(&self.file),
            self.line,
            one_line(&self.option),
            one_line(&self.msg)
        )
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

pub use crate::engines::{EngineOpts, IoEngine};
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
    let sections = split_ini(text, file_label, kw)?;
    let no_overrides = Section {
        name: "override".into(),
        line: 0,
        entries: Vec::new(),
    };
    let mut jobs = build_jobs(&Builder::default(), sections, file_label, &no_overrides)?;
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
    !FLAGS.contains(&key) && !jobctl::FLAGS.contains(&key)
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum ZoneMode {
    NotSet,
    None,
    Strided,
    Zbd,
}

/// Options as set so far (global defaults overlaid by the job's own).
#[derive(Clone, Debug)]
struct Builder {
    name: Option<String>,
    filename: Option<String>,
    directory: Option<String>,
    filename_format: Option<String>,
    size: Option<u64>,
    filesize: Option<u64>,
    offset: u64,
    /// fio's `offset_increment`: clone N starts at offset + N * this.
    offset_increment: u64,
    rw: Rw,
    rwmixread: u32,
    /// Per direction (read, write, trim) as fio stores them; 0 = not set.
    bs: [u64; 3],
    min_bs: [u64; 3],
    max_bs: [u64; 3],
    ba: [u64; 3],
    bssplit: [Vec<BsSplit>; 3],
    bs_unaligned: bool,
    random_generator: Option<RandomGenerator>,
    randrepeat: bool,
    randseed_set: bool,
    allrandrepeat: bool,
    zone_split: [Vec<ZoneSplit>; 3],
    percentage_random: [u32; 3],
    rw_seq_nr: u32,
    rw_sequencer: RwSequencer,
    ioengine: IoEngine,
    direct: bool,
    /// `atomic`, with the line it was set on (for the engine checks).
    atomic: (bool, usize),
    iodepth: u32,
    iodepth_batch: u32,
    iodepth_batch_complete_min: u32,
    iodepth_batch_complete_max: u32,
    iodepth_low: u32,
    engine_opts: EngineOpts,
    runtime_us: u64,
    time_based: bool,
    ramp_time_us: u64,
    loops: u64,
    io_size: u64,
    number_ios: u64,
    zonemode: ZoneMode,
    zbd: crate::zbd::ZbdOpts,
    ss: crate::steadystate::SsOpts,
    lat: crate::lat_target::LatOpts,
    /// Sizes given in zones (`Nz`): size, offset, io_size,
    /// offset_increment, zoneskip (fio's size_nz etc.).
    nz: [Option<u64>; 5],
    zonesize: u64,
    zonerange: u64,
    zoneskip: u64,
    norandommap: bool,
    randseed: u64,
    random_distribution: RandomDist,
    fadvise_hint: FadviseHint,
    invalidate: bool,
    thinktime_us: u64,
    rw_seq_add: i64,
    end_fsync: bool,
    /// fio's create_serialize (default 1): files are set up before any
    /// job runs; with 0, each job sets its files up when it starts.
    create_serialize: bool,
    numjobs: u32,
    kb_base: u64,
    ctl: jobctl::CtlBuilder,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            name: None,
            filename: None,
            directory: None,
            filename_format: None,
            size: None,
            filesize: None,
            offset: 0,
            offset_increment: 0,
            rw: Rw::Read,
            rwmixread: 50,
            bs: [4096; 3],
            min_bs: [0; 3],
            max_bs: [0; 3],
            ba: [0; 3],
            bssplit: Default::default(),
            bs_unaligned: false,
            random_generator: None,
            randrepeat: true,
            randseed_set: false,
            allrandrepeat: false,
            zone_split: Default::default(),
            percentage_random: [100; 3],
            rw_seq_nr: 1,
            rw_sequencer: RwSequencer::Sequential,
            ioengine: IoEngine::Psync,
            direct: false,
            atomic: (false, 0),
            iodepth: 1,
            iodepth_batch: 1,
            iodepth_batch_complete_min: 1,
            iodepth_batch_complete_max: 0,
            iodepth_low: 0,
            engine_opts: EngineOpts::default(),
            runtime_us: 0,
            time_based: false,
            ramp_time_us: 0,
            loops: 1,
            io_size: 0,
            number_ios: 0,
            zonemode: ZoneMode::NotSet,
            zbd: Default::default(),
            ss: Default::default(),
            lat: Default::default(),
            nz: [None; 5],
            zonesize: 0,
            zonerange: 0,
            zoneskip: 0,
            norandommap: false,
            randseed: 0x89,
            random_distribution: RandomDist::Random,
            fadvise_hint: FadviseHint::On,
            invalidate: true,
            thinktime_us: 0,
            rw_seq_add: 0,
            end_fsync: false,
            create_serialize: true,
            numjobs: 1,
            kb_base: 1024,
            ctl: jobctl::CtlBuilder::default(),
        }
    }
}

impl Builder {
    fn apply_section(&mut self, s: &Section, file: &str) -> Result<(), ParseError> {
        // fio parses kb_base before the other options of a section (it has
        // a higher parse priority), so sizes in the same section see it.
        for e in s.entries.iter().filter(|e| e.key == "kb_base") {
            self.apply(e, file)?;
        }
        // fio parses an engine's own options only once the engine is
        // loaded (fio_options_parse retries unknown options after
        // ioengine_load), so the section's ioengine goes first.
        for e in s.entries.iter().filter(|e| e.key == "ioengine") {
            self.apply(e, file)?;
        }
        for e in s
            .entries
            .iter()
            .filter(|e| e.key != "kb_base" && e.key != "ioengine")
        {
            self.apply(e, file)?;
        }
        Ok(())
    }

    fn apply(&mut self, e: &Entry, file: &str) -> Result<(), ParseError> {
        let key = e.key.as_str();
        let err = |msg: String| perr(file, e.line, key, msg);
        let val = e.val.as_deref();
        // A value is required for everything but flags.
        let need = || -> Result<&str, ParseError> {
            match val {
                Some(v) if !v.is_empty() => Ok(v),
                _ => Err(perr(file, e.line, key, "needs a value")),
            }
        };
        let kb = self.kb_base;
        let size = |v: &str| parse_size(v, kb).map_err(err);
        // fio's parse_is_zone(): "Nz" counts zones of zonesize.
        let nz_slot = match key {
            "size" => Some(0),
            "offset" | "fileoffset" => Some(1),
            "io_size" | "io_limit" => Some(2),
            "offset_increment" => Some(3),
            "zoneskip" => Some(4),
            _ => None,
        };
        if let (Some(slot), Some(v)) = (nz_slot, val) {
            if let Some(n) = v.strip_suffix(['z', 'Z']) {
                let n = parse_int(n, 0, u32::MAX as u64).map_err(|e| err(format!("'{v}': {e}")))?;
                if key == "size" && n == 0 {
                    return Err(err("size must be > 0".into()));
                }
                self.nz[slot] = Some(n);
                return Ok(());
            }
            self.nz[slot] = None;
        }
        match key {
            "name" => self.name = Some(need()?.to_string()),
            "filename" => {
                let v = need()?;
                if split_filenames(v).is_empty() {
                    return Err(err(format!("'{v}': no file name")));
                }
                self.filename = Some(v.to_string());
            }
            "directory" => {
                let v = need()?;
                if v.contains(':') {
                    return Err(err(format!(
                        "'{v}': several directories (':') are not supported"
                    )));
                }
                self.directory = Some(v.to_string());
            }
            "filename_format" => {
                let v = need()?;
                let v = v.trim_matches(|c| c == '\'' || c == '"');
                if v.to_ascii_lowercase().contains("$clientuid") {
                    return Err(err("$clientuid is not supported".into()));
                }
                self.filename_format = Some(v.to_string());
            }
            "size" => {
                let v = size(need()?)?;
                if v == 0 {
                    return Err(err("size must be > 0".into()));
                }
                self.size = Some(v);
            }
            "filesize" => {
                let v = need()?;
                // fio: "low-high" (or "low:high") draws each file's size.
                let (lo, hi) = match v.split_once([':', '-']) {
                    Some((a, b)) => (size(a)?, size(b)?),
                    None => {
                        let n = size(v)?;
                        (n, n)
                    }
                };
                if lo == 0 || hi < lo {
                    return Err(err(format!(
                        "'{v}': filesize must be > 0 (a range low-high with low <= high)"
                    )));
                }
                self.filesize = Some(lo);
                self.ctl.filesize_range = (lo, hi);
            }
            "offset" | "fileoffset" => self.offset = size(need()?)?,
            // filesetup.c get_start_offset(): clone N (fio's subjob_number,
            // the `$jobnum` of filename_format) starts N increments further.
            "offset_increment" => self.offset_increment = size(need()?)?,
            // fio aligns the start offset (to this, else the smallest bs)
            // only when offset or offset_increment is a percentage, which
            // foliosim refuses; a byte offset is used as given.
            "offset_align" => {
                size(need()?)?;
            }
            "rw" | "readwrite" => {
                let v = need()?;
                // fio's str_rw_cb(): the postfix of a random rw is an I/O
                // count (atoi), of a sequential one a signed byte offset.
                let (base, post) = match v.split_once(':') {
                    Some((b, a)) => (b, Some(a)),
                    None => (v, None),
                };
                self.rw = parse_rw(base).map_err(err)?;
                self.rw_seq_add = 0;
                self.rw_seq_nr = 1;
                if let Some(a) = post {
                    let bad = |e: String| err(format!("'{v}': bad ':{a}' modifier: {e}"));
                    if self.rw.is_random() {
                        self.rw_seq_nr = parse_int(a, 0, u32::MAX as u64).map_err(bad)? as u32;
                    } else {
                        let (neg, mag) = match a.strip_prefix('-') {
                            Some(m) => (true, m),
                            None => (false, a),
                        };
                        let n = parse_size(mag, kb).map_err(bad)?;
                        let n = i64::try_from(n).map_err(|_| bad("too large".into()))?;
                        self.rw_seq_add = if neg { -n } else { n };
                    }
                }
            }
            "rw_sequencer" => {
                self.rw_sequencer = match need()? {
                    "sequential" => RwSequencer::Sequential,
                    "identical" => RwSequencer::Identical,
                    other => {
                        return Err(err(format!(
                            "bad rw_sequencer '{other}' (sequential or identical)"
                        )))
                    }
                }
            }
            "end_fsync" => self.end_fsync = parse_bool(val).map_err(err)?,
            "create_serialize" => self.create_serialize = parse_bool(val).map_err(err)?,
            "rwmixread" => self.rwmixread = parse_int(need()?, 0, 100).map_err(err)? as u32,
            "rwmixwrite" => self.rwmixread = 100 - parse_int(need()?, 0, 100).map_err(err)? as u32,
            "bs" | "blocksize" => {
                let v = need()?;
                let vals = parse_per_ddir(v, kb).map_err(err)?;
                store_per_ddir(&mut self.bs, vals, "bs").map_err(err)?;
            }
            "ba" | "blockalign" => {
                let v = need()?;
                let vals = parse_per_ddir(v, kb).map_err(err)?;
                store_per_ddir(&mut self.ba, vals, "ba").map_err(err)?;
            }
            "bsrange" | "blocksize_range" => {
                let v = need()?;
                let ranges = parse_bsrange(v, kb).map_err(err)?;
                for (d, r) in ranges.iter().enumerate() {
                    if let Some((lo, hi)) = r {
                        self.min_bs[d] = *lo;
                        self.max_bs[d] = *hi;
                    }
                }
            }
            "bssplit" => {
                let v = need()?;
                for (d, part) in split_ddir_parts(v.trim()).into_iter().enumerate() {
                    if let Some(list) = parse_bssplit(part, kb).map_err(err)? {
                        self.min_bs[d] = list.iter().map(|b| b.bs).min().unwrap_or(0);
                        self.max_bs[d] = list.iter().map(|b| b.bs).max().unwrap_or(0);
                        self.bssplit[d] = list;
                    }
                }
            }
            "bs_unaligned" | "blocksize_unaligned" => {
                self.bs_unaligned = parse_bool(val).map_err(err)?
            }
            "random_generator" => {
                self.random_generator = Some(match need()? {
                    "tausworthe" => RandomGenerator::Tausworthe,
                    "lfsr" => RandomGenerator::Lfsr,
                    "tausworthe64" => RandomGenerator::Tausworthe64,
                    other => {
                        return Err(err(format!(
                            "bad random_generator '{other}' (tausworthe, lfsr, tausworthe64)"
                        )))
                    }
                })
            }
            "percentage_random" => {
                let vals = parse_per_ddir_with(need()?, |s| parse_int(s, 0, 100).map(|n| n as u32))
                    .map_err(err)?;
                store_per_ddir(&mut self.percentage_random, vals, "").map_err(err)?;
            }
            "allrandrepeat" => self.allrandrepeat = parse_bool(val).map_err(err)?,
            "ioengine" => {
                let v = need()?;
                // The GPU engines run as psync: their host-side I/O is one
                // pread/pwrite (posix) or one O_DIRECT DMA (cuFile/hipFile)
                // per I/O; the GPU copies are outside the model.
                self.engine_opts.gpu = crate::engines::GpuIo::parse(v);
                self.ioengine = match self.engine_opts.gpu {
                    Some(_) => IoEngine::Psync,
                    None => IoEngine::parse(v).map_err(err)?,
                };
            }
            "iodepth" => self.iodepth = parse_int(need()?, 1, 1 << 20).map_err(err)? as u32,
            "iodepth_batch" | "iodepth_batch_submit" => {
                self.iodepth_batch = parse_int(need()?, 0, 1 << 20).map_err(err)? as u32
            }
            "iodepth_batch_complete_min" | "iodepth_batch_complete" => {
                self.iodepth_batch_complete_min =
                    parse_int(need()?, 0, 1 << 20).map_err(err)? as u32
            }
            "iodepth_batch_complete_max" => {
                self.iodepth_batch_complete_max =
                    parse_int(need()?, 0, 1 << 20).map_err(err)? as u32
            }
            "iodepth_low" => self.iodepth_low = parse_int(need()?, 0, 1 << 20).map_err(err)? as u32,
            // Offload moves submission to fio's own worker threads: the
            // kernel sees the same I/O.
            "io_submit_mode" => match need()? {
                "inline" | "offload" => {}
                o => return Err(err(format!("bad io_submit_mode '{o}' (inline, offload)"))),
            },
            "direct" => self.direct = parse_bool(val).map_err(err)?,
            "buffered" => self.direct = !parse_bool(val).map_err(err)?,
            // RWF_ATOMIC writes (torn-write protection): checked against
            // the engine and direct= in check_engine; no model effect.
            "atomic" => self.atomic = (parse_bool(val).map_err(err)?, e.line),
            "runtime" | "timeout" => self.runtime_us = parse_time_us(need()?, true).map_err(err)?,
            "time_based" => self.time_based = parse_bool(val).map_err(err)?,
            "ramp_time" => self.ramp_time_us = parse_time_us(need()?, true).map_err(err)?,
            "loops" => self.loops = parse_int(need()?, 1, u32::MAX as u64).map_err(err)?,
            "io_size" | "io_limit" => self.io_size = size(need()?)?,
            "number_ios" => self.number_ios = size(need()?)?,
            "zonemode" => {
                self.zonemode = match need()? {
                    "none" => ZoneMode::None,
                    "strided" => ZoneMode::Strided,
                    "zbd" => ZoneMode::Zbd,
                    other => {
                        return Err(err(format!(
                            "unsupported zonemode '{other}' (none, strided or zbd)"
                        )))
                    }
                }
            }
            "zonesize" => self.zonesize = size(need()?)?,
            "zonerange" => self.zonerange = size(need()?)?,
            "zoneskip" => self.zoneskip = size(need()?)?,
            "norandommap" => self.norandommap = parse_bool(val).map_err(err)?,
            "randseed" => {
                self.randseed = size(need()?)?;
                self.randseed_set = true;
            }
            "randrepeat" => self.randrepeat = parse_bool(val).map_err(err)?,
            "random_distribution" => {
                let v = need()?;
                if v.contains(',') {
                    // fio 3.33 matches the distribution's name up to the
                    // first ',' and so fails per-direction values.
                    return Err(err(format!(
                        "'{v}': per-direction (',') distributions fail to parse in fio 3.33"
                    )));
                }
                self.random_distribution = parse_random_distribution(v).map_err(err)?;
                self.zone_split = Default::default();
                if let Some(rest) = v.strip_prefix("zoned_abs:") {
                    self.zone_split = parse_zoned(rest, true, kb).map_err(err)?;
                } else if let Some(rest) = v.strip_prefix("zoned:") {
                    self.zone_split = parse_zoned(rest, false, kb).map_err(err)?;
                }
            }
            "fadvise_hint" => {
                self.fadvise_hint = match need()? {
                    "0" => FadviseHint::Off,
                    "1" => FadviseHint::On,
                    "sequential" => FadviseHint::Sequential,
                    "random" => FadviseHint::Random,
                    other => {
                        return Err(err(format!(
                            "unsupported fadvise_hint '{other}' (0, 1, sequential, random)"
                        )))
                    }
                }
            }
            "invalidate" => self.invalidate = parse_bool(val).map_err(err)?,
            "thinktime" => self.thinktime_us = parse_time_us(need()?, false).map_err(err)?,
            "numjobs" => self.numjobs = parse_int(need()?, 1, 1 << 20).map_err(err)? as u32,
            "kb_base" => {
                self.kb_base = match need()? {
                    "1024" => 1024,
                    "1000" => 1000,
                    other => return Err(err(format!("bad kb_base '{other}' (1024 or 1000)"))),
                }
            }
            // steadystate.c: the window and criterion ([`crate::steadystate`]).
            k if crate::lat_target::option(&mut self.lat, k, val).is_some() => {
                crate::lat_target::option(&mut self.lat, k, val)
                    .unwrap_or(Ok(()))
                    .map_err(err)?
            }
            k if crate::steadystate::option(&mut self.ss, k, val).is_some() => {
                crate::steadystate::option(&mut self.ss, k, val)
                    .unwrap_or(Ok(()))
                    .map_err(err)?
            }
            // ioprio_set() for the job (and, in libaio/io_uring, cmdprio*
            // per I/O): the model's device has no I/O scheduler to order
            // by priority, so these change nothing it computes.
            "prio" => {
                parse_int(need()?, 0, 7).map_err(err)?;
            }
            "prioclass" => {
                parse_int(need()?, 0, 3).map_err(err)?;
            }
            // Where fio's I/O buffers live (libnuma, numa_set_membind etc.):
            // placement only, like cpus_allowed; the model has one node.
            // The mode's rules are fio's str_numa_mpol_cb().
            "numa_mem_policy" => {
                let v = need()?;
                let (mode, nodes) = match v.split_once(':') {
                    Some((m, n)) => (m, Some(n)),
                    None => (v, None),
                };
                let bad = match (mode, nodes) {
                    ("prefer", Some(n))
                        if n.is_empty() || !n.bytes().all(|c| c.is_ascii_digit()) =>
                    {
                        Some("one node only for 'prefer'")
                    }
                    ("prefer", None) => Some("one node is needed for 'prefer'"),
                    ("local" | "default", Some(_)) => Some("no nodelist for 'local' or 'default'"),
                    ("bind", None) => Some("a nodelist is needed for 'bind'"),
                    ("prefer" | "bind" | "interleave" | "local" | "default", _) => None,
                    _ => Some("memory policy should be: default, prefer, bind, interleave, local"),
                };
                if let Some(m) = bad {
                    return Err(err(format!("'{v}': {m}")));
                }
            }
            k if IGNORED.contains(&k) => {}
            k if crate::zbd::option(&mut self.zbd, k, val, kb).is_some() => {
                crate::zbd::option(&mut self.zbd, k, val, kb)
                    .unwrap_or(Ok(()))
                    .map_err(err)?
            }
            k if self
                .engine_opts
                .gpu
                .is_some_and(|mut g| g.option(k, val).is_some()) =>
            {
                if let Some(g) = self.engine_opts.gpu.as_mut() {
                    g.option(k, val).unwrap_or(Ok(())).map_err(err)?;
                }
            }
            k => {
                match crate::engines::engine_option(self.ioengine, &mut self.engine_opts, k, val) {
                    Some(r) => r.map_err(err)?,
                    None => match jobctl::apply(&mut self.ctl, k, val, kb) {
                        Some(r) => r.map_err(err)?,
                        None => return Err(err("unknown or unsupported fio option".into())),
                    },
                }
            }
        }
        Ok(())
    }

    /// fio's td_min_bs(): the smallest block size of any direction, ranges
    /// and splits included.
    fn rw_min_bs(&self) -> u64 {
        (0..3)
            .map(|d| {
                if self.min_bs[d] == 0 {
                    self.bs[d]
                } else {
                    self.min_bs[d]
                }
            })
            .min()
            .unwrap_or(4096)
    }

    /// Sizes given in zones become bytes first (fio does it once the
    /// zone size is known, zbd_recalc_options_with_zone_granularity()).
    fn finish(&self, file: &str, line: usize) -> Result<Vec<FioJob>, ParseError> {
        if self.nz.iter().all(|n| n.is_none()) {
            return self.finish_bytes(file, line);
        }
        let zs = self.zonesize;
        if zs == 0 {
            let name = self.name.clone().unwrap_or_default();
            return Err(perr(
                file,
                line,
                "zonesize",
                format!("job '{name}': a size in zones ('z') needs zonesize"),
            ));
        }
        let mut b = self.clone();
        let bytes = |n: Option<u64>| n.map(|n| n.saturating_mul(zs));
        if let Some(v) = bytes(self.nz[0]) {
            b.size = Some(v);
        }
        b.offset = bytes(self.nz[1]).unwrap_or(b.offset);
        b.io_size = bytes(self.nz[2]).unwrap_or(b.io_size);
        b.offset_increment = bytes(self.nz[3]).unwrap_or(b.offset_increment);
        b.zoneskip = bytes(self.nz[4]).unwrap_or(b.zoneskip);
        b.nz = [None; 5];
        b.finish_bytes(file, line)
    }

    fn finish_bytes(&self, file: &str, line: usize) -> Result<Vec<FioJob>, ParseError> {
        let name = self.name.clone().unwrap_or_default();
        let herr = |opt: &str, msg: String| perr(file, line, opt, msg);
        let size = match (self.size, self.filesize) {
            (Some(s), _) => s,
            (None, Some(fs)) => {
                // fio: without size=, the job does every file's region.
                let nr = self.nr_files() as u64;
                if fs <= self.offset {
                    return Err(herr(
                        "filesize",
                        format!(
                            "job '{name}': filesize {fs} is not past offset {}",
                            self.offset
                        ),
                    ));
                }
                (fs - self.offset).saturating_mul(nr)
            }
            // A block device without size= is as big as the device
            // (fio's real_file_size); the machine's --disk-size fills it in.
            (None, None) if self.is_block_device() => 0,
            // fill_device (init.c fixup_options: size -1, the job ends at
            // ENOSPC): writes up to the capacity, which the machine's
            // --disk-size gives for a file system as for a device.
            (None, None) if self.ctl.ctl.fill_device && self.rw.has_writes() => 0,
            // fio takes the size of an existing file: one an earlier job
            // of the run sets up or writes (size_from_written_files).
            (None, None) if self.ioengine != IoEngine::CpuIo => 0,
            // cpuio does no I/O: fio needs no size for it.
            (None, None) if self.ioengine == IoEngine::CpuIo => {
                self.bs.iter().copied().max().unwrap_or(4096)
            }
            (None, None) => {
                return Err(herr(
                    "size",
                    // fio takes an existing file's size here (and refuses the
                    // job, with this message, when there is none); the
                    // model's runs start with no files.
                    format!("job '{name}': you need to specify size= (or filesize=): the model has no existing file to take the size from (give one with --existing-file-size)"),
                ));
            }
        };
        let size_from_file = size == 0
            && !self.is_block_device()
            && !(self.ctl.ctl.fill_device && self.rw.has_writes());
        let size_from_device = size == 0 && !size_from_file;
        self.check_engine(file, line, &name)?;
        let last_offset = u64::from(self.numjobs - 1)
            .checked_mul(self.offset_increment)
            .and_then(|i| i.checked_add(self.offset));
        if last_offset.and_then(|o| o.checked_add(size)).is_none() {
            return Err(herr(
                "offset",
                format!("job '{name}': offset + offset_increment * (numjobs - 1) + size overflows"),
            ));
        }
        // fio's fixup_options(): a range or split overrides bs; random
        // offsets align to ba (random jobs only, else min_bs); any ba other
        // than min_bs, and any non-uniform distribution, turn the map off.
        let random = self.rw.is_random();
        let mut min_bs = [0u64; 3];
        let mut max_bs = [0u64; 3];
        let mut ba = [0u64; 3];
        for d in 0..3 {
            min_bs[d] = if self.min_bs[d] == 0 {
                self.bs[d]
            } else {
                self.min_bs[d]
            };
            max_bs[d] = if self.max_bs[d] == 0 {
                self.bs[d]
            } else {
                self.max_bs[d]
            };
            ba[d] = if self.ba[d] == 0 || !random {
                min_bs[d]
            } else {
                self.ba[d]
            };
        }
        let rw_min_bs = min_bs.iter().copied().min().unwrap_or(4096);
        let t = self.rw.is_trim() as usize;
        let norandommap =
            self.norandommap || self.random_distribution != RandomDist::Random || ba != min_bs;
        if size < rw_min_bs && size != 0 {
            return Err(herr(
                "size",
                format!("job '{name}': size {size} is smaller than bs {rw_min_bs}"),
            ));
        }
        let strided = match self.zonemode {
            ZoneMode::None if self.zonesize != 0 => {
                return Err(herr(
                    "zonesize",
                    format!("job '{name}': zonemode=none and zonesize are not compatible"),
                ))
            }
            ZoneMode::None => false,
            ZoneMode::Strided if self.zonesize == 0 => {
                return Err(herr(
                    "zonesize",
                    format!("job '{name}': zonesize must be given with zonemode=strided"),
                ))
            }
            ZoneMode::Strided => true,
            ZoneMode::Zbd if self.zonesize == 0 => {
                return Err(herr(
                    "zonesize",
                    format!("job '{name}': zonemode=zbd on a regular file or a device that is not zoned needs zonesize (fio emulates the zones)"),
                ))
            }
            ZoneMode::Zbd => false,
            // fio: a zonesize without zonemode means strided.
            ZoneMode::NotSet => self.zonesize != 0,
        };
        let zonerange = if strided && self.zonerange == 0 {
            self.zonesize
        } else {
            self.zonerange
        };
        if strided && self.rw.is_random() && zonerange < rw_min_bs {
            return Err(herr(
                "zonerange",
                format!("job '{name}': zonerange {zonerange} is smaller than bs {rw_min_bs}"),
            ));
        }
        if random && self.random_distribution == RandomDist::ZonedAbs {
            // fio stops the job at its first I/O with "zoned_abs sizes
            // exceed file size"; say so up front.
            let span = if strided { zonerange } else { size };
            for d in 0..2 {
                let total: u64 = self.zone_split[d].iter().map(|z| z.size).sum();
                let lastb = span.saturating_sub(min_bs[d].saturating_sub(ba[d])) / ba[d];
                if total / ba[d] > lastb {
                    return Err(herr(
                        "random_distribution",
                        format!("job '{name}': zoned_abs sizes ({total}) exceed the file size"),
                    ));
                }
            }
        }
        let ctl = self.resolve_ctl(&name, size).map_err(|(o, m)| herr(o, m))?;
        let mut out = Vec::with_capacity(self.numjobs as usize);
        for clone in 0..self.numjobs {
            // init.c add_job() adds the clones after the parent counting
            // down: threads N, N+1, ... get subjob_number 0, numjobs-1,
            // ..., 1; that number is `$jobnum` in file names and the
            // offset_increment multiplier (checked with fio 3.33).
            let jobnum = if clone == 0 { 0 } else { self.numjobs - clone };
            // Cannot overflow: checked above for the last clone.
            let offset = self.offset + u64::from(jobnum) * self.offset_increment;
            if let (None, Some(fs)) = (self.size, self.filesize) {
                if fs <= offset {
                    return Err(herr(
                        "offset_increment",
                        format!("job '{name}': clone {jobnum} starts at {offset}, not before filesize {fs}"),
                    ));
                }
            }
            let files = self.job_files(&name, jobnum, size, offset);
            let filename = files[0].name.clone();
            // Without size=, a filesize range gives the clone its own total.
            let size = match self.size {
                Some(s) => s,
                None => files.iter().map(|f| f.size).sum(),
            };
            let mut ctl = ctl.clone();
            ctl.size_from_file = size_from_file;
            ctl.create_serialize = self.create_serialize;
            ctl.startdelay_us = self.startdelay(&name, jobnum);
            if clone > 0 {
                // fio clears these for the clones of a job (add_job).
                ctl.stonewall = false;
                ctl.new_group = false;
            }
            out.push(FioJob {
                name: name.clone(),
                filename,
                size,
                offset,
                rw: self.rw,
                rwmixread: self.rwmixread,
                bs: rw_min_bs,
                // A trim job's sizes are the trim direction's, kept in the
                // write slot (the generator draws its one direction there).
                min_bs: [min_bs[0], min_bs[1 + t]],
                max_bs: [max_bs[0], max_bs[1 + t]],
                ba: [ba[0], ba[1 + t]],
                bssplit: [self.bssplit[0].clone(), self.bssplit[1 + t].clone()],
                bs_unaligned: self.bs_unaligned,
                random_generator: self.random_generator.unwrap_or(RandomGenerator::Tausworthe),
                random_generator_set: self.random_generator.is_some(),
                randrepeat: self.randrepeat,
                randseed_set: self.randseed_set,
                allrandrepeat: self.allrandrepeat,
                zone_split: [self.zone_split[0].clone(), self.zone_split[1].clone()],
                percentage_random: [self.percentage_random[0], self.percentage_random[1]],
                rw_seq_nr: self.rw_seq_nr,
                rw_sequencer: self.rw_sequencer,
                thread_number: 0,
                ioengine: self.ioengine,
                direct: self.direct,
                iodepth: self.depths().0,
                iodepth_batch: self.depths().1,
                iodepth_batch_complete_min: self.depths().2,
                iodepth_batch_complete_max: self.depths().3,
                iodepth_low: self.depths().4,
                engine_opts: self.engine_opts.clone(),
                nrfiles: self.nr_files(),
                unlink: self.ctl.ctl.unlink,
                size_from_device,
                runtime_ns: (self.runtime_us > 0).then(|| self.runtime_us.saturating_mul(1000)),
                // fio's fixup_options: time_based needs a runtime, and is
                // dropped without one.
                time_based: self.time_based && self.runtime_us > 0,
                ramp_time_ns: self.ramp_time_us.saturating_mul(1000),
                loops: self.loops,
                io_size: (self.io_size > 0).then_some(self.io_size),
                number_ios: (self.number_ios > 0).then_some(self.number_ios),
                zonemode_strided: strided,
                ss: (self.ss.dur > 0).then_some(self.ss),
                lat_target: (self.lat.target_ns > 0).then_some(self.lat),
                zbd: (self.zonemode == ZoneMode::Zbd).then(|| crate::zbd::ZbdOpts {
                    zone_size: self.zonesize,
                    ..self.zbd.clone()
                }),
                zonesize: if strided { self.zonesize } else { 0 },
                zonerange: if strided { zonerange } else { 0 },
                zoneskip: if strided { self.zoneskip } else { 0 },
                norandommap,
                randseed: self.randseed,
                random_distribution: self.random_distribution,
                fadvise_hint: self.fadvise_hint,
                // fio's fixup_options: pre_read turns invalidate off.
                invalidate: self.invalidate && !self.ctl.ctl.pre_read,
                thinktime_us: self.thinktime_us,
                rw_seq_add: self.rw_seq_add,
                end_fsync: self.end_fsync,
                numjobs: 1,
                jobnum,
                source: format!("{file}:{line}"),
                groupid: 0,
                group_reporting: self.ctl.group_reporting,
                files,
                ctl,
            });
        }
        Ok(out)
    }
}

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

#[cfg(test)]
mod tests;
