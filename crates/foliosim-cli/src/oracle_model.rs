//! The model side of `foliosim oracle`: the host's facts configure the
//! model, which runs the case and answers under the real side's counter
//! names.

use std::collections::BTreeMap;

use super::*;
use foliosim::mm::CpuCosts;
use foliosim::mm::MmConfig;
use foliosim::sim::{self, LruKind, SimConfig};
use foliosim_oracle::scn::STATS_FLUSH_PHASE;

/// The model side of `foliosim oracle`: configure from the host's facts
/// and run the case, returning counters under the oracle's names.
pub(crate) fn oracle_model(
    host: &foliosim_oracle::HostInfo,
    case: &foliosim_oracle::Case,
) -> Result<BTreeMap<String, f64>, String> {
    let mut cfg = host_sim_config(
        host,
        case.effective_read_ahead_kb(host) as u64,
        case.memcg_limit,
    )?;
    // The real fio's processes are in the group too.
    cfg.mm.fio_process_memory = true;
    match &case.kind {
        foliosim_oracle::CaseKind::Probe { spec, variant } => {
            let mut cfg = cfg;
            for v in variant {
                cfg.mm.variants.apply(v)?;
            }
            over_flush_phases(cfg, None, |c| Ok(oracle_counters(&sim::run_probe(c, spec))))
        }
        foliosim_oracle::CaseKind::Fio { job_file, .. } => {
            let jobs = oracle_fio_jobs(job_file)?;
            over_flush_phases(cfg, None, |c| Ok(oracle_counters(&sim::run_fio(c, &jobs))))
        }
        foliosim_oracle::CaseKind::Scenario { scenario } => oracle_scenario(host, case, scenario),
    }
}

/// The model configured as the host the oracle read: its RAM, the
/// read-ahead given, swappiness, fault-around, release (patches and page
/// cache folio sizes), measured costs and device, file system and LRU,
/// with one memory cgroup of `memcg_limit`.
/// A release's patches and its page-cache folio sizes (ext4's).
pub(crate) fn set_release(mm: &mut MmConfig, k: foliosim::mm::KernelRelease) {
    mm.kernel = Some(k);
    mm.variants = k.variants();
    mm.large_folios = k.ext4_large_folios();
}

pub(crate) fn host_sim_config(
    host: &foliosim_oracle::HostInfo,
    read_ahead_kb: u64,
    memcg_limit: u64,
) -> Result<SimConfig, String> {
    let mut mm = MmConfig {
        ram_bytes: host.ram_bytes,
        read_ahead_kb,
        swappiness: host.swappiness,
        fault_around_bytes: host.fault_around_bytes,
        ..MmConfig::default()
    };
    mm.reserved_bytes = mm.reserved_bytes.min(mm.ram_bytes / 16);
    // The host's release: its patches and its page-cache folio sizes.
    if let Ok(k) = foliosim::mm::KernelRelease::parse(&host.kernel_release) {
        set_release(&mut mm, k);
    }
    let costs = host_costs(host);
    if let Some(d) = host_device(host, &costs) {
        mm.device = parse_device(&d)?;
    }
    mm.cpu_costs = Some(costs);
    mm.fs = oracle_fs(host)?;
    let lru = match host.lru_gen {
        Some(v) if v != 0 => LruKind::Mglru,
        _ => LruKind::Classic,
    };
    let cfg = SimConfig {
        mm,
        lru,
        memcg_limit: Some(memcg_limit),
        seed: 1,
        timeline: false,
        lru_gen_sysctl: Vec::new(),
    };
    Ok(cfg)
}

/// A fio case's jobs as the model runs them: a `read_iolog` log is read
/// from beside the job file, where the oracle copies fio's from
/// (foliosim_oracle::jobsafe::replay), not from the working directory.
fn oracle_fio_jobs(
    job_file: &std::path::Path,
) -> Result<Vec<foliosim_workload::fio::FioJob>, String> {
    let dir = job_file.parent().unwrap_or(std::path::Path::new("."));
    let kw = foliosim_workload::fio::Keywords::default();
    foliosim_workload::fio::parse_job_file_logs_in(job_file, &kw, dir).map_err(|e| e.to_string())
}

/// Phases of the first periodic memcg stats flush the model is run at
/// (FLUSH_TIME / FLUSH_PHASES apart, the last at FLUSH_TIME).
const FLUSH_PHASES: u64 = 9;

/// The host's classic reclaim reads memcg statistics as flushed every 2 s
/// (rstat), at a phase the workload does not choose. Where the real run
/// recorded its phase (`measured`: a scenario run on a host with the
/// memcg_flush_stats tracepoint), the model runs that phase; otherwise it
/// runs FLUSH_PHASES evenly spaced phases and answers each counter's
/// median, as the real side answers its runs' median. Either way the
/// answer carries the phase as `stats_flush_phase_s`. MGLRU reads no
/// flushed statistics: one run.
pub(crate) fn over_flush_phases(
    cfg: SimConfig,
    measured: Option<u64>,
    mut run: impl FnMut(SimConfig) -> Result<BTreeMap<String, f64>, String>,
) -> Result<BTreeMap<String, f64>, String> {
    if cfg.lru != LruKind::Classic {
        return run(cfg);
    }
    let phases: Vec<u64> = match measured {
        Some(p) => vec![p],
        None => (1..=FLUSH_PHASES)
            .map(|k| foliosim::mm::FLUSH_TIME_NS * k / FLUSH_PHASES)
            .collect(),
    };
    let mut runs = Vec::new();
    for p in phases {
        let mut c = cfg.clone();
        c.mm.memcg_stats_lazy_flush = true;
        c.mm.stats_flush_phase_ns = p;
        let mut m = run(c)?;
        m.insert(STATS_FLUSH_PHASE.into(), p as f64 / 1e9);
        runs.push(m);
    }
    Ok(foliosim_oracle::compare::median_of_maps(&runs))
}

/// The model's device: the virtio profile with the host's measured read
/// latency, when the oracle measured one. With a measured buffered read
/// miss, the latency that makes the model's own miss (a read() syscall, a
/// page allocation, the 4 KiB transfer, the copy, at `c`) cost what the
/// host's did; else the O_DIRECT median.
fn host_device(host: &foliosim_oracle::HostInfo, c: &CpuCosts) -> Option<String> {
    let direct = host.read_latency_ns?;
    let ns = match host.buffered_read_ns {
        Some(b) => {
            let virtio = foliosim::mm::blkdev::DeviceProfile::by_name("virtio")?;
            let xfer = 4096 * 1_000_000_000 / virtio.bw_bytes_per_s;
            b.saturating_sub(c.syscall + c.page_alloc + c.copy_page + xfer)
                .max(1_000)
        }
        None => direct,
    };
    Some(format!("virtio:latency={ns}ns"))
}

/// The model's CPU costs on this host: the defaults, with the fault entry
/// and exit (minor_fault) set so that an anonymous write fault (fault,
/// page allocation, zeroing: do_anonymous_page()'s charges) costs what the
/// host's measured one did, and the read syscall so that a 4 KiB read()
/// served from the cache (the syscall, the copy and filemap_read()'s
/// fixed HIT_OVERHEAD_NS) costs the host's measured hit, reclaiming a
/// page (its scan and its reclaim) the host's measured limit reclaim, and
/// zram's swap-out and swap-in the host's measured ones.
fn host_costs(host: &foliosim_oracle::HostInfo) -> CpuCosts {
    host_costs_on(CpuCosts::default(), host)
}

/// host_costs() from `c` rather than the defaults (oracle calibrate's
/// measured copy and touch).
pub(crate) fn host_costs_on(mut c: CpuCosts, host: &foliosim_oracle::HostInfo) -> CpuCosts {
    if let Some(a) = host.anon_fault_ns {
        c.minor_fault = a.saturating_sub(c.page_alloc + c.copy_page).max(50);
    }
    // Limit reclaim of clean page cache: one scan, one isolation and one
    // reclaim a page (the probe's share of its shrink calls, 0.2 us a page
    // traced, stays in reclaim_folio: the model charges the mix's calls,
    // 2.5 times the probe's, on top).
    if let Some(r) = host.reclaim_page_ns {
        c.reclaim_folio = r.saturating_sub(c.scan_folio + c.isolate_lru_folio);
    }
    // Limit reclaim of anon to zram: the probe's pages were written once,
    // so each is scanned twice (the first scan finds the young PTE and
    // keeps it, folio_check_references()), each scan with its isolation
    // and rmap walk; then the reclaim, and the swap-out (unmap, swap
    // cache, compression) the model charges as zram_compress. The probe's
    // share of its reclaim calls and TLB flushes stays in zram_compress,
    // and the model charges its own calls on top: traced, the host's
    // swap-out in the mixes costs 5.5-12 us a page against the probe's
    // 5-7 (docs/fidelity/scenarios.md, "Reclaim's costs traced"). A
    // swap-in fault from zram: the fault's entry and exit, the page
    // allocation and the decompression.
    if let Some(o) = host.swapout_page_ns {
        let scan = c.scan_folio + c.isolate_lru_folio + c.folio_referenced;
        c.zram_compress = o.saturating_sub(2 * scan + c.reclaim_folio).max(100);
    }
    if let Some(i) = host.swapin_fault_ns {
        c.zram_decompress = i.saturating_sub(c.minor_fault + c.page_alloc).max(100);
    }
    if let Some(h) = host.buffered_hit_ns {
        c.syscall = h
            .saturating_sub(c.copy_page + foliosim::mm::filemap::HIT_OVERHEAD_NS)
            .max(50);
    }
    c
}

/// The model's ext4 from the host's: its measured geometry and the case's
/// files as laid out (inodes, directory, data blocks, inode tables); none
/// when the scratch directory is not on ext4. Directory features are
/// mke2fs's defaults (dir_index, metadata_csum): the superblock is not
/// readable without the block device.
fn oracle_fs(
    host: &foliosim_oracle::HostInfo,
) -> Result<Option<foliosim::fs::ext4::Ext4Config>, String> {
    use foliosim::fs::ext4::{Ext4Config, Ext4Geometry, Ext4Layout, LaidOutFile};
    let Ok(g) = &host.ext4 else { return Ok(None) };
    let mut geo = Ext4Geometry::mkfs_default(1 << 40);
    geo.block_size = g.block_size;
    geo.blocks_per_group = g.blocks_per_group;
    geo.inodes_per_group = g.inodes_per_group;
    geo.inode_size = g.inode_size;
    geo.inode_readahead_blks = g.inode_readahead_blks;
    geo.flex_bg_size = g.flex_bg_size;
    let layout = host.layout.as_ref().map(|l| Ext4Layout {
        dir_ino: l.dir_ino,
        dir_blocks: l.dir_blocks,
        files: l
            .files
            .iter()
            .map(|(name, ino, b)| LaidOutFile {
                name: name.clone(),
                ino: *ino,
                data_block: *b,
            })
            .collect(),
        itables: l.itables.clone(),
    });
    Ext4Config::new(geo, layout)
        .map(Some)
        .map_err(|e| format!("host ext4: {e}"))
}

/// The model side of a scenario case: the host's RAM, read-ahead, LRU,
/// fault_around_bytes and swappiness, then the scenario's `[machine]`
/// mapped as `foliosim run` maps it; no --memcg-limit (the limits are the
/// scenario's cgroups'). The oracle's own group, the real scenario's root,
/// is the model's root memcg: it has no limit and nothing outside the
/// scenario is charged in the model, and the real side writes `[machine]
/// swappiness` into that group, which its children inherit (v1), as the
/// model's cgroups take the global vm.swappiness.
fn oracle_scenario(
    host: &foliosim_oracle::HostInfo,
    case: &foliosim_oracle::Case,
    sc: &foliosim_workload::scenario::Scenario,
) -> Result<BTreeMap<String, f64>, String> {
    let costs = host_costs(host);
    let cli = MachineArgs {
        memory: Some(host.ram_bytes.to_string()),
        read_ahead_kb: Some(case.effective_read_ahead_kb(host) as u64),
        lru: Some(
            match host.lru_gen {
                Some(v) if v != 0 => "mglru",
                _ => "classic",
            }
            .into(),
        ),
        sysctl: vec![format!("fault_around_bytes={}", host.fault_around_bytes)],
        device: host_device(host, &costs),
        kernel: foliosim::mm::KernelRelease::parse(&host.kernel_release)
            .is_ok()
            .then(|| host.kernel_release.clone()),
        // Each real process is the oracle's executor, charged to its group.
        process_memory: Some(true),
        // Its tasks are pinned to the host's CPUs in turn.
        cpus: host.cpus,
        ..MachineArgs::default()
    };
    let mut m = run_cmd::with_scenario_defaults(&cli, sc)?;
    // The host's swappiness, unless the scenario gives its own (first:
    // later entries win).
    m.sysctl
        .insert(0, format!("vm.swappiness={}", host.swappiness));
    let mut cfg = m.config()?;
    cfg.mm.cpu_costs = Some(costs);
    // Predict, then score: nothing the real run measured configures the
    // model beyond the flush phase (an initial condition, named in the
    // report) and the read probe taken before it.
    over_flush_phases(cfg, host.stats_flush_phase_ns, |c| {
        let r = foliosim::scenario::run_scenario(c, sc)?;
        Ok(oracle_scenario_counters(sc, &r))
    })
}

/// memory.stat names of a model memcg map as the oracle reads them (v1's
/// charge events are memory.stat's pgpgin/pgpgout).
fn oracle_memstat_names<'a>(
    map: &'a BTreeMap<&'static str, u64>,
) -> impl Iterator<Item = (&'static str, u64)> + 'a {
    map.iter().filter_map(|(k, v)| {
        let name = match *k {
            "memcg_pgpgin_events" => "pgpgin",
            "memcg_pgpgout_events" => "pgpgout",
            "pgpgin" | "pgpgout" => return None,
            // v1's memory.max_usage_in_bytes, read as `peak`.
            "max_usage_in_bytes" => "peak",
            k if k.starts_with("foliosim_") => return None,
            // A /proc/vmstat event v1's memory.stat does not have.
            "thp_file_mapped" => return None,
            k => k,
        };
        Some((name, *v))
    })
}

/// A scenario report under the names `foliosim_oracle::scn` gives the
/// real run: the root's memory.stat under plain names, `vmstat.*`, each
/// cgroup's as `memcg[PATH].NAME`, `killed[PROCESS]` (instances killed,
/// forked children counted under their process as the real side counts
/// only the instances it started), `oom_kill` (the sum of the groups').
fn oracle_scenario_counters(
    sc: &foliosim_workload::scenario::Scenario,
    r: &foliosim::scenario::ScenarioReport,
) -> BTreeMap<String, f64> {
    let mut m = BTreeMap::new();
    for (k, v) in oracle_memstat_names(&r.run.memcg) {
        m.insert(k.to_string(), v as f64);
    }
    for (k, v) in &r.run.vmstat {
        if !k.starts_with("foliosim_") && !k.starts_with("memcg_") {
            m.insert(format!("vmstat.{k}"), *v as f64);
        }
    }
    m.insert("elapsed_s".into(), r.run.elapsed_ns as f64 / 1e9);
    if let Some(t) = r.first_limit_ns {
        m.insert(foliosim_oracle::scn::FIRST_LIMIT.into(), t as f64 / 1e9);
    }
    // The read misses before and under pressure, pooled as the real side
    // pools its processes' "done" lines (the model's untrimmed: it has no
    // reclaim before the limit to leave out).
    use foliosim_oracle::scn::{PRESSURE_READ_MISS, PRESSURE_READ_MISSES, READ_MISS, READ_MISSES};
    for (i, (count, mean)) in [
        (READ_MISSES, READ_MISS),
        (PRESSURE_READ_MISSES, PRESSURE_READ_MISS),
    ]
    .into_iter()
    .enumerate()
    {
        let (n, ns) = r.processes.iter().fold((0u64, 0u64), |(n, ns), p| {
            (n + p.read_misses[i].0, ns + p.read_misses[i].1)
        });
        if n > 0 {
            m.insert(count.into(), n as f64);
            m.insert(mean.into(), ns as f64 / n as f64 / 1e9);
        }
    }
    for (path, map) in &r.cgroups {
        for (k, v) in oracle_memstat_names(map) {
            m.insert(format!("memcg[{path}].{k}"), v as f64);
        }
    }
    for p in &sc.processes {
        // ProcessReport names are "NAME[i]" for instances, and
        // "NAME[i]/fork@LINE[j]" for forked children.
        let prefix = format!("{}[", p.name);
        let killed = r
            .processes
            .iter()
            .filter(|q| q.oom_killed && q.name.starts_with(&prefix) && !q.name.contains('/'))
            .count();
        m.insert(format!("killed[{}]", p.name), killed as f64);
        // kv_get operations of every instance and child, as the real side
        // sums its processes' "done" reports.
        let ops: u64 = r
            .processes
            .iter()
            .filter(|q| q.name.starts_with(&prefix))
            .map(|q| q.ops)
            .sum();
        m.insert(format!("ops[{}]", p.name), ops as f64);
    }
    // When each instance and forked child started and ended (s from the
    // run's start); a killed one reports nothing on the real side.
    // The model's CPU time is kernel time (its costs are the kernel's
    // paths), to compare with the host's stime; it has no user time.
    for q in r.processes.iter().filter(|q| !q.oom_killed) {
        m.insert(format!("start_s[{}]", q.name), q.start_ns as f64 / 1e9);
        m.insert(format!("end_s[{}]", q.name), q.end_ns as f64 / 1e9);
        m.insert(format!("stime_s[{}]", q.name), q.stime_ns as f64 / 1e9);
    }
    m.insert(
        "oom_kill".into(),
        r.run.vmstat.get("oom_kill").copied().unwrap_or(0) as f64,
    );
    foliosim_oracle::scn::add_per_op(&mut m);
    m
}

/// A model report under the oracle's counter names.
pub(crate) fn oracle_counters(r: &RunReport) -> BTreeMap<String, f64> {
    let mut m = BTreeMap::new();
    for (k, v) in &r.memcg {
        let name = match *k {
            "memcg_pgpgin_events" => "pgpgin",
            "memcg_pgpgout_events" => "pgpgout",
            "pgpgin" | "pgpgout" => continue,
            k if k.starts_with("foliosim_") => continue,
            k => k,
        };
        m.insert(name.to_string(), *v as f64);
    }
    for (k, v) in &r.vmstat {
        if !k.starts_with("foliosim_") && !k.starts_with("memcg_") {
            m.insert(format!("vmstat.{k}"), *v as f64);
        }
    }
    m.insert(
        "io.rbytes".into(),
        r.memcg.get("pgpgin").copied().unwrap_or(0) as f64 * 1024.0,
    );
    m.insert(
        "io.wbytes".into(),
        r.memcg.get("pgpgout").copied().unwrap_or(0) as f64 * 1024.0,
    );
    m.insert("elapsed_s".into(), r.elapsed_ns as f64 / 1e9);
    let rb: u64 = r.jobs.iter().map(|j| j.read.io_bytes).sum();
    let wb: u64 = r.jobs.iter().map(|j| j.write.io_bytes).sum();
    m.insert("fio.read_bytes".into(), rb as f64);
    m.insert("fio.write_bytes".into(), wb as f64);
    // The resident folios by order, as the oracle reads the host's from
    // /proc/kpageflags.
    if let Some(h) = &r.page_cache_folios {
        for o in 0..=foliosim_oracle::kpageflags::MAX_ORDER {
            m.insert(format!("folios.order{o}"), *h.get(&o).unwrap_or(&0) as f64);
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> foliosim_oracle::HostInfo {
        foliosim_oracle::HostInfo {
            ram_bytes: 1 << 30,
            fio_version: None,
            ..foliosim_oracle::HostInfo::example()
        }
    }

    /// The real side's names for one group: a v1 memory.stat as 6.18
    /// prints it (memcg1_stat_format: memcg1_stats, memcg1_events, the
    /// LRU lists, then their total_* forms) through the oracle's parser.
    fn real_memstat_names() -> Vec<String> {
        let local = [
            "cache",
            "rss",
            "rss_huge",
            "shmem",
            "mapped_file",
            "dirty",
            "writeback",
            "workingset_refault_anon",
            "workingset_refault_file",
            "swap",
            "swapcached",
            "pgpgin",
            "pgpgout",
            "pgfault",
            "pgmajfault",
            "inactive_anon",
            "active_anon",
            "inactive_file",
            "active_file",
            "unevictable",
        ];
        let mut text = String::new();
        for k in local {
            text.push_str(&format!("{k} 1\n"));
        }
        text.push_str("hierarchical_memory_limit 1\nhierarchical_memsw_limit 1\n");
        for k in local {
            text.push_str(&format!("total_{k} 1\n"));
        }
        let mut v: Vec<String> = foliosim_oracle::scn::parse_total_stat(&text)
            .unwrap()
            .into_keys()
            .collect();
        // Read from memory.max_usage_in_bytes beside memory.stat.
        v.push("peak".into());
        v
    }

    /// On a classic host the model runs once per flush phase, lazily
    /// flushed, and answers each counter's median; on MGLRU once, as
    /// configured.
    #[test]
    fn classic_hosts_get_the_median_over_flush_phases() {
        let cfg = MachineArgs::default().config().unwrap();
        assert_eq!(cfg.lru, LruKind::Classic);
        let seen = std::cell::RefCell::new(Vec::new());
        let m = over_flush_phases(cfg.clone(), None, |c| {
            assert!(c.mm.memcg_stats_lazy_flush);
            let k = (seen.borrow().len() + 1) as f64;
            seen.borrow_mut().push(c.mm.stats_flush_phase_ns);
            // Counter "a" rises with the phase; "b" only in the last run.
            let mut m = BTreeMap::from([("a".to_string(), k * 10.0)]);
            if k == FLUSH_PHASES as f64 {
                m.insert("b".into(), 7.0);
            }
            Ok(m)
        })
        .unwrap();
        let phases: Vec<u64> = (1..=FLUSH_PHASES)
            .map(|k| 2_000_000_000 * k / FLUSH_PHASES)
            .collect();
        assert_eq!(*seen.borrow(), phases);
        assert_eq!(m["a"], 50.0);
        assert_eq!(m["b"], 7.0);
        assert_eq!(
            m[STATS_FLUSH_PHASE], 1.111111111,
            "the median phase, 5 of 9"
        );
        // A real run's measured phase: that phase alone, past 2 s too.
        seen.borrow_mut().clear();
        let m = over_flush_phases(cfg.clone(), Some(2_300_000_000), |c| {
            seen.borrow_mut().push(c.mm.stats_flush_phase_ns);
            Ok(BTreeMap::from([("a".to_string(), 1.0)]))
        })
        .unwrap();
        assert_eq!(*seen.borrow(), [2_300_000_000]);
        assert_eq!(m[STATS_FLUSH_PHASE], 2.3);
        let mut calls = 0;
        let mglru = SimConfig {
            lru: LruKind::Mglru,
            ..cfg
        };
        let one = over_flush_phases(mglru, Some(1), |c| {
            calls += 1;
            assert!(!c.mm.memcg_stats_lazy_flush);
            Ok(BTreeMap::from([("a".to_string(), 3.0)]))
        })
        .unwrap();
        assert_eq!((calls, one["a"]), (1, 3.0));
        assert!(!one.contains_key(STATS_FLUSH_PHASE));
        let e = over_flush_phases(MachineArgs::default().config().unwrap(), None, |_| {
            Err::<BTreeMap<String, f64>, _>("boom".to_string())
        });
        assert_eq!(e.unwrap_err(), "boom");
    }

    /// A measured read latency becomes the model's device latency, for
    /// scenario cases too (the real runs' I/O sets the model's clock).
    #[test]
    fn the_hosts_read_latency_is_the_models_device_latency() {
        let mut h = host();
        let c = CpuCosts::default();
        assert_eq!(host_device(&h, &c), None);
        h.read_latency_ns = Some(48_300);
        assert_eq!(
            host_device(&h, &c).as_deref(),
            Some("virtio:latency=48300ns")
        );
        assert_eq!(
            parse_device(&host_device(&h, &c).unwrap())
                .unwrap()
                .latency_ns,
            48_300
        );
        // A measured buffered miss: the latency that, with the model's own
        // syscall, allocation, copy and 4 KiB transfer on the virtio
        // profile, costs the measured miss.
        h.buffered_read_ns = Some(50_000);
        let bw = foliosim::mm::blkdev::DeviceProfile::by_name("virtio")
            .unwrap()
            .bw_bytes_per_s;
        let cpu = c.syscall + c.page_alloc + c.copy_page + 4096 * 1_000_000_000 / bw;
        assert_eq!(
            host_device(&h, &c),
            Some(format!("virtio:latency={}ns", 50_000 - cpu))
        );
        // A measured anonymous fault sets the fault entry cost so that
        // fault + allocation + zeroing cost it.
        assert_eq!(host_costs(&h), c);
        h.anon_fault_ns = Some(1_560);
        let hc = host_costs(&h);
        assert_eq!(hc.minor_fault + hc.page_alloc + hc.copy_page, 1_560);
        // A measured hit sets the read syscall so that syscall + copy +
        // the fixed overhead cost it; the miss's device latency then
        // takes the new syscall off.
        h.buffered_hit_ns = Some(1_300);
        let hc = host_costs(&h);
        assert_eq!(
            hc.syscall + hc.copy_page + foliosim::mm::filemap::HIT_OVERHEAD_NS,
            1_300
        );
        // 50,000 less the new syscall, the allocation, copy and transfer.
        let cpu = hc.syscall + hc.page_alloc + hc.copy_page + 4096 * 1_000_000_000 / bw;
        assert_eq!(
            host_device(&h, &hc),
            Some(format!("virtio:latency={}ns", 50_000 - cpu))
        );
        // A measured limit reclaim sets the cost of reclaiming a scanned
        // page so that scan + reclaim cost it; it leaves the rest alone.
        assert_eq!(hc.reclaim_folio, c.reclaim_folio);
        h.reclaim_page_ns = Some(580);
        let hr = host_costs(&h);
        assert_eq!(hr.scan_folio + hr.isolate_lru_folio + hr.reclaim_folio, 580);
        assert_eq!(
            CpuCosts {
                reclaim_folio: hc.reclaim_folio,
                ..hr
            },
            hc
        );
        // Measured zram swap-out and swap-in: a page swapped out costs its
        // two scans (each with its isolation and rmap walk), its reclaim
        // and the compression; a swap-in fault its entry, the allocation
        // and the decompression.
        h.swapout_page_ns = Some(8_000);
        h.swapin_fault_ns = Some(3_000);
        let hz = host_costs(&h);
        let scan = hz.scan_folio + hz.isolate_lru_folio + hz.folio_referenced;
        assert_eq!(2 * scan + hz.reclaim_folio + hz.zram_compress, 8_000);
        assert_eq!(hz.minor_fault + hz.page_alloc + hz.zram_decompress, 3_000);
        assert_eq!(
            CpuCosts {
                zram_compress: hr.zram_compress,
                zram_decompress: hr.zram_decompress,
                ..hz
            },
            hr
        );
    }

    /// The oracle's iolog case (oracle/iolog): its model run reads the
    /// log from beside the job file, whatever the working directory, and
    /// replays every one of its reads, as many and as long as the log's.
    #[test]
    fn the_oracle_model_replays_the_iolog_cases_log() {
        use foliosim_workload::fio::iolog::{self, Act};
        let jf = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../oracle/iolog/iolog-replay.fio")
            .canonicalize()
            .unwrap();
        let log = iolog::load(
            jf.with_file_name("iolog-replay.log").to_str().unwrap(),
            &iolog::ReplayOpts::default(),
        )
        .unwrap();
        assert_eq!(
            (log.count(Act::Read), log.bytes(Act::Read)),
            (28_192, (8192 << 16) + (20_000 << 12))
        );
        let case = foliosim_oracle::cases::fio_case(&jf, None, None).unwrap();
        let jobs = oracle_fio_jobs(&jf).unwrap();
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].iolog.as_deref(), Some(&*log));
        let cfg = SimConfig {
            memcg_limit: Some(case.memcg_limit),
            ..SimConfig::default()
        };
        let r = sim::run_fio(cfg, &jobs);
        assert_eq!(r.jobs[0].read.total_ios, log.count(Act::Read));
        assert_eq!(r.jobs[0].read.io_bytes, log.bytes(Act::Read));
        assert_eq!(r.jobs[0].write.total_ios, 0);
        let m = oracle_model(&host(), &case).unwrap();
        assert_eq!(m["fio.read_bytes"], log.bytes(Act::Read) as f64);
        assert!(m["io.rbytes"] >= (512 << 20) as f64, "{}", m["io.rbytes"]);
    }

    /// The oracle's model call takes the host's measured ext4 and the
    /// case's laid-out files: two inodes 64 table blocks apart cost two
    /// 33-block readahead windows, plus the directory's one block.
    #[test]
    fn the_oracle_model_reads_the_hosts_measured_ext4_layout() {
        let dir = std::env::temp_dir().join(format!("foliosim-cli-ext4-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let jf = dir.join("s.fio");
        let text = "[t0]\nioengine=filestat\nfilesize=4k\nnrfiles=2\n";
        std::fs::write(&jf, text).unwrap();
        let case = foliosim_oracle::Case::new(
            "s".into(),
            foliosim_oracle::CaseKind::Fio {
                job_file: jf.clone(),
                job: foliosim_oracle::jobsafe::sanitize_with_env(text, "s.fio").unwrap(),
            },
            256 << 20,
            None,
            String::new(),
            String::new(),
        );
        let mut h = host();
        let plain = oracle_model(&h, &case).unwrap();
        assert_eq!(
            plain["io.rbytes"], 0.0,
            "no ext4 on the host: file data only"
        );
        h.ext4 = Ok(foliosim_oracle::ext4::Ext4Host {
            block_size: 4096,
            blocks_per_group: 32768,
            inodes_per_group: 8192,
            inode_size: 256,
            inode_readahead_blks: 32,
            flex_bg_size: 1,
        });
        let g3 = 3 * 8192;
        h.layout = Some(foliosim_oracle::ext4::FileLayout {
            dir_ino: g3 + 1,
            dir_blocks: 1,
            files: vec![
                ("t0.0.0".into(), g3 + 2, None),
                ("t0.0.1".into(), g3 + 2 + 16 * 64, None),
            ],
            itables: std::collections::BTreeMap::from([(3, 3 * 32768 + 2)]),
        });
        let m = oracle_model(&h, &case).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(m["io.rbytes"], ((33 + 33 + 1) * 4096) as f64);
        assert_eq!(m["file"], m["io.rbytes"]);
    }

    /// The model's side of a scenario is a prediction: the host's facts
    /// and the probe before the run configure it, and a real run's own
    /// read misses (before or under pressure) do not reach it.
    #[test]
    fn only_the_probe_before_the_run_sets_the_models_misses() {
        use foliosim_oracle::scn::{PRESSURE_READ_MISS, READ_MISS};
        let text = "[[cgroup]]\npath = \"g\"\nmemory.limit_in_bytes = \"8M\"\n\n\
            [[file]]\nname = \"data\"\nsize = \"32M\"\n\n\
            [[process]]\nname = \"r\"\ncgroup = \"g\"\nsteps = [\n  \
            { op = \"read\", file = \"data\", pattern = \"random\", bs = \"4k\" },\n]\n";
        let sc = foliosim_workload::scenario::parse(text, "p.toml").unwrap();
        let case = foliosim_oracle::cases::scenario_case("p", "test", sc);
        let mut h = host();
        h.read_latency_ns = Some(60_000);
        h.buffered_read_ns = Some(60_000);
        h.stats_flush_phase_ns = Some(1_000_000_000);
        let m0 = oracle_model(&h, &case).unwrap();
        assert!(
            m0[PRESSURE_READ_MISS] > 0.0 && m0[READ_MISS] > 0.0,
            "{m0:?}"
        );
        // The probe before the run does configure it: a slower device,
        // slower misses.
        h.buffered_read_ns = Some(90_000);
        let m1 = oracle_model(&h, &case).unwrap();
        assert!(m1[READ_MISS] > m0[READ_MISS] * 1.3, "{m1:?}");
    }

    #[test]
    fn a_scenario_case_gives_the_real_sides_counter_names() {
        let text = "[machine]\nswap = \"zram:256M\"\n\n\
            [[cgroup]]\npath = \"app\"\nmemory.limit_in_bytes = \"8M\"\n\n\
            [[process]]\nname = \"hog\"\ncgroup = \"app\"\nsteps = [\n  \
            { op = \"mmap_anon\", map = \"heap\", size = \"16M\" },\n  \
            { op = \"touch\", map = \"heap\", pattern = \"seq\", write = true },\n  \
            { op = \"touch\", map = \"heap\", pattern = \"seq\" },\n]\n";
        let sc = foliosim_workload::scenario::parse(text, "t.toml").unwrap();
        let case = foliosim_oracle::cases::scenario_case("t", "test", sc);
        let m = oracle_model(&host(), &case).unwrap();
        // Names the model does not have: THP (none in the model), the swap
        // cache's size, the memsw peak.
        let lacks = ["anon_thp", "swapcached"];
        for n in real_memstat_names() {
            if lacks.contains(&n.as_str()) {
                continue;
            }
            assert!(m.contains_key(&n), "plain {n}");
            assert!(m.contains_key(&format!("memcg[app].{n}")), "memcg[app].{n}");
        }
        // The model counts no dirtied/written pages in vmstat and has no
        // zero-filled swap slots (swpin_zero/swpout_zero).
        let lacks = ["nr_dirtied", "nr_written", "swpin_zero", "swpout_zero"];
        for n in foliosim_oracle::cgroup::VMSTAT_EVENTS {
            let has = m.contains_key(&format!("vmstat.{n}"));
            assert_eq!(has, !lacks.contains(n), "vmstat.{n}");
        }
        assert!(m.contains_key("memcg[app].oom_kill"));
        assert_eq!(m["killed[hog]"], 0.0);
        assert_eq!(m["oom_kill"], 0.0);
        // The real side's "done" figures: no kv_get operations, no per-op
        // counters, and the instance's times.
        assert_eq!(m["ops[hog]"], 0.0);
        assert!(!m.keys().any(|k| k.starts_with("per_op.")));
        assert_eq!(m["start_s[hog[0]]"], 0.0);
        assert!(m["end_s[hog[0]]"] > 0.0);
        // 16M of anon through an 8M group with swap: swapped out and read
        // back, counted in the group as in vmstat.
        assert!(m["vmstat.pswpout"] >= 1024.0, "{}", m["vmstat.pswpout"]);
        assert!(m["vmstat.pswpin"] > 0.0);
        assert!(m["memcg[app].pgmajfault"] > 0.0);
        // The scored refaults are the oracle group's (hierarchical): here
        // its only child's, and the model has no host background, so
        // vmstat's agree.
        let r = m["workingset_refault_anon"];
        assert!(r > 0.0);
        assert_eq!(r, m["memcg[app].workingset_refault_anon"]);
        assert_eq!(r, m["vmstat.workingset_refault_anon"]);
        assert_eq!(m["pgmajfault"], m["memcg[app].pgmajfault"]);
        // Nothing fio-shaped or model-internal under the real side's names.
        assert!(!m
            .keys()
            .any(|k| k.starts_with("fio.") || k.starts_with("io.")));
        assert!(!m
            .keys()
            .any(|k| k.contains("foliosim_") || k.contains("memcg_pgpg")));
    }

    #[test]
    fn an_oom_kill_is_counted_per_process_name() {
        let text = "[machine]\nswap = \"none\"\n\n\
            [[cgroup]]\npath = \"app\"\nmemory.limit_in_bytes = \"8M\"\n\n\
            [[process]]\nname = \"hog\"\ncgroup = \"app\"\nsteps = [\n  \
            { op = \"mmap_anon\", map = \"heap\", size = \"32M\" },\n  \
            { op = \"touch\", map = \"heap\", pattern = \"seq\", write = true },\n]\n\n\
            [[process]]\nname = \"small\"\ncgroup = \"app\"\nsteps = [\n  \
            { op = \"mmap_anon\", map = \"heap\", size = \"1M\" },\n  \
            { op = \"touch\", map = \"heap\", pattern = \"seq\", write = true },\n]\n";
        let sc = foliosim_workload::scenario::parse(text, "t.toml").unwrap();
        let case = foliosim_oracle::cases::scenario_case("t", "test", sc);
        let m = oracle_model(&host(), &case).unwrap();
        assert_eq!(m["killed[hog]"], 1.0);
        assert_eq!(m["killed[small]"], 0.0);
        assert_eq!(m["oom_kill"], 1.0);
        // A killed instance reports no times (it sends no "done" line).
        assert!(!m.contains_key("end_s[hog[0]]"));
        assert!(m.contains_key("end_s[small[0]]"));
    }
}
