//! Workingset detection (mm/workingset.c): shadow entries packed at
//! eviction, refault distance against the lruvec's nonresident age, and the
//! activate / restore decisions of the classic LRU. MGLRU's
//! lru_gen_eviction / lru_gen_refault live with the MGLRU policy and use the
//! same shadow packing.

use super::folio::{pg, FolioId};
use super::memcontrol::MemcgId;
use super::vmstat::Item;
use super::Core;

/// EVICTION_BITS left after the memcg id and the workingset bit (the model
/// has no node id and one bit less than 64 for the slot marker).
pub const EVICTION_BITS: u32 = 46;
pub const EVICTION_MASK: u64 = (1 << EVICTION_BITS) - 1;
const MEMCG_SHIFT: u32 = EVICTION_BITS;
/// 15 bits of memcg id, then PG_workingset; bit 62 marks a swap entry and
/// bit 63 a shadow in the page-cache slot.
const WORKINGSET_SHIFT: u32 = EVICTION_BITS + 15;

/// A shadow entry: what pack_shadow() stores in the page cache slot of an
/// evicted folio.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shadow(pub u64);

/// pack_shadow(): memcg id, eviction timestamp and PG_workingset.
#[inline]
pub fn pack_shadow(memcg: MemcgId, eviction: u64, workingset: bool) -> Shadow {
    Shadow(
        (eviction & EVICTION_MASK)
            | ((memcg as u64) << MEMCG_SHIFT)
            | ((workingset as u64) << WORKINGSET_SHIFT),
    )
}

/// unpack_shadow(): (memcg id, eviction, workingset).
#[inline]
pub fn unpack_shadow(s: Shadow) -> (MemcgId, u64, bool) {
    (
        ((s.0 >> MEMCG_SHIFT) & 0x7fff) as MemcgId,
        s.0 & EVICTION_MASK,
        (s.0 >> WORKINGSET_SHIFT) & 1 == 1,
    )
}

/// WORKINGSET_{REFAULT,ACTIVATE,RESTORE}_{FILE,ANON} for a folio type.
#[inline]
pub fn workingset_items(file: bool) -> (Item, Item, Item) {
    if file {
        (
            Item::WORKINGSET_REFAULT_FILE,
            Item::WORKINGSET_ACTIVATE_FILE,
            Item::WORKINGSET_RESTORE_FILE,
        )
    } else {
        (
            Item::WORKINGSET_REFAULT_ANON,
            Item::WORKINGSET_ACTIVATE_ANON,
            Item::WORKINGSET_RESTORE_ANON,
        )
    }
}

/// LRU sizes of an lruvec, in pages, as lruvec_page_state(NR_*) reads them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct LruSizes {
    pub inactive_anon: u64,
    pub active_anon: u64,
    pub inactive_file: u64,
    pub active_file: u64,
    pub unevictable: u64,
}

impl Core {
    /// workingset_age_nonresident(): advance the lruvec's clock.
    #[inline]
    pub fn workingset_age_nonresident(&mut self, memcg: MemcgId, nr: u64) {
        self.memcgs[memcg as usize].nonresident_age += nr;
        if memcg != 0 {
            // Ancestors age too (the root here).
            self.memcgs[0].nonresident_age += nr;
        }
    }

    /// workingset_eviction() for the classic LRU: stamp the shadow with the
    /// lruvec's age, then age it by the evicted folio.
    pub fn workingset_eviction_classic(&mut self, id: FolioId) -> Shadow {
        let f = self.folios.get(id);
        let memcg = f.memcg;
        let ws = f.test(pg::WORKINGSET);
        let nr = f.nr_pages();
        let eviction = self.memcgs[memcg as usize].nonresident_age;
        self.workingset_age_nonresident(memcg, nr);
        pack_shadow(memcg, eviction, ws)
    }

    /// workingset_refault() for the classic LRU, on the folio being added
    /// at the shadow's slot: count the refault and, when the refault
    /// distance fits in the workingset (workingset_test_recent()), activate
    /// it, and restore PG_workingset if it was set at eviction. Returns
    /// whether it was restored (the caller notes the refault's cost).
    /// `sizes` are the eviction lruvec's LRU sizes.
    #[inline(always)]
    pub fn workingset_refault_classic(
        &mut self,
        id: FolioId,
        shadow: Shadow,
        sizes: LruSizes,
    ) -> bool {
        let (evict_memcg, eviction, workingset) = unpack_shadow(shadow);
        let f = self.folios.get(id);
        let file = f.is_file_lru();
        let (memcg, nr) = (f.memcg, f.nr_pages());
        let (refault_item, activate_item, restore_item) = workingset_items(file);
        self.count(memcg, refault_item, nr);
        // The memcg may be gone or differ; refault distance is measured on
        // the eviction lruvec.
        let Some(em) = self.memcgs.get(evict_memcg as usize) else {
            return false;
        };
        let refault = em.nonresident_age;
        let distance = refault.wrapping_sub(eviction) & EVICTION_MASK;
        let mut ws_size = sizes.active_file;
        if !file {
            ws_size += sizes.inactive_file;
        }
        if self.mem_cgroup_get_nr_swap_pages(evict_memcg) > 0 {
            ws_size += sizes.active_anon;
            if file {
                ws_size += sizes.inactive_anon;
            }
        }
        if distance > ws_size {
            return false;
        }
        self.folios.get_mut(id).set(pg::ACTIVE);
        self.workingset_age_nonresident(memcg, nr);
        self.count(memcg, activate_item, nr);
        if workingset {
            self.folios.get_mut(id).set(pg::WORKINGSET);
            self.count(memcg, restore_item, nr);
        }
        workingset
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn shadow_roundtrip() {
        let s = pack_shadow(7, 123_456_789, true);
        assert_eq!(unpack_shadow(s), (7, 123_456_789, true));
        let s = pack_shadow(0, EVICTION_MASK + 5, false);
        assert_eq!(unpack_shadow(s), (0, 4, false));
        assert_eq!(s.0 >> 62, 0, "bits 62 and 63 are the slot's markers");
    }
}

/// XA_CHUNK_SHIFT: a leaf xa_node holds 64 page-cache slots.
pub const XA_CHUNK_SHIFT: u32 = 6;
/// sizeof(struct xa_node) on 64-bit (7 to a page): the slab the nodes
/// themselves cost, which count_shadow_nodes() adds to a memcg's pages.
const XA_NODE_SIZE: u64 = 576;
/// SHRINK_BATCH: shrinkers scan in batches of 128 objects.
const SHRINK_BATCH: u64 = 128;

/// A leaf xa_node's counts: entries present and, of those, shadow entries
/// (xa_node count / nr_values). `memcg` is the group charged for the node
/// (the one whose folio first populated it); `stamp` tells a live entry of
/// the shadow-node list from a stale one: each time a node goes on the
/// list it gets a new stamp from ShadowNodes, unique across nodes, so it
/// stays valid after the node's leaf is released and made again.
#[derive(Clone, Copy, Debug, Default)]
pub struct XaNode {
    pub count: u8,
    pub nr_values: u8,
    pub on_list: bool,
    pub allocated: bool,
    /// The range is held by one multi-index entry of order >= 6 (a large
    /// folio or its shadow): the kernel's xarray keeps such an entry in
    /// the slots of the node one level up (xas_store() at shift 6) and has
    /// no leaf node here, so the range is neither slab nor on the
    /// shadow-node list. Cleared when an entry of a lower order goes in
    /// (xas_split() makes the leaf).
    pub large: bool,
    pub memcg: MemcgId,
    pub stamp: u32,
}

impl XaNode {
    /// Already where workingset_update_node() would put it: allocated
    /// while it holds entries, on the shadow-node list while it holds only
    /// shadows.
    #[inline]
    pub fn settled(&self) -> bool {
        let live = self.count > 0 && !self.large;
        live == self.allocated && (live && self.count == self.nr_values) == self.on_list
    }

    /// A leaf node the kernel would have: it holds entries of order < 6.
    #[inline]
    pub fn is_leaf(&self) -> bool {
        self.count > 0 && !self.large
    }
}

/// One memcg's part of the shadow_nodes list_lru, and its shrinker state.
#[derive(Debug, Default)]
struct ShadowList {
    /// FIFO of (mapping, node, stamp); entries whose stamp no longer
    /// matches were unlinked (the kernel's list_lru_del) and are skipped.
    queue: std::collections::VecDeque<(u32, u32, u32)>,
    /// Nodes on the list (list_lru_count).
    live: u64,
    /// Leaf nodes charged to this memcg, shadow-only or not (slab pages).
    allocated: u64,
    /// The shrinker's nr_deferred for this memcg.
    nr_deferred: u64,
}

/// The shadow_nodes list_lru: per memcg, the xa_nodes that hold nothing but
/// shadow entries, oldest first, for the "mm-shadow" shrinker.
#[derive(Debug, Default)]
pub struct ShadowNodes {
    lists: Vec<ShadowList>,
    /// The stamp the next node put on a list gets.
    next_stamp: u32,
}

impl ShadowNodes {
    fn list(&mut self, memcg: MemcgId) -> &mut ShadowList {
        let m = memcg as usize;
        if self.lists.len() <= m {
            self.lists.resize_with(m + 1, ShadowList::default);
        }
        &mut self.lists[m]
    }

    /// list_lru_count_one(): shadow-only nodes of a memcg.
    pub fn count(&self, memcg: MemcgId) -> u64 {
        self.lists.get(memcg as usize).map_or(0, |l| l.live)
    }

    /// Leaf nodes charged to a memcg (its slab of them).
    pub fn allocated(&self, memcg: MemcgId) -> u64 {
        self.lists.get(memcg as usize).map_or(0, |l| l.allocated)
    }
}

impl Core {
    /// obj_cgroup_uncharge() of `bytes` of slab: the whole pages no longer
    /// needed go back to the page counter.
    fn memcg_slab_free(&mut self, m: MemcgId, bytes: u64) {
        let g = &mut self.memcgs[m as usize];
        g.slab_bytes -= bytes;
        let need = g.slab_bytes.div_ceil(super::PAGE_SIZE);
        if g.slab_pages > need {
            let nr = g.slab_pages - need;
            g.slab_pages = need;
            self.mem_cgroup_uncharge(m, nr);
        }
    }

    /// workingset_update_node(): after a slot of node `index >> 6` changed,
    /// link the node onto the shadow-node list if it now holds only shadow
    /// entries, unlink it if not. `memcg` charges a newly populated node.
    #[inline]
    pub fn workingset_update_node(&mut self, mapping: u32, index: u64, memcg: MemcgId) {
        let ni = (index >> XA_CHUNK_SHIFT) as usize;
        // Most slot changes leave the node where it is.
        if self.files[mapping as usize].node(ni).settled() {
            return;
        }
        self.workingset_move_node(mapping, ni, memcg);
    }

    /// workingset_update_node() for a caller that changed the slot and
    /// already knows whether its node is `settled` (XaNode::settled).
    #[inline]
    pub fn workingset_node_changed(
        &mut self,
        mapping: u32,
        index: u64,
        memcg: MemcgId,
        settled: bool,
    ) {
        if !settled {
            self.workingset_move_node(mapping, (index >> XA_CHUNK_SHIFT) as usize, memcg);
        }
    }

    #[cold]
    fn workingset_move_node(&mut self, mapping: u32, ni: usize, memcg: MemcgId) {
        let n = self.files[mapping as usize].node_mut(ni);
        if n.is_leaf() && !n.allocated {
            n.allocated = true;
            n.memcg = memcg;
            let m = n.memcg;
            self.shadow_nodes.list(m).allocated += 1;
            // Charged by the next charge point (memcg_slab_settle).
            self.memcgs[m as usize].slab_bytes += XA_NODE_SIZE;
        } else if !n.is_leaf() && n.allocated {
            n.allocated = false;
            let m = n.memcg;
            self.shadow_nodes.list(m).allocated -= 1;
            self.memcg_slab_free(m, XA_NODE_SIZE);
        }
        let n = self.files[mapping as usize].node(ni);
        let shadow_only = n.is_leaf() && n.count == n.nr_values;
        if shadow_only != n.on_list {
            self.workingset_list_node(mapping, ni, shadow_only);
        }
        if self.files[mapping as usize].node(ni).count == 0 {
            // Empty: the leaf goes, as xas_store() deletes the node.
            self.files[mapping as usize].release_node(ni);
        }
    }

    /// Puts node `ni` on its memcg's shadow-node list or takes it off.
    fn workingset_list_node(&mut self, mapping: u32, ni: usize, shadow_only: bool) {
        let stamp = self.shadow_nodes.next_stamp;
        let n = self.files[mapping as usize].node_mut(ni);
        n.on_list = shadow_only;
        if shadow_only {
            n.stamp = stamp;
            self.shadow_nodes.next_stamp = stamp.wrapping_add(1);
        }
        let m = n.memcg;
        let l = self.shadow_nodes.list(m);
        if shadow_only {
            l.live += 1;
            l.queue.push_back((mapping, ni as u32, stamp));
        } else {
            l.live -= 1;
            // Drop stale entries once they outnumber live ones.
            if l.queue.len() as u64 > 2 * l.live + 1024 {
                let files = &self.files;
                l.queue.retain(|&(f, node, st)| {
                    let x = files[f as usize].node(node as usize);
                    x.on_list && x.stamp == st
                });
            }
        }
    }

    /// Invariants of the shadow-node accounting: each node's counts match
    /// its slots, a node is listed exactly when it holds only shadows, and
    /// the per-memcg list and slab counts match the nodes.
    pub fn check_shadow_nodes(&self) -> Result<(), String> {
        let n_lists = self.shadow_nodes.lists.len().max(self.memcgs.len());
        let (mut live, mut allocated) = (vec![0u64; n_lists], vec![0u64; n_lists]);
        for (fi, f) in self.files.iter().enumerate() {
            for (ni, node) in f.nodes() {
                let start = (ni as u64) << XA_CHUNK_SHIFT;
                let end = (start + (1 << XA_CHUNK_SHIFT)).min(f.nr_pages());
                let (mut count, mut values) = (0u8, 0u8);
                for idx in start..end {
                    match f.slot(idx) {
                        super::filemap::Slot::Empty => {}
                        super::filemap::Slot::Shadow(_) => {
                            count += 1;
                            values += 1;
                        }
                        _ => count += 1,
                    }
                }
                if (count, values) != (node.count, node.nr_values) {
                    return Err(format!(
                        "file {fi} node {ni}: counts {}/{} but slots hold {count}/{values}",
                        node.count, node.nr_values
                    ));
                }
                let leaf = count > 0 && !node.large;
                if node.on_list != (leaf && count == values) || node.allocated != leaf {
                    return Err(format!("file {fi} node {ni}: list/slab state {node:?}"));
                }
                if node.on_list {
                    live[node.memcg as usize] += 1;
                }
                if node.allocated {
                    allocated[node.memcg as usize] += 1;
                }
            }
        }
        for m in 0..n_lists {
            let l = self.shadow_nodes.lists.get(m);
            let (l_live, l_alloc) = l.map_or((0, 0), |l| (l.live, l.allocated));
            if (l_live, l_alloc) != (live[m], allocated[m]) {
                return Err(format!(
                    "memcg {m}: shadow list says {l_live} listed / {l_alloc} nodes, nodes say {} / {}",
                    live[m], allocated[m]
                ));
            }
        }
        Ok(())
    }

    /// The "mm-shadow" shrinker of one memcg (shrink_slab() ->
    /// do_shrink_slab() with count_shadow_nodes() / scan_shadow_nodes()).
    /// `lru_pages` and `slab_nodes` are the memcg's LRU pages and leaf
    /// nodes as count_shadow_nodes() reads them (vmscan's shrink_slab()).
    /// The shrinker's seeks is 0, so every call asks for half the freeable
    /// nodes. Returns the nodes freed.
    pub fn shrink_shadow_nodes(
        &mut self,
        memcg: MemcgId,
        priority: i32,
        lru_pages: u64,
        slab_nodes: u64,
    ) -> u64 {
        let nodes = match self.shadow_nodes.lists.get(memcg as usize) {
            Some(l) if l.live > 0 => l.live,
            _ => return 0,
        };
        // count_shadow_nodes(): keep at most one node per 8 pages of the
        // memcg (its LRU pages plus the nodes' own slab).
        let pages = lru_pages + slab_nodes * XA_NODE_SIZE / super::PAGE_SIZE;
        let max_nodes = pages >> (XA_CHUNK_SHIFT - 3);
        if nodes <= max_nodes {
            return 0;
        }
        let freeable = nodes - max_nodes;
        let nr = std::mem::take(&mut self.shadow_nodes.list(memcg).nr_deferred);
        let delta = freeable / 2;
        let mut total_scan = ((nr >> priority) + delta).min(2 * freeable);
        let (mut scanned, mut freed) = (0u64, 0u64);
        while total_scan >= SHRINK_BATCH || total_scan >= freeable {
            let nr_to_scan = total_scan.min(SHRINK_BATCH);
            let mut walked = 0;
            while walked < nr_to_scan {
                let Some((f, node, st)) = self.shadow_nodes.list(memcg).queue.pop_front() else {
                    break;
                };
                let x = self.files[f as usize].node_mut(node as usize);
                if !x.on_list || x.stamp != st {
                    continue;
                }
                walked += 1;
                // shadow_lru_isolate(): the node and its shadows go.
                x.on_list = false;
                x.allocated = false;
                self.files[f as usize].delete_shadow_node(node as usize);
                self.files[f as usize].release_node(node as usize);
                let l = self.shadow_nodes.list(memcg);
                l.live -= 1;
                l.allocated -= 1;
                self.count(memcg, Item::WORKINGSET_NODERECLAIM, 1);
                freed += 1;
            }
            // As in do_shrink_slab(), a batch counts as scanned whether or
            // not the list still had that many nodes.
            total_scan -= nr_to_scan;
            scanned += nr_to_scan;
        }
        let next = (nr + delta).saturating_sub(scanned).min(2 * freeable);
        self.shadow_nodes.list(memcg).nr_deferred = next;
        freed
    }
}
