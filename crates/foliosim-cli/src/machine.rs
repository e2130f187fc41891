//! The modelled machine's options, one set for every workload command
//! (fio, run, mmap-probe, replay, compare's workload, sweep grids, Python's
//! `machine={...}`): the same names, defaults and validation, parsed once
//! here into a SimConfig.

use clap::{CommandFactory, Parser};
use foliosim::mm::{blkdev::DeviceProfile, MmConfig, SwapKind, Variants};
use foliosim::sim::{self, LruKind, SimConfig};
use foliosim_workload::units::parse_size;

use crate::trace_args;

/// The size of the file system `--fs ext4` lays out without --disk-size
/// (only the inode tables' place depends on it).
pub(crate) const DEFAULT_FS_BYTES: u64 = 1 << 40;

/// Options of the modelled machine, shared by the workload commands.
#[derive(clap::Args, Clone, Debug, Default)]
pub(crate) struct MachineArgs {
    /// Machine RAM (default 8G).
    #[arg(long, allow_hyphen_values = true)]
    pub(crate) memory: Option<String>,
    /// Run the workload in a memcg with this hard limit (memory.max).
    #[arg(long, allow_hyphen_values = true)]
    pub(crate) memcg_limit: Option<String>,
    /// read_ahead_kb of the device (default 128).
    #[arg(long)]
    pub(crate) read_ahead_kb: Option<u64>,
    /// Reclaim policy: classic or mglru (default classic).
    #[arg(long)]
    pub(crate) lru: Option<String>,
    /// cache_ext page-cache policy of the workload's memcg:
    /// NAME[:key=val,...] (fifo, mru, lfu, s3fifo, get-scan, admit-filter,
    /// lhd, mglru-bpf, or py:NAME registered from Python; default: none).
    /// Needs --lru classic.
    #[arg(long)]
    pub(crate) policy: Option<String>,
    /// Kernel patches and behaviours over --kernel's (`foliosim variants`
    /// lists them), comma or plus separated.
    #[arg(long, value_delimiter = ',', long_help = foliosim::mm::patches::variant_help())]
    pub(crate) variant: Vec<String>,
    /// Device profile: nvme, sata-ssd, hdd, virtio, ramdisk, zram;
    /// NAME:latency=DUR sets its per-request latency (e.g. virtio:latency=45us,
    /// a bare number is microseconds: the oracle gives the host's measured one),
    /// pressure_latency=DUR the latency once a memory cgroup first met its
    /// limit (the oracle gives each real run's own, from its misses there).
    #[arg(long)]
    pub(crate) device: Option<String>,
    /// A machine profile (TOML, as `foliosim oracle calibrate` writes
    /// it): that machine's CPU costs, and its disk as the device unless
    /// --device names one. Default: the reference machine's
    /// (crates/foliosim/profiles/reference-vm.toml; docs/calibration.md).
    /// Not --profile: that is fio's own option.
    #[arg(long)]
    pub(crate) machine_profile: Option<std::path::PathBuf>,
    /// Swap: none, zram:SIZE or disk:SIZE.
    #[arg(long, allow_hyphen_values = true)]
    pub(crate) swap: Option<String>,
    /// Capacity of the disk, for fio jobs on a block device
    /// (filename=/dev/...) without size=: fio sizes them to the device.
    /// No default: such a job needs it.
    #[arg(long, allow_hyphen_values = true)]
    pub(crate) disk_size: Option<String>,
    /// Size of the regular files a fio job names without size= that exist
    /// before the run (fio takes the size from the file; the model's runs
    /// otherwise start with no files). No default.
    #[arg(long, allow_hyphen_values = true)]
    pub(crate) existing_file_size: Option<String>,
    /// File system of the workload's files: none (file data only, the
    /// default), ext4 (its metadata reads through the block device's page
    /// cache, on a file system as mke2fs makes it with its defaults on a
    /// --disk-size device, 1T without one), xfs or btrfs (file data only;
    /// with --kernel they decide large folio support: xfs has it in every
    /// preset, btrfs in none).
    #[arg(long)]
    pub(crate) fs: Option<String>,
    /// The kernel release the machine runs: 6.1, 6.6, 6.12, 6.14, 6.16,
    /// 6.18, 7.0, 7.2 or mm-new (the seeds' kernel). It sets the seeds' patches as that
    /// release has them (--variant applies on top) and large folios for
    /// the files (ext4 since 6.16). Default: the seeds' patches as in
    /// mm-new, order-0 page cache.
    #[arg(long)]
    pub(crate) kernel: Option<String>,
    /// Large page-cache folios for the workload's files: on or off
    /// (default: as --kernel says, off without it).
    #[arg(long, value_parser = on_off)]
    pub(crate) large_folios: Option<bool>,
    /// fio's own memory: on charges each fio job's process image and I/O
    /// buffers (about 8 MiB for the first job) to its memcg, as the real
    /// fio's are; off (the default) gives fio's jobs no memory of their own.
    #[arg(long, value_parser = on_off)]
    pub(crate) fio_memory: Option<bool>,
    /// Scenario processes' own memory: on charges each process's image
    /// and heap (132 pages) and each thread's stack and I/O buffer (4
    /// pages and its largest read or write block) to its memcg, as
    /// measured for the oracle's executor; off (the default) gives a
    /// process only the mappings its steps make.
    #[arg(long, value_parser = on_off)]
    pub(crate) process_memory: Option<bool>,
    /// CPUs the scenario's tasks share: threads are dealt to them in turn
    /// (as the oracle pins its real tasks) and wait while another task
    /// has theirs. Default: every thread has a CPU of its own.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub(crate) cpus: Option<u32>,
    /// The tmpfs mount's huge= option for the scenario's tmpfs files:
    /// never (the default), always, within_size or advise.
    #[arg(long)]
    pub(crate) tmpfs_huge: Option<String>,
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
    pub(crate) sysctl: Vec<String>,
    /// Seed of every random choice (default 1).
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// Print counters per simulated second too.
    #[arg(long)]
    pub(crate) timeline: bool,
    /// Check the model's invariants after every reclaim batch (slow).
    #[arg(long)]
    pub(crate) check_invariants: bool,
    /// Print foliosim's own JSON object instead of text (for fio's JSON
    /// schema use `foliosim fio --output-format=json`).
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) trace: trace_args::TraceArgs,
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

/// An on/off machine option's value.
fn on_off(v: &str) -> Result<bool, String> {
    match v {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("'{v}' is not on or off")),
    }
}

impl MachineArgs {
    pub(crate) fn config(&self) -> Result<SimConfig, String> {
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
        mm.large_folios = self
            .large_folios
            .unwrap_or_else(|| mm.kernel.is_some_and(fs_large));
        if let Some(v) = self.tmpfs_huge.as_deref() {
            mm.tmpfs_huge = foliosim::mm::TmpfsHuge::parse(v).ok_or_else(|| {
                format!("--tmpfs-huge: '{v}' is not never, always, within_size or advise")
            })?;
        }
        // Absent is off.
        mm.fio_process_memory = self.fio_memory.unwrap_or(false);
        mm.process_memory = self.process_memory.unwrap_or(false);
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
        mm.thp_anon_orders = (2..=9)
            .filter(|&o| {
                thp_size[o] == "always" || (thp_size[o] == "inherit" && thp_top == "always")
            })
            .fold(0, |m, o| m | 1 << o);
        // "madvise": only for a VMA with MADV_HUGEPAGE (fio's page_fault
        // engine with hugepage_delay; no other workload madvises so).
        mm.thp_anon_madvise_orders = (2..=9)
            .filter(|&o| {
                thp_size[o] == "madvise" || (thp_size[o] == "inherit" && thp_top == "madvise")
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

/// `--memcg-limit`'s value: a size of at least 1M.
pub(crate) fn parse_memcg_limit(s: &str) -> Result<u64, String> {
    let l = parse_size(s).map_err(|e| format!("--memcg-limit: {e}"))?;
    if l < 1 << 20 {
        return Err(format!("--memcg-limit: {s} is below 1M"));
    }
    Ok(l)
}

/// `foliosim fio`: its machine options and fio's own arguments in any
/// order. clap parses the machine options once split from fio's
/// (split_fio_args), and renders `foliosim fio --help`.
#[derive(Parser)]
#[command(
    name = "foliosim fio",
    about = "Run fio jobs (job files and/or fio's --name=... command-line form) through the model",
    after_help = "Any other argument is fio's: job files, and fio's options (--name=J --rw=randread --size=1G ...) as fio 3.33 takes them."
)]
pub(crate) struct FioCommand {
    #[command(flatten)]
    pub(crate) machine: MachineArgs,
    /// fio's output formats (normal, json, json+, terse is refused).
    #[arg(long)]
    output_format: Option<String>,
    /// Job files and fio's options.
    #[arg(value_name = "FIO_ARGS")]
    fio: Vec<String>,
}

/// `foliosim fio --help`: the machine options and where fio's go.
pub(crate) fn fio_help() -> String {
    FioCommand::command().render_long_help().to_string()
}

/// The machine options' long names, each with whether it takes a value.
pub(crate) fn machine_options() -> Vec<(String, bool)> {
    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        m: MachineArgs,
    }
    Wrap::command()
        .get_arguments()
        .filter_map(|a| Some((a.get_long()?.to_string(), a.get_action().takes_values())))
        .collect()
}

/// "--memcg-limt: unknown foliosim option (did you mean --memcg-limit?)".
pub(crate) fn unknown_option(name: &str, valid: &[(String, bool)]) -> String {
    let near = foliosim::suggest::nearest(name, valid.iter().map(|(n, _)| n.as_str()));
    match near {
        Some(n) => format!("--{name}: unknown foliosim option (did you mean --{n}?)"),
        None => format!("--{name}: unknown foliosim option (see --help)"),
    }
}

/// Splits `foliosim fio` arguments into machine options and fio's. A
/// `--NAME` that is neither, and is a near miss of a machine option, is
/// reported as a mistyped foliosim option (fio would call it an unknown
/// fio option).
pub(crate) fn split_fio_args(args: &[String]) -> Result<(MachineArgs, Vec<String>), String> {
    let opts = machine_options();
    let mut ours: Vec<String> = vec!["foliosim fio".into()];
    let mut fio = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let Some(key) = a
            .strip_prefix("--")
            .map(|k| k.split('=').next().unwrap_or(k))
        else {
            fio.push(a.clone());
            continue;
        };
        match opts.iter().find(|(n, _)| n == key) {
            Some((_, takes_value)) => {
                ours.push(a.clone());
                if *takes_value && !a.contains('=') {
                    let v = it.next().ok_or_else(|| format!("--{key}: missing value"))?;
                    ours.push(v.clone());
                }
            }
            None if is_machine_typo(key, &opts) => return Err(unknown_option(key, &opts)),
            None => fio.push(a.clone()),
        }
    }
    let w = FioCommand::try_parse_from(&ours).map_err(|e| crate::clap_error_line(&e))?;
    Ok((w.machine, fio))
}

/// Near a machine option's name and not one of fio's.
fn is_machine_typo(key: &str, opts: &[(String, bool)]) -> bool {
    foliosim::suggest::nearest(key, opts.iter().map(|(n, _)| n.as_str())).is_some()
        && !foliosim_workload::fio::is_option(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_workload_command_takes_the_same_machine_options() {
        use clap::CommandFactory;
        let opts = machine_options();
        assert!(opts.len() > 20, "{opts:?}");
        let cli = crate::Cli::command();
        for name in ["run", "mmap-probe", "replay"] {
            let sub = cli.find_subcommand(name).unwrap();
            let longs: Vec<&str> = sub.get_arguments().filter_map(|a| a.get_long()).collect();
            for (o, _) in &opts {
                assert!(longs.contains(&o.as_str()), "{name} lacks --{o}");
            }
        }
        // fio splits each of them off its own arguments.
        for (o, takes_value) in &opts {
            let mut args = vec![format!("--{o}")];
            if *takes_value {
                args.push("x".into());
            }
            match split_fio_args(&args) {
                Ok((_, fio)) => assert!(fio.is_empty(), "--{o} went to fio"),
                Err(e) => assert!(!e.contains("unknown"), "--{o}: {e}"),
            }
        }
    }

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
