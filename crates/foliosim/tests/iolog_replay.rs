//! fio's read_iolog through the model: a replayed log of a job does what
//! the job does, a v3 log's timestamps pace the replay (replay_no_stall,
//! replay_time_scale), v2's wait, `open` drops the clean cache, and
//! replay_redirect puts the files on one.

use foliosim::sim::RunReport;
use foliosim_workload::fio::parse_job_str;
use std::path::PathBuf;

const US: u64 = 1_000;
const MS: u64 = 1_000_000;

mod common;
use common::run_fio_text as run;

fn fixture(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../workload/tests/data/iolog");
    p.join(name).display().to_string()
}

/// A log of its own in the temporary directory.
fn log_file(name: &str, text: &str) -> String {
    let p = std::env::temp_dir().join(format!("foliosim-iolog-{}-{name}", std::process::id()));
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

fn replay(log: &str, extra: &str) -> RunReport {
    run(&format!("[replay]\nread_iolog={log}\n{extra}"))
}

fn vm(r: &RunReport, k: &str) -> u64 {
    r.vmstat[k]
}

/// The same counters, machine-wide and the memcg's, and the same bytes.
fn assert_same_run(a: &RunReport, b: &RunReport) {
    assert_eq!(a.vmstat, b.vmstat);
    assert_eq!(a.memcg, b.memcg);
    let io = |r: &RunReport| {
        (
            r.jobs[0].read.io_bytes,
            r.jobs[0].read.total_ios,
            r.jobs[0].write.io_bytes,
        )
    };
    assert_eq!(io(a), io(b));
}

#[test]
fn real_fio_sequential_read_log_replays_as_the_job_runs() {
    // seqread.v*.log: fio 3.33's own log of this job.
    let direct = run("[seqread]\nrw=read\nbs=4k\nsize=64k\n");
    let v2 = replay(&fixture("seqread.v2.log"), "");
    assert_same_run(&direct, &v2);
    assert_eq!(vm(&v2, "pgpgin"), 64);
    assert_eq!(direct.elapsed_ns, v2.elapsed_ns, "v2 has no timing");
    let v3 = replay(&fixture("seqread.v3.log"), "");
    assert_same_run(&direct, &v3);
    // The log spans 20..964 µs; the model's reads take less.
    assert!(
        v3.elapsed_ns >= 944 * US && v3.elapsed_ns < 944 * US + 100 * US,
        "{}",
        v3.elapsed_ns
    );
}

/// A longer sequential read, where readahead's window grows: the log
/// (fio's format, written here) gives the job's own counters.
#[test]
fn a_larger_sequential_log_keeps_readahead_as_the_job() {
    let mut text = String::from("fio version 2 iolog\nbig.0.0 add\nbig.0.0 open\n");
    for b in 0..1024u64 {
        text += &format!("big.0.0 read {} 4096\n", b * 4096);
    }
    text += "big.0.0 close\n";
    let log = log_file("big.log", &text);
    let direct = run("[big]\nrw=read\nbs=4k\nsize=4m\n");
    let r = replay(&log, "");
    assert_same_run(&direct, &r);
    assert!(vm(&r, "pgpgin") >= 4096);
}

#[test]
fn v3_timestamps_pace_the_replay_unless_told_otherwise() {
    // Two files, thinktime=2ms: the log spans 21..17,963 µs.
    let log = fixture("randrw-2files.v3.log");
    let span = (17963 - 21) * US;
    let paced = replay(&log, "");
    assert!(
        paced.elapsed_ns >= span && paced.elapsed_ns < span + MS,
        "{}",
        paced.elapsed_ns
    );
    let fast = replay(&log, "replay_no_stall=1\n");
    assert!(fast.elapsed_ns < span / 10, "{}", fast.elapsed_ns);
    let double = replay(&log, "replay_time_scale=200\n");
    // Each halved delay is truncated to the µs.
    let d = double.elapsed_ns;
    assert!(d >= span / 2 - 20 * US && d < span / 2 + MS, "{d}");
    let half = replay(&log, "replay_time_scale=50\n");
    assert!(half.elapsed_ns >= 2 * span, "{}", half.elapsed_ns);
    // Timing moves nothing else.
    for r in [&fast, &double, &half] {
        assert_eq!(vm(r, "pgpgin"), vm(&paced, "pgpgin"));
        assert_eq!(r.jobs[0].write.io_bytes, 24576);
        assert_eq!(r.jobs[0].read.io_bytes, 40960);
    }
    // runtime ends a replay early.
    let cut = replay(&log, "runtime=5ms\n");
    assert!(cut.elapsed_ns <= 5 * MS + MS, "{}", cut.elapsed_ns);
    assert!(cut.jobs[0].read.total_ios + cut.jobs[0].write.total_ios < 8);
}

#[test]
fn v2_wait_sleeps_until_milliseconds_after_the_start() {
    let log = log_file(
        "wait.log",
        "fio version 2 iolog\nf add\nf open\nf read 0 4096\nf wait 40 0\nf read 4096 4096\n",
    );
    let r = replay(&log, "");
    assert!(
        r.elapsed_ns >= 40 * MS && r.elapsed_ns < 41 * MS,
        "{}",
        r.elapsed_ns
    );
    assert!(replay(&log, "replay_no_stall=1\n").elapsed_ns < MS);
    // startdelay counts too: fio's clock starts before the job.
    let late = replay(&log, "startdelay=30ms\n");
    assert!(late.elapsed_ns < 41 * MS, "{}", late.elapsed_ns);
}

#[test]
fn open_drops_the_clean_cache_and_redirect_makes_one_file() {
    let body = |f: &str| format!("{f} open\n{f} read 0 65536\n{f} close\n");
    let text = format!(
        "fio version 2 iolog\na add\nb add\n{}{}{}",
        body("a"),
        body("a"),
        body("b")
    );
    let log = log_file("reopen.log", &text);
    // Each open of a drops what the last read cached: a read in twice, b once.
    let r = replay(&log, "");
    assert_eq!(vm(&r, "pgpgin"), 3 * 64);
    let keep = replay(&log, "invalidate=0\n");
    assert_eq!(vm(&keep, "pgpgin"), 2 * 64);
    // Redirected, a and b are one file: every open still drops its cache.
    let one = replay(&log, "replay_redirect=c\n");
    assert_eq!(vm(&one, "pgpgin"), 3 * 64);
    assert_eq!(one.jobs[0].read.io_bytes, 3 * 65536);
    let one_keep = replay(&log, "replay_redirect=c\ninvalidate=0\n");
    assert_eq!(vm(&one_keep, "pgpgin"), 64, "b's read hits what a's left");
}

#[test]
fn replay_scale_and_align_move_the_reads() {
    // Reads at 1 MiB steps, 4 KiB each: scaled by 256 they are 4 KiB
    // apart, one sequential stream that readahead covers.
    let mut text = String::from("fio version 2 iolog\nf add\nf open\n");
    for b in 0..64u64 {
        text += &format!("f read {} 4096\n", (b << 20) + 100);
    }
    let log = log_file("scale.log", &text);
    let spread = replay(&log, "");
    let packed = replay(&log, "replay_scale=256\nreplay_align=4096\n");
    assert_eq!(packed.jobs[0].read.io_bytes, 64 * 4096);
    // Unscaled, each read spans two pages of its own; scaled, the 64
    // reads are the file's 64 pages.
    assert!(
        vm(&spread, "pgpgin") >= 128 * 4,
        "{}",
        vm(&spread, "pgpgin")
    );
    assert_eq!(vm(&packed, "pgpgin"), 64 * 4);
    // The file is as long as the reads go: 64 MiB unscaled, 256 KiB scaled.
    let jobs = parse_job_str(
        &format!("[r]\nread_iolog={log}\nreplay_scale=256\nreplay_align=4096\n"),
        "t.fio",
    )
    .unwrap();
    assert_eq!(jobs[0].files[0].size, (63 << 12) + 4096);
}

/// write_iolog: the model's own issued I/O, in fio's v3 form, appended;
/// replayed, it gives the job's counters back.
#[test]
fn write_iolog_logs_the_models_io_and_replays_to_the_same_counters() {
    use foliosim_workload::fio::iolog::{self, Act, ReplayOpts};
    let path = std::env::temp_dir().join(format!("foliosim-wlog-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let job = "[rr]\nrw=randread\nbs=4k\nsize=256k\nnrfiles=2\n";
    let direct = run(&format!("{job}write_iolog={}\n", path.display()));
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("fio version 3 iolog"));
    assert_eq!(lines.next(), Some("0 rr.0.0 add"));
    assert_eq!(lines.next(), Some("0 rr.0.1 add"));
    assert_eq!(lines.next(), Some("0 rr.0.0 open"));
    let log = iolog::load(&path.display().to_string(), &ReplayOpts::default()).unwrap();
    assert_eq!(log.count(Act::Read), direct.jobs[0].read.total_ios);
    assert_eq!(log.bytes(Act::Read), 256 << 10);
    assert_eq!(log.count(Act::Close), 2);
    // The same random offsets as the job's generator gives.
    let jobs = parse_job_str(job, "t.fio").unwrap();
    let mut g = foliosim_workload::jobio::JobIo::new(&jobs[0], 1);
    let mut want = Vec::new();
    while let Some(op) = g.next_op() {
        if let foliosim_workload::jobio::Op::Io { file, io, .. } = op {
            want.push((file as u32, io.offset));
        }
    }
    let got: Vec<(u32, u64)> = log
        .entries
        .iter()
        .filter(|e| e.act == Act::Read)
        .map(|e| (e.file, e.offset))
        .collect();
    assert_eq!(got, want);
    // fio replays a log as a sequential job (td_ddir from the log has no
    // random bit): fadvise_hint=1 is POSIX_FADV_SEQUENTIAL, and
    // readahead runs where the random job had it off.
    let seq = replay(&path.display().to_string(), "");
    assert_eq!(vm(&direct, "foliosim_ra_async"), 0);
    assert!(vm(&seq, "foliosim_ra_async") > 0);
    let again = replay(&path.display().to_string(), "fadvise_hint=random\n");
    assert_same_run(&direct, &again);
    // A second run appends a second log after the first, as fio's "a"
    // mode does; the reader takes both.
    run(&format!("{job}write_iolog={}\n", path.display()));
    let twice = iolog::load(&path.display().to_string(), &ReplayOpts::default()).unwrap();
    assert_eq!(twice.count(Act::Read), 2 * log.count(Act::Read));
    let _ = std::fs::remove_file(&path);
}
