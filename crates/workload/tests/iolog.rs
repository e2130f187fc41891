//! fio's iolog v2 and v3 (fio/iolog.rs): real fio 3.33 logs parsed, the
//! replay_* options' semantics, every refusal as one line naming the log
//! and line, and read_iolog jobs as the job builder makes them.

use foliosim_workload::fio::iolog::{self, Act, IoLog, ReplayOpts};
use foliosim_workload::fio::{parse_job_str, Rw};
use std::path::PathBuf;

fn data(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/iolog")
        .join(name);
    p.display().to_string()
}

fn load(name: &str, o: &ReplayOpts) -> IoLog {
    (*iolog::load(&data(name), o).unwrap()).clone()
}

fn parse(text: &str, o: &ReplayOpts) -> IoLog {
    iolog::parse(text, "t.log", o).unwrap()
}

fn offsets(l: &IoLog, a: Act) -> Vec<u64> {
    l.entries
        .iter()
        .filter(|e| e.act == a)
        .map(|e| e.offset)
        .collect()
}

#[test]
fn v3_sequential_read_from_real_fio() {
    let l = load("seqread.v3.log", &ReplayOpts::default());
    assert_eq!(l.version, 3);
    assert_eq!(l.files, vec!["seqread.0.0"]);
    assert_eq!((l.count(Act::Read), l.bytes(Act::Read)), (16, 65536));
    assert_eq!(l.count(Act::Write), 0);
    assert_eq!(
        offsets(&l, Act::Read),
        (0..16).map(|i| i * 4096).collect::<Vec<_>>()
    );
    assert_eq!(l.rw(), Some(Rw::Read));
    assert_eq!(l.extent(0), 65536);
    // Delays in µs from the previous line: none for the first ("20 ...
    // add"), then 157-20, 164-157, 595-164.
    let d: Vec<u64> = l.entries.iter().take(5).map(|e| e.delay_us).collect();
    assert_eq!(d, vec![0, 137, 7, 431, 28]);
    let acts: Vec<Act> = l.entries.iter().map(|e| e.act).collect();
    assert_eq!(
        (acts[0], acts[1], acts[18]),
        (Act::Add, Act::Open, Act::Close)
    );
}

#[test]
fn v2_has_the_same_io_and_no_timing() {
    let v2 = load("seqread.v2.log", &ReplayOpts::default());
    let v3 = load("seqread.v3.log", &ReplayOpts::default());
    assert_eq!(v2.version, 2);
    assert!(v2.entries.iter().all(|e| e.delay_us == 0));
    let strip = |l: &IoLog| {
        l.entries
            .iter()
            .map(|e| (e.act, e.file, e.offset, e.len))
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(&v2), strip(&v3));
}

#[test]
fn two_files_mixed_with_think_time() {
    let l = load("randrw-2files.v3.log", &ReplayOpts::default());
    assert_eq!(l.files, vec!["two.0.0", "two.0.1"]);
    assert_eq!((l.count(Act::Read), l.bytes(Act::Read)), (5, 40960));
    assert_eq!((l.count(Act::Write), l.bytes(Act::Write)), (3, 24576));
    assert_eq!(l.rw(), Some(Rw::ReadWrite));
    let reads: Vec<(u32, u64)> = l
        .entries
        .iter()
        .filter(|e| e.act == Act::Read)
        .map(|e| (e.file, e.offset))
        .collect();
    assert_eq!(
        reads,
        vec![(0, 0), (1, 16384), (0, 24576), (0, 8192), (1, 24576)]
    );
    assert_eq!((l.extent(0), l.extent(1)), (32768, 32768));
    // thinktime=2ms: 2,000 µs or more from one I/O to the next.
    let gaps: Vec<u64> = l
        .entries
        .windows(2)
        .filter(|w| w[0].act.is_data() && w[1].act.is_data())
        .map(|w| w[1].delay_us)
        .collect();
    assert_eq!(gaps.len(), 6);
    assert!(gaps.iter().all(|&g| g >= 2000), "{gaps:?}");
    let total: u64 = l.entries.iter().map(|e| e.delay_us).sum();
    assert_eq!(total, 17963 - 21, "the last timestamp less the first");
}

#[test]
fn syncs_are_entries_of_their_own() {
    let l = load("randwrite-fsync.v3.log", &ReplayOpts::default());
    assert_eq!((l.count(Act::Write), l.bytes(Act::Write)), (8, 32768));
    assert_eq!(l.count(Act::Sync), 1);
    let pos = l.entries.iter().position(|e| e.act == Act::Sync).unwrap();
    assert_eq!(
        l.entries[..pos]
            .iter()
            .filter(|e| e.act == Act::Write)
            .count(),
        4
    );
}

const TWO_FILES_V2: &str = "fio version 2 iolog
a add
b add
a open
b open
a read 8192 4096
b write 12288 4096
b read 1000 512
a close
b close
";

#[test]
fn replay_redirect_puts_every_file_on_one() {
    let o = ReplayOpts {
        redirect: Some("/dev/sdz".into()),
        ..ReplayOpts::default()
    };
    let l = parse(TWO_FILES_V2, &o);
    assert_eq!(l.files, vec!["/dev/sdz"]);
    assert!(l.entries.iter().all(|e| e.file == 0));
    // The second add and the second open do nothing, and so does the
    // second close (put_file() of a closed file).
    let acts: Vec<Act> = l.entries.iter().map(|e| e.act).collect();
    use Act::*;
    assert_eq!(
        acts,
        vec![Add, Add, Open, Add, Read, Write, Read, Close, Add]
    );
    let data: Vec<(u64, u64)> = l
        .entries
        .iter()
        .filter(|e| e.act.is_data())
        .map(|e| (e.offset, e.len))
        .collect();
    assert_eq!(data, vec![(8192, 4096), (12288, 4096), (1000, 512)]);
    // Without it, the two files stay apart.
    let l = parse(TWO_FILES_V2, &ReplayOpts::default());
    assert_eq!(l.files, vec!["a", "b"]);
    let files: Vec<u32> = l
        .entries
        .iter()
        .filter(|e| e.act.is_data())
        .map(|e| e.file)
        .collect();
    assert_eq!(files, vec![0, 1, 1]);
}

#[test]
fn replay_scale_divides_offsets_and_replay_align_rounds_them_down() {
    let scaled = |scale, align| {
        let o = ReplayOpts {
            scale,
            align,
            ..ReplayOpts::default()
        };
        let l = parse(&TWO_FILES_V2.replace("a close\nb close\n", ""), &o);
        let v: Vec<(u64, u64)> = l
            .entries
            .iter()
            .filter(|e| e.act.is_data())
            .map(|e| (e.offset, e.len))
            .collect();
        v
    };
    assert_eq!(scaled(1, 0), vec![(8192, 4096), (12288, 4096), (1000, 512)]);
    // Lengths are kept; offsets are divided (integer division).
    assert_eq!(scaled(3, 0), vec![(2730, 4096), (4096, 4096), (333, 512)]);
    assert_eq!(scaled(0, 0), scaled(1, 0), "replay_scale=0 scales nothing");
    assert_eq!(scaled(1, 4096), vec![(8192, 4096), (12288, 4096), (0, 512)]);
    // Scale first, then align.
    assert_eq!(scaled(3, 1024), vec![(2048, 4096), (4096, 4096), (0, 512)]);
}

#[test]
fn v3_delays_follow_fio_delay_since_ttime() {
    let log = "fio version 3 iolog
0 f add
0 f open
500 f read 0 4096
800 f read 4096 4096
700 f read 8192 4096
1700 f read 12288 4096
";
    let delays =
        |o: &ReplayOpts| -> Vec<u64> { parse(log, o).entries.iter().map(|e| e.delay_us).collect() };
    // After a line stamped 0 there is nothing to count from; going back
    // in time waits nothing (and counts from there).
    assert_eq!(delays(&ReplayOpts::default()), vec![0, 0, 0, 300, 0, 1000]);
    let half = ReplayOpts {
        time_scale: 200,
        ..ReplayOpts::default()
    };
    assert_eq!(delays(&half), vec![0, 0, 0, 150, 0, 500]);
    let third = ReplayOpts {
        time_scale: 300,
        ..ReplayOpts::default()
    };
    // Scaled, then truncated.
    assert_eq!((delays(&third)[3], delays(&third)[5]), (100, 333));
    let none = ReplayOpts {
        no_stall: true,
        ..ReplayOpts::default()
    };
    assert!(delays(&none).iter().all(|&d| d == 0));
}

#[test]
fn v2_wait_is_milliseconds_since_start_and_no_stall_drops_it() {
    let log = "fio version 2 iolog\nf add\nf open\nf wait 250 0\nf read 0 4096\n";
    let l = parse(log, &ReplayOpts::default());
    let w = l.entries.iter().find(|e| e.act == Act::Wait).unwrap();
    assert_eq!(w.offset, 250);
    let o = ReplayOpts {
        no_stall: true,
        ..ReplayOpts::default()
    };
    assert_eq!(parse(log, &o).count(Act::Wait), 0);
}

/// Each bad log gives one error naming the log, the line and the fault.
#[test]
fn bad_lines_are_refused_with_file_and_line() {
    let v2 = "fio version 2 iolog\nf add\nf open\n";
    let v3 = "fio version 3 iolog\n1 f add\n2 f open\n";
    let cases: &[(String, usize, &str)] = &[
        ("fio version 1 iolog\n".into(), 1, "not a fio iolog"),
        ("".into(), 1, "empty"),
        ("read 0 4096\n".into(), 1, "not a fio iolog"),
        (format!("{v2}f reed 0 4096\n"), 4, "unknown action 'reed'"),
        (
            format!("{v2}f read 4096\n"),
            4,
            "'read' takes 4 fields (FILE ACTION OFFSET LENGTH), found 3",
        ),
        (format!("{v2}f\n"), 4, "missing field"),
        (
            format!("{v2}f read x 4096\n"),
            4,
            "offset 'x' is not a number",
        ),
        (
            format!("{v2}f read 0 -1\n"),
            4,
            "length '-1' is not a number",
        ),
        (format!("{v2}f read 0 4096 9\n"), 4, "found 5"),
        (format!("{v2}f open 0 0\n"), 4, "'open' takes 2 fields"),
        (format!("{v2}g read 0 4096\n"), 4, "file 'g' was not added"),
        (
            format!("{v2}f close\nf read 0 4096\n"),
            5,
            "file 'f' is not open",
        ),
        (format!("{v2}f open\n"), 4, "already open"),
        (format!("{v2}f write 0 0\n"), 4, "'write' of 0 bytes"),
        (
            format!("{v2}f read 0 4294967296\n"),
            4,
            "more than fio's limit",
        ),
        (
            format!("{v3}3 f read 0 4096\n4 f wait 10 0\n"),
            5,
            "'wait' is not allowed in a version 3 iolog",
        ),
        (
            format!("{v3}x f read 0 4096\n"),
            4,
            "timestamp 'x' is not a number",
        ),
        (
            format!("{v3}3 f read 0\n"),
            4,
            "'read' takes 5 fields (TIMESTAMP FILE ACTION OFFSET LENGTH), found 4",
        ),
        (format!("{v2}\n\nf bogus\n"), 6, "unknown action 'bogus'"),
        (
            format!("{v2}{} add\n", "n".repeat(257)),
            4,
            "longer than 256",
        ),
    ];
    for (text, line, what) in cases {
        let e = iolog::parse(text, "t.log", &ReplayOpts::default()).unwrap_err();
        let s = e.to_string();
        assert_eq!(e.line, *line, "{s}");
        assert!(s.starts_with(&format!("t.log:{line}: read_iolog: ")), "{s}");
        assert!(s.contains(what), "{what:?} in {s}");
        assert!(!s.contains('\n'), "{s}");
    }
    // Nothing to replay: the log as a whole is at fault.
    let e = iolog::parse(&format!("{v2}f close\n"), "t.log", &ReplayOpts::default()).unwrap_err();
    assert_eq!(e.to_string(), "t.log: read_iolog: no read, write or wait in the log (fio 3.33 fails the job: 'failed initializing iolog')");
}

#[test]
fn a_read_iolog_job_takes_files_size_and_direction_from_the_log() {
    let log = data("randrw-2files.v3.log");
    let text = format!("[r]\nrw=randwrite\nbs=64k\nsize=1g\nfilename=x\nread_iolog={log}\nwrite_iolog=/tmp/never\n");
    let j = parse_job_str(&text, "t.fio").unwrap().remove(0);
    let l = j.iolog.as_ref().expect("the log");
    assert_eq!(l.files.len(), 2);
    assert_eq!(j.rw, Rw::ReadWrite, "the log's direction, not rw=");
    assert_eq!(j.size, 40960 + 24576, "the log's bytes");
    let files: Vec<(&str, u64)> = j.files.iter().map(|f| (f.name.as_str(), f.size)).collect();
    assert_eq!(files, vec![("two.0.0", 32768), ("two.0.1", 32768)]);
    assert_eq!(j.write_iolog, None, "read_iolog overrides write_iolog");
    // numjobs: each clone takes the next log of a ':' list.
    let (a, b) = (data("seqread.v2.log"), data("randwrite-fsync.v3.log"));
    let text = format!("[r]\nnumjobs=3\nread_iolog={a}:{b}\n");
    let jobs = parse_job_str(&text, "t.fio").unwrap();
    let names: Vec<(u32, &str)> = jobs
        .iter()
        .map(|j| (j.jobnum, j.filename.as_str()))
        .collect();
    assert_eq!(
        names,
        vec![(0, "seqread.0.0"), (2, "seqread.0.0"), (1, "randwrite.0.0")]
    );
    assert_eq!(jobs[2].rw, Rw::Write);
}

#[test]
fn read_iolog_option_errors_name_the_job_file() {
    let log = data("seqread.v3.log");
    let err = |extra: &str| {
        let text = format!("[r]\nread_iolog={log}\n{extra}");
        parse_job_str(&text, "t.fio").unwrap_err().to_string()
    };
    assert_eq!(
        err("replay_align=3\n"),
        "t.fio:3: replay_align: 3: must be a power of 2"
    );
    assert_eq!(
        err("replay_align=0\n"),
        "t.fio:3: replay_align: 0: must be a power of 2"
    );
    assert!(err("replay_time_scale=0\n").starts_with("t.fio:3: replay_time_scale: 0: out of range"));
    assert!(err("replay_skip=reads\n").contains("unknown skip type 'reads'"));
    assert!(err("directory=/tmp\n")
        .starts_with("t.fio:2: read_iolog: cannot be combined with directory"));
    assert!(err("verify=md5\n").contains("cannot be combined with verify"));
    let text = "[r]\nsize=1m\n\nread_iolog=/nonexistent/x.log\n";
    let e = parse_job_str(text, "t.fio").unwrap_err().to_string();
    assert!(
        e.starts_with("t.fio:4: read_iolog: '/nonexistent/x.log': cannot read: "),
        "{e}"
    );
    // A bad log line names the log, not the job file.
    let bad = std::env::temp_dir().join(format!("foliosim-iolog-{}.log", std::process::id()));
    std::fs::write(
        &bad,
        "fio version 2 iolog\nf add\nf open\nf read zero 4096\n",
    )
    .unwrap();
    let text = format!("[r]\nread_iolog={}\n", bad.display());
    let e = parse_job_str(&text, "t.fio").unwrap_err().to_string();
    let _ = std::fs::remove_file(&bad);
    assert_eq!(
        e,
        format!(
            "{}:4: read_iolog: offset 'zero' is not a number",
            bad.display()
        )
    );
    // replay options are accepted with their log.
    let text = format!("[r]\nread_iolog={log}\nreplay_no_stall\nreplay_redirect=/dev/sdb\nreplay_scale=2\nreplay_align=4k\nreplay_time_scale=50\nread_iolog_chunked=1\nreplay_skip=write,trim\n");
    let j = parse_job_str(&text, "t.fio").unwrap().remove(0);
    assert_eq!(j.files[0].name, "/dev/sdb");
    assert!(j
        .iolog
        .unwrap()
        .entries
        .iter()
        .all(|e| e.delay_us == 0 && e.offset % 4096 == 0));
}

/// The operations a replayed log becomes: a stall marking each file
/// action and each delayed entry, the cache dropped at open, syncs, and
/// what end_fsync, fsync_on_close and unlink add.
#[test]
fn a_replay_runs_the_log_as_operations() {
    use foliosim_workload::jobio::{JobIo, Op, Stall};
    let log = std::env::temp_dir().join(format!("foliosim-iolog-ops-{}.log", std::process::id()));
    std::fs::write(&log, "fio version 3 iolog\n1 f add\n5 f open\n9 f write 4096 4096\n9 f sync 0 0\n10 f write 0 512\n30 f close\n").unwrap();
    let ops = |extra: &str| -> String {
        let text = format!("[r]\nread_iolog={}\n{extra}", log.display());
        let j = parse_job_str(&text, "t.fio").unwrap().remove(0);
        let mut g = JobIo::new(&j, 1);
        let mut v = Vec::new();
        while let Some(op) = g.next_op() {
            v.push(match op {
                Op::Stall(Stall::AfterIssue(ns)) => format!("T{}", ns / 1000),
                Op::Stall(Stall::SinceStart(ns)) => format!("W{}", ns / 1000),
                Op::Invalidate(_) => "I".into(),
                Op::Io { io, .. } => format!("{:?}{}+{}", io.dir, io.offset, io.len),
                Op::Sync { .. } => "S".into(),
                Op::Unlink(_) => "U".into(),
            });
        }
        v.join(" ")
    };
    assert_eq!(ops(""), "T0 T4 I T4 Write4096+4096 S T1 Write0+512 T20");
    assert_eq!(
        ops("invalidate=0\n"),
        "T0 T4 T4 Write4096+4096 S T1 Write0+512 T20"
    );
    // fsync_on_close syncs at the close; end_fsync reopens the closed file
    // (dropping its clean cache) to sync it; unlink goes last.
    assert_eq!(
        ops("fsync_on_close=1\n"),
        "T0 T4 I T4 Write4096+4096 S T1 Write0+512 T20 S"
    );
    assert_eq!(
        ops("end_fsync=1\nunlink=1\n"),
        "T0 T4 I T4 Write4096+4096 S T1 Write0+512 T20 I S U"
    );
    assert_eq!(
        ops("replay_no_stall=1\n"),
        "T0 T0 I Write4096+4096 S Write0+512 T0"
    );
    std::fs::write(
        &log,
        "fio version 2 iolog\nf add\nf open\nf wait 7 0\nf read 0 4096\n",
    )
    .unwrap();
    assert_eq!(ops(""), "T0 T0 I W7000 Read0+4096");
    let _ = std::fs::remove_file(&log);
}

/// What fio's own writer puts in a log and its reader passes over: a
/// sync_file_range line, and the header of a second run appended.
#[test]
fn lines_fio_writes_but_does_not_replay_are_skipped() {
    let log =
        "fio version 3 iolog\n0 f add\n5 f open\n9 f write 0 4096\n12 f sync_file_range 0 4096\n\
               20 f close\nfio version 3 iolog\n0 f add\n3 f open\n8 f read 0 4096\n";
    let l = parse(log, &ReplayOpts::default());
    assert_eq!(l.files, vec!["f"]);
    let acts: Vec<Act> = l.entries.iter().map(|e| e.act).collect();
    use Act::*;
    assert_eq!(acts, vec![Add, Open, Write, Close, Add, Open, Read]);
    // The skipped line's timestamp still counts: close waits 20-12.
    assert_eq!(l.entries[3].delay_us, 8);
}

/// parse_job_str_logs_in (foliosim oracle's model run): a relative
/// read_iolog is read from the directory given, not the working
/// directory; an absolute one as written; the log's own file names are
/// kept; the errors name the log where it was read.
#[test]
fn logs_in_a_directory_resolve_relative_read_iologs_there() {
    use foliosim_workload::fio::{parse_job_str_logs_in, Keywords};
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let kw = Keywords::default();
    let j = parse_job_str_logs_in("[r]\nread_iolog=iolog/seqread.v3.log\n", "t.fio", &kw, &dir)
        .unwrap();
    let log = j[0].iolog.as_deref().unwrap();
    assert_eq!(log, &load("seqread.v3.log", &ReplayOpts::default()));
    assert_eq!(j[0].files[0].name, "seqread.0.0");
    let abs = format!("[r]\nread_iolog={}\n", data("seqread.v2.log"));
    let j =
        parse_job_str_logs_in(&abs, "t.fio", &kw, std::path::Path::new("/nonexistent")).unwrap();
    assert_eq!(j[0].iolog.as_deref().unwrap().version, 2);
    // Relative to the working directory (the crate's), as fio, without it.
    let e = parse_job_str("[r]\nread_iolog=iolog/seqread.v3.log\n", "t.fio").unwrap_err();
    assert!(
        e.to_string()
            .contains("'iolog/seqread.v3.log': cannot read"),
        "{e}"
    );
    let e = parse_job_str_logs_in("[r]\nread_iolog=iolog/none.log\n", "t.fio", &kw, &dir)
        .unwrap_err()
        .to_string();
    let want = format!(
        "t.fio:2: read_iolog: '{}': cannot read",
        dir.join("iolog/none.log").display()
    );
    assert!(e.starts_with(&want), "{e}");
}
