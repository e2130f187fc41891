//! fs/ext4/ialloc.c: inode bitmaps, inode allocation and freeing.

use super::{Bitmap, Ext4};
use crate::mm::memcontrol::MemcgId;
use crate::mm::vmscan::ReclaimPolicy;
use crate::mm::Kernel;

impl Ext4 {
    /// ext4_free_inode(): the inode's bit cleared in its group's bitmap.
    pub fn ext4_free_inode<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        ino: u64,
        memcg: MemcgId,
    ) -> Option<()> {
        self.read_bitmap(k, Bitmap::Inode, self.geo.group_of_ino(ino), memcg)?;
        self.allocated.remove(&ino);
        self.icache.remove(&ino);
        Some(())
    }

    /// __ext4_new_inode() for a regular file: find_group_other() starts at
    /// the parent's group, whose inode bitmap is read, and the inode is
    /// picked there (Ext4::next_ino); then the new inode's table block
    /// (ext4_mark_inode_dirty -> ext4_get_inode_loc with the inode in
    /// memory).
    #[allow(non_snake_case)]
    pub fn __ext4_new_inode<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        memcg: MemcgId,
    ) -> Option<u64> {
        let g = self.geo.group_of_ino(self.dir.ino);
        self.read_bitmap(k, Bitmap::Inode, g, memcg)?;
        let ino = self.next_ino(g);
        self.allocated.insert(ino);
        self.__ext4_get_inode_loc(k, ino, true, memcg)?;
        Some(ino)
    }
}
