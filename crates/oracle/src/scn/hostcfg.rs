//! Host changes a scenario run needs, each journaled before it is made and
//! undone on drop (and by `foliosim oracle restore` after a kill -9): a zram
//! swap device, a tmpfs mounted in scratch, sysctl values.

use crate::journal::{self, Kind, Token};
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The zram device the oracle uses. It is only taken when unused (disksize
/// 0); hot_add is not needed on this host.
pub const ZRAM_SYSFS: &str = "/sys/block/zram0";
pub const ZRAM_NODE: &str = "/dev/zram0";
/// zram's default compressor on 6.x kernels.
pub const ZRAM_COMP: &str = "lzo-rle";

/// What to write to comp_algorithm, given what it reads ("lzo [lzo-rle]
/// lz4"): ZRAM_COMP where the kernel offers it and it is not already the
/// current one; None to keep the kernel's default otherwise (Debian's 7.x
/// builds only lz4 and zstd).
pub fn zram_comp_to_set(listing: &str) -> Option<&'static str> {
    let offered = listing.split_whitespace().any(|a| a == ZRAM_COMP);
    offered.then_some(ZRAM_COMP)
}

fn read_trim(p: &Path) -> Result<String, String> {
    fs::read_to_string(p)
        .map(|s| s.trim().to_string())
        .map_err(|e| format!("{}: {e}", p.display()))
}

/// The swap areas active now (the first column of /proc/swaps).
pub fn active_swaps() -> Vec<String> {
    fs::read_to_string("/proc/swaps")
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .collect()
}

/// Why /dev/zram0 cannot be used as the run's swap, or None.
pub fn zram_unusable() -> Option<String> {
    let d = Path::new(ZRAM_SYSFS);
    if !d.exists() || !Path::new(ZRAM_NODE).exists() {
        return Some(format!("no zram device ({ZRAM_SYSFS}; modprobe zram)"));
    }
    match read_trim(&d.join("disksize")) {
        Ok(s) if s == "0" => {}
        Ok(s) => return Some(format!("{ZRAM_SYSFS} is in use (disksize {s})")),
        Err(e) => return Some(e),
    }
    if active_swaps().iter().any(|s| s == ZRAM_NODE) {
        return Some(format!("{ZRAM_NODE} is already swapped on"));
    }
    None
}

/// A swap header (version 1) for a `size`-byte area of 4 KiB pages: the
/// kernel's `union swap_header` layout (sys_swapon reads version, last_page
/// and nr_badpages after the 1024-byte boot block, and the magic in the
/// last 10 bytes of the first page).
pub fn swap_header(size: u64) -> Vec<u8> {
    let mut page = vec![0u8; 4096];
    let last_page = (size / 4096).saturating_sub(1) as u32;
    page[1024..1028].copy_from_slice(&1u32.to_ne_bytes());
    page[1028..1032].copy_from_slice(&last_page.to_ne_bytes());
    // nr_badpages 0, uuid and label left zero.
    page[4096 - 10..].copy_from_slice(b"SWAPSPACE2");
    page
}

fn swapon(p: &Path) -> Result<(), String> {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes())
        .map_err(|_| format!("{}: NUL in path", p.display()))?;
    // SAFETY: a NUL-terminated path; flags 0 (default priority).
    if unsafe { libc::swapon(c.as_ptr(), 0) } == 0 {
        Ok(())
    } else {
        Err(format!(
            "swapon {}: {}",
            p.display(),
            std::io::Error::last_os_error()
        ))
    }
}

/// zram0 set up as a swap device of `size` bytes; swapoff and reset on drop.
pub struct ZramSwap {
    zram: Option<Token>,
    swap: Option<Token>,
}

impl ZramSwap {
    pub fn setup(size: u64) -> Result<ZramSwap, String> {
        if let Some(why) = zram_unusable() {
            return Err(why);
        }
        let d = Path::new(ZRAM_SYSFS);
        let mut z = ZramSwap {
            zram: Some(journal::record(Kind::Zram, d, "")?),
            swap: None,
        };
        // The compressor can only be chosen before disksize is set.
        let listing = read_trim(&d.join("comp_algorithm"))?;
        if let Some(a) = zram_comp_to_set(&listing) {
            write(&d.join("comp_algorithm"), a)?;
        }
        write(&d.join("disksize"), &size.to_string())?;
        let mut f = OpenOptions::new()
            .write(true)
            .open(ZRAM_NODE)
            .map_err(|e| format!("{ZRAM_NODE}: {e}"))?;
        f.write_all(&swap_header(size))
            .and_then(|_| f.sync_all())
            .map_err(|e| format!("writing a swap header to {ZRAM_NODE}: {e}"))?;
        drop(f);
        let t = journal::record(Kind::Swap, Path::new(ZRAM_NODE), "")?;
        if let Err(e) = swapon(Path::new(ZRAM_NODE)) {
            t.done();
            return Err(e);
        }
        z.swap = Some(t);
        Ok(z)
    }
}

impl Drop for ZramSwap {
    fn drop(&mut self) {
        if let Some(t) = self.swap.take() {
            match journal::swapoff(Path::new(ZRAM_NODE)) {
                Ok(()) => t.done(),
                Err(e) if journal::is_not_swap(&e) => t.done(),
                Err(e) => {
                    eprintln!("foliosim oracle: swapoff {ZRAM_NODE}: {e}");
                    return; // both records stay for the next oracle start
                }
            }
        }
        if let Some(t) = self.zram.take() {
            match fs::write(Path::new(ZRAM_SYSFS).join("reset"), "1") {
                Ok(()) => t.done(),
                Err(e) => eprintln!("foliosim oracle: resetting {ZRAM_SYSFS}: {e}"),
            }
        }
    }
}

/// A swap file in scratch (disk swap); swapoff and removal on drop.
pub struct SwapFile {
    path: PathBuf,
    file: Option<Token>,
    swap: Option<Token>,
}

impl SwapFile {
    pub fn setup(path: &Path, size: u64) -> Result<SwapFile, String> {
        use std::os::unix::fs::PermissionsExt;
        let mut s = SwapFile {
            path: path.to_path_buf(),
            file: Some(journal::record(Kind::Path, path, "")?),
            swap: None,
        };
        // Written, not sparse: swapon refuses a file with holes.
        crate::probe::create_file(path, size)?;
        fs::set_permissions(path, fs::Permissions::from_mode(0o600))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let mut f = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        f.write_all(&swap_header(size))
            .and_then(|_| f.sync_all())
            .map_err(|e| format!("writing a swap header to {}: {e}", path.display()))?;
        drop(f);
        let t = journal::record(Kind::Swap, path, "")?;
        if let Err(e) = swapon(path) {
            t.done();
            return Err(e);
        }
        s.swap = Some(t);
        Ok(s)
    }
}

impl Drop for SwapFile {
    fn drop(&mut self) {
        if let Some(t) = self.swap.take() {
            match journal::swapoff(&self.path) {
                Ok(()) => t.done(),
                Err(e) if journal::is_not_swap(&e) => t.done(),
                Err(e) => {
                    eprintln!("foliosim oracle: swapoff {}: {e}", self.path.display());
                    return;
                }
            }
        }
        if let Some(t) = self.file.take() {
            match fs::remove_file(&self.path) {
                Ok(()) => t.done(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => t.done(),
                Err(e) => eprintln!("foliosim oracle: {}: {e}", self.path.display()),
            }
        }
    }
}

fn write(p: &Path, v: &str) -> Result<(), String> {
    fs::write(p, v).map_err(|e| format!("writing '{v}' to {}: {e}", p.display()))
}

/// A filesystem (tmpfs, tracefs) mounted on a directory inside scratch
/// (made for it), nosuid, nodev, noexec; unmounted and removed on drop.
pub struct ScratchMount {
    pub dir: PathBuf,
    dir_token: Option<Token>,
    mount_token: Option<Token>,
}

impl ScratchMount {
    /// A tmpfs of `size` bytes, mode 0700. `huge`: the mount's huge=
    /// option (the scenario parser allows only never, always, within_size
    /// and advise).
    pub fn tmpfs(dir: &Path, size: u64, huge: Option<&str>) -> Result<ScratchMount, String> {
        let huge = match huge {
            None => String::new(),
            Some(h @ ("never" | "always" | "within_size" | "advise")) => format!(",huge={h}"),
            Some(h) => return Err(format!("tmpfs huge={h}: not a huge= option")),
        };
        Self::mount(
            dir,
            "tmpfs",
            "foliosim-tmpfs",
            Some(&format!("size={size},mode=0700{huge}")),
        )
    }

    /// A tracefs (the host's tracing tree, another view of it).
    pub fn tracefs(dir: &Path) -> Result<ScratchMount, String> {
        Self::mount(dir, "tracefs", "nodev", None)
    }

    fn mount(
        dir: &Path,
        fstype: &str,
        source: &str,
        data: Option<&str>,
    ) -> Result<ScratchMount, String> {
        let mut m = ScratchMount {
            dir: dir.to_path_buf(),
            dir_token: Some(journal::record(Kind::Path, dir, "")?),
            mount_token: None,
        };
        fs::create_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let t = journal::record(Kind::Mount, dir, "")?;
        let c = |s: &[u8]| std::ffi::CString::new(s).map_err(|_| format!("{}: NUL", dir.display()));
        let target = c(dir.as_os_str().as_encoded_bytes())?;
        let (fstype_c, source_c) = (c(fstype.as_bytes())?, c(source.as_bytes())?);
        let data = data.map(|d| c(d.as_bytes())).transpose()?;
        // SAFETY: NUL-terminated strings (data optional); a fresh
        // filesystem, no exec/suid/dev.
        let r = unsafe {
            libc::mount(
                source_c.as_ptr(),
                target.as_ptr(),
                fstype_c.as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                data.as_ref()
                    .map_or(std::ptr::null(), |d| d.as_ptr().cast()),
            )
        };
        if r != 0 {
            t.done();
            return Err(format!(
                "mounting a {fstype} on {}: {}",
                dir.display(),
                std::io::Error::last_os_error()
            ));
        }
        m.mount_token = Some(t);
        Ok(m)
    }
}

impl Drop for ScratchMount {
    fn drop(&mut self) {
        if let Some(t) = self.mount_token.take() {
            let target = std::ffi::CString::new(self.dir.as_os_str().as_encoded_bytes());
            // SAFETY: a NUL-terminated path.
            let ok =
                target.is_ok_and(|c| unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } == 0);
            if !ok {
                eprintln!(
                    "foliosim oracle: unmounting {}: {}",
                    self.dir.display(),
                    std::io::Error::last_os_error()
                );
                return;
            }
            t.done();
        }
        if let Some(t) = self.dir_token.take() {
            match fs::remove_dir(&self.dir) {
                Ok(()) => t.done(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => t.done(),
                Err(e) => eprintln!("foliosim oracle: {}: {e}", self.dir.display()),
            }
        }
    }
}

/// The sysctls a scenario may set for its run (restored after). Ratios
/// only for dirty limits: writing dirty_bytes zeroes dirty_ratio, and 0
/// cannot be written back to dirty_bytes.
pub const SYSCTLS: &[&str] = &[
    "vm.swappiness",
    "vm.page-cluster",
    "vm.dirty_ratio",
    "vm.dirty_background_ratio",
    "vm.dirty_expire_centisecs",
    "vm.dirty_writeback_centisecs",
];

/// Besides SYSCTLS: the anon THP knobs under
/// /sys/kernel/mm/transparent_hugepage, `transparent_hugepage.enabled`,
/// `transparent_hugepage.defrag` and
/// `transparent_hugepage.hugepages-<16..2048>kB.enabled` (the model's
/// --sysctl keys).
pub const THP_SYSFS: &str = "/sys/kernel/mm/transparent_hugepage";

pub fn sysctl_path(key: &str) -> Option<PathBuf> {
    if let Some(knob) = key.strip_prefix("transparent_hugepage.") {
        if knob == "enabled" || knob == "defrag" {
            return Some(Path::new(THP_SYSFS).join(knob));
        }
        // The size is parsed as a number and formatted again: nothing of
        // the key but a power of two reaches the path.
        let kb = knob
            .strip_prefix("hugepages-")?
            .strip_suffix("kB.enabled")?
            .parse::<u64>()
            .ok()
            .filter(|&n| n.is_power_of_two() && (16..=2048).contains(&n))?;
        return Some(Path::new(THP_SYSFS).join(format!("hugepages-{kb}kB/enabled")));
    }
    SYSCTLS
        .contains(&key)
        .then(|| Path::new("/proc/sys").join(key.replace('.', "/")))
}

/// The value a sysfs file holds: a selection file
/// ("always [madvise] never") holds its bracketed word.
fn current_value(s: &str) -> String {
    match (s.find('['), s.find(']')) {
        (Some(a), Some(b)) if a < b => s[a + 1..b].to_string(),
        _ => s.to_string(),
    }
}

/// A value written to a file, the old one put back on drop.
pub struct ValueGuard {
    path: PathBuf,
    old: String,
    token: Option<Token>,
}

impl ValueGuard {
    pub fn set(path: &Path, v: &str) -> Result<ValueGuard, String> {
        let old = current_value(&read_trim(path)?);
        let token = journal::record(Kind::Value, path, &old)?;
        if let Err(e) = write(path, v) {
            token.done();
            return Err(e);
        }
        Ok(ValueGuard {
            path: path.to_path_buf(),
            old,
            token: Some(token),
        })
    }
}

/// Where DAMON's sysfs interface lists its monitoring threads.
const KDAMONDS: &str = "/sys/kernel/mm/damon/admin/kdamonds";

/// The kdamonds that are running (state "on"), by their state file.
pub fn running_kdamonds() -> Vec<PathBuf> {
    let Ok(rd) = fs::read_dir(KDAMONDS) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path().join("state"))
        .filter(|p| read_trim(p).is_ok_and(|s| s == "on"))
        .collect();
    v.sort();
    v
}

/// Stops every running kdamond until the guards drop (journaled: a killed
/// oracle's successor turns them back on). A DAMON scheme of the host's
/// (this VM runs one: paddr, `pageout` of regions idle for 12 aggregation
/// intervals, 128 MiB/s) reclaims page cache behind the workload's back at
/// times of its own: measured, it paged out fio's library pages during a
/// 27 s run (major faults at fio's exit, traced with
/// mm_filemap_delete_from_page_cache from kdamond.0). The model has no
/// DAMON; the real runs are measured without it.
fn pause_damon() -> Result<Vec<ValueGuard>, String> {
    running_kdamonds()
        .iter()
        .map(|p| ValueGuard::set(p, "off"))
        .collect()
}

/// What every real run holds while it changes the host: the instance lock
/// (one oracle at a time), then the host's kdamonds stopped. Fields drop
/// in order: DAMON is back on before the lock goes.
pub struct HostHold {
    _damon: Vec<ValueGuard>,
    _lock: journal::InstanceLock,
}

/// Takes the instance lock (waiting for another oracle), then stops DAMON.
pub fn hold_host() -> Result<HostHold, String> {
    let _lock = journal::instance_lock()?;
    Ok(HostHold {
        _damon: pause_damon()?,
        _lock,
    })
}

impl Drop for ValueGuard {
    fn drop(&mut self) {
        match fs::write(&self.path, &self.old) {
            Ok(()) => self.token.take().map_or((), Token::done),
            Err(e) => eprintln!(
                "foliosim oracle: could not restore {} to {}: {e}",
                self.path.display(),
                self.old
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zram_compressor_is_lzo_rle_where_offered() {
        assert_eq!(zram_comp_to_set("lzo [lzo-rle] lz4 zstd"), None, "current");
        assert_eq!(zram_comp_to_set("lzo lzo-rle [lz4] zstd"), Some("lzo-rle"));
        // Debian 7.x: no lzo-rle built; the default stays.
        assert_eq!(zram_comp_to_set("[lz4] zstd"), None);
    }

    #[test]
    fn swap_header_layout() {
        let h = swap_header(64 << 20);
        assert_eq!(h.len(), 4096);
        assert_eq!(&h[4086..], b"SWAPSPACE2");
        assert_eq!(u32::from_ne_bytes(h[1024..1028].try_into().unwrap()), 1);
        assert_eq!(
            u32::from_ne_bytes(h[1028..1032].try_into().unwrap()),
            (64 << 20) / 4096 - 1
        );
        assert!(h[..1024].iter().all(|&b| b == 0));
    }

    #[test]
    fn only_listed_sysctls() {
        assert_eq!(
            sysctl_path("vm.page-cluster").unwrap(),
            PathBuf::from("/proc/sys/vm/page-cluster")
        );
        assert!(sysctl_path("kernel.core_pattern").is_none());
        assert!(sysctl_path("vm/../../etc").is_none());
        assert!(sysctl_path("vm.dirty_bytes").is_none());
        assert_eq!(
            sysctl_path("transparent_hugepage.hugepages-64kB.enabled").unwrap(),
            Path::new("/sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled")
        );
        assert_eq!(
            sysctl_path("transparent_hugepage.enabled").unwrap(),
            Path::new("/sys/kernel/mm/transparent_hugepage/enabled")
        );
        for bad in [
            "transparent_hugepage.hugepages-48kB.enabled",
            "transparent_hugepage.hugepages-../../x.enabled",
            "transparent_hugepage.hugepages-4096kB.enabled",
            "transparent_hugepage.khugepaged.defrag",
        ] {
            assert!(sysctl_path(bad).is_none(), "{bad}");
        }
        assert_eq!(current_value("always [madvise] never"), "madvise");
        assert_eq!(current_value("60"), "60");
    }
}
