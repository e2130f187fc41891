//! The kernel model: one module per kernel file, functions named after the
//! kernel functions they model.

pub mod blkdev;
pub mod cache_ext;
pub mod direct_io;
pub mod filemap;
pub mod folio;
pub mod huge_memory;
pub mod memcontrol;
pub mod memory;
pub mod mmap;
pub mod oom_kill;
pub mod page_alloc;
pub mod page_counter;
pub mod page_io;
pub mod page_writeback;
pub mod profile;
pub mod readahead;
pub mod shmem;
pub mod swap;
pub mod swap_state;
pub mod swapfile;
pub mod truncate;
pub mod vmscan;
pub mod vmstat;
pub mod workingset;
pub mod xarray;

use blkdev::BlockDev;
use filemap::AddressSpace;
use folio::{pg, FolioId, FolioTable};
use memcontrol::{MemCgroup, MemcgId};
pub use page_alloc::Watermarks;
use serde::Serialize;
pub use swap::{LruAddBatch, FOLIO_BATCH_SIZE};
use vmstat::{Counters, Item};

/// A hint that `p` is about to be read: replaying a trace knows its next
/// requests, so their page-cache slots and folios are fetched from memory
/// while the current one runs. Changes no state; a no-op off x86_64.
#[inline(always)]
pub fn prefetch_read<T>(p: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and writes nothing; `p` is a live
    // reference.
    unsafe {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(p as *const T as *const i8)
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

pub const PAGE_SHIFT: u32 = 12;
pub const PAGE_SIZE: u64 = 1 << PAGE_SHIFT;
/// SWAP_CLUSTER_MAX: the reclaim batch.
pub const SWAP_CLUSTER_MAX: u64 = 32;
/// DEF_PRIORITY: reclaim starts scanning lru_size >> 12.
pub const DEF_PRIORITY: i32 = 12;

/// The seeds' patches and the architecture choices that change behaviour.
/// Each is named after the patch it models; `Variants::parse` takes the
/// names users write on the command line.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Variants {
    /// Seed 002 patch 1: only the faulting address counts as an mmap hit.
    pub mmap_miss_p1: bool,
    /// Seed 002 patch 2: FAULT_FLAG_TRIED retries are not counted as hits.
    pub mmap_miss_p2: bool,
    /// arch_wants_old_prefaulted_pte(): fault-around maps old PTEs (arm64).
    pub old_prefaulted_ptes: bool,
    /// Seed 000: what folio_add_lru() does to a folio added in the fault
    /// path under MGLRU.
    pub pf_activation: PfActivation,
    /// Seed 004: workingset protection rework (true = after, the default).
    pub mglru_wsprot_rework: bool,
    /// Seed 004: the fix Yu Zhao asked to fold into the rework (LULESH):
    /// folio_check_references() keeps a mapped folio on its first young PTE
    /// (lru_gen_set_refs() false) instead of activating it. Off = v2 of the
    /// rework as posted. Only matters with `mglru_wsprot_rework`.
    pub mglru_wsprot_fold_fix: bool,
    /// count_shadow_nodes() sizes a memcg with lruvec_lru_size() (Qi Zheng,
    /// "mm: workingset: use lruvec_lru_size() to get the number of lru
    /// pages", 2026, 7.1+), which reads lru_zone_size that MGLRU does not
    /// maintain: an MGLRU memcg's shadow nodes are reclaimed early. Off: the
    /// NR_LRU_BASE vmstat counters of 6.1-7.0, which MGLRU keeps.
    pub shadow_lru_size: bool,
    /// Seed 003: the reclaim loop rework (true = after the 14-patch series).
    pub mglru_reclaim_rework: bool,
    /// Seed 003: the isolate_folios() type-fallback fix on top.
    pub mglru_isolate_fallback_fix: bool,
    /// Patches 3-5 of Yu Zhao's "mm/mglru: performance optimizations"
    /// (6.14; seed 004 is its patch 6): "rework aging feedback" (anon and
    /// file min_seq move independently, should_run_aging() looks only at
    /// the number of generations), "rework type selection" (all tiers of
    /// each type compared, gains 2:3) and "rework refault detection"
    /// (recent = within MAX_NR_GENS of max_seq). Off: the 6.1-6.13 code
    /// (min_seq[anon] <= min_seq[file], the young/old distribution test,
    /// first tiers compared, recent = evicted from the current min_seq).
    /// They depend on each other, so one switch.
    pub mglru_feedback_rework: bool,
    /// Kalesh Singh, "Multi-gen LRU: Fix workingset accounting" (6.5):
    /// every refault with a shadow counts in workingset_refault, the recent
    /// ones in workingset_activate. Off (6.1): only recent refaults count
    /// in workingset_refault, and workingset_activate counts the folios
    /// sort_folio() protects by tier.
    pub mglru_refault_accounting_fix: bool,
}

/// Seed 000's fault-path activation under MGLRU, in its three published
/// forms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PfActivation {
    /// Before the patch (Linux 6.1 to 7.1): folio_set_active().
    #[default]
    SetActive,
    /// The seed's patch (v1): folio_mark_accessed() instead.
    MarkAccessed,
    /// As merged for Linux 7.2 (6cbdd9726fb5): a refaulted PG_workingset
    /// folio still gets folio_set_active(); any other gets
    /// folio_mark_accessed() unless already PG_referenced, and
    /// lru_gen_folio_seq() places PG_referenced folios one generation
    /// younger than the oldest.
    Merged,
}

pub const VARIANT_HELP: &str = "p1, p2 (seed 002 mmap_miss accounting); arm64 | x86 (old or young prefaulted PTEs); \
pf-set-active | pf-mark-accessed | pf-merged (seed 000: before, the seed's v1, as merged in 7.2); wsprot-rework | wsprot-legacy, wsprot-fold-fix | no-wsprot-fold-fix (seed 004); \
reclaim-rework | reclaim-legacy, isolate-fallback-fix | no-isolate-fallback-fix (seed 003); \
feedback-rework | feedback-legacy (MGLRU's aging feedback, type selection and refault detection of 6.14 or of 6.1-6.13); \
refault-accounting-fix | no-refault-accounting-fix (MGLRU's workingset_refault/activate counting of 6.5+ or of 6.1); \
shadow-lru-size | shadow-vmstat (count_shadow_nodes() of 7.1+ or of 6.1-7.0); baseline (none of the seed 002 patches)";

impl Variants {
    /// The newest behaviour the seeds describe, on x86.
    pub fn newest() -> Self {
        Variants {
            mmap_miss_p1: false,
            mmap_miss_p2: false,
            old_prefaulted_ptes: false,
            pf_activation: PfActivation::MarkAccessed,
            mglru_wsprot_rework: true,
            mglru_wsprot_fold_fix: true,
            shadow_lru_size: true,
            mglru_reclaim_rework: true,
            mglru_isolate_fallback_fix: true,
            mglru_feedback_rework: true,
            mglru_refault_accounting_fix: true,
        }
    }

    /// Applies a comma- or plus-separated list such as "p1+p2,arm64".
    pub fn apply(&mut self, spec: &str) -> Result<(), String> {
        for tok in spec
            .split([',', '+'])
            .map(str::trim)
            .filter(|t| !t.is_empty())
        {
            match tok {
                "baseline" => {
                    self.mmap_miss_p1 = false;
                    self.mmap_miss_p2 = false;
                }
                "p1" => self.mmap_miss_p1 = true,
                "p2" => self.mmap_miss_p2 = true,
                "arm64" | "old-ptes" => self.old_prefaulted_ptes = true,
                "x86" | "young-ptes" => self.old_prefaulted_ptes = false,
                "pf-mark-accessed" | "after-000" => self.pf_activation = PfActivation::MarkAccessed,
                "pf-set-active" | "before-000" => self.pf_activation = PfActivation::SetActive,
                "pf-merged" => self.pf_activation = PfActivation::Merged,
                "wsprot-rework" => self.mglru_wsprot_rework = true,
                "wsprot-legacy" => self.mglru_wsprot_rework = false,
                "wsprot-fold-fix" => self.mglru_wsprot_fold_fix = true,
                "no-wsprot-fold-fix" => self.mglru_wsprot_fold_fix = false,
                "shadow-lru-size" => self.shadow_lru_size = true,
                "shadow-vmstat" => self.shadow_lru_size = false,
                "reclaim-rework" => self.mglru_reclaim_rework = true,
                "reclaim-legacy" => self.mglru_reclaim_rework = false,
                "isolate-fallback-fix" => self.mglru_isolate_fallback_fix = true,
                "no-isolate-fallback-fix" => self.mglru_isolate_fallback_fix = false,
                "feedback-rework" => self.mglru_feedback_rework = true,
                "feedback-legacy" => self.mglru_feedback_rework = false,
                "refault-accounting-fix" => self.mglru_refault_accounting_fix = true,
                "no-refault-accounting-fix" => self.mglru_refault_accounting_fix = false,
                _ => return Err(format!("unknown variant '{tok}' (known: {VARIANT_HELP})")),
            }
        }
        Ok(())
    }

    /// Short label for tables ("baseline", "p1", "p1+p2").
    pub fn mmap_miss_label(&self) -> &'static str {
        match (self.mmap_miss_p1, self.mmap_miss_p2) {
            (false, false) => "baseline",
            (true, false) => "p1",
            (false, true) => "p2",
            (true, true) => "p1+p2",
        }
    }
}

/// A kernel release the model can be set to (`--kernel`): the seeds'
/// patches each release carries and whether ext4's regular files hold
/// large folios (ext4 gained them in 6.16). `MmNew` is the seeds' own
/// kernel, 7.0-era mm-new, with every patch the seeds describe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum KernelRelease {
    #[serde(rename = "6.1")]
    V6_1,
    #[serde(rename = "6.6")]
    V6_6,
    #[serde(rename = "6.12")]
    V6_12,
    /// 6.14 and 6.15: seed 004's series, ext4 still order 0.
    #[serde(rename = "6.14")]
    V6_14,
    /// 6.16 and 6.17: as 6.14, with ext4's large folios.
    #[serde(rename = "6.16")]
    V6_16,
    #[serde(rename = "6.18")]
    V6_18,
    #[serde(rename = "7.0")]
    V7_0,
    #[serde(rename = "7.2")]
    V7_2,
    #[serde(rename = "mm-new")]
    MmNew,
}

pub const KERNEL_RELEASES: &str = "6.1, 6.6, 6.12, 6.14, 6.16, 6.18, 7.0, 7.2, mm-new";

impl KernelRelease {
    /// "6.18", "6.18.44-fc-v669" (a host's osrelease: its major.minor
    /// picks the preset at or below it), "mm-new".
    pub fn parse(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if s == "mm-new" {
            return Ok(KernelRelease::MmNew);
        }
        let mut it = s.split(|c: char| !c.is_ascii_digit());
        let major: Option<u32> = it.next().and_then(|x| x.parse().ok());
        let minor: Option<u32> = it.next().and_then(|x| x.parse().ok());
        let (Some(major), Some(minor)) = (major, minor) else {
            return Err(format!(
                "unknown kernel release '{s}' (known: {KERNEL_RELEASES})"
            ));
        };
        let v = (major, minor);
        Ok(if v >= (7, 2) {
            KernelRelease::V7_2
        } else if v >= (7, 0) {
            KernelRelease::V7_0
        } else if v >= (6, 18) {
            KernelRelease::V6_18
        } else if v >= (6, 16) {
            KernelRelease::V6_16
        } else if v >= (6, 14) {
            KernelRelease::V6_14
        } else if v >= (6, 12) {
            KernelRelease::V6_12
        } else if v >= (6, 6) {
            KernelRelease::V6_6
        } else if v >= (6, 1) {
            KernelRelease::V6_1
        } else {
            return Err(format!(
                "kernel release '{s}' is older than the oldest preset (known: {KERNEL_RELEASES})"
            ));
        })
    }

    /// mapping_large_folio_support() of an ext4 regular file: since 6.16
    /// (ext4_set_inode_mapping_order()).
    pub fn ext4_large_folios(self) -> bool {
        self >= KernelRelease::V6_16
    }

    /// Large anon folios swapped out whole (mTHP swap-out without a
    /// split, 6.10), a large swap-cache folio mapped whole on a fault
    /// (6.11) and large folios swapped in from a synchronous device
    /// (alloc_swap_folio, 6.12). 6.1 and 6.6 swap a PMD-sized THP out
    /// whole too, then map it back one page per fault; the model, holding
    /// one mapping state per folio, splits it before swap-out there.
    pub fn large_anon_swap(self) -> bool {
        self >= KernelRelease::V6_12
    }

    /// The orders a tmpfs `huge=always|within_size` write may take: PMD
    /// only before 6.14; 6.14 to 6.17 size them by the write
    /// (shmem_mapping_size_orders(), Baolin Wang's tmpfs large folios);
    /// 6.18's "fix the strategy for the tmpfs huge= options" tries every
    /// order from PMD down.
    pub fn tmpfs_write_orders(self) -> TmpfsWriteOrders {
        if self >= KernelRelease::V6_18 {
            TmpfsWriteOrders::FromPmd
        } else if self >= KernelRelease::V6_14 {
            TmpfsWriteOrders::WriteSize
        } else {
            TmpfsWriteOrders::Pmd
        }
    }

    /// shmem_swap_alloc_folio(): a tmpfs swap entry read back whole from a
    /// synchronous device (6.14).
    pub fn shmem_large_swapin(self) -> bool {
        self >= KernelRelease::V6_14
    }

    /// The seeds' patches as the release has them (docs/large_folios.md,
    /// "Kernel releases"; 7.0 and 7.2 read in Debian's linux-source
    /// packages): seed 004's rework (v2 with the fix folded in) was merged
    /// for 6.14, so 6.14 to 7.0 have it; 7.2 has seed 003's series with
    /// the isolate_folios() fix, seed 000 in its merged form, both of seed
    /// 002's mmap_miss patches and the lruvec_lru_size() sizing of shadow
    /// nodes. 7.1 takes the 7.0 preset (its source was not read). Seed
    /// 004 came with the rest of its series, the feedback rework of
    /// patches 3-5: 6.14 and later have both, earlier releases neither.
    pub fn variants(self) -> Variants {
        let before_seed_004 = Variants {
            pf_activation: PfActivation::SetActive,
            mglru_wsprot_rework: false,
            mglru_wsprot_fold_fix: false,
            shadow_lru_size: false,
            mglru_reclaim_rework: false,
            mglru_isolate_fallback_fix: false,
            mglru_feedback_rework: false,
            ..Variants::newest()
        };
        match self {
            KernelRelease::MmNew => Variants::newest(),
            KernelRelease::V7_2 => Variants {
                pf_activation: PfActivation::Merged,
                mmap_miss_p1: true,
                mmap_miss_p2: true,
                ..Variants::newest()
            },
            KernelRelease::V6_14
            | KernelRelease::V6_16
            | KernelRelease::V6_18
            | KernelRelease::V7_0 => Variants {
                mglru_wsprot_rework: true,
                mglru_wsprot_fold_fix: true,
                mglru_feedback_rework: true,
                ..before_seed_004
            },
            // 6.1 counts MGLRU's refaults as before Kalesh Singh's fix (6.5).
            KernelRelease::V6_1 => Variants {
                mglru_refault_accounting_fix: false,
                ..before_seed_004
            },
            _ => before_seed_004,
        }
    }
}

/// KernelRelease::tmpfs_write_orders().
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TmpfsWriteOrders {
    /// HPAGE_PMD_ORDER only.
    Pmd,
    /// shmem_mapping_size_orders(): the largest order the write's length
    /// from the index fills, lowered to the index's alignment, and every
    /// order below it.
    WriteSize,
    /// Every order from PMD down.
    FromPmd,
}

/// transparent_hugepage/defrag, as vma_thp_gfp_mask() reads it for a
/// mapping without MADV_HUGEPAGE (the model's mappings take none).
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
    /// with "inherit" taking the top-level `enabled`; "madvise" counts as
    /// never, the model's mappings take no MADV_HUGEPAGE). 0: order 0.
    pub thp_anon_orders: u32,
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

/// FLUSH_TIME (mm/memcontrol.c): the memcg stats flusher's period, 2 s.
pub const FLUSH_TIME_NS: u64 = 2_000_000_000;

/// When flush_memcg_stats_dwork() first runs: the worker keeps its own
/// phase (set at boot), so the workload starts anywhere in its period;
/// MmConfig::stats_flush_phase_ns, 0 being FLUSH_TIME. It may pass
/// FLUSH_TIME: the work is deferrable, and a host's idle CPUs stretch the
/// period before the workload starts (the oracle measures such phases).
fn first_stats_flush(cfg: &MmConfig) -> u64 {
    match cfg.stats_flush_phase_ns {
        0 => FLUSH_TIME_NS,
        p => p,
    }
}

/// CPU time charged to the task for kernel work, in ns (the model's clock
/// advances by these and by I/O waits). The defaults are the reference
/// machine's profile (mm::profile, crates/foliosim/profiles/reference-vm.toml):
/// each value's source and the command that re-measures it are there and
/// in docs/calibration.md.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuCosts {
    pub syscall: u64,
    pub copy_page: u64,
    pub minor_fault: u64,
    pub map_page: u64,
    pub page_alloc: u64,
    /// Scanning one folio in reclaim (either LRU), whatever its size: a
    /// large folio is one list move. Order of magnitude.
    pub scan_folio: u64,
    /// The classic LRU's isolate_lru_folios() and putback of one folio
    /// beyond scan_folio (the LRU lock held with interrupts off, the list
    /// moves): 180 ns, so that the two cost the 220 ns fitted over the
    /// reclaim tracepoints of the oracle's anon+file mix on its 6.18 VM
    /// host (docs/fidelity/scenarios.md, "Reclaim's costs traced").
    /// MGLRU's scan_folios() is not measured (no MGLRU host): it pays
    /// scan_folio only.
    pub isolate_lru_folio: u64,
    /// folio_referenced()'s rmap walk of a mapped folio in classic reclaim
    /// (the anon_vma or i_mmap lock, page_vma_mapped_walk(), the accessed
    /// bit's test and clear), beyond the scan: 180 ns, traced as above.
    pub folio_referenced: u64,
    /// Each shrink_inactive_list() call that isolated folios, beyond its
    /// folios: lru_add_drain(), the LRU lock's round trips, the batch's
    /// uncharge and free. 5.2 us traced in the mix (2.0 us in a lone
    /// probe's reclaim of just-read cache: cache-cold in a workload).
    pub shrink_inactive_list: u64,
    /// Each shrink_active_list() call that isolated folios: 2.4 us traced.
    pub shrink_active_list: u64,
    /// try_to_unmap_flush(): the batched TLB flush after a
    /// shrink_folio_list() batch unmapped folios of an mm that another
    /// CPU has too (should_defer_flush(); IPIs to those CPUs, a VM exit
    /// each on a VM host): 5 us traced on runs whose tasks the scheduler
    /// had moved, as the extra time of a batch that swapped anon out. A
    /// single-threaded task's unmaps flush locally, page by page, and pay
    /// nothing here. The kernel also flushes
    /// before each dirty folio's pageout (try_to_unmap_flush_dirty());
    /// those flushes come one a page swapped, so the fit cannot tell them
    /// from the swap-out, and the model has them in zram_compress.
    pub tlb_flush: u64,
    /// Each do_try_to_free_pages() call beyond its lists (the memcg walk,
    /// shrink_slab()): 2.1 us traced.
    pub do_try_to_free_pages: u64,
    /// One entry of a range walk (truncation's, munmap's or shmem's undo
    /// of a page-cache or page-table range): order of magnitude.
    pub range_entry: u64,
    /// Reclaiming one page once scanned (shrink_folio_list(): unmap checks,
    /// __remove_mapping() with its shadow entry, the free), beyond
    /// scan_folio: the oracle's probe of limit reclaim of clean page cache
    /// (run::measure_limit_reclaim) less the scan and the isolation, on
    /// the reference machine by `foliosim oracle calibrate` and on each
    /// oracle host before its runs.
    pub reclaim_folio: u64,
    pub touch_mapped: u64,
    /// fio's own user-space work per I/O (io_u setup, completion,
    /// accounting): the real fio's time per I/O on its null engine,
    /// seed 000's job shape, measured by `foliosim oracle calibrate` (the
    /// mmap engine's mapped hit less the copy is not measurable: the CPU
    /// overlaps the two; docs/calibration.md).
    pub fio_io: u64,
    /// Metadata system calls of fio's file engines (open O_CREAT, stat,
    /// unlink, mkdir, rmdir, fallocate, ftruncate): each timed on the
    /// reference machine's ext4 by `foliosim oracle calibrate`.
    pub create: u64,
    pub stat: u64,
    pub unlink: u64,
    pub fallocate: u64,
    /// zram with lzo-rle: compressing / decompressing one 4 KiB page, from
    /// the host's measured swap-out and swap-in fault
    /// (run::measure_zram_swap; `foliosim oracle calibrate` for the
    /// reference machine, the oracle for its hosts), the swap-out's
    /// unmapping and the probe's share of its reclaim calls folded into
    /// zram_compress.
    pub zram_compress: u64,
    pub zram_decompress: u64,
}

impl Default for CpuCosts {
    /// The reference machine's measured costs.
    fn default() -> Self {
        profile::reference_costs()
    }
}

fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}

/// The kernel state a reclaim policy works on. The policy itself (LRU lists,
/// generations) lives beside it in `Kernel::policy`.
pub struct Core {
    pub cfg: MmConfig,
    pub cost: CpuCosts,
    pub folios: FolioTable,
    pub files: Vec<AddressSpace>,
    /// xa_nodes holding only shadow entries, per memcg (workingset.c's
    /// shadow_nodes list_lru).
    pub shadow_nodes: workingset::ShadowNodes,
    pub memcgs: Vec<MemCgroup>,
    /// Processes' mm_structs (mmap.rs).
    pub mms: Vec<mmap::MmStruct>,
    /// /proc/vmstat events.
    pub vm: Counters,
    /// /sys/kernel/mm/transparent_hugepage/hugepages-*/stats: per order,
    /// the mTHP events (huge_memory.rs).
    pub mthp: huge_memory::MthpStats,
    /// Simulated time, ns.
    pub now: u64,
    /// Of `now`, how much the task spent waiting on I/O.
    pub io_wait: u64,
    /// CPU time of the model's kernel paths (every `cpu()` charge:
    /// syscalls, faults, copies, reclaim run by tasks; not kswapd's), as
    /// getrusage()'s system time.
    pub stime: u64,
    pub wmark: Watermarks,
    /// Pages usable by workloads.
    pub managed: u64,
    pub dev: BlockDev,
    pub swap: swapfile::SwapInfo,
    /// Disk swap writes queued under reclaim's plug (page_io.rs).
    pub swap_write_plug: Vec<(FolioId, swapfile::SwapOffset)>,
    /// Per memcg: swap usage and limit (memcontrol.rs, at its end).
    pub memcg_swap: Vec<memcontrol::MemcgSwap>,
    pub wb: page_writeback::WbState,
    /// When the last file read submitted completes: before then some file
    /// folio may still be locked under read I/O (reclaim checks the file's
    /// in-flight reads only while this lies ahead).
    pub file_reads_until: u64,
    /// current->in_lru_fault: inside handle_mm_fault of a vma with recency.
    pub in_lru_fault: bool,
    /// The CPU the current task runs on: the model gives every task (a
    /// scenario thread, a fio job) a CPU of its own; 0 outside them.
    pub cpu: u32,
    /// Per-CPU lru_add batches (cpu_fbatches.lru_add), indexed by `cpu`.
    pub lru_add: Vec<LruAddBatch>,
    /// current_is_kswapd() for the reclaim in progress.
    pub in_kswapd: bool,
    /// PF_MEMALLOC: reclaim must not recurse.
    pub in_reclaim: bool,
    /// current->tlb_ubc.flush_required: reclaim unmapped a folio and its
    /// TLB flush is batched (try_to_unmap_flush()).
    pub tlb_flush_pending: bool,
    /// Reclaim met dirty file folios: wake the flusher (wakeup_flusher_threads).
    pub wb_wakeup_flusher: bool,
    /// Per-second counter snapshots for --timeline: the second, vmstat,
    /// the timeline memcg's events and its page_counter usage (pages).
    pub timeline: Option<Vec<(u64, Counters, Counters, u64)>>,
    next_tick: u64,
    /// The earlier of next_tick and next_stats_flush: when tick() has work.
    next_event: u64,
    /// When flush_memcg_stats_dwork() runs next (ns).
    next_stats_flush: u64,
    /// flush_last_time: the last flush of the whole tree (the periodic
    /// one or a root mem_cgroup_flush_stats()), ns.
    pub flush_last_time: u64,
    /// Periodic flushes so far: a policy keeping flushed copies of its
    /// LRU sizes refreshes them when this moves (vmscan/classic.rs).
    pub stats_flush_seq: u64,
    /// The memcg whose events the timeline records.
    pub timeline_memcg: MemcgId,
    /// The memcg tree's walk order (page_counter.rs).
    pub memcg_tree: page_counter::MemcgTree,
    /// `current`: the mm of the task the driver is running (set before
    /// each access), NO_MM for work not done by a modelled process. The
    /// OOM killer and memory.high throttling act on it.
    pub current: mmap::MmId,
    /// current->memcg_in_oom: the last charge failed because the OOM
    /// domain has oom_kill_disable set (v1); the task must wait
    /// (mem_cgroup_oom_synchronize) instead of being killed.
    pub memcg_in_oom: Option<MemcgId>,
    /// current->memcg_nr_pages_over_high: pages charged while some level
    /// was over memory.high, paid off on the return to user space.
    pub memcg_nr_pages_over_high: u64,
    /// The memcg that charged them (for work without a `current` mm).
    pub memcg_over_high: MemcgId,
    /// alloc_folio() charged this memcg pages (the memcg, how many) it
    /// has not allocated yet.
    pub charging: Option<(MemcgId, u64)>,
    /// kswapd's MGLRU aging found nothing old enough (min_ttl): the OOM
    /// killer runs once reclaim returns.
    pub kswapd_oom: bool,
    /// kswapd's node state and its own clock (vmscan/mod.rs).
    pub kswapd: vmscan::KswapdState,
    /// `--trace`: the mm tracepoints' writer (crate::trace); None costs one
    /// branch per hook.
    pub trace: Option<Box<crate::trace::Tracer>>,
    /// cache_ext's per-memcg policies and their lists.
    pub cache_ext: cache_ext::CacheExt,
    /// Seed 002's mmap_miss patches followed alongside this run
    /// (filemap::MmapMissAlts): which of them would have decided
    /// differently.
    pub mmap_miss_alts: filemap::MmapMissAlts,
}

impl Core {
    pub fn new(cfg: MmConfig) -> Self {
        let managed = cfg.ram_bytes.saturating_sub(cfg.reserved_bytes) / PAGE_SIZE;
        let wmark = Watermarks::compute(
            cfg.ram_bytes / PAGE_SIZE,
            cfg.min_free_kbytes,
            cfg.watermark_scale_factor,
        );
        let dev = BlockDev::new(cfg.device.clone());
        let mut swap =
            swapfile::SwapInfo::new(cfg.swap, cfg.swap_bytes / PAGE_SIZE, cfg.zram_comp_ratio);
        if cfg.swap == SwapKind::Disk {
            // A disk swap device is rotational only on an hdd.
            swap.set_solidstate(cfg.device.name != "hdd");
        }
        Core {
            mmap_miss_alts: Default::default(),
            folios: FolioTable::new(managed as usize),
            files: Vec::new(),
            shadow_nodes: Default::default(),
            memcgs: vec![MemCgroup::new(0, "/", None)],
            mms: Vec::new(),
            vm: Counters::default(),
            mthp: Default::default(),
            now: 0,
            io_wait: 0,
            stime: 0,
            wmark,
            managed,
            dev,
            swap,
            swap_write_plug: Vec::with_capacity(SWAP_CLUSTER_MAX as usize),
            memcg_swap: vec![memcontrol::MemcgSwap::default()],
            wb: page_writeback::WbState::default(),
            file_reads_until: 0,
            in_lru_fault: false,
            cpu: 0,
            lru_add: Vec::new(),
            in_kswapd: false,
            in_reclaim: false,
            tlb_flush_pending: false,
            wb_wakeup_flusher: false,
            timeline: None,
            next_tick: 1_000_000_000,
            next_event: first_stats_flush(&cfg).min(1_000_000_000),
            next_stats_flush: first_stats_flush(&cfg),
            flush_last_time: 0,
            stats_flush_seq: 0,
            timeline_memcg: 0,
            memcg_tree: Default::default(),
            current: mmap::NO_MM,
            memcg_in_oom: None,
            memcg_nr_pages_over_high: 0,
            memcg_over_high: 0,
            charging: None,
            kswapd_oom: false,
            kswapd: Default::default(),
            trace: None,
            cache_ext: Default::default(),
            cost: cfg.cpu_costs.unwrap_or_default(),
            cfg,
        }
    }

    /// The tracer and what its hooks need, when tracing is on.
    #[inline(always)]
    pub fn tracer(&mut self) -> Option<(&mut crate::trace::Tracer, crate::trace::Ctx<'_>)> {
        match self.trace.as_deref_mut() {
            None => None,
            Some(t) => Some((
                t,
                crate::trace::Ctx {
                    now: self.now,
                    kswapd: self.in_kswapd,
                    memcgs: &self.memcgs,
                },
            )),
        }
    }

    /// mm_filemap_delete_from_page_cache, from __filemap_remove_folio()'s
    /// callers (reclaim's __remove_mapping, truncation, invalidation).
    #[inline]
    pub fn trace_delete_from_page_cache(&mut self, id: FolioId) {
        if self.trace.is_some() {
            let rec = self.trace_folio(id);
            if let Some((t, cx)) = self.tracer() {
                t.filemap_op(crate::trace::Ev::DeleteFromPageCache, cx, rec);
            }
        }
    }

    /// mm_lru_insertion: lru_add() put the folio on list `lru` (enum
    /// lru_list; MGLRU folios print as inactive, PG_active being folded
    /// into their generation).
    #[inline]
    pub fn trace_lru_insertion(&mut self, id: FolioId, lru: u32) {
        if self.trace.is_some() {
            let rec = self.trace_folio(id);
            let f = self.folios.get(id);
            let (mapped, swapcache) = (f.test(pg::MAPPED), f.test(pg::SWAPCACHE));
            if let Some((t, cx)) = self.tracer() {
                t.lru_insertion(cx, rec, lru, mapped, swapcache);
            }
        }
    }

    /// mm_lru_activate: lru_activate() moved the folio to the active list.
    #[inline]
    pub fn trace_lru_activate(&mut self, id: FolioId) {
        if self.trace.is_some() {
            let rec = self.trace_folio(id);
            if let Some((t, cx)) = self.tracer() {
                t.lru_activate(cx, rec);
            }
        }
    }

    /// A folio as the tracepoints describe it.
    pub fn trace_folio(&self, id: FolioId) -> crate::trace::FolioRec {
        let f = self.folios.get(id);
        crate::trace::FolioRec {
            id,
            memcg: f.memcg,
            mapping: f.mapping,
            index: f.index as u64,
            file: f.is_file_lru(),
            shmem: false,
        }
    }

    /// Counts an event for the machine and for a memcg.
    #[inline]
    pub fn count(&mut self, memcg: MemcgId, item: Item, n: u64) {
        self.vm.add(item, n);
        if memcg != 0 {
            self.memcgs[memcg as usize].stat.add(item, n);
        }
    }

    /// A memcg-only event (memory.stat v1's charge counters).
    #[inline]
    pub fn count_memcg(&mut self, memcg: MemcgId, item: Item, n: u64) {
        self.memcgs[memcg as usize].stat.add(item, n);
    }

    #[inline]
    pub fn count_vm(&mut self, item: Item, n: u64) {
        self.vm.add(item, n);
    }

    /// count_mthp_stat(): orders 1 to PMD_ORDER only.
    #[inline]
    pub fn mthp_count(&mut self, order: u32, stat: huge_memory::MthpStat) {
        if (1..=folio::HPAGE_PMD_ORDER).contains(&order) {
            self.mthp.0[order as usize][stat as usize] += 1;
        }
    }

    /// Advances the clock by CPU work of the task.
    #[inline]
    pub fn cpu(&mut self, ns: u64) {
        self.now += ns;
        self.stime += ns;
        if self.now >= self.next_event {
            self.tick();
        }
    }

    /// CPU work of reclaim: the task's, or kswapd's own (it runs on
    /// another CPU, so its time only decides when it can run again).
    #[inline]
    pub fn cpu_or_kswapd(&mut self, ns: u64) {
        if self.in_kswapd {
            self.kswapd.cpu_ns += ns;
        } else {
            self.cpu(ns);
        }
    }

    /// Blocks the task until `t`.
    #[inline]
    pub fn wait_until(&mut self, t: u64) {
        if t > self.now {
            self.io_wait += t - self.now;
            self.now = t;
            if self.now >= self.next_event {
                self.tick();
            }
        }
    }

    /// schedule_timeout(): the task sleeps `ns` (not waiting on I/O).
    pub fn schedule_timeout(&mut self, ns: u64) {
        self.now += ns;
        if self.now >= self.next_event {
            self.tick();
        }
    }

    /// Once per simulated second: timeline samples.
    #[cold]
    fn tick(&mut self) {
        while self.now >= self.next_tick {
            if self.timeline.is_some() {
                // memory.stat's events are hierarchical: the memcg's and
                // its descendants' (a scenario's cgroups sit below it).
                let root = self.timeline_memcg;
                let mut stat = Counters::default();
                for &c in self.memcg_subtree_ids(root) {
                    stat.add_all(&self.memcgs[c as usize].stat);
                }
                let sample = (
                    self.next_tick / 1_000_000_000,
                    self.vm.clone(),
                    stat,
                    self.memcgs[root as usize].usage,
                );
                if let Some(tl) = self.timeline.as_mut() {
                    tl.push(sample);
                }
            }
            self.next_tick += 1_000_000_000;
        }
        crate::progress::tick(
            self.now,
            (self.vm.get(Item::PGPGIN) + self.vm.get(Item::PGPGOUT)) / (PAGE_SIZE / 1024),
        );
        // flush_memcg_stats_dwork(): flush the whole tree, whatever the
        // number of pending updates, and queue itself FLUSH_TIME later.
        while self.now >= self.next_stats_flush {
            self.flush_last_time = self.next_stats_flush;
            self.stats_flush_seq += 1;
            self.next_stats_flush += FLUSH_TIME_NS;
        }
        self.next_event = self.next_tick.min(self.next_stats_flush);
    }

    pub fn nr_free(&self) -> u64 {
        self.folios.nr_free
    }

    /// A memcg under the root with only a hard limit.
    pub fn add_memcg(&mut self, name: &str, limit_pages: Option<u64>) -> MemcgId {
        let knobs = memcontrol::MemcgKnobs {
            max: limit_pages,
            ..Default::default()
        };
        self.add_memcg_child(memcontrol::ROOT_MEMCG, name, &knobs)
    }

    pub fn add_file(&mut self, size_bytes: u64) -> u32 {
        let id = self.files.len() as u32;
        self.files.push(AddressSpace::new(id, size_bytes));
        id
    }

    /// A regular file on the disk's file system: its mapping holds large
    /// folios when the machine's file system does (MmConfig::large_folios).
    pub fn add_data_file(&mut self, size_bytes: u64) -> u32 {
        let id = self.add_file(size_bytes);
        if self.cfg.large_folios {
            self.files[id as usize].max_order = folio::MAX_PAGECACHE_ORDER;
        }
        id
    }

    /// Bytes the model's main tables hold: the folio arena, each mapping's
    /// page-cache index and the swap tables. They follow the frames and
    /// pages the workload touched, not the simulated RAM or file sizes
    /// (the figure docs/performance.md's memory table reports).
    pub fn mem_footprint(&self) -> usize {
        self.folios.mem_footprint()
            + self.files.capacity() * std::mem::size_of::<AddressSpace>()
            + self
                .files
                .iter()
                .map(AddressSpace::mem_footprint)
                .sum::<usize>()
            + self.swap.mem_footprint()
    }

    /// Every live folio's memcg, file and LRU bits agree with the counts.
    pub fn check_core_invariants(&self) -> Result<(), String> {
        // Every folio flagged as batched is in exactly one CPU's lru_add
        // batch, and every batched folio is so flagged.
        let mut batched = 0usize;
        for (cpu, b) in self.lru_add.iter().enumerate() {
            for &id in b.folios() {
                let f = self.folios.get(id);
                if !f.test(pg::LRU_CACHED) || f.test(pg::LRU) || f.test(pg::FREE) {
                    return Err(format!(
                        "folio {id} in cpu {cpu}'s lru_add batch has flags {:#x}",
                        f.flags
                    ));
                }
                batched += 1;
            }
        }
        let mut flagged = 0usize;
        let mut per_memcg = vec![0u64; self.memcgs.len()];
        let mut live = 0u64;
        for f in &self.folios.f {
            if f.test(pg::FREE) {
                continue;
            }
            flagged += f.test(pg::LRU_CACHED) as usize;
            live += f.nr_pages();
            if f.test(pg::ZSMALLOC) {
                continue;
            }
            per_memcg[f.memcg as usize] += f.nr_pages();
            if !f.test(pg::LRU) && !f.test(pg::ISOLATED) && !f.test(pg::LRU_CACHED) {
                return Err(format!(
                    "folio {}:{} neither on an LRU, isolated nor in an lru_add batch",
                    f.mapping, f.index
                ));
            }
        }
        if flagged != batched {
            return Err(format!(
                "{flagged} folios flagged LRU_CACHED but {batched} in lru_add batches"
            ));
        }
        if let Some((m, nr)) = self.charging {
            per_memcg[m as usize] += nr;
        }
        // Frames past the arena's end were never used: free too.
        if live + self.folios.nr_free != self.folios.capacity() as u64 {
            return Err("folio table: live + free != total".into());
        }
        for m in &self.memcgs[1..] {
            // Each level's usage is its own folios, page tables and stock
            // plus its children's usage (hierarchical page counters).
            let children: u64 = m
                .children
                .iter()
                .map(|&c| self.memcgs[c as usize].usage)
                .sum();
            let charged = (m.usage as i128) - (m.stock + m.nr_pagetables + children) as i128;
            if charged != per_memcg[m.id as usize] as i128 {
                return Err(format!(
                    "memcg {}: charged {} pages (usage {} - stock {} - page tables {} - children {}) but owns {} folios",
                    m.name, charged, m.usage, m.stock, m.nr_pagetables, children, per_memcg[m.id as usize]
                ));
            }
            // memory.events is hierarchical below the root: a level's
            // count is its own events plus its children's.
            for e in 0..memcontrol::MEMCG_NR_MEMORY_EVENTS {
                let below: u64 = m
                    .children
                    .iter()
                    .map(|&c| self.memcgs[c as usize].events[e])
                    .sum();
                if m.events[e] != m.events_local[e] + below {
                    return Err(format!(
                        "memcg {}: memory.events {} is {} but local {} + children {}",
                        m.name,
                        memcontrol::MEMCG_EVENT_NAMES[e],
                        m.events[e],
                        m.events_local[e],
                        below
                    ));
                }
            }
            if m.watermark < m.usage {
                return Err(format!(
                    "memcg {}: peak {} below usage {}",
                    m.name, m.watermark, m.usage
                ));
            }
            if let Some(l) = m.limit {
                if m.usage > l && !m.limit_overrun {
                    return Err(format!(
                        "memcg {}: usage {} over limit {}",
                        m.name, m.usage, l
                    ));
                }
            }
        }
        self.check_shadow_nodes()?;
        self.check_swap_invariants()
    }
}

/// The model: the kernel state plus one reclaim policy.
pub struct Kernel<P: vmscan::ReclaimPolicy> {
    pub core: Core,
    pub policy: P,
}

impl<P: vmscan::ReclaimPolicy> Kernel<P> {
    pub fn new(cfg: MmConfig, policy: P) -> Self {
        let mut k = Kernel {
            core: Core::new(cfg),
            policy,
        };
        k.policy.lruvec_init(0);
        k
    }

    pub fn add_memcg(&mut self, name: &str, limit_pages: Option<u64>) -> MemcgId {
        let id = self.core.add_memcg(name, limit_pages);
        self.policy.lruvec_init(id);
        id
    }

    /// Creates a memcg under `parent` with `knobs` (pages); see MemcgKnobs.
    pub fn add_memcg_child(
        &mut self,
        parent: MemcgId,
        name: &str,
        knobs: memcontrol::MemcgKnobs,
    ) -> MemcgId {
        let id = self.core.add_memcg_child(parent, name, &knobs);
        self.policy.lruvec_init(id);
        id
    }

    /// Writes a memcg's knobs later (echo to the cgroup files). Lowering
    /// memory.max below usage reclaims down to it as memory_max_write()
    /// does, OOM-killing if reclaim cannot.
    pub fn mem_cgroup_set_knobs(&mut self, memcg: MemcgId, knobs: memcontrol::MemcgKnobs) {
        let old_max = self.core.memcgs[memcg as usize].limit;
        self.core.mem_cgroup_set_knobs(memcg, &knobs);
        // The kernel sets memory.max first and then reclaims; the model
        // reclaims under the old limit and sets the new one after, so
        // usage is over its limit only if reclaim and OOM could not help.
        self.core.memcgs[memcg as usize].limit = old_max;
        self.memory_max_write(memcg, knobs.max);
    }

    pub fn check_invariants(&self) -> Result<(), String> {
        self.core.check_core_invariants()?;
        self.core.cache_ext.check()?;
        self.policy.check_invariants(&self.core)
    }
}
