//! fs/ext4/inode.c: reading an inode's table block (__ext4_get_inode_loc)
//! with the inode-table readahead, and ext4_iget.

use super::Ext4;
use crate::mm::memcontrol::MemcgId;
use crate::mm::vmscan::ReclaimPolicy;
use crate::mm::Kernel;

impl Ext4 {
    /// The inode-table block holding `ino`.
    pub fn itable_block(&self, ino: u64) -> u64 {
        let g = self.geo.group_of_ino(ino);
        let off = (ino - 1) % self.geo.inodes_per_group;
        self.itable_start(g) + off / self.geo.inodes_per_block()
    }

    /// ext4_iget(): an inode not in the icache is read from its table
    /// block (__ext4_get_inode_loc_noinmem: no in-memory copy to spare the
    /// read).
    pub fn ext4_iget<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        ino: u64,
        memcg: MemcgId,
    ) -> Option<()> {
        if self.icache.contains(&ino) {
            return Some(());
        }
        self.__ext4_get_inode_loc(k, ino, false, memcg)?;
        self.icache.insert(ino);
        Some(())
    }

    /// __ext4_get_inode_loc(): the buffer of `ino`'s table block, read if
    /// not uptodate. `in_mem` is a new inode whose contents are all in
    /// memory: when the inode bitmap is cached and shows every other inode
    /// of the block free, the block is zeroed instead of read. Otherwise
    /// the read is plugged with a readahead of the table: from the block
    /// rounded down to inode_readahead_blks (not before the table) to
    /// inode_readahead_blks blocks on, stopped at the used part of the
    /// table (inodes_per_group less itable_unused), both ends included as
    /// the kernel's loop includes them; blocks already uptodate are
    /// skipped.
    #[allow(non_snake_case)]
    pub(crate) fn __ext4_get_inode_loc<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        ino: u64,
        in_mem: bool,
        memcg: MemcgId,
    ) -> Option<()> {
        let block = self.itable_block(ino);
        if self.cached(k, block) {
            return self.bread(k, block, memcg);
        }
        let g = self.geo.group_of_ino(ino);
        if in_mem && self.own_fs && self.cached(k, super::Bitmap::Inode.key(g)) {
            let ipb = self.geo.inodes_per_block();
            let first = (ino - 1) / ipb * ipb + 1;
            let alone = (first..first + ipb).all(|i| i == ino || !self.allocated.contains(&i));
            if alone {
                return self.getblk_zeroed(k, false, block, memcg);
            }
        }
        self.batch.clear();
        let ra = self.geo.inode_readahead_blks;
        if ra > 0 {
            let table = self.itable_start(g);
            let b = (block & !(ra - 1)).max(table);
            let used_end = table + self.itable_used(g) / self.geo.inodes_per_block();
            let end = (b + ra).min(used_end);
            self.batch.extend(b..=end);
        }
        if !self.batch.contains(&block) {
            self.batch.push(block);
        }
        self.bh_read_batch(k, block, memcg)
    }
}
