//! The host's page-cache folio sizes, as the kernel shows them: a file's
//! resident pages (mincore) are mapped and touched (no I/O: they are
//! cached), each page's PFN comes from /proc/self/pagemap and its
//! KPF_COMPOUND_HEAD / KPF_COMPOUND_TAIL bits from /proc/kpageflags (both
//! need root). oracle/qemu/folioprobe.c is the same reading in C, for
//! guests.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;

const KPF_COMPOUND_TAIL: u64 = 16;
/// The largest order counted (MAX_PAGECACHE_ORDER on x86-64); larger
/// runs go in with it.
pub const MAX_ORDER: u32 = 9;

/// The resident folios of the regular files at `path` (a file, or a
/// directory's regular files, not recursing), counted by order.
pub fn folio_orders(path: &Path) -> Result<BTreeMap<u32, u64>, String> {
    let mut h = BTreeMap::new();
    let files: Vec<std::path::PathBuf> = if path.is_dir() {
        let mut v: Vec<_> = std::fs::read_dir(path)
            .map_err(|e| format!("{}: {e}", path.display()))?
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .map(|e| e.path())
            .collect();
        v.sort();
        v
    } else {
        vec![path.to_path_buf()]
    };
    let pagemap =
        File::open("/proc/self/pagemap").map_err(|e| format!("/proc/self/pagemap: {e}"))?;
    let kpf = File::open("/proc/kpageflags").map_err(|e| format!("/proc/kpageflags: {e}"))?;
    for f in files {
        file_orders(&f, &pagemap, &kpf, &mut h)?;
    }
    Ok(h)
}

fn file_orders(
    path: &Path,
    pagemap: &File,
    kpf: &File,
    h: &mut BTreeMap<u32, u64>,
) -> Result<(), String> {
    let err = |what: &str, e: std::io::Error| format!("{}: {what}: {e}", path.display());
    let file = File::open(path).map_err(|e| err("open", e))?;
    let len = file.metadata().map_err(|e| err("stat", e))?.len() as usize;
    if len == 0 {
        return Ok(());
    }
    // SAFETY: sysconf has no preconditions.
    let psz = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
    let pages = len.div_ceil(psz);
    // SAFETY: a fresh shared read-only mapping of an open file; unmapped
    // below, never handed out.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            pages * psz,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(err("mmap", std::io::Error::last_os_error()));
    }
    let mut resident = vec![0u8; pages];
    // SAFETY: `p` maps `pages` pages; `resident` has one byte per page.
    let rc = unsafe { libc::mincore(p, pages * psz, resident.as_mut_ptr()) };
    let result = (|| {
        if rc != 0 {
            return Err(err("mincore", std::io::Error::last_os_error()));
        }
        let mut run = 0u64;
        let end_run = |run: &mut u64, h: &mut BTreeMap<u32, u64>| {
            if *run > 0 {
                let order = (64 - (*run - 1).leading_zeros()).min(MAX_ORDER);
                *h.entry(order).or_insert(0) += 1;
                *run = 0;
            }
        };
        let base = p as usize / psz;
        for i in 0..pages {
            if resident[i] & 1 == 0 {
                end_run(&mut run, h);
                continue;
            }
            // SAFETY: page `i` of the mapping is resident: reading it maps
            // it without I/O.
            unsafe { std::ptr::read_volatile((p as *const u8).add(i * psz)) };
            let mut ent = [0u8; 8];
            pagemap
                .read_exact_at(&mut ent, ((base + i) * 8) as u64)
                .map_err(|e| err("pagemap", e))?;
            let ent = u64::from_ne_bytes(ent);
            let pfn = ent & ((1 << 55) - 1);
            if ent >> 63 == 0 || pfn == 0 {
                return Err(format!(
                    "{}: no PFN for a resident page (not root?)",
                    path.display()
                ));
            }
            let mut fl = [0u8; 8];
            kpf.read_exact_at(&mut fl, pfn * 8)
                .map_err(|e| err("kpageflags", e))?;
            let tail = u64::from_ne_bytes(fl) >> KPF_COMPOUND_TAIL & 1 == 1;
            if tail && run > 0 {
                run += 1;
            } else {
                end_run(&mut run, h);
                run = 1;
            }
        }
        end_run(&mut run, h);
        Ok(())
    })();
    // SAFETY: unmapping the mapping made above.
    unsafe { libc::munmap(p, pages * psz) };
    result
}
