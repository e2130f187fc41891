//! fio's job-control, file, sync, verify, rate and flow options through the
//! model: each option's effect on the simulated clock, the counters or the
//! page cache.

use foliosim::mm::filemap::OpenFile;
use foliosim::mm::readahead::FileRaState;
use foliosim::mm::vmscan::classic::ClassicLru;
use foliosim::mm::{Kernel, MmConfig, PAGE_SIZE};
use foliosim::sim::RunReport;
use foliosim_workload::fio::parse_job_str;
use proptest::prelude::*;

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

mod common;
use common::run_fio_text as run;

fn near(v: u64, want: u64, tol: u64) -> bool {
    v.abs_diff(want) <= tol
}

#[test]
fn rate_paces_the_job_to_size_over_rate() {
    // 4 MiB at 10 MiB/s: the I/O of byte b is issued at b / rate, so the
    // last (4096 bytes before the end) at 0.3996 s, plus its service time.
    let r = run("[a]\nsize=4m\nrate=10m\n");
    let want = ((4u64 << 20) - 4096) * S / (10 << 20);
    assert!(near(r.elapsed_ns, want, MS), "{} vs {want}", r.elapsed_ns);
    let free = run("[a]\nsize=4m\n");
    assert!(free.elapsed_ns < want / 4, "unpaced: {}", free.elapsed_ns);
    // rate_iops: 100 I/Os per second, 256 I/Os.
    let r = run("[a]\nsize=1m\nrate_iops=100\n");
    assert!(near(r.elapsed_ns, 255 * S / 100, MS), "{}", r.elapsed_ns);
    // A write-only rate (",2m") leaves reads free.
    let r = run("[a]\nsize=4m\nrate=,2m\n");
    assert!(r.elapsed_ns < want / 4);
    // Poisson keeps the mean rate: within 10% over 1024 I/Os.
    let r = run("[a]\nsize=4m\nrate=10m\nrate_process=poisson\n");
    assert!(
        near(r.elapsed_ns, want, want / 10),
        "{} vs {want}",
        r.elapsed_ns
    );
    assert!(r.elapsed_ns != run("[a]\nsize=4m\nrate=10m\n").elapsed_ns);
}

#[test]
fn rate_stops_at_runtime_while_sleeping() {
    let r = run("[a]\nsize=64m\nrate=1m\nruntime=2\n");
    assert!(near(r.elapsed_ns, 2 * S, MS), "{}", r.elapsed_ns);
    let b = r.jobs[0].read.io_bytes;
    assert!(near(b, 2 << 20, 8192), "about 2 s of 1 MiB/s: {b}");
}

#[test]
fn rate_min_fails_a_job_that_is_too_slow() {
    // 40 KiB/s (100 ms think per 4k I/O), 1 MiB/s required: EIO after the
    // first rate_cycle (1 s).
    let r = run("[a]\nsize=8m\nthinktime=100ms\nrate_min=1m\n");
    assert!(err_contains(&r, 5));
    assert!(r.jobs[0].read.io_bytes < 8 << 20);
    assert!(near(r.elapsed_ns, S, 50 * MS), "{}", r.elapsed_ns);
    let r = run("[a]\nsize=1m\nrate=2m\nrate_min=1m\n");
    assert!(!err_contains(&r, 5));
    assert_eq!(
        parse_job_str("[a]\nsize=1m\nrate=100k\nrate_min=1m\n", "t.fio")
            .unwrap_err()
            .to_string(),
        "t.fio:1: rate_min: job 'a': minimum rate exceeds rate"
    );
}

fn err_contains(r: &RunReport, e: i32) -> bool {
    r.jobs.iter().any(|j| j.error == e)
}

#[test]
fn thinktime_sleeps_without_cpu_and_in_blocks() {
    // 16 I/Os, 10 ms after each: 160 ms of sleep.
    let r = run("[a]\nsize=64k\nthinktime=10ms\n");
    assert!(near(r.elapsed_ns, 160 * MS, 2 * MS), "{}", r.elapsed_ns);
    // thinktime_blocks=4: after every 4 I/Os.
    let r = run("[a]\nsize=64k\nthinktime=10ms\nthinktime_blocks=4\n");
    assert!(near(r.elapsed_ns, 40 * MS, 2 * MS), "{}", r.elapsed_ns);
    // Two jobs sleeping together take as long as one: a sleeping job
    // leaves the CPU to the other.
    let r = run("[a]\nsize=64k\nthinktime=10ms\n[b]\nsize=64k\nthinktime=10ms\n");
    assert!(near(r.elapsed_ns, 160 * MS, 4 * MS), "{}", r.elapsed_ns);
    // thinktime_iotime: think once per 50 ms of I/O (+ the think itself).
    let r = run("[a]\nsize=1m\nrate=1m\nthinktime=100ms\nthinktime_iotime=50ms\n");
    let plain = run("[a]\nsize=1m\nrate=1m\n").elapsed_ns;
    assert!(r.elapsed_ns > plain, "{} vs {plain}", r.elapsed_ns);
    // By default the rate catches up after a think (the schedule is from
    // the job's start): four 100 ms thinks cost only the last one.
    // rate_ignore_thinktime moves the schedule on by each think instead.
    let caught = run("[a]\nsize=1m\nrate=1m\nthinktime=100ms\nthinktime_blocks=64\n").elapsed_ns;
    assert!(near(caught, S + 100 * MS, 10 * MS), "{caught}");
    let ignored = run(
        "[a]\nsize=1m\nrate=1m\nthinktime=100ms\nthinktime_blocks=64\nrate_ignore_thinktime=1\n",
    )
    .elapsed_ns;
    assert!(ignored > caught + 250 * MS, "{ignored} vs {caught}");
}

#[test]
fn stonewall_wait_for_and_startdelay_order_the_jobs() {
    // Each job: 1 MiB at 1 MiB/s, about one second.
    let one = "size=1m\nrate=1m\n";
    let together = run(&format!("[a]\n{one}[b]\n{one}"));
    assert!(
        near(together.elapsed_ns, S, 10 * MS),
        "{}",
        together.elapsed_ns
    );
    let walled = run(&format!("[a]\n{one}[b]\nstonewall\n{one}"));
    assert!(
        near(walled.elapsed_ns, 2 * S, 20 * MS),
        "{}",
        walled.elapsed_ns
    );
    let waits = run(&format!("[a]\n{one}[b]\n{one}[c]\nwait_for=a\n{one}"));
    assert!(
        near(waits.elapsed_ns, 2 * S, 20 * MS),
        "{}",
        waits.elapsed_ns
    );
    let delayed = run(&format!("[a]\n{one}startdelay=3\n"));
    assert!(
        near(delayed.elapsed_ns, 4 * S, 10 * MS),
        "{}",
        delayed.elapsed_ns
    );
    // The startdelay counts from the run's start even behind a stonewall
    // (fio's utime_since_genesis): b starts at max(1 s, 500 ms).
    let both = run(&format!(
        "[a]\n{one}[b]\nstonewall\nstartdelay=500ms\n{one}"
    ));
    assert!(near(both.elapsed_ns, 2 * S, 20 * MS), "{}", both.elapsed_ns);
    // A range draws a delay in it, the same on every run.
    let r1 = run(&format!("[a]\n{one}startdelay=1-3\n"));
    let r2 = run(&format!("[a]\n{one}startdelay=1-3\n"));
    assert_eq!(r1.elapsed_ns, r2.elapsed_ns);
    assert!(r1.elapsed_ns >= 2 * S && r1.elapsed_ns <= 4 * S + 10 * MS);
}

#[test]
fn exitall_terminates_by_exit_what() {
    let long = "size=64m\nrate=1m\n";
    let short = "size=512k\nrate=1m\n";
    // The short job exits at 0.5 s and takes its group with it.
    let r = run(&format!("[global]\nexitall\n[s]\n{short}[l]\n{long}"));
    assert!(near(r.elapsed_ns, S / 2, 10 * MS), "{}", r.elapsed_ns);
    assert!(r.jobs[1].read.io_bytes < 1 << 20);
    // exit_what=group: another group keeps running.
    let r = run(&format!(
        "[global]\nexitall\n[s]\n{short}[l]\nnew_group\nsize=2m\nrate=1m\n"
    ));
    assert!(near(r.elapsed_ns, 2 * S, 10 * MS), "{}", r.elapsed_ns);
    // exit_what=all also cancels jobs not started yet.
    let r = run(&format!(
        "[global]\nexitall\n[s]\n{short}exit_what=all\n[l]\nnew_group\n{long}[w]\nstonewall\n{long}"
    ));
    assert!(near(r.elapsed_ns, S / 2, 10 * MS), "{}", r.elapsed_ns);
    assert_eq!(r.jobs[2].read.io_bytes, 0);
    // A job asleep in a long think is woken by the terminate.
    let r = run(&format!(
        "[global]\nexitall\n[s]\n{short}[l]\nsize=1m\nthinktime=10s\n"
    ));
    assert!(near(r.elapsed_ns, S / 2, 10 * MS), "{}", r.elapsed_ns);
    // Without exitall nothing is cut short.
    let r = run(&format!("[s]\n{short}[l]\nsize=2m\nrate=1m\n"));
    assert!(near(r.elapsed_ns, 2 * S, 10 * MS));
}

#[test]
fn fsync_every_n_writes_writes_back_and_waits() {
    // 64 KiB of writes stay dirty without fsync (far below the dirty
    // thresholds, and the run ends before they expire).
    let plain = run("[w]\nrw=write\nsize=64k\n");
    assert_eq!(plain.memcg["pgpgout"], 0);
    assert_eq!(plain.memcg["file_dirty"], 64 << 10);
    let r = run("[w]\nrw=write\nsize=64k\nfsync=4\n");
    assert_eq!(r.memcg["pgpgout"], 64, "every page written once (KiB)");
    assert_eq!(r.memcg["file_dirty"], 0);
    // The writer waits for the device each time: slower than without.
    assert!(r.elapsed_ns > plain.elapsed_ns * 4);
    // fsync=1 waits 16 times, fsync=4 four times.
    let every = run("[w]\nrw=write\nsize=64k\nfsync=1\n");
    assert!(every.elapsed_ns > r.elapsed_ns);
    for opt in [
        "fdatasync=4",
        "end_fsync=1",
        "fsync_on_close=1",
        "sync_file_range=write,wait_after:4",
    ] {
        let r = run(&format!("[w]\nrw=write\nsize=64k\n{opt}\n"));
        assert_eq!(r.memcg["pgpgout"], 64, "{opt}");
        assert_eq!(r.memcg["file_dirty"], 0, "{opt}");
    }
    // sync_file_range=write starts writeback without waiting for it.
    let r = run("[w]\nrw=write\nsize=64k\nsync_file_range=write:16\n");
    assert_eq!(r.memcg["pgpgout"], 64);
    assert!(r.elapsed_ns < every.elapsed_ns);
}

#[test]
fn fsync_only_syncs_its_own_file() {
    // Job b's dirty pages survive job a's fsyncs (per-file writeback).
    let r = run("[a]\nrw=write\nsize=64k\nfsync=1\n[b]\nrw=write\nsize=64k\n");
    assert_eq!(r.memcg["pgpgout"], 64);
    assert_eq!(r.memcg["file_dirty"], 64 << 10);
}

#[test]
fn nrfiles_splits_the_size_and_caches_every_file() {
    let r = run("[a]\nsize=64k\nnrfiles=4\n");
    assert_eq!(r.jobs[0].read.io_bytes, 64 << 10);
    assert_eq!(r.memcg["file"], 64 << 10);
    // filesize: each of the 4 files is 32k, size= caps the job at 64k.
    let r = run("[a]\nsize=64k\nnrfiles=4\nfilesize=32k\n");
    assert_eq!(r.jobs[0].read.io_bytes, 64 << 10);
    // filesize alone: every file's region, 4 x 32k.
    let r = run("[a]\nnrfiles=4\nfilesize=32k\n");
    assert_eq!(r.jobs[0].read.io_bytes, 128 << 10);
    // Several names in filename=, one shared with another job.
    let r = run("[a]\nfilename=x:y\nsize=64k\n[b]\nfilename=y\nsize=32k\n");
    assert_eq!(r.memcg["file"], 64 << 10, "y is one file");
}

#[test]
fn unlink_drops_the_page_cache() {
    let kept = run("[w]\nrw=write\nsize=256k\n");
    assert_eq!(kept.memcg["file"], 256 << 10);
    let r = run("[w]\nrw=write\nsize=256k\nunlink=1\n");
    assert_eq!(r.memcg["file"], 0);
    assert_eq!(r.memcg["file_dirty"], 0);
    assert_eq!(
        r.memcg["pgpgout"], 0,
        "dirty pages of an unlinked file are dropped unwritten"
    );
    // unlink_each_loop: each loop starts from an empty file.
    let r = run("[r]\nsize=256k\nloops=2\nunlink_each_loop=1\ninvalidate=0\n");
    assert_eq!(
        r.vmstat["pgpgin"], 512,
        "both loops read from the device (KiB)"
    );
    let r = run("[r]\nsize=256k\nloops=2\ninvalidate=0\n");
    assert_eq!(r.vmstat["pgpgin"], 256, "the second loop hits the cache");
}

#[test]
fn verify_reads_back_from_the_device() {
    let r = run("[w]\nrw=write\nsize=1m\nverify=crc32c\n");
    let j = &r.jobs[0];
    assert_eq!((j.write.io_bytes, j.read.io_bytes), (1 << 20, 1 << 20));
    // do_verify syncs and drops the cache first: the reads are misses.
    assert_eq!(r.memcg["pgpgout"], 1024);
    assert_eq!(r.vmstat["pgpgin"], 1024);
    // verify_backlog reads back from the cache as it goes.
    let r = run("[w]\nrw=write\nsize=1m\nverify=md5\nverify_backlog=16\n");
    assert_eq!(r.jobs[0].read.io_bytes, 1 << 20);
    assert_eq!(r.vmstat["pgpgin"], 0);
    // Checksum-only options change nothing modelled.
    let a = run("[w]\nrw=write\nsize=1m\nverify=crc32c\n");
    let b = run("[w]\nrw=write\nsize=1m\nverify=sha256\nverify_pattern=0xaa\nverify_interval=512\nverify_fatal=1\n");
    assert_eq!(a.elapsed_ns, b.elapsed_ns);
}

#[test]
fn pre_read_fills_the_cache_before_the_job() {
    let r = run("[r]\nsize=1m\nrw=randread\npre_read=1\n");
    assert_eq!(r.vmstat["pgpgin"], 1024);
    assert_eq!(
        r.jobs[0].read.io_bytes,
        1 << 20,
        "the pre-read is not counted"
    );
    assert_eq!(r.vmstat["pgmajfault"], 0);
}

#[test]
fn flow_shares_ios_by_weight() {
    // Two time-based jobs in one flow, weights 1 and 3: I/Os 1:3.
    let r = run(
        "[global]\nsize=64m\ntime_based\nruntime=200ms\nflow_sleep=100\n[a]\nflow=1\n[b]\nflow=3\n",
    );
    let (a, b) = (r.jobs[0].read.total_ios, r.jobs[1].read.total_ios);
    assert!(a > 100, "{a}");
    let ratio = b as f64 / a as f64;
    assert!((2.7..3.3).contains(&ratio), "{a} {b}");
}

#[test]
fn create_only_does_no_io_and_runs_are_deterministic() {
    let r = run("[a]\nsize=1m\ncreate_only=1\n");
    assert_eq!(r.jobs[0].read.io_bytes, 0);
    let text = "[global]\nsize=2m\nnrfiles=3\nfile_service_type=random\nrate=4m\nrate_process=poisson\nthinktime=1ms\nthinktime_blocks=8\n[a]\nrw=randrw\nfsync=5\nverify=md5\nverify_backlog=7\n[b]\nstartdelay=0-1\nunlink=1\n";
    let a = serde_json::to_string(&run(text)).unwrap();
    let b = serde_json::to_string(&run(text)).unwrap();
    assert_eq!(a, b);
}

#[derive(Debug, Clone)]
enum KOp {
    Read(u64, u64),
    Write(u64, u64),
    Fsync(u64, u64),
    Sfr(u64, u64, u8),
    Truncate,
    Flush,
}

fn kop() -> impl Strategy<Value = KOp> {
    prop_oneof![
        (0u64..2048, 1u64..32).prop_map(|(p, n)| KOp::Read(p, n)),
        (0u64..2048, 1u64..32).prop_map(|(p, n)| KOp::Write(p, n)),
        (0u64..2048, 0u64..2048).prop_map(|(a, b)| KOp::Fsync(a, b)),
        (0u64..2048, 0u64..512, 0u8..8).prop_map(|(a, b, f)| KOp::Sfr(a, b, f)),
        Just(KOp::Truncate),
        Just(KOp::Flush),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Per-file writeback and truncation keep the model's invariants, and
    /// after a waited sync of a range no folio in it is dirty or under
    /// writeback.
    #[test]
    fn sync_and_truncate_keep_invariants(ops in proptest::collection::vec(kop(), 1..200), limit in 400u64..2000) {
        let cfg = MmConfig { ram_bytes: 64 << 20, reserved_bytes: 4 << 20, check_invariants: true, ..MmConfig::default() };
        let mut k = Kernel::new(cfg, ClassicLru::new());
        let m = k.add_memcg("t", Some(limit));
        let mut f = OpenFile {
            mapping: k.core.add_file(2048 * PAGE_SIZE),
            ra: FileRaState::new(128),
            fmode_random: false,
            vm_rand_read: false,
            vm_seq_read: false,
            memcg: m,
            pte: foliosim::mm::rmap::NO_PTES,
        };
        let other = k.core.add_file(2048 * PAGE_SIZE);
        let mut g = OpenFile { mapping: other, ..f.clone() };
        for o in ops {
            match o {
                KOp::Read(p, n) => { k.filemap_read(&mut f, p * PAGE_SIZE, n * PAGE_SIZE); }
                KOp::Write(p, n) => {
                    k.filemap_write(&mut f, p * PAGE_SIZE, n * PAGE_SIZE);
                    k.filemap_write(&mut g, p * PAGE_SIZE, PAGE_SIZE);
                }
                KOp::Fsync(a, b) => {
                    let (lo, hi) = (a.min(b), a.max(b));
                    let dirty_other = k.core.memcgs[m as usize].nr_dirty;
                    k.file_write_and_wait_range(f.mapping, lo * PAGE_SIZE, hi * PAGE_SIZE + PAGE_SIZE - 1);
                    for p in lo..=hi {
                        if let Some(id) = k.core.files[f.mapping as usize].folio(p) {
                            let fo = k.core.folios.get(id);
                            prop_assert!(!fo.test(foliosim::mm::folio::pg::DIRTY) && !fo.test(foliosim::mm::folio::pg::WRITEBACK), "page {p} still dirty/writeback");
                        }
                    }
                    prop_assert!(k.core.memcgs[m as usize].nr_dirty <= dirty_other);
                }
                KOp::Sfr(a, n, fl) => {
                    k.sync_file_range(f.mapping, a * PAGE_SIZE, (a + n) * PAGE_SIZE, fl & 1 != 0, fl & 2 != 0, fl & 4 != 0);
                }
                KOp::Truncate => {
                    k.truncate_inode_pages_final(f.mapping);
                    prop_assert_eq!(k.core.files[f.mapping as usize].nrpages, 0);
                }
                KOp::Flush => k.wb_flush(),
            }
            if let Err(e) = k.check_invariants() { prop_assert!(false, "{}", e); }
            let mc = &k.core.memcgs[m as usize];
            prop_assert!(mc.usage <= limit);
            prop_assert_eq!(mc.nr_dirty + k.core.memcgs[0].nr_dirty, k.core.wb.nr_dirty);
            // Range writeback and truncation leave stale entries in the
            // flusher's queue (it skips folios no longer dirty): every dirty
            // folio has an entry, not every entry a dirty folio.
            prop_assert!(k.core.wb.dirty.len() as u64 >= k.core.wb.nr_dirty);
            let queued = k.core.wb.dirty.iter().filter(|&&(id, _)| k.core.folios.get(id).test(foliosim::mm::folio::pg::DIRTY)).count() as u64;
            prop_assert!(queued >= k.core.wb.nr_dirty);
        }
    }
}
