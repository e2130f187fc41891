//! fs/ext4/mballoc.c and balloc.c: block bitmaps and the buddy cache when
//! blocks are freed.

use super::{Bitmap, Ext4};
use crate::mm::memcontrol::MemcgId;
use crate::mm::vmscan::ReclaimPolicy;
use crate::mm::Kernel;

impl Ext4 {
    /// ext4_mb_load_buddy(): a group not yet in the buddy cache is
    /// initialised from its block bitmap (ext4_mb_init_group ->
    /// ext4_mb_init_cache); with one block per page each group has two
    /// pages in s_buddy_cache's mapping, its bitmap copy and its buddy,
    /// built in memory (charged, not read).
    pub fn ext4_mb_load_buddy<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        g: u64,
        memcg: MemcgId,
    ) -> Option<()> {
        if self.buddy_ready.contains(&g) {
            return Some(());
        }
        self.read_bitmap(k, Bitmap::Block, g, memcg)?;
        self.getblk_zeroed(k, true, 2 * g, memcg)?;
        self.getblk_zeroed(k, true, 2 * g + 1, memcg)?;
        self.buddy_ready.insert(g);
        Some(())
    }

    /// ext4_free_blocks() of a file's blocks starting at `block`: the
    /// group's buddy is loaded to mark them free.
    pub fn ext4_free_blocks<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        block: u64,
        memcg: MemcgId,
    ) -> Option<()> {
        self.ext4_mb_load_buddy(k, self.geo.group_of_block(block), memcg)
    }
}
