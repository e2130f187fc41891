//! Removing a file's page cache (mm/truncate.c).

use super::filemap::Slot;
use super::folio::pg;
use super::vmscan::ReclaimPolicy;
use super::Kernel;

impl<P: ReclaimPolicy> Kernel<P> {
    /// truncate_inode_pages_final(), when an unlinked file's last reference
    /// goes: its mappings are zapped, writeback in flight is waited for,
    /// dirty folios are dropped without being written (folio_cancel_dirty)
    /// and every folio and shadow entry leaves the mapping.
    pub fn truncate_inode_pages_final(&mut self, mapping: u32) {
        self.unmap_mapping(mapping);
        // truncate_inode_pages_range() waits on each folio under writeback.
        self.filemap_fdatawait_range(mapping, 0, u64::MAX);
        let folios = &self.core.folios;
        self.core
            .wb
            .dirty
            .retain(|&(id, _)| folios.get(id).mapping != mapping);
        let n = self.core.files[mapping as usize].nr_pages();
        for idx in 0..n {
            let id = match self.core.files[mapping as usize].slot(idx) {
                Slot::Folio(id) => id,
                Slot::Shadow(_) => {
                    self.core.files[mapping as usize].clear_shadow(idx);
                    self.core.workingset_update_node(mapping, idx, 0);
                    continue;
                }
                Slot::Empty | Slot::Swap(_) => continue,
            };
            // The model runs one task at a time: nothing is isolated by
            // reclaim between operations, but never free what is.
            if self.core.folios.get(id).test(pg::ISOLATED) {
                continue;
            }
            let f = self.core.folios.get_mut(id);
            let memcg = f.memcg;
            if f.test_clear(pg::DIRTY) {
                self.core.memcgs[memcg as usize].nr_dirty -= 1;
                self.core.wb.nr_dirty -= 1;
            }
            self.policy.folio_del_lru(&mut self.core, id);
            self.core.files[mapping as usize].replace_with_shadow(idx, None);
            self.core.workingset_update_node(mapping, idx, memcg);
            self.core.memcgs[memcg as usize].nr_file -= 1;
            self.core.free_folio(id);
        }
    }
}
