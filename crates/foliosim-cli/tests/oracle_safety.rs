//! `foliosim oracle` on hostile job files and after a `kill -9`, through the
//! real binary: a refused job exits 2 with one line naming file, line and
//! option, and changes nothing on the host; a killed oracle's read_ahead_kb,
//! cgroups and scratch files are undone by `oracle restore` and by the next
//! oracle start.

use foliosim_oracle::host::{read_host, CgroupFlavor};
use foliosim_oracle::journal;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[path = "../../../tests/require.rs"]
mod require;

const BIN: &str = env!("CARGO_BIN_EXE_foliosim");

/// A per-test directory on the disk (not tmpfs): jobs, a watched directory
/// with a sentinel, the scratch directory and the journal.
struct Base(PathBuf);

impl Base {
    fn new(tag: &str) -> Base {
        let d = PathBuf::from(format!(
            "/var/tmp/foliosim-safety-{tag}-{}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(d.join("jobs")).unwrap();
        fs::create_dir_all(d.join("watched")).unwrap();
        fs::write(d.join("watched/sentinel"), "untouched\n").unwrap();
        Base(d)
    }
    fn p(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }
    /// `oracle run JOB` once, quietly, with this base's scratch directory.
    fn run_job(&self, job: &Path) -> Command {
        self.oracle(&[
            "run",
            job.to_str().unwrap(),
            "--repeat",
            "1",
            "--quiet",
            "--dir",
            self.p("scratch").to_str().unwrap(),
        ])
    }
    fn oracle(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.arg("oracle")
            .args(args)
            .env(journal::ENV, self.p("journal"))
            .env("FOLIOSIM_TEST_TARGET", self.p("watched/sentinel"))
            .stdin(Stdio::null());
        c
    }
    fn listing(&self, rel: &str) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(self.p(rel))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

impl Drop for Base {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[test]
fn hostile_jobs_are_refused_before_anything_runs() {
    let b = Base::new("hostile");
    let w = b.p("watched");
    let w = w.display();
    // (file name, job, line, option, start of the reason)
    let abs = format!("'{w}/sentinel' is an absolute path: the oracle allows only paths inside its scratch directory");
    let absdir = format!("'{w}' is an absolute path");
    let cases: Vec<(&str, String, usize, &str, &str)> = vec![
        (
            "prerun",
            format!("[a]\nsize=1M\nexec_prerun=touch {w}/EXEC\n"),
            3,
            "exec_prerun",
            "runs a shell command",
        ),
        (
            "postrun",
            format!("[a]\nsize=1M\nexec_postrun=touch {w}/EXEC\n"),
            3,
            "exec_postrun",
            "runs a shell command",
        ),
        (
            "exec",
            format!("[a]\nsize=1M\nioengine=exec\nprogram=/bin/touch\narguments={w}/EXEC\n"),
            3,
            "ioengine",
            "engine 'exec' is not allowed",
        ),
        (
            "external",
            format!("[a]\nsize=1M\nioengine=external:{w}/evil.so\n"),
            3,
            "ioengine",
            "engine 'external:",
        ),
        (
            "etc",
            format!("[a]\nsize=1M\nrw=write\nfilename={w}/sentinel\n"),
            4,
            "filename",
            &abs,
        ),
        (
            "updir",
            "[a]\nsize=1M\nrw=write\nfilename=../../x\n".into(),
            4,
            "filename",
            "'../../x' climbs out",
        ),
        (
            "directory",
            format!("[a]\nsize=1M\nrw=write\ndirectory={w}\n"),
            4,
            "directory",
            &absdir,
        ),
        (
            "format",
            "[a]\nsize=1M\nrw=write\nfilename_format=../../$jobname.$jobnum\n".into(),
            4,
            "filename_format",
            "'../../$jobname.$jobnum' climbs out",
        ),
        (
            "device",
            "[a]\nsize=1M\nfilename=ok.dat:/dev/vda\n".into(),
            3,
            "filename",
            "'/dev/vda' is an absolute path",
        ),
        (
            "include",
            format!("[a]\nsize=1M\ninclude {w}/inc.fio\n"),
            3,
            "include",
            "include directives are not allowed",
        ),
        (
            "iolog",
            format!("[a]\nsize=1M\nwrite_iolog={w}/iolog\n"),
            3,
            "write_iolog",
            "writes an I/O log at a path of its own",
        ),
        (
            "envvar",
            "[a]\nsize=1M\nrw=write\nfilename=${FOLIOSIM_TEST_TARGET}\n".into(),
            4,
            "filename",
            &abs,
        ),
        (
            "cgroup",
            "[a]\nsize=1M\ncgroup=foliosim-evil\n".into(),
            3,
            "cgroup",
            "fio would create and join cgroups",
        ),
        (
            "sched",
            "[a]\nsize=1M\nioscheduler=none\n".into(),
            3,
            "ioscheduler",
            "changes the device's I/O scheduler",
        ),
        (
            "pidfile",
            format!("[a]\nsize=1M\npid_file={w}/pid\n"),
            3,
            "pid_file",
            "writes a pid file",
        ),
        (
            "trigger",
            format!("[a]\nsize=1M\ntrigger=touch {w}/EXEC\n"),
            3,
            "trigger",
            "runs a command when triggered",
        ),
        (
            "mem",
            format!("[a]\nsize=1M\nmem=mmapshared:{w}/shm\n"),
            3,
            "mem",
            "'mmapshared:",
        ),
        (
            "keyword",
            "[a]\nsize=$mb_memory*2\n".into(),
            2,
            "size",
            "fio's $mb_memory keyword",
        ),
    ];
    for (name, text, line, option, why) in &cases {
        let job = b.p(&format!("jobs/{name}.fio"));
        fs::write(&job, text).unwrap();
        let out = b
            .oracle(&[
                "run",
                job.to_str().unwrap(),
                "--memcg-limit",
                "64M",
                "--dir",
                b.p("scratch").to_str().unwrap(),
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        let want = format!("foliosim: {}:{line}: {option}: {why}", job.display());
        assert!(err.starts_with(&want), "{name}:\n got: {err}\nwant: {want}");
        assert_eq!(err.lines().count(), 1, "{name}: one line: {err}");
        assert!(out.stdout.is_empty(), "{name}: nothing ran");
    }
    // A symlink planted in the case's working directory (as a --keep run
    // would leave it) pointing at the sentinel.
    let job = b.p("jobs/link.fio");
    fs::write(&job, "[a]\nsize=1M\nrw=write\nfilename=data.bin\n").unwrap();
    fs::create_dir_all(b.p("scratch/fio-link")).unwrap();
    std::os::unix::fs::symlink(b.p("watched/sentinel"), b.p("scratch/fio-link/data.bin")).unwrap();
    let out = b
        .oracle(&[
            "run",
            job.to_str().unwrap(),
            "--memcg-limit",
            "64M",
            "--dir",
            b.p("scratch").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(
        err.trim_end(),
        format!(
            "foliosim: {}:4: filename: '{}' in the scratch directory is a symlink (to '{}'); fio would follow it out of the scratch directory",
            job.display(),
            b.p("scratch/fio-link/data.bin").display(),
            b.p("watched/sentinel").display()
        )
    );
    assert_eq!(
        b.listing("scratch"),
        ["fio-link"],
        "nothing added to scratch"
    );
    assert_eq!(b.listing("scratch/fio-link"), ["data.bin"]);

    // Nothing outside: the sentinel is untouched, no command ran, nothing
    // was created in the watched directory, no scratch directory was made
    // for the refused jobs, and no host change was ever journaled.
    assert_eq!(
        fs::read_to_string(b.p("watched/sentinel")).unwrap(),
        "untouched\n"
    );
    assert_eq!(b.listing("watched"), ["sentinel"]);
    assert!(!b.p("journal").exists(), "no host change recorded");
    let mut all = b.listing("");
    all.sort();
    assert_eq!(all, ["jobs", "scratch", "watched"]);
}

/// read_iolog: a log that is missing, a link, outside the job file's
/// directory, not an iolog, or naming a file outside fio's working
/// directory is refused in one line naming the job's or the log's file
/// and line, with exit code 2, before anything on the host changes.
#[test]
fn hostile_iologs_are_refused_before_anything_runs() {
    let b = Base::new("iolog");
    let w = b.p("watched");
    let w = w.display();
    let jobs = b.p("jobs");
    let log = |name: &str, text: String| {
        fs::write(jobs.join(name), text).unwrap();
        jobs.join(name).display().to_string()
    };
    let abs = log(
        "abs.log",
        format!(
            "fio version 2 iolog\n{w}/sentinel add\n{w}/sentinel open\n{w}/sentinel write 0 4096\n"
        ),
    );
    let up = log(
        "up.log",
        "fio version 3 iolog\n0 ../../x add\n1 ../../x open\n2 ../../x write 0 4096\n".into(),
    );
    let bad = log(
        "bad.log",
        "fio version 3 iolog\n0 d.bin add\n1 d.bin open\n2 d.bin write 0 many\n".into(),
    );
    std::os::unix::fs::symlink(b.p("watched/sentinel"), jobs.join("link.log")).unwrap();
    let job = |name: &str| jobs.join(format!("{name}.fio")).display().to_string();
    // (job name, job, start of the one line)
    let cases: Vec<(&str, String, String)> = vec![
        (
            "missing",
            "[a]\nread_iolog=missing.log\n".into(),
            format!(
                "{}:2: read_iolog: 'missing.log': no such file beside the job file",
                job("missing")
            ),
        ),
        (
            "abs",
            "[a]\nread_iolog=abs.log\n".into(),
            format!("{abs}:2: read_iolog: '{w}/sentinel' is an absolute path"),
        ),
        (
            "up",
            "[a]\nread_iolog=up.log\n".into(),
            format!("{up}:2: read_iolog: '../../x' climbs out of the scratch directory"),
        ),
        (
            "bad",
            "[a]\nread_iolog=bad.log\n".into(),
            format!("{bad}:4: read_iolog: length 'many' is not a number"),
        ),
        (
            "link",
            "[a]\nread_iolog=link.log\n".into(),
            format!(
                "{}:2: read_iolog: 'link.log': {} is a symlink",
                job("link"),
                jobs.join("link.log").display()
            ),
        ),
        (
            "outside",
            "[a]\nread_iolog=../watched/sentinel\n".into(),
            format!(
                "{}:2: read_iolog: '../watched/sentinel' climbs out",
                job("outside")
            ),
        ),
        (
            "redirect",
            format!("[a]\nread_iolog=up.log\nreplay_redirect={w}/sentinel\n"),
            format!(
                "{}:3: replay_redirect: '{w}/sentinel' is an absolute path",
                job("redirect")
            ),
        ),
        (
            "writelog",
            "[a]\nsize=1M\nwrite_iolog=x.log\n".into(),
            format!(
                "{}:3: write_iolog: writes an I/O log at a path of its own",
                job("writelog")
            ),
        ),
    ];
    for (name, text, want) in &cases {
        fs::write(job(name), text).unwrap();
        let out = b
            .oracle(&[
                "run",
                &job(name),
                "--memcg-limit",
                "64M",
                "--dir",
                b.p("scratch").to_str().unwrap(),
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        let want = format!("foliosim: {want}");
        assert!(err.starts_with(&want), "{name}:\n got: {err}\nwant: {want}");
        assert_eq!(err.lines().count(), 1, "{name}: one line: {err}");
        assert!(out.stdout.is_empty(), "{name}: nothing ran");
    }
    assert_eq!(
        fs::read_to_string(b.p("watched/sentinel")).unwrap(),
        "untouched\n"
    );
    assert_eq!(b.listing("watched"), ["sentinel"]);
    assert!(!b.p("journal").exists(), "no host change recorded");
    assert!(!b.p("scratch").exists(), "no scratch directory made");
}

/// Puts the host's read_ahead_kb back and undoes the test's journal even
/// when an assertion fails.
struct HostGuard<'a> {
    base: &'a Base,
    ra_path: PathBuf,
    ra_old: String,
    /// The host's running kdamonds' state files (the oracle stops them).
    kdamonds: Vec<PathBuf>,
    child: Option<Child>,
}

impl Drop for HostGuard<'_> {
    fn drop(&mut self) {
        if let Some(c) = self.child.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = self.base.oracle(&["restore"]).output();
        let _ = fs::write(&self.ra_path, &self.ra_old);
        for k in &self.kdamonds {
            let _ = fs::write(k, "on");
        }
    }
}

fn pending(b: &Base) -> Vec<journal::Entry> {
    journal::pending(&fs::read_to_string(b.p("journal")).unwrap_or_default())
}

/// Starts the slow case and kills the oracle with SIGKILL once its fio runs
/// in the cgroup; returns the pending journal entries.
fn start_and_kill(b: &Base, g: &mut HostGuard, job: &Path) -> Vec<journal::Entry> {
    let child = b
        .run_job(job)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    g.child = Some(child);
    // Wait (bounded, for a loaded machine) until the run's cgroup is
    // journaled and has fio in it: the run's, whose read_ahead_kb is set
    // (the host measurements before the runs use a cgroup of their own).
    let t0 = Instant::now();
    let entries = loop {
        let e = pending(b);
        let busy = e.iter().any(|x| x.path == g.ra_path)
            && e.iter().any(|x| {
                x.kind == "cgroup"
                    && fs::read_to_string(x.path.join("cgroup.procs"))
                        .is_ok_and(|s| !s.trim().is_empty())
            });
        if busy {
            break e;
        }
        if let Some(st) = g.child.as_mut().unwrap().try_wait().unwrap() {
            panic!("the oracle exited early: {st}");
        }
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "the run never started: {e:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let c = g.child.as_mut().unwrap();
    c.kill().unwrap(); // SIGKILL: no guard runs
    c.wait().unwrap();
    g.child = None;
    entries
}

fn assert_left_behind(b: &Base, g: &HostGuard, entries: &[journal::Entry], ra: &str) {
    assert_eq!(
        fs::read_to_string(&g.ra_path).unwrap().trim(),
        ra,
        "still changed"
    );
    let v = entries
        .iter()
        .find(|e| e.kind == "value" && e.path == g.ra_path)
        .expect("read_ahead_kb journaled");
    assert_eq!(
        (v.path.as_path(), v.old.as_str()),
        (g.ra_path.as_path(), g.ra_old.trim())
    );
    for e in entries.iter().filter(|e| e.kind == "cgroup") {
        assert!(e.path.exists(), "{} left", e.path.display());
    }
    // The host's DAMON threads were stopped for the run (journaled).
    for k in &g.kdamonds {
        let e = entries
            .iter()
            .find(|e| e.kind == "value" && &e.path == k)
            .unwrap_or_else(|| panic!("{} not journaled", k.display()));
        assert_eq!(e.old, "on");
        assert_eq!(
            fs::read_to_string(k).unwrap().trim(),
            "off",
            "{}",
            k.display()
        );
    }
    assert!(b.p("scratch/fio-slow/slow.dat").exists());
    assert!(entries
        .iter()
        .any(|e| e.kind == "path" && e.path == b.p("scratch/fio-slow")));
}

fn assert_restored(b: &Base, g: &HostGuard, entries: &[journal::Entry], stderr: &str) {
    assert_eq!(
        fs::read_to_string(&g.ra_path).unwrap(),
        g.ra_old,
        "read_ahead_kb back"
    );
    assert!(
        stderr.contains(&format!(
            "restored {} to {}",
            g.ra_path.display(),
            g.ra_old.trim()
        )),
        "{stderr}"
    );
    for k in &g.kdamonds {
        assert_eq!(
            fs::read_to_string(k).unwrap().trim(),
            "on",
            "{} back on",
            k.display()
        );
    }
    for e in entries.iter().filter(|e| e.kind == "cgroup") {
        assert!(!e.path.exists(), "{} removed", e.path.display());
        // Removed by the restore, or already by the oracle itself when the
        // kill landed between its own rmdir and its journal entry's end.
        let p = e.path.display();
        assert!(
            stderr.contains(&format!("removed cgroup {p}"))
                || stderr.contains(&format!("cgroup {p} was already gone")),
            "{stderr}"
        );
    }
    assert!(
        !b.p("scratch").exists(),
        "scratch files and directory removed"
    );
    assert!(pending(b).is_empty(), "journal settled: {:?}", pending(b));
}

#[test]
fn a_killed_oracle_is_undone_by_restore_and_by_the_next_start() {
    let b = Base::new("kill");
    let host = read_host(&b.0).unwrap();
    let why = if !host.is_root {
        Some("not root")
    } else if matches!(host.cgroup, CgroupFlavor::None { .. }) {
        Some("no memory cgroup")
    } else if host.fio_version.is_none() {
        Some("fio is not installed (apt-get install -y fio; .ci/run does)")
    } else if host.read_ahead_path.as_os_str().is_empty() {
        Some("/var/tmp has no block device read_ahead_kb")
    } else {
        None
    };
    // Skipped elsewhere; CI runs as root with a memory cgroup and fio.
    if let Some(why) = why {
        require::skip(why);
        return;
    }
    let ra_old = fs::read_to_string(&host.read_ahead_path).unwrap();
    let ra = if ra_old.trim() == "4096" {
        "2048"
    } else {
        "4096"
    };
    let mut g = HostGuard {
        base: &b,
        ra_path: host.read_ahead_path.clone(),
        ra_old,
        kdamonds: foliosim_oracle::scn::hostcfg::running_kdamonds(),
        child: None,
    };
    // 256 reads one second apart: runs until killed.
    let job = b.p("jobs/slow.fio");
    fs::write(
        &job,
        format!("; oracle: memcg_limit=64M read_ahead_kb={ra}\n[slow]\nfilename=slow.dat\nsize=1M\nrw=read\nbs=4k\nioengine=psync\nthinktime=1000000\n"),
    )
    .unwrap();

    let entries = start_and_kill(&b, &mut g, &job);
    assert_left_behind(&b, &g, &entries, ra);
    let out = b.oracle(&["restore"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_restored(&b, &g, &entries, &err);
    let out = b.oracle(&["restore"]).output().unwrap();
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "nothing left to do"
    );

    // Any oracle start replays first, even one that then fails.
    let entries = start_and_kill(&b, &mut g, &job);
    assert_left_behind(&b, &g, &entries, ra);
    let missing = b.p("jobs/missing.fio");
    let out = b
        .oracle(&["run", missing.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.trim_end().ends_with(&format!(
            "foliosim: {}: No such file or directory (os error 2)",
            missing.display()
        )),
        "{err}"
    );
    assert_restored(&b, &g, &entries, &err);
}

/// One oracle at a time changes the host: a second one that reaches its
/// real runs while the instance lock is held says so on one line and
/// waits, changing nothing, then runs once the lock is free.
#[test]
fn a_second_oracle_waits_for_the_one_running() {
    let b = Base::new("lock");
    let host = read_host(&b.0).unwrap();
    let why = if !host.is_root {
        Some("not root")
    } else if matches!(host.cgroup, CgroupFlavor::None { .. }) {
        Some("no memory cgroup")
    } else if host.fio_version.is_none() {
        Some("fio is not installed (apt-get install -y fio; .ci/run does)")
    } else {
        None
    };
    // Skipped elsewhere; CI runs as root with a memory cgroup and fio.
    if let Some(why) = why {
        require::skip(why);
        return;
    }
    let job = b.p("jobs/small.fio");
    fs::write(
        &job,
        "; oracle: memcg_limit=64M\n[small]\nfilename=small.dat\nsize=1M\nrw=read\nbs=4k\nioengine=psync\n",
    )
    .unwrap();
    let held = journal::instance_lock().unwrap();
    let mut child = b
        .run_job(&job)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let waiting = child.try_wait().unwrap().is_none();
    // Nothing was changed while it waited: no group, no scratch file.
    let journaled = pending(&b);
    drop(held);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(waiting, "the second oracle did not wait: {err}");
    assert!(
        journaled.iter().all(|e| e.kind != "cgroup"),
        "changed the host while waiting: {journaled:?}"
    );
    assert!(out.status.success(), "{err}");
    // One line per wait, not a line per retry: it takes the lock three
    // times (the limit reclaim measurement, the zram measurement, then the
    // runs), and another test's oracle may hold it the later times.
    let waits = err
        .lines()
        .filter(|l| l.contains("another oracle is running real cases on this host"))
        .count();
    assert!((1..=3).contains(&waits), "{err}");
}
