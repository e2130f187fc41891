//! `read_iolog` jobs: the logs a case replays and the files they name.
//!
//! A log is named relative to the job file (a plain file beside it, no
//! `..`, no symlink on the way: [`check_log_paths`]). Before fio runs, the
//! oracle copies it into its scratch directory ([`copy_logs`]), beside
//! fio's working directory, and points the canonical job at the copy
//! ([`with_logs_at`]); it parses the copy with the model's own parser (a
//! bad log is refused with one line naming the log's file and line) and
//! refuses a log whose files are not relative paths inside fio's working
//! directory ([`replay_files`]). With `replay_redirect`, every line goes to
//! the job's redirect target, which [`super::sanitize`] checked as a
//! `filename`. fio lays out no file for a replay job, so the oracle lays
//! out the files the logs name itself, each as long as the furthest any
//! log reads, writes or trims into it: the length the model gives it.

use super::{check_relative, err, split_fio_list, SanitizedJob};
use foliosim_workload::fio::{FioJob, ParseError};
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

/// A file a replayed log names, as the oracle lays it out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayFile {
    /// Relative to fio's working directory, as the log names it.
    pub name: String,
    pub size: u64,
}

/// The case's logs are plain files under `dir` (the job file's directory,
/// or the scratch copy), reached without a symlink. Call before anything
/// reads them.
pub fn check_log_paths(job: &SanitizedJob, file: &str, dir: &Path) -> Result<(), ParseError> {
    for p in &job.iologs {
        let e = |m: String| err(file, p.line, &p.option, format!("'{}': {m}", p.path));
        let parts: Vec<&str> = p
            .path
            .split('/')
            .filter(|c| !c.is_empty() && *c != ".")
            .collect();
        if parts.is_empty() {
            return Err(e("not a file name".into()));
        }
        let mut at = dir.to_path_buf();
        for (i, c) in parts.iter().enumerate() {
            at.push(c);
            let md = fs::symlink_metadata(&at).map_err(|x| match x.kind() {
                std::io::ErrorKind::NotFound => e(format!(
                    "no such file beside the job file ({}): the oracle reads a log from the job file's directory",
                    at.display()
                )),
                _ => e(format!("{}: {x}", at.display())),
            })?;
            let last = i + 1 == parts.len();
            let ft = md.file_type();
            if ft.is_symlink() {
                return Err(e(format!(
                    "{} is a symlink: the oracle reads a log only as a plain file beside the job file",
                    at.display()
                )));
            }
            if last && !ft.is_file() {
                return Err(e(format!("{} is not a plain file", at.display())));
            }
            if !last && !ft.is_dir() {
                return Err(e(format!("{} is not a directory", at.display())));
            }
        }
    }
    Ok(())
}

/// Copies the case's logs from `from` (the job file's directory) into
/// `to`, a directory of the oracle's own that this makes afresh (anything
/// there before, a link included, is removed first), under the same
/// relative names. A log is opened without following a link and must be a
/// plain file.
pub fn copy_logs(job: &SanitizedJob, file: &str, from: &Path, to: &Path) -> Result<(), String> {
    use std::os::unix::fs::OpenOptionsExt;
    check_log_paths(job, file, from).map_err(|e| e.to_string())?;
    match fs::symlink_metadata(to) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(to),
        Ok(_) => fs::remove_file(to),
        Err(_) => Ok(()),
    }
    .map_err(|e| format!("{}: {e}", to.display()))?;
    fs::create_dir(to).map_err(|e| format!("{}: {e}", to.display()))?;
    for p in &job.iologs {
        let src = from.join(&p.path);
        let dst = to.join(&p.path);
        let serr = |e: std::io::Error| format!("{}: {e}", src.display());
        let mut f = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&src)
            .map_err(serr)?;
        if !f.metadata().map_err(serr)?.is_file() {
            return Err(format!("{}: not a plain file", src.display()));
        }
        let mut bytes = Vec::new();
        f.read_to_end(&mut bytes).map_err(serr)?;
        if let Some(parent) = dst.parent() {
            fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        let derr = |e: std::io::Error| format!("{}: {e}", dst.display());
        let mut out = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&dst)
            .map_err(derr)?;
        std::io::Write::write_all(&mut out, &bytes).map_err(derr)?;
    }
    Ok(())
}

/// The canonical job with every `read_iolog` part under `prefix` (the
/// oracle's copy of the logs, relative to fio's working directory).
pub fn with_logs_at(text: &str, prefix: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for l in text.lines() {
        match l.strip_prefix("read_iolog=") {
            Some(v) => {
                let parts: Vec<String> = split_fio_list(v)
                    .iter()
                    .map(|p| format!("{prefix}/{p}").replace(':', "\\:"))
                    .collect();
                out.push_str(&format!("read_iolog={}", parts.join(":")));
            }
            None => out.push_str(l),
        }
        out.push('\n');
    }
    out
}

/// The files the replaying jobs of `jobs` (parsed by the model with the
/// logs read from `dir`) name, each as long as the furthest any log goes
/// into it; refused with the log's file and line when a log names one
/// outside fio's working directory.
pub fn replay_files(
    job: &SanitizedJob,
    file: &str,
    jobs: &[FioJob],
    dir: &Path,
) -> Result<Vec<ReplayFile>, ParseError> {
    let mut out: Vec<ReplayFile> = Vec::new();
    for j in jobs {
        let Some(log) = &j.iolog else { continue };
        for (f, name) in log.files.iter().enumerate() {
            if let Err(m) = check_log_file_name(name) {
                return Err(named_at(job, file, dir, name, m));
            }
            let size = log.extent(f as u32);
            match out.iter_mut().find(|r| r.name == *name) {
                Some(r) => r.size = r.size.max(size),
                None => out.push(ReplayFile {
                    name: name.clone(),
                    size,
                }),
            }
        }
    }
    Ok(out)
}

/// A file name of a log, as fio opens it in its working directory.
fn check_log_file_name(name: &str) -> Result<(), String> {
    check_relative(name)?;
    match name.rsplit('/').next() {
        Some("" | ".") => Err(format!("'{name}' is not a file name")),
        _ => Ok(()),
    }
}

/// The first line of the case's logs that names `name`, as the error's
/// place; the job file's read_iolog line when none does.
fn named_at(job: &SanitizedJob, file: &str, dir: &Path, name: &str, m: String) -> ParseError {
    let msg = format!("{m} (fio would open it from the log)");
    for p in &job.iologs {
        let path: PathBuf = dir.join(&p.path);
        let Ok(text) = fs::read_to_string(&path) else {
            continue;
        };
        let v3 = text.starts_with(foliosim_workload::fio::iolog::HEADER_V3);
        for (i, l) in text.lines().enumerate().skip(1) {
            let f: Vec<&str> = l.split_ascii_whitespace().collect();
            if f.get(v3 as usize) == Some(&name) {
                return err(&path.display().to_string(), i + 1, "read_iolog", msg);
            }
        }
    }
    let line = job
        .iologs
        .first()
        .map_or(job.first_section_line, |p| p.line);
    err(file, line, "read_iolog", msg)
}

/// Lays out `files` under `dir` (fio's working directory) with data, each
/// left as it is when already as long as it must be. Refuses a layout
/// that would leave less than a GiB free on the scratch file system.
pub fn lay_out(dir: &Path, files: &[ReplayFile]) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let mut need = 0u64;
    for r in files {
        let p = dir.join(&r.name);
        let have = fs::symlink_metadata(&p)
            .ok()
            .filter(|m| m.is_file() && m.len() >= r.size && m.blocks() * 512 >= m.len());
        if have.is_none() {
            need = need.saturating_add(r.size);
        }
    }
    if need > 0 {
        let free = free_bytes(dir)?;
        if need.saturating_add(1 << 30) > free {
            return Err(format!(
                "{}: the replayed logs' files need {need} bytes, and the file system has {free} free (the oracle keeps 1 GiB)",
                dir.display()
            ));
        }
    }
    for r in files {
        let p = dir.join(&r.name);
        let ok = fs::symlink_metadata(&p)
            .is_ok_and(|m| m.is_file() && m.len() >= r.size && m.blocks() * 512 >= m.len());
        if ok {
            continue;
        }
        if let Some(parent) = p.parent() {
            fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        crate::probe::create_file(&p, r.size)?;
    }
    Ok(())
}

fn free_bytes(dir: &Path) -> Result<u64, String> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    // SAFETY: statvfs writes only into the struct it is given.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid NUL-terminated path and a valid struct.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(format!(
            "{}: statvfs: {}",
            dir.display(),
            std::io::Error::last_os_error()
        ));
    }
    Ok(st.f_bavail as u64 * st.f_frsize as u64)
}

/// Everything a case's replay needs checked, from the logs in `dir`: the
/// paths, the model's parse of the job with them, the files they name.
pub fn check(
    job: &SanitizedJob,
    text: &str,
    file: &str,
    dir: &Path,
) -> Result<Vec<ReplayFile>, ParseError> {
    check_log_paths(job, file, dir)?;
    let kw = foliosim_workload::fio::Keywords::default();
    let jobs = foliosim_workload::fio::parse_job_str_logs_in(text, file, &kw, dir)?;
    replay_files(job, file, &jobs, dir)
}
