//! Running fio: lay out a job's files, then run it (inside the cgroup) with
//! JSON output. fio runs with the case's scratch directory as its working
//! directory, so job files name their files relative to it and need no
//! `directory=`.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

/// What fio's JSON says about a run, summed over its jobs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FioOutcome {
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Longest job runtime, seconds.
    pub runtime_s: f64,
}

impl FioOutcome {
    pub fn counters(&self) -> BTreeMap<String, f64> {
        BTreeMap::from([
            ("fio.read_bytes".to_string(), self.read_bytes as f64),
            ("fio.write_bytes".to_string(), self.write_bytes as f64),
        ])
    }
}

/// fio reading its job from stdin (`fio -`), in `dir`.
pub fn command(dir: &Path) -> Command {
    let mut c = Command::new("fio");
    c.arg("--output-format=json").arg("-").current_dir(dir);
    c
}

/// Runs fio once on a job that does no I/O (`ioengine=null`), in `/` (away
/// from the workload's files) and outside any group, so that what every
/// fio run reads at start-up is cached before the measured run: measured
/// on this host with the
/// mm_filemap_add_to_page_cache tracepoint, a cold start read 38 blocks into
/// the group (localtime()'s time zone: an inode-table window of the zoneinfo
/// directory, its directory blocks and the zone file; the lookups of
/// /tmp/fio-dump-status and /etc). The model runs no start-up.
pub fn warm_startup() {
    let _ = Command::new("fio")
        .args([
            "--output-format=json",
            "--name=foliosim-warm",
            "--ioengine=null",
            "--size=4k",
        ])
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// The job file for [`layout`]: the canonical job less `io_submit_mode`.
/// fio 3.33 with `--create_only=1` and `io_submit_mode=offload` (at
/// iodepth=32, as in fio's examples/fixed-rate-submission.fio) lays the
/// file out and then never exits: its job waits on the offload workqueue's
/// workers forever. How I/Os are submitted has no bearing on the files
/// laid out, so the setup runs inline.
pub fn layout_text(job: &str) -> String {
    job.lines()
        .filter(|l| l.split('=').next().map(str::trim) != Some("io_submit_mode"))
        .flat_map(|l| [l, "\n"])
        .collect()
}

/// Lays out the job's files (fio's setup phase only), outside any cgroup.
pub fn layout(job: &Path, dir: &Path) -> Result<(), String> {
    let args = [std::ffi::OsStr::new("--create_only=1"), job.as_os_str()];
    run_json(&args, dir)
        .map(|_| ())
        .map_err(|e| format!("{} ({})", e, job.display()))
}

/// fio with `args` in `dir` (stdin closed, JSON output), its JSON object;
/// an error names fio's exit status and its last line on stderr.
pub fn run_json<S: AsRef<std::ffi::OsStr>>(args: &[S], dir: &Path) -> Result<Value, String> {
    let out = Command::new("fio")
        .arg("--output-format=json")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("running fio: {e}"))?;
    if !out.status.success() {
        return Err(format!("fio: {}: {}", out.status, last_line(&out.stderr)));
    }
    json_object(&String::from_utf8_lossy(&out.stdout))
}

/// The JSON object fio printed (anything before it skipped).
fn json_object(text: &str) -> Result<Value, String> {
    let start = text.find('{').ok_or("fio printed no JSON")?;
    serde_json::from_str(&text[start..]).map_err(|e| format!("fio JSON: {e}"))
}

pub fn last_line(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b);
    s.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_string()
}

/// Parses fio's `--output-format=json` (anything printed before the JSON
/// object is skipped).
pub fn parse_json(text: &str) -> Result<FioOutcome, String> {
    let v = json_object(text)?;
    let jobs = v["jobs"].as_array().ok_or("fio JSON: no 'jobs' array")?;
    let mut o = FioOutcome::default();
    for j in jobs {
        let io = |dir: &str| j[dir]["io_bytes"].as_u64().unwrap_or(0);
        o.read_bytes += io("read");
        o.write_bytes += io("write");
        let rt = ["read", "write"]
            .iter()
            .filter_map(|d| j[*d]["runtime"].as_f64())
            .fold(0.0, f64::max);
        o.runtime_s = o.runtime_s.max(rt / 1000.0);
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_fio_json() {
        let t = r#"note: both iodepth >= 1 and synchronous I/O engine are selected
{"fio version":"fio-3.33","jobs":[
 {"jobname":"a","read":{"io_bytes":268435456,"bw":500000,"runtime":512},"write":{"io_bytes":0,"runtime":0}},
 {"jobname":"b","read":{"io_bytes":1048576,"runtime":700},"write":{"io_bytes":4096,"runtime":10}}]}"#;
        let o = parse_json(t).unwrap();
        assert_eq!(o.read_bytes, 268435456 + 1048576);
        assert_eq!(o.write_bytes, 4096);
        assert_eq!(o.runtime_s, 0.7);
        assert_eq!(o.counters()["fio.read_bytes"], 269484032.0);
        assert!(parse_json("no json").unwrap_err().contains("no JSON"));
        assert!(parse_json("{\"x\":1}").unwrap_err().contains("'jobs'"));
    }

    #[test]
    fn layout_job_drops_io_submit_mode_only() {
        let job = "; written by foliosim oracle\n[fixed-rate-submit]\nsize=128m\nrw=read\n\
                   ioengine=libaio\niodepth=32\ndirect=1\nio_submit_mode=offload\nrate_iops=1000\n";
        assert_eq!(
            layout_text(job),
            "; written by foliosim oracle\n[fixed-rate-submit]\nsize=128m\nrw=read\n\
             ioengine=libaio\niodepth=32\ndirect=1\nrate_iops=1000\n"
        );
        // A job without it is laid out as it is.
        let plain = "[a]\nsize=1m\nrw=write\n";
        assert_eq!(layout_text(plain), plain);
    }
}
