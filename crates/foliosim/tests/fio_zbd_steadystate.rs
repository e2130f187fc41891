//! fio's zonemode=zbd (emulated zones) and steady-state termination,
//! driven through run_fio: what the kernel sees and when jobs end.

use foliosim::sim::{counter, run_fio, SimConfig};
use foliosim_workload::fio::parse_job_str;

fn run(text: &str) -> foliosim::sim::RunReport {
    run_fio(SimConfig::default(), &parse_job_str(text, "t.fio").unwrap())
}

#[test]
fn steady_iops_ends_the_job_once_the_window_is_full() {
    // Random direct reads run at a steady rate: with ss_dur=3s the third
    // sample fills the window, within 20%, and the job ends at 3 s of its
    // 60. With a 0% limit it never is steady and runs its 60 s.
    let base = "[a]\nfilename=f\nsize=64m\nrw=randread\ndirect=1\nbs=4k\ntime_based\nruntime=60\nss_dur=3s\n";
    let r = run(&format!("{base}ss=iops:20%\n"));
    assert_eq!(
        r.jobs[0].read.runtime_ms / 1000,
        3,
        "{}",
        r.jobs[0].read.runtime_ms
    );
    let r = run(&format!("{base}ss=iops:0%\n"));
    assert_eq!(r.jobs[0].read.runtime_ms / 1000, 60);
    // ss_ramp=5s: sampling starts at 6 s, the window is full at 8 s.
    let r = run(&format!("{base}ss=bw:20%\nss_ramp=5s\n"));
    assert_eq!(
        r.jobs[0].read.runtime_ms / 1000,
        8,
        "{}",
        r.jobs[0].read.runtime_ms
    );
}

#[test]
fn group_reporting_shares_one_window_and_ends_the_group() {
    let r = run(
        "[global]\nsize=64m\nrw=randread\ndirect=1\nbs=4k\ntime_based\nruntime=60\nss=iops_slope:5%\nss_dur=4s\ngroup_reporting\n[a]\nfilename=f\nnumjobs=2\n",
    );
    for j in &r.jobs {
        assert_eq!(j.read.runtime_ms / 1000, 4, "{}", j.read.runtime_ms);
    }
    let e = parse_job_str(
        "[a]\nsize=1m\nss=iops:5%\nss_dur=4\n[b]\nsize=1m\nss=iops:6%\nss_dur=4\n",
        "t.fio",
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("consistent within reporting groups"),
        "{e}"
    );
}

#[test]
fn zbd_writes_land_on_write_pointers_and_reads_stay_below() {
    // A sequential writer of 2 of 4 zones, then a random reader of all 4:
    // the reader reads only what was written (zones 0 and 1; the offsets
    // are checked in zbd's unit tests), and with direct I/O every read
    // reaches the device.
    let r = run(
        "[global]\nfilename=z\nzonemode=zbd\nzonesize=1m\ndirect=1\nbs=64k\n[w]\nrw=write\nsize=2z\n[r]\nstonewall\nrw=randread\nsize=4z\nnumber_ios=40\n",
    );
    assert_eq!(r.jobs[0].write.io_bytes, 2 << 20);
    assert_eq!(r.jobs[1].read.total_ios, 40);
    assert_eq!(counter(&r, "pgpgin"), Some(40 * 64));
    // Without the writer the reader finds no data and ends at once.
    let r =
        run("[r]\nfilename=z\nzonemode=zbd\nzonesize=1m\ndirect=1\nbs=64k\nrw=randread\nsize=4m\n");
    assert_eq!(r.jobs[0].read.total_ios, 0);
}

#[test]
fn latency_target_searches_the_depth_then_reports_one_final_window() {
    // A generous target: depth 1, 2, 4, 8 succeed a window each; at 8 (the
    // iodepth) the depth stays, the statistics restart for one final
    // window, and then the job ends: 5 windows of 1 s, not 60 s, and the
    // report covers the last second only.
    let base = "[a]\nfilename=f\nsize=256m\nrw=randread\ndirect=1\nbs=4k\nioengine=libaio\niodepth=8\ntime_based\nruntime=60\nlatency_window=1s\n";
    let r = run(&format!("{base}latency_target=1s\n"));
    let j = &r.jobs[0];
    assert_eq!(j.error, 0);
    assert_eq!(j.read.runtime_ms / 1000, 1, "{}", j.read.runtime_ms);
    assert!(
        r.elapsed_ns >= 5_000_000_000 && r.elapsed_ns < 5_100_000_000,
        "{}",
        r.elapsed_ns
    );
    // A target no I/O meets, with latency_percentile=100: the first
    // completion at depth 1 fails the job with ETIMEDOUT.
    let r = run(&format!("{base}latency_target=1us\n"));
    assert_eq!(r.jobs[0].error, 110);
    assert!(
        r.jobs[0].read.total_ios <= 2,
        "{}",
        r.jobs[0].read.total_ios
    );
}

fn cached_kib(r: &foliosim::sim::RunReport) -> u64 {
    counter(r, "file").unwrap_or(0) / 1024
}

#[test]
fn trims_punch_holes_discard_devices_and_fail_on_files() {
    // A buffered writer caches 4 MiB; the falloc engine's trims punch
    // holes (fallocate PUNCH_HOLE|KEEP_SIZE): every trimmed page leaves
    // the cache, 1 MiB of 4 KiB trims.
    let w = "[w]\nfilename=f\nsize=4m\nrw=write\nbs=64k\n";
    let r = run(w);
    assert_eq!(cached_kib(&r), 4096);
    let r = run(&format!(
        "{w}[t]\nstonewall\nfilename=f\nsize=1m\nrw=randtrim\nbs=4k\nioengine=falloc\n"
    ));
    assert_eq!(r.jobs[1].trim, (256, 1 << 20));
    assert_eq!(cached_kib(&r), 3072);
    assert_eq!(r.jobs[1].error, 0);
    // psync's trim is BLKDISCARD: on a regular file ENOTTY ends the job at
    // its first trim, and the cache is untouched.
    let r = run(&format!(
        "{w}[t]\nstonewall\nfilename=f\nsize=1m\nrw=trim\nbs=4k\n"
    ));
    assert_eq!((r.jobs[1].error, r.jobs[1].trim.0), (25, 0));
    assert_eq!(cached_kib(&r), 4096);
    // On a block device it drops the device's cached range.
    let d = "[w]\nfilename=/dev/vdz\nsize=4m\nrw=write\nbs=64k\n";
    let r = run(&format!(
        "{d}[t]\nstonewall\nfilename=/dev/vdz\nsize=2m\nrw=trim\nbs=64k\n"
    ));
    assert_eq!((r.jobs[1].error, r.jobs[1].trim.0), (0, 32));
    assert_eq!(cached_kib(&r), 2048);
}

#[test]
fn zbd_trim_resets_a_zone() {
    // Two zones written, zone 0 trimmed (reset): a sequential reader then
    // finds data only in zone 1 and reads its 1 MiB, from 1 MiB on.
    let g = "[global]\nfilename=z\nzonemode=zbd\nzonesize=1m\ndirect=1\n";
    let r = run(&format!(
        "{g}[w]\nrw=write\nbs=64k\nsize=2z\n[t]\nstonewall\nrw=trim\nbs=1m\nsize=1z\n[r]\nstonewall\nrw=read\nbs=64k\nsize=2z\n"
    ));
    assert_eq!(r.jobs[1].trim, (1, 1 << 20));
    assert_eq!(
        (r.jobs[0].fio.zone_resets, r.jobs[1].fio.zone_resets),
        (0, 1)
    );
    assert_eq!(r.jobs[2].read.io_bytes, 1 << 20);
    // A trim must be one whole zone.
    let e = foliosim_workload::zbd::setup(
        &parse_job_str(&format!("{g}[t]\nrw=trim\nbs=64k\nsize=2z\n"), "t.fio").unwrap(),
    );
    assert!(matches!(&e.1[0], Some(Err(m)) if m.contains("not the zone size")));
}

#[test]
fn time_based_zbd_writer_resets_full_zones_and_says_so() {
    // 4 zones of 1 MiB written for 0.5 s at far more than 8 MiB/s: each
    // wrap finds the zones full and resets them, every reset counted and
    // printed as fio's "N zone resets".
    let jobs = parse_job_str(
        "[w]\nfilename=z\nzonemode=zbd\nzonesize=1m\ndirect=1\nrw=write\nbs=256k\nsize=4m\ntime_based\nruntime=500ms\n",
        "t.fio",
    )
    .unwrap();
    let r = run_fio(SimConfig::default(), &jobs);
    let w = &r.jobs[0];
    // Zones begun: the run may stop inside one.
    let zones_written = w.write.io_bytes.div_ceil(1 << 20);
    assert!(zones_written > 8, "{zones_written}");
    // Every zone begun after the first four needed a reset.
    assert_eq!(w.fio.zone_resets, zones_written - 4);
    let text = foliosim::fio_output::render_normal(&r);
    assert!(
        text.contains(&format!("; {} zone resets", zones_written - 4)),
        "{text}"
    );
}
