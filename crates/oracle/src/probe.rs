//! The real mmap probe (seed 002's `mmap_miss_probe`): mmap a file with
//! MADV_NORMAL and read one byte of each page `ProbeSpec::pages()` names.
//! It runs in a child process inside the memory cgroup: the CLI re-executes
//! itself as `foliosim oracle __probe ...`, whose handler calls [`run_real`]
//! and prints [`ProbeOutcome`] as one JSON line.

use foliosim_workload::mmap_probe::{ProbeSpec, PAGE_SIZE};
use serde::{Deserialize, Serialize};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::time::Instant;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProbeOutcome {
    pub touches: u64,
    /// Wall-clock seconds of the access loop alone (not mmap/munmap).
    pub elapsed_s: f64,
    /// Sum of the bytes read, so that the loads cannot be elided.
    pub checksum: u64,
}

/// Touches the pages of `spec` in `file` through a shared read-only mapping.
pub fn run_real(file: &Path, spec: &ProbeSpec) -> Result<ProbeOutcome, String> {
    let f = File::open(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let len = f
        .metadata()
        .map_err(|e| format!("{}: {e}", file.display()))?
        .len();
    if len < spec.file_size {
        return Err(format!(
            "{}: {len} bytes, the probe wants {} (--file-size)",
            file.display(),
            spec.file_size
        ));
    }
    if spec.file_size == 0 {
        return Err("--file-size must be > 0".into());
    }
    let map_len = spec.file_size as usize;
    let p =
        crate::run::map_file_shared(&f, map_len).map_err(|e| format!("{}: {e}", file.display()))?;
    let base = p.cast_mut().cast::<libc::c_void>();
    // SAFETY: base/map_len is the mapping made above.
    unsafe { libc::madvise(base, map_len, libc::MADV_NORMAL) };
    let (mut touches, mut checksum) = (0u64, 0u64);
    let t0 = Instant::now();
    for page in spec.pages() {
        let off = page * PAGE_SIZE;
        if off >= spec.file_size {
            continue;
        }
        // SAFETY: off < file_size == map_len, inside the mapping.
        checksum =
            checksum.wrapping_add(unsafe { std::ptr::read_volatile(p.add(off as usize)) } as u64);
        touches += 1;
    }
    let elapsed_s = t0.elapsed().as_secs_f64();
    // SAFETY: unmapping exactly what was mapped.
    unsafe { libc::munmap(base, map_len) };
    Ok(ProbeOutcome {
        touches,
        elapsed_s,
        checksum,
    })
}

/// Makes sure `path` is a `size`-byte file with data blocks (written, not
/// sparse: holes would be read without I/O). An existing file of the right
/// size is kept.
pub fn create_file(path: &Path, size: u64) -> Result<(), String> {
    if fs::metadata(path).is_ok_and(|m| m.len() == size) {
        return Ok(());
    }
    let tmp = path.with_extension("tmp");
    let err = |e: std::io::Error| format!("{}: {e}", tmp.display());
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp)
        .map_err(err)?;
    // A non-zero pattern so that nothing along the way can treat it as zeros.
    let chunk: Vec<u8> = (0..1usize << 20).map(|i| (i % 251) as u8 | 1).collect();
    let mut left = size;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        f.write_all(&chunk[..n]).map_err(err)?;
        left -= n as u64;
    }
    f.sync_all().map_err(err)?;
    fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use foliosim_workload::mmap_probe::Pattern;

    #[test]
    fn probe_touches_the_spec_pages() {
        let dir =
            std::env::temp_dir().join(format!("foliosim-oracle-probe-test-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let f = dir.join("p.dat");
        create_file(&f, 64 * PAGE_SIZE).unwrap();
        assert_eq!(fs::metadata(&f).unwrap().len(), 64 * PAGE_SIZE);
        let spec = ProbeSpec {
            file_size: 64 * PAGE_SIZE,
            pattern: Pattern::Stride(3),
            fraction: 0.25,
            seed: 1,
        };
        let o = run_real(&f, &spec).unwrap();
        assert_eq!(o.touches, 16);
        // Byte 0 of each page: offset is a multiple of 4096, 4096 % 251 = 80.
        let want: u64 = spec
            .pages()
            .map(|p| ((p * PAGE_SIZE % (1 << 20)) % 251) as u64 | 1)
            .sum();
        assert_eq!(o.checksum, want);
        let big = ProbeSpec {
            file_size: 65 * PAGE_SIZE,
            ..spec
        };
        assert!(run_real(&f, &big).unwrap_err().contains("the probe wants"));
        fs::remove_dir_all(&dir).unwrap();
    }
}
