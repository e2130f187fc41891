//! foliosim: the command line. Thin: parses options, calls the model
//! library, prints. Bad input exits 2 with one line naming what was wrong.
//! A library as well (`foliosim_cli`): [`run_argv`] runs one workload
//! command line as the binary would, for the Python bindings and sweeps.

mod bench_cmd;
mod calibrate_cmd;
mod oracle_cmd;
mod oracle_model;
use oracle_model::oracle_model;
mod probe_args;
mod refcount_cmd;
mod report_cmd;
mod run_cmd;
pub mod sweep;
mod sweep_parquet;
mod trace_args;

use std::collections::BTreeMap;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use foliosim::fio_output::{self, OutputFormat};
use foliosim::mm::{blkdev::DeviceProfile, MmConfig, SwapKind, Variants};
use foliosim::reproduce;
use foliosim::sim::{self, LruKind, RunReport, SimConfig};
use foliosim_workload::units::parse_size;

#[derive(Parser)]
#[command(
    name = "foliosim",
    version,
    about = "A deterministic model of the Linux page cache, readahead and reclaim"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

/// The size of the file system `--fs ext4` lays out without --disk-size
/// (only the inode tables' place depends on it).
const DEFAULT_FS_BYTES: u64 = 1 << 40;

/// Options of the modelled machine, shared by the workload commands.
#[derive(clap::Args, Clone, Debug, Default)]
struct MachineArgs {
    /// Machine RAM (default 8G).
    #[arg(long)]
    memory: Option<String>,
    /// Run the workload in a memcg with this hard limit (memory.max).
    #[arg(long)]
    memcg_limit: Option<String>,
    /// read_ahead_kb of the device (default 128).
    #[arg(long)]
    read_ahead_kb: Option<u64>,
    /// Reclaim policy: classic or mglru (default classic).
    #[arg(long)]
    lru: Option<String>,
    /// cache_ext page-cache policy of the workload's memcg:
    /// NAME[:key=val,...] (fifo, mru, lfu, s3fifo, get-scan, admit-filter,
    /// lhd, mglru-bpf, or py:NAME registered from Python; default: none).
    /// Needs --lru classic.
    #[arg(long)]
    policy: Option<String>,
    /// Variants, comma or plus separated.
    #[arg(long, value_delimiter = ',')]
    variant: Vec<String>,
    /// Device profile: nvme, sata-ssd, hdd, virtio, ramdisk, zram;
    /// NAME:latency=DUR sets its per-request latency (e.g. virtio:latency=45us,
    /// a bare number is microseconds: the oracle gives the host's measured one),
    /// pressure_latency=DUR the latency once a memory cgroup first met its
    /// limit (the oracle gives each real run's own, from its misses there).
    #[arg(long)]
    device: Option<String>,
    /// A machine profile (TOML, as `foliosim oracle calibrate` writes
    /// it): that machine's CPU costs, and its disk as the device unless
    /// --device names one. Default: the reference machine's
    /// (crates/foliosim/profiles/reference-vm.toml; docs/calibration.md).
    /// Not --profile: that is fio's own option.
    #[arg(long)]
    machine_profile: Option<std::path::PathBuf>,
    /// Swap: none, zram:SIZE or disk:SIZE.
    #[arg(long)]
    swap: Option<String>,
    /// Capacity of the disk, for fio jobs on a block device
    /// (filename=/dev/...) without size=: fio sizes them to the device.
    /// No default: such a job needs it.
    #[arg(long)]
    disk_size: Option<String>,
    /// Size of the regular files a fio job names without size= that exist
    /// before the run (fio takes the size from the file; the model's runs
    /// otherwise start with no files). No default.
    #[arg(long)]
    existing_file_size: Option<String>,
    /// File system of the workload's files: none (file data only, the
    /// default), ext4 (its metadata reads through the block device's page
    /// cache, on a file system as mke2fs makes it with its defaults on a
    /// --disk-size device, 1T without one), xfs or btrfs (file data only;
    /// with --kernel they decide large folio support: xfs has it in every
    /// preset, btrfs in none).
    #[arg(long)]
    fs: Option<String>,
    /// The kernel release the machine runs: 6.1, 6.6, 6.12, 6.14, 6.16,
    /// 6.18, 7.0, 7.2 or mm-new (the seeds' kernel). It sets the seeds' patches as that
    /// release has them (--variant applies on top) and large folios for
    /// the files (ext4 since 6.16). Default: the seeds' patches as in
    /// mm-new, order-0 page cache.
    #[arg(long)]
    kernel: Option<String>,
    /// Large page-cache folios for the workload's files: on or off
    /// (default: as --kernel says, off without it).
    #[arg(long)]
    large_folios: Option<String>,
    /// fio's own memory: on charges each fio job's process image and I/O
    /// buffers (about 8 MiB for the first job) to its memcg, as the real
    /// fio's are; off (the default) gives fio's jobs no memory of their own.
    #[arg(long)]
    fio_memory: Option<String>,
    /// Scenario processes' own memory: on charges each process's image
    /// and heap (132 pages) and each thread's stack and I/O buffer (4
    /// pages and its largest read or write block) to its memcg, as
    /// measured for the oracle's executor; off (the default) gives a
    /// process only the mappings its steps make.
    #[arg(long)]
    process_memory: Option<String>,
    /// CPUs the scenario's tasks share: threads are dealt to them in turn
    /// (as the oracle pins its real tasks) and wait while another task
    /// has theirs. Default: every thread has a CPU of its own.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    cpus: Option<u32>,
    /// The tmpfs mount's huge= option for the scenario's tmpfs files:
    /// never (the default), always, within_size or advise.
    #[arg(long)]
    tmpfs_huge: Option<String>,
    /// Kernel tunables: vm.swappiness=N, vm.dirty_ratio=N,
    /// vm.dirty_background_ratio=N, vm.dirty_expire_centisecs=N,
    /// vm.min_free_kbytes=N, vm.watermark_scale_factor=N,
    /// fault_around_bytes=N, lru_gen.enabled=y|n|CAPS, lru_gen.min_ttl_ms=N,
    /// transparent_hugepage.enabled=always|madvise|never,
    /// transparent_hugepage.defrag=always|defer|defer+madvise|madvise|never,
    /// transparent_hugepage.hugepages-<16..2048>kB.enabled=always|inherit|madvise|never
    /// (anonymous mTHP; madvise counts as never);
    /// model switches: foliosim.memcg_stats_lazy_flush=0|1 (classic reclaim
    /// reads memcg stats as last flushed), foliosim.stats_flush_phase_ms=1..2000
    /// (when the first periodic flush runs).
    #[arg(long)]
    sysctl: Vec<String>,
    /// Seed of every random choice (default 1).
    #[arg(long)]
    seed: Option<u64>,
    /// Print counters per simulated second too.
    #[arg(long)]
    timeline: bool,
    /// Check the model's invariants after every reclaim batch (slow).
    #[arg(long)]
    check_invariants: bool,
    /// Print foliosim's own JSON object instead of text (for fio's JSON
    /// schema use `foliosim fio --output-format=json`).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    trace: trace_args::TraceArgs,
}

/// `--device NAME[:latency=DUR]`: a profile, with its per-request latency
/// replaced when given (a bare number is microseconds, as fio's latency
/// options).
pub(crate) fn parse_device(spec: &str) -> Result<DeviceProfile, String> {
    let (name, opts) = match spec.split_once(':') {
        Some((n, o)) => (n, Some(o)),
        None => (spec, None),
    };
    let mut d = DeviceProfile::by_name(name).ok_or_else(|| {
        format!(
            "unknown profile '{name}' ({})",
            foliosim::mm::blkdev::PROFILES.join(", ")
        )
    })?;
    for kv in opts.into_iter().flat_map(|o| o.split(',')) {
        match kv.split_once('=') {
            Some((k @ ("latency" | "pressure_latency"), v)) => {
                let ns = foliosim_workload::units::parse_time_ns(v, 1_000)?;
                if ns == 0 || ns > 10_000_000_000 {
                    return Err(format!("{k} '{v}' out of range (1ns to 10s)"));
                }
                if k == "latency" {
                    d.latency_ns = ns;
                } else {
                    d.pressure_latency_ns = Some(ns);
                }
            }
            _ => {
                return Err(format!(
                    "unknown device option '{kv}' in '{spec}' (latency=DUR, pressure_latency=DUR)"
                ))
            }
        }
    }
    Ok(d)
}

/// An on/off machine option: absent is off.
fn on_off(flag: &str, v: Option<&str>) -> Result<bool, String> {
    match v {
        None | Some("off") => Ok(false),
        Some("on") => Ok(true),
        Some(v) => Err(format!("{flag}: '{v}' is not on or off")),
    }
}

impl MachineArgs {
    fn config(&self) -> Result<SimConfig, String> {
        let mut mm = MmConfig::default();
        if let Some(m) = &self.memory {
            mm.ram_bytes = parse_size(m).map_err(|e| format!("--memory: {e}"))?;
            if mm.ram_bytes < 64 << 20 {
                return Err(format!("--memory: {m} is below the model's minimum of 64M"));
            }
            // A page frame is a u32 FolioId (u32::MAX is NIL): 16 TiB less
            // two pages. Found by the fuzz campaign (`--memory 1P` panicked).
            if mm.ram_bytes / foliosim::mm::PAGE_SIZE >= u32::MAX as u64 {
                return Err(format!(
                    "--memory: {m} is above the model's maximum of 16T (4 KiB page frames are 32-bit ids)"
                ));
            }
            mm.reserved_bytes = mm.reserved_bytes.min(mm.ram_bytes / 16);
        }
        if let Some(r) = self.read_ahead_kb {
            mm.read_ahead_kb = r;
        }
        let mut lru: LruKind = self
            .lru
            .as_deref()
            .unwrap_or("classic")
            .parse()
            .map_err(|e| format!("--lru: {e}"))?;
        if let Some(k) = &self.kernel {
            mm.kernel =
                Some(foliosim::mm::KernelRelease::parse(k).map_err(|e| format!("--kernel: {e}"))?);
        }
        // Large folio support of the files' file system at the release:
        // ext4 since 6.16, xfs in every preset (5.18); btrfs's is
        // experimental through 7.0 (CONFIG_BTRFS_EXPERIMENTAL), off here.
        let fs_large = |k: foliosim::mm::KernelRelease| match self.fs.as_deref() {
            Some("xfs") => true,
            Some("btrfs") => false,
            _ => k.ext4_large_folios(),
        };
        mm.large_folios = match self.large_folios.as_deref() {
            None => mm.kernel.is_some_and(fs_large),
            v => on_off("--large-folios", v)?,
        };
        if let Some(v) = self.tmpfs_huge.as_deref() {
            mm.tmpfs_huge = foliosim::mm::TmpfsHuge::parse(v).ok_or_else(|| {
                format!("--tmpfs-huge: '{v}' is not never, always, within_size or advise")
            })?;
        }
        mm.fio_process_memory = on_off("--fio-memory", self.fio_memory.as_deref())?;
        mm.process_memory = on_off("--process-memory", self.process_memory.as_deref())?;
        mm.nr_cpus = self.cpus.unwrap_or(0);
        let mut variants = mm.kernel.map_or_else(Variants::newest, |k| k.variants());
        for v in &self.variant {
            variants.apply(v).map_err(|e| format!("--variant: {e}"))?;
        }
        mm.variants = variants;
        if let Some(p) = &self.machine_profile {
            let prof =
                foliosim::mm::profile::load(p).map_err(|e| format!("--machine-profile: {e}"))?;
            mm.cpu_costs = Some(prof.cpu_costs());
            mm.device = prof.device("profile");
        }
        if let Some(d) = &self.device {
            mm.device = parse_device(d).map_err(|e| format!("--device: {e}"))?;
        }
        if let Some(s) = &self.swap {
            let (kind, size) = match s.split_once(':') {
                None if s == "none" => (SwapKind::None, 0),
                Some(("zram", sz)) => (
                    SwapKind::Zram,
                    parse_size(sz).map_err(|e| format!("--swap: {e}"))?,
                ),
                Some(("disk", sz)) => (
                    SwapKind::Disk,
                    parse_size(sz).map_err(|e| format!("--swap: {e}"))?,
                ),
                _ => return Err(format!("--swap: '{s}' is not none, zram:SIZE or disk:SIZE")),
            };
            mm.swap = kind;
            mm.swap_bytes = size;
        }
        let mut lru_gen_sysctl = Vec::new();
        // /sys/kernel/mm/transparent_hugepage: the top-level `enabled`
        // (default madvise) and each anon mTHP size's (order 2 to 9;
        // default never, 2048kB inherit).
        let mut thp_top = "madvise".to_string();
        let mut thp_size: [&str; 10] = ["never"; 10];
        thp_size[9] = "inherit";
        for kv in &self.sysctl {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| format!("--sysctl: '{kv}' is not key=value"))?;
            if let Some(knob) = k
                .strip_prefix("transparent_hugepage.")
                .or_else(|| k.strip_prefix("transparent_hugepage/"))
            {
                let v = v.trim();
                if knob == "defrag" {
                    mm.thp_defrag = foliosim::mm::ThpDefrag::parse(v).ok_or_else(|| {
                        format!("--sysctl: {k}: '{v}' is not always, defer, defer+madvise, madvise or never")
                    })?;
                    continue;
                }
                if knob == "enabled" {
                    if !matches!(v, "always" | "madvise" | "never") {
                        return Err(format!(
                            "--sysctl: {k}: '{v}' is not always, madvise or never"
                        ));
                    }
                    thp_top = v.to_string();
                    continue;
                }
                let kb = knob
                    .strip_prefix("hugepages-")
                    .and_then(|r| r.strip_suffix("kB.enabled").or_else(|| r.strip_suffix("kB/enabled")))
                    .and_then(|n| n.parse::<u64>().ok())
                    .filter(|&n| n.is_power_of_two() && (16..=2048).contains(&n))
                    .ok_or_else(|| format!("--sysctl: unknown key '{k}' (transparent_hugepage.enabled, transparent_hugepage.defrag, transparent_hugepage.hugepages-<16..2048>kB.enabled)"))?;
                if !matches!(v, "always" | "inherit" | "madvise" | "never") {
                    return Err(format!(
                        "--sysctl: {k}: '{v}' is not always, inherit, madvise or never"
                    ));
                }
                thp_size[(kb / 4).ilog2() as usize] = match v {
                    "always" => "always",
                    "inherit" => "inherit",
                    "madvise" => "madvise",
                    _ => "never",
                };
                continue;
            }
            if let Some(knob) = k.strip_prefix("lru_gen.") {
                // /sys/kernel/mm/lru_gen/{enabled,min_ttl_ms}: enabled=0/n
                // turns MGLRU off (classic LRU), anything else on.
                lru_gen_sysctl.push((k.to_string(), v.to_string()));
                if knob == "enabled" {
                    let off = matches!(v.trim(), "0" | "n" | "N" | "0x0" | "0x0000");
                    lru = if off {
                        LruKind::Classic
                    } else {
                        LruKind::Mglru
                    };
                }
                continue;
            }
            let n: u64 = v
                .parse()
                .map_err(|_| format!("--sysctl: {k}: '{v}' is not a number"))?;
            match k {
                "vm.swappiness" if n <= 200 => mm.swappiness = n as u32,
                // mm/swap.c: page_cluster_max = 31.
                "vm.page-cluster" if n <= 31 => mm.page_cluster = n as u32,
                "/sys/kernel/mm/swap/vma_ra_enabled" | "vma_ra_enabled" if n <= 1 => {
                    mm.vma_ra_enabled = n == 1
                }
                "vm.dirty_ratio" if n <= 100 => mm.dirty_ratio = n as u32,
                "vm.dirty_background_ratio" if n <= 100 => mm.dirty_background_ratio = n as u32,
                "vm.dirty_expire_centisecs" => mm.dirty_expire_centisecs = n,
                "vm.dirty_writeback_centisecs" => mm.dirty_writeback_centisecs = n,
                "vm.min_free_kbytes" => mm.min_free_kbytes = Some(n),
                "vm.watermark_scale_factor" if (1..=3000).contains(&n) => {
                    mm.watermark_scale_factor = n
                }
                "fault_around_bytes" if n.is_power_of_two() || n == 0 => mm.fault_around_bytes = n,
                // Model switches, not kernel knobs (MmConfig docs).
                "foliosim.memcg_stats_lazy_flush" if n <= 1 => mm.memcg_stats_lazy_flush = n == 1,
                "foliosim.stats_flush_phase_ms" if (1..=2000).contains(&n) => {
                    mm.stats_flush_phase_ns = n * 1_000_000
                }
                _ => {
                    return Err(format!(
                        "--sysctl: unknown key or value out of range: '{kv}'"
                    ))
                }
            }
        }
        // "madvise" is never in the model: its mappings take no
        // MADV_HUGEPAGE.
        mm.thp_anon_orders = (2..=9)
            .filter(|&o| {
                thp_size[o] == "always" || (thp_size[o] == "inherit" && thp_top == "always")
            })
            .fold(0, |m, o| m | 1 << o);
        // Multi-size THP (the hugepages-<size>kB directories below PMD
        // size) came in 6.8.
        if let Some(k) = mm
            .kernel
            .filter(|&k| k < foliosim::mm::KernelRelease::V6_12)
        {
            if let Some(o) = (2..9).find(|o| thp_size[*o] != "never") {
                return Err(format!(
                    "--sysctl: transparent_hugepage.hugepages-{}kB.enabled: kernel {} has no multi-size THP (6.8 and later)",
                    4u64 << o,
                    serde_json::to_value(k).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()
                ));
            }
        }
        mm.check_invariants = self.check_invariants;
        mm.fs = match self.fs.as_deref() {
            None | Some("none") => None,
            Some("ext4") => {
                let disk = match &self.disk_size {
                    Some(d) => parse_size(d).map_err(|e| format!("--disk-size: {e}"))?,
                    None => DEFAULT_FS_BYTES,
                };
                let geo = foliosim::fs::ext4::Ext4Geometry::mkfs_default(disk);
                Some(
                    foliosim::fs::ext4::Ext4Config::new(geo, None)
                        .map_err(|e| format!("--fs: {e}"))?,
                )
            }
            // File data only: their metadata is not modelled.
            Some("xfs") | Some("btrfs") => None,
            Some(f) => {
                return Err(format!(
                    "--fs: unknown file system '{f}' (none, ext4, xfs, btrfs)"
                ))
            }
        };
        let memcg_limit = self
            .memcg_limit
            .as_deref()
            .map(parse_memcg_limit)
            .transpose()?;
        sim::check_lru_gen_sysctl(&lru_gen_sysctl).map_err(|e| format!("--sysctl: {e}"))?;
        mm.policy = self.policy.clone();
        let cfg = SimConfig {
            mm,
            lru,
            memcg_limit,
            seed: self.seed.unwrap_or(1),
            timeline: self.timeline,
            lru_gen_sysctl,
        };
        sim::check_policy(&cfg).map_err(|e| format!("--policy: {e}"))?;
        Ok(cfg)
    }
}

#[derive(Subcommand)]
enum Cmd {
    /// Run fio jobs (job files and/or fio's --name=... command-line form)
    /// through the model. Machine options (--memory, --memcg-limit, --lru,
    /// --variant, ...) may be mixed in.
    Fio {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// Seed 002's mmap_miss_probe in the model.
    MmapProbe {
        #[command(flatten)]
        probe: probe_args::ProbeArgs,
        /// Reclaim policy: classic or mglru.
        #[arg(long, default_value = "classic")]
        lru: String,
        /// Print counters per simulated second too.
        #[arg(long)]
        timeline: bool,
        #[command(flatten)]
        trace: trace_args::TraceArgs,
    },
    /// Replay a libCacheSim trace (oracleGeneral or csv): each object id is a
    /// 4 KiB page of one file, read with pread and readahead off.
    Replay {
        trace: std::path::PathBuf,
        /// oracleGeneral or csv (default: by file extension).
        #[arg(long)]
        format: Option<String>,
        /// libCacheSim's csv spec, e.g. "time-col=1, obj-id-col=2, obj-size-col=3, delimiter=,, has-header=true".
        #[arg(long)]
        csv_spec: Option<String>,
        /// Size of the file the object ids map into, in pages (ids wrap modulo it).
        #[arg(long, default_value_t = 1 << 22)]
        file_pages: u64,
        #[command(flatten)]
        machine: MachineArgs,
    },
    /// Run one workload under several variant sets and print the counters
    /// side by side with deltas: foliosim compare --set baseline --set p1+p2 -- mmap-probe --file-size 4G
    Compare {
        /// A variant set (variants, plus "classic"/"mglru"); give two or more.
        #[arg(long = "set", required = true)]
        sets: Vec<String>,
        /// Print one JSON object: the sets and each set's run object
        /// (as `--json` prints it), for `foliosim report`.
        #[arg(long)]
        json: bool,
        /// The workload command (fio ..., mmap-probe ..., replay ...).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        workload: Vec<String>,
    },
    /// Reproduce a seed's experiment beside the seed's figures.
    Reproduce {
        #[command(subcommand)]
        which: ReproduceCmd,
    },
    /// Run a workload on the real kernel of this host and compare with the model.
    Oracle {
        #[command(subcommand)]
        cmd: oracle_cmd::OracleCmd,
    },
    /// Run a scenario (processes in cgroups; docs/scenarios.md) through
    /// the model. Machine options override the scenario's [machine].
    Run(run_cmd::RunArgs),
    /// Benchmark the folio refcount schemes of seed 001.
    RefcountBench(refcount_cmd::RefcountBenchArgs),
    /// The model's own cost per kernel event (ns of host time), classic and
    /// MGLRU, and with --runs the reproductions' wall time (docs/performance.md).
    Bench(bench_cmd::BenchArgs),
    /// Results (--json output, sweep CSV) as one self-contained HTML page
    /// with plots, or the plots as SVG/PNG files.
    Report(report_cmd::ReportArgs),
    /// Run a parameter study (docs/sweep.md): every point of a grid file,
    /// on every core or a Ray cluster, to CSV and Parquet; resumes.
    Sweep(sweep::SweepArgs),
}

/// Cells of a reproduction are independent seeded runs: by default they use
/// every CPU (the output does not depend on how many).
fn all_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[derive(Subcommand)]
enum ReproduceCmd {
    /// Seed 002: pgpgin of the mmap_miss matrix, baseline / p1 / p2 / p1+p2.
    MmapMiss {
        #[arg(long, default_value = "table")]
        format: String,
        #[arg(long, default_value = "classic")]
        lru: String,
        /// Worker threads (cells run in parallel; output is the same).
        #[arg(long, default_value_t = all_cpus())]
        jobs: usize,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Seed 000: refaults and bandwidth of strided mmap reads in a 400M
    /// memcg, MGLRU before/after with arm64 and x86 PTEs, and the classic LRU.
    StridedMmap {
        #[arg(long, default_value = "table")]
        format: String,
        #[arg(long, default_value_t = all_cpus())]
        jobs: usize,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Run one cell only: LRU,VARIANT,PTES as the table names it
        /// (e.g. mglru,pf-set-active,arm64); its row then carries the
        /// whole run's vmstat and memory.stat.
        #[arg(long, value_name = "LRU,VARIANT,PTES")]
        cell: Option<String>,
        /// The fio job's runtime in simulated seconds (the seed's 90);
        /// shorter runs count refaults from a third of it to its end.
        #[arg(long, default_value_t = 90)]
        runtime: u64,
        /// --trace needs --cell (one run, one trace).
        #[command(flatten)]
        trace: trace_args::TraceArgs,
    },
    /// Seed 003: the swappiness dispute (kernel build proxy with zram,
    /// swappiness 35..175) on mainline MGLRU, mm-new with and without the
    /// isolate_folios() fallback fix, and the classic LRU; the aging and
    /// throttling OOMs; MongoDB + YCSB workloadb; the fio row.
    ReclaimLoop {
        #[arg(long, default_value = "table")]
        format: String,
        #[arg(long, default_value_t = all_cpus())]
        jobs: usize,
        /// The swappiness sweep's cells are the mean of seeds 1..=N (the
        /// MGLRU cells need about ten to read their trends:
        /// docs/fidelity/seed003.md); the other experiments keep 1, 2, 3.
        #[arg(long, default_value_t = 3)]
        seeds: u64,
    },
    /// cache_ext (SOSP 2025): file search, YCSB C and Uniform, GET-SCAN and
    /// isolation (examples/cache_ext/) under the kernel's LRUs and
    /// cache_ext's policies, beside the paper's figures.
    CacheExt {
        /// text or json (rows: experiment, policy, metric, value, paper_value, kernel_ratio).
        #[arg(long, default_value = "text")]
        format: String,
        /// Worker threads (cells run in parallel; output is the same).
        #[arg(long, default_value_t = std::thread::available_parallelism().map_or(2, |n| n.get()))]
        jobs: usize,
    },
    /// Seed 004: MGLRU's workingset protection rework on the TPC-C and
    /// LULESH proxies (examples/seed004-*.toml), wsprot-legacy vs
    /// wsprot-rework, beside the seed's figures.
    WorkingsetProtection {
        /// text or json (rows: experiment, variant, metric, value, seed_value).
        #[arg(long, default_value = "text")]
        format: String,
        #[arg(long, default_value_t = all_cpus())]
        jobs: usize,
        /// Seed of the TPC-C run and of the first LULESH sample.
        #[arg(long, default_value_t = 4)]
        seed: u64,
        /// The other variants: seed (the kernel the seed measured:
        /// pf-set-active, reclaim-legacy) or newest (the defaults).
        #[arg(long, default_value = "seed")]
        base: String,
    },
}

/// `--memcg-limit`'s value: a size of at least 1M.
pub(crate) fn parse_memcg_limit(s: &str) -> Result<u64, String> {
    let l = parse_size(s).map_err(|e| format!("--memcg-limit: {e}"))?;
    if l < 1 << 20 {
        return Err(format!("--memcg-limit: {s} is below 1M"));
    }
    Ok(l)
}

/// A scenario shipped in examples/ (compiled in) and its machine, as
/// `foliosim run` builds it with no command-line options.
fn shipped_scenario(
    text: &str,
    label: &str,
) -> Result<(foliosim_workload::scenario::Scenario, SimConfig), String> {
    let sc = foliosim_workload::scenario::parse(text, label).map_err(|e| e.to_string())?;
    let cfg = run_cmd::with_scenario_defaults(&MachineArgs::default(), &sc)?.config()?;
    Ok((sc, cfg))
}

/// How a workload's report is printed.
enum Output {
    /// foliosim's text, or with --json its own JSON object.
    Foliosim { json: bool },
    /// fio's --output-format (for `foliosim fio`).
    Fio {
        format: OutputFormat,
        options: fio_output::JobOptions,
    },
}

/// Takes fio's `--output-format=F` / `--output-format F` out of `foliosim
/// fio`'s arguments: foliosim prints, so the format is foliosim's choice.
fn take_output_format(args: &mut Vec<String>) -> Result<Option<OutputFormat>, String> {
    let mut found = None;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].trim_start_matches('-');
        let dashes = args[i].len() - a.len();
        let val = if !(1..=2).contains(&dashes) {
            None
        } else if let Some(v) = a.strip_prefix("output-format=") {
            Some(v.to_string())
        } else if a == "output-format" {
            if i + 1 >= args.len() {
                return Err("--output-format: missing value".into());
            }
            Some(args.remove(i + 1))
        } else {
            None
        };
        match val {
            Some(v) => {
                args.remove(i);
                found = Some(v.parse().map_err(|e| format!("--output-format: {e}"))?);
            }
            None => i += 1,
        }
    }
    Ok(found)
}

/// Splits `foliosim fio` arguments into machine options and fio's.
fn split_fio_args(args: &[String]) -> Result<(MachineArgs, Vec<String>), String> {
    const OURS: &[&str] = &[
        "memory",
        "memcg-limit",
        "read-ahead-kb",
        "lru",
        "policy",
        "variant",
        "device",
        "machine-profile",
        "swap",
        "disk-size",
        "existing-file-size",
        "fs",
        "kernel",
        "large-folios",
        "fio-memory",
        "sysctl",
        "seed",
        "timeline",
        "check-invariants",
        "json",
        "trace",
        "trace-events",
        "trace-file",
        "trace-cgroup",
        "trace-window",
    ];
    const FLAGS: &[&str] = &["timeline", "check-invariants", "json"];
    let mut ours: Vec<String> = vec!["machine".into()];
    let mut fio = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let key = a
            .strip_prefix("--")
            .map(|k| k.split('=').next().unwrap_or(k));
        match key {
            Some(k) if OURS.contains(&k) => {
                ours.push(a.clone());
                if !a.contains('=') && !FLAGS.contains(&k) {
                    i += 1;
                    let v = args.get(i).ok_or_else(|| format!("--{k}: missing value"))?;
                    ours.push(v.clone());
                }
            }
            _ => fio.push(a.clone()),
        }
        i += 1;
    }
    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        m: MachineArgs,
    }
    let w = Wrap::try_parse_from(&ours).map_err(|e| {
        e.to_string()
            .lines()
            .next()
            .unwrap_or("bad option")
            .to_string()
    })?;
    Ok((w.m, fio))
}

/// Refuses a run whose model could outgrow this host's memory (frames and
/// file slots grow as pages are touched, up to the bound computed here; a
/// failed allocation mid-run would abort the process instead of saying
/// why).
fn check_footprint(cfg: &SimConfig, file_sizes: &[u64]) -> Result<(), String> {
    let need = sim::footprint_bytes(&cfg.mm, file_sizes.iter().copied());
    let avail = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("MemAvailable:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u128>().ok())
        })
        .map(|kb| kb * 1024);
    match avail {
        Some(a) if need > a * 3 / 4 => Err(format!(
            "the model may need up to {} MiB for --memory {} MiB and {} MiB of files and mappings (24 bytes per page frame used, about 8 per page of file); this host has {} MiB available",
            need >> 20,
            cfg.mm.ram_bytes >> 20,
            file_sizes.iter().map(|&b| b as u128).sum::<u128>() >> 20,
            a >> 20
        )),
        _ => Ok(()),
    }
}

fn run_workload(cmd: &Cmd) -> Result<(RunReport, Output, String), String> {
    Ok(run_workload_with(cmd, &[], false)?.expect("not a dry run"))
}

/// [`run_workload`] with fio job options that override every job's own
/// (a sweep's `fio.OPTION` parameters); `dry` checks everything up to
/// the run and returns None (a sweep checks its grid before it starts).
fn run_workload_with(
    cmd: &Cmd,
    fio_overrides: &[(String, String)],
    dry: bool,
) -> Result<Option<(RunReport, Output, String)>, String> {
    match cmd {
        Cmd::Fio { args } => {
            let (m, mut fio_args) = split_fio_args(args)?;
            let format = take_output_format(&mut fio_args)?;
            if fio_args.is_empty() {
                return Err("fio: no job file and no --name given".into());
            }
            let cfg = m.config()?;
            // fio's $mb_memory is the machine's memory: the modelled one.
            // The model gives each job its own CPU; $ncpus is 1.
            let existing_file_size = match &m.existing_file_size {
                Some(d) => Some(parse_size(d).map_err(|e| format!("--existing-file-size: {e}"))?),
                None => None,
            };
            let kw = foliosim_workload::fio::Keywords {
                pagesize: foliosim::mm::PAGE_SIZE,
                mb_memory: cfg.mm.ram_bytes >> 20,
                ncpus: 1,
                existing_file_size,
            };
            let mut jobs =
                foliosim_workload::fio::parse_cmdline_overriding(&fio_args, &kw, fio_overrides)
                    .map_err(|e| e.to_string())?;
            let disk = match &m.disk_size {
                Some(d) => Some(parse_size(d).map_err(|e| format!("--disk-size: {e}"))?),
                None => None,
            };
            foliosim_workload::fio::resolve_device_sizes(&mut jobs, disk)
                .map_err(|e| e.to_string())?;
            if jobs.is_empty() {
                return Err("fio: no jobs defined".into());
            }
            let out =
                match format {
                    Some(_) if m.json => return Err(
                        "--json and --output-format: choose one (--json is foliosim's own object)"
                            .into(),
                    ),
                    Some(format) => Output::Fio {
                        format,
                        options: fio_output::job_options(&fio_args, &jobs),
                    },
                    None => Output::Foliosim { json: m.json },
                };
            // Jobs naming the same file share one mapping, as in run_fio.
            let mut files: BTreeMap<&str, u64> = BTreeMap::new();
            for j in &jobs {
                if j.files.is_empty() {
                    let e = files.entry(j.filename.as_str()).or_default();
                    *e = (*e).max(j.file_size());
                }
                for f in &j.files {
                    let e = files.entry(f.name.as_str()).or_default();
                    *e = (*e).max(f.offset.saturating_add(f.size));
                }
            }
            let sizes: Vec<u64> = files.into_values().collect();
            check_footprint(&cfg, &sizes)?;
            if dry {
                return Ok(None);
            }
            let spec = trace_args::arm(&m.trace)?;
            // The bar's end: the longest runtime= (jobs may end sooner).
            let runtime = jobs.iter().filter_map(|j| j.runtime_ns).max();
            trace_args::progress::install(runtime.map(|ns| ns / 1_000_000_000));
            let r = sim::run_fio(cfg, &jobs);
            trace_args::progress::done();
            trace_args::finish(&spec, m.trace.trace.as_deref())?;
            if let Some(e) = &r.policy_error {
                return Err(format!("--policy: {e}"));
            }
            Ok(Some((r, out, "fio".into())))
        }
        Cmd::MmapProbe {
            probe,
            lru,
            timeline,
            trace,
        } => {
            let spec = probe.spec()?;
            let mut m = MachineArgs {
                lru: Some(lru.clone()),
                variant: probe.variant.clone(),
                seed: Some(probe.seed),
                timeline: *timeline,
                trace: trace.clone(),
                ..Default::default()
            };
            m.memory = Some(probe.memory_bytes(8 << 30)?.to_string());
            m.memcg_limit = probe.memcg_limit.clone();
            m.read_ahead_kb = probe.read_ahead_kb.map(u64::from);
            let cfg = m.config()?;
            check_footprint(&cfg, &[spec.file_size])?;
            if dry {
                return Ok(None);
            }
            let tspec = trace_args::arm(trace)?;
            trace_args::progress::install(None);
            let r = sim::run_probe(cfg, &spec);
            trace_args::progress::done();
            trace_args::finish(&tspec, trace.trace.as_deref())?;
            Ok(Some((
                r,
                Output::Foliosim { json: probe.json },
                "mmap-probe".into(),
            )))
        }
        Cmd::Replay {
            trace,
            format,
            csv_spec,
            file_pages,
            machine,
        } => {
            use foliosim_workload::trace;
            let fmt = match (format.as_deref(), csv_spec) {
                (Some("oracleGeneral"), None) => trace::TraceFormat::OracleGeneral,
                (Some("oracleGeneral"), Some(_)) => {
                    return Err("--csv-spec: only with --format csv".into())
                }
                (Some("csv"), s) | (None, s @ Some(_)) => trace::TraceFormat::Csv(
                    trace::parse_csv_spec(s.as_deref().unwrap_or(""))
                        .map_err(|e| format!("--csv-spec: {e}"))?,
                ),
                (None, None) => trace::guess_format(trace),
                (Some(f), _) => {
                    return Err(format!(
                        "--format: unknown trace format '{f}' (oracleGeneral, csv)"
                    ))
                }
            };
            if *file_pages == 0 {
                return Err("--file-pages: must be > 0".into());
            }
            let reader = trace::open(trace, &fmt).map_err(|e| e.to_string())?;
            if machine.fs.is_some() {
                return Err("--fs: only fio jobs run on the model's file system".into());
            }
            let cfg = machine.config()?;
            check_footprint(&cfg, &[file_pages.saturating_mul(4096)])?;
            if dry {
                return Ok(None);
            }
            let tspec = trace_args::arm(&machine.trace)?;
            trace_args::progress::install(None);
            let r = sim::Sim::new(cfg).run_trace(reader, *file_pages);
            trace_args::progress::done();
            let r = r.map_err(|e| e.to_string())?;
            trace_args::finish(&tspec, machine.trace.trace.as_deref())?;
            Ok(Some((
                r,
                Output::Foliosim { json: machine.json },
                "replay".into(),
            )))
        }
        _ => unreachable!(),
    }
}

fn print_report(r: &RunReport, out: &Output, what: &str) {
    match out {
        Output::Foliosim { json: true } => println!(
            "{}",
            serde_json::to_string_pretty(r).expect("report serialises")
        ),
        Output::Foliosim { json: false } => print!("{}", foliosim::report::render_text(r, what)),
        Output::Fio { format, options } => {
            // fio prints its JSON before its normal output.
            if format.json {
                print!("{}", fio_output::render_json(r, options, format.json_plus));
            }
            if format.normal {
                print!("{}", foliosim::report::render_text(r, what));
            }
        }
    }
}

fn compare(sets: &[String], workload: &[String], json: bool) -> Result<(), String> {
    if sets.len() < 2 {
        return Err("compare: give at least two --set".into());
    }
    if workload.iter().any(|a| a.starts_with("--trace")) {
        return Err(
            "compare: --trace writes one run's trace; trace the workload on its own".into(),
        );
    }
    let mut reports = Vec::new();
    for set in sets {
        let mut argv: Vec<String> = vec!["foliosim".into()];
        argv.extend(workload.iter().cloned());
        let mut variants = Vec::new();
        let mut lru = None;
        for tok in set
            .split([',', '+'])
            .map(str::trim)
            .filter(|t| !t.is_empty())
        {
            match tok {
                "classic" | "mglru" => lru = Some(tok.to_string()),
                _ => variants.push(tok.to_string()),
            }
        }
        // Validate before running.
        let mut probe = Variants::newest();
        for v in &variants {
            probe.apply(v).map_err(|e| format!("--set {set}: {e}"))?;
        }
        if !variants.is_empty() {
            argv.push(format!("--variant={}", variants.join(",")));
        }
        if let Some(l) = lru {
            argv.push(format!("--lru={l}"));
        }
        let cli = Cli::try_parse_from(&argv).map_err(|e| {
            e.to_string()
                .lines()
                .next()
                .unwrap_or("bad workload")
                .to_string()
        })?;
        if !matches!(
            cli.cmd,
            Cmd::Fio { .. } | Cmd::MmapProbe { .. } | Cmd::Replay { .. }
        ) {
            return Err("compare: the workload must be fio, mmap-probe or replay".into());
        }
        let (r, _, _) = run_workload(&cli.cmd)?;
        reports.push(r);
    }
    if json {
        let v = serde_json::json!({ "sets": sets, "workload": workload, "reports": reports });
        println!(
            "{}",
            serde_json::to_string_pretty(&v).expect("reports serialise")
        );
        return Ok(());
    }
    let mut names: Vec<&str> = Vec::new();
    for r in &reports {
        for (k, _) in r.memcg.iter().chain(r.vmstat.iter()) {
            if !names.contains(k) {
                names.push(k);
            }
        }
    }
    let get = |r: &RunReport, k: &str| -> u64 {
        r.vmstat
            .get(k)
            .or_else(|| r.memcg.get(k))
            .copied()
            .unwrap_or(0)
    };
    print!("{:<32}", "counter");
    for s in sets {
        print!(" {:>18}", s);
    }
    for s in &sets[1..] {
        print!(" {:>14}", format!("d({s})"));
    }
    println!();
    let mut rows: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for k in names {
        let vals: Vec<u64> = reports.iter().map(|r| get(r, k)).collect();
        if vals.iter().any(|&v| v != 0) {
            rows.insert(k, vals);
        }
    }
    let elapsed: Vec<u64> = reports.iter().map(|r| r.elapsed_ns / 1_000_000).collect();
    rows.insert("elapsed_ms", elapsed);
    for (k, vals) in rows {
        print!("{:<32}", k);
        for v in &vals {
            print!(" {:>18}", v);
        }
        for v in &vals[1..] {
            let base = vals[0];
            let d = *v as f64 - base as f64;
            let pct = if base > 0 {
                format!("{:+.1}%", d / base as f64 * 100.0)
            } else {
                format!("{:+}", d)
            };
            print!(" {:>14}", pct);
        }
        println!();
    }
    Ok(())
}

fn run(cli: Cli) -> Result<(), String> {
    match &cli.cmd {
        Cmd::Fio { .. } | Cmd::MmapProbe { .. } | Cmd::Replay { .. } => {
            let (r, out, what) = run_workload(&cli.cmd)?;
            print_report(&r, &out, &what);
            Ok(())
        }
        Cmd::Compare {
            sets,
            json,
            workload,
        } => compare(sets, workload, *json),
        Cmd::Reproduce { which } => match which {
            ReproduceCmd::MmapMiss {
                format,
                lru,
                jobs,
                seed,
            } => {
                let lru: LruKind = lru.parse().map_err(|e| format!("--lru: {e}"))?;
                if format != "table" && format != "json" {
                    return Err(format!("--format: '{format}' is not table or json"));
                }
                trace_args::progress::install(None);
                let rows = reproduce::mmap_miss_matrix(lru, *seed, *jobs);
                trace_args::progress::done();
                print_rows(format, &rows, || reproduce::render_mmap_miss(&rows));
                Ok(())
            }
            ReproduceCmd::StridedMmap {
                format,
                jobs,
                seed,
                cell,
                runtime,
                trace,
            } => {
                if format != "table" && format != "json" {
                    return Err(format!("--format: '{format}' is not table or json"));
                }
                if *runtime == 0 || *runtime > 3600 {
                    return Err(format!("--runtime: {runtime} is not in 1..=3600 seconds"));
                }
                let rows = match cell {
                    None if trace.trace.is_some() => {
                        return Err("--trace: needs --cell (one run, one trace)".into())
                    }
                    None if *runtime != 90 => return Err("--runtime: needs --cell".into()),
                    None => {
                        trace_args::progress::install(None);
                        let rows = reproduce::strided_mmap(*seed, *jobs);
                        trace_args::progress::done();
                        rows
                    }
                    Some(c) => {
                        let parts: Vec<&str> = c.split(',').map(str::trim).collect();
                        let known = reproduce::STRIDED_CELLS.iter().find(|(l, v, p)| {
                            parts.len() == 3
                                && format!("{l:?}").eq_ignore_ascii_case(parts[0])
                                && *v == parts[1]
                                && *p == parts[2]
                        });
                        let Some(&(l, v, p)) = known else {
                            let all: Vec<String> = reproduce::STRIDED_CELLS
                                .iter()
                                .map(|(l, v, p)| {
                                    format!("{},{v},{p}", format!("{l:?}").to_lowercase())
                                })
                                .collect();
                            return Err(format!("--cell: '{c}' is not one of {}", all.join(" ")));
                        };
                        let spec = trace.spec()?;
                        trace_args::progress::install(Some(*runtime));
                        let row = reproduce::strided_mmap_cell_with(
                            l,
                            v,
                            p,
                            *seed,
                            *runtime,
                            spec.clone(),
                        );
                        trace_args::progress::done();
                        trace_args::finish(&spec, trace.trace.as_deref())?;
                        vec![row]
                    }
                };
                print_rows(format, &rows, || reproduce::render_strided(&rows));
                Ok(())
            }
            ReproduceCmd::ReclaimLoop {
                format,
                jobs,
                seeds,
            } => {
                use foliosim::reproduce::reclaim_loop;
                if format != "table" && format != "json" {
                    return Err(format!("--format: '{format}' is not table or json"));
                }
                if !(1..=1000).contains(seeds) {
                    return Err(format!("--seeds: {seeds} is not between 1 and 1000"));
                }
                let seeds: Vec<u64> = (1..=*seeds).collect();
                let (sc, base) = shipped_scenario(
                    reclaim_loop::KERNEL_BUILD_TOML,
                    "examples/kernel-build.toml",
                )?;
                trace_args::progress::install(None);
                let mut rows = reclaim_loop::swappiness_sweep(&base, &sc, *jobs, &seeds);
                type Experiment = fn(
                    &SimConfig,
                    &foliosim_workload::scenario::Scenario,
                    usize,
                ) -> Vec<reclaim_loop::Row>;
                let experiments: [(&str, &str, Experiment); 6] = [
                    (
                        reclaim_loop::AGING_OOM_TOML,
                        "examples/seed003-aging-oom-small.toml",
                        reclaim_loop::aging_oom,
                    ),
                    (
                        reclaim_loop::DD_OOM_TOML,
                        "examples/seed003-dd-throttle-oom.toml",
                        reclaim_loop::throttle_oom,
                    ),
                    (
                        reclaim_loop::MONGODB_TOML,
                        "examples/seed003-mongodb-ycsb.toml",
                        reclaim_loop::mongodb_ycsb,
                    ),
                    (
                        reclaim_loop::KBUILD_TMPFS_TOML,
                        "examples/seed003-kernel-build-tmpfs.toml",
                        reclaim_loop::kernel_build_tmpfs,
                    ),
                    (
                        reclaim_loop::MYSQL_TOML,
                        "examples/seed003-mysql-sysbench.toml",
                        reclaim_loop::mysql_sysbench,
                    ),
                    (
                        reclaim_loop::CHROME_NODE_TOML,
                        "examples/seed003-chrome-node.toml",
                        reclaim_loop::chrome_node,
                    ),
                ];
                for (text, label, run) in experiments {
                    let (sc, base) = shipped_scenario(text, label)?;
                    rows.extend(run(&base, &sc, *jobs));
                }
                // The fio row runs on the MongoDB proxy's machine (both 1/32).
                let (_, mongo_base) = shipped_scenario(
                    reclaim_loop::MONGODB_TOML,
                    "examples/seed003-mongodb-ycsb.toml",
                )?;
                rows.extend(reclaim_loop::fio_mmap_randread(
                    &mongo_base,
                    reclaim_loop::FIO_MMAP_TOML,
                    *jobs,
                )?);
                trace_args::progress::done();
                print_rows(format, &rows, || reclaim_loop::render(&rows, &seeds));
                Ok(())
            }
            ReproduceCmd::CacheExt { format, jobs } => {
                use reproduce::cache_ext;
                if format != "text" && format != "json" {
                    return Err(format!("--format: '{format}' is not text or json"));
                }
                // Each experiment's [machine] is the same; the first gives
                // the machine.
                let (_, base) =
                    shipped_scenario(cache_ext::YCSB_C_TOML, "examples/cache_ext/ycsb-c.toml")?;
                trace_args::progress::install(None);
                let rows = cache_ext::cache_ext(&base, *jobs);
                trace_args::progress::done();
                let rows = rows?;
                print_rows(format, &rows, || cache_ext::render(&rows));
                Ok(())
            }
            ReproduceCmd::WorkingsetProtection {
                format,
                jobs,
                seed,
                base,
            } => {
                use reproduce::workingset_protection as wp;
                if format != "text" && format != "json" {
                    return Err(format!("--format: '{format}' is not text or json"));
                }
                let size = wp::Size {
                    base: base.parse().map_err(|e| format!("--base: {e}"))?,
                    ..wp::Size::default()
                };
                trace_args::progress::install(None);
                let rows = wp::workingset_protection(*seed, size, *jobs);
                trace_args::progress::done();
                let rows = rows?;
                print_rows(format, &rows, || wp::render(&rows, size));
                Ok(())
            }
        },
        Cmd::Oracle { cmd } => oracle_cmd::run(cmd, &oracle_model),
        Cmd::Run(a) => run_cmd::run(a),
        Cmd::RefcountBench(a) => refcount_cmd::run(a),
        Cmd::Bench(a) => bench_cmd::run(a),
        Cmd::Report(a) => report_cmd::run(a),
        Cmd::Sweep(a) => sweep::run(a),
    }
}

/// One workload's report: fio's `jobs`/`vmstat`/`memcg` object, or a
/// scenario's (with `cgroups` and `processes` beside `run`).
pub enum Report {
    Run(RunReport),
    Scenario(foliosim::scenario::ScenarioReport),
}

impl Report {
    /// The machine-wide run report (a scenario's `run`).
    pub fn run(&self) -> &RunReport {
        match self {
            Report::Run(r) => r,
            Report::Scenario(s) => &s.run,
        }
    }

    /// foliosim's JSON object, as `--json` prints it.
    pub fn to_json(&self) -> String {
        match self {
            Report::Run(r) => serde_json::to_string(r),
            Report::Scenario(s) => serde_json::to_string(s),
        }
        .expect("report serialises")
    }
}

/// Runs one workload command line as `foliosim ARGV...` would (`fio ...`,
/// `run SCENARIO`, `mmap-probe ...`, `replay ...`, machine options and
/// variants included) and returns its report instead of printing it.
/// `fio_overrides` are fio job options applied over every job.
pub fn run_argv(argv: &[String], fio_overrides: &[(String, String)]) -> Result<Report, String> {
    let r = run_point(argv, fio_overrides, None, false)?;
    Ok(r.expect("not a dry run"))
}

/// [`run_argv`] with a scenario's text in place of its file's (`run`
/// only); `dry` checks all but the run and returns None.
pub(crate) fn run_point(
    argv: &[String],
    fio_overrides: &[(String, String)],
    scenario_text: Option<&str>,
    dry: bool,
) -> Result<Option<Report>, String> {
    let cmd = parse_workload(argv)?;
    if !fio_overrides.is_empty() && !matches!(cmd, Cmd::Fio { .. }) {
        return Err("fio options given for a workload that is not fio".into());
    }
    match &cmd {
        Cmd::Run(a) => Ok(run_cmd::report(a, scenario_text, dry)?.map(Report::Scenario)),
        _ => Ok(run_workload_with(&cmd, fio_overrides, dry)?.map(|r| Report::Run(r.0))),
    }
}

/// A workload command line parsed as the binary parses it.
fn parse_workload(argv: &[String]) -> Result<Cmd, String> {
    let full = std::iter::once("foliosim".to_string()).chain(argv.iter().cloned());
    let cli = Cli::try_parse_from(full).map_err(|e| {
        let text = e.to_string();
        let first = text.lines().next().unwrap_or("bad arguments");
        first.strip_prefix("error: ").unwrap_or(first).to_string()
    })?;
    match cli.cmd {
        c @ (Cmd::Fio { .. } | Cmd::MmapProbe { .. } | Cmd::Replay { .. } | Cmd::Run(_)) => Ok(c),
        _ => Err("the workload must be fio, run, mmap-probe or replay".into()),
    }
}

/// The binary's entry point.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                e.exit();
            }
            // clap's own report spans several lines (usage, a hint): bad
            // input gets one line here, like every other error.
            let text = e.to_string();
            // The message up to clap's usage block, on one line: a
            // missing argument is named on the line after the first.
            let head = text.split("\n\n").next().unwrap_or("bad arguments");
            let head = head.lines().map(str::trim).collect::<Vec<_>>().join(" ");
            let first = head.strip_prefix("error: ").unwrap_or(&head);
            eprintln!(
                "foliosim: {} (see --help)",
                foliosim_workload::units::one_line(first)
            );
            return ExitCode::from(2);
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("foliosim: {}", foliosim_workload::units::one_line(&e));
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_takes_a_profile_and_its_latency() {
        let d = parse_device("virtio").unwrap();
        // The reference machine's measured disk.
        let measured = foliosim::mm::profile::reference().device.latency_ns.value;
        assert_eq!((d.name, d.latency_ns), ("virtio", measured));
        assert_eq!(
            parse_device("virtio:latency=45us").unwrap().latency_ns,
            45_000
        );
        // A bare number is microseconds, as fio's latency options.
        assert_eq!(parse_device("nvme:latency=48").unwrap().latency_ns, 48_000);
        // The latency from a group's first limit on.
        let d = parse_device("virtio:latency=45,pressure_latency=52us").unwrap();
        assert_eq!(
            (d.latency_ns, d.pressure_latency_ns),
            (45_000, Some(52_000))
        );
        assert_eq!(parse_device("virtio").unwrap().pressure_latency_ns, None);
        let d = parse_device("sata-ssd:latency=48300ns").unwrap();
        assert_eq!(
            (d.name, d.latency_ns, d.queue_depth),
            ("sata-ssd", 48_300, 32)
        );
        for (bad, why) in [
            (
                "floppy",
                "unknown profile 'floppy' (nvme, sata-ssd, hdd, virtio, ramdisk, zram)",
            ),
            (
                "virtio:latncy=4",
                "unknown device option 'latncy=4' in 'virtio:latncy=4' (latency=DUR, pressure_latency=DUR)",
            ),
            ("virtio:latency=0", "latency '0' out of range (1ns to 10s)"),
            (
                "virtio:pressure_latency=0",
                "pressure_latency '0' out of range (1ns to 10s)",
            ),
            (
                "virtio:latency=11s",
                "latency '11s' out of range (1ns to 10s)",
            ),
            (
                "virtio:latency=4parsecs",
                "bad time '4parsecs' (unknown unit)",
            ),
        ] {
            assert_eq!(parse_device(bad).unwrap_err(), why, "{bad}");
        }
        let e = MachineArgs {
            device: Some("virtio:latency=x".into()),
            ..MachineArgs::default()
        }
        .config()
        .map(|_| ())
        .unwrap_err();
        assert_eq!(e, "--device: bad time 'x'");
    }

    #[test]
    fn sysctl_sets_the_stats_flush_switches_and_rejects_bad_values() {
        let args = |kv: &[&str]| MachineArgs {
            sysctl: kv.iter().map(|s| s.to_string()).collect(),
            ..MachineArgs::default()
        };
        let d = args(&[]).config().unwrap().mm;
        assert!(!d.memcg_stats_lazy_flush);
        let c = args(&[
            "foliosim.memcg_stats_lazy_flush=1",
            "foliosim.stats_flush_phase_ms=250",
        ])
        .config()
        .unwrap()
        .mm;
        assert!(c.memcg_stats_lazy_flush);
        assert_eq!(c.stats_flush_phase_ns, 250_000_000);
        for bad in [
            "foliosim.memcg_stats_lazy_flush=2",
            "foliosim.stats_flush_phase_ms=0",
            "foliosim.stats_flush_phase_ms=2001",
        ] {
            let e = args(&[bad]).config().map(|_| ()).unwrap_err();
            assert_eq!(
                e,
                format!("--sysctl: unknown key or value out of range: '{bad}'")
            );
        }
    }

    #[test]
    fn fs_option_picks_the_models_file_system() {
        let args = |fs: Option<&str>, disk: Option<&str>| MachineArgs {
            fs: fs.map(String::from),
            disk_size: disk.map(String::from),
            ..MachineArgs::default()
        };
        assert!(args(None, None).config().unwrap().mm.fs.is_none());
        assert!(args(Some("none"), None).config().unwrap().mm.fs.is_none());
        let e = args(Some("ext4"), None).config().unwrap().mm.fs.unwrap();
        assert!(e.layout.is_none(), "the model lays its files out");
        assert_eq!(
            e.geo,
            foliosim::fs::ext4::Ext4Geometry::mkfs_default(DEFAULT_FS_BYTES)
        );
        // The device's size places the inode tables (mke2fs's reserved GDT).
        let small = args(Some("ext4"), Some("1G"))
            .config()
            .unwrap()
            .mm
            .fs
            .unwrap();
        assert_ne!(small.geo.itable0, e.geo.itable0);
        // xfs and btrfs: file data only (their metadata is not modelled).
        assert!(args(Some("xfs"), None).config().unwrap().mm.fs.is_none());
        assert_eq!(
            args(Some("zfs"), None).config().map(|_| ()).unwrap_err(),
            "--fs: unknown file system 'zfs' (none, ext4, xfs, btrfs)"
        );
    }
}

/// A reproduction's rows: JSON (`--format json`) or its text table.
fn print_rows<T: serde::Serialize + ?Sized>(format: &str, rows: &T, text: impl FnOnce() -> String) {
    if format == "json" {
        println!(
            "{}",
            serde_json::to_string_pretty(rows).expect("rows serialise")
        );
    } else {
        print!("{}", text());
    }
}
