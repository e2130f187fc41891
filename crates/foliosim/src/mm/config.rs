//! The machine's configuration (MmConfig): what a kernel developer sets
//! with sysctls, sysfs and the cgroup files, beside the patch registry
//! (patches.rs) and the release presets (release.rs) that fill its
//! `variants` and `kernel`.

use serde::Serialize;

use super::{blkdev, folio, CpuCosts, KernelRelease, TmpfsWriteOrders, Variants, FLUSH_TIME_NS};

/// transparent_hugepage/defrag, as vma_thp_gfp_mask() reads it for a
/// mapping without MADV_HUGEPAGE (a MADV_HUGEPAGE region, fio's
/// page_fault engine's, takes the same mask in the model).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ThpDefrag {
    /// GFP_TRANSHUGE | __GFP_NORETRY: direct reclaim and compaction once.
    Always,
    /// GFP_TRANSHUGE_LIGHT | __GFP_KSWAPD_RECLAIM: no direct reclaim,
    /// kswapd woken.
    Defer,
    /// defer+madvise: as defer for a mapping not madvised.
    DeferMadvise,
    /// GFP_TRANSHUGE_LIGHT: no reclaim at all (the default).
    Madvise,
    /// GFP_TRANSHUGE_LIGHT.
    Never,
}

impl ThpDefrag {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "always" => ThpDefrag::Always,
            "defer" => ThpDefrag::Defer,
            "defer+madvise" => ThpDefrag::DeferMadvise,
            "madvise" => ThpDefrag::Madvise,
            "never" => ThpDefrag::Never,
            _ => return None,
        })
    }

    /// __GFP_DIRECT_RECLAIM in the mask.
    pub fn direct_reclaim(self) -> bool {
        self == ThpDefrag::Always
    }

    /// __GFP_KSWAPD_RECLAIM in the mask.
    pub fn kswapd_reclaim(self) -> bool {
        matches!(
            self,
            ThpDefrag::Always | ThpDefrag::Defer | ThpDefrag::DeferMadvise
        )
    }
}

/// A tmpfs mount's `huge=` (SHMEM_HUGE_NEVER, _ALWAYS, _WITHIN_SIZE,
/// _ADVISE); never is the kernel's default.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum TmpfsHuge {
    Never,
    Always,
    WithinSize,
    /// Large folios only for MADV_HUGEPAGE mappings: none in the model.
    Advise,
}

impl TmpfsHuge {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "never" => TmpfsHuge::Never,
            "always" => TmpfsHuge::Always,
            "within_size" => TmpfsHuge::WithinSize,
            "advise" => TmpfsHuge::Advise,
            _ => return None,
        })
    }
}

/// Swap backing for anonymous memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum SwapKind {
    None,
    Zram,
    Disk,
}

/// Machine configuration: what a kernel developer would set with sysctls,
/// sysfs and the cgroup files.
#[derive(Clone, Debug, Serialize)]
pub struct MmConfig {
    pub ram_bytes: u64,
    /// Memory the model does not give to workloads (kernel text, slab,
    /// other processes).
    pub reserved_bytes: u64,
    pub read_ahead_kb: u64,
    pub fault_around_bytes: u64,
    /// `--kernel`: the release the machine runs, when one was named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<KernelRelease>,
    /// Regular files on the disk hold large folios (their mappings'
    /// mapping_large_folio_support(), up to MAX_PAGECACHE_ORDER), as
    /// ext4 since 6.16 and xfs do: readahead and buffered writes
    /// allocate them. Off: every page-cache folio is order 0. tmpfs,
    /// anonymous memory and the block device's own cache stay order 0.
    pub large_folios: bool,
    /// Anonymous multi-size THP: bit `o` set when do_anonymous_page() may
    /// allocate folios of order `o` (2 to 9; /sys/kernel/mm/
    /// transparent_hugepage/hugepages-*kB/enabled resolved to "always",
    /// with "inherit" taking the top-level `enabled`; the "madvise" ones
    /// are `thp_anon_madvise_orders`). 0: order 0.
    pub thp_anon_orders: u32,
    /// The anonymous THP orders whose `enabled` resolves to "madvise":
    /// taken only by a VMA with MADV_HUGEPAGE (VM_HUGEPAGE), as
    /// __thp_vma_allowable_orders() does. The default is the kernel's
    /// (and the CLI's): `enabled` madvise, hugepages-2048kB inherit, so
    /// the PMD order.
    #[serde(skip_serializing_if = "is_pmd_order_only")]
    pub thp_anon_madvise_orders: u32,
    /// The tmpfs mount's `huge=` option (shmem.rs): which large folios
    /// tmpfs files take.
    pub tmpfs_huge: TmpfsHuge,
    /// /sys/kernel/mm/transparent_hugepage/defrag: whether an anon mTHP
    /// allocation and its memcg charge may reclaim (vma_thp_gfp_mask()).
    pub thp_defrag: ThpDefrag,
    /// fio's own memory (`--fio-memory on`): each fio job's process image
    /// and I/O buffers are anonymous pages charged to the job's memcg at
    /// its start and freed when fio exits (sim::fio_process_pages). Off:
    /// fio's jobs have no memory of their own.
    pub fio_process_memory: bool,
    /// Scenario processes' own memory: on, each process (and each forked
    /// worker) charges its image and heap, and each thread its stack and
    /// I/O buffer, as anonymous pages touched at its start and freed at
    /// its exit, sized as measured for the oracle's executor
    /// (scenario's charge_own_memory()). Off: a process has only the
    /// mappings its steps make.
    pub process_memory: bool,
    /// CPUs a scenario's tasks share (`--cpus`): threads are dealt to them
    /// in turn, as the oracle pins its real tasks, and a task waits while
    /// another has its CPU. 0: every thread has a CPU of its own.
    #[serde(skip_serializing_if = "is_zero_u32")]
    pub nr_cpus: u32,
    pub swappiness: u32,
    pub swap: SwapKind,
    pub swap_bytes: u64,
    /// vm.page-cluster: swap readahead of up to 1 << page_cluster pages.
    pub page_cluster: u32,
    /// /sys/kernel/mm/swap/vma_ra_enabled.
    pub vma_ra_enabled: bool,
    /// zram's compression ratio on the workload's data (original /
    /// compressed size). 3.0 by default: what lzo-rle typically gives on
    /// ordinary anonymous memory (zram's own documentation and the
    /// usual mm_stat figures put it between 2 and 4); not calibrated on
    /// this host's workloads. Zero-filled pages (ZRAM_SAME) are not
    /// modelled apart.
    pub zram_comp_ratio: f64,
    pub dirty_background_ratio: u32,
    pub dirty_ratio: u32,
    pub dirty_expire_centisecs: u64,
    pub dirty_writeback_centisecs: u64,
    pub min_free_kbytes: Option<u64>,
    pub watermark_scale_factor: u64,
    pub device: blkdev::DeviceProfile,
    pub variants: Variants,
    pub check_invariants: bool,
    /// When the periodic memcg stats flush (flush_memcg_stats_dwork, every
    /// FLUSH_TIME = 2 s) first runs, in ns of the model's clock (0 as
    /// 2 s); then every 2 s. The kernel's worker keeps the phase it got at boot, so a real
    /// run starts anywhere in its period: vary this to see how much a
    /// result hangs on it. Default 2 s.
    pub stats_flush_phase_ns: u64,
    /// Classic reclaim and workingset_test_recent() read memcg LRU sizes
    /// and WORKINGSET_ACTIVATE_* as last flushed (rstat), as 6.18 does.
    /// Off by default: the model's clock runs about 3x faster than the
    /// host's on the scenario cases (so it sees 1-2 periodic flushes where
    /// the kernel sees 5-8), and with that few the outcome swings with
    /// the flush phase; docs/fidelity/scenarios.md has the measurements.
    /// Off: exact sizes and counters.
    pub memcg_stats_lazy_flush: bool,
    /// The file system the workload's files are on (`--fs ext4`): its
    /// metadata reads go through the block device's page cache
    /// (crate::fs::ext4). None: file data only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fs: Option<crate::fs::ext4::Ext4Config>,
    /// The cache_ext policy spec (`NAME[:key=val,...]`) of the workload's
    /// memcg; None or "default" runs the kernel's LRU alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// The CPU costs of kernel work (CpuCosts), measured on a host by the
    /// oracle; None: the defaults.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_costs: Option<CpuCosts>,
}

impl MmConfig {
    /// KernelRelease::large_anon_swap(); a model without a release is the
    /// newest kernel.
    pub fn large_anon_swap(&self) -> bool {
        self.kernel.is_none_or(|k| k.large_anon_swap())
    }

    /// KernelRelease::tmpfs_write_orders(), the newest release's without
    /// one.
    pub fn tmpfs_write_orders(&self) -> TmpfsWriteOrders {
        self.kernel
            .map_or(TmpfsWriteOrders::FromPmd, |k| k.tmpfs_write_orders())
    }

    /// Every order a tmpfs write may take under huge=always|within_size.
    fn tmpfs_write_order_mask(&self) -> u32 {
        match self.tmpfs_write_orders() {
            TmpfsWriteOrders::Pmd => 1 << folio::HPAGE_PMD_ORDER,
            TmpfsWriteOrders::WriteSize | TmpfsWriteOrders::FromPmd => folio::THP_ORDERS_ALL_FILE,
        }
    }

    /// The large orders tmpfs files may hold: none unless huge= is
    /// always or within_size.
    pub fn tmpfs_huge_orders(&self) -> u32 {
        match self.tmpfs_huge {
            TmpfsHuge::Always | TmpfsHuge::WithinSize => self.tmpfs_write_order_mask(),
            TmpfsHuge::Never | TmpfsHuge::Advise => 0,
        }
    }

    /// The anonymous THP orders a VMA may fault in, by its madvise
    /// (__thp_vma_allowable_orders()): none under MADV_NOHUGEPAGE, the
    /// "always" ones, and the "madvise" ones too under MADV_HUGEPAGE.
    pub fn anon_orders(&self, vm_hugepage: Option<bool>) -> u32 {
        match vm_hugepage {
            Some(false) => 0,
            Some(true) => self.thp_anon_orders | self.thp_anon_madvise_orders,
            None => self.thp_anon_orders,
        }
    }

    /// KernelRelease::shmem_large_swapin(), the newest without a release.
    pub fn shmem_large_swapin(&self) -> bool {
        self.kernel.is_none_or(|k| k.shmem_large_swapin())
    }
}

impl Default for MmConfig {
    fn default() -> Self {
        MmConfig {
            ram_bytes: 8 << 30,
            reserved_bytes: 256 << 20,
            read_ahead_kb: 128,
            fault_around_bytes: 64 << 10,
            kernel: None,
            large_folios: false,
            fio_process_memory: false,
            process_memory: false,
            nr_cpus: 0,
            thp_anon_orders: 0,
            thp_anon_madvise_orders: 1 << folio::HPAGE_PMD_ORDER,
            thp_defrag: ThpDefrag::Madvise,
            tmpfs_huge: TmpfsHuge::Never,
            swappiness: 60,
            swap: SwapKind::None,
            swap_bytes: 0,
            page_cluster: 3,
            vma_ra_enabled: true,
            zram_comp_ratio: 3.0,
            dirty_background_ratio: 10,
            dirty_ratio: 20,
            dirty_expire_centisecs: 3000,
            dirty_writeback_centisecs: 500,
            min_free_kbytes: None,
            watermark_scale_factor: 10,
            device: blkdev::DeviceProfile::by_name("virtio").unwrap(),
            variants: Variants::newest(),
            check_invariants: false,
            stats_flush_phase_ns: FLUSH_TIME_NS,
            memcg_stats_lazy_flush: false,
            fs: None,
            policy: None,
            cpu_costs: None,
        }
    }
}

fn is_pmd_order_only(v: &u32) -> bool {
    *v == 1 << folio::HPAGE_PMD_ORDER
}

fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}
