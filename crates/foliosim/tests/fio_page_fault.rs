//! fio's page_fault engine (engines/page_fault.c, after fio 3.33): each
//! job's anonymous region faulted through the model's anonymous paths
//! (do_anonymous_page, the zero page, do_wp_page, do_swap_page), trims as
//! MADV_DONTNEED, munmap at the job's close.

use foliosim::mm::{MmConfig, SwapKind};
use foliosim::sim::{run_fio, RunReport, SimConfig};
use foliosim_workload::fio::{parse_job_str, parse_job_str_logs_in, Keywords, MadviseHint};

fn cfg(limit: u64) -> SimConfig {
    SimConfig {
        mm: MmConfig {
            ram_bytes: 1 << 30,
            reserved_bytes: 16 << 20,
            check_invariants: true,
            ..MmConfig::default()
        },
        memcg_limit: Some(limit),
        ..SimConfig::default()
    }
}

fn run_with(c: SimConfig, job: &str) -> RunReport {
    let jobs = parse_job_str(job, "t.fio").unwrap();
    run_fio(c, &jobs)
}

fn run(job: &str) -> RunReport {
    run_with(cfg(512 << 20), job)
}

const PAGES: u64 = 64 << 8; // 64 MiB of 4 KiB pages

const WRITE: &str = "[w]\nioengine=page_fault\nrw=write\nbs=4k\nsize=64M\n";

#[test]
fn a_write_pass_faults_and_charges_every_page_once() {
    let r = run(WRITE);
    assert_eq!(r.jobs[0].write.io_bytes, 64 << 20);
    assert_eq!(r.jobs[0].error, 0);
    assert_eq!(r.memcg["pgfault"], PAGES);
    assert_eq!(r.jobs[0].fio.minf, PAGES, "fio's minf is the faults");
    assert_eq!(r.memcg["memcg_pgpgin_events"], PAGES, "one charge a page");
    assert!(r.memcg["max_usage_in_bytes"] >= 64 << 20);
    // munmap at close: nothing anonymous is left, every page uncharged.
    assert_eq!(r.memcg["anon"], 0);
    assert_eq!(r.memcg["memcg_pgpgout_events"], PAGES);
    assert_eq!(r.vmstat["thp_fault_alloc"], 0);
}

#[test]
fn anon_mthp_and_pmd_thp_fault_whole_folios() {
    // hugepages-64kB.enabled=always: one fault and one charge per 16 pages.
    let mut c = cfg(512 << 20);
    c.mm.thp_anon_orders = 1 << 4;
    let r = run_with(c, WRITE);
    assert_eq!(r.memcg["pgfault"], PAGES / 16);
    assert_eq!(r.memcg["memcg_pgpgin_events"], PAGES / 16);
    let m = r.mthp.as_ref().unwrap();
    assert_eq!(m["hugepages-64kB"]["anon_fault_alloc"], PAGES / 16);
    assert_eq!(r.vmstat["thp_fault_alloc"], 0);
    // enabled=always: PMD folios, which count thp_fault_alloc too.
    let mut c = cfg(512 << 20);
    c.mm.thp_anon_orders = 1 << 9;
    let r = run_with(c, WRITE);
    assert_eq!(r.memcg["pgfault"], PAGES / 512);
    assert_eq!(r.vmstat["thp_fault_alloc"], PAGES / 512);
    assert!(r.memcg["max_usage_in_bytes"] >= 64 << 20);
}

#[test]
fn reads_of_untouched_memory_map_the_zero_page_and_charge_nothing() {
    let r = run("[r]\nioengine=page_fault\nrw=randread\nbs=4k\nsize=64M\n");
    assert_eq!(r.jobs[0].read.io_bytes, 64 << 20);
    assert_eq!(r.memcg["pgfault"], PAGES, "every page faults once");
    assert_eq!(r.memcg["memcg_pgpgin_events"], 0);
    assert_eq!(r.vmstat["pgalloc_normal"], 0, "no data page allocated");
    // Only the region's page tables (32 of them) were charged, and the
    // charge batch the memcg stock keeps.
    assert!(r.memcg["max_usage_in_bytes"] < 1 << 20);
}

#[test]
fn each_numjobs_clone_has_its_own_region() {
    let r = run("[w]\nioengine=page_fault\nrw=randwrite\nbs=4k\nsize=16M\nnumjobs=2\n");
    assert_eq!(r.jobs.len(), 2);
    assert_eq!(r.memcg["pgfault"], 2 * 4096);
    assert_eq!(r.memcg["memcg_pgpgin_events"], 2 * 4096);
    assert!(r.memcg["max_usage_in_bytes"] >= 32 << 20);
}

/// A replayed log: (pgfault, charges, trims, oom_killed, error).
fn replay(log: &str, limit: u64) -> (u64, u64, (u64, u64), bool, i32) {
    replay_orders(log, limit, 0)
}

fn replay_orders(log: &str, limit: u64, orders: u32) -> (u64, u64, (u64, u64), bool, i32) {
    let dir = std::env::temp_dir().join(format!(
        "foliosim-pf-{}-{}",
        std::process::id(),
        log.len() + limit as usize
    ));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("pf.log"), log).unwrap();
    let jobs = parse_job_str_logs_in(
        "[t]\nioengine=page_fault\nread_iolog=pf.log\n",
        "t.fio",
        &Keywords::default(),
        &dir,
    )
    .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let mut c = cfg(limit);
    c.mm.swap = SwapKind::None;
    c.mm.thp_anon_orders = orders;
    let r = run_fio(c, &jobs);
    let j = &r.jobs[0];
    (
        r.memcg["pgfault"],
        r.memcg["memcg_pgpgin_events"],
        j.trim,
        j.oom_killed,
        j.error,
    )
}

#[test]
fn trims_zap_the_range_and_the_next_touch_faults_again() {
    let log = "fio version 2 iolog\npf add\npf open\n\
        pf write 0 1048576\n\
        pf read 0 1048576\n\
        pf trim 0 524288\n\
        pf read 0 4096\n\
        pf write 524288 4096\n\
        pf write 4096 4096\n\
        pf close\n";
    let (faults, charges, trim, oom, err) = replay(log, 512 << 20);
    assert_eq!((oom, err), (false, 0));
    assert_eq!(trim, (1, 512 << 10));
    // 256 write faults; the read after them hits; after the trim a read
    // maps the zero page (a fault, no charge), a write past the trimmed
    // range hits, and one inside it faults and charges a fresh page.
    assert_eq!(faults, 256 + 1 + 1);
    assert_eq!(charges, 256 + 1);
}

#[test]
fn a_trim_of_part_of_an_mthp_folio_splits_it() {
    // One 64 KiB folio; its pages 4-7 trimmed (the model splits it at
    // once, where the kernel unmaps them and splits later). Page 4 then
    // reads the zero page, page 0 still hits, and a write to page 5
    // cannot take a 64 KiB folio (its range is not empty): order 0.
    let log = "fio version 2 iolog\npf add\npf open\n\
        pf write 0 65536\n\
        pf trim 16384 16384\n\
        pf read 16384 4096\n\
        pf write 0 4096\n\
        pf write 20480 4096\n\
        pf close\n";
    let (faults, charges, trim, oom, err) = replay_orders(log, 512 << 20, 1 << 4);
    assert_eq!((oom, err), (false, 0));
    assert_eq!(trim, (1, 16384));
    assert_eq!(faults, 3);
    assert_eq!(charges, 2);
}

#[test]
fn trimmed_memory_is_uncharged() {
    // A 1.25 MiB group without swap: 1 MiB written, trimmed, then another
    // MiB written fits only because the trim gave the first back.
    let with = "fio version 2 iolog\npf add\npf open\n\
        pf write 0 1048576\npf trim 0 1048576\npf write 1048576 1048576\npf close\n";
    let without = "fio version 2 iolog\npf add\npf open\n\
        pf write 0 1048576\npf write 1048576 1048576\npf close\n";
    let limit = 1280 << 10;
    let (_, charges, _, oom, err) = replay(with, limit);
    assert_eq!((oom, err), (false, 0));
    assert_eq!(charges, 512);
    let (_, _, _, oom, _) = replay(without, limit);
    assert!(oom, "without the trim the group runs out of memory");
}

#[test]
fn a_log_past_the_region_is_refused() {
    let dir = std::env::temp_dir().join(format!("foliosim-pf-past-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // The region is the log's 8 KiB; the write at 1 MiB is past it.
    std::fs::write(
        dir.join("pf.log"),
        "fio version 2 iolog\npf add\npf open\npf write 0 4096\npf write 1048576 4096\npf close\n",
    )
    .unwrap();
    let e = parse_job_str_logs_in(
        "[t]\nioengine=page_fault\nread_iolog=pf.log\n",
        "t.fio",
        &Keywords::default(),
        &dir,
    )
    .unwrap_err()
    .to_string();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(e.starts_with("t.fio:3: read_iolog: "), "{e}");
    assert!(e.contains("page_fault") && !e.contains('\n'), "{e}");
}

#[test]
fn a_region_over_the_limit_swaps_to_zram() {
    let mut c = cfg(32 << 20);
    c.mm.swap = SwapKind::Zram;
    c.mm.swap_bytes = 128 << 20;
    let r = run_with(
        c,
        "[w]\nioengine=page_fault\nrw=write\nbs=64k\nsize=64M\nloops=2\n",
    );
    let j = &r.jobs[0];
    assert!(!j.oom_killed);
    assert_eq!(j.write.io_bytes, 128 << 20);
    assert!(r.memcg["pswpout"] > 0);
    // The second pass writes pages that were swapped out: do_swap_page,
    // a major fault each.
    assert!(r.memcg["pswpin"] > 0);
    assert!(r.memcg["pgmajfault"] > 0);
    assert!(r.memcg["max_usage_in_bytes"] <= 32 << 20);
}

#[test]
fn madvise_hints_are_parsed_and_take_recency_away() {
    let job = |hint: &str| {
        format!("[m]\nioengine=page_fault\nrw=randrw\nbs=4k\nsize=48M\nio_size=192M\nmadvise_hint={hint}\n")
    };
    let opts = |hint: &str| {
        parse_job_str(&job(hint), "t.fio").unwrap()[0]
            .engine_opts
            .clone()
    };
    assert_eq!(opts("none").madvise_hint, MadviseHint::None);
    assert_eq!(opts("random").madvise_hint, MadviseHint::Random);
    assert_eq!(opts("sequential").madvise_hint, MadviseHint::Sequential);
    // Under pressure, reclaim gives a referenced anon page of a normal
    // region another round (it scans it without taking it); a MADV_RANDOM
    // region's young PTEs do not count (vma_has_recency()), so every page
    // scanned is taken.
    let under = |hint: &str| {
        let mut c = cfg(24 << 20);
        c.mm.swap = SwapKind::Zram;
        c.mm.swap_bytes = 128 << 20;
        run_with(c, &job(hint))
    };
    let kept = |r: &RunReport| r.memcg["pgscan_anon"] - r.memcg["pgsteal_anon"];
    let none = under("none");
    let random = under("random");
    assert!(none.memcg["pswpout"] > 0 && random.memcg["pswpout"] > 0);
    assert_eq!(kept(&random), 0);
    assert!(kept(&none) > 1000, "{}", kept(&none));
}

#[test]
fn hugepage_delay_gives_pmd_folios_only_after_the_delay() {
    // THP enabled=madvise (the default): PMD folios only once the region
    // is MADV_HUGEPAGE. At 256 MiB/s, 100 ms is the first 25.6 MiB.
    let job =
        "[h]\nioengine=page_fault\nrw=write\nbs=4k\nsize=64M\nrate=256m\nhugepage_delay=100\n";
    let r = run(job);
    let thp = r.vmstat["thp_fault_alloc"];
    assert!(thp > 0 && thp < PAGES / 512, "{thp}");
    let small = r.memcg["pgfault"] - thp;
    assert_eq!(small + thp * 512, PAGES);
    assert!((6000..7000).contains(&small), "{small}");
    // Without the delay the region is never madvised: order 0 throughout.
    let r = run(&job.replace("hugepage_delay=100\n", ""));
    assert_eq!(r.vmstat["thp_fault_alloc"], 0);
    assert_eq!(r.memcg["pgfault"], PAGES);
}

#[test]
fn what_would_go_past_the_region_is_refused() {
    let err = |t: &str| parse_job_str(t, "t.fio").unwrap_err().to_string();
    let e = err("[a]\nioengine=page_fault\nsize=1m\noffset=4k\n");
    assert!(
        e.starts_with("t.fio:1: offset: job 'a': ioengine=page_fault"),
        "{e}"
    );
    let e = err("[a]\nioengine=page_fault\nsize=1m\nnumjobs=2\noffset_increment=1m\n");
    assert!(e.contains("offset"), "{e}");
    let e = err("[a]\nioengine=page_fault\nsize=1m\nnrfiles=2\n");
    assert!(e.contains("nrfiles"), "{e}");
    let e = err("[a]\nioengine=page_fault\nfilesize=1m\n");
    assert!(e.contains("give size="), "{e}");
    let e = err("[a]\nioengine=page_fault\nsize=1m\nmadvise_hint=huge\n");
    assert_eq!(
        e,
        "t.fio:4: madvise_hint: bad madvise_hint 'huge' (none, random, sequential)"
    );
    let e = err("[a]\nioengine=page_fault\nsize=1m\nhugepage_delay=-1\n");
    assert!(e.starts_with("t.fio:4: hugepage_delay: "), "{e}");
    // The engine's options are its own.
    let e = err("[a]\nioengine=psync\nsize=1m\nmadvise_hint=random\n");
    assert!(e.contains("unknown or unsupported"), "{e}");
}
