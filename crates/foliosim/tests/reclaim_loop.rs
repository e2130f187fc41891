//! Seed 003's swappiness experiment at reduced size: the kernel-build proxy
//! on the classic LRU moves as Barry Song's classic table does (more swap
//! and fewer file refaults as swappiness rises), and the MGLRU report
//! carries the type-selection counters that explain its own balance.

use foliosim::reproduce::reclaim_loop::{kendall_tau, trend, Row, KERNEL_BUILD_TOML};
use foliosim::scenario::run_scenario;
use foliosim::sim::{LruKind, SimConfig};
use foliosim_workload::scenario::{parse, Scenario};

/// The proxy with fewer compiles: each make job's first two.
fn proxy() -> Scenario {
    let mut sc = parse(KERNEL_BUILD_TOML, "kernel-build.toml").expect("the shipped proxy parses");
    assert_eq!(sc.processes.len(), 14, "the proxy's make jobs");
    for p in &mut sc.processes {
        let steps = &mut p.threads[0].steps;
        assert!(steps.len() > 2, "{}: {} compiles", p.name, steps.len());
        steps.truncate(2);
    }
    sc
}

/// A machine of `ram` bytes (the reserve scaled down as `foliosim run
/// --memory` does), with zram of `zram` bytes when given.
fn machine(ram: u64, zram: Option<u64>) -> SimConfig {
    let mut c = SimConfig::default();
    c.mm.ram_bytes = ram;
    c.mm.reserved_bytes = c.mm.reserved_bytes.min(ram / 16);
    if let Some(z) = zram {
        c.mm.swap = foliosim::mm::SwapKind::Zram;
        c.mm.swap_bytes = z;
    }
    c
}

/// `c` under MGLRU.
fn mglru(c: &SimConfig) -> SimConfig {
    let mut c = c.clone();
    c.lru = LruKind::Mglru;
    c
}

/// The row of `variant` and `metric`.
fn row<'a>(rows: &'a [Row], variant: &str, metric: &str) -> &'a Row {
    rows.iter()
        .find(|r| r.variant == variant && r.metric == metric)
        .unwrap_or_else(|| panic!("no row {variant} {metric}"))
}

fn cfg(lru: LruKind, swappiness: u32) -> SimConfig {
    let mut c = SimConfig::default();
    c.mm.ram_bytes = 2 << 30;
    c.mm.swap = foliosim::mm::SwapKind::Zram;
    c.mm.swap_bytes = 1 << 30;
    c.mm.swappiness = swappiness;
    c.lru = lru;
    c
}

#[test]
fn classic_swaps_more_and_refaults_less_file_as_swappiness_rises() {
    let sc = proxy();
    let run = |s| {
        let r = run_scenario(cfg(LruKind::Classic, s), &sc).unwrap();
        let m = r.cgroups["kbuild"].clone();
        (
            r.run.vmstat["pswpout"],
            m["workingset_refault_file"],
            m["workingset_refault_anon"],
        )
    };
    let (lo, hi) = (run(35), run(175));
    // At 35 the classic LRU may keep all anon and reclaim only file.
    assert!(lo.1 > 0, "the proxy is under pressure at 35: {lo:?}");
    assert!(
        hi.0 > lo.0,
        "pswpout rises with swappiness: {lo:?} -> {hi:?}"
    );
    assert!(hi.1 < lo.1, "file refaults fall: {lo:?} -> {hi:?}");
    assert!(hi.2 > lo.2, "anon refaults rise: {lo:?} -> {hi:?}");
}

/// Mainline MGLRU as the thread ran it (the fault path's
/// folio_set_active(), before seed 000's patch) moves with swappiness as
/// Barry Song's mainline table does, and as Debian's 7.0 did in the QEMU
/// guest (docs/fidelity/seed003.md): more swap, fewer file refaults.
#[test]
fn mainline_mglru_of_the_thread_follows_swappiness() {
    let sc = proxy();
    let run = |s, seed| {
        let mut c = cfg(LruKind::Mglru, s);
        c.seed = seed;
        c.mm.variants
            .apply(foliosim::reproduce::reclaim_loop::SEED_TREE)
            .unwrap();
        c.mm.variants.apply("reclaim-legacy").unwrap();
        assert_eq!(
            c.mm.variants.pf_activation,
            foliosim::mm::PfActivation::SetActive
        );
        let r = run_scenario(c, &sc).unwrap();
        (
            r.run.vmstat["pswpout"],
            r.cgroups["kbuild"]["workingset_refault_file"],
        )
    };
    let sum = |s| {
        (1..=3)
            .map(|seed| run(s, seed))
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    };
    let (lo, hi) = (sum(35), sum(175));
    assert!(
        hi.0 > lo.0,
        "pswpout rises with swappiness: {lo:?} -> {hi:?}"
    );
    assert!(hi.1 < lo.1, "file refaults fall: {lo:?} -> {hi:?}");
}

#[test]
fn mglru_report_counts_type_choices_and_fallbacks_per_cgroup() {
    let sc = proxy();
    let mut c = cfg(LruKind::Mglru, 100);
    c.mm.variants
        .apply("reclaim-rework,no-isolate-fallback-fix")
        .unwrap();
    let r = run_scenario(c, &sc).unwrap();
    let st = &r.cgroup_lru_gen["kbuild"]["stats"];
    let n = |k: &str, i: usize| st[k][i].as_u64().unwrap();
    let chosen = n("type_chosen", 0) + n("type_chosen", 1);
    assert!(chosen > 0, "isolate_folios() ran: {st}");
    // Every fallback follows a round of the chosen type, so there are at
    // most as many fallbacks as choices.
    let fallback = n("type_fallback", 0) + n("type_fallback", 1);
    assert!(fallback <= chosen, "{st}");
    // The anon evicted reached zram: a fallback or a choice took anon.
    assert!(r.run.vmstat["pswpout"] > 0);
    assert!(n("type_chosen", 0) + n("type_fallback", 0) > 0, "{st}");
    // The classic LRU has no lru_gen view.
    let r = run_scenario(cfg(LruKind::Classic, 100), &sc).unwrap();
    assert!(r.cgroup_lru_gen.is_empty());
}

#[test]
fn trend_and_tau_read_the_seeds_series() {
    // Barry Song's mainline MGLRU pswpout: one dip at 105.
    let mainline = [3365968.0, 3565887.0, 3396069.0, 3935186.0, 4256014.0];
    assert_eq!(trend(&mainline), "up and down");
    assert!((kendall_tau(&mainline) - 0.8).abs() < 1e-9);
    let classic_refault_file = [750021.0, 459740.0, 303701.0, 173236.0, 117625.0];
    assert_eq!(trend(&classic_refault_file), "falls");
    assert_eq!(kendall_tau(&classic_refault_file), -1.0);
}

/// Seed 003's MongoDB proxy with a 4 s client loop: every seed metric has
/// its before, after and change rows with the seed's figures; operations
/// are counted from the clients' I/Os; and the model's account of the runs
/// holds (docs/fidelity/seed003.md): the legacy loop sorts dirty folios
/// for writeback and the rework leaves them to shrink_folio_list(); no
/// run ages (pread-only file folios join the oldest generation, which
/// never empties); the file cache refaults.
#[test]
fn mongodb_proxy_rows_and_the_models_account() {
    use foliosim::reproduce::reclaim_loop::{mongodb_ycsb, MONGODB_TOML, SEED_MONGODB};
    let text = MONGODB_TOML.replace("duration = \"20s\"", "duration = \"4s\"");
    assert_eq!(
        text.matches("duration = \"4s\"").count(),
        3,
        "the proxy's loops moved"
    );
    let sc = parse(&text, "seed003-mongodb-ycsb.toml").expect("the shipped proxy parses");
    let mut c = machine(4 << 30, None);
    c.mm.device = foliosim::mm::blkdev::DeviceProfile::by_name("nvme").unwrap();
    c.seed = 3;
    let rows = mongodb_ycsb(&c, &sc, 2);
    let get = |variant: &str, metric: &str| row(&rows, variant, metric);
    for s in SEED_MONGODB.rows() {
        let (metric, before, after) = (s.metric, s.before, s.after);
        let b = get("reclaim-legacy", metric);
        let a = get("reclaim-rework", metric);
        assert_eq!(b.seed_value, Some(before), "{metric}");
        assert_eq!(a.seed_value, Some(after), "{metric}");
        let ch = get("change", metric);
        if b.value > 0.0 {
            let want = (a.value - b.value) / b.value * 100.0;
            assert!(
                (ch.value - want).abs() < 1e-9,
                "{metric}: {} vs {want}",
                ch.value
            );
        }
        if before > 0.0 {
            let seed_pct = (after - before) / before * 100.0;
            assert!((ch.seed_value.unwrap() - seed_pct).abs() < 1e-9, "{metric}");
        }
    }
    assert!(
        (get("change", "throughput").seed_value.unwrap() - 27.6).abs() < 0.05,
        "the seed's +27.6%"
    );
    for v in ["reclaim-legacy", "reclaim-rework"] {
        let ops = get(v, "throughput").value * 4.0;
        assert!(ops > 1000.0, "{v}: {ops} operations");
        assert_eq!(ops % 20.0, 0.0, "{v}: whole client loops");
        let lat = get(v, "average_latency_us").value;
        // An operation takes the proxy's compute step and waits for its
        // read on top: the average lies above the compute alone.
        let compute_us: f64 = text
            .split("op = \"compute\", time = \"")
            .nth(1)
            .and_then(|t| t.split("us\"").next())
            .and_then(|t| t.parse().ok())
            .expect("the proxy's compute step in us");
        assert!(lat > compute_us && lat < 1000.0, "{v}: {lat} us");
        assert!(get(v, "workingset_refault_file").value > 0.0, "{v}");
        assert_eq!(get(v, "workingset_refault_anon").value, 0.0, "{v}: no swap");
        assert!(get(v, "pgpgout").value > 0.0, "{v}: checkpoints write back");
        assert_eq!(get(v, "foliosim_nr_aging").value, 0.0, "{v}");
    }
    // The rework never sorts dirty or writeback folios in sort_folio();
    // how many the legacy sorts here depends on where the checkpoints'
    // writeback meets the oldest generation (8 in this short run before
    // anon page tables were charged, 0 after): tests/mglru.rs pins the
    // mechanism itself.
    assert_eq!(get("reclaim-rework", "foliosim_sort_writeback").value, 0.0);
}

/// Seed 003's fio no-regression row at 1 s: the group bandwidth is fio's
/// (bytes over the longest runtime), the memcg refaults (16 jobs of 96M
/// in 320M), and the rework changes the bandwidth by less than the
/// issue's 5% no-regression bound.
#[test]
fn fio_mmap_randread_row_holds_its_bandwidth() {
    use foliosim::reproduce::reclaim_loop::{fio_mmap_randread, FIO_MMAP_TOML, SEED_FIO_MMAP};
    let text = FIO_MMAP_TOML
        .replace("runtime=10s", "runtime=1s")
        .replace("ramp_time=2s", "ramp_time=200ms");
    assert_ne!(text, FIO_MMAP_TOML);
    let c = machine(4 << 30, None);
    let rows = fio_mmap_randread(&c, &text, 2).expect("the shipped job parses");
    let get = |variant: &str, metric: &str| row(&rows, variant, metric);
    let b = get("reclaim-legacy", "bandwidth_mb_s");
    let a = get("reclaim-rework", "bandwidth_mb_s");
    let seed = SEED_FIO_MMAP.pair("bandwidth_mb_s").unwrap();
    assert_eq!(b.seed_value, Some(seed.0));
    assert_eq!(a.seed_value, Some(seed.1));
    assert!(
        b.value > 100.0 && a.value > 100.0,
        "{} {}",
        b.value,
        a.value
    );
    let ch = get("change", "bandwidth_mb_s").value;
    assert!((ch - (a.value - b.value) / b.value * 100.0).abs() < 1e-9);
    assert!(ch.abs() < 5.0, "bandwidth change {ch}%");
    for v in ["reclaim-legacy", "reclaim-rework"] {
        assert!(get(v, "workingset_refault_file").value > 10_000.0, "{v}");
    }
    let bad = fio_mmap_randread(&c, "[x]\nrw=sideways\n", 1).unwrap_err();
    assert!(bad.contains("seed003-fio-mmap-randread.fio"), "{bad}");
}

/// Seed 003's throttling OOM with a 256M dd: mainline MGLRU's memcg
/// reclaim does not stall on writeback (sort_folio() keeps dirty folios
/// from shrink_folio_list() and shrink_node() sees no dirty counts), so
/// when one writeback takes longer than its sixteen reclaim retries
/// (100 ms a request) dd is OOM-killed; mm-new (patch 14 feeds MGLRU's
/// counts to the common throttling) and the classic LRU stall and finish.
/// On the stock hdd profile writeback completes within the retries and
/// every kernel finishes.
#[test]
fn throttling_oom_needs_mglru_without_the_writeback_stall() {
    use foliosim::reproduce::reclaim_loop::{throttle_oom, DD_OOM_TOML};
    let text = DD_OOM_TOML.replace("size = \"1G\"", "size = \"256M\"");
    assert_ne!(text, DD_OOM_TOML, "the reproducer's file size moved");
    let sc = parse(&text, "seed003-dd-throttle-oom.toml").expect("the shipped reproducer parses");
    let mut c = machine(4 << 30, None);
    c.mm.device = foliosim::mm::blkdev::DeviceProfile::by_name("hdd").unwrap();
    let rows = throttle_oom(&c, &sc, 2);
    let get = |variant: &str, metric: &str| row(&rows, variant, metric).value;
    // ext4's large folios (the seed's 7.0-era kernel): mainline MGLRU
    // is OOM-killed on both disks, mm-new and the classic LRU are not.
    for dev in ["hdd", "hdd_100ms"] {
        assert_eq!(
            get("reclaim-legacy", &format!("writer_finished_{dev}")),
            0.0
        );
        assert_eq!(get("reclaim-legacy", &format!("oom_kill_{dev}")), 1.0);
        for k in ["reclaim-rework", "classic"] {
            assert_eq!(
                get(k, &format!("writer_finished_{dev}")),
                1.0,
                "{k} on {dev}"
            );
            assert_eq!(get(k, &format!("oom_kill_{dev}")), 0.0, "{k} on {dev}");
        }
    }
}

/// The throttling OOM as the QEMU guest ran it on Debian's released
/// kernels (docs/fidelity/mglru-seed003.md, section 4): dd of 512M in 1M
/// writes into a 64M memcg on a 1G machine, ext4's large folios (6.16+),
/// a disk whose writes take 10 ms. 7.0's MGLRU is OOM-killed after
/// sorting the group's dirty folios over and over (the guest's 7.0: every
/// run, 35-61M folios sorted), 7.2's is not, nor the classic LRU.
/// Sorting is charged per folio, not per page: charged per page, a pass
/// over 256-page folios took 50 times the guest's time and writeback
/// always completed within the retries.
#[test]
fn large_folio_dd_ooms_7_0_mglru_only() {
    use foliosim::mm::KernelRelease;
    use foliosim::reproduce::reclaim_loop::DD_OOM_TOML;
    let text = DD_OOM_TOML.replace("size = \"1G\"", "size = \"512M\"");
    assert_ne!(text, DD_OOM_TOML, "the reproducer's file size moved");
    let sc = parse(&text, "seed003-dd-throttle-oom.toml").expect("the shipped reproducer parses");
    let run = |k: KernelRelease, lru: LruKind| {
        let mut c = machine(1 << 30, None);
        c.lru = lru;
        c.mm.kernel = Some(k);
        c.mm.variants = k.variants();
        c.mm.large_folios = k.ext4_large_folios();
        let mut dev = foliosim::mm::blkdev::DeviceProfile::by_name("virtio").unwrap();
        dev.latency_ns = 10_000_000;
        c.mm.device = dev;
        let r = run_scenario(c, &sc).expect("runs");
        let dd = r
            .processes
            .iter()
            .find(|p| p.name.starts_with("dd"))
            .unwrap();
        (dd.oom_killed, r.cgroups["dd"].clone())
    };
    let (killed, st) = run(KernelRelease::V7_0, LruKind::Mglru);
    assert!(killed, "7.0 MGLRU: {st:?}");
    // It sorted what the guest's 7.0 did before its kill (35-61M).
    let refill = st["pgrefill"];
    assert!(
        (10_000_000..200_000_000).contains(&refill),
        "pgrefill {refill}"
    );
    for (k, lru) in [
        (KernelRelease::V7_2, LruKind::Mglru),
        (KernelRelease::V7_0, LruKind::Classic),
        (KernelRelease::V7_2, LruKind::Classic),
    ] {
        let (killed, st) = run(k, lru);
        assert!(!killed, "{k:?} {lru:?}: {st:?}");
        assert_eq!(st["pgsteal_file"], 114_688, "{k:?} {lru:?}");
    }
}

/// Seed 003's kernel-build row with 8 make jobs in a 32M memcg: rows with
/// the seed's system times, the build swaps, each compiler's stime
/// (kernel-path CPU time) is positive and within its elapsed time (every
/// process here is one thread), and the rework moves the build's system
/// time by less than the 5%.
#[test]
fn kernel_build_row_sums_system_time() {
    use foliosim::reproduce::reclaim_loop::{
        kernel_build_tmpfs, KBUILD_TMPFS_TOML, SEED_KBUILD_STIME,
    };
    let full = parse(KBUILD_TMPFS_TOML, "seed003-kernel-build-tmpfs.toml")
        .expect("the shipped proxy parses");
    assert_eq!(full.processes.len(), 1 + 96, "setup and make -j96");
    // The setup and the first eight make jobs, with their compiles (cut in
    // the text, so that the barrier counts its parties again).
    let cut = KBUILD_TMPFS_TOML
        .match_indices("\n[[process]]\n")
        .nth(1 + 8)
        .expect("97 processes")
        .0;
    let text = KBUILD_TMPFS_TOML[..cut].replace("max = \"384M\"", "max = \"32M\"");
    assert!(text.contains("max = \"32M\""), "the proxy's memcg moved");
    let sc = parse(&text, "seed003-kernel-build-tmpfs.toml").expect("the cut proxy parses");
    assert_eq!(sc.processes.len(), 1 + 8);
    let compiles: usize = sc.processes[1..]
        .iter()
        .map(|p| p.threads[0].steps.len() - 1)
        .sum();
    assert!(compiles >= 8, "{compiles} compiles");
    let c = machine(4 << 30, Some(2 << 30));
    let r = run_scenario(mglru(&c), &sc).expect("runs");
    let build: Vec<_> = r
        .processes
        .iter()
        .filter(|p| p.cgroup == "kbuild")
        .collect();
    assert_eq!(build.len(), 8 + compiles, "8 makes and their compilers");
    for p in &build {
        // make only forks and waits; its compilers do the work.
        assert_eq!(p.stime_ns > 0, p.name.contains("fork@"), "{}", p.name);
        assert!(
            p.stime_ns <= p.elapsed_ns,
            "{}: {} > {}",
            p.name,
            p.stime_ns,
            p.elapsed_ns
        );
    }
    let rows = kernel_build_tmpfs(&c, &sc, 2);
    let get = |variant: &str, metric: &str| row(&rows, variant, metric);
    let seed = SEED_KBUILD_STIME.pair("system_time_s").unwrap();
    assert_eq!(
        get("reclaim-legacy", "system_time_s").seed_value,
        Some(seed.0)
    );
    assert_eq!(
        get("reclaim-rework", "system_time_s").seed_value,
        Some(seed.1)
    );
    for v in ["reclaim-legacy", "reclaim-rework"] {
        assert!(get(v, "system_time_s").value > 0.0, "{v}");
        assert!(get(v, "pswpout").value > 0.0, "{v}: the build swaps");
    }
    let (b, a) = (
        get("reclaim-legacy", "system_time_s").value,
        get("reclaim-rework", "system_time_s").value,
    );
    assert!((get("change", "system_time_s").value - (a - b) / b * 100.0).abs() < 1e-9);
    // The no-regression band, at this size too.
    assert!(
        get("change", "system_time_s").value.abs() < 5.0,
        "system time {b} -> {a}"
    );
}

/// Seed 003's MySQL row with a 2 s query loop: the pool (3G in 256M)
/// swaps to zram, transactions are whole (the clients' touches after the
/// start-up pass are a multiple of 18), the seed's tps is beside, and the
/// rework stays within the 5% no-regression band.
#[test]
fn mysql_row_counts_whole_transactions() {
    use foliosim::reproduce::reclaim_loop::{
        mysql_sysbench, MYSQL_POOL_PAGES, MYSQL_TOML, MYSQL_TOUCHES_PER_TX, SEED_MYSQL_TPS,
    };
    let text = MYSQL_TOML.replace("duration = \"20s\"", "duration = \"2s\"");
    assert_ne!(text, MYSQL_TOML, "the proxy's loop moved");
    let sc = parse(&text, "seed003-mysql-sysbench.toml").expect("the shipped proxy parses");
    assert_eq!(MYSQL_POOL_PAGES, 786_432);
    let c = machine(16 << 30, Some(4 << 30));
    let r = run_scenario(mglru(&c), &sc).expect("runs");
    let touches = r.processes[0].touches;
    assert!(touches > MYSQL_POOL_PAGES);
    assert_eq!((touches - MYSQL_POOL_PAGES) % MYSQL_TOUCHES_PER_TX, 0);
    let rows = mysql_sysbench(&c, &sc, 2);
    let get = |variant: &str, metric: &str| row(&rows, variant, metric);
    let seed = SEED_MYSQL_TPS.pair("tps").unwrap();
    assert_eq!(get("reclaim-legacy", "tps").seed_value, Some(seed.0));
    assert_eq!(get("reclaim-rework", "tps").seed_value, Some(seed.1));
    for v in ["reclaim-legacy", "reclaim-rework"] {
        assert!(get(v, "tps").value > 100.0, "{v}");
        assert!(
            get(v, "pswpout").value > MYSQL_POOL_PAGES as f64 / 2.0,
            "{v}: the pool swaps"
        );
        assert_eq!(
            get(v, "pswpin").value,
            get(v, "workingset_refault_anon").value,
            "{v}: zram"
        );
    }
    assert!(
        get("change", "tps").value.abs() < 5.0,
        "{}",
        get("change", "tps").value
    );
}

/// Jain's index as the seed's script prints it, and the Chrome & Node.js
/// row at a 1 s loop: 64 workers in 32 memcgs under global pressure, each
/// with whole requests counted, the seed's figures beside.
#[test]
fn chrome_node_row_and_jains_index() {
    use foliosim::reproduce::reclaim_loop::{
        chrome_node, jain_fairness, CHROME_NODE_HEAP_PAGES, CHROME_NODE_TOML, SEED_CHROME_NODE,
    };
    assert_eq!(jain_fairness(&[5.0, 5.0, 5.0]), 1.0);
    assert!((jain_fairness(&[1.0, 0.0]) - 0.5).abs() < 1e-12);
    assert!((jain_fairness(&[1.0, 2.0, 3.0]) - 36.0 / 42.0).abs() < 1e-12);
    assert_eq!(jain_fairness(&[]), 1.0);
    let text = CHROME_NODE_TOML.replace("duration = \"20s\"", "duration = \"1s\"");
    assert_eq!(
        text.matches("duration = \"1s\"").count(),
        32,
        "the proxy moved"
    );
    let sc = parse(&text, "seed003-chrome-node.toml").expect("the shipped proxy parses");
    assert_eq!(sc.processes.len(), 32);
    let c = machine(2 << 30, Some(4 << 30));
    let r = run_scenario(mglru(&c), &sc).expect("runs");
    assert_eq!(r.processes.len(), 64);
    for p in &r.processes {
        assert!(p.touches > CHROME_NODE_HEAP_PAGES, "{}", p.name);
        assert_eq!((p.touches - CHROME_NODE_HEAP_PAGES) % 200, 0, "{}", p.name);
    }
    assert!(r.run.vmstat["pswpout"] > 0, "3G of heaps in 2G swap");
    let rows = chrome_node(&c, &sc, 2);
    for s in SEED_CHROME_NODE.rows() {
        let (m, b, a) = (s.metric, s.before, s.after);
        let get = |v: &str| {
            rows.iter()
                .find(|r| r.variant == v && r.metric == m)
                .unwrap()
        };
        assert_eq!(get("reclaim-legacy").seed_value, Some(b));
        assert_eq!(get("reclaim-rework").seed_value, Some(a));
        assert!(get("reclaim-legacy").value > 0.0);
    }
    let jain = row(&rows, "reclaim-legacy", "jain_fairness").value;
    assert!(jain > 0.0 && jain <= 1.0, "{jain}");
}
