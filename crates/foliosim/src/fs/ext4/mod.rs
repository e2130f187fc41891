//! ext4's metadata I/O for the files a workload names (Linux 6.18 fs/ext4):
//! inode-table blocks (`inode.rs`, __ext4_get_inode_loc and its readahead),
//! directory blocks (`namei.rs`, linear and htree lookups, unlink, create),
//! inode bitmaps (`ialloc.rs`) and block bitmaps with mballoc's buddy
//! cache (`mballoc.rs`).
//!
//! Metadata blocks live where the kernel keeps them: in the block device's
//! page cache (one 4 KiB folio per block, charged to the task's memcg,
//! counted in pgpgin when read, on the LRU, reclaimable, and dropped by
//! `drop_caches`), read through the model's block device. The icache and
//! dcache are sets of inode numbers and names: a run starts as after
//! `echo 3 > drop_caches` (nothing cached), later accesses hit.
//!
//! The on-disk geometry is an input: the host's (measured by the oracle:
//! statfs, GETFSMAP, sysfs, the laid-out files' inode numbers, directory
//! sizes and first data blocks) or mke2fs's defaults for a fresh file
//! system ([`Ext4Geometry::mkfs_default`]), where the model lays the files
//! out itself. Not modelled: extent-tree blocks (laid-out files are taken
//! as holding at most four extents, in the inode), xattr blocks, the
//! journal, metadata writeback (blocks are read, never dirtied), mballoc's
//! allocation and bitmap prefetch for new data blocks.

pub mod ialloc;
pub mod inode;
pub mod mballoc;
pub mod namei;

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::mm::filemap::Slot;
use crate::mm::memcontrol::MemcgId;
use crate::mm::vmscan::ReclaimPolicy;
use crate::mm::{Kernel, PAGE_SIZE};

use namei::Dir;

/// EXT4_DEF_INODE_READAHEAD_BLKS: /sys/fs/ext4/DEV/inode_readahead_blks.
pub const EXT4_DEF_INODE_READAHEAD_BLKS: u64 = 32;
/// EXT4_FIRST_INO of a revision-1 file system: inodes 1-10 are reserved,
/// 11 is lost+found.
pub const EXT4_FIRST_INO: u64 = 11;

/// The file system's shape (the superblock's and mke2fs's numbers).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Ext4Geometry {
    /// s_log_block_size: only PAGE_SIZE blocks are modelled (one buffer per
    /// block-device folio).
    pub block_size: u64,
    pub blocks_per_group: u64,
    pub inodes_per_group: u64,
    pub inode_size: u64,
    /// s_inode_readahead_blks (a power of two; 0 turns readahead off).
    pub inode_readahead_blks: u64,
    /// dir_index: directories past one block become htrees.
    pub dir_index: bool,
    /// metadata_csum: a 12-byte checksum tail in each directory leaf.
    pub metadata_csum: bool,
    /// First block of group 0's inode table (the others follow with
    /// flex_bg, as mke2fs packs them); measured tables override it per
    /// group ([`Ext4Layout::itables`]).
    pub itable0: u64,
    /// flex_bg's group count (1 without flex_bg).
    pub flex_bg_size: u64,
}

impl Ext4Geometry {
    /// What mke2fs 1.47 makes of a `fs_bytes` device with its ext4
    /// defaults (mke2fs.conf: blocksize 4096, inode_size 256, inode_ratio
    /// 16384, flex_bg 16, dir_index, metadata_csum, 64bit) and the mount
    /// default inode_readahead_blks 32. Group 0's inode table follows the
    /// superblock, the group descriptors, the reserved GDT blocks
    /// (calc_reserved_gdt_blocks(): room to grow 1024-fold, at most one
    /// block of addresses) and the flex group's 16 block and 16 inode
    /// bitmaps.
    pub fn mkfs_default(fs_bytes: u64) -> Ext4Geometry {
        let bs = 4096u64;
        let bpg = 8 * bs;
        let blocks = (fs_bytes / bs).max(bpg);
        let groups = blocks.div_ceil(bpg);
        let desc_per_block = bs / 64;
        let gdt = groups.div_ceil(desc_per_block);
        let max_blocks = (blocks.saturating_mul(1024)).min(u32::MAX as u64);
        let rsv = max_blocks
            .div_ceil(bpg)
            .div_ceil(desc_per_block)
            .saturating_sub(gdt)
            .min(bs / 4);
        let flex = 16;
        Ext4Geometry {
            block_size: bs,
            blocks_per_group: bpg,
            inodes_per_group: bpg * bs / 16384,
            inode_size: 256,
            inode_readahead_blks: EXT4_DEF_INODE_READAHEAD_BLKS,
            dir_index: true,
            metadata_csum: true,
            itable0: 1 + gdt + rsv + 2 * flex.min(groups),
            flex_bg_size: flex,
        }
    }

    pub fn inodes_per_block(&self) -> u64 {
        self.block_size / self.inode_size
    }

    pub fn itable_blocks(&self) -> u64 {
        self.inodes_per_group / self.inodes_per_block()
    }

    pub fn group_of_ino(&self, ino: u64) -> u64 {
        (ino - 1) / self.inodes_per_group
    }

    pub fn group_of_block(&self, block: u64) -> u64 {
        block / self.blocks_per_group
    }

    /// Checks what the model needs of a geometry; the error names the field.
    pub fn check(&self) -> Result<(), String> {
        if self.block_size != PAGE_SIZE {
            return Err(format!(
                "ext4 block size {} (only {PAGE_SIZE}-byte blocks are modelled)",
                self.block_size
            ));
        }
        if self.inode_size == 0
            || !self.block_size.is_multiple_of(self.inode_size)
            || self.inodes_per_group == 0
            || !self
                .inodes_per_group
                .is_multiple_of(self.inodes_per_block())
            || self.blocks_per_group == 0
        {
            return Err(format!(
                "ext4 geometry: inode size {}, {} inodes and {} blocks per group do not fit",
                self.inode_size, self.inodes_per_group, self.blocks_per_group
            ));
        }
        if self.inode_readahead_blks != 0 && !self.inode_readahead_blks.is_power_of_two() {
            return Err(format!(
                "inode_readahead_blks {} is not a power of 2",
                self.inode_readahead_blks
            ));
        }
        Ok(())
    }
}

/// A file as laid out on the host before the run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LaidOutFile {
    /// The name the workload uses (relative to its directory).
    pub name: String,
    pub ino: u64,
    /// The file's first data block (FIEMAP), None for an empty file.
    pub data_block: Option<u64>,
}

/// The host's layout of a run's files: measured by the oracle after it laid
/// them out, so the model reads the blocks the real kernel reads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Ext4Layout {
    /// The directory holding the files (the workload's working directory).
    pub dir_ino: u64,
    /// Its size in blocks (st_size / block size).
    pub dir_blocks: u64,
    pub files: Vec<LaidOutFile>,
    /// First block of the inode table of each group holding one of the
    /// inodes (GETFSMAP).
    pub itables: BTreeMap<u64, u64>,
}

/// `--fs ext4`: the geometry, and the host's layout when the oracle
/// measured one (None: the model lays the files out on a fresh file
/// system of that geometry).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Ext4Config {
    pub geo: Ext4Geometry,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout: Option<Ext4Layout>,
}

impl Ext4Config {
    /// A configuration whose geometry the model can use.
    pub fn new(geo: Ext4Geometry, layout: Option<Ext4Layout>) -> Result<Ext4Config, String> {
        geo.check()?;
        Ok(Ext4Config { geo, layout })
    }
}

/// One file's on-disk state as the model knows it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OnDisk {
    pub ino: u64,
    pub data_block: Option<u64>,
}

// Keys of metadata blocks in the block-device mapping: an inode-table
// block is its file-system block number; the others, whose place on disk
// the model does not need, get keys of their own above any block number.
const KEY_DIR: u64 = 1 << 62;

/// A group's inode or block bitmap: the variant is its key's base.
#[derive(Clone, Copy)]
#[repr(u64)]
pub(crate) enum Bitmap {
    Inode = 2 << 60,
    Block = 3 << 60,
}

impl Bitmap {
    /// The key of group `g`'s bitmap block.
    fn key(self, g: u64) -> u64 {
        self as u64 | g
    }
}

/// The model's ext4: its on-disk state and what of it is cached.
pub struct Ext4 {
    pub geo: Ext4Geometry,
    /// The block device's mapping (its page cache) and mballoc's buddy
    /// cache inode (s_buddy_cache), both in the kernel's files.
    pub bdev: u32,
    pub buddy: u32,
    /// Page index of each metadata block touched so far, per mapping: the
    /// mappings grow by one slot per block instead of spanning the disk.
    slots: BTreeMap<u64, u64>,
    buddy_slots: BTreeMap<u64, u64>,
    /// Files by name.
    pub(crate) files: BTreeMap<String, OnDisk>,
    pub(crate) dir: Dir,
    /// Inode-table start per group (measured), else from the geometry.
    itables: BTreeMap<u64, u64>,
    /// The model laid the file system out itself: every allocated inode is
    /// known (`allocated`), so itable_unused and the inode bitmap's free
    /// bits are too. False on a host's layout.
    own_fs: bool,
    pub(crate) allocated: BTreeSet<u64>,
    /// The icache (inodes in memory) and dcache (positive dentries).
    pub icache: BTreeSet<u64>,
    pub dcache: BTreeSet<String>,
    /// Groups whose buddy cache is initialised (EXT4_MB_GRP_NEED_INIT clear).
    pub(crate) buddy_ready: BTreeSet<u64>,
    /// Blocks read (bios of one block) and blocks made uptodate without a
    /// read, for the report and the tests.
    pub blocks_read: u64,
    pub blocks_zeroed: u64,
    /// One lookup's blocks (reused: the lookup path allocates nothing once
    /// warm).
    batch: Vec<u64>,
}

/// A name the workload uses and whether it exists before the run (fio lays
/// out the files of data and stat/delete jobs, not those it creates).
pub struct NameSpec<'a> {
    pub name: &'a str,
    pub exists: bool,
}

impl Ext4 {
    /// Mounts the model's ext4 with `cfg` and lays out `names` (those not
    /// in a measured layout are laid out as a fresh file system would).
    pub fn new<P: ReclaimPolicy>(k: &mut Kernel<P>, cfg: &Ext4Config, names: &[NameSpec]) -> Ext4 {
        debug_assert!(
            cfg.geo.check().is_ok(),
            "geometry checked by Ext4Config::new"
        );
        let geo = cfg.geo.clone();
        let bdev = k.core.add_file(0);
        let buddy = k.core.add_file(0);
        let (dir_ino, dir_blocks, itables, own_fs) = match &cfg.layout {
            Some(l) => (l.dir_ino, Some(l.dir_blocks), l.itables.clone(), false),
            // A fresh file system: the directory is the first inode after
            // lost+found, its files follow (find_inode_bit() takes the
            // group's lowest free bit).
            None => (EXT4_FIRST_INO + 1, None, BTreeMap::new(), true),
        };
        let mut e = Ext4 {
            geo,
            bdev,
            buddy,
            slots: BTreeMap::new(),
            buddy_slots: BTreeMap::new(),
            files: BTreeMap::new(),
            dir: Dir::new(dir_ino),
            itables,
            own_fs,
            // The reserved inodes, lost+found and the directory on the
            // model's file system; on a host's only what was measured.
            allocated: if own_fs {
                (1..=dir_ino).collect()
            } else {
                BTreeSet::from([dir_ino])
            },
            icache: BTreeSet::new(),
            dcache: BTreeSet::new(),
            buddy_ready: BTreeSet::new(),
            blocks_read: 0,
            blocks_zeroed: 0,
            batch: Vec::new(),
        };
        // The working directory's own inode and dentry were looked up by
        // the chdir before the workload started (pinned as its cwd).
        e.icache.insert(dir_ino);
        let measured: BTreeMap<&str, &LaidOutFile> = cfg
            .layout
            .iter()
            .flat_map(|l| l.files.iter().map(|f| (f.name.as_str(), f)))
            .collect();
        let mut present = Vec::new();
        for n in names.iter().filter(|n| n.exists) {
            if e.files.contains_key(n.name) {
                continue;
            }
            let d = match measured.get(n.name) {
                Some(f) => OnDisk {
                    ino: f.ino,
                    data_block: f.data_block,
                },
                None => {
                    let ino = e.next_ino(e.geo.group_of_ino(dir_ino));
                    // mballoc's goal for a new inode's data: its group.
                    let data_block = Some(e.geo.group_of_ino(ino) * e.geo.blocks_per_group);
                    OnDisk { ino, data_block }
                }
            };
            e.allocated.insert(d.ino);
            e.files.insert(n.name.to_string(), d);
            present.push(n.name);
        }
        e.dir.lay_out(&e.geo, &present, dir_blocks);
        for &ino in &e.allocated {
            let g = e.geo.group_of_ino(ino);
            if !e.itables.contains_key(&g) {
                let t = e.itable_start(g);
                e.itables.insert(g, t);
            }
        }
        e
    }

    /// The first block of group `g`'s inode table: measured, or where
    /// mke2fs puts it (flex_bg packs a flex group's tables in its first
    /// group, one after the other).
    fn itable_start(&self, g: u64) -> u64 {
        if let Some(&t) = self.itables.get(&g) {
            return t;
        }
        let flex = self.geo.flex_bg_size.max(1);
        let first = g / flex * flex;
        let base = first * self.geo.blocks_per_group
            + if first == 0 {
                self.geo.itable0
            } else {
                2 * flex
            };
        base + (g - first) * self.geo.itable_blocks()
    }

    /// The inode a new file of group `g` gets: find_inode_bit()'s lowest
    /// free bit on the model's own file system; on a host's, whose bitmap
    /// the model has not seen, the one after the highest inode it knows
    /// there.
    pub(crate) fn next_ino(&self, g: u64) -> u64 {
        let lo = g * self.geo.inodes_per_group + 1;
        let hi = lo + self.geo.inodes_per_group;
        if self.own_fs {
            (lo..hi).find(|i| !self.allocated.contains(i)).unwrap_or(hi)
        } else {
            self.allocated
                .range(lo..hi)
                .next_back()
                .map_or(lo, |&i| i + 1)
        }
    }

    /// Inodes of group `g` the inode table holds as used: inodes_per_group
    /// less bg_itable_unused. The model knows it on its own file system
    /// (the highest inode ever allocated); a host's group descriptors are
    /// not readable without the block device, so there the whole table
    /// counts as used.
    pub(crate) fn itable_used(&self, g: u64) -> u64 {
        if !self.own_fs {
            return self.geo.inodes_per_group;
        }
        let lo = g * self.geo.inodes_per_group + 1;
        self.allocated
            .range(lo..lo + self.geo.inodes_per_group)
            .next_back()
            .map_or(0, |&i| i - lo + 1)
    }

    fn slot_of(
        &mut self,
        buddy: bool,
        key: u64,
        k_files: &mut [crate::mm::filemap::AddressSpace],
    ) -> u64 {
        let (map, mapping) = if buddy {
            (&mut self.buddy_slots, self.buddy)
        } else {
            (&mut self.slots, self.bdev)
        };
        let n = map.len() as u64;
        let idx = *map.entry(key).or_insert(n);
        let a = &mut k_files[mapping as usize];
        if idx >= a.nr_pages() {
            a.grow((idx + 1) * PAGE_SIZE);
        }
        idx
    }

    /// Whether metadata block `key` is cached (buffer_uptodate()).
    pub fn cached<P: ReclaimPolicy>(&self, k: &Kernel<P>, key: u64) -> bool {
        self.slots
            .get(&key)
            .is_some_and(|&i| matches!(k.core.files[self.bdev as usize].slot(i), Slot::Folio(_)))
    }

    /// bdev_getblk() + reads of the blocks in `self.batch` that are not
    /// cached, in one plug (consecutive pages go as one request); then
    /// waits for `wait` (a block of the batch). Every block got is touched
    /// (touch_buffer(): folio_mark_accessed). Readahead blocks
    /// (`ra`: all but `wait`) give up when memory is short; None when the
    /// task is OOM-killed getting `wait`.
    fn bh_read_batch<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        wait: u64,
        memcg: MemcgId,
    ) -> Option<()> {
        let mut run: Option<(u64, u64)> = None;
        let mut wait_idx = None;
        let batch = std::mem::take(&mut self.batch);
        for &key in &batch {
            let idx = self.slot_of(false, key, &mut k.core.files);
            if key == wait {
                wait_idx = Some(idx);
            }
            if let Slot::Folio(id) = k.core.files[self.bdev as usize].slot(idx) {
                k.folio_mark_accessed(id);
                continue;
            }
            let Some(id) = k.filemap_add_folio(self.bdev, idx, memcg, key == wait) else {
                if key == wait {
                    self.batch = batch;
                    return None;
                }
                continue;
            };
            k.folio_mark_accessed(id);
            self.blocks_read += 1;
            run = match run {
                Some((s, e)) if e == idx => Some((s, e + 1)),
                Some((s, e)) => {
                    k.submit_read(self.bdev, s, e, memcg);
                    Some((idx, idx + 1))
                }
                None => Some((idx, idx + 1)),
            };
        }
        if let Some((s, e)) = run {
            k.submit_read(self.bdev, s, e, memcg);
        }
        self.batch = batch;
        self.batch.clear();
        if let Some(i) = wait_idx {
            k.wait_uptodate(self.bdev, i);
        }
        Some(())
    }

    /// Reads one metadata block (ext4_bread / ext4_read_bh_lock) if it is
    /// not cached and waits for it.
    pub(crate) fn bread<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        key: u64,
        memcg: MemcgId,
    ) -> Option<()> {
        self.batch.clear();
        self.batch.push(key);
        self.bh_read_batch(k, key, memcg)
    }

    /// ext4_read_inode_bitmap() / ext4_read_block_bitmap(): group `g`'s
    /// bitmap, read if not cached (the two read alike in the model).
    pub(crate) fn read_bitmap<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        bitmap: Bitmap,
        g: u64,
        memcg: MemcgId,
    ) -> Option<()> {
        self.bread(k, bitmap.key(g), memcg)
    }

    /// A block made uptodate without I/O (its contents are known:
    /// __ext4_get_inode_loc()'s lone new inode, ext4_mb_init_cache()'s
    /// buddy pages): the folio is added and charged, nothing is read.
    fn getblk_zeroed<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        buddy: bool,
        key: u64,
        memcg: MemcgId,
    ) -> Option<()> {
        let idx = self.slot_of(buddy, key, &mut k.core.files);
        let mapping = if buddy { self.buddy } else { self.bdev };
        let id = match k.core.files[mapping as usize].slot(idx) {
            Slot::Folio(id) => id,
            _ => {
                self.blocks_zeroed += 1;
                k.filemap_add_folio(mapping, idx, memcg, true)?
            }
        };
        k.folio_mark_accessed(id);
        Some(())
    }

    /// `echo 3 > drop_caches`: the clean block-device and buddy-cache
    /// pages go (drop_pagecache_sb()), then the dentries and unused inodes
    /// (drop_slab()); the buddy caches are built again on next use.
    pub fn drop_caches<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>) {
        k.invalidate_mapping_pages(self.bdev);
        k.invalidate_mapping_pages(self.buddy);
        self.dcache.clear();
        self.icache.retain(|&i| i == self.dir.ino);
        self.buddy_ready.clear();
    }

    /// open(2) / stat(2) of an existing file: the path walk's lookup and
    /// the inode. Returns false for a name that does not exist (ENOENT);
    /// None when the task is OOM-killed.
    pub fn open<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        name: &str,
        memcg: MemcgId,
    ) -> Option<bool> {
        let Some(ino) = self.ext4_lookup(k, name, memcg)? else {
            return Some(false);
        };
        self.ext4_iget(k, ino, memcg)?;
        Some(true)
    }
}

#[cfg(test)]
mod tests;
