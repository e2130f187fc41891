//! fio's engines in the model: what each does to the page cache, the
//! queue depth of the asynchronous ones, and the truncation/invalidation
//! paths they reach (direct I/O coherency, fallocate, ftruncate, unlink).

use foliosim::mm::blkdev::DeviceProfile;
use foliosim::mm::filemap::OpenFile;
use foliosim::mm::readahead::FileRaState;
use foliosim::mm::truncate::{FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE};
use foliosim::mm::vmscan::classic::ClassicLru;
use foliosim::mm::{Kernel, MmConfig, PAGE_SIZE};
use foliosim::sim::{counter, run_fio, RunReport, SimConfig};
use foliosim_workload::fio::parse_job_str;
use proptest::prelude::*;

fn kernel() -> (Kernel<ClassicLru>, u16) {
    let cfg = MmConfig {
        ram_bytes: 64 << 20,
        reserved_bytes: 4 << 20,
        check_invariants: true,
        ..MmConfig::default()
    };
    let mut k = Kernel::new(cfg, ClassicLru::new());
    let m = k.add_memcg("t", Some(2048));
    (k, m)
}

fn open(k: &mut Kernel<ClassicLru>, pages: u64, memcg: u16) -> OpenFile {
    OpenFile {
        mapping: k.core.add_file(pages * PAGE_SIZE),
        ra: FileRaState::new(128),
        fmode_random: false,
        vm_rand_read: false,
        vm_seq_read: false,
        memcg,
        pte: foliosim::mm::rmap::NO_PTES,
    }
}

fn cached(k: &Kernel<ClassicLru>, f: &OpenFile) -> u64 {
    k.core.files[f.mapping as usize].nrpages
}

fn fio(text: &str, device: &str) -> RunReport {
    let jobs = parse_job_str(text, "t.fio").unwrap();
    let mut cfg = SimConfig::default();
    cfg.mm.device = DeviceProfile::by_name(device).unwrap();
    run_fio(cfg, &jobs)
}

fn c(r: &RunReport, name: &str) -> u64 {
    counter(r, name).unwrap()
}

/// Buffered I/O through libaio is synchronous in io_submit and through
/// io_uring it is the same page-cache read: both cache and read exactly
/// what psync does.
#[test]
fn buffered_async_engines_read_through_the_page_cache_like_psync() {
    let job = |e: &str| format!("[a]\nrw=read\nbs=64k\nsize=16m\nioengine={e}\niodepth=8\n");
    let base = fio(&job("psync"), "nvme");
    assert_eq!(c(&base, "pgpgin"), 16 << 10, "16 MiB read in KiB");
    assert_eq!(c(&base, "file"), 16 << 20);
    for e in [
        "libaio", "io_uring", "posixaio", "pvsync2", "vsync", "splice", "sync",
    ] {
        let r = fio(&job(e), "nvme");
        assert_eq!(c(&r, "pgpgin"), c(&base, "pgpgin"), "{e}");
        assert_eq!(c(&r, "file"), c(&base, "file"), "{e}");
        assert_eq!(r.jobs[0].read.total_ios, 256, "{e}");
    }
    // libaio's buffered I/O completes inside io_submit: psync's timing
    // plus io_getevents, one more system call per I/O (of which some
    // overlaps readahead I/O in flight).
    let r = fio(&job("libaio"), "nvme");
    let syscall = foliosim::mm::CpuCosts::default().syscall;
    assert!(r.elapsed_ns > base.elapsed_ns && r.elapsed_ns <= base.elapsed_ns + 256 * syscall);
}

/// O_DIRECT reads leave nothing in the page cache; passthrough does not
/// even count pgpgin (no submit_bio).
#[test]
fn direct_and_passthrough_bypass_the_cache() {
    for e in ["psync", "libaio", "io_uring", "posixaio", "pvsync2"] {
        let r = fio(
            &format!("[a]\nrw=randread\nbs=4k\nsize=8m\ndirect=1\nioengine={e}\niodepth=4\n"),
            "nvme",
        );
        assert_eq!(c(&r, "file"), 0, "{e}");
        assert_eq!(c(&r, "pgpgin"), 8 << 10, "{e}");
    }
    let r = fio(
        "[a]\nfilename=/dev/ng0n1\nrw=randread\nbs=4k\nsize=8m\nioengine=io_uring_cmd\niodepth=4\n",
        "nvme",
    );
    assert_eq!((c(&r, "file"), c(&r, "pgpgin")), (0, 0));
    assert_eq!(r.jobs[0].read.total_ios, 2048);
}

/// A direct write over a range with dirty cached pages writes them back
/// first and then invalidates them (kiocb_invalidate_pages): the cache
/// empties and pgpgout counts both the writeback and the direct write.
#[test]
fn direct_write_writes_back_then_invalidates_buffered_pages() {
    // The direct writer sleeps 1 s after its first I/O (thinktime), so the
    // buffered writer is done before the rest of its writes.
    let text = "[buf]\nfilename=f\nrw=write\nbs=64k\nsize=16m\n\
                [dio]\nfilename=f\nrw=write\nbs=64k\nsize=16m\ndirect=1\nioengine=libaio\niodepth=4\nthinktime=1s\n";
    let r = fio(text, "nvme");
    assert_eq!(c(&r, "file"), 0, "the direct writes invalidated every page");
    assert_eq!(
        c(&r, "pgpgout"),
        2 * (16 << 10),
        "writeback plus the direct write"
    );
    // Without the direct writer the pages stay cached and dirty.
    let r = fio("[buf]\nfilename=f\nrw=write\nbs=64k\nsize=16m\n", "nvme");
    assert_eq!(
        (c(&r, "file"), c(&r, "file_dirty"), c(&r, "pgpgout")),
        (16 << 20, 16 << 20, 0)
    );
}

#[test]
fn direct_read_writes_back_dirty_cache_but_keeps_it() {
    let (mut k, m) = kernel();
    let mut f = open(&mut k, 256, m);
    k.filemap_write(&mut f, 0, 64 * PAGE_SIZE).unwrap();
    assert_eq!(k.core.wb.nr_dirty, 64);
    let done = k.iomap_dio_rw(&f, 0, 16 * PAGE_SIZE, false);
    assert!(done > k.core.now);
    // kiocb_write_and_wait(): the 16 pages read are clean now, still cached.
    assert_eq!(k.core.wb.nr_dirty, 48);
    assert_eq!(cached(&k, &f), 64);
    let s = &k.core.vm;
    use foliosim::mm::vmstat::Item;
    assert_eq!(s.get(Item::PGPGOUT), 16 * 4);
    assert_eq!(s.get(Item::PGPGIN), 16 * 4);
    k.check_invariants().unwrap();
}

#[test]
fn punch_hole_drops_the_range_and_allocation_keeps_it() {
    let (mut k, m) = kernel();
    let mut f = open(&mut k, 256, m);
    k.filemap_read(&mut f, 0, 128 * PAGE_SIZE).unwrap();
    let before = cached(&k, &f);
    assert!(before >= 128);
    k.vfs_fallocate(f.mapping, FALLOC_FL_KEEP_SIZE, 0, 64 * PAGE_SIZE)
        .unwrap();
    k.vfs_fallocate(f.mapping, 0, 0, 64 * PAGE_SIZE).unwrap();
    assert_eq!(cached(&k, &f), before, "allocation leaves the cache alone");
    // Pages 16..48 go; the partial page at each end stays.
    k.vfs_fallocate(
        f.mapping,
        FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
        15 * PAGE_SIZE + 1,
        33 * PAGE_SIZE,
    )
    .unwrap();
    assert_eq!(cached(&k, &f), before - 32);
    let a = &k.core.files[f.mapping as usize];
    assert!(
        a.folio(15).is_some()
            && a.folio(48).is_some()
            && a.folio(16).is_none()
            && a.folio(47).is_none()
    );
    assert_eq!(
        k.vfs_fallocate(f.mapping, FALLOC_FL_PUNCH_HOLE, 0, PAGE_SIZE),
        Err("EOPNOTSUPP"),
        "the VFS wants KEEP_SIZE with PUNCH_HOLE"
    );
    k.check_invariants().unwrap();
}

#[test]
fn falloc_engine_allocates_without_touching_the_cache() {
    // fio's falloc: reads allocate with KEEP_SIZE, writes with mode 0.
    // (invalidate=0: fio would otherwise drop the cache when the falloc
    // job opens the file, as for any engine that opens it.)
    let text = "[rd]\nfilename=f\nrw=read\nbs=1m\nsize=8m\n\
                [fa]\nfilename=f\nioengine=falloc\nrw=randrw\nbs=64k\nsize=8m\ninvalidate=0\n";
    let r = fio(text, "nvme");
    assert_eq!(c(&r, "file"), 8 << 20);
    assert_eq!(c(&r, "pgpgout"), 0);
    assert_eq!(r.jobs[1].read.total_ios + r.jobs[1].write.total_ios, 128);
}

#[test]
fn truncation_drops_dirty_pages_and_shadows_without_writeback() {
    let (mut k, m) = kernel();
    let mut f = open(&mut k, 512, m);
    k.filemap_write(&mut f, 0, 256 * PAGE_SIZE).unwrap();
    k.truncate_setsize(f.mapping, 100 * PAGE_SIZE + 10);
    // Pages 0..=100 stay (100 holds the new EOF); 101.. are gone unwritten.
    assert_eq!(cached(&k, &f), 101);
    assert_eq!(k.core.wb.nr_dirty, 101);
    assert_eq!(k.core.memcgs[m as usize].nr_dirty, 101);
    use foliosim::mm::vmstat::Item;
    assert_eq!(k.core.vm.get(Item::PGPGOUT), 0);
    // A write past the new EOF extends the file again.
    k.filemap_write(&mut f, 200 * PAGE_SIZE, PAGE_SIZE).unwrap();
    assert_eq!(k.core.files[f.mapping as usize].size, 201 * PAGE_SIZE);
    k.truncate_setsize(f.mapping, 100 * PAGE_SIZE + 10);
    // The flusher skips the truncated folios' stale entries.
    k.sync_all();
    assert_eq!(k.core.vm.get(Item::PGPGOUT), 101 * 4);
    // Shadows go too: fill, force evictions via invalidation of clean
    // pages, then a final truncation leaves the mapping empty.
    k.truncate_inode_pages_final(f.mapping);
    let a = &k.core.files[f.mapping as usize];
    assert_eq!((a.nrpages, a.nrshadows), (0, 0));
    assert_eq!(k.core.memcgs[m as usize].nr_file, 0);
    k.check_invariants().unwrap();
}

#[test]
fn ftruncate_engine_shrinks_the_cache() {
    // A reader caches the file; the ftruncate job then truncates to
    // growing offsets starting at 0: the cache it truncated is gone.
    // Its first truncation (to 0) comes right after the reader's first
    // read; the reader then finds EOF at 0 and reads nothing more.
    // (invalidate=0: not the cache drop fio does when a job opens a file.)
    let text = "[rd]\nfilename=f\nrw=read\nbs=1m\nsize=8m\n\
                [tr]\nfilename=f\nioengine=ftruncate\nrw=write\nbs=1m\nsize=8m\nthinktime=1s\ninvalidate=0\n";
    let r = fio(text, "nvme");
    assert_eq!(c(&r, "file"), 0);
    let r = fio("[rd]\nfilename=f\nrw=read\nbs=1m\nsize=8m\n", "nvme");
    assert_eq!(c(&r, "file"), 8 << 20);
}

#[test]
fn filedelete_frees_the_cache_when_the_last_user_is_done() {
    let text = "[w]\nfilename=f\nrw=write\nbs=64k\nsize=8m\n\
                [rm]\nfilename=f\nioengine=filedelete\nsize=4k\n";
    let r = fio(text, "nvme");
    assert_eq!((c(&r, "file"), c(&r, "file_dirty")), (0, 0));
    assert_eq!(
        c(&r, "pgpgout"),
        0,
        "a deleted file's dirty pages are never written"
    );
    assert_eq!(r.jobs[1].read.total_ios, 1, "one unlink, timed as fio does");
    // unlink=1: the job deletes its own file when done.
    let r = fio(
        "[w]\nfilename=f\nrw=write\nbs=64k\nsize=8m\nunlink=1\n",
        "nvme",
    );
    assert_eq!((c(&r, "file"), c(&r, "pgpgout")), (0, 0));
    // filestat/filecreate touch no data.
    let r = fio("[s]\nioengine=filestat\nnrfiles=20\nfilesize=4k\n[c]\nioengine=dircreate\nnrfiles=5\nfilesize=4k\n", "nvme");
    assert_eq!((c(&r, "file"), c(&r, "pgpgin")), (0, 0));
    assert_eq!(r.jobs[0].read.total_ios, 20);
    // fio reports each operation as an I/O of the file's size.
    assert_eq!(r.jobs[0].read.io_bytes, 20 * 4096);
    assert_eq!(r.jobs[1].read.io_bytes, 5 * 4096);
}

/// fio runs FIO_SYNCIO engines at depth 1 whatever iodepth says; libaio
/// and io_uring keep iodepth requests in the device queue.
#[test]
fn queue_depth_speeds_up_async_direct_reads_only() {
    let job = |e: &str, d: u32| {
        format!(
            "[a]\nrw=randread\nbs=4k\nsize=64m\nio_size=16m\ndirect=1\nioengine={e}\niodepth={d}\n"
        )
    };
    let u1 = fio(&job("io_uring", 1), "nvme");
    let u32_ = fio(&job("io_uring", 32), "nvme");
    let p1 = fio(&job("psync", 1), "nvme");
    let p32 = fio(&job("psync", 32), "nvme");
    assert!(
        u32_.elapsed_ns * 10 < u1.elapsed_ns,
        "{} vs {}",
        u32_.elapsed_ns,
        u1.elapsed_ns
    );
    assert_eq!(p32.elapsed_ns, p1.elapsed_ns, "psync is capped at depth 1");
    // Latency is still one device round trip each at depth 32 on nvme
    // (the queue is far from full): clat from submission to completion.
    let lat = u32_.jobs[0].read.clat_mean_ns;
    assert!((80_000.0..100_000.0).contains(&lat), "{lat}");
    // On a 32-slot SATA SSD at depth 64, half the requests wait for a slot.
    let s32 = fio(&job("libaio", 32), "sata-ssd");
    let s64 = fio(&job("libaio", 64), "sata-ssd");
    assert!(s64.jobs[0].read.clat_mean_ns > 1.5 * s32.jobs[0].read.clat_mean_ns);
}

#[test]
fn batched_submission_commits_the_tail_and_runs_are_deterministic() {
    // 9 I/Os in batches of 8: the last one is committed when the job ends.
    let text = "[a]\nrw=randread\nbs=4k\nsize=36k\ndirect=1\nioengine=libaio\niodepth=8\niodepth_batch=8\n";
    let r = fio(text, "nvme");
    assert_eq!((r.jobs[0].read.total_ios, c(&r, "pgpgin")), (9, 36));
    let text = "[a]\nrw=randrw\nbs=16k\nsize=8m\nioengine=io_uring\niodepth=16\n\
                [b]\nrw=randread\nbs=4k\nsize=8m\ndirect=1\nioengine=posixaio\niodepth=4\n";
    let a = serde_json::to_string(&fio(text, "sata-ssd")).unwrap();
    let b = serde_json::to_string(&fio(text, "sata-ssd")).unwrap();
    assert_eq!(a, b);
}

#[test]
fn null_and_cpuio_do_no_io() {
    let r = fio("[n]\nioengine=null\nsize=64m\nbs=4k\n[c]\nioengine=cpuio\ncpuload=50\nruntime=2\ntime_based\n", "nvme");
    assert_eq!((c(&r, "pgpgin"), c(&r, "file")), (0, 0));
    assert_eq!(r.jobs[0].read.total_ios, 16384);
    assert!(r.elapsed_ns >= 2_000_000_000, "cpuio lasts its runtime");
}

#[test]
fn block_device_takes_the_disk_size() {
    let mut jobs = parse_job_str("[a]\nfilename=/dev/nvme0n1\nrw=read\nbs=1m\n", "t.fio").unwrap();
    let e = foliosim_workload::fio::resolve_device_sizes(&mut jobs, None).unwrap_err();
    assert_eq!(
        e.to_string(),
        "t.fio:1: size: job 'a': /dev/nvme0n1 is a block device and no size= is given: pass --disk-size (the device's capacity)"
    );
    foliosim_workload::fio::resolve_device_sizes(&mut jobs, Some(32 << 20)).unwrap();
    let r = run_fio(SimConfig::default(), &jobs);
    assert_eq!(c(&r, "pgpgin"), 32 << 10, "the whole device is read");
}

#[derive(Debug, Clone)]
enum Op {
    Read(u64, u64),
    Write(u64, u64),
    DirectWrite(u64, u64),
    DirectRead(u64, u64),
    Punch(u64, u64),
    Truncate(u64),
    Touch(u64),
    Flush,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u64..1024, 1u64..64).prop_map(|(p, n)| Op::Read(p, n)),
        (0u64..1024, 1u64..32).prop_map(|(p, n)| Op::Write(p, n)),
        (0u64..1024, 1u64..32).prop_map(|(p, n)| Op::DirectWrite(p, n)),
        (0u64..1024, 1u64..32).prop_map(|(p, n)| Op::DirectRead(p, n)),
        (0u64..1024, 1u64..64).prop_map(|(p, n)| Op::Punch(p, n)),
        (0u64..1024).prop_map(Op::Truncate),
        (0u64..1024).prop_map(Op::Touch),
        Just(Op::Flush),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// Truncation, hole punching and direct I/O mixed with buffered I/O
    /// and mmap keep every count exact (files, dirty, writeback, mapped,
    /// memcg charge) and nothing dirty survives in a range a direct write
    /// just covered.
    #[test]
    fn invariants_hold_with_truncation_and_direct_io(ops in proptest::collection::vec(op(), 1..200)) {
        let (mut k, m) = kernel();
        let mut f = open(&mut k, 1024, m);
        for o in ops {
            let ok = match o {
                Op::Read(p, n) => k.filemap_read(&mut f, p * PAGE_SIZE, n * PAGE_SIZE).is_some(),
                Op::Write(p, n) => k.filemap_write(&mut f, p * PAGE_SIZE, n * PAGE_SIZE).is_some(),
                Op::DirectWrite(p, n) => {
                    let d = k.iomap_dio_rw(&f, p * PAGE_SIZE, n * PAGE_SIZE, true);
                    k.core.wait_until(d);
                    let a = &k.core.files[f.mapping as usize];
                    for i in p..(p + n).min(1024) {
                        prop_assert!(a.folio(i).is_none(), "page {} still cached after a direct write", i);
                    }
                    true
                }
                Op::DirectRead(p, n) => {
                    let d = k.iomap_dio_rw(&f, p * PAGE_SIZE, n * PAGE_SIZE, false);
                    k.core.wait_until(d);
                    true
                }
                Op::Punch(p, n) => k.vfs_fallocate(f.mapping, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, p * PAGE_SIZE, n * PAGE_SIZE).is_ok(),
                Op::Truncate(p) => { k.truncate_setsize(f.mapping, p * PAGE_SIZE); k.truncate_setsize(f.mapping, 1024 * PAGE_SIZE); true }
                Op::Touch(p) => k.mmap_access(&mut f, p),
                Op::Flush => { k.sync_all(); true }
            };
            if let Err(e) = k.check_invariants() { prop_assert!(false, "{}", e); }
            let mc = &k.core.memcgs[m as usize];
            let dirty = (0..1024).filter_map(|i| k.core.files[f.mapping as usize].folio(i))
                .filter(|&id| k.core.folios.get(id).test(foliosim::mm::folio::pg::DIRTY)).count() as u64;
            prop_assert_eq!(mc.nr_dirty, dirty);
            prop_assert_eq!(k.core.wb.nr_dirty, dirty);
            prop_assert_eq!(mc.nr_file, k.core.files[f.mapping as usize].nrpages);
            if !ok { break; }
        }
        k.sync_all();
        prop_assert_eq!(k.core.wb.nr_dirty + k.core.wb.nr_writeback, 0);
    }
}
