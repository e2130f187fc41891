//! `foliosim oracle calibrate`: this host measured as a machine profile
//! for the model. The oracle's own probes (run::with_measured_costs: read
//! latency, buffered read miss and hit, anonymous fault, limit reclaim,
//! zram swap) and the ones only a profile needs: the scratch device's
//! bandwidth, its queue depth, the copy and the touch of a resident mapped
//! page, the real fio's time per mapped-hit I/O, and ext4's metadata calls.
//! What the model's constants are derived from these is the caller's (it
//! knows the model); this module only measures, and says how.

use crate::host::HostInfo;
use crate::run::{self, Scratch};
use serde_json::Value;
use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

/// The machine a profile describes.
#[derive(Clone, Debug, Default)]
pub struct Machine {
    /// /proc/cpuinfo's "model name".
    pub cpu: String,
    pub vcpus: u32,
    pub ram_bytes: u64,
    /// `systemd-detect-virt --vm`, else the cpuinfo hypervisor flag.
    pub virtualization: String,
    pub kernel: String,
    /// The day of the measurement, UTC, YYYY-MM-DD.
    pub date: String,
    /// The scratch directory, its device and file system.
    pub scratch: String,
    pub fio: String,
}

/// One measured quantity and how it was measured.
#[derive(Clone, Debug)]
pub struct Measured {
    pub value: u64,
    pub method: String,
}

/// Everything `calibrate` measured; None where it could not (the reason
/// went to stderr).
#[derive(Clone, Debug, Default)]
pub struct Calibration {
    pub machine: Machine,
    /// run::with_measured_costs's probes.
    pub host: Option<HostInfo>,
    pub device_bw_bytes_per_s: Option<Measured>,
    pub queue_depth: Option<Measured>,
    /// Touching one resident, mapped, prefaulted 4 KiB page (one load).
    pub touch_mapped_ns: Option<Measured>,
    /// Touching and copying one such page out (memcpy of 4 KiB).
    pub copy_mapped_page_ns: Option<Measured>,
    /// The first touch of each page of that file, resident but newly
    /// mapped: a fault (with fault-around) every fault_around_bytes.
    pub first_touch_mapped_ns: Option<Measured>,
    /// The real fio's time per 4 KiB mmap-engine read, every page a hit.
    pub fio_mmap_hit_io_ns: Option<Measured>,
    /// The real fio's time per I/O of the same job on its null engine:
    /// fio's own work, no data moved.
    pub fio_null_io_ns: Option<Measured>,
    pub create_ns: Option<Measured>,
    pub stat_ns: Option<Measured>,
    pub unlink_ns: Option<Measured>,
    pub fallocate_ns: Option<Measured>,
}

/// The fio job the mapped-hit I/O is timed on: seed 000's shape (600M,
/// 4K read every 64K through the mmap engine), no memory limit, so every
/// page stays resident and mapped after the first pass (ramp_time drops
/// that pass from the figures). invalidate=0 keeps the page cache fio's
/// layout wrote.
const FIO_MMAP_ARGS: [&[&str]; 3] = [
    &[
        "--name=calibrate-mmap",
        "--filename=calibrate-mmap.dat",
        "--ioengine=mmap",
    ],
    STRIDED_JOB,
    &["--invalidate=0", "--fadvise_hint=0"],
];
/// The same job on fio's null engine (no file, no data: fio's own work).
const FIO_NULL_ARGS: [&[&str]; 3] = [
    &[
        "--name=calibrate-null",
        "--filename=calibrate-null",
        "--ioengine=null",
    ],
    STRIDED_JOB,
    &[],
];
/// Both jobs' shape: seed 000's 4 KiB of every 64 KiB of 600 MiB.
const STRIDED_JOB: &[&str] = &[
    "--rw=read",
    "--bs=4k",
    "--size=600M",
    "--zonemode=strided",
    "--zonesize=4k",
    "--zonerange=64k",
    "--time_based",
    "--runtime=2",
    "--ramp_time=1",
];
/// The mapped-page probes walk fio's file at its stride.
const STRIDED_STEP: usize = 64 << 10;

/// The bandwidth job: 1 MiB O_DIRECT sequential reads, 32 in flight
/// (libaio), one job, over a 1 GiB file fio lays out.
const FIO_BW_ARGS: &[&str] = &[
    "--name=calibrate-bw",
    "--filename=calibrate-bw.dat",
    "--ioengine=libaio",
    "--direct=1",
    "--rw=read",
    "--bs=1M",
    "--iodepth=32",
    "--size=1G",
    "--time_based",
    "--runtime=3",
    "--ramp_time=1",
];

/// fio runs per figure; the median is kept.
const FIO_RUNS: usize = 5;

/// Measures this host. Needs root (cgroups, zram, drop of a file's
/// cache), fio on PATH for the fio figures. `probe_cmd` is the probe
/// child's command (run::RunOpts::probe_cmd).
pub fn calibrate(
    host: &HostInfo,
    scratch: &mut Scratch,
    probe_cmd: &[OsString],
    verbose: bool,
) -> Result<Calibration, String> {
    if !host.is_root {
        return Err("oracle calibrate: needs root (cgroups, zram swap)".into());
    }
    let say = |what: &str, r: &Result<Measured, String>| match r {
        Ok(m) if verbose => eprintln!("{what}: {}", m.value),
        Ok(_) => {}
        Err(e) => eprintln!("foliosim oracle calibrate: {what} not measured ({e})"),
    };
    let mut h = run::with_measured_costs(host, scratch, probe_cmd, verbose);
    least_of_three(&mut h, scratch);
    let mut c = Calibration {
        machine: machine(host, &scratch.dir),
        host: Some(h),
        ..Calibration::default()
    };
    let keep = |what: &str, r: Result<Measured, String>| {
        say(what, &r);
        r.ok()
    };
    c.queue_depth = keep("queue depth", queue_depth(host));
    c.device_bw_bytes_per_s = keep("device bandwidth (B/s)", device_bandwidth(scratch));
    c.fio_null_io_ns = keep(
        "fio null-engine I/O (ns)",
        fio_per_io(
            scratch,
            FIO_NULL_ARGS,
            "calibrate-null",
            "every I/O a no-op: fio's own work",
        ),
    );
    let hit = "every read a mapped hit after the ramp";
    c.fio_mmap_hit_io_ns = keep(
        "fio mmap hit I/O (ns)",
        fio_per_io(scratch, FIO_MMAP_ARGS, "calibrate-mmap.dat", hit),
    );
    let mapped = strided_touch_copy(&scratch.dir.join("calibrate-mmap.dat"));
    if let Some((touch, copy)) = keep_pair(mapped, verbose) {
        c.touch_mapped_ns = Some(touch);
        c.copy_mapped_page_ns = Some(copy);
    }
    c.first_touch_mapped_ns = keep(
        "first touch of a cached, newly mapped page (ns)",
        first_touch(&scratch.dir.join("calibrate-touch.dat")),
    );
    if let Ok([cr, st, un, fa]) = metadata_calls(scratch)
        .map_err(|e| eprintln!("foliosim oracle calibrate: metadata calls not measured ({e})"))
    {
        c.create_ns = Some(cr);
        c.stat_ns = Some(st);
        c.unlink_ns = Some(un);
        c.fallocate_ns = Some(fa);
    }
    Ok(c)
}

/// The buffered read (miss and hit) and the anonymous fault measured
/// twice more, each figure the least of the three: the host is shared
/// (other work on its CPUs only ever adds time).
fn least_of_three(h: &mut HostInfo, scratch: &Scratch) {
    let least = |a: &mut Option<u64>, b: u64| *a = a.map(|a| a.min(b));
    for _ in 0..2 {
        if let Ok((miss, hit)) = run::measure_buffered_read(scratch) {
            least(&mut h.buffered_read_ns, miss);
            least(&mut h.buffered_hit_ns, hit);
        }
        if let Ok(a) = run::measure_anon_fault() {
            least(&mut h.anon_fault_ns, a);
        }
    }
}

fn keep_pair(
    r: Result<(Measured, Measured), String>,
    verbose: bool,
) -> Option<(Measured, Measured)> {
    match r {
        Ok((a, b)) => {
            if verbose {
                eprintln!(
                    "mapped page touch: {} ns; touch and copy: {} ns",
                    a.value, b.value
                );
            }
            Some((a, b))
        }
        Err(e) => {
            eprintln!("foliosim oracle calibrate: mapped page costs not measured ({e})");
            None
        }
    }
}

/// The machine's description: CPU, vCPUs, RAM, virtualisation, kernel,
/// today's date (UTC), the scratch device, fio's version.
pub fn machine(host: &HostInfo, dir: &Path) -> Machine {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name").and_then(|r| r.split_once(':')))
        .map_or("unknown".to_string(), |(_, v)| v.trim().to_string());
    let vcpus = cpuinfo
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count() as u32;
    Machine {
        cpu,
        vcpus,
        ram_bytes: host.ram_bytes,
        virtualization: virtualization(&cpuinfo),
        kernel: host.kernel_release.clone(),
        date: utc_date(std::time::SystemTime::now()),
        scratch: format!(
            "{} on {} ({})",
            dir.display(),
            host.block_device,
            host.fs_type
        ),
        fio: host.fio_version.clone().unwrap_or_else(|| "none".into()),
    }
}

fn virtualization(cpuinfo: &str) -> String {
    let detected = Command::new("systemd-detect-virt")
        .arg("--vm")
        .stderr(Stdio::null())
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| !s.is_empty());
    match detected {
        Some(v) => v,
        None if cpuinfo.contains(" hypervisor") => "a hypervisor (cpuinfo flag)".into(),
        None => "none detected".into(),
    }
}

/// YYYY-MM-DD of a time, UTC (the civil calendar from days since 1970).
pub fn utc_date(t: std::time::SystemTime) -> String {
    let secs = t
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// The block layer's request queue depth of the scratch device
/// (queue/nr_requests beside its read_ahead_kb).
fn queue_depth(host: &HostInfo) -> Result<Measured, String> {
    let p = host
        .read_ahead_path
        .parent()
        .ok_or("the scratch directory has no block device")?
        .join("nr_requests");
    let v = fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
    Ok(Measured {
        value: v
            .trim()
            .parse()
            .map_err(|e| format!("{}: {e}", p.display()))?,
        method: format!(
            "{} of the scratch device ({})",
            p.display(),
            host.block_device
        ),
    })
}

/// fio with the given arguments in the scratch directory, its JSON's
/// first job's `read` object.
fn fio_read(dir: &Path, args: &[&str]) -> Result<Value, String> {
    Ok(crate::fio::run_json(args, dir)?["jobs"][0]["read"].clone())
}

/// `f` over one job's `read` object, the least (`least`) or the most of
/// FIO_RUNS runs: the least contended run on a shared host.
fn fio_best(
    scratch: &mut Scratch,
    args: &[&str],
    file: &str,
    least: bool,
    f: impl Fn(&Value) -> Option<f64>,
) -> Result<u64, String> {
    scratch.track(scratch.dir.join(file))?;
    let mut v = Vec::with_capacity(FIO_RUNS);
    for _ in 0..FIO_RUNS {
        let read = fio_read(&scratch.dir, args)?;
        v.push(f(&read).ok_or("fio JSON: no read figures")? as u64);
    }
    v.sort_unstable();
    Ok(if least { v[0] } else { v[FIO_RUNS - 1] })
}

/// The scratch device's sustained read bandwidth (FIO_BW_ARGS).
fn device_bandwidth(scratch: &mut Scratch) -> Result<Measured, String> {
    let bw = fio_best(scratch, FIO_BW_ARGS, "calibrate-bw.dat", false, |r| {
        r["bw_bytes"].as_f64()
    })?;
    if bw == 0 {
        return Err("fio read nothing".into());
    }
    Ok(Measured {
        value: bw,
        method: format!(
            "fio {}: read bw_bytes, the most of {FIO_RUNS} runs",
            FIO_BW_ARGS.join(" ")
        ),
    })
}

/// The real fio's time per I/O of a job: 1 s / read IOPS.
fn fio_per_io(
    scratch: &mut Scratch,
    args: [&[&str]; 3],
    file: &str,
    what: &str,
) -> Result<Measured, String> {
    let args = args.concat();
    let args = &args[..];
    let iops = |r: &Value| r["iops"].as_f64().filter(|i| *i > 0.0).map(|i| 1e9 / i);
    let ns = fio_best(scratch, args, file, true, iops)?;
    Ok(Measured {
        value: ns,
        method: format!(
            "fio {}: 1e9 / read iops ({what}), the least of {FIO_RUNS} runs",
            args.join(" ")
        ),
    })
}

/// Passes over the mapping per figure; the median is kept.
const STRIDED_PASSES: usize = 33;

/// A resident mapped page's costs on the mmap job's own file (its page
/// cache, as fio's layout and runs left it, so the same folios and page
/// tables as fio's reads), at its stride: the file mapped shared and
/// every page touched once, then one load from each strided page (the
/// TLB miss and the line), and a memcpy of each into a 4 KiB buffer, as
/// fio's mmap engine copies a read out. Each the median over
/// STRIDED_PASSES passes, per page: (touch, touch and copy).
fn strided_touch_copy(file: &Path) -> Result<(Measured, Measured), String> {
    let f = fs::File::open(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let len = f.metadata().map_err(|e| e.to_string())?.len() as usize;
    if len < STRIDED_STEP {
        return Err(format!("{}: shorter than the stride", file.display()));
    }
    let b = run::map_file_shared(&f, len)?;
    let r = touch_copy_passes(b, len);
    // SAFETY: the mapping made above, no longer used.
    unsafe { libc::munmap(b.cast_mut().cast(), len) };
    let how = format!(
        "{} mapped shared, its {} MiB resident and every page touched first, every {} KiB",
        file.display(),
        len >> 20,
        STRIDED_STEP >> 10
    );
    let (touch, copy) = r;
    Ok((
        Measured {
            value: touch,
            method: format!("{how}: one load a page, median of {STRIDED_PASSES} passes"),
        },
        Measured {
            value: copy,
            method: format!(
                "{how}: memcpy of the page to a 4 KiB buffer, median of {STRIDED_PASSES} passes"
            ),
        },
    ))
}

/// Passes of first_touch(): each maps the file anew.
const FIRST_TOUCH_PASSES: usize = 7;

/// The file first_touch() maps.
const FIRST_TOUCH_BYTES: usize = 64 << 20;

/// The first load of every page of `file` through a new shared mapping,
/// ns a page: the file fault with its fault-around every
/// fault_around_bytes, the other pages found mapped. The file is written
/// first in 4 KiB write()s, so its page cache is order-0 folios mapped by
/// PTEs (fio's layout writes large folios, which a fault maps whole by
/// PMD: that is not fault-around's per-page work). The median of
/// FIRST_TOUCH_PASSES mappings; the file is removed after.
fn first_touch(file: &Path) -> Result<Measured, String> {
    let r = write_small_folios(file).and_then(|()| first_touch_passes(file));
    let _ = fs::remove_file(file);
    r
}

fn write_small_folios(file: &Path) -> Result<(), String> {
    use std::os::unix::fs::FileExt;
    let f = fs::File::create(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let page = [0x5au8; 4096];
    for off in (0..FIRST_TOUCH_BYTES).step_by(4096) {
        f.write_all_at(&page, off as u64)
            .map_err(|e| format!("{}: {e}", file.display()))?;
    }
    f.sync_all().map_err(|e| format!("{}: {e}", file.display()))
}

fn first_touch_passes(file: &Path) -> Result<Measured, String> {
    let f = fs::File::open(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let len = f.metadata().map_err(|e| e.to_string())?.len() as usize;
    let mut ns = Vec::with_capacity(FIRST_TOUCH_PASSES);
    for _ in 0..FIRST_TOUCH_PASSES {
        let b = run::map_file_shared(&f, len)?;
        let t = Instant::now();
        load_pages(b, len, 4096);
        ns.push(t.elapsed().as_nanos() as u64 / (len / 4096).max(1) as u64);
        // SAFETY: the mapping made above, no longer used.
        unsafe { libc::munmap(b.cast_mut().cast(), len) };
    }
    ns.sort_unstable();
    Ok(Measured {
        value: ns[FIRST_TOUCH_PASSES / 2],
        method: format!(
            "{} ({} MiB written in 4 KiB write()s, resident in order-0 folios) mapped shared anew {FIRST_TOUCH_PASSES} times, one load a page in order; median",
            file.display(),
            len >> 20
        ),
    })
}

/// touch_copy over `len` bytes mapped at `b`: (touch, touch and copy) ns
/// per strided page.
fn touch_copy_passes(b: *const u8, len: usize) -> (u64, u64) {
    load_pages(b, len, 4096);
    let pages = (len / STRIDED_STEP) as u64;
    // Page-aligned, as fio's io_u buffers are (a misaligned destination
    // slows the copy's string instructions on some CPUs).
    let mut raw = vec![0u8; 8192];
    let at = raw.as_ptr().align_offset(4096);
    let dst = &mut raw[at..at + 4096];
    let touch = median_pass(|| load_pages(b, len, STRIDED_STEP)) / pages;
    let copy = median_pass(|| {
        for off in (0..len).step_by(STRIDED_STEP) {
            // SAFETY: a whole page inside the mapping into a 4 KiB buffer.
            unsafe { libc::memcpy(dst.as_mut_ptr().cast(), b.add(off).cast(), 4096) };
            std::hint::black_box(&mut *dst);
        }
    }) / pages;
    (touch, copy)
}

/// One load every `step` bytes of the `len` bytes mapped at `b`.
fn load_pages(b: *const u8, len: usize, step: usize) {
    let mut sum = 0u8;
    for off in (0..len).step_by(step) {
        // SAFETY: off < len: inside the mapping.
        sum = sum.wrapping_add(unsafe { std::ptr::read_volatile(b.add(off)) });
    }
    std::hint::black_box(sum);
}

/// The median time of `pass`, ns, after one unmeasured pass.
fn median_pass(mut pass: impl FnMut()) -> u64 {
    pass();
    let mut ns: Vec<u64> = (0..STRIDED_PASSES)
        .map(|_| {
            let t = Instant::now();
            pass();
            t.elapsed().as_nanos() as u64
        })
        .collect();
    ns.sort_unstable();
    ns[STRIDED_PASSES / 2]
}

/// Files per metadata round; rounds per figure (the median is kept).
const META_FILES: u64 = 1000;
const META_ROUNDS: usize = 3;

/// ext4's metadata calls as fio's file engines make them, in a scratch
/// subdirectory: open(O_CREAT) and close of a new file, stat of one,
/// unlink of one, and fallocate(mode 0) of 4 KiB at successive offsets of
/// one open file; each the mean of META_FILES, median of META_ROUNDS:
/// [create, stat, unlink, fallocate].
fn metadata_calls(scratch: &mut Scratch) -> Result<[Measured; 4], String> {
    let d = scratch.dir.join("calibrate-meta");
    scratch.track(d.clone())?;
    fs::create_dir_all(&d).map_err(|e| format!("{}: {e}", d.display()))?;
    let mut rounds: [Vec<u64>; 4] = Default::default();
    for _ in 0..META_ROUNDS {
        let r = meta_round(&d).map_err(|e| format!("{}: {e}", d.display()))?;
        for (v, x) in rounds.iter_mut().zip(r) {
            v.push(x);
        }
    }
    let what = [
        "open(O_CREAT|O_WRONLY) and close of a new file",
        "stat of an existing file",
        "unlink of a file",
        "fallocate(mode 0) of 4 KiB at the next offset of an open file",
    ];
    Ok(std::array::from_fn(|i| {
        rounds[i].sort_unstable();
        Measured {
            value: rounds[i][META_ROUNDS / 2],
            method: format!(
                "{} in {} ({}): mean of {META_FILES}, median of {META_ROUNDS} rounds",
                what[i],
                scratch.dir.display(),
                "the scratch file system"
            ),
        }
    }))
}

/// One round of metadata_calls: mean ns of each call.
fn meta_round(d: &Path) -> io::Result<[u64; 4]> {
    use std::os::fd::AsRawFd;
    let name = |i: u64| d.join(format!("f{i}"));
    let timed = |f: &mut dyn FnMut(u64) -> io::Result<()>| -> io::Result<u64> {
        let t = Instant::now();
        for i in 0..META_FILES {
            f(i)?;
        }
        Ok(t.elapsed().as_nanos() as u64 / META_FILES)
    };
    let create = timed(&mut |i| fs::File::create(name(i)).map(drop))?;
    let stat = timed(&mut |i| fs::metadata(name(i)).map(drop))?;
    let unlink = timed(&mut |i| fs::remove_file(name(i)))?;
    let f = fs::File::create(name(0))?;
    let falloc = timed(&mut |i| {
        // SAFETY: fallocate only reads its arguments; the fd is open.
        match unsafe { libc::fallocate(f.as_raw_fd(), 0, (i * 4096) as i64, 4096) } {
            0 => Ok(()),
            _ => Err(io::Error::last_os_error()),
        }
    })?;
    drop(f);
    fs::remove_file(name(0))?;
    Ok([create, stat, unlink, falloc])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        let at = |s: u64| utc_date(std::time::UNIX_EPOCH + std::time::Duration::from_secs(s));
        assert_eq!(at(0), "1970-01-01");
        assert_eq!(at(951_782_400), "2000-02-29");
        assert_eq!(at(1_798_761_599), "2026-12-31");
        assert_eq!(at(1_798_761_600), "2027-01-01");
    }

    #[test]
    fn strided_probe_measures_a_copy_dearer_than_a_touch() {
        let p = std::env::temp_dir().join(format!("foliosim-calibrate-{}", std::process::id()));
        fs::File::create(&p).unwrap().set_len(16 << 20).unwrap();
        let r = strided_touch_copy(&p);
        fs::remove_file(&p).unwrap();
        let (t, c) = r.unwrap();
        assert!(c.value > t.value, "{} {}", t.value, c.value);
    }
}
