//! The host's ext4, measured for the model: the geometry (statfs, the
//! group count in /proc/fs/ext4/DEV/mb_groups, the inode tables'
//! places from the FS_IOC_GETFSMAP ioctl, inode_readahead_blks from sysfs)
//! and, after a case's files are laid out, their inode numbers (stat),
//! first data blocks (FS_IOC_FIEMAP) and their directory's size. All of
//! it is read from the mounted file system; the block device itself is
//! never opened.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;

/// The superblock's numbers the model needs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ext4Host {
    pub block_size: u64,
    pub blocks_per_group: u64,
    pub inodes_per_group: u64,
    pub inode_size: u64,
    /// /sys/fs/ext4/DEV/inode_readahead_blks.
    pub inode_readahead_blks: u64,
    /// flex_bg's group count as the inode tables show it (1: none).
    pub flex_bg_size: u64,
}

/// A case's files as the oracle laid them out (before a run).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileLayout {
    pub dir_ino: u64,
    pub dir_blocks: u64,
    /// (name, inode, first data block)
    pub files: Vec<(String, u64, Option<u64>)>,
    /// First inode-table block of each group holding one of the inodes.
    pub itables: BTreeMap<u64, u64>,
}

// include/uapi/linux/fsmap.h and fiemap.h.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Fsmap {
    fmr_device: u32,
    fmr_flags: u32,
    fmr_physical: u64,
    fmr_owner: u64,
    fmr_offset: u64,
    fmr_length: u64,
    fmr_reserved: [u64; 3],
}

const FSMAP_RECS: usize = 32;

#[repr(C)]
struct FsmapHead {
    fmh_iflags: u32,
    fmh_oflags: u32,
    fmh_count: u32,
    fmh_entries: u32,
    fmh_reserved: [u64; 6],
    fmh_keys: [Fsmap; 2],
    recs: [Fsmap; FSMAP_RECS],
}

/// _IOWR('X', 59, struct fsmap_head)
const FS_IOC_GETFSMAP: u64 = 0xC0C0_583B;
/// FMR_OWNER('X', 5): ext4's inode tables (fs/ext4/fsmap.h).
const EXT4_FMR_OWN_INODES: u64 = (b'X' as u64) << 32 | 5;

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct FiemapExtent {
    fe_logical: u64,
    fe_physical: u64,
    fe_length: u64,
    fe_reserved64: [u64; 2],
    fe_flags: u32,
    fe_reserved: [u32; 3],
}

#[repr(C)]
struct Fiemap {
    fm_start: u64,
    fm_length: u64,
    fm_flags: u32,
    fm_mapped_extents: u32,
    fm_extent_count: u32,
    fm_reserved: u32,
    fm_extents: [FiemapExtent; 1],
}

/// _IOWR('f', 11, struct fiemap)
const FS_IOC_FIEMAP: u64 = 0xC020_660B;

/// The inode-table extents (start block, length in blocks) among the
/// first records of physical range [lo, hi) blocks. The low key must name
/// the file system's device (new_encode_dev()) as the records do, or the
/// ioctl starts from the device's first block; `lo == 0` needs none.
fn itable_records(f: &fs::File, bs: u64, lo: u64, hi: u64) -> Result<Vec<(u64, u64)>, String> {
    Ok(fsmap(f, bs, lo, hi)?
        .iter()
        .filter(|r| r.fmr_owner == EXT4_FMR_OWN_INODES)
        .map(|r| (r.fmr_physical / bs, r.fmr_length / bs))
        .collect())
}

fn fsmap(f: &fs::File, bs: u64, lo: u64, hi: u64) -> Result<Vec<Fsmap>, String> {
    let dev = if lo == 0 {
        0
    } else {
        fsmap(f, bs, 0, 1)?.first().map_or(0, |r| r.fmr_device)
    };
    let mut h = FsmapHead {
        fmh_iflags: 0,
        fmh_oflags: 0,
        fmh_count: FSMAP_RECS as u32,
        fmh_entries: 0,
        fmh_reserved: [0; 6],
        fmh_keys: [Fsmap::default(); 2],
        recs: [Fsmap::default(); FSMAP_RECS],
    };
    h.fmh_keys[0].fmr_device = dev;
    h.fmh_keys[0].fmr_physical = lo * bs;
    h.fmh_keys[1] = Fsmap {
        fmr_device: u32::MAX,
        fmr_flags: u32::MAX,
        fmr_physical: hi * bs - 1,
        fmr_owner: u64::MAX,
        fmr_offset: u64::MAX,
        fmr_length: u64::MAX,
        fmr_reserved: [0; 3],
    };
    // SAFETY: `h` is a fsmap_head followed by room for fmh_count records,
    // as the ioctl expects; the fd is open.
    let r = unsafe {
        libc::ioctl(
            f.as_raw_fd(),
            FS_IOC_GETFSMAP as _,
            &mut h as *mut FsmapHead,
        )
    };
    if r != 0 {
        return Err(format!(
            "FS_IOC_GETFSMAP: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(h.recs[..(h.fmh_entries as usize).min(FSMAP_RECS)].to_vec())
}

/// Reads the geometry of the ext4 file system holding `dir`, whose block
/// device is `dev` (its name under /sys/fs/ext4 and /proc/fs/ext4).
pub fn read_ext4(dir: &Path, dev: &str) -> Result<Ext4Host, String> {
    let mut sf: libc::statfs = unsafe { std::mem::zeroed() };
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())
        .map_err(|_| format!("{}: NUL in path", dir.display()))?;
    // SAFETY: a valid C string and a statfs buffer.
    if unsafe { libc::statfs(c.as_ptr(), &mut sf) } != 0 {
        return Err(format!(
            "statfs {}: {}",
            dir.display(),
            std::io::Error::last_os_error()
        ));
    }
    let bs = sf.f_bsize as u64;
    let mbg = format!("/proc/fs/ext4/{dev}/mb_groups");
    let groups = fs::read_to_string(&mbg)
        .map_err(|e| format!("{mbg}: {e}"))?
        .lines()
        .filter(|l| l.starts_with('#') && !l.starts_with("#group"))
        .count() as u64;
    if groups == 0 || bs == 0 {
        return Err(format!("{mbg}: no groups"));
    }
    let ipg = sf.f_files as u64 / groups;
    // ext4 allows at most 8 * block size blocks per group, and mke2fs
    // takes that; the inode tables' places below check it.
    let bpg = 8 * bs;
    let f = fs::File::open(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let t0 = itable_records(&f, bs, 0, bpg)?;
    let &(_, len0) = t0.first().ok_or("GETFSMAP: no inode table in group 0")?;
    // Without flex_bg group 1 has its own table; with it, group 0 holds
    // the tables of the whole flex group, in one record.
    let flex = if !itable_records(&f, bs, bpg, 2 * bpg)?.is_empty() {
        1
    } else {
        (2..=groups.min(1 << 16))
            .find(|&g| {
                !itable_records(&f, bs, g * bpg, (g + 1) * bpg)
                    .unwrap_or_default()
                    .is_empty()
            })
            .unwrap_or(groups)
    };
    let itable_blocks = len0 / flex;
    if itable_blocks == 0 || ipg == 0 || !(itable_blocks * bs).is_multiple_of(ipg) {
        return Err(format!(
            "ext4 geometry of {}: {ipg} inodes per group in {itable_blocks} table blocks",
            dir.display()
        ));
    }
    let ra = format!("/sys/fs/ext4/{dev}/inode_readahead_blks");
    let inode_readahead_blks = fs::read_to_string(&ra)
        .map_err(|e| format!("{ra}: {e}"))?
        .trim()
        .parse()
        .map_err(|_| format!("{ra}: not a number"))?;
    Ok(Ext4Host {
        block_size: bs,
        blocks_per_group: bpg,
        inodes_per_group: ipg,
        inode_size: itable_blocks * bs / ipg,
        inode_readahead_blks,
        flex_bg_size: flex,
    })
}

/// The first inode-table block of group `g`: its own table, or its place
/// in its flex group's (packed in the flex group's first group).
fn itable_of(f: &fs::File, geo: &Ext4Host, g: u64) -> Result<u64, String> {
    let bpg = geo.blocks_per_group;
    let first = g / geo.flex_bg_size * geo.flex_bg_size;
    let blocks = geo.inodes_per_group * geo.inode_size / geo.block_size;
    let t = itable_records(f, geo.block_size, first * bpg, (first + 1) * bpg)?;
    let &(start, _) = t
        .first()
        .ok_or_else(|| format!("GETFSMAP: no inode table for group {g}"))?;
    Ok(start + (g - first) * blocks)
}

/// The first physical block of `p`'s data (None: no blocks).
fn first_block(p: &Path, bs: u64) -> Result<Option<u64>, String> {
    let f = fs::File::open(p).map_err(|e| format!("{}: {e}", p.display()))?;
    let mut m = Fiemap {
        fm_start: 0,
        fm_length: u64::MAX,
        // FIEMAP_FLAG_SYNC: delayed allocation gets its blocks first.
        fm_flags: 1,
        fm_mapped_extents: 0,
        fm_extent_count: 1,
        fm_reserved: 0,
        fm_extents: [FiemapExtent::default()],
    };
    // SAFETY: a fiemap with room for fm_extent_count extents; fd open.
    let r = unsafe { libc::ioctl(f.as_raw_fd(), FS_IOC_FIEMAP as _, &mut m as *mut Fiemap) };
    if r != 0 {
        return Err(format!(
            "{}: FS_IOC_FIEMAP: {}",
            p.display(),
            std::io::Error::last_os_error()
        ));
    }
    Ok((m.fm_mapped_extents > 0).then(|| m.fm_extents[0].fe_physical / bs))
}

/// The regular files directly in `dir` (not the oracle's own job files)
/// with their inodes and first data blocks, the directory's inode and
/// size, and the inode tables of their groups.
pub fn read_layout(dir: &Path, geo: &Ext4Host) -> Result<FileLayout, String> {
    let md = fs::metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut files = Vec::new();
    let rd = fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for e in rd.flatten() {
        let p = e.path();
        let m = fs::symlink_metadata(&p).map_err(|err| format!("{}: {err}", p.display()))?;
        if !m.is_file() {
            continue;
        }
        let name = e.file_name().to_string_lossy().into_owned();
        files.push((name, m.ino(), first_block(&p, geo.block_size)?));
    }
    files.sort();
    let f = fs::File::open(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut itables = BTreeMap::new();
    for ino in files.iter().map(|x| x.1).chain([md.ino()]) {
        let g = (ino - 1) / geo.inodes_per_group;
        if let std::collections::btree_map::Entry::Vacant(v) = itables.entry(g) {
            v.insert(itable_of(&f, geo, g)?);
        }
    }
    Ok(FileLayout {
        dir_ino: md.ino(),
        dir_blocks: md.size() / geo.block_size,
        files,
        itables,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ioctl_numbers_match_the_uapi_encoding() {
        // _IOC(dir=READ|WRITE, type, nr, size) = dir << 30 | size << 16 | type << 8 | nr
        let iowr =
            |t: u8, nr: u64, size: usize| 3u64 << 30 | (size as u64) << 16 | (t as u64) << 8 | nr;
        let head = std::mem::size_of::<FsmapHead>() - FSMAP_RECS * std::mem::size_of::<Fsmap>();
        assert_eq!(std::mem::size_of::<Fsmap>(), 64);
        assert_eq!(FS_IOC_GETFSMAP, iowr(b'X', 59, head));
        let fiemap = std::mem::size_of::<Fiemap>() - std::mem::size_of::<FiemapExtent>();
        assert_eq!(std::mem::size_of::<FiemapExtent>(), 56);
        assert_eq!(FS_IOC_FIEMAP, iowr(b'f', 11, fiemap));
    }

    /// On an ext4 host, the geometry of the temporary directory's file
    /// system reads back consistent and a new file's inode, block and
    /// inode table are found. Skipped elsewhere, and without root; under
    /// CI=true (root on ext4) that fails.
    #[test]
    fn reads_this_hosts_ext4_when_there_is_one() {
        let tmp = std::env::temp_dir();
        let base = tmp.as_path();
        let dev = match crate::host::read_host(base) {
            Ok(h) if h.fs_type == "ext4" && !h.block_device.is_empty() => h.block_device,
            h => {
                let what = h.map_or_else(
                    |e| e,
                    |h| format!("{:?} on {:?}", h.fs_type, h.block_device),
                );
                crate::require::skip(&format!(
                    "{} is not on ext4 with a block device: {what}",
                    base.display()
                ));
                return;
            }
        };
        let geo = match read_ext4(base, &dev) {
            Ok(g) => g,
            // GETFSMAP needs CAP_SYS_ADMIN.
            Err(e) if e.contains("GETFSMAP") && unsafe { libc::geteuid() } != 0 => {
                crate::require::skip(&format!("not root ({e})"));
                return;
            }
            Err(e) => panic!("{e}"),
        };
        assert!(
            geo.block_size.is_power_of_two() && geo.inode_size.is_power_of_two(),
            "{geo:?}"
        );
        assert_eq!(geo.inodes_per_group * geo.inode_size % geo.block_size, 0);
        let d = base.join(format!("foliosim-ext4-layout-{}", std::process::id()));
        fs::create_dir_all(&d).unwrap();
        fs::write(d.join("f"), vec![1u8; 8192]).unwrap();
        let l = read_layout(&d, &geo);
        fs::remove_dir_all(&d).unwrap();
        let l = l.unwrap();
        assert_eq!(l.files.len(), 1);
        assert_eq!(l.files[0].0, "f");
        assert!(l.files[0].2.is_some(), "FIEMAP_FLAG_SYNC: it has a block");
        assert_eq!(l.dir_blocks, 1);
        let g = (l.files[0].1 - 1) / geo.inodes_per_group;
        assert!(l.itables.contains_key(&g));
    }
}
