//! The model's own cost (host wall time, not simulated time) per anonymous
//! fault, swap-out and swap-in, on zram and on a disk, beside a page-cache
//! read hit and miss, all measured in one run so the ratios compare like
//! with like. Not a test: timings vary with the host.
//!
//!     cargo run --release -p foliosim --example bench_anon [PAGES]

use std::time::Instant;

use foliosim::mm::filemap::OpenFile;
use foliosim::mm::readahead::FileRaState;
use foliosim::mm::vmscan::classic::ClassicLru;
use foliosim::mm::vmstat::Item;
use foliosim::mm::{blkdev::DeviceProfile, Kernel, MmConfig, SwapKind, PAGE_SIZE};

fn kernel(swap: SwapKind, pages: u64) -> Kernel<ClassicLru> {
    Kernel::new(
        MmConfig {
            ram_bytes: (pages * 3 + 65536) * PAGE_SIZE,
            reserved_bytes: 16 << 20,
            swap,
            swap_bytes: (pages * 2) * PAGE_SIZE,
            device: DeviceProfile::by_name("nvme").unwrap(),
            ..MmConfig::default()
        },
        ClassicLru::new(),
    )
}

fn per(ns: u128, n: u64) -> f64 {
    ns as f64 / n.max(1) as f64
}

/// (fault ns, swap-out ns, swap-in ns) per page for one swap device.
fn anon(swap: SwapKind, pages: u64) -> (f64, f64, f64) {
    let mut k = kernel(swap, pages);
    let m = k.add_memcg("bench", None);
    let mm = k.mm_alloc(m, 0);
    let space = k.mmap_anon(mm, pages * PAGE_SIZE);
    let t = Instant::now();
    for i in 0..pages {
        assert!(k.anon_access(space, i, m, true));
    }
    let fault = per(t.elapsed().as_nanos(), pages);
    // Swap-out: limit reclaim of three quarters of the region.
    let target = pages / 4;
    k.core.drain_all_stock(m);
    k.core.memcgs[m as usize].limit = Some(target);
    let t = Instant::now();
    while k.core.memcgs[m as usize].usage > target {
        if k.try_to_free_mem_cgroup_pages(m, 1024) == 0 && !k.reclaim_throttle_writeback() {
            break;
        }
    }
    let out_ns = t.elapsed().as_nanos();
    let out = k.core.vm.get(Item::PSWPOUT);
    // Swap-in: read everything back with the limit lifted.
    k.core.memcgs[m as usize].limit = None;
    k.core.wait_until(k.core.now + 1_000_000_000);
    k.wb_complete();
    let t = Instant::now();
    for i in 0..pages {
        assert!(k.anon_access(space, i, m, false));
    }
    let in_ns = t.elapsed().as_nanos();
    let inn = k.core.vm.get(Item::PSWPIN);
    (fault, per(out_ns, out), per(in_ns, inn))
}

/// (hit ns, miss ns) per 4 KiB read(2) of the page cache.
fn page_cache(pages: u64) -> (f64, f64) {
    let mut k = kernel(SwapKind::None, pages);
    let m = k.add_memcg("bench", None);
    let mapping = k.core.add_file(pages * PAGE_SIZE);
    let mut f = OpenFile {
        mapping,
        ra: FileRaState::new(128),
        // POSIX_FADV_RANDOM: every miss reads its one page.
        fmode_random: true,
        vm_rand_read: false,
        vm_seq_read: false,
        memcg: m,
    };
    let t = Instant::now();
    for i in 0..pages {
        k.filemap_read(&mut f, i * PAGE_SIZE, PAGE_SIZE).unwrap();
    }
    let miss = per(t.elapsed().as_nanos(), pages);
    let t = Instant::now();
    for i in 0..pages {
        k.filemap_read(&mut f, i * PAGE_SIZE, PAGE_SIZE).unwrap();
    }
    (per(t.elapsed().as_nanos(), pages), miss)
}

fn main() {
    let pages: u64 = match std::env::args().nth(1) {
        None => 200_000,
        Some(a) => match a.parse() {
            Ok(n) if n >= 1024 => n,
            _ => {
                eprintln!("bench_anon: PAGES: '{a}' is not a number >= 1024");
                std::process::exit(2);
            }
        },
    };
    let (hit, miss) = page_cache(pages);
    let (zf, zo, zi) = anon(SwapKind::Zram, pages);
    let (df, dout, din) = anon(SwapKind::Disk, pages);
    println!("model cost per page, ns of host time ({pages} pages; ratio to a page-cache hit)");
    for (what, ns) in [
        ("page-cache read hit", hit),
        ("page-cache read miss", miss),
        ("anon fault (zram machine)", zf),
        ("anon fault (disk machine)", df),
        ("swap-out zram", zo),
        ("swap-out disk", dout),
        ("swap-in zram", zi),
        ("swap-in disk", din),
    ] {
        println!("{what:<28} {ns:>8.1} ns  {:>6.2}x", ns / hit);
    }
}
