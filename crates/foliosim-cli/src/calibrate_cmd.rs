//! `foliosim oracle calibrate`: this host's machine profile. The oracle
//! crate measures (foliosim_oracle::calibrate); here the model's constants
//! are derived from the figures, each as the model charges the measured
//! operation, and the profile written (docs/calibration.md).

use foliosim::mm::profile::{self, Entry, MachineInfo, MachineProfile};
use foliosim::mm::CpuCosts;
use foliosim_oracle::calibrate::{Calibration, Measured};
use std::path::Path;

/// Measures this host (root) and writes its profile to `out`, or stdout.
pub fn calibrate(name: &str, dir: &Path, out: Option<&Path>, quiet: bool) -> Result<(), String> {
    if name.is_empty() || name.chars().any(char::is_control) {
        return Err("--name: must be a non-empty line".into());
    }
    // Checked first: the measuring takes a minute.
    if let Some(parent) = out
        .and_then(Path::parent)
        .filter(|d| !d.as_os_str().is_empty())
    {
        if !parent.is_dir() {
            return Err(format!("--out: {}: no such directory", parent.display()));
        }
    }
    let host = foliosim_oracle::host::read_host(dir)?;
    let exe = std::env::current_exe().map_err(|e| format!("finding the foliosim binary: {e}"))?;
    let probe_cmd = vec![exe.into(), "oracle".into(), "__probe".into()];
    let c = {
        let mut scratch = foliosim_oracle::run::Scratch::new(dir, false)?;
        foliosim_oracle::calibrate::calibrate(&host, &mut scratch, &probe_cmd, !quiet)?
    };
    let text = profile_of(&c, name).to_toml();
    match out {
        Some(p) => std::fs::write(p, &text).map_err(|e| format!("--out: {}: {e}", p.display())),
        None => {
            print!("{text}");
            Ok(())
        }
    }
}

/// The profile: the reference's entries, each measured one replaced.
pub fn profile_of(c: &Calibration, name: &str) -> MachineProfile {
    let mut p = profile::reference().clone();
    let m = &c.machine;
    p.machine = MachineInfo {
        name: name.to_string(),
        cpu: m.cpu.clone(),
        vcpus: m.vcpus,
        ram_bytes: m.ram_bytes,
        virtualization: m.virtualization.clone(),
        kernel: m.kernel.clone(),
        date: m.date.clone(),
        scratch: m.scratch.clone(),
        fio: m.fio.clone(),
        measured_by: format!("foliosim oracle calibrate ({})", env!("CARGO_PKG_VERSION")),
    };
    let mut costs = p.cpu_costs();
    mapped_page_costs(c, &mut p, &mut costs);
    host_probe_costs(c, &mut p, &mut costs);
    map_page_cost(c, &mut p, &mut costs);
    fio_and_metadata(c, &mut p, &costs);
    device(c, &mut p, &costs);
    p
}

fn ns(value: u64, method: String) -> Entry {
    Entry {
        value,
        unit: "ns".into(),
        method,
    }
}

fn set(p: &mut MachineProfile, field: &str, e: Entry) {
    p.cpu_costs.insert(field.to_string(), e);
}

/// touch_mapped and copy_page: the touch as measured; the copy as the
/// touch-and-copy less the touch (the model charges both on such a read).
fn mapped_page_costs(c: &Calibration, p: &mut MachineProfile, costs: &mut CpuCosts) {
    let (Some(t), Some(cp)) = (&c.touch_mapped_ns, &c.copy_mapped_page_ns) else {
        return;
    };
    costs.touch_mapped = t.value.max(1);
    costs.copy_page = cp.value.saturating_sub(t.value).max(1);
    set(p, "touch_mapped", ns(costs.touch_mapped, t.method.clone()));
    let how = format!(
        "touch and copy measured {} ns ({}) less touch_mapped",
        cp.value, cp.method
    );
    set(p, "copy_page", ns(costs.copy_page, how));
}

/// map_page: a first touch of a cached, newly mapped page costs, a
/// fault_around_bytes window at a time, one file fault (charged as
/// minor_fault), fault-around's mapping of each page, and the loads of
/// the pages it mapped ahead (touch_mapped); what is left over the
/// window's pages is map_page.
fn map_page_cost(c: &Calibration, p: &mut MachineProfile, costs: &mut CpuCosts) {
    let (Some(f), Some(h)) = (&c.first_touch_mapped_ns, &c.host) else {
        return;
    };
    let fa = (h.fault_around_bytes / 4096).max(1);
    let window = f.value * fa;
    let rest = costs.minor_fault + (fa - 1) * costs.touch_mapped;
    costs.map_page = (window.saturating_sub(rest) / fa).max(1);
    let how = format!(
        "a first touch measured {} ns a page ({}); {fa} pages a fault (fault_around_bytes {}): \
         {fa} x {} less minor_fault and {} x touch_mapped, over {fa}",
        f.value,
        f.method,
        h.fault_around_bytes,
        f.value,
        fa - 1
    );
    set(p, "map_page", ns(costs.map_page, how));
}

/// syscall, minor_fault, reclaim_folio and zram's costs from the oracle's
/// own probes, derived as the oracle derives them for its runs
/// (oracle_model::host_costs_on), on the measured copy.
fn host_probe_costs(c: &Calibration, p: &mut MachineProfile, costs: &mut CpuCosts) {
    let Some(h) = &c.host else { return };
    let d = crate::oracle_model::host_costs_on(*costs, h);
    let hit_overhead = foliosim::mm::filemap::HIT_OVERHEAD_NS;
    let derived = [
        ("syscall", d.syscall, h.buffered_hit_ns, format!("less copy_page and HIT_OVERHEAD_NS ({hit_overhead} ns)"),
            "a 4 KiB read() of a cached page (run::measure_buffered_read: 1,024 scattered pages of a 64 MiB scratch file, read-ahead off, read a second time; mean; the least of 3 runs)"),
        ("minor_fault", d.minor_fault, h.anon_fault_ns, "less page_alloc and copy_page".into(),
            "a first-touch anonymous write fault (run::measure_anon_fault: 64 MiB, MADV_NOHUGEPAGE, one byte a page; median of 3 passes; the least of 3 runs)"),
        ("reclaim_folio", d.reclaim_folio, h.reclaim_page_ns, "less scan_folio and isolate_lru_folio".into(),
            "limit reclaim of clean page cache per page (run::measure_limit_reclaim: 32 MiB of order-0 cache in a memory cgroup, its limit written down to 4 MiB; median of 3)"),
        ("zram_compress", d.zram_compress, h.swapout_page_ns, "less two scans (scan_folio, isolate_lru_folio, folio_referenced) and reclaim_folio".into(),
            "limit reclaim of anonymous memory to zram per page swapped out (run::measure_zram_swap: 64 MiB written in a 32 MiB memory cgroup, zram0 lzo-rle swap; median of 5)"),
        ("zram_decompress", d.zram_decompress, h.swapin_fault_ns, "less minor_fault and page_alloc".into(),
            "a swap-in fault from zram (run::measure_zram_swap, the same pages read back; median of 5)"),
    ];
    for (field, value, measured, less, what) in derived {
        if let Some(m) = measured {
            set(
                p,
                field,
                ns(value, format!("{what}: measured {m} ns, {less}")),
            );
        }
    }
    *costs = d;
}

/// fio_io: the real fio's own work per I/O, its null engine on the same
/// job (measured directly: the mmap engine's time less the copy is not,
/// as the CPU overlaps fio's work with the copy's misses); the mmap
/// engine's mapped hit is kept in the method as the check the model's sum
/// (fio_io, touch_mapped, copy_page) is judged by. The metadata calls as
/// timed.
fn fio_and_metadata(c: &Calibration, p: &mut MachineProfile, costs: &CpuCosts) {
    if let Some(f) = &c.fio_null_io_ns {
        let mut how = format!("{}: measured {} ns", f.method, f.value);
        if let Some(m) = &c.fio_mmap_hit_io_ns {
            let sum = f.value + costs.touch_mapped + costs.copy_page;
            how += &format!(
                ". Check, not a fit: the same job on the mmap engine took {} ns per mapped-hit read ({}); the model charges fio_io + touch_mapped + copy_page = {sum} ns",
                m.value, m.method
            );
        }
        set(p, "fio_io", ns(f.value.max(1), how));
    }
    let meta: [(&str, &Option<Measured>); 4] = [
        ("create", &c.create_ns),
        ("stat", &c.stat_ns),
        ("unlink", &c.unlink_ns),
        ("fallocate", &c.fallocate_ns),
    ];
    for (field, m) in meta {
        if let Some(m) = m {
            set(p, field, ns(m.value.max(1), m.method.clone()));
        }
    }
}

/// The disk: bandwidth and queue depth as measured; the per-request
/// latency so that the model's 4 KiB buffered miss (syscall, page
/// allocation, copy, transfer, latency) costs the measured one, as the
/// oracle sets it for its runs, else the O_DIRECT read less its transfer.
fn device(c: &Calibration, p: &mut MachineProfile, costs: &CpuCosts) {
    let d = &mut p.device;
    if let Some(bw) = &c.device_bw_bytes_per_s {
        d.bw_bytes_per_s = Entry {
            value: bw.value,
            unit: "bytes/s".into(),
            method: bw.method.clone(),
        };
    }
    if let Some(q) = &c.queue_depth {
        d.queue_depth = Entry {
            value: q.value,
            unit: "requests".into(),
            method: q.method.clone(),
        };
    }
    let xfer = 4096 * 1_000_000_000 / d.bw_bytes_per_s.value.max(1);
    let h = c.host.as_ref();
    let cpu = costs.syscall + costs.page_alloc + costs.copy_page + xfer;
    let latency = match (h.and_then(|h| h.buffered_read_ns), h.and_then(|h| h.read_latency_ns)) {
        (Some(b), _) => Some((b.saturating_sub(cpu).max(1_000), format!(
            "a 4 KiB buffered read() missing the page cache (run::measure_buffered_read: read-ahead off, 1,024 scattered pages; mean; the least of 3 runs): measured {b} ns, less syscall, page_alloc, copy_page and the 4 KiB transfer at bw_bytes_per_s ({cpu} ns)"))),
        (None, Some(r)) => Some((r.saturating_sub(xfer).max(1_000), format!(
            "random 4 KiB O_DIRECT reads at QD1 (run::measure_read_latency; median of 1,024): measured {r} ns, less the 4 KiB transfer ({xfer} ns)"))),
        _ => None,
    };
    if let Some((v, method)) = latency {
        d.latency_ns = ns(v, method);
    }
    d.about = format!(
        "{}'s disk under {}, as measured by foliosim oracle calibrate",
        p.machine.name, p.machine.scratch
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h_fault_around_pages() -> u64 {
        foliosim_oracle::HostInfo::example().fault_around_bytes / 4096
    }

    fn measured(value: u64) -> Option<Measured> {
        Some(Measured {
            value,
            method: "m".into(),
        })
    }

    /// Bad options are refused before anything is measured.
    #[test]
    fn bad_options_name_the_option_before_measuring() {
        let dir = Path::new("/nonexistent-scratch");
        let e = calibrate("", dir, None, true).unwrap_err();
        assert!(e.starts_with("--name:"), "{e}");
        let out = Path::new("/nonexistent-dir/p.toml");
        let e = calibrate("m", dir, Some(out), true).unwrap_err();
        assert_eq!(e, "--out: /nonexistent-dir: no such directory");
    }

    /// Each cost is its measured operation: fio_io fio's null-engine I/O,
    /// the copy the touch-and-copy less the touch, the read hit and the
    /// disk's miss what the host's cost.
    #[test]
    fn derived_costs_add_up_to_the_measured_operations() {
        let mut h = foliosim_oracle::HostInfo::example();
        h.buffered_read_ns = Some(60_000);
        h.buffered_hit_ns = Some(900);
        let c = Calibration {
            host: Some(h),
            touch_mapped_ns: measured(40),
            copy_mapped_page_ns: measured(140),
            first_touch_mapped_ns: measured(200),
            fio_mmap_hit_io_ns: measured(250),
            fio_null_io_ns: measured(190),
            device_bw_bytes_per_s: measured(1_500_000_000),
            queue_depth: measured(256),
            ..Calibration::default()
        };
        let p = profile_of(&c, "test-host");
        let k = p.cpu_costs();
        assert_eq!((k.touch_mapped, k.copy_page), (40, 100));
        assert_eq!(k.fio_io, 190);
        assert!(p.cpu_costs["fio_io"].method.contains("took 250 ns"));
        let hit = k.syscall + k.copy_page + foliosim::mm::filemap::HIT_OVERHEAD_NS;
        assert_eq!(hit, 900);
        let dev = p.device("profile");
        let xfer = 4096 * 1_000_000_000 / dev.bw_bytes_per_s;
        assert_eq!(
            k.syscall + k.page_alloc + k.copy_page + xfer + dev.latency_ns,
            60_000
        );
        assert_eq!(dev.queue_depth, 256);
        // A fault-around window's first touches: one fault, each page
        // mapped, the pages mapped ahead loaded.
        let fa = h_fault_around_pages();
        assert_eq!(k.map_page, (200 * fa - k.minor_fault - (fa - 1) * 40) / fa);
        assert!(p.cpu_costs["map_page"].method.contains("200 ns"));
        // Written and read back, the same profile.
        let again = MachineProfile::parse(&p.to_toml(), "t.toml").unwrap();
        assert_eq!(again, p);
    }
}
