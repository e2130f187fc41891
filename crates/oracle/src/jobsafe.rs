//! What of a fio job file the oracle lets fio run as root on the real host.
//!
//! The oracle never hands a user's job file to fio. [`sanitize`] reads it by
//! fio 3.33's ini rules (init.c `__parse_jobs_ini`, parse.c
//! `strip_blank_end`, options.c `fio_option_dup_subs`), checks every option
//! against an allowlist of options that only shape I/O on files in fio's
//! working directory, and writes a canonical job file of its own: the
//! allowed `key=value` lines, environment variables already expanded, no
//! comments. fio runs that file with the case's scratch directory as its
//! working directory and no user-supplied arguments. Anything else is
//! refused with one line naming the file, line and option: options that run
//! commands or load code (exec_prerun, ioengine=exec or external:, ...),
//! that write or read paths of their own (logs, write_iolog, pid files,
//! include),
//! that change host settings (ioscheduler, cgroup, uid, nice, ...), paths
//! that leave the working directory (absolute, `..`), and every option not
//! on the list ("not allowed on the real machine by the oracle").
//!
//! [`check_tree`] is the second half: just before fio runs, nothing under
//! the case's working directory may be a symlink or a device/special file
//! (fio follows symlinks and opens devices).
//!
//! `read_iolog=LOG` (fio's iolog v2/v3 replay) is allowed where LOG is a
//! relative path, without `..`, of a plain file beside the job file
//! ([`replay`]): the oracle copies it to its scratch directory, parses the
//! copy with the model's own iolog parser and refuses a log that names a
//! file outside fio's working directory, then lays out the files the log
//! names (fio lays out none for a replay) before the cold-cache start.

use foliosim_workload::fio::ParseError;
use std::fs;
use std::path::Path;

/// The job file fio will see, and the paths it names (for [`check_tree`]'s
/// messages).
#[derive(Clone, Debug, PartialEq)]
pub struct SanitizedJob {
    /// The canonical job file.
    pub text: String,
    /// Every `filename`/`directory`/`filename_format` part, by line.
    pub paths: Vec<JobPath>,
    /// The first job section's line (fio names files after a job that has no
    /// `filename`).
    pub first_section_line: usize,
    /// Every `read_iolog` part, by line: a log beside the job file, which
    /// the oracle copies to its scratch directory ([`replay`]).
    pub iologs: Vec<JobPath>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct JobPath {
    pub line: usize,
    pub option: String,
    pub path: String,
}

/// Options that only shape the workload (sizes, patterns, timing, queueing,
/// reporting) and touch nothing but the job's own files. Checked against
/// fio 3.33's options.c and the option tables of the allowed engines.
const ALLOWED: &[&str] = &[
    "description",
    "wait_for",
    "unique_filename",
    "lockfile",
    "rw",
    "readwrite",
    "rw_sequencer",
    "iodepth",
    "iodepth_batch",
    "iodepth_batch_submit",
    "iodepth_batch_complete_min",
    "iodepth_batch_complete",
    "iodepth_batch_complete_max",
    "iodepth_low",
    "serialize_overlap",
    "io_submit_mode",
    "size",
    "io_size",
    "io_limit",
    "filesize",
    "file_append",
    "offset",
    "fileoffset",
    "offset_align",
    "offset_increment",
    "number_ios",
    "bs",
    "blocksize",
    "ba",
    "blockalign",
    "bsrange",
    "blocksize_range",
    "bssplit",
    "bs_unaligned",
    "blocksize_unaligned",
    "bs_is_seq_rand",
    "randrepeat",
    "randseed",
    "norandommap",
    "softrandommap",
    "random_generator",
    "random_distribution",
    "percentage_random",
    "percentage_sequential",
    "allrandrepeat",
    "nrfiles",
    "nr_files",
    "openfiles",
    "file_service_type",
    "fallocate",
    "fadvise_hint",
    "fsync",
    "fdatasync",
    "write_barrier",
    "sync_file_range",
    "direct",
    "atomic",
    "buffered",
    "overwrite",
    "loops",
    "numjobs",
    "startdelay",
    "runtime",
    "timeout",
    "time_based",
    "ramp_time",
    "clocksource",
    "iomem_align",
    "mem_align",
    "zonesize",
    "zonerange",
    "zoneskip",
    "rwmixread",
    "rwmixwrite",
    "rwmixcycle",
    "thinktime",
    "thinktime_spin",
    "thinktime_blocks",
    "thinktime_blocks_type",
    "thinktime_iotime",
    "rate",
    "rate_min",
    "ratemin",
    "rate_iops",
    "rate_iops_min",
    "rate_process",
    "rate_cycle",
    "ratecycle",
    "rate_ignore_thinktime",
    "invalidate",
    "sync",
    "write_hint",
    "create_serialize",
    "create_fsync",
    "create_on_open",
    "create_only",
    "allow_file_create",
    "pre_read",
    "end_fsync",
    "fsync_on_close",
    "unlink",
    "unlink_each_loop",
    "exitall",
    "exit_what",
    "exitall_on_error",
    "stonewall",
    "wait_for_previous",
    "new_group",
    "thread",
    "group_reporting",
    "stats",
    "zero_buffers",
    "refill_buffers",
    "scramble_buffers",
    "buffer_compress_percentage",
    "buffer_compress_chunk",
    "dedupe_percentage",
    // Which buffers repeat (fio's dedupe.c): data contents only.
    "dedupe_mode",
    "dedupe_global",
    "dedupe_working_set_percentage",
    "clat_percentiles",
    "lat_percentiles",
    "slat_percentiles",
    "percentile_list",
    "significant_figures",
    "disk_util",
    "gtod_reduce",
    "disable_lat",
    "disable_clat",
    "disable_slat",
    "disable_bw_measurement",
    "disable_bw",
    "unified_rw_reporting",
    "continue_on_error",
    "ignore_error",
    "kb_base",
    "unit_base",
    // The allowed engines' own options (engines/sync.c, libaio.c,
    // io_uring.c, mmap.c, fileoperations.c, cpu.c); cmdprio* is left out:
    // it can give I/Os the realtime priority class.
    "hipri",
    "hipri_percentage",
    "uncached",
    "nowait",
    "userspace_reap",
    "fixedbufs",
    "registerfiles",
    "sqthread_poll",
    "sqthread_poll_cpu",
    "nonvectored",
    "force_async",
    "thp",
    "stat_type",
    "cpuload",
    "cpumode",
    "cpuchunks",
    "exit_on_io_done",
    // How a read_iolog replay reads its log (jobsafe::replay checks the
    // log and the files it names): offsets and timing only.
    "replay_no_stall",
    "replay_scale",
    "replay_align",
    "replay_time_scale",
];

/// Engines that act on regular files in the working directory (or on
/// nothing: null, cpuio). Not io_uring_cmd (NVMe passthrough on a char
/// device), sg, splice, net, exec, external:, e4defrag, dev-dax, libpmem, ...
const ENGINES: &[&str] = &[
    "sync",
    "psync",
    "vsync",
    "pvsync",
    "pvsync2",
    "libaio",
    "io_uring",
    "posixaio",
    "mmap",
    "falloc",
    "ftruncate",
    "filecreate",
    "filestat",
    "filedelete",
    "null",
    "cpuio",
];

/// mem=/iomem= without a file: shm and shmhuge are left out too, as a killed
/// fio leaves its System V segment behind.
const MEM_TYPES: &[&str] = &["malloc", "mmap", "mmaphuge", "mmapshared"];

/// Why a known fio option is refused, for a clearer message than the
/// allowlist's default.
fn known_refusal(key: &str) -> Option<&'static str> {
    Some(match key {
        "exec_prerun" | "exec_postrun" => "runs a shell command (as root): not allowed by the oracle",
        "write_iolog" => {
            "writes an I/O log at a path of its own (and the model's side would write one in the oracle's working directory): not allowed by the oracle; read_iolog= is"
        }
        "iolog" | "read_iolog_chunked" | "replay_skip" | "merge_blktrace_file"
        | "merge_blktrace_scalars" | "merge_blktrace_iters" => {
            "reads an I/O log or blktrace in a way the oracle does not check: not allowed by the oracle (read_iolog= with replay_no_stall, replay_scale, replay_align, replay_time_scale and replay_redirect is)"
        }
        "write_bw_log" | "write_lat_log" | "write_iops_log" | "write_hist_log" | "per_job_logs"
        | "log_avg_msec" | "log_hist_msec" | "log_offset" | "log_compression"
        | "log_store_compressed" | "log_unix_epoch" | "log_prio" | "log_entries"
        | "log_max_value" | "log_hist_coarseness" | "log_alternate_epoch"
        | "log_alternate_epoch_clock_id" | "log_compression_cpus" | "output" => {
            "belongs to fio's log files, written at paths of their own: not allowed by the oracle"
        }
        "verify_dump" | "verify_state_save" | "verify_state_load" => {
            "writes or reads verify state files: not allowed by the oracle"
        }
        "cgroup" | "cgroup_weight" | "cgroup_nodelete" => {
            "fio would create and join cgroups of its own (the oracle runs fio in its own group): not allowed"
        }
        "ioscheduler" => "changes the device's I/O scheduler in sysfs: not allowed by the oracle",
        "uid" | "gid" => "fio would switch user: not allowed by the oracle",
        "nice" | "prio" | "prioclass" | "cmdprio" | "cmdprio_percentage" | "cmdprio_class"
        | "cmdprio_bssplit" => {
            "changes CPU or I/O priority (as root, up to realtime): not allowed by the oracle"
        }
        "lockmem" => "pins host memory: not allowed by the oracle",
        "fill_device" | "fill_fs" => "fills the filesystem: not allowed by the oracle",
        "opendir" => "adds every file under a directory of its choosing: not allowed by the oracle (use filename= in the scratch directory)",
        "daemonize" | "pid_file" => "writes a pid file / leaves fio running: not allowed by the oracle",
        "trigger" | "trigger_file" | "trigger_timeout" | "trigger_remote" | "trigger-file"
        | "trigger-timeout" | "trigger-remote" => {
            "runs a command when triggered: not allowed by the oracle"
        }
        "buffer_pattern" | "verify_pattern" => "not allowed by the oracle (a pattern can name a file)",
        "allow_mounted_write" => "lets fio write to a mounted block device: not allowed by the oracle",
        "cpus_allowed" | "cpumask" | "cpus_allowed_policy" | "numa_cpu_nodes"
        | "numa_mem_policy" | "gpu_dev_id" | "hugepage-size" => {
            "changes CPU/memory placement on the host: not allowed by the oracle"
        }
        _ => return None,
    })
}

const NOT_ALLOWED: &str =
    "not allowed on the real machine by the oracle (it runs only options known to act on files in its scratch directory)";

/// fio's keywords: replaced in any option, and a value with `+-*/` in it
/// is then handed to `bc` through the shell (options.c `bc_calc`).
const KEYWORDS: &[&str] = &["$pagesize", "$mb_memory", "$ncpus"];

/// fio's job-file line buffer (parse.h OPT_LEN_MAX): fgets splits a longer
/// line, and fio would read its tail as an option line of its own.
const MAX_LINE: usize = 8191;

fn err(file: &str, line: usize, option: &str, msg: impl Into<String>) -> ParseError {
    ParseError {
        file: file.to_string(),
        line,
        option: option.to_string(),
        msg: msg.into(),
    }
}

/// fio's `${VAR}` substitution over a whole option line, but refusing an
/// unset variable (fio would put nothing there) instead of guessing.
fn expand_env(line: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    foliosim_workload::fio::expand_vars(line, &|var| {
        env(var).ok_or_else(|| {
            format!("environment variable '{var}' is not set (fio would substitute nothing)")
        })
    })
}

/// fio's `get_next_str`: ':' separates parts, "\:" is a literal colon.
pub fn split_fio_list(v: &str) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut it = v.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '\\' if it.peek() == Some(&':') => {
                it.next();
                parts.last_mut().expect("never empty").push(':');
            }
            ':' => parts.push(String::new()),
            c => parts.last_mut().expect("never empty").push(c),
        }
    }
    parts
}

/// A path fio will resolve against the scratch directory: relative and
/// never climbing out of it.
fn check_relative(p: &str) -> Result<(), String> {
    if p.is_empty() {
        return Err("empty path".into());
    }
    if p == "-" {
        return Err("'-' is fio's stdin/stdout: not allowed by the oracle".into());
    }
    if p.starts_with('/') {
        return Err(format!(
            "'{p}' is an absolute path: the oracle allows only paths inside its scratch directory"
        ));
    }
    if p.split('/').any(|c| c == "..") {
        return Err(format!(
            "'{p}' climbs out of the scratch directory with '..': not allowed by the oracle"
        ));
    }
    Ok(())
}

/// Job names become file names (`jobname.jobnum.filenum`).
fn check_job_name(n: &str) -> Result<(), String> {
    let ok = !n.is_empty()
        && n.len() <= 255
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-+".contains(c));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "job name '{n}': the oracle allows only letters, digits and _.-+ (fio names files after the job)"
        ))
    }
}

/// Reads a job file as fio would and returns the canonical job file the
/// oracle runs instead; `env` looks up `${VAR}`s.
pub fn sanitize(
    text: &str,
    file: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<SanitizedJob, ParseError> {
    let mut out = format!("; written by foliosim oracle from {file}: the options it allows\n");
    let mut paths = Vec::new();
    let mut iologs = Vec::new();
    let mut first_section_line = 0;
    let mut in_section = false;
    for (i, raw) in text.split('\n').enumerate() {
        let ln = i + 1;
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        if raw.len() > MAX_LINE {
            return Err(err(
                file,
                ln,
                "line",
                "longer than fio's 8191-byte line buffer (fio would split it into two options)",
            ));
        }
        if raw.chars().any(|c| c.is_control() && c != '\t') {
            return Err(err(file, ln, "line", "control character in the line"));
        }
        // fio: a line whose first non-blank is ';' or '#' is a comment, and
        // strip_blank_end cuts any line at its first ';' and then '#'.
        let mut l = raw;
        if let Some(p) = l.find(';') {
            l = &l[..p];
        }
        if let Some(p) = l.find('#') {
            l = &l[..p];
        }
        let l = l.trim();
        if l.is_empty() {
            continue;
        }
        if let Some(rest) = l.strip_prefix('[') {
            let Some(name) = rest.strip_suffix(']') else {
                return Err(err(file, ln, l, "malformed section header (want [name])"));
            };
            let name = name.trim();
            check_job_name(name).map_err(|m| err(file, ln, "section", m))?;
            if first_section_line == 0 {
                first_section_line = ln;
            }
            in_section = true;
            out.push_str(&format!("[{name}]\n"));
            continue;
        }
        // init.c: any line that starts with "include" is an include.
        if l.starts_with("include") {
            return Err(err(
                file,
                ln,
                "include",
                "include directives are not allowed by the oracle (it runs the job file alone)",
            ));
        }
        if !in_section {
            return Err(err(file, ln, l, "option outside of any [job] section"));
        }
        let key0 = l.split('=').next().unwrap_or(l).trim();
        let line = expand_env(l, env).map_err(|m| err(file, ln, key0, m))?;
        if line.contains("${") || line.contains([';', '#']) || line.chars().any(char::is_control) {
            return Err(err(
                file,
                ln,
                key0,
                "an environment variable expands to '${', ';', '#' or a control character",
            ));
        }
        if let Some(k) = KEYWORDS.iter().find(|k| line.contains(*k)) {
            return Err(err(
                file,
                ln,
                key0,
                format!("fio's {k} keyword is not allowed by the oracle (with arithmetic, fio runs bc through the shell)"),
            ));
        }
        let (key, val) = match line.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (line.trim(), None),
        };
        let e = |m: String| err(file, ln, key, m);
        let need = || -> Result<&str, ParseError> {
            match val {
                Some(v) if !v.is_empty() => Ok(v),
                _ => Err(e("needs a value".into())),
            }
        };
        match key {
            "name" => check_job_name(need()?).map_err(e)?,
            "filename" | "directory" => {
                let v = need()?;
                for part in split_fio_list(v) {
                    check_relative(&part).map_err(e)?;
                    paths.push(JobPath {
                        line: ln,
                        option: key.to_string(),
                        path: part,
                    });
                }
            }
            "read_iolog" => {
                for part in split_fio_list(need()?) {
                    check_relative(&part).map_err(e)?;
                    iologs.push(JobPath {
                        line: ln,
                        option: key.to_string(),
                        path: part,
                    });
                }
            }
            "filename_format" | "replay_redirect" => {
                let v = need()?;
                check_relative(v).map_err(e)?;
                paths.push(JobPath {
                    line: ln,
                    option: key.to_string(),
                    path: v.to_string(),
                });
            }
            "ioengine" => {
                let v = need()?;
                if !ENGINES.contains(&v) {
                    return Err(e(format!(
                        "engine '{v}' is not allowed on the real machine by the oracle (allowed: {})",
                        ENGINES.join(", ")
                    )));
                }
            }
            "mem" | "iomem" => {
                let v = need()?;
                if !MEM_TYPES.contains(&v) {
                    return Err(e(format!(
                        "'{v}' is not allowed by the oracle (allowed: {}; no file paths)",
                        MEM_TYPES.join(", ")
                    )));
                }
            }
            "zonemode" => {
                let v = need()?;
                if v != "none" && v != "strided" {
                    return Err(e(format!(
                        "zonemode '{v}' is not allowed by the oracle (none or strided)"
                    )));
                }
            }
            k if ALLOWED.contains(&k) => {}
            k => {
                return Err(e(known_refusal(k).unwrap_or(NOT_ALLOWED).to_string()));
            }
        }
        match val {
            Some(v) => out.push_str(&format!("{key}={v}\n")),
            None => out.push_str(&format!("{key}\n")),
        }
    }
    if first_section_line == 0 {
        return Err(err(file, 1, "job", "no [job] section"));
    }
    Ok(SanitizedJob {
        text: out,
        paths,
        first_section_line,
        iologs,
    })
}

/// [`sanitize`] with the process environment.
pub fn sanitize_with_env(text: &str, file: &str) -> Result<SanitizedJob, ParseError> {
    sanitize(text, file, &|v| std::env::var(v).ok())
}

/// Refuses a working directory with anything under it (itself included)
/// that is a symlink or not a plain file or directory: fio would follow
/// the link out of the scratch directory, or open the device.
pub fn check_tree(dir: &Path, job: &SanitizedJob, file: &str) -> Result<(), ParseError> {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let md = match fs::symlink_metadata(&d) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                return Err(err(
                    file,
                    job.first_section_line,
                    "scratch",
                    format!("{}: {e}", d.display()),
                ))
            }
        };
        let ft = md.file_type();
        let what = if ft.is_symlink() {
            let to = fs::read_link(&d)
                .map(|t| t.display().to_string())
                .unwrap_or_default();
            Some(format!(
                "is a symlink (to '{to}'); fio would follow it out of the scratch directory"
            ))
        } else if ft.is_file() || ft.is_dir() {
            None
        } else {
            Some("is a device or special file: not allowed by the oracle".to_string())
        };
        if let Some(what) = what {
            let rel = d
                .strip_prefix(dir)
                .unwrap_or(&d)
                .to_string_lossy()
                .into_owned();
            let first = rel.split('/').next().unwrap_or("");
            let (line, option) = job
                .paths
                .iter()
                .find(|p| p.path.split('/').next() == Some(first))
                .map_or((job.first_section_line, "filename"), |p| {
                    (p.line, p.option.as_str())
                });
            return Err(err(
                file,
                line,
                option,
                format!("'{}' in the scratch directory {what}", d.display()),
            ));
        }
        if ft.is_dir() {
            let rd = fs::read_dir(&d).map_err(|e| {
                err(
                    file,
                    job.first_section_line,
                    "scratch",
                    format!("{}: {e}", d.display()),
                )
            })?;
            let mut names: Vec<_> = rd.flatten().map(|e| e.path()).collect();
            names.sort();
            stack.extend(names.into_iter().rev());
        }
    }
    Ok(())
}

pub mod replay;

#[cfg(test)]
mod tests;
