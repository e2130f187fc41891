//! The OOM killer (mm/oom_kill.c, and memcontrol.c's mem_cgroup_oom):
//! select_bad_process() over the mms of the OOM domain (a memcg's subtree,
//! or every process for global OOM), oom_badness() from the rss counters,
//! memory.oom.group, v1's oom_kill_disable, and the victim's memory freed at
//! once (the oom reaper and exit_mmap() in one step).

use super::memcontrol::{MemcgEvent, MemcgId, ROOT_MEMCG};
use super::mmap::{MmId, MM_ANONPAGES, MM_FILEPAGES, MM_SHMEMPAGES, MM_SWAPENTS, NO_MM};
use super::vmscan::ReclaimPolicy;
use super::vmstat::Item;
use super::{Core, Kernel};

/// OOM_SCORE_ADJ_MIN: never chosen, never killed with its group.
pub const OOM_SCORE_ADJ_MIN: i32 = -1000;

impl Core {
    /// oom_badness(): rss + swap entries + page tables, shifted by
    /// oom_score_adj in thousandths of `totalpages`; None when the task
    /// may not be chosen (OOM_SCORE_ADJ_MIN, already gone or reaped).
    pub fn oom_badness(&self, mm: MmId, totalpages: u64) -> Option<i64> {
        let m = &self.mms[mm as usize];
        // The model reaps a victim at once, so a chosen task is also an
        // MMF_OOM_SKIP one: never a candidate again.
        if m.exited || m.oom_killed || m.oom_score_adj == OOM_SCORE_ADJ_MIN {
            return None;
        }
        let rss = m.rss[MM_FILEPAGES] + m.rss[MM_ANONPAGES] + m.rss[MM_SHMEMPAGES];
        let points = (rss + m.rss[MM_SWAPENTS] + m.nr_ptes) as i64;
        // The kernel divides before multiplying: adj * (totalpages / 1000).
        Some(points + m.oom_score_adj as i64 * (totalpages / 1000) as i64)
    }

    /// mem_cgroup_get_max(): memory.max plus the swap the memcg may still
    /// use (memsw.limit - max on v1, swap.max on v2), at most the swap
    /// there is, when its swappiness lets it swap.
    pub fn mem_cgroup_get_max(&self, memcg: MemcgId) -> u64 {
        let m = &self.memcgs[memcg as usize];
        let max = m.limit.unwrap_or(self.managed);
        let total_swap = self.swap.pages;
        let swap = if self.mem_cgroup_swappiness(memcg) == 0 {
            0
        } else if let Some(memsw) = m.memsw_limit {
            memsw.saturating_sub(max).min(total_swap)
        } else {
            m.swap_max.unwrap_or(u64::MAX).min(total_swap)
        };
        max + swap
    }

    /// select_bad_process(): the highest oom_badness among the domain's
    /// tasks; among equal scores the last one visited wins (the kernel only
    /// skips a task scoring below the chosen one). A memcg domain is
    /// visited in mem_cgroup_scan_tasks() order: its subtree pre-order,
    /// each memcg's tasks in creation order; global OOM visits every
    /// process in creation order.
    pub fn select_bad_process(&self, domain: Option<MemcgId>, totalpages: u64) -> Option<MmId> {
        let mut chosen: Option<(MmId, i64)> = None;
        let mut consider = |mm: usize| {
            if let Some(points) = self.oom_badness(mm as MmId, totalpages) {
                if chosen.is_none_or(|(_, best)| points >= best) {
                    chosen = Some((mm as MmId, points));
                }
            }
        };
        match domain {
            Some(root) => {
                for memcg in self.memcg_subtree(root) {
                    for (i, mm) in self.mms.iter().enumerate() {
                        if mm.memcg == memcg {
                            consider(i);
                        }
                    }
                }
            }
            None => (0..self.mms.len()).for_each(&mut consider),
        }
        chosen.map(|(mm, _)| mm)
    }

    /// mem_cgroup_get_oom_group(): the highest memcg with memory.oom.group
    /// set between the victim's memcg and the OOM domain (or the root).
    pub fn mem_cgroup_get_oom_group(
        &self,
        victim: MmId,
        domain: Option<MemcgId>,
    ) -> Option<MemcgId> {
        let domain = domain.unwrap_or(ROOT_MEMCG);
        let mut memcg = self.mms[victim as usize].memcg;
        if memcg == ROOT_MEMCG || !self.mem_cgroup_is_descendant(memcg, domain) {
            return None;
        }
        let mut group = None;
        loop {
            if self.memcgs[memcg as usize].oom_group {
                group = Some(memcg);
            }
            if memcg == domain {
                break;
            }
            match self.parent_mem_cgroup(memcg) {
                Some(p) => memcg = p,
                None => break,
            }
        }
        group
    }

    /// Whether the domain holds any mm at all: a domain without one is a
    /// workload the model runs without processes (the fio driver).
    fn oom_domain_has_mms(&self, domain: Option<MemcgId>) -> bool {
        match domain {
            Some(root) => self
                .mms
                .iter()
                .any(|mm| self.mem_cgroup_is_descendant(mm.memcg, root)),
            None => !self.mms.is_empty(),
        }
    }

    /// __oom_kill_process() without the reaping: SIGKILL, counted in
    /// /proc/vmstat oom_kill and the mm's memcg (memory.events oom_kill).
    fn __oom_kill_process(&mut self, mm: MmId) {
        let memcg = self.mms[mm as usize].memcg;
        self.mms[mm as usize].oom_killed = true;
        self.count(memcg, Item::OOM_KILL, 1);
        if memcg != ROOT_MEMCG {
            self.memcg_memory_event(memcg, MemcgEvent::MEMCG_OOM_KILL);
        }
    }
}

impl<P: ReclaimPolicy> Kernel<P> {
    /// The task running now was chosen by the OOM killer.
    #[inline]
    pub fn current_is_dying(&self) -> bool {
        self.core.current != NO_MM
            && self
                .core
                .mms
                .get(self.core.current as usize)
                .is_some_and(|m| m.oom_killed)
    }

    /// mem_cgroup_oom() from try_charge_memcg(): MEMCG_OOM, then v1's
    /// oom_kill_disable makes the charging task wait (the charge fails with
    /// `Core::memcg_in_oom` set: the driver blocks the task until memory
    /// is uncharged, mem_cgroup_oom_synchronize()); otherwise the OOM
    /// killer. Returns whether something was killed (the charge retries).
    pub fn mem_cgroup_oom(&mut self, domain: MemcgId, charging: MemcgId) -> bool {
        self.core.memcg_memory_event(domain, MemcgEvent::MEMCG_OOM);
        self.core.memcgs[domain as usize]
            .stat
            .add(Item::MEMCG_OOM, 1);
        if self.core.memcgs[domain as usize].oom_kill_disable {
            if self.core.memcg_in_oom.is_none() {
                self.core.memcg_in_oom = Some(domain);
                self.core.memcgs[domain as usize].under_oom += 1;
            }
            return false;
        }
        self.mem_cgroup_out_of_memory(domain, charging)
    }

    /// mem_cgroup_oom_synchronize(): the waiting task (oom_kill_disable)
    /// wakes once its OOM domain has room again; returns whether it may
    /// retry its access now. The driver calls it for a task whose charge
    /// failed with `memcg_in_oom` set.
    pub fn mem_cgroup_oom_synchronize(&mut self) -> bool {
        let Some(domain) = self.core.memcg_in_oom else {
            return true;
        };
        if self.core.memcgs[domain as usize].margin() == 0 {
            return false;
        }
        self.core.memcg_in_oom = None;
        let m = &mut self.core.memcgs[domain as usize];
        m.under_oom = m.under_oom.saturating_sub(1);
        true
    }

    /// mem_cgroup_out_of_memory(): the OOM killer within `domain`'s
    /// subtree. `charging` is the memcg whose charge failed: if the domain
    /// has no mm at all (a workload without processes), that memcg's
    /// workload is marked killed as a whole (MemCgroup::oom_killed).
    pub fn mem_cgroup_out_of_memory(&mut self, domain: MemcgId, charging: MemcgId) -> bool {
        if !self.core.oom_domain_has_mms(Some(domain)) {
            let m = &mut self.core.memcgs[charging as usize];
            if m.oom_killed {
                return false;
            }
            m.oom_killed = true;
            self.core.count(charging, Item::OOM_KILL, 1);
            self.core
                .memcg_memory_event(charging, MemcgEvent::MEMCG_OOM_KILL);
            return false;
        }
        let total = self.core.mem_cgroup_get_max(domain).max(1);
        self.oom_kill(Some(domain), total)
    }

    /// out_of_memory() for the page allocator: any process, scored
    /// against all RAM and swap. Without mms, the largest memcg's workload.
    pub fn out_of_memory(&mut self) -> bool {
        if !self.core.oom_domain_has_mms(None) {
            let victim = (1..self.core.memcgs.len())
                .max_by_key(|&i| self.core.memcgs[i].usage)
                .unwrap_or(0) as MemcgId;
            let m = &mut self.core.memcgs[victim as usize];
            if !m.oom_killed {
                m.oom_killed = true;
                self.core.count(victim, Item::OOM_KILL, 1);
                if victim != ROOT_MEMCG {
                    self.core
                        .memcg_memory_event(victim, MemcgEvent::MEMCG_OOM_KILL);
                }
            }
            return false;
        }
        let total = self.core.managed + self.core.swap.pages;
        self.oom_kill(None, total)
    }

    /// select_bad_process() then oom_kill_process(): the victim, and with
    /// memory.oom.group every task of its group except OOM_SCORE_ADJ_MIN
    /// ones. The group walk runs before the victim's memory is reaped, so
    /// the victim is killed (and counted) a second time as the kernel
    /// does. Returns false when no task is eligible.
    fn oom_kill(&mut self, domain: Option<MemcgId>, totalpages: u64) -> bool {
        let Some(victim) = self.core.select_bad_process(domain, totalpages) else {
            return false;
        };
        let group = self.core.mem_cgroup_get_oom_group(victim, domain);
        // dump_header(): a memcg OOM prints the domain's memory.stat
        // (mem_cgroup_print_oom_meminfo), and formatting it flushes the
        // subtree's stats first.
        if let Some(d) = domain {
            self.policy.mem_cgroup_flush_stats(&mut self.core, d);
        }
        self.core.__oom_kill_process(victim);
        if let Some(g) = group {
            self.core
                .memcg_memory_event(g, MemcgEvent::MEMCG_OOM_GROUP_KILL);
            for memcg in self.core.memcg_subtree(g) {
                for mm in 0..self.core.mms.len() {
                    let m = &self.core.mms[mm];
                    if m.memcg == memcg && !m.exited && m.oom_score_adj != OOM_SCORE_ADJ_MIN {
                        self.core.__oom_kill_process(mm as MmId);
                    }
                }
            }
        }
        // The oom reaper (and the victims' exit): their anonymous memory
        // goes back at once.
        for mm in 0..self.core.mms.len() {
            let m = &self.core.mms[mm];
            if m.oom_killed && !m.exited {
                self.exit_mm(mm as MmId);
            }
        }
        true
    }
}
