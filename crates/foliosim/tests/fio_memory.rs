//! fio's own memory (`--fio-memory on`): charged at fio's start, freed at
//! its exit, and a job whose task the OOM killer chooses stops.

use foliosim::mm::MmConfig;
use foliosim::sim::{fio_process_pages, run_fio, SimConfig};
use foliosim_workload::fio::parse_job_str;

fn run(job: &str, limit: u64, on: bool) -> foliosim::sim::RunReport {
    let jobs = parse_job_str(job, "t.fio").unwrap();
    let cfg = SimConfig {
        mm: MmConfig {
            ram_bytes: 1 << 30,
            reserved_bytes: 16 << 20,
            fio_process_memory: on,
            check_invariants: true,
            ..MmConfig::default()
        },
        memcg_limit: Some(limit),
        ..SimConfig::default()
    };
    run_fio(cfg, &jobs)
}

const JOB: &str = "[a]\nrw=read\nbs=128k\nsize=16M\nioengine=psync\n[b]\nrw=randread\nbs=4k\nsize=16M\nio_size=4M\niodepth=8\nioengine=libaio\n";

#[test]
fn each_jobs_pages_are_charged_once_and_freed_at_exit() {
    let jobs = parse_job_str(JOB, "t.fio").unwrap();
    // The first job carries fio's base; each further process 75 pages;
    // buffers are max_bs x iodepth.
    assert_eq!(fio_process_pages(&jobs[0], true), 2068 + 32);
    assert_eq!(fio_process_pages(&jobs[1], false), 75 + 8);
    let off = run(JOB, 512 << 20, false);
    let on = run(JOB, 512 << 20, true);
    let ev = |r: &foliosim::sim::RunReport, k: &str| r.memcg[k];
    let pages = 2068 + 32 + 75 + 8;
    assert_eq!(
        ev(&on, "memcg_pgpgin_events"),
        ev(&off, "memcg_pgpgin_events") + pages
    );
    assert_eq!(
        ev(&on, "memcg_pgpgout_events"),
        ev(&off, "memcg_pgpgout_events") + pages
    );
    // Freed at exit: nothing anonymous left, the same I/O done.
    assert_eq!(ev(&on, "anon"), 0);
    assert_eq!(on.jobs[0].read.io_bytes, off.jobs[0].read.io_bytes);
    assert!(on.jobs.iter().all(|j| !j.oom_killed));
}

#[test]
fn a_job_the_oom_killer_chooses_stops() {
    // 4 MiB of group: fio's 8 MiB cannot fit; the OOM killer takes a job's
    // task and that job does no more I/O, where without fio's memory the
    // page cache alone fits by reclaim.
    let off = run(JOB, 4 << 20, false);
    assert!(off.jobs.iter().all(|j| !j.oom_killed));
    let on = run(JOB, 4 << 20, true);
    assert!(on.jobs.iter().any(|j| j.oom_killed), "a job was killed");
    assert!(on.memcg["oom_kill"] >= 1);
}
