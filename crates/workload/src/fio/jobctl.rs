//! fio's job-control, file, sync, verify, rate and flow options (options.c,
//! init.c, filesetup.c, backend.c of fio 3.33): what they parse to. How the
//! runner acts on them is in `super::backend` (job control), `crate::jobio`
//! (the I/O stream) and `foliosim::sim::fio` (the kernel side).

use crate::access::splitmix64;
use serde::Serialize;

/// fio's rate_process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum RateProcess {
    Linear,
    Poisson,
}

/// fio's thinktime_blocks_type: count completed or issued I/Os.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ThinktimeBlocksType {
    Complete,
    Issue,
}

/// fio's exit_what: which jobs an exiting `exitall` job terminates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ExitWhat {
    /// The jobs of its group (fio's default).
    Group,
    /// Every job already running.
    Stonewall,
    /// Every job, started or not.
    All,
}

/// fio's file_service_type.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum FileService {
    Random,
    RoundRobin,
    Sequential,
    Zipf(f64),
    Pareto(f64),
    /// normal / gauss: deviation in percent of the file count.
    Normal(f64),
}

/// sync_file_range's flags (SYNC_FILE_RANGE_*).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SyncFileRange {
    pub wait_before: bool,
    pub write: bool,
    pub wait_after: bool,
}

/// One file of a job: resolved name, start offset in it and the bytes of
/// I/O region (fio's f->file_offset and f->io_size). The file is
/// `offset + size` bytes long.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct JobFile {
    pub name: String,
    pub offset: u64,
    pub size: u64,
}

/// The options of this module, resolved for one job.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JobControl {
    /// Bytes per second allowed per direction [read, write] (fio's
    /// rate_bps: `rate`, or `rate_iops` times bs); 0 = unlimited.
    pub rate_bps: [u64; 2],
    /// `rate_min` / `rate_iops_min` as bytes per second; 0 = none.
    pub rate_min_bps: [u64; 2],
    pub rate_process: RateProcess,
    pub rate_ignore_thinktime: bool,
    pub rate_cycle_ms: u64,
    pub thinktime_spin_us: u64,
    pub thinktime_blocks: u64,
    /// thinktime_blocks given explicitly (matters with thinktime_iotime).
    pub thinktime_blocks_set: bool,
    pub thinktime_blocks_type: ThinktimeBlocksType,
    pub thinktime_iotime_us: u64,
    pub stonewall: bool,
    pub new_group: bool,
    pub wait_for: Option<String>,
    pub exitall: bool,
    pub exitall_on_error: bool,
    pub exit_what: ExitWhat,
    /// Resolved start delay in microseconds (a range is drawn per clone).
    pub startdelay_us: u64,
    /// `thread`: the model has one address space for jobs either way.
    pub thread: bool,
    /// fio's open_files: at most this many files open at once.
    pub openfiles: u32,
    pub file_service: FileService,
    /// I/Os on a file before switching (`roundrobin:N`, `random:N`).
    pub file_service_nr: u64,
    pub create_on_open: bool,
    pub create_only: bool,
    pub unlink: bool,
    pub unlink_each_loop: bool,
    /// `fill_device`: without size=, a writing job runs until the device
    /// (or file system) is full (fio's size=-1 ending at ENOSPC).
    pub fill_device: bool,
    /// No size yet: it is the size of the file an earlier job writes
    /// (create_serialize=0 and a job that starts after the others).
    pub size_from_file: bool,
    /// fio's create_serialize: the job's files are set up before any job
    /// runs, in job order (else when the job starts).
    pub create_serialize: bool,
    pub pre_read: bool,
    pub overwrite: bool,
    pub allow_file_create: bool,
    pub file_append: bool,
    pub fallocate: String,
    pub fsync_blocks: u64,
    pub fdatasync_blocks: u64,
    pub sync_file_range: SyncFileRange,
    pub sync_file_range_nr: u64,
    pub fsync_on_close: bool,
    pub write_barrier: u64,
    /// `verify=` other than none: written blocks are read back.
    pub verify: bool,
    pub do_verify: bool,
    pub verify_backlog: u64,
    pub verify_backlog_batch: u64,
    pub verify_only: bool,
    /// Flow weight (0: not in a flow) and its group id, fio's flow/flow_id.
    pub flow: u32,
    pub flow_id: u32,
    pub flow_sleep_us: u64,
}

impl Default for JobControl {
    fn default() -> Self {
        JobControl {
            rate_bps: [0; 2],
            rate_min_bps: [0; 2],
            rate_process: RateProcess::Linear,
            rate_ignore_thinktime: false,
            rate_cycle_ms: 1000,
            thinktime_spin_us: 0,
            thinktime_blocks: 1,
            thinktime_blocks_set: false,
            thinktime_blocks_type: ThinktimeBlocksType::Complete,
            thinktime_iotime_us: 0,
            stonewall: false,
            new_group: false,
            wait_for: None,
            exitall: false,
            exitall_on_error: false,
            exit_what: ExitWhat::Group,
            startdelay_us: 0,
            thread: false,
            openfiles: 0,
            file_service: FileService::RoundRobin,
            file_service_nr: 1,
            create_on_open: false,
            create_only: false,
            unlink: false,
            unlink_each_loop: false,
            fill_device: false,
            size_from_file: false,
            create_serialize: true,
            pre_read: false,
            overwrite: false,
            allow_file_create: true,
            file_append: false,
            fallocate: "native".into(),
            fsync_blocks: 0,
            fdatasync_blocks: 0,
            sync_file_range: SyncFileRange::default(),
            sync_file_range_nr: 0,
            fsync_on_close: false,
            write_barrier: 0,
            verify: false,
            do_verify: true,
            verify_backlog: 0,
            verify_backlog_batch: 0,
            verify_only: false,
            flow: 0,
            flow_id: 0,
            flow_sleep_us: 0,
        }
    }
}

/// The options as parsed, before per-job resolution.
#[derive(Clone, Debug, Default)]
pub(super) struct CtlBuilder {
    pub ctl: JobControl,
    /// `rate` / `rate_iops` / `rate_min` / `rate_iops_min` per direction.
    pub rate: [u64; 2],
    pub rate_iops: [u64; 2],
    pub rate_min: [u64; 2],
    pub rate_iops_min: [u64; 2],
    pub startdelay: (u64, u64),
    pub nrfiles: u32,
    /// filesize=low-high (equal when fixed); 0 = not given.
    pub filesize_range: (u64, u64),
    pub group_reporting: bool,
}

/// Options of this module that are flags (bare means 1; on the command
/// line they take no separate value).
pub(super) const FLAGS: &[&str] = &[
    "stonewall",
    "wait_for_previous",
    "new_group",
    "exitall",
    "exitall_on_error",
    "thread",
    "threads",
    "create_on_open",
    "create_only",
    "create_fsync",
    "unlink",
    "unlink_each_loop",
    "fill_device",
    "fill_fs",
    "pre_read",
    "overwrite",
    "allow_file_create",
    "file_append",
    "end_fsync",
    "fsync_on_close",
    "do_verify",
    "verify_only",
    "verify_fatal",
    "verify_dump",
    "verify_write_sequence",
    "verify_state_save",
    "verify_state_load",
    "experimental_verify",
    "rate_ignore_thinktime",
    "refill_buffers",
    "scramble_buffers",
    "zero_buffers",
    "dedupe_global",
    "verifysort",
];

/// Options that only shape data contents or checksums (buffers, verify
/// headers) or reporting: the page cache sees the same I/O either way.
pub(super) const NO_MODEL_EFFECT: &[&str] = &[
    "buffer_pattern",
    "buffer_compress_percentage",
    "buffer_compress_chunk",
    "refill_buffers",
    "scramble_buffers",
    "zero_buffers",
    "dedupe_percentage",
    "dedupe_mode",
    "dedupe_working_set_percentage",
    "dedupe_global",
    "verify_offset",
    "verify_interval",
    "verify_pattern",
    "verify_fatal",
    "verify_dump",
    // fio 3.38+: whether verify checks the header's write sequence number
    // (a data check, no I/O of its own).
    "verify_write_sequence",
    "verify_async",
    "verify_async_cpus",
    "verify_state_save",
    "verify_state_load",
    "experimental_verify",
    "verifysort",
    "verifysort_nr",
    "create_fsync",
    "create_serialize",
    "flow_watermark",
    "mem",
    "iomem",
    "iomem_align",
    "mem_align",
    "error_dump",
    "block_error_percentiles",
    "log_entries",
];

/// fio's `verify=` values (verify.h's VERIFY_*).
const VERIFY_KINDS: &[&str] = &[
    "0",
    "1",
    "none",
    "md5",
    "crc64",
    "crc32c",
    "crc32c-intel",
    "crc32",
    "crc16",
    "crc7",
    "sha224",
    "sha256",
    "sha384",
    "sha512",
    "sha1",
    "sha3-224",
    "sha3-256",
    "sha3-384",
    "sha3-512",
    "xxhash",
    "meta",
    "pattern",
    "null",
];

fn bool_of(v: Option<&str>) -> Result<bool, String> {
    super::parse_bool(v)
}

fn uint(v: Option<&str>, max: u64) -> Result<u64, String> {
    let v = v.filter(|s| !s.is_empty()).ok_or("needs a value")?;
    super::parse_int(v, 0, max)
}

/// `a,b` per-direction values as fio's FIO_OPT_STR_VAL with off1/off2:
/// one value sets every direction, an empty part leaves it unset (0).
fn per_dir(v: &str, mut one: impl FnMut(&str) -> Result<u64, String>) -> Result<[u64; 2], String> {
    let parts: Vec<&str> = v.split(',').collect();
    if parts.len() > 3 {
        return Err(format!("'{v}': at most read,write,trim values"));
    }
    if parts.len() == 1 {
        let n = one(parts[0])?;
        return Ok([n, n]);
    }
    let mut out = [0; 2];
    for (d, p) in parts.iter().take(2).enumerate() {
        if !p.is_empty() {
            out[d] = one(p)?;
        }
    }
    // The trim part is accepted: trim workloads are refused elsewhere.
    if let Some(t) = parts.get(2).filter(|t| !t.is_empty()) {
        one(t)?;
    }
    Ok(out)
}

/// A `name[:N]` value with a numeric postfix (fio's get_opt_postfix).
fn postfix(v: &str) -> (&str, Option<&str>) {
    match v.split_once(':') {
        Some((a, b)) => (a, Some(b)),
        None => (v, None),
    }
}

/// Applies option `key`; None when `key` is not one of this module's.
pub(super) fn apply(
    b: &mut CtlBuilder,
    key: &str,
    val: Option<&str>,
    kb_base: u64,
) -> Option<Result<(), String>> {
    let c = &mut b.ctl;
    let need = || {
        val.filter(|s| !s.is_empty())
            .ok_or_else(|| "needs a value".to_string())
    };
    let size = |s: &str| super::parse_size(s, kb_base);
    let r: Result<(), String> = (|| {
        match key {
            "rate" => b.rate = per_dir(need()?, size)?,
            "rate_iops" => {
                b.rate_iops = per_dir(need()?, |s| super::parse_int(s, 0, u32::MAX as u64))?
            }
            "rate_min" | "ratemin" => b.rate_min = per_dir(need()?, size)?,
            "rate_iops_min" => {
                b.rate_iops_min = per_dir(need()?, |s| super::parse_int(s, 0, u32::MAX as u64))?
            }
            "rate_process" => {
                c.rate_process = match need()? {
                    "linear" => RateProcess::Linear,
                    "poisson" => RateProcess::Poisson,
                    o => return Err(format!("bad rate_process '{o}' (linear, poisson)")),
                }
            }
            "rate_ignore_thinktime" => c.rate_ignore_thinktime = bool_of(val)?,
            "rate_cycle" | "ratecycle" => c.rate_cycle_ms = uint(val, u32::MAX as u64)?.max(1),
            "thinktime_spin" => c.thinktime_spin_us = super::parse_time_us(need()?, false)?,
            "thinktime_blocks" => {
                c.thinktime_blocks = uint(val, u32::MAX as u64)?;
                c.thinktime_blocks_set = true;
            }
            "thinktime_blocks_type" => {
                c.thinktime_blocks_type = match need()? {
                    "complete" => ThinktimeBlocksType::Complete,
                    "issue" => ThinktimeBlocksType::Issue,
                    o => return Err(format!("bad thinktime_blocks_type '{o}' (complete, issue)")),
                }
            }
            "thinktime_iotime" => c.thinktime_iotime_us = super::parse_time_us(need()?, true)?,
            "stonewall" | "wait_for_previous" => c.stonewall = bool_of(val)?,
            "new_group" => c.new_group = bool_of(val)?,
            "wait_for" => c.wait_for = Some(need()?.to_string()),
            "exitall" => c.exitall = bool_of(val)?,
            "exitall_on_error" => c.exitall_on_error = bool_of(val)?,
            "exit_what" => {
                c.exit_what = match need()? {
                    "group" => ExitWhat::Group,
                    "stonewall" => ExitWhat::Stonewall,
                    "all" => ExitWhat::All,
                    o => return Err(format!("bad exit_what '{o}' (group, stonewall, all)")),
                }
            }
            "startdelay" => {
                let v = need()?;
                // fio: "low-high" draws a delay per job; seconds by default.
                b.startdelay = match v.split_once('-') {
                    Some((lo, hi)) => {
                        let lo = super::parse_time_us(lo, true)?;
                        let hi = super::parse_time_us(hi, true)?;
                        if hi < lo {
                            return Err(format!("'{v}': range end below its start"));
                        }
                        (lo, hi)
                    }
                    None => {
                        let t = super::parse_time_us(v, true)?;
                        (t, t)
                    }
                };
            }
            "thread" | "threads" => c.thread = bool_of(val)?,
            "nrfiles" | "nr_files" => {
                b.nrfiles = uint(val, 1 << 20)? as u32;
                if b.nrfiles == 0 {
                    return Err("nrfiles must be > 0".into());
                }
            }
            "openfiles" => c.openfiles = uint(val, 1 << 20)? as u32,
            "file_service_type" => {
                let v = need()?;
                let (kind, arg) = postfix(v);
                let num = |def: f64| -> Result<f64, String> {
                    match arg {
                        None => Ok(def),
                        Some(a) => a
                            .parse::<f64>()
                            .ok()
                            .filter(|x| x.is_finite())
                            .ok_or_else(|| format!("'{v}': '{a}' is not a number")),
                    }
                };
                let nr = || -> Result<u64, String> {
                    match arg {
                        None => Ok(1),
                        Some(a) => super::parse_int(a, 1, u32::MAX as u64),
                    }
                };
                c.file_service_nr = 1;
                c.file_service = match kind {
                    "random" => {
                        c.file_service_nr = nr()?;
                        FileService::Random
                    }
                    "roundrobin" => {
                        c.file_service_nr = nr()?;
                        FileService::RoundRobin
                    }
                    "sequential" => {
                        c.file_service_nr = nr()?;
                        FileService::Sequential
                    }
                    "zipf" => {
                        let t = num(1.1)?;
                        if t <= 0.0 || t == 1.0 {
                            return Err(format!("'{v}': zipf theta must be > 0 and != 1"));
                        }
                        FileService::Zipf(t)
                    }
                    "pareto" => {
                        let h = num(0.2)?;
                        if h <= 0.0 || h >= 1.0 {
                            return Err(format!("'{v}': pareto h must be in (0, 1)"));
                        }
                        FileService::Pareto(h)
                    }
                    "normal" | "gauss" => {
                        let d = num(0.0)?;
                        if !(0.0..100.0).contains(&d) {
                            return Err(format!("'{v}': deviation must be in [0, 100)"));
                        }
                        FileService::Normal(d)
                    }
                    _ => {
                        return Err(format!(
                            "bad file_service_type '{v}' (random, roundrobin, sequential, zipf, pareto, normal, gauss)"
                        ))
                    }
                };
            }
            "create_on_open" => c.create_on_open = bool_of(val)?,
            "create_only" => c.create_only = bool_of(val)?,
            "unlink" => c.unlink = bool_of(val)?,
            "fill_device" | "fill_fs" => c.fill_device = bool_of(val)?,
            "unlink_each_loop" => c.unlink_each_loop = bool_of(val)?,
            "pre_read" => c.pre_read = bool_of(val)?,
            "overwrite" => c.overwrite = bool_of(val)?,
            "allow_file_create" => c.allow_file_create = bool_of(val)?,
            "file_append" => c.file_append = bool_of(val)?,
            "fallocate" => {
                let v = need()?;
                c.fallocate = match v {
                    "none" | "native" | "posix" | "keep" | "truncate" => v.to_string(),
                    "0" => "none".into(),
                    "1" => "posix".into(),
                    o => {
                        return Err(format!(
                            "bad fallocate '{o}' (none, native, posix, keep, truncate, 0, 1)"
                        ))
                    }
                };
            }
            "fsync" => c.fsync_blocks = uint(val, u32::MAX as u64)?,
            "fdatasync" => c.fdatasync_blocks = uint(val, u32::MAX as u64)?,
            "sync_file_range" => {
                let v = need()?;
                let (flags, nr) = postfix(v);
                let mut s = SyncFileRange::default();
                for f in flags.split(',') {
                    match f {
                        "wait_before" => s.wait_before = true,
                        "write" => s.write = true,
                        "wait_after" => s.wait_after = true,
                        o => {
                            return Err(format!(
                                "bad sync_file_range flag '{o}' (wait_before, write, wait_after)"
                            ))
                        }
                    }
                }
                c.sync_file_range = s;
                c.sync_file_range_nr = match nr {
                    Some(n) => super::parse_int(n, 1, u32::MAX as u64)?,
                    None => 1,
                };
            }
            "fsync_on_close" => c.fsync_on_close = bool_of(val)?,
            "write_barrier" => c.write_barrier = uint(val, u32::MAX as u64)?,
            "verify" => {
                let v = need()?;
                if !VERIFY_KINDS.contains(&v) {
                    return Err(format!("bad verify '{v}' (md5, crc32c, crc64, sha256, xxhash, meta, pattern, null, ...)"));
                }
                c.verify = !matches!(v, "0" | "none");
            }
            "do_verify" => c.do_verify = bool_of(val)?,
            "verify_backlog" => c.verify_backlog = size(need()?)?,
            "verify_backlog_batch" => c.verify_backlog_batch = size(need()?)?,
            "verify_only" => c.verify_only = bool_of(val)?,
            "flow" => {
                let v = need()?;
                // fio 3.33 takes a weight 0..FLOW_MAX_WEIGHT (1000).
                c.flow = super::parse_int(v, 0, 1000)? as u32;
            }
            "flow_id" => c.flow_id = uint(val, u32::MAX as u64)? as u32,
            "flow_sleep" => c.flow_sleep_us = uint(val, u32::MAX as u64)?,
            "group_reporting" => b.group_reporting = bool_of(val)?,
            // rate-submit.c: offload hands I/O to submit threads; the issue
            // times still follow the rate, which is what the model keeps.
            "io_submit_mode" => match need()? {
                "inline" | "offload" => {}
                o => return Err(format!("bad io_submit_mode '{o}' (inline, offload)")),
            },
            // Which I/O and verify errors a job survives. The model's I/O
            // does not fail; the one error it raises, rate_min's EIO, ends
            // the job whatever this says (backend.c do_io() sets it with
            // td_verror() and leaves the loop; only io_u completions go
            // through td_non_fatal_error()).
            "continue_on_error" => match need()? {
                "none" | "read" | "write" | "io" | "verify" | "all" | "0" | "1" => {}
                o => {
                    return Err(format!(
                        "bad continue_on_error '{o}' (none, read, write, io, verify, all, 0, 1)"
                    ))
                }
            },
            // Errnos continue_on_error skips, per read,write,verify (fio's
            // str_ignore_error_cb: names or numbers, ':'-separated); no
            // effect for the same reason.
            "ignore_error" => {
                let v = need()?;
                let groups: Vec<&str> = v.split(',').collect();
                if groups.len() > 3 {
                    return Err(format!("'{v}': at most three lists (read,write,verify)"));
                }
                for e in groups
                    .iter()
                    .flat_map(|g| g.split(':'))
                    .filter(|e| !e.is_empty())
                {
                    let name = e.strip_prefix('E').is_some_and(|r| {
                        !r.is_empty()
                            && r.bytes()
                                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
                    });
                    if !name && e.parse::<u32>().is_err() {
                        return Err(format!("'{v}': '{e}' is not an errno name or number"));
                    }
                }
            }
            k if NO_MODEL_EFFECT.contains(&k) => {}
            _ => return Err(String::new()),
        }
        Ok(())
    })();
    match r {
        Err(e) if e.is_empty() => None,
        r => Some(r),
    }
}

/// A deterministic draw in `[lo, hi]` for one job clone (fio draws start
/// delays and file sizes from per-job random states seeded by randseed).
fn draw(randseed: u64, name: &str, jobnum: u32, what: u64, lo: u64, hi: u64) -> u64 {
    if hi <= lo {
        return lo;
    }
    let mut h = splitmix64(randseed ^ what.rotate_left(32));
    for b in name.bytes() {
        h = splitmix64(h ^ b as u64);
    }
    h = splitmix64(h ^ jobnum as u64);
    let span = hi - lo;
    lo + if span == u64::MAX { h } else { h % (span + 1) }
}

impl super::Builder {
    /// fio's nr_files: the names in `filename`, else `nrfiles`.
    pub(super) fn nr_files(&self) -> u32 {
        match &self.filename {
            Some(f) => split_filenames(f).len().max(1) as u32,
            None => self.ctl.nrfiles.max(1),
        }
    }

    /// The clone's files and their regions, as fio's setup_files(): without
    /// filesize each file gets `size / nr_files` (the first files one block
    /// more when it does not divide); a fixed filesize is every file's
    /// length, a range draws each file's length in it (whole blocks).
    pub(super) fn job_files(
        &self,
        name: &str,
        jobnum: u32,
        size: u64,
        offset: u64,
    ) -> Vec<JobFile> {
        let names: Vec<String> = match &self.filename {
            Some(f) => split_filenames(f),
            None => (0..self.nr_files())
                .map(|i| super::make_filename(self.filename_format.as_deref(), name, jobnum, i))
                .collect(),
        };
        let nr = names.len().max(1) as u64;
        let bs = self.rw_min_bs().max(1);
        let fs = size / nr;
        let mut extra = (size - fs * nr) / bs;
        let (lo, hi) = self.ctl.filesize_range;
        names
            .into_iter()
            .enumerate()
            .map(|(i, n)| {
                let io = if lo == 0 {
                    let mut io = fs;
                    if extra > 0 {
                        extra -= 1;
                        io += bs;
                    }
                    io
                } else {
                    let len = draw(self.randseed, name, jobnum, 0x100 + i as u64, lo, hi);
                    let len = if hi > lo {
                        (len - len % bs).max(lo)
                    } else {
                        len
                    };
                    len.saturating_sub(offset)
                };
                let name = match &self.directory {
                    Some(d) if !n.starts_with('/') => format!("{}/{}", d.trim_end_matches('/'), n),
                    _ => n,
                };
                JobFile {
                    name,
                    offset,
                    size: io,
                }
            })
            .collect()
    }

    /// The clone's start delay: fixed, or drawn from the range.
    pub(super) fn startdelay(&self, name: &str, jobnum: u32) -> u64 {
        let (lo, hi) = self.ctl.startdelay;
        draw(self.randseed, name, jobnum, 0x200, lo, hi)
    }

    /// Checks and derived values of fio's fixup_options / setup_rate.
    pub(super) fn resolve_ctl(
        &self,
        name: &str,
        _size: u64,
    ) -> Result<JobControl, (&'static str, String)> {
        let b = &self.ctl;
        let mut c = b.ctl.clone();
        let any = |a: [u64; 2]| a.iter().any(|&x| x != 0);
        if any(b.rate) && any(b.rate_iops) || any(b.rate_min) && any(b.rate_iops_min) {
            return Err((
                "rate",
                format!("job '{name}': rate and rate_iops are mutually exclusive"),
            ));
        }
        for d in 0..2 {
            if (b.rate[d] != 0 && b.rate[d] < b.rate_min[d])
                || (b.rate_iops[d] != 0 && b.rate_iops[d] < b.rate_iops_min[d])
            {
                return Err((
                    "rate_min",
                    format!("job '{name}': minimum rate exceeds rate"),
                ));
            }
            // fio's setup_rate(): iops times the smallest block size.
            c.rate_bps[d] = if b.rate[d] != 0 {
                b.rate[d]
            } else {
                b.rate_iops[d].saturating_mul(self.rw_min_bs())
            };
            c.rate_min_bps[d] = if b.rate_min[d] != 0 {
                b.rate_min[d]
            } else {
                b.rate_iops_min[d].saturating_mul(self.rw_min_bs())
            };
        }
        if c.rate_process == RateProcess::Poisson && !any(c.rate_bps) {
            return Err((
                "rate_process",
                format!("job '{name}': rate_process=poisson needs rate or rate_iops"),
            ));
        }
        let nr = self.nr_files();
        // fio: openfiles unset or above nrfiles means all files open.
        if c.openfiles == 0 || c.openfiles > nr {
            c.openfiles = nr;
        }
        if c.verify_backlog_batch == 0 {
            c.verify_backlog_batch = c.verify_backlog;
        }
        if c.wait_for.as_deref() == Some(name) {
            return Err((
                "wait_for",
                format!("job '{name}': a job cannot wait for itself"),
            ));
        }
        Ok(c)
    }
}

/// fio's get_next_str(): ':' separates file names; "\:" is a colon inside
/// a name (the backslash is dropped); empty names are skipped.
pub fn split_filenames(v: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = v.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '\\' if chars.peek() == Some(&':') => {
                cur.push(':');
                chars.next();
            }
            ':' => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            _ => cur.push(ch),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The values fio substitutes for `$pagesize`, `$mb_memory` and `$ncpus`
/// (fio_keywords_init): here the modelled machine's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Keywords {
    pub pagesize: u64,
    pub mb_memory: u64,
    pub ncpus: u64,
    /// The size of regular files that exist before the run: fio takes a
    /// job's size from its existing file when no size= is given. None: the
    /// model's runs start with no files, and such a job is refused.
    pub existing_file_size: Option<u64>,
}

impl Default for Keywords {
    /// The model's default machine (MmConfig: 16 GiB, 4 KiB pages) and
    /// one CPU.
    fn default() -> Self {
        Keywords {
            pagesize: 4096,
            mb_memory: 16 << 10,
            ncpus: 1,
            existing_file_size: None,
        }
    }
}

/// fio_keyword_replace(): substitute the keywords; when one was replaced
/// and the value has arithmetic, fio pipes it through `bc` (integer
/// arithmetic, `scale=0`): the same is evaluated here.
pub(super) fn keyword_replace(v: &str, kw: &Keywords) -> Result<String, String> {
    let mut s = v.to_string();
    let mut replaced = false;
    for (word, val) in [
        ("$pagesize", kw.pagesize),
        ("$mb_memory", kw.mb_memory),
        ("$ncpus", kw.ncpus),
    ] {
        while let Some(p) = s.find(word) {
            s.replace_range(p..p + word.len(), &val.to_string());
            replaced = true;
        }
    }
    // bc is not called when the value quotes (fio's bc_calc).
    if !replaced || !s.contains(['+', '-', '*', '/']) || s.contains('\'') {
        return Ok(s);
    }
    let n = eval_arith(s.trim()).map_err(|e| format!("'{v}': {e}"))?;
    Ok(n.to_string())
}

/// Integer + - * / with parentheses, as bc evaluates fio's keyword math.
fn eval_arith(s: &str) -> Result<u64, String> {
    struct P<'a> {
        b: &'a [u8],
        i: usize,
    }
    impl P<'_> {
        fn ws(&mut self) {
            while self.i < self.b.len() && self.b[self.i] == b' ' {
                self.i += 1;
            }
        }
        fn expr(&mut self) -> Result<i128, String> {
            let mut v = self.term()?;
            loop {
                self.ws();
                match self.b.get(self.i) {
                    Some(b'+') => {
                        self.i += 1;
                        v += self.term()?;
                    }
                    Some(b'-') => {
                        self.i += 1;
                        v -= self.term()?;
                    }
                    _ => return Ok(v),
                }
                if v.unsigned_abs() > u64::MAX as u128 {
                    return Err("value too large".into());
                }
            }
        }
        fn term(&mut self) -> Result<i128, String> {
            let mut v = self.atom()?;
            loop {
                self.ws();
                match self.b.get(self.i) {
                    Some(b'*') => {
                        self.i += 1;
                        v = v.checked_mul(self.atom()?).ok_or("value too large")?;
                    }
                    Some(b'/') => {
                        self.i += 1;
                        let d = self.atom()?;
                        if d == 0 {
                            return Err("division by zero".into());
                        }
                        v /= d;
                    }
                    _ => return Ok(v),
                }
                if v.unsigned_abs() > u64::MAX as u128 {
                    return Err("value too large".into());
                }
            }
        }
        fn atom(&mut self) -> Result<i128, String> {
            self.ws();
            if self.b.get(self.i) == Some(&b'(') {
                self.i += 1;
                let v = self.expr()?;
                self.ws();
                if self.b.get(self.i) != Some(&b')') {
                    return Err("missing ')'".into());
                }
                self.i += 1;
                return Ok(v);
            }
            let st = self.i;
            while self.i < self.b.len() && self.b[self.i].is_ascii_digit() {
                self.i += 1;
            }
            if st == self.i {
                return Err("bad arithmetic".into());
            }
            std::str::from_utf8(&self.b[st..self.i])
                .unwrap_or("x")
                .parse::<i128>()
                .map_err(|_| "value too large".to_string())
        }
    }
    let mut p = P {
        b: s.as_bytes(),
        i: 0,
    };
    let v = p.expr()?;
    p.ws();
    if p.i != s.len() {
        return Err("bad arithmetic".into());
    }
    u64::try_from(v).map_err(|_| "negative value".to_string())
}

#[cfg(test)]
mod tests {
    use super::super::{parse_cmdline, parse_job_str, parse_job_str_with, FioJob};
    use super::*;

    fn one(text: &str) -> FioJob {
        let mut v = parse_job_str(text, "t.fio").unwrap();
        assert_eq!(v.len(), 1);
        v.remove(0)
    }

    fn err(text: &str) -> String {
        parse_job_str(text, "t.fio").unwrap_err().to_string()
    }

    #[test]
    fn options_parse_to_their_values() {
        let j = one(
            "[a]\nsize=1m\nrate=1m,2m\nrate_min=100k\nrate_process=poisson\nrate_cycle=500\n\
             thinktime=1ms\nthinktime_spin=200\nthinktime_blocks=8\nthinktime_blocks_type=issue\n\
             thinktime_iotime=2\nexitall\nexit_what=stonewall\nexitall_on_error=1\nstartdelay=2s\n\
             threads=1\nnrfiles=2\nopenfiles=1\nfile_service_type=random:4\nfsync=8\n\
             sync_file_range=wait_before,write:16\nverify=crc32c\nverify_backlog=32\n\
             flow=3\nflow_id=7\nflow_sleep=50\nunlink\npre_read=1\nfallocate=none\n\
             buffer_pattern=0xdeadbeef\nrefill_buffers\ndedupe_percentage=30\ngroup_reporting\n",
        );
        let c = &j.ctl;
        assert_eq!(c.rate_bps, [1 << 20, 2 << 20]);
        assert_eq!(c.rate_min_bps, [100 << 10, 100 << 10]);
        assert_eq!(
            (c.rate_process, c.rate_cycle_ms),
            (RateProcess::Poisson, 500)
        );
        assert_eq!(j.thinktime_us, 1000);
        assert_eq!((c.thinktime_spin_us, c.thinktime_blocks), (200, 8));
        assert_eq!(c.thinktime_blocks_type, ThinktimeBlocksType::Issue);
        assert_eq!(c.thinktime_iotime_us, 2_000_000, "seconds by default");
        assert!(c.exitall && c.exitall_on_error && c.thread && c.unlink && c.pre_read);
        assert_eq!(c.exit_what, ExitWhat::Stonewall);
        assert_eq!(c.startdelay_us, 2_000_000);
        assert_eq!(j.files.len(), 2);
        assert_eq!(
            (c.openfiles, c.file_service, c.file_service_nr),
            (1, FileService::Random, 4)
        );
        assert_eq!(c.fsync_blocks, 8);
        assert_eq!(
            (c.sync_file_range, c.sync_file_range_nr),
            (
                SyncFileRange {
                    wait_before: true,
                    write: true,
                    wait_after: false
                },
                16
            )
        );
        assert!(c.verify && c.do_verify);
        assert_eq!((c.verify_backlog, c.verify_backlog_batch), (32, 32));
        assert_eq!((c.flow, c.flow_id, c.flow_sleep_us), (3, 7, 50));
        assert!(j.group_reporting);
        assert!(!j.invalidate, "pre_read clears invalidate");
        // rate_iops is iops times bs.
        let j = one("[a]\nsize=1m\nbs=8k\nrate_iops=,10\n");
        assert_eq!(j.ctl.rate_bps, [0, 80 << 10]);
    }

    #[test]
    fn groupid_follows_stonewall_and_new_group() {
        let v = parse_job_str(
            "[global]\nsize=1m\n[a]\nstonewall\n[b]\n[c]\nnew_group\nnumjobs=2\n[d]\nstonewall\n[e]\nwait_for_previous\n",
            "t.fio",
        )
        .unwrap();
        let g: Vec<(&str, u32, bool)> = v
            .iter()
            .map(|j| (j.name.as_str(), j.groupid, j.ctl.stonewall))
            .collect();
        assert_eq!(
            g,
            vec![
                ("a", 0, true),
                ("b", 0, false),
                ("c", 1, false),
                ("c", 1, false),
                ("d", 2, true),
                ("e", 3, true)
            ]
        );
        assert!(
            v[2].ctl.new_group && !v[3].ctl.new_group,
            "clones lose new_group"
        );
    }

    #[test]
    fn command_line_options_are_defaults_under_the_job_file() {
        // fio 3.33 (checked with /usr/bin/fio --ioengine=null): "--bs=8k"
        // with a job file is a global default; the file's [global] and
        // sections override it. A second job file starts with a stonewall.
        let dir = std::env::temp_dir().join(format!("foliosim-fio-opts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("p.fio");
        let q = dir.join("q.fio");
        std::fs::write(&p, "[global]\nbs=4k\nsize=1m\n[a]\n[b]\nbs=16k\n").unwrap();
        std::fs::write(&q, "[global]\nsize=1m\n[c]\n[d]\n").unwrap();
        let (ps, qs) = (p.display().to_string(), q.display().to_string());
        for args in [
            vec![ps.clone(), "--bs=8k".into(), qs.clone()],
            vec!["--bs=8k".into(), ps.clone(), qs.clone()],
        ] {
            let v = parse_cmdline(&args).unwrap();
            let got: Vec<(&str, u64, bool, u32)> = v
                .iter()
                .map(|j| (j.name.as_str(), j.bs, j.ctl.stonewall, j.groupid))
                .collect();
            assert_eq!(
                got,
                vec![
                    ("a", 4096, false, 0),
                    ("b", 16384, false, 0),
                    ("c", 8192, true, 1),
                    ("d", 8192, false, 1)
                ]
            );
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn keywords_come_from_the_machine() {
        let kw = Keywords {
            pagesize: 4096,
            mb_memory: 2048,
            ncpus: 3,
            existing_file_size: None,
        };
        let v = parse_job_str_with(
            "[a]\nsize=5*1024*1024*$mb_memory/8 # 5/8 of memory\nbs=$pagesize\nnumjobs=$ncpus\n",
            "t.fio",
            &kw,
        )
        .unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!((v[0].size, v[0].bs), (5 << 30 >> 3 << 1, 4096));
    }

    #[test]
    fn files_names_sizes_and_clones() {
        let j = one("[a]\nfilename=/dev/bsg/0\\:0\nsize=1m\n");
        assert_eq!(j.files.len(), 1);
        assert_eq!(j.filename, "/dev/bsg/0:0");
        let j = one("[a]\nfilename=x:y:/abs/z\ndirectory=/mnt\nsize=96k\n");
        let names: Vec<_> = j.files.iter().map(|f| (f.name.as_str(), f.size)).collect();
        assert_eq!(
            names,
            vec![("/mnt/x", 32768), ("/mnt/y", 32768), ("/abs/z", 32768)]
        );
        // size / nrfiles; fio adds whole blocks of the remainder to the
        // first files, and a remainder below nrfiles bytes is no block.
        let j = one("[a]\nsize=40k\nnrfiles=3\n");
        let sizes: Vec<u64> = j.files.iter().map(|f| f.size).collect();
        assert_eq!(sizes, vec![13653, 13653, 13653]);
        let v = parse_job_str("[a]\nsize=8k\nnrfiles=2\nnumjobs=2\n", "t.fio").unwrap();
        let names: Vec<&str> = v
            .iter()
            .flat_map(|j| j.files.iter().map(|f| f.name.as_str()))
            .collect();
        assert_eq!(names, vec!["a.0.0", "a.0.1", "a.1.0", "a.1.1"]);
        // filesize ranges: whole blocks inside the range, the same each parse.
        let a = one("[a]\nnrfiles=8\nfilesize=16k-64k\n");
        let b = one("[a]\nnrfiles=8\nfilesize=16k-64k\n");
        assert_eq!(a.files, b.files);
        assert!(a
            .files
            .iter()
            .all(|f| (16384..=65536).contains(&f.size) && f.size % 4096 == 0));
        assert!(a.files.iter().any(|f| f.size != a.files[0].size));
        assert_eq!(a.size, a.files.iter().map(|f| f.size).sum::<u64>());
        // startdelay ranges differ between clones, inside the range.
        let v = parse_job_str("[a]\nsize=8k\nnumjobs=4\nstartdelay=1-9\n", "t.fio").unwrap();
        assert!(v
            .iter()
            .all(|j| (1_000_000..=9_000_000).contains(&j.ctl.startdelay_us)));
        assert!(v
            .iter()
            .any(|j| j.ctl.startdelay_us != v[0].ctl.startdelay_us));
    }

    #[test]
    fn bad_values_name_file_line_and_option() {
        for (text, want) in [
            ("[a]\nsize=1m\nrate_process=burst\n", "t.fio:3: rate_process: bad rate_process 'burst' (linear, poisson)"),
            ("[a]\nsize=1m\nio_submit_mode=async\n", "t.fio:3: io_submit_mode: bad io_submit_mode 'async' (inline, offload)"),
            ("[a]\nsize=1m\nexit_what=some\n", "t.fio:3: exit_what: bad exit_what 'some' (group, stonewall, all)"),
            ("[a]\nsize=1m\nfile_service_type=zipf:1\n", "t.fio:3: file_service_type: 'zipf:1': zipf theta must be > 0 and != 1"),
            ("[a]\nsize=1m\nfile_service_type=lru\n", "t.fio:3: file_service_type: bad file_service_type 'lru' (random, roundrobin, sequential, zipf, pareto, normal, gauss)"),
            ("[a]\nsize=1m\nsync_file_range=flush:4\n", "t.fio:3: sync_file_range: bad sync_file_range flag 'flush' (wait_before, write, wait_after)"),
            ("[a]\nsize=1m\nstartdelay=5-2\n", "t.fio:3: startdelay: '5-2': range end below its start"),
            ("[a]\nsize=1m\nflow=2000\n", "t.fio:3: flow: 2000 out of range [0, 1000]"),
            ("[a]\nsize=1m\nthinktime_blocks_type=done\n", "t.fio:3: thinktime_blocks_type: bad thinktime_blocks_type 'done' (complete, issue)"),
            ("[a]\nsize=1m\nrate=1m\nrate_iops=10\n", "t.fio:1: rate: job 'a': rate and rate_iops are mutually exclusive"),
            ("[a]\nsize=1m\nrate_process=poisson\n", "t.fio:1: rate_process: job 'a': rate_process=poisson needs rate or rate_iops"),
            ("[a]\nfilesize=8k-4k\n", "t.fio:2: filesize: '8k-4k': filesize must be > 0 (a range low-high with low <= high)"),
            ("[a]\nsize=1m\nfsync=x\n", "t.fio:3: fsync: bad number 'x'"),
            ("[a]\nsize=1m\nrate=fast\n", "t.fio:3: rate: bad size 'fast'"),
            ("[a]\nsize=1m\nwait_for\n", "t.fio:3: wait_for: needs a value"),
            ("[a]\nsize=1m\n[b]\nsize=1m\nwait_for=c\n", "t.fio:3: wait_for: job 'b': waitee job 'c' unknown (it must come before)"),
            ("[a]\nsize=1m\nwait_for=a\n", "t.fio:1: wait_for: job 'a': a job cannot wait for itself"),
            ("[a]\nsize=1m\nverify=crc99\n", "t.fio:3: verify: bad verify 'crc99' (md5, crc32c, crc64, sha256, xxhash, meta, pattern, null, ...)"),
            ("[a]\nsize=8*$pagesize/0\n", "t.fio:2: size: '8*$pagesize/0': division by zero"),
        ] {
            assert_eq!(err(text), want, "{text}");
        }
    }

    #[test]
    fn filenames_split_on_unescaped_colons() {
        assert_eq!(split_filenames("a:b::c"), vec!["a", "b", "c"]);
        assert_eq!(
            split_filenames("/dev/bsg/0\\:0\\:0\\:0"),
            vec!["/dev/bsg/0:0:0:0"]
        );
        assert_eq!(split_filenames(":x\\:y:z"), vec!["x:y", "z"]);
    }

    #[test]
    fn keywords_and_bc_arithmetic() {
        let kw = Keywords {
            pagesize: 4096,
            mb_memory: 1024,
            ncpus: 4,
            existing_file_size: None,
        };
        assert_eq!(keyword_replace("$pagesize", &kw).unwrap(), "4096");
        assert_eq!(keyword_replace("8*$pagesize", &kw).unwrap(), "32768");
        // page_fault.fio: 5/8 of memory in bytes.
        assert_eq!(
            keyword_replace("5*1024*1024*$mb_memory/8", &kw).unwrap(),
            (5u64 * 1024 * 1024 * 1024 / 8).to_string()
        );
        assert_eq!(keyword_replace("($ncpus+2)*3", &kw).unwrap(), "18");
        // No keyword: no arithmetic (fio leaves "4k-8k" to the option).
        assert_eq!(keyword_replace("4k-8k", &kw).unwrap(), "4k-8k");
        assert!(keyword_replace("$ncpus/0", &kw)
            .unwrap_err()
            .contains("division"));
        assert!(keyword_replace("$ncpus-8", &kw)
            .unwrap_err()
            .contains("negative"));
    }

    #[test]
    fn per_direction_values() {
        let sz = |s: &str| super::super::parse_size(s, 1024);
        assert_eq!(per_dir("1m", sz), Ok([1 << 20, 1 << 20]));
        assert_eq!(per_dir("1m,2m", sz), Ok([1 << 20, 2 << 20]));
        assert_eq!(per_dir(",2m", sz), Ok([0, 2 << 20]));
        assert_eq!(per_dir("300,300,300", sz), Ok([300, 300]));
        assert!(per_dir("1,2,3,4", sz).is_err());
    }
}
