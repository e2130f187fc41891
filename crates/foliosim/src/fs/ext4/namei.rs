//! fs/ext4/namei.c: directory blocks. A directory is one linear block
//! until it fills; then, with dir_index, make_indexed_dir() turns block 0
//! into the htree root and splits the entries over two leaves, and a full
//! leaf splits at its median hash (do_split()) into a block appended to
//! the directory. A lookup (__ext4_find_entry) reads the root, the index
//! node below it when there is one, and the leaf the name's hash falls in
//! (ext4_dx_find_entry), or a linear directory's blocks from the start.
//!
//! Names are hashed with a fixed hash instead of half_md4 under the file
//! system's random s_hash_seed: which leaf a name lands in is the seed's
//! choice in the kernel too; what matters is that hashes spread evenly.

use super::{Ext4, Ext4Geometry, KEY_DIR};
use crate::mm::memcontrol::MemcgId;
use crate::mm::vmscan::ReclaimPolicy;
use crate::mm::Kernel;

/// One leaf block: its lowest hash (the index entry), its logical block
/// and its entries (hash, rec_len).
#[derive(Clone, Debug)]
struct Leaf {
    start: u32,
    lblk: u64,
    entries: Vec<(u32, u16)>,
    bytes: u64,
}

/// A directory's blocks as the model knows them.
#[derive(Clone, Debug)]
pub(crate) struct Dir {
    pub ino: u64,
    /// An htree (EXT4_INODE_INDEX): block 0 is the dx root.
    pub dx: bool,
    /// Leaves by ascending hash (dx), or blocks in order (linear).
    leaves: Vec<Leaf>,
    pub nblocks: u64,
}

/// EXT4_DIR_REC_LEN: an entry's 8-byte header and its name, 4-byte aligned.
pub fn ext4_dir_rec_len(name_len: usize) -> u16 {
    ((name_len + 8 + 3) & !3) as u16
}

/// The directory hash the model uses (FNV-1a, then a 32-bit finaliser so
/// that names differing in their last character spread over the range).
pub fn dirhash(name: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        h = (h ^ b as u32).wrapping_mul(0x0100_0193);
    }
    h ^= h >> 16;
    h = h.wrapping_mul(0x7feb_352d);
    h ^= h >> 15;
    h = h.wrapping_mul(0x846c_a68b);
    h ^= h >> 16;
    // Bit 0 of an htree hash is the collision-continuation flag.
    h & !1
}

impl Dir {
    pub fn new(ino: u64) -> Dir {
        Dir {
            ino,
            dx: false,
            leaves: vec![Leaf {
                start: 0,
                lblk: 0,
                entries: Vec::new(),
                // "." and "..".
                bytes: 24,
            }],
            nblocks: 1,
        }
    }

    /// A leaf's room for entries: the block less the checksum tail.
    fn capacity(geo: &Ext4Geometry) -> u64 {
        geo.block_size - if geo.metadata_csum { 12 } else { 0 }
    }

    /// dx_root's and dx_node's entry limits (dx_root_limit,
    /// dx_node_limit): 8-byte entries after the fake "." / ".." headers,
    /// less the dx_tail with metadata_csum.
    fn dx_limits(geo: &Ext4Geometry) -> (usize, usize) {
        let tail = geo.metadata_csum as u64;
        (
            ((geo.block_size - 32) / 8 - tail) as usize,
            ((geo.block_size - 8) / 8 - tail) as usize,
        )
    }

    /// Lays out `names`: a measured directory of `blocks` blocks gets its
    /// names spread over its leaves by hash (its block count is the
    /// host's); otherwise the names are added one by one as ext4_add_entry
    /// would.
    pub fn lay_out(&mut self, geo: &Ext4Geometry, names: &[&str], blocks: Option<u64>) {
        match blocks {
            Some(n) if n > 1 && geo.dir_index => {
                self.dx = true;
                self.nblocks = n;
                let leaves = n - 1;
                let step = (1u64 << 32) / leaves;
                self.leaves = (0..leaves)
                    .map(|i| Leaf {
                        start: (i * step) as u32,
                        lblk: i + 1,
                        entries: Vec::new(),
                        bytes: 0,
                    })
                    .collect();
                for name in names {
                    let h = dirhash(name);
                    let i = self.leaf_of(h);
                    let rl = ext4_dir_rec_len(name.len());
                    self.leaves[i].entries.push((h, rl));
                    self.leaves[i].bytes += rl as u64;
                }
            }
            _ => {
                for name in names {
                    self.add_entry(geo, name);
                }
                if let Some(n) = blocks {
                    // A measured linear directory keeps the host's size.
                    self.nblocks = self.nblocks.max(n);
                }
            }
        }
    }

    fn leaf_of(&self, h: u32) -> usize {
        self.leaves
            .partition_point(|l| l.start <= h)
            .saturating_sub(1)
    }

    /// ext4_add_entry(): the name goes into the first linear block with
    /// room, or its htree leaf, splitting as the kernel does. Returns the
    /// logical block it went to.
    pub fn add_entry(&mut self, geo: &Ext4Geometry, name: &str) -> u64 {
        let h = dirhash(name);
        let rl = ext4_dir_rec_len(name.len());
        let cap = Self::capacity(geo);
        if !self.dx {
            if let Some(l) = self.leaves.iter_mut().find(|l| l.bytes + rl as u64 <= cap) {
                l.entries.push((h, rl));
                l.bytes += rl as u64;
                return l.lblk;
            }
            if geo.dir_index && self.nblocks == 1 {
                // make_indexed_dir(): block 0 becomes the root, its
                // entries go to block 1, split into 1 and 2.
                let mut all = std::mem::take(&mut self.leaves[0].entries);
                all.push((h, rl));
                all.sort_unstable();
                let hi = all.split_off(all.len() / 2);
                let mk = |lblk, e: Vec<(u32, u16)>, start| Leaf {
                    start,
                    lblk,
                    bytes: e.iter().map(|x| x.1 as u64).sum(),
                    entries: e,
                };
                let hs = hi[0].0;
                self.leaves = vec![mk(1, all, 0), mk(2, hi, hs)];
                self.dx = true;
                self.nblocks = 3;
                return if h < hs { 1 } else { 2 };
            }
            // ext4_append(): a new linear block.
            let lblk = self.nblocks;
            self.nblocks += 1;
            self.leaves.push(Leaf {
                start: 0,
                lblk,
                entries: vec![(h, rl)],
                bytes: rl as u64,
            });
            return lblk;
        }
        let mut i = self.leaf_of(h);
        if self.leaves[i].bytes + rl as u64 > cap && self.leaves[i].entries.len() > 1 {
            // do_split(): the upper half by hash moves to a new block.
            let l = &mut self.leaves[i];
            l.entries.sort_unstable();
            let hi = l.entries.split_off(l.entries.len() / 2);
            l.bytes = l.entries.iter().map(|x| x.1 as u64).sum();
            let lblk = self.nblocks;
            self.nblocks += 1;
            let new = Leaf {
                start: hi[0].0,
                lblk,
                bytes: hi.iter().map(|x| x.1 as u64).sum(),
                entries: hi,
            };
            self.leaves.insert(i + 1, new);
            i = self.leaf_of(h);
        }
        let l = &mut self.leaves[i];
        l.entries.push((h, rl));
        l.bytes += rl as u64;
        l.lblk
    }

    /// ext4_delete_entry(): the entry leaves its block (blocks stay).
    pub fn delete_entry(&mut self, name: &str) {
        let h = dirhash(name);
        let rl = ext4_dir_rec_len(name.len());
        let i = if self.dx {
            self.leaf_of(h)
        } else {
            match self
                .leaves
                .iter()
                .position(|l| l.entries.contains(&(h, rl)))
            {
                Some(i) => i,
                None => return,
            }
        };
        let l = &mut self.leaves[i];
        if let Some(p) = l.entries.iter().position(|&e| e == (h, rl)) {
            l.entries.swap_remove(p);
            l.bytes -= rl as u64;
        }
    }

    /// Leaves of the htree (for the tests).
    #[cfg(test)]
    pub fn nr_leaves(&self) -> usize {
        self.leaves.len()
    }

    fn key(&self, lblk: u64) -> u64 {
        KEY_DIR | (self.ino << 24) | lblk
    }

    /// The blocks __ext4_find_entry() reads for `name`, in order, into
    /// `out`.
    fn lookup_blocks(&self, geo: &Ext4Geometry, name: &str, out: &mut Vec<u64>) {
        let h = dirhash(name);
        if self.dx {
            let (root_limit, node_limit) = Self::dx_limits(geo);
            out.push(self.key(0));
            let i = self.leaf_of(h);
            if self.leaves.len() > root_limit {
                // A second index level: the dx_node above leaf i.
                out.push(KEY_DIR | (self.ino << 24) | (1 << 23) | (i / node_limit) as u64);
            }
            out.push(self.key(self.leaves[i].lblk));
        } else {
            let rl = ext4_dir_rec_len(name.len());
            let last = self
                .leaves
                .iter()
                .find(|l| l.entries.contains(&(h, rl)))
                .map_or(self.nblocks - 1, |l| l.lblk);
            out.extend((0..=last).map(|b| self.key(b)));
        }
    }
}

impl Ext4 {
    /// ext4_lookup(): a name in the dcache costs nothing; otherwise the
    /// directory blocks it hashes to are read, one at a time as the kernel
    /// waits on each. Returns the inode, None for a name not there.
    pub fn ext4_lookup<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        name: &str,
        memcg: MemcgId,
    ) -> Option<Option<u64>> {
        let ino = self.files.get(name).map(|d| d.ino);
        if ino.is_some() && self.dcache.contains(name) {
            return Some(ino);
        }
        let mut blocks = std::mem::take(&mut self.batch);
        blocks.clear();
        self.dir.lookup_blocks(&self.geo, name, &mut blocks);
        for i in 0..blocks.len() {
            let r = self.bread(k, blocks[i], memcg);
            if r.is_none() {
                self.batch = blocks;
                return None;
            }
        }
        blocks.clear();
        self.batch = blocks;
        if ino.is_some() {
            self.dcache.insert(name.to_string());
        }
        Some(ino)
    }

    /// ext4_unlink(): the lookup, the inode, the entry removed; the last
    /// link gone, ext4_evict_inode() frees the data blocks
    /// (ext4_free_blocks(): the data's group loaded into mballoc's buddy
    /// cache) and the inode (ext4_free_inode(): its group's inode bitmap).
    /// Returns false for a name that does not exist.
    pub fn ext4_unlink<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        name: &str,
        memcg: MemcgId,
    ) -> Option<bool> {
        let Some(ino) = self.ext4_lookup(k, name, memcg)? else {
            return Some(false);
        };
        self.ext4_iget(k, ino, memcg)?;
        self.dir.delete_entry(name);
        let d = self.files.remove(name).expect("looked up");
        self.dcache.remove(name);
        if let Some(b) = d.data_block {
            self.ext4_free_blocks(k, b, memcg)?;
        }
        self.ext4_free_inode(k, ino, memcg)?;
        Some(true)
    }

    /// ext4_create(): the lookup finds nothing, __ext4_new_inode() takes
    /// an inode in the directory's group, ext4_add_entry() reads the leaf
    /// the name goes to (a split's new block is appended, not read).
    /// Returns false when the name exists already (O_CREAT opens it).
    pub fn ext4_create<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        name: &str,
        memcg: MemcgId,
    ) -> Option<bool> {
        if let Some(ino) = self.ext4_lookup(k, name, memcg)? {
            self.ext4_iget(k, ino, memcg)?;
            return Some(false);
        }
        let ino = self.__ext4_new_inode(k, memcg)?;
        let before = self.dir.nblocks;
        let lblk = self.dir.add_entry(&self.geo, name);
        // Blocks ext4_append() adds are new: uptodate without a read.
        for b in before..self.dir.nblocks {
            self.getblk_zeroed(k, false, self.dir.key(b), memcg)?;
        }
        self.bread(k, self.dir.key(lblk), memcg)?;
        self.files.insert(
            name.to_string(),
            super::OnDisk {
                ino,
                data_block: None,
            },
        );
        self.dcache.insert(name.to_string());
        self.icache.insert(ino);
        Some(true)
    }
}
