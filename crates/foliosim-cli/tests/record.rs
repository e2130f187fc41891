//! `foliosim record` on this host and `foliosim replay` of what it wrote,
//! through the binary: a recorded dd of a 64 MiB file under a 32 MiB
//! limit has the open and the reads covering the file and its counters in
//! the header, and its replay's pgpgin is within 15% of the real one's;
//! a kill -9 of the recorder leaves nothing once `oracle restore` ran;
//! bad traces exit 2 with one line; replays are byte-identical.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "../../../tests/require.rs"]
mod require;

const BIN: &str = env!("CARGO_BIN_EXE_foliosim");

/// A scratch directory on the disk, removed when the test ends.
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let d = PathBuf::from(format!("/var/tmp/rec-scratch-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
    fn p(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }
    /// The binary with this directory's own journal.
    fn cmd(&self) -> Command {
        let mut c = Command::new(BIN);
        c.env("FOLIOSIM_ORACLE_JOURNAL", self.p("journal"));
        c
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Root and a tracefs; otherwise the test skips (fails under CI=true).
fn host_ok() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        require::skip("not root (foliosim record makes a cgroup and mounts tracefs)");
        return false;
    }
    let fs = fs::read_to_string("/proc/filesystems").unwrap_or_default();
    if !fs.contains("tracefs") {
        require::skip("no tracefs in /proc/filesystems");
        return false;
    }
    if !Path::new("/sys/fs/cgroup/memory/memory.stat").exists()
        && !Path::new("/sys/fs/cgroup/cgroup.controllers").exists()
    {
        require::skip("no memory cgroup");
        return false;
    }
    true
}

fn header(text: &str, key: &str) -> Option<f64> {
    text.lines()
        .take_while(|l| l.starts_with('#'))
        .find_map(|l| l.strip_prefix(&format!("# {key}: "))?.trim().parse().ok())
}

/// A 64 MiB file of random bytes, not in the page cache.
fn cold_file(p: &Path) {
    let mut x = 0x9e3779b97f4a7c15u64;
    let mut buf = vec![0u8; 1 << 20];
    let mut data = Vec::with_capacity(64 << 20);
    for _ in 0..64 {
        for b in buf.chunks_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b.copy_from_slice(&x.to_le_bytes());
        }
        data.extend_from_slice(&buf);
    }
    fs::write(p, &data).unwrap();
    let f = fs::File::open(p).unwrap();
    f.sync_all().unwrap();
    use std::os::unix::io::AsRawFd;
    // SAFETY: fadvise on an open descriptor: its clean pages leave the cache.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
}

#[test]
fn a_recorded_dd_replays_with_the_real_pgpgin() {
    if !host_ok() {
        return;
    }
    let d = Dir::new("dd");
    let file = d.p("f64");
    cold_file(&file);
    let trace = d.p("dd.trace");
    let out = d
        .cmd()
        .args(["record", "--memcg-limit", "32M", "--out"])
        .arg(&trace)
        .arg("--scratch")
        .arg(d.p("scratch"))
        .args(["--", "dd"])
        .arg(format!("if={}", file.display()))
        .args(["of=/dev/null", "bs=1M"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("dd exited with status 0"), "{err}");
    assert!(!d.p("scratch").exists(), "scratch removed");
    let text = fs::read_to_string(&trace).unwrap();
    assert!(text.starts_with("# foliosim-trace v1\n"));
    assert_eq!(header(&text, "lost-events"), Some(0.0), "{err}");
    assert_eq!(header(&text, "memcg-limit"), Some((32 << 20) as f64));
    let real_pgpgin = header(&text, "real.vmstat.pgpgin").expect("pgpgin in the header");
    assert!(real_pgpgin >= 65536.0, "{real_pgpgin}");
    assert!(header(&text, "real.memcg.max_usage_in_bytes").unwrap() <= (32 << 20) as f64);
    assert!(header(&text, "real.wall_s").unwrap() > 0.0);
    // The file, its open and reads covering all of it.
    let ino = fs::metadata(&file).map(|m| {
        use std::os::unix::fs::MetadataExt;
        format!(":{:x} ", m.ino())
    });
    let decl = text
        .lines()
        .find(|l| l.starts_with("F ") && l.contains(ino.as_ref().unwrap()))
        .unwrap_or_else(|| panic!("no F line for the file:\n{text}"));
    let id = decl.split(' ').nth(1).unwrap();
    assert!(decl.contains(" 67108864 67108864 "), "{decl}");
    let ofd = text
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f.len() == 5 && f[2] == "o" && f[4] == id).then(|| f[3].to_string())
        })
        .expect("an open of the file");
    let mut covered = 0u64;
    for l in text.lines() {
        let f: Vec<&str> = l.split(' ').collect();
        if f.len() == 7 && f[2] == "r" && f[3] == ofd {
            assert_eq!(f[4].parse::<u64>().unwrap(), covered, "reads in order: {l}");
            covered += f[5].parse::<u64>().unwrap();
        }
    }
    assert_eq!(covered, 64 << 20);
    // The replay under the same limit reads what the real run read.
    let replay = |extra: &[&str]| {
        let o = Command::new(BIN)
            .arg("replay")
            .arg(&trace)
            .args(["--memcg-limit", "32M", "--json"])
            .args(extra)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        o.stdout
    };
    let a = replay(&[]);
    let v: serde_json::Value = serde_json::from_slice(&a).unwrap();
    let model = v["vmstat"]["pgpgin"].as_f64().unwrap();
    assert!(
        (model - real_pgpgin).abs() <= 0.15 * real_pgpgin,
        "replay pgpgin {model} KiB, real {real_pgpgin} KiB"
    );
    assert_eq!(v["trace_replay"]["tasks"], 1);
    assert_eq!(v["recorded"]["vmstat.pgpgin"].as_f64(), Some(real_pgpgin));
    // Deterministic: the same trace and options, the same bytes.
    assert_eq!(a, replay(&[]));
    assert_eq!(replay(&["--timing", "afap"]), replay(&["--timing", "afap"]));
}

/// Waits until `p` exists (or panics after `s` seconds).
fn wait_for(p: &Path, s: u64) {
    let t0 = Instant::now();
    while !p.exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(s),
            "{} never came",
            p.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_killed_recorder_leaves_nothing_after_restore() {
    if !host_ok() {
        return;
    }
    let d = Dir::new("kill");
    let scratch = d.p("scratch");
    let mut rec = d
        .cmd()
        .args(["record", "--memcg-limit", "64M", "--out"])
        .arg(d.p("t.trace"))
        .arg("--scratch")
        .arg(&scratch)
        .args(["--", "sleep", "60"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = rec.id();
    let mnt = scratch.join(format!("foliosim-record-{pid}.tracefs"));
    let inst = mnt.join(format!("instances/foliosim-record-{pid}"));
    wait_for(&inst.join("trace_pipe"), 30);
    // The command runs in the recorder's group.
    let groups = || -> Vec<PathBuf> {
        let root = Path::new("/sys/fs/cgroup/memory");
        fs::read_dir(root)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.path())
                    .filter(|p| {
                        fs::read_to_string(p.join("cgroup.procs"))
                            .is_ok_and(|s| s.split_whitespace().any(|q| is_sleep(q)))
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let t0 = Instant::now();
    while groups().is_empty() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let g = groups();
    assert_eq!(g.len(), 1, "the command's group: {g:?}");
    rec.kill().unwrap(); // SIGKILL
    rec.wait().unwrap();
    let mounts = || fs::read_to_string("/proc/self/mounts").unwrap();
    assert!(
        mounts().contains(mnt.to_str().unwrap()),
        "left mounted by the kill"
    );
    let out = d.cmd().args(["oracle", "restore"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!g[0].exists(), "cgroup {} removed: {err}", g[0].display());
    assert!(
        !mounts().contains(mnt.to_str().unwrap()),
        "tracefs unmounted: {err}"
    );
    assert!(!scratch.exists(), "scratch removed: {err}");
    // The instance went before the mount: a fresh tracefs has no such one.
    let check = d.p("check");
    fs::create_dir(&check).unwrap();
    let c = std::ffi::CString::new(check.to_str().unwrap()).unwrap();
    // SAFETY: NUL-terminated strings; a fresh tracefs view, unmounted below.
    let ok = unsafe {
        libc::mount(
            c"nodev".as_ptr(),
            c.as_ptr(),
            c"tracefs".as_ptr(),
            0,
            std::ptr::null(),
        )
    } == 0;
    if ok {
        let left = check
            .join(format!("instances/foliosim-record-{pid}"))
            .exists();
        // SAFETY: our own mount.
        unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        assert!(!left, "instance removed");
    }
    assert!(groups().is_empty(), "the command was killed with its group");
}

fn is_sleep(pid: &str) -> bool {
    fs::read_to_string(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.starts_with("sleep\060\0"))
}

#[test]
fn bad_traces_exit_2_with_one_line() {
    let d = Dir::new("bad");
    let t = d.p("bad.trace");
    fs::write(&t, "# foliosim-trace v1\n0 0 n 1 p\n5 1 r 3 0 4096 1\n").unwrap();
    let o = Command::new(BIN).arg("replay").arg(&t).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        err,
        format!(
            "foliosim: {}:3: trace: open file 3 is not open\n",
            t.display()
        )
    );
    assert!(o.stdout.is_empty());
    fs::write(&t, "# foliosim-trace v1\n0 0 n 1 p\n").unwrap();
    let o = Command::new(BIN)
        .arg("replay")
        .arg(&t)
        .args(["--timing", "sometimes"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "foliosim: --timing: 'sometimes' is not recorded or afap\n"
    );
    // A libCacheSim trace still replays, and refuses the trace-only options.
    let csv = d.p("t.csv");
    fs::write(&csv, "1,5,4096\n2,6,4096\n").unwrap();
    let o = Command::new(BIN).arg("replay").arg(&csv).output().unwrap();
    assert!(o.status.success());
    let o = Command::new(BIN)
        .arg("replay")
        .arg(&csv)
        .args(["--compute-scale", "2"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}
