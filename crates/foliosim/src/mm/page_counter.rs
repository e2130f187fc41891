//! Hierarchical page counters (mm/page_counter.c) over the memcg tree, and
//! the tree itself: creation under a parent, the pre-order walk of
//! mem_cgroup_iter(), effective memory.low/min protection.
//!
//! The root memcg's counter is not charged (try_charge_memcg() returns early
//! for the root), so a charge walks from the memcg up to, not including, the
//! root; each level's usage is its own pages plus its children's usage.

use super::memcontrol::{
    MemCgroup, MemcgEvent, MemcgId, MemcgKnobs, MEMCG_NR_MEMORY_EVENTS, NO_PARENT, ROOT_MEMCG,
};
use super::Core;
use std::rc::Rc;

/// The memcgs of a subtree in mem_cgroup_iter() order (pre-order, the root
/// of the walk first). Holds no borrow of Core so callers may mutate it
/// while walking; cloning the Rc costs no allocation.
#[derive(Clone, Debug)]
pub struct MemcgIter {
    order: Rc<[MemcgId]>,
    pos: usize,
    end: usize,
}

impl Iterator for MemcgIter {
    type Item = MemcgId;
    #[inline]
    fn next(&mut self) -> Option<MemcgId> {
        if self.pos < self.end {
            self.pos += 1;
            Some(self.order[self.pos - 1])
        } else {
            None
        }
    }
}

impl MemcgIter {
    /// Index of the next memcg within the subtree walk (for the partial
    /// walk's saved position).
    pub fn position(&self) -> usize {
        self.pos
    }
}

/// The tree's pre-order and each memcg's range in it, rebuilt when a memcg
/// is created (rare); walks only slice it.
#[derive(Clone, Debug)]
pub struct MemcgTree {
    pub order: Rc<[MemcgId]>,
    /// (start, end) of each memcg's subtree in `order`.
    pub range: Vec<(u32, u32)>,
}

impl Default for MemcgTree {
    fn default() -> Self {
        MemcgTree {
            order: Rc::from(vec![ROOT_MEMCG]),
            range: vec![(0, 1)],
        }
    }
}

/// effective_protection() (mm/page_counter.c) without recursive_protection
/// (the memory_recursiveprot mount option is off by default): a child's
/// protected usage, scaled down in proportion when its siblings together
/// claim more than the parent's effective protection.
fn effective_protection(
    usage: u64,
    setting: u64,
    parent_effective: u64,
    siblings_protected: u64,
) -> u64 {
    let protected = usage.min(setting);
    if siblings_protected > parent_effective {
        // u128: pages * pages overflows nothing realistic, but be exact.
        return (protected as u128 * parent_effective as u128 / siblings_protected as u128) as u64;
    }
    protected
}

impl Core {
    /// Creates a memcg under `parent` (mem_cgroup_css_alloc/online): a v1
    /// memcg that does not set swappiness inherits its parent's.
    pub fn add_memcg_child(&mut self, parent: MemcgId, name: &str, knobs: &MemcgKnobs) -> MemcgId {
        let id = self.memcgs.len() as MemcgId;
        let mut m = MemCgroup::new(id, name, knobs.max);
        m.parent = parent;
        m.level = self.memcgs[parent as usize].level + 1;
        m.swappiness = self.memcgs[parent as usize].swappiness;
        self.memcgs.push(m);
        self.memcg_swap
            .push(super::memcontrol::MemcgSwap::default());
        self.memcgs[parent as usize].children.push(id);
        self.mem_cgroup_set_knobs(id, knobs);
        self.rebuild_memcg_tree();
        id
    }

    /// Writes every knob (the cgroup files); `None` swappiness keeps the
    /// inherited value.
    pub fn mem_cgroup_set_knobs(&mut self, memcg: MemcgId, knobs: &MemcgKnobs) {
        let m = &mut self.memcgs[memcg as usize];
        m.limit = knobs.max;
        m.high = knobs.high;
        m.low = knobs.low.unwrap_or(0);
        m.min = knobs.min.unwrap_or(0);
        if knobs.swappiness.is_some() {
            m.swappiness = knobs.swappiness;
        }
        m.swap_max = knobs.swap_max;
        m.memsw_limit = knobs.memsw_limit;
        m.oom_group = knobs.oom_group;
        m.oom_kill_disable = knobs.oom_kill_disable;
    }

    fn rebuild_memcg_tree(&mut self) {
        let n = self.memcgs.len();
        let mut order = Vec::with_capacity(n);
        let mut range = vec![(0u32, 0u32); n];
        // Iterative pre-order: children in creation order.
        let mut stack = vec![(ROOT_MEMCG, false)];
        while let Some((m, done)) = stack.pop() {
            if done {
                range[m as usize].1 = order.len() as u32;
                continue;
            }
            range[m as usize].0 = order.len() as u32;
            order.push(m);
            stack.push((m, true));
            for &c in self.memcgs[m as usize].children.iter().rev() {
                stack.push((c, false));
            }
        }
        self.memcg_tree = MemcgTree {
            order: Rc::from(order),
            range,
        };
    }

    /// mem_cgroup_iter() over `root`'s subtree, `root` first.
    #[inline]
    pub fn memcg_subtree(&self, root: MemcgId) -> MemcgIter {
        let (s, e) = self.memcg_tree.range[root as usize];
        MemcgIter {
            order: self.memcg_tree.order.clone(),
            pos: s as usize,
            end: e as usize,
        }
    }

    /// The memcgs of `root`'s subtree, `root` first, as a slice: for a
    /// walk that only reads (memcg_subtree() lets the walker change Core).
    #[inline]
    pub fn memcg_subtree_ids(&self, root: MemcgId) -> &[MemcgId] {
        let (s, e) = self.memcg_tree.range[root as usize];
        &self.memcg_tree.order[s as usize..e as usize]
    }

    /// The subtree from the partial walk's saved position (the reclaim
    /// cookie's iterator): reclaim resumes where the last round stopped.
    pub fn memcg_subtree_from(&self, root: MemcgId, skip: usize) -> MemcgIter {
        let mut it = self.memcg_subtree(root);
        it.pos = (it.pos + skip).min(it.end);
        it
    }

    /// mem_cgroup_is_descendant(): `memcg` is `root` or below it.
    #[inline]
    pub fn mem_cgroup_is_descendant(&self, memcg: MemcgId, root: MemcgId) -> bool {
        let (s, e) = self.memcg_tree.range[root as usize];
        let (p, _) = self.memcg_tree.range[memcg as usize];
        p >= s && p < e
    }

    /// parent_mem_cgroup().
    #[inline]
    pub fn parent_mem_cgroup(&self, memcg: MemcgId) -> Option<MemcgId> {
        let p = self.memcgs[memcg as usize].parent;
        (p != NO_PARENT).then_some(p)
    }

    /// page_counter_try_charge(): charge `nr` pages at every level from
    /// `memcg` up to the root; the first level that would go over its limit
    /// fails the charge (the lower levels are uncharged again) and is
    /// returned: try_charge_memcg()'s mem_over_limit.
    #[inline]
    pub fn page_counter_try_charge(&mut self, memcg: MemcgId, nr: u64) -> Result<(), MemcgId> {
        let (mut c, now) = (memcg, self.now);
        while c != ROOT_MEMCG {
            let m = &mut self.memcgs[c as usize];
            if matches!(m.limit, Some(l) if m.usage + nr > l) {
                let first = m.failcnt == 0;
                if first {
                    m.first_fail_ns = now.max(1);
                }
                m.failcnt += 1;
                let failed = c;
                if first {
                    self.dev.limit_met();
                }
                let mut u = memcg;
                while u != failed {
                    let m = &mut self.memcgs[u as usize];
                    m.usage -= nr;
                    u = m.parent;
                }
                return Err(failed);
            }
            m.usage += nr;
            // Peak usage is tracked per level (memory.peak).
            m.watermark = m.watermark.max(m.usage);
            c = m.parent;
        }
        Ok(())
    }

    /// page_counter_uncharge() at every level below the root.
    #[inline]
    pub fn page_counter_uncharge(&mut self, memcg: MemcgId, nr: u64) {
        let mut c = memcg;
        while c != ROOT_MEMCG {
            let m = &mut self.memcgs[c as usize];
            m.usage -= nr;
            c = m.parent;
        }
    }

    /// Uncharges `nr` pages from `memcg` and its ancestors (the root is
    /// never charged, so this is a no-op for it).
    #[inline]
    pub fn mem_cgroup_uncharge(&mut self, memcg: MemcgId, nr: u64) {
        self.page_counter_uncharge(memcg, nr);
    }

    /// drain_stock() for every memcg under `root` (drain_all_stock()): the
    /// stock goes back to the counters, so the reclaim target is exact.
    pub fn drain_all_stock(&mut self, root: MemcgId) {
        for m in self.memcg_subtree(root) {
            let stock = std::mem::take(&mut self.memcgs[m as usize].stock);
            if stock > 0 {
                self.page_counter_uncharge(m, stock);
            }
        }
    }

    /// memcg_memory_event(): the local count, and the hierarchical count of
    /// the memcg and its ancestors below the root (cgroup v2's memory.events).
    pub fn memcg_memory_event(&mut self, memcg: MemcgId, ev: MemcgEvent) {
        let e = ev as usize;
        debug_assert!(e < MEMCG_NR_MEMORY_EVENTS);
        self.memcgs[memcg as usize].events_local[e] += 1;
        let mut c = memcg;
        loop {
            self.memcgs[c as usize].events[e] += 1;
            match self.parent_mem_cgroup(c) {
                Some(p) if p != ROOT_MEMCG => c = p,
                _ => break,
            }
        }
    }

    /// page_counter_calculate_protection() for `memcg` under reclaim
    /// rooted at `root`: emin/elow. Children of the root take their
    /// settings as they are; deeper ones share their parent's effective
    /// protection in proportion to their protected usage.
    pub fn mem_cgroup_calculate_protection(&mut self, root: MemcgId, memcg: MemcgId) {
        if memcg == root {
            return;
        }
        let usage = self.memcgs[memcg as usize].usage;
        if usage == 0 {
            return;
        }
        let parent = self.memcgs[memcg as usize].parent;
        if parent == root {
            let m = &mut self.memcgs[memcg as usize];
            m.emin = m.min;
            m.elow = m.low;
            return;
        }
        // children_min_usage / children_low_usage: the kernel keeps them
        // up to date on every charge (propagate_protected_usage); reclaim
        // is rare enough to sum them here instead.
        let p = &self.memcgs[parent as usize];
        let (mut sib_min, mut sib_low) = (0u64, 0u64);
        for &c in &p.children {
            let cm = &self.memcgs[c as usize];
            sib_min += cm.usage.min(cm.min);
            sib_low += cm.usage.min(cm.low);
        }
        let (pemin, pelow) = (p.emin, p.elow);
        let m = &mut self.memcgs[memcg as usize];
        m.emin = effective_protection(usage, m.min, pemin, sib_min);
        m.elow = effective_protection(usage, m.low, pelow, sib_low);
    }

    /// mem_cgroup_unprotected(): the root and the reclaim target itself
    /// are never protected.
    #[inline]
    fn mem_cgroup_unprotected(&self, target: MemcgId, memcg: MemcgId) -> bool {
        memcg == ROOT_MEMCG || memcg == target
    }

    /// mem_cgroup_below_min(): usage within memory.min's effective value.
    pub fn mem_cgroup_below_min(&self, target: MemcgId, memcg: MemcgId) -> bool {
        if self.mem_cgroup_unprotected(target, memcg) {
            return false;
        }
        let m = &self.memcgs[memcg as usize];
        m.emin >= m.usage
    }

    /// mem_cgroup_below_low().
    pub fn mem_cgroup_below_low(&self, target: MemcgId, memcg: MemcgId) -> bool {
        if self.mem_cgroup_unprotected(target, memcg) {
            return false;
        }
        let m = &self.memcgs[memcg as usize];
        m.elow >= m.usage
    }

    /// mem_cgroup_protection(): (emin, elow) as get_scan_count() uses them;
    /// none for the reclaim target itself.
    pub fn mem_cgroup_protection(&self, target: MemcgId, memcg: MemcgId) -> (u64, u64) {
        if self.mem_cgroup_unprotected(target, memcg) {
            return (0, 0);
        }
        let m = &self.memcgs[memcg as usize];
        (m.emin, m.elow)
    }

    /// mem_cgroup_swappiness(): v1's per-memcg memory.swappiness, the
    /// global vm.swappiness for the root and memcgs that never set it.
    #[inline]
    pub fn mem_cgroup_swappiness(&self, memcg: MemcgId) -> u32 {
        if memcg == ROOT_MEMCG {
            return self.cfg.swappiness;
        }
        self.memcgs[memcg as usize]
            .swappiness
            .unwrap_or(self.cfg.swappiness)
    }

    /// Hierarchical memory.stat (v1's total_*): the memcg's counters plus
    /// every descendant's.
    pub fn memcg_stat_total(&self, memcg: MemcgId) -> super::vmstat::Counters {
        let mut t = super::vmstat::Counters::default();
        for m in self.memcg_subtree(memcg) {
            let s = &self.memcgs[m as usize].stat;
            for (a, b) in t.0.iter_mut().zip(s.0.iter()) {
                *a += *b;
            }
        }
        t
    }
}
