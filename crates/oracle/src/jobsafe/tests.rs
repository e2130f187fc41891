use super::*;
use proptest::prelude::*;
use std::path::PathBuf;
use std::process::Command;

fn env(v: &str) -> Option<String> {
    match v {
        "SIZE" => Some("64M".into()),
        "ABS" => Some("/etc/passwd".into()),
        "UP" => Some("../../x".into()),
        "HASH" => Some("a#b".into()),
        "NESTED" => Some("${SIZE}".into()),
        "CMD" => Some("exec_prerun".into()),
        _ => None,
    }
}

fn ok(text: &str) -> SanitizedJob {
    sanitize(text, "t.fio", &env).unwrap_or_else(|e| panic!("{e}"))
}

fn refused(text: &str) -> String {
    sanitize(text, "t.fio", &env).unwrap_err().to_string()
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("foliosim-jobsafe-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

/// fio 3.33's own parser on the canonical file (skipped without fio,
/// failing under CI=true).
fn fio_parses(text: &str, tag: &str) {
    let Some(fio) = crate::require::tool("fio", "fio") else {
        return;
    };
    let d = scratch(tag);
    let job = d.join("job.fio");
    fs::write(&job, text).unwrap();
    let o = Command::new(fio)
        .arg("--parse-only")
        .arg(&job)
        .current_dir(&d)
        .output()
        .unwrap_or_else(|e| panic!("fio does not run: {e}"));
    assert!(
        o.status.success(),
        "fio --parse-only refused:\n{text}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn canonical_file_keeps_allowed_options_only_and_expanded() {
    let j = ok("; about: x\n[global]\nioengine=psync # engine\nsize = ${SIZE}\n\n[a]\n  rw=randread ; random\nbs=4k\ntime_based\nruntime=1\nfilename=dir/a\\:b:c.dat\n");
    assert_eq!(
        j.text,
        "; written by foliosim oracle from t.fio: the options it allows\n\
         [global]\nioengine=psync\nsize=64M\n[a]\nrw=randread\nbs=4k\ntime_based\nruntime=1\nfilename=dir/a\\:b:c.dat\n"
    );
    assert_eq!(j.first_section_line, 2);
    let p: Vec<(&str, usize)> = j.paths.iter().map(|p| (p.path.as_str(), p.line)).collect();
    assert_eq!(p, [("dir/a:b", 11), ("c.dat", 11)]);
    fio_parses(&j.text, "canon");
}

#[test]
fn the_suite_cases_round_trip_and_fio_accepts_them() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../oracle/cases");
    let mut n = 0;
    for e in fs::read_dir(&dir).unwrap().flatten() {
        let p = e.path();
        if p.extension().is_none_or(|x| x != "fio") {
            continue;
        }
        let text = fs::read_to_string(&p).unwrap();
        let j = sanitize_with_env(&text, "case.fio").unwrap_or_else(|e| panic!("{e}"));
        // Every non-comment line of the case survives, in order.
        let want: Vec<String> = text
            .lines()
            .map(|l| {
                l.split([';', '#'])
                    .next()
                    .unwrap()
                    .trim()
                    .replace(" = ", "=")
            })
            .filter(|l| !l.is_empty())
            .collect();
        let got: Vec<&str> = j.text.lines().skip(1).collect();
        assert_eq!(got, want, "{}", p.display());
        // Sanitizing the canonical file gives it back (a fixed point).
        let again = sanitize_with_env(&j.text, "case.fio").unwrap();
        assert_eq!(again.text.lines().skip(1).collect::<Vec<_>>(), got);
        fio_parses(&j.text, "suite");
        n += 1;
    }
    assert!(n >= 7, "found {n} suite jobs");
}

#[test]
fn hostile_jobs_are_refused_with_file_line_and_option() {
    let cases: &[(&str, &str)] = &[
        ("[a]\nexec_prerun=touch /tmp/x\n", "t.fio:2: exec_prerun: runs a shell command (as root): not allowed by the oracle"),
        ("[a]\nsize=1M\nexec_postrun=rm -rf /\n", "t.fio:3: exec_postrun: runs a shell command (as root): not allowed by the oracle"),
        ("[a]\nioengine=exec\n", "t.fio:2: ioengine: engine 'exec' is not allowed on the real machine by the oracle"),
        ("[a]\nioengine=external:/tmp/evil.so\n", "t.fio:2: ioengine: engine 'external:/tmp/evil.so' is not allowed"),
        ("[a]\nioengine=/tmp/evil.so\n", "t.fio:2: ioengine: engine '/tmp/evil.so' is not allowed"),
        ("[a]\nioengine=io_uring_cmd\n", "t.fio:2: ioengine: engine 'io_uring_cmd' is not allowed"),
        ("[a]\nfilename=/etc/passwd\n", "t.fio:2: filename: '/etc/passwd' is an absolute path: the oracle allows only paths inside its scratch directory"),
        ("[a]\nfilename=ok.dat:/dev/sda\n", "t.fio:2: filename: '/dev/sda' is an absolute path"),
        ("[a]\nfilename=../../x\n", "t.fio:2: filename: '../../x' climbs out of the scratch directory with '..': not allowed by the oracle"),
        ("[a]\nfilename=a/../../x\n", "t.fio:2: filename: 'a/../../x' climbs out"),
        ("[a]\nfilename=-\n", "t.fio:2: filename: '-' is fio's stdin/stdout"),
        ("[a]\ndirectory=/tmp/x\n", "t.fio:2: directory: '/tmp/x' is an absolute path"),
        ("[a]\ndirectory=d:..\n", "t.fio:2: directory: '..' climbs out"),
        ("[a]\nfilename_format=../$jobname.$jobnum\n", "t.fio:2: filename_format: '../$jobname.$jobnum' climbs out"),
        ("[a]\nfilename_format=/tmp/$jobname\n", "t.fio:2: filename_format: '/tmp/$jobname' is an absolute path"),
        ("[a]\nfilename=${ABS}\n", "t.fio:2: filename: '/etc/passwd' is an absolute path"),
        ("[a]\nfilename=x${UP}\n", "t.fio:2: filename: 'x../../x' climbs out"),
        ("[a]\nfilename=${UNSET_VAR}x\n", "t.fio:2: filename: environment variable 'UNSET_VAR' is not set (fio would substitute nothing)"),
        ("[a]\nsize=${SIZE\n", "t.fio:2: size: unterminated '${' in 'size=${SIZE'"),
        ("[a]\nsize=${NESTED}\n", "t.fio:2: size: an environment variable expands to '${', ';', '#' or a control character"),
        ("[a]\nfilename=${HASH}\n", "t.fio:2: filename: an environment variable expands to"),
        ("[a]\n${CMD}=touch /tmp/x\n", "t.fio:2: exec_prerun: runs a shell command"),
        ("[a]\ninclude /etc/evil.fio\n", "t.fio:2: include: include directives are not allowed by the oracle (it runs the job file alone)"),
        ("[a]\nincludefoo=1\n", "t.fio:2: include: include directives are not allowed"),
        ("[a]\nwrite_iolog=/tmp/x\n", "t.fio:2: write_iolog: writes an I/O log at a path of its own"),
        ("[a]\nwrite_iolog=x.log\n", "t.fio:2: write_iolog: writes an I/O log at a path of its own"),
        ("[a]\nread_iolog=/tmp/trace.log\n", "t.fio:2: read_iolog: '/tmp/trace.log' is an absolute path"),
        ("[a]\nread_iolog=../trace.log\n", "t.fio:2: read_iolog: '../trace.log' climbs out"),
        ("[a]\nread_iolog=a.log:/etc/b.log\n", "t.fio:2: read_iolog: '/etc/b.log' is an absolute path"),
        ("[a]\nread_iolog=-\n", "t.fio:2: read_iolog: '-' is fio's stdin/stdout"),
        ("[a]\nread_iolog=\n", "t.fio:2: read_iolog: needs a value"),
        ("[a]\nread_iolog=t.log\nreplay_redirect=/dev/sda\n", "t.fio:3: replay_redirect: '/dev/sda' is an absolute path"),
        ("[a]\nread_iolog=t.log\nreplay_redirect=d/../../x\n", "t.fio:3: replay_redirect: 'd/../../x' climbs out"),
        ("[a]\niolog=t.log\n", "t.fio:2: iolog: reads an I/O log or blktrace in a way the oracle does not check"),
        ("[a]\nread_iolog=t.log\nread_iolog_chunked=1\n", "t.fio:3: read_iolog_chunked: reads an I/O log or blktrace"),
        ("[a]\nmerge_blktrace_file=/tmp/m\n", "t.fio:2: merge_blktrace_file: reads an I/O log or blktrace"),
        ("[a]\nwrite_bw_log=/tmp/bw\n", "t.fio:2: write_bw_log: belongs to fio's log files"),
        ("[a]\ncgroup=evil\n", "t.fio:2: cgroup: fio would create and join cgroups of its own"),
        ("[a]\nioscheduler=none\n", "t.fio:2: ioscheduler: changes the device's I/O scheduler in sysfs"),
        ("[a]\nuid=1000\n", "t.fio:2: uid: fio would switch user"),
        ("[a]\npid_file=/tmp/pid\n", "t.fio:2: pid_file: writes a pid file"),
        ("[a]\ntrigger=touch /tmp/x\n", "t.fio:2: trigger: runs a command when triggered"),
        ("[a]\nmem=mmapshared:/tmp/x\n", "t.fio:2: mem: 'mmapshared:/tmp/x' is not allowed by the oracle (allowed: malloc, mmap, mmaphuge, mmapshared; no file paths)"),
        ("[a]\niomem=shm\n", "t.fio:2: iomem: 'shm' is not allowed"),
        ("[a]\nopendir=/etc\n", "t.fio:2: opendir: adds every file under a directory"),
        ("[a]\nfill_device=1\n", "t.fio:2: fill_device: fills the filesystem"),
        ("[a]\nnice=-20\n", "t.fio:2: nice: changes CPU or I/O priority"),
        ("[a]\nzonemode=zbd\n", "t.fio:2: zonemode: zonemode 'zbd' is not allowed"),
        ("[a]\nsize=$mb_memory/2\n", "t.fio:2: size: fio's $mb_memory keyword is not allowed by the oracle (with arithmetic, fio runs bc through the shell)"),
        ("[a]\nverify=md5\n", "t.fio:2: verify: not allowed on the real machine by the oracle"),
        ("[a]\nsome_future_option=1\n", "t.fio:2: some_future_option: not allowed on the real machine by the oracle"),
        ("[../../etc/x]\nsize=1M\n", "t.fio:1: section: job name '../../etc/x': the oracle allows only letters, digits and _.-+"),
        ("[a]\nname=../x\n", "t.fio:2: name: job name '../x'"),
        ("size=1M\n[a]\n", "t.fio:1: size=1M: option outside of any [job] section"),
        ("[a\nsize=1M\n", "t.fio:1: [a: malformed section header (want [name])"),
        ("[a]\nsize=1M\u{7}\n", "t.fio:2: line: control character in the line"),
        ("; nothing\n", "t.fio:1: job: no [job] section"),
    ];
    for (text, want) in cases {
        let got = refused(text);
        assert!(got.starts_with(want), "{text:?}\n got: {got}\nwant: {want}");
        assert!(!got.contains('\n'), "one line: {got}");
    }
    let long = format!("[a]\ndescription={}exec_prerun=x\n", "d".repeat(8190));
    assert!(refused(&long).starts_with("t.fio:2: line: longer than fio's 8191-byte line buffer"));
}

#[test]
fn fio_list_splitting_honours_escaped_colons() {
    assert_eq!(split_fio_list("a:b"), ["a", "b"]);
    assert_eq!(split_fio_list("a\\:b"), ["a:b"]);
    assert_eq!(split_fio_list("a\\b"), ["a\\b"]);
    assert_eq!(split_fio_list("x:"), ["x", ""]);
    // An escaped colon cannot hide a part from the check.
    assert!(refused("[a]\nfilename=a\\:b:/etc/x\n").contains("'/etc/x' is an absolute path"));
    assert!(refused("[a]\nfilename=a:\n").contains("filename: empty path"));
}

#[test]
fn check_tree_refuses_symlinks_and_special_files() {
    let d = scratch("tree");
    let j = ok("[a]\nsize=1M\n[b]\nfilename=sub/f.dat\n");
    fs::create_dir_all(d.join("sub")).unwrap();
    fs::write(d.join("sub/f.dat"), b"x").unwrap();
    check_tree(&d, &j, "t.fio").unwrap();

    std::os::unix::fs::symlink("/etc", d.join("sub/link")).unwrap();
    let e = check_tree(&d, &j, "t.fio").unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "t.fio:4: filename: '{}' in the scratch directory is a symlink (to '/etc'); fio would follow it out of the scratch directory",
            d.join("sub/link").display()
        )
    );
    fs::remove_file(d.join("sub/link")).unwrap();

    let fifo = std::ffi::CString::new(d.join("a.1.0").to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let e = check_tree(&d, &j, "t.fio").unwrap_err().to_string();
    assert!(
        e.starts_with("t.fio:1: filename: ")
            && e.ends_with("is a device or special file: not allowed by the oracle"),
        "{e}"
    );
    fs::remove_file(d.join("a.1.0")).unwrap();

    // The working directory itself must not be a link either.
    let l = d.with_extension("link");
    let _ = fs::remove_file(&l);
    std::os::unix::fs::symlink(&d, &l).unwrap();
    assert!(check_tree(&l, &j, "t.fio")
        .unwrap_err()
        .to_string()
        .contains("is a symlink"));
    fs::remove_file(&l).unwrap();
    fs::remove_dir_all(&d).unwrap();
}

fn piece() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "[a]",
        "[global]",
        "[b c]",
        "[",
        "]",
        "size=1M",
        "filename=",
        "directory=",
        "ioengine=",
        "psync",
        "exec",
        "external:",
        "/",
        "..",
        "../",
        "\\:",
        ":",
        "x",
        "${SIZE}",
        "${ABS}",
        "${UP}",
        "${NOPE}",
        "${",
        "}",
        ";",
        "#",
        " ",
        "=",
        "include",
        "mem=",
        "mmap:",
        "\t",
        "exec_prerun=",
        "$pagesize",
        "-",
        "name=",
        "filename_format=",
        "bs=4k",
        "rw=read",
        "read_iolog=",
        "replay_redirect=",
        "write_iolog=",
    ])
    .prop_map(str::to_string)
}

proptest! {
    /// Whatever the input: no panic, and what passes is a fixed point whose
    /// every option is allowed and whose every path stays relative.
    #[test]
    fn sanitizer_output_is_safe(lines in prop::collection::vec(prop::collection::vec(piece(), 0..6), 0..8)) {
        let text: String = lines.iter().map(|l| l.concat() + "\n").collect();
        if let Ok(j) = sanitize(&text, "f.fio", &env) {
            let again = sanitize(&j.text, "f.fio", &env).expect("canonical file re-sanitizes");
            prop_assert_eq!(&again.text, &j.text);
            for l in j.text.lines().skip(1) {
                prop_assert!(!l.contains("${") && !l.contains('#') && !l.contains(';'), "{}", l);
                if l.starts_with('[') {
                    continue;
                }
                let (k, v) = l.split_once('=').unwrap_or((l, ""));
                prop_assert!(
                    ALLOWED.contains(&k) || ["name", "filename", "directory", "filename_format", "ioengine", "mem", "iomem", "zonemode", "read_iolog", "replay_redirect"].contains(&k),
                    "{}", l
                );
                if k == "ioengine" {
                    prop_assert!(ENGINES.contains(&v));
                }
            }
            for p in j.paths.iter().chain(&j.iologs) {
                prop_assert!(!p.path.starts_with('/') && !p.path.split('/').any(|c| c == ".."));
            }
        }
    }
}

/// fio's examples/dedupe-global.fio: the dedupe options choose which write
/// buffers repeat (data contents only), so its job runs unchanged.
#[test]
fn dedupe_buffer_options_are_allowed() {
    let text = "[global]\nioengine=libaio\niodepth=256\nsize=100m\ndedupe_mode=working_set\n\
                dedupe_global=1\ndedupe_percentage=50\nblocksize=4k\nrw=write\n\
                buffer_compress_percentage=50\ndedupe_working_set_percentage=50\n[a]\n[b]\n";
    let j = ok(text);
    for o in [
        "dedupe_mode=working_set",
        "dedupe_global=1",
        "dedupe_working_set_percentage=50",
    ] {
        assert!(j.text.lines().any(|l| l == o), "{o} dropped:\n{}", j.text);
    }
    fio_parses(&j.text, "dedupe");
}

/// read_iolog and the replay options that shape it are allowed; the logs
/// are recorded by line, a redirect target is checked as a filename.
#[test]
fn iolog_replay_options_are_allowed() {
    let j = ok("[global]\nioengine=psync\n[a]\nread_iolog=logs/a.log:b\\:c.log\nreplay_no_stall=1\n\
                replay_scale=2\nreplay_align=4k\nreplay_time_scale=200\nreplay_redirect=sub/f.dat\n");
    let logs: Vec<(&str, usize)> = j.iologs.iter().map(|p| (p.path.as_str(), p.line)).collect();
    assert_eq!(logs, [("logs/a.log", 4), ("b:c.log", 4)]);
    let p: Vec<(&str, &str)> = j
        .paths
        .iter()
        .map(|p| (p.option.as_str(), p.path.as_str()))
        .collect();
    assert_eq!(p, [("replay_redirect", "sub/f.dat")]);
    for o in [
        "replay_no_stall=1",
        "replay_scale=2",
        "replay_align=4k",
        "replay_time_scale=200",
    ] {
        assert!(j.text.lines().any(|l| l == o), "{o} dropped:\n{}", j.text);
    }
    // fio takes them (--parse-only does not open the log).
    fio_parses(&j.text, "iolog");
    // The copy fio runs reads the oracle's copies of the logs.
    assert_eq!(
        replay::with_logs_at(&j.text, "../fio-x.logs"),
        j.text.replace(
            "read_iolog=logs/a.log:b\\:c.log",
            "read_iolog=../fio-x.logs/logs/a.log:../fio-x.logs/b\\:c.log"
        )
    );
}

/// A job file beside its logs in a directory of its own.
fn replay_dir(tag: &str, job: &str, logs: &[(&str, &str)]) -> (PathBuf, SanitizedJob) {
    let d = scratch(tag);
    for (name, text) in logs {
        let p = d.join(name);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }
    (d, ok(job))
}

fn replay_check(d: &Path, j: &SanitizedJob) -> Result<Vec<replay::ReplayFile>, String> {
    replay::check(j, &j.text, "t.fio", d).map_err(|e| e.to_string())
}

const V2: &str = "fio version 2 iolog\ndata.bin add\ndata.bin open\ndata.bin read 8192 4096\n\
                  data.bin read 0 65536\ndata.bin close\n";

#[test]
fn a_replayed_logs_files_are_laid_out_as_long_as_it_reads() {
    let v3 = "fio version 3 iolog\n0 sub/other.dat add\n1 sub/other.dat open\n\
              2 sub/other.dat write 1048576 4096\n3 data.bin add\n4 data.bin open\n\
              5 data.bin read 1048576 512\n";
    let (d, j) = replay_dir(
        "replay-ok",
        "[a]\nread_iolog=v2.log\n[b]\nread_iolog=logs/v3.log\n",
        &[("v2.log", V2), ("logs/v3.log", v3)],
    );
    let files = replay_check(&d, &j).unwrap();
    let got: Vec<(&str, u64)> = files.iter().map(|f| (f.name.as_str(), f.size)).collect();
    assert_eq!(
        got,
        [
            ("data.bin", (1 << 20) + 512),
            ("sub/other.dat", (1 << 20) + 4096)
        ]
    );
    // Laid out under fio's directory with data; a second layout keeps them.
    let w = d.join("work");
    fs::create_dir(&w).unwrap();
    replay::lay_out(&w, &files).unwrap();
    assert_eq!(
        fs::metadata(w.join("data.bin")).unwrap().len(),
        (1 << 20) + 512
    );
    assert_eq!(
        fs::metadata(w.join("sub/other.dat")).unwrap().len(),
        (1 << 20) + 4096
    );
    let ino = |p: &Path| std::os::unix::fs::MetadataExt::ino(&fs::metadata(p).unwrap());
    let before = ino(&w.join("data.bin"));
    replay::lay_out(&w, &files).unwrap();
    assert_eq!(ino(&w.join("data.bin")), before, "left as it was");

    // Copied afresh into the oracle's directory: a link planted there
    // (a --keep run's leftovers) is removed, not followed.
    let to = d.join("copy");
    fs::create_dir(&to).unwrap();
    let victim = d.join("victim");
    fs::write(&victim, "untouched").unwrap();
    std::os::unix::fs::symlink(&victim, to.join("v2.log")).unwrap();
    replay::copy_logs(&j, "t.fio", &d, &to).unwrap();
    assert_eq!(fs::read_to_string(&victim).unwrap(), "untouched");
    assert_eq!(fs::read_to_string(to.join("v2.log")).unwrap(), V2);
    assert_eq!(fs::read_to_string(to.join("logs/v3.log")).unwrap(), v3);
    assert_eq!(replay_check(&to, &j).unwrap(), files);
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn logs_naming_files_outside_the_scratch_directory_are_refused() {
    let abs = "fio version 2 iolog\n/etc/passwd add\n/etc/passwd open\n/etc/passwd write 0 4096\n";
    let up =
        "fio version 3 iolog\n0 ok.dat add\n0 ../../x add\n1 ../../x open\n2 ../../x read 0 4096\n";
    let dir = "fio version 2 iolog\nsub/ add\nsub/ open\nsub/ read 0 4096\n";
    let (d, _) = replay_dir(
        "replay-bad",
        "[a]\nsize=1M\n",
        &[("abs.log", abs), ("up.log", up), ("dir.log", dir)],
    );
    let log = |n: &str| d.join(n).display().to_string();
    let cases = [
        ("abs.log", format!("{}:2: read_iolog: '/etc/passwd' is an absolute path: the oracle allows only paths inside its scratch directory (fio would open it from the log)", log("abs.log"))),
        ("up.log", format!("{}:3: read_iolog: '../../x' climbs out of the scratch directory", log("up.log"))),
        ("dir.log", format!("{}:2: read_iolog: 'sub/' is not a file name", log("dir.log"))),
    ];
    for (name, want) in cases {
        let j = ok(&format!("[a]\nread_iolog={name}\n"));
        let e = replay_check(&d, &j).unwrap_err();
        assert!(e.starts_with(&want), "{name}\n got: {e}\nwant: {want}");
        assert!(!e.contains('\n'), "one line: {e}");
    }
    // With replay_redirect fio opens the job's target, not the log's names.
    let j = ok("[a]\nread_iolog=abs.log\nreplay_redirect=target.dat\n");
    let files = replay_check(&d, &j).unwrap();
    assert_eq!(
        files,
        [replay::ReplayFile {
            name: "target.dat".into(),
            size: 4096
        }]
    );
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn missing_linked_or_bad_logs_are_refused_in_one_line() {
    let (d, _) = replay_dir(
        "replay-missing",
        "[a]\nsize=1M\n",
        &[
            (
                "bad.log",
                "fio version 3 iolog\n0 d.bin add\n1 d.bin frob 0 4096\n",
            ),
            ("v1.log", "d.bin read 0 4096\n"),
        ],
    );
    fs::create_dir(d.join("adir")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", d.join("link.log")).unwrap();
    std::os::unix::fs::symlink("/etc", d.join("ldir")).unwrap();
    let at = |n: &str| d.join(n).display().to_string();
    let cases = [
        ("missing.log", format!("t.fio:3: read_iolog: 'missing.log': no such file beside the job file ({}): the oracle reads a log from the job file's directory", at("missing.log"))),
        ("link.log", format!("t.fio:3: read_iolog: 'link.log': {} is a symlink: the oracle reads a log only as a plain file beside the job file", at("link.log"))),
        ("ldir/passwd", format!("t.fio:3: read_iolog: 'ldir/passwd': {} is a symlink", at("ldir"))),
        ("adir", format!("t.fio:3: read_iolog: 'adir': {} is not a plain file", at("adir"))),
        ("bad.log", format!("{}:3: read_iolog: unknown action 'frob'", at("bad.log"))),
        ("v1.log", format!("{}:1: read_iolog: not a fio iolog", at("v1.log"))),
    ];
    for (name, want) in cases {
        let j = ok(&format!("[a]\nioengine=psync\nread_iolog={name}\n"));
        let e = replay_check(&d, &j).unwrap_err();
        assert!(e.starts_with(&want), "{name}\n got: {e}\nwant: {want}");
        assert!(!e.contains('\n'), "one line: {e}");
        // Nor is it copied.
        let to = d.join("copy");
        let path_refused = !matches!(name, "bad.log" | "v1.log");
        assert_eq!(
            replay::copy_logs(&j, "t.fio", &d, &to).is_err(),
            path_refused,
            "{name}"
        );
        let _ = fs::remove_dir_all(&to);
    }
    fs::remove_dir_all(&d).unwrap();
}
