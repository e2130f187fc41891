//! The kernel model: one module per kernel file, functions named after the
//! kernel functions they model.

pub mod blkdev;
pub mod cache_ext;
pub mod config;
pub mod direct_io;
pub mod fadvise;
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
pub mod patches;
pub mod profile;
pub mod readahead;
pub mod release;
pub mod rmap;
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

pub use config::{MmConfig, SwapKind, ThpDefrag, TmpfsHuge};
pub use patches::{PfActivation, Variants};
pub use release::{KernelRelease, TmpfsWriteOrders, KERNEL_RELEASES};

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
            // Each level's usage is its own folios, page tables, slab and
            // stock plus its children's usage (hierarchical page counters).
            let children: u64 = m
                .children
                .iter()
                .map(|&c| self.memcgs[c as usize].usage)
                .sum();
            let own = m.stock + m.nr_pagetables + m.slab_pages + children;
            let charged = (m.usage as i128) - own as i128;
            if charged != per_memcg[m.id as usize] as i128 {
                return Err(format!(
                    "memcg {}: charged {} pages (usage {} - stock {} - page tables {} - slab {} - children {}) but owns {} folios",
                    m.name, charged, m.usage, m.stock, m.nr_pagetables, m.slab_pages, children, per_memcg[m.id as usize]
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
