//! What of the files other processes have mapped is in the page cache when
//! a recording starts. drop_caches frees clean page cache that nothing
//! maps, so the shared libraries and executables every running process
//! maps stay cached: a cold-cache run still finds libc, ld.so and the
//! shell resident, and its first faults on them are minor. The trace
//! carries those pages (`C` lines) so that the replay starts as warm.
//!
//! Nothing is read: each file is mapped (PROT_READ) and asked with
//! mincore(2), which does not fault pages in.

use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};

/// (major, minor, inode) → the resident page ranges (first, pages).
pub type Residency = HashMap<(u32, u32, u64), Vec<(u64, u64)>>;

/// The cached pages of every regular file mapped by a process on the host
/// now, except `skip` (the recorder's child, a copy of the recorder).
pub fn mapped_files_residency(skip: i32) -> Residency {
    let mut seen: HashMap<(u32, u32, u64), String> = HashMap::new();
    let Ok(dir) = fs::read_dir("/proc") else {
        return Residency::new();
    };
    let mut pids: Vec<i32> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&p| p != skip)
        .collect();
    pids.sort_unstable();
    for pid in pids {
        let Ok(maps) = fs::read_to_string(format!("/proc/{pid}/maps")) else {
            continue; // gone, or a kernel thread
        };
        for l in maps.lines() {
            if let Some((key, range)) = parse_maps_line(l) {
                seen.entry(key)
                    .or_insert_with(|| format!("/proc/{pid}/map_files/{range}"));
            }
        }
    }
    let mut out = Residency::new();
    for (key, path) in seen {
        if let Some(r) = resident_ranges(&path) {
            if !r.is_empty() {
                out.insert(key, r);
            }
        }
    }
    out
}

/// A /proc/PID/maps line's file: its (major, minor, inode) and address
/// range `START-END`; None for anonymous and special mappings.
fn parse_maps_line(l: &str) -> Option<((u32, u32, u64), &str)> {
    let mut f = l.split_ascii_whitespace();
    let range = f.next()?;
    let _perms = f.next()?;
    let _off = f.next()?;
    let (maj, min) = f.next()?.split_once(':')?;
    let ino: u64 = f.next()?.parse().ok()?;
    if ino == 0 || !f.next()?.starts_with('/') {
        return None;
    }
    let key = (
        u32::from_str_radix(maj, 16).ok()?,
        u32::from_str_radix(min, 16).ok()?,
        ino,
    );
    Some((key, range))
}

/// The resident ranges of the regular file behind `path`, by mincore.
fn resident_ranges(path: &str) -> Option<Vec<(u64, u64)>> {
    let f = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOATIME)
        .open(path)
        .or_else(|_| {
            // O_NOATIME needs the file's owner or CAP_FOWNER.
            fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
                .open(path)
        })
        .ok()?;
    let m = f.metadata().ok()?;
    let size = m.size();
    if !m.is_file() || size == 0 {
        return None;
    }
    let pages = size.div_ceil(4096) as usize;
    use std::os::fd::AsRawFd;
    // SAFETY: a read-only shared mapping of an open regular file, of its
    // size; unmapped below, never dereferenced.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size as usize,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return None;
    }
    let mut vec = vec![0u8; pages];
    // SAFETY: `vec` holds one byte for each page of the mapping.
    let rc = unsafe { libc::mincore(addr, size as usize, vec.as_mut_ptr()) };
    // SAFETY: the mapping made above.
    unsafe { libc::munmap(addr, size as usize) };
    if rc != 0 {
        return None;
    }
    Some(ranges(&vec))
}

/// Runs of resident pages (mincore's low bit) as (first, pages).
fn ranges(vec: &[u8]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, b) in vec.iter().chain(std::iter::once(&0)).enumerate() {
        match (b & 1 != 0, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push((s as u64, (i - s) as u64));
                start = None;
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines_name_files_only() {
        let l = "7f12a000-7f12c000 r-xp 00002000 fe:00 329341                     /usr/lib/x86_64-linux-gnu/libc.so.6";
        assert_eq!(
            parse_maps_line(l),
            Some(((254, 0, 329341), "7f12a000-7f12c000"))
        );
        assert_eq!(
            parse_maps_line("7ffd000-7ffe000 rw-p 00000000 00:00 0                  [stack]"),
            None
        );
        assert_eq!(
            parse_maps_line("55d0000-55d1000 rw-p 00000000 00:00 0 "),
            None
        );
    }

    #[test]
    fn runs_of_resident_pages() {
        assert_eq!(
            ranges(&[1, 1, 0, 0, 1, 3, 0, 1]),
            vec![(0, 2), (4, 2), (7, 1)]
        );
        assert_eq!(ranges(&[0, 0]), vec![]);
    }

    /// This test's own executable is mapped and, having just been run,
    /// resident: the scan must find at least its first page.
    #[test]
    fn the_running_executable_is_found_resident() {
        let exe = fs::metadata("/proc/self/exe").unwrap();
        let key = (libc::major(exe.dev()), libc::minor(exe.dev()), exe.ino());
        let r = mapped_files_residency(-1);
        let pages: u64 = r.get(&key).map_or(0, |v| v.iter().map(|x| x.1).sum());
        assert!(pages > 0, "{key:?} not resident in {} files", r.len());
    }
}
