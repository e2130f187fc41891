use super::*;
use crate::mm::vmscan::classic::ClassicLru;
use crate::mm::vmstat::Item;
use crate::mm::MmConfig;

fn kernel(limit_pages: Option<u64>) -> (Kernel<ClassicLru>, MemcgId) {
    let cfg = MmConfig {
        ram_bytes: 256 << 20,
        reserved_bytes: 8 << 20,
        check_invariants: true,
        ..MmConfig::default()
    };
    let mut k = Kernel::new(cfg, ClassicLru::new());
    let m = k.add_memcg("t", limit_pages);
    (k, m)
}

fn names(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("t0.0.{i}")).collect()
}

fn mount(k: &mut Kernel<ClassicLru>, cfg: &Ext4Config, names: &[String]) -> Ext4 {
    let specs: Vec<NameSpec> = names
        .iter()
        .map(|n| NameSpec {
            name: n,
            exists: true,
        })
        .collect();
    Ext4::new(k, cfg, &specs)
}

fn own_fs() -> Ext4Config {
    Ext4Config::new(Ext4Geometry::mkfs_default(1 << 40), None).unwrap()
}

fn pgpgin_kib(k: &Kernel<ClassicLru>) -> u64 {
    k.core.vm.get(Item::PGPGIN)
}

fn stat_all(k: &mut Kernel<ClassicLru>, e: &mut Ext4, names: &[String], m: MemcgId) {
    for n in names {
        assert_eq!(e.open(k, n, m), Some(true), "{n} exists");
    }
}

#[test]
fn mkfs_default_places_group_0s_inode_table_as_mke2fs() {
    // 256 GiB: 2048 groups, 32 descriptor blocks, 1024 reserved GDT blocks
    // (what this host's GETFSMAP shows for its 256 GiB file system), then
    // flex_bg's 16 block and 16 inode bitmaps.
    let g = Ext4Geometry::mkfs_default(256 << 30);
    assert_eq!(
        (g.inodes_per_group, g.inode_size, g.itable_blocks()),
        (8192, 256, 512)
    );
    assert_eq!(g.itable0, 1 + 32 + 1024 + 32);
    // A 1 GiB disk: 8 groups, one descriptor block, room to grow 1024-fold
    // (8192 groups: 128 blocks of descriptors, less the one in use).
    assert_eq!(
        Ext4Geometry::mkfs_default(1 << 30).itable0,
        1 + 1 + 127 + 16
    );
    assert!(g.check().is_ok());
    let mut bad = g.clone();
    bad.inode_readahead_blks = 24;
    assert!(bad.check().unwrap_err().contains("power of 2"));
    bad = g;
    bad.block_size = 1024;
    assert!(bad.check().unwrap_err().contains("block size 1024"));
}

/// After drop_caches nothing is cached: stats read the directory and the
/// inode tables; a second pass over the same names reads nothing; after
/// drop_caches again the same blocks are read again.
#[test]
fn stat_reads_after_drop_caches_and_hits_when_warm() {
    let (mut k, m) = kernel(None);
    let n = names(1200);
    let mut e = mount(&mut k, &own_fs(), &n);
    stat_all(&mut k, &mut e, &n, m);
    let cold = e.blocks_read;
    // Inodes 13..=1212 (directory 12) fill table blocks 0..=75 of the
    // 8192-inode group: the readahead stops at the used part of the table
    // (itable_unused), so exactly those 76 blocks, plus the htree's root
    // and leaves.
    let dir_blocks = e.dir.nr_leaves() as u64 + 1;
    assert!(e.dir.dx, "1200 entries do not fit one block");
    assert_eq!(cold, 76 + dir_blocks);
    assert_eq!(
        pgpgin_kib(&k),
        cold * 4,
        "pgpgin in KiB: one 4 KiB bio per block"
    );
    let pages_before = k.core.memcgs[m as usize].nr_file;
    stat_all(&mut k, &mut e, &n, m);
    assert_eq!(
        e.blocks_read, cold,
        "warm: dcache and icache hits read nothing"
    );
    assert_eq!(pgpgin_kib(&k), cold * 4);
    assert_eq!(k.core.memcgs[m as usize].nr_file, pages_before);
    e.drop_caches(&mut k);
    assert_eq!(
        k.core.files[e.bdev as usize].nrpages, 0,
        "bdev pages dropped"
    );
    assert_eq!(k.core.memcgs[m as usize].nr_file, 0);
    stat_all(&mut k, &mut e, &n, m);
    assert_eq!(e.blocks_read, 2 * cold, "the same blocks once more");
    k.core.check_core_invariants().unwrap();
}

/// Metadata pages are ordinary page-cache folios of the block device:
/// charged to the task's memcg (memory.stat `file`, v1's pgpgin charge
/// events) and counted in /proc/vmstat pgpgin.
#[test]
fn metadata_pages_are_charged_and_counted() {
    let (mut k, m) = kernel(Some(1 << 16));
    let n = names(300);
    let mut e = mount(&mut k, &own_fs(), &n);
    stat_all(&mut k, &mut e, &n, m);
    let bdev_pages = k.core.files[e.bdev as usize].nrpages;
    assert_eq!(bdev_pages, e.blocks_read);
    assert_eq!(k.core.memcgs[m as usize].nr_file, bdev_pages);
    assert_eq!(
        k.core.memcgs[m as usize].stat.get(Item::PGPGIN),
        bdev_pages * 4
    );
    assert_eq!(
        k.core.memcgs[m as usize].stat.get(Item::MEMCG_PGPGIN),
        bdev_pages
    );
    assert_eq!(k.core.dev.bytes_read, bdev_pages * PAGE_SIZE);
}

/// A host's layout: two inodes 100 table blocks apart in one group, the
/// table at an aligned block. Each read takes its readahead window of
/// inode_readahead_blks + 1 blocks (the kernel's loop includes its end);
/// with readahead off only the two blocks are read.
#[test]
fn inode_readahead_window_on_a_measured_layout() {
    let mut geo = Ext4Geometry::mkfs_default(1 << 40);
    geo.flex_bg_size = 1;
    let layout = |ino_b| Ext4Layout {
        dir_ino: 2 * 8192 + 5,
        dir_blocks: 1,
        files: vec![
            LaidOutFile {
                name: "a".into(),
                ino: 2 * 8192 + 1,
                data_block: None,
            },
            LaidOutFile {
                name: "b".into(),
                ino: ino_b,
                data_block: None,
            },
        ],
        itables: BTreeMap::from([(2, 2 * 32768 + 4096)]),
    };
    let ab = ["a".to_string(), "b".to_string()];
    for (ra, want) in [(32, 1 + 33 + 33), (0, 1 + 1 + 1), (8, 1 + 9 + 9)] {
        let (mut k, m) = kernel(None);
        geo.inode_readahead_blks = ra;
        let cfg = Ext4Config::new(geo.clone(), Some(layout(2 * 8192 + 1 + 16 * 100))).unwrap();
        let mut e = mount(&mut k, &cfg, &ab);
        stat_all(&mut k, &mut e, &ab, m);
        assert_eq!(e.blocks_read, want, "inode_readahead_blks {ra}");
        let b = e.itable_block(2 * 8192 + 1 + 16 * 100);
        assert_eq!(b, 2 * 32768 + 4096 + 100);
        assert!(e.cached(&k, b));
        // The window: from the block rounded down to ra, ra + 1 blocks.
        if ra > 0 {
            let start = b & !(ra - 1);
            assert!((start..=start + ra).all(|x| e.cached(&k, x)));
            assert!(!e.cached(&k, start - 1) && !e.cached(&k, start + ra + 1));
        }
    }
    // The two inodes in one window: one read covers both.
    let (mut k, m) = kernel(None);
    geo.inode_readahead_blks = 32;
    let cfg = Ext4Config::new(geo, Some(layout(2 * 8192 + 1 + 16 * 20))).unwrap();
    let mut e = mount(&mut k, &cfg, &ab);
    stat_all(&mut k, &mut e, &ab, m);
    assert_eq!(e.blocks_read, 1 + 33);
}

/// An htree's leaves hold what their blocks can, each lookup reads the
/// root and one leaf, and lookups of every name read each block once.
#[test]
fn htree_directory_blocks() {
    let geo = Ext4Geometry::mkfs_default(1 << 40);
    let n = names(5000);
    let mut d = namei::Dir::new(12);
    let refs: Vec<&str> = n.iter().map(String::as_str).collect();
    d.lay_out(&geo, &refs, None);
    assert!(d.dx);
    let bytes: u64 = n
        .iter()
        .map(|s| namei::ext4_dir_rec_len(s.len()) as u64)
        .sum();
    let cap = geo.block_size - 12;
    let leaves = d.nr_leaves() as u64;
    assert!(
        leaves >= bytes.div_ceil(cap),
        "{leaves} leaves hold {bytes} bytes"
    );
    // Splits leave leaves at least half full, so at most twice the minimum.
    assert!(leaves <= 2 * bytes.div_ceil(cap) + 1, "{leaves}");
    assert_eq!(d.nblocks, leaves + 1, "root + leaves");
    // A single small directory stays linear.
    let mut small = namei::Dir::new(12);
    small.lay_out(&geo, &refs[..100], None);
    assert!(!small.dx);
    assert_eq!(small.nblocks, 1);
    // Lookups read each block once.
    let (mut k, m) = kernel(None);
    let mut e = mount(&mut k, &own_fs(), &n);
    let before_itable = {
        let mut x = 0;
        for name in &n {
            e.ext4_lookup(&mut k, name, m).unwrap().expect("exists");
            x = e.blocks_read;
        }
        x
    };
    assert_eq!(before_itable, e.dir.nblocks);
}

/// unlink: the lookups and inodes as for stat, then the inode bitmap of
/// the inodes' group and the block bitmap of the data's group (read once),
/// and two buddy-cache pages of that group built in memory (charged, not
/// read). The names are gone afterwards.
#[test]
fn unlink_reads_bitmaps_once_per_group() {
    let (mut k, m) = kernel(None);
    let n = names(200);
    let mut e = mount(&mut k, &own_fs(), &n);
    stat_all(&mut k, &mut e, &n, m);
    let after_stat = e.blocks_read;
    for name in &n {
        assert_eq!(e.ext4_unlink(&mut k, name, m), Some(true));
    }
    assert_eq!(
        e.blocks_read,
        after_stat + 2,
        "one inode bitmap, one block bitmap"
    );
    assert_eq!(e.blocks_zeroed, 2, "the group's bitmap and buddy pages");
    assert_eq!(k.core.files[e.buddy as usize].nrpages, 2);
    assert_eq!(
        k.core.memcgs[m as usize].nr_file,
        k.core.files[e.bdev as usize].nrpages + 2
    );
    assert_eq!(e.open(&mut k, &n[0], m), Some(false), "ENOENT after unlink");
    assert_eq!(e.ext4_unlink(&mut k, &n[0], m), Some(false));
}

/// create on the model's own file system: the inode bitmap is read, and a
/// new inode alone in its table block needs no read (the block is zeroed);
/// one sharing a block with a used inode reads the block.
#[test]
fn create_takes_the_lowest_free_inode() {
    let (mut k, m) = kernel(None);
    let mut e = mount(&mut k, &own_fs(), &[]);
    // Inodes 1..=12 are used (reserved, lost+found, the directory): the
    // first new one is 13, in table block 0 with 1..=12.
    assert_eq!(e.ext4_create(&mut k, "new0", m), Some(true));
    assert_eq!(e.files["new0"].ino, 13);
    let r = e.blocks_read;
    // dir block 0 (lookup) + inode bitmap + table block 0 with readahead
    // capped at the used table (block 0 only).
    assert_eq!(r, 1 + 1 + 1);
    for i in 1..4 {
        assert_eq!(e.ext4_create(&mut k, &format!("new{i}"), m), Some(true));
    }
    assert_eq!(e.files["new3"].ino, 16);
    // Inode 17 opens table block 1: alone there, the bitmap cached, so
    // the block is zeroed, not read.
    let z = e.blocks_zeroed;
    for i in 4..8 {
        e.ext4_create(&mut k, &format!("new{i}"), m).unwrap();
    }
    assert_eq!(e.blocks_read, r, "nothing more read");
    assert_eq!(e.blocks_zeroed, z + 1);
    assert_eq!(
        e.ext4_create(&mut k, "new0", m),
        Some(false),
        "exists: opened"
    );
}

/// The same inputs give the same reads, in the same order.
#[test]
fn deterministic() {
    let run = || {
        let (mut k, m) = kernel(Some(1 << 12));
        let n = names(2000);
        let mut e = mount(&mut k, &own_fs(), &n);
        stat_all(&mut k, &mut e, &n, m);
        for name in &n[..500] {
            e.ext4_unlink(&mut k, name, m).unwrap();
        }
        (e.blocks_read, k.core.now, k.core.vm.0.to_vec())
    };
    assert_eq!(run(), run());
}
