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
    assert_eq!(r.jobs[0].read.runtime_ms / 1000, 3, "{}", r.jobs[0].read.runtime_ms);
    let r = run(&format!("{base}ss=iops:0%\n"));
    assert_eq!(r.jobs[0].read.runtime_ms / 1000, 60);
    // ss_ramp=5s: sampling starts at 6 s, the window is full at 8 s.
    let r = run(&format!("{base}ss=bw:20%\nss_ramp=5s\n"));
    assert_eq!(r.jobs[0].read.runtime_ms / 1000, 8, "{}", r.jobs[0].read.runtime_ms);
}

#[test]
fn group_reporting_shares_one_window_and_ends_the_group() {
    let r = run(
        "[global]\nsize=64m\nrw=randread\ndirect=1\nbs=4k\ntime_based\nruntime=60\nss=iops_slope:5%\nss_dur=4s\ngroup_reporting\n[a]\nfilename=f\nnumjobs=2\n",
    );
    for j in &r.jobs {
        assert_eq!(j.read.runtime_ms / 1000, 4, "{}", j.read.runtime_ms);
    }
    let e = parse_job_str("[a]\nsize=1m\nss=iops:5%\nss_dur=4\n[b]\nsize=1m\nss=iops:6%\nss_dur=4\n", "t.fio")
        .unwrap_err();
    assert!(e.to_string().contains("consistent within reporting groups"), "{e}");
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
    let r = run("[r]\nfilename=z\nzonemode=zbd\nzonesize=1m\ndirect=1\nbs=64k\nrw=randread\nsize=4m\n");
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
    assert!(r.elapsed_ns >= 5_000_000_000 && r.elapsed_ns < 5_100_000_000, "{}", r.elapsed_ns);
    // A target no I/O meets, with latency_percentile=100: the first
    // completion at depth 1 fails the job with ETIMEDOUT.
    let r = run(&format!("{base}latency_target=1us\n"));
    assert_eq!(r.jobs[0].error, 110);
    assert!(r.jobs[0].read.total_ios <= 2, "{}", r.jobs[0].read.total_ios);
}
