//! `foliosim bench`: the model's own cost (host time, not simulated time)
//! per kernel event, for the classic LRU and MGLRU, all measured in one
//! run so that the figures compare with each other. Each event is timed
//! over many pages through the model's entry points and divided by the
//! kernel counter that counts the event (pgsteal for eviction,
//! workingset_refault for refaults, ...), so a figure is the cost of one
//! event as the kernel counts it. Timings vary with the host: nothing here
//! is asserted on time (docs/performance.md).

use std::time::Instant;

use serde::Serialize;

use crate::mm::filemap::OpenFile;
use crate::mm::readahead::FileRaState;
use crate::mm::vmscan::classic::ClassicLru;
use crate::mm::vmscan::lru_gen::LruGen;
use crate::mm::vmscan::ReclaimPolicy;
use crate::mm::vmstat::Item;
use crate::mm::{blkdev::DeviceProfile, Kernel, MmConfig, SwapKind, PAGE_SIZE};

/// One measured event.
#[derive(Clone, Debug, Serialize)]
pub struct EventCost {
    pub event: &'static str,
    /// classic or mglru.
    pub lru: &'static str,
    /// Host ns per event.
    pub ns: f64,
    /// Events counted (the divisor).
    pub events: u64,
}

fn kernel<P: ReclaimPolicy>(policy: P, swap: SwapKind, pages: u64) -> Kernel<P> {
    kernel_with(policy, swap, pages, false)
}

fn kernel_with<P: ReclaimPolicy>(
    policy: P,
    swap: SwapKind,
    pages: u64,
    large_folios: bool,
) -> Kernel<P> {
    Kernel::new(
        MmConfig {
            ram_bytes: (pages * 3 + 65536) * PAGE_SIZE,
            reserved_bytes: 16 << 20,
            swap,
            swap_bytes: (pages * 2) * PAGE_SIZE,
            device: DeviceProfile::by_name("nvme").expect("nvme is a profile"),
            large_folios,
            ..MmConfig::default()
        },
        policy,
    )
}

/// The readahead-heavy cell run with order-0 folios and with large ones:
/// 128 KiB sequential reads of a file four times its memcg's limit,
/// twice (readahead, eviction with shadows, refaults), read_ahead_kb 8192
/// (windows of 2 MiB: folios up to order 9). Per page read.
pub const LARGE_FOLIO_EVENTS: [(&str, bool); 2] = [
    ("seq read 4x limit, order 0", false),
    ("seq read 4x limit, large folios", true),
];

fn open(mapping: u32, memcg: u16, ra_kb: u64, random: bool) -> OpenFile {
    OpenFile {
        mapping,
        ra: FileRaState::new(ra_kb),
        fmode_random: random,
        vm_rand_read: false,
        vm_seq_read: false,
        memcg,
        pte: crate::mm::rmap::NO_PTES,
    }
}

struct Timer(Instant);
impl Timer {
    fn start() -> Self {
        Timer(Instant::now())
    }
    fn per(&self, events: u64) -> (f64, u64) {
        (
            self.0.elapsed().as_nanos() as f64 / events.max(1) as f64,
            events,
        )
    }
}

/// The page-cache, fault, eviction and refault events for one policy.
fn file_events<P: ReclaimPolicy>(
    mk: &dyn Fn() -> P,
    lru: &'static str,
    pages: u64,
    out: &mut Vec<EventCost>,
) {
    let mut push = |event: &'static str, (ns, events): (f64, u64)| {
        out.push(EventCost {
            event,
            lru,
            ns,
            events,
        })
    };
    // Miss with readahead (128 KiB window, sequential 4 KiB reads), then
    // hits on the same pages: per page read.
    {
        let mut k = kernel(mk(), SwapKind::None, pages);
        let m = k.add_memcg("bench", None);
        let mapping = k.core.add_file(pages * PAGE_SIZE);
        let mut f = open(mapping, m, 128, false);
        let t = Timer::start();
        for i in 0..pages {
            k.filemap_read(&mut f, i * PAGE_SIZE, PAGE_SIZE).unwrap();
        }
        push("page-cache miss, readahead", t.per(pages));
        let t = Timer::start();
        for i in 0..pages {
            k.filemap_read(&mut f, i * PAGE_SIZE, PAGE_SIZE).unwrap();
        }
        push("page-cache hit", t.per(pages));
    }
    for (event, large) in LARGE_FOLIO_EVENTS {
        let mut k = kernel_with(mk(), SwapKind::None, pages, large);
        let m = k.add_memcg("bench", Some(pages / 4));
        let mapping = k.core.add_data_file(pages * PAGE_SIZE);
        let mut f = open(mapping, m, 8192, false);
        let chunk = 128 << 10;
        let t = Timer::start();
        for _ in 0..2 {
            let mut pos = 0;
            while pos < pages * PAGE_SIZE {
                k.filemap_read(&mut f, pos, chunk).unwrap();
                pos += chunk;
            }
        }
        push(event, t.per(2 * pages));
    }
    // Faults on a cached file: each fault maps fault_around_bytes (64 KiB)
    // around the address, so touching every page takes one fault per 16
    // pages; per fault as pgfault counts them.
    {
        let mut k = kernel(mk(), SwapKind::None, pages);
        let m = k.add_memcg("bench", None);
        let mapping = k.core.add_file(pages * PAGE_SIZE);
        let mut f = open(mapping, m, 128, false);
        for i in 0..pages {
            k.filemap_read(&mut f, i * PAGE_SIZE, PAGE_SIZE).unwrap();
        }
        let before = k.core.vm.get(Item::PGFAULT);
        let t = Timer::start();
        for i in 0..pages {
            assert!(k.mmap_access(&mut f, i));
        }
        push(
            "fault + fault-around (cached)",
            t.per(k.core.vm.get(Item::PGFAULT) - before),
        );
    }
    // Eviction with shadow, then refault: fill a memcg with file pages,
    // shrink its limit to a quarter (every evicted page leaves a shadow
    // entry), lift it and read everything again.
    {
        let mut k = kernel(mk(), SwapKind::None, pages);
        let m = k.add_memcg("bench", None);
        let mapping = k.core.add_file(pages * PAGE_SIZE);
        let mut f = open(mapping, m, 0, true);
        for _ in 0..2 {
            for i in 0..pages {
                k.filemap_read(&mut f, i * PAGE_SIZE, PAGE_SIZE).unwrap();
            }
        }
        let target = pages / 4;
        k.core.drain_all_stock(m);
        k.core.memcgs[m as usize].limit = Some(target);
        let stolen = k.core.vm.get(Item::PGSTEAL_FILE);
        let t = Timer::start();
        while k.core.memcgs[m as usize].usage > target {
            if k.try_to_free_mem_cgroup_pages(m, 1024) == 0 && !k.reclaim_throttle_writeback() {
                break;
            }
        }
        let evicted = k.core.vm.get(Item::PGSTEAL_FILE) - stolen;
        push("eviction with shadow", t.per(evicted));
        // Per page read back in, each finding its shadow: MGLRU counts
        // workingset_refault only for shadows of recent generations
        // (lru_gen_test_recent()), so that counter is no divisor here.
        k.core.memcgs[m as usize].limit = None;
        let misses = k.core.vm.get(Item::PGPGIN);
        let t = Timer::start();
        for i in 0..pages {
            k.filemap_read(&mut f, i * PAGE_SIZE, PAGE_SIZE).unwrap();
        }
        push(
            "refault (read in)",
            t.per((k.core.vm.get(Item::PGPGIN) - misses) / (PAGE_SIZE / 1024)),
        );
    }
}

/// One forced aging pass; returns the page-table entries it walked.
type AgingPass<'a, P> = &'a dyn Fn(&mut Kernel<P>, u16) -> u64;

/// Anonymous fault, swap-out and swap-in on zram or a disk, per page;
/// with MGLRU, the aging walk per page-table entry walked. `mthp`: the
/// zram cells with 64 KiB anon folios (faulted, swapped out and in whole).
fn anon_events<P: ReclaimPolicy>(
    mk: &dyn Fn() -> P,
    lru: &'static str,
    disk: bool,
    mthp: bool,
    pages: u64,
    out: &mut Vec<EventCost>,
    aging: Option<AgingPass<P>>,
) {
    let mut push = |event: &'static str, (ns, events): (f64, u64)| {
        out.push(EventCost {
            event,
            lru,
            ns,
            events,
        })
    };
    let (swap, names) = if mthp {
        (
            SwapKind::Zram,
            [
                "anon fault (zram, 64K mTHP)",
                "swap-out (zram, 64K mTHP)",
                "swap-in (zram, 64K mTHP)",
            ],
        )
    } else if disk {
        (
            SwapKind::Disk,
            [
                "anon fault (disk machine)",
                "swap-out (disk)",
                "swap-in (disk)",
            ],
        )
    } else {
        (
            SwapKind::Zram,
            [
                "anon fault (zram machine)",
                "swap-out (zram)",
                "swap-in (zram)",
            ],
        )
    };
    let mut k = kernel(mk(), swap, pages);
    if mthp {
        k.core.cfg.thp_anon_orders = 1 << 4;
        k.core.cfg.thp_defrag = crate::mm::ThpDefrag::Always;
    }
    let m = k.add_memcg("bench", None);
    let mm = k.mm_alloc(m, 0);
    let space = k.mmap_anon(mm, pages * PAGE_SIZE);
    let t = Timer::start();
    for i in 0..pages {
        assert!(k.anon_access(space, i, m, true));
    }
    push(names[0], t.per(pages));
    if let Some(walked) = aging {
        // Touch every page again (young PTEs), then one forced walk.
        for i in 0..pages {
            assert!(k.anon_access(space, i, m, false));
        }
        let t = Timer::start();
        let n = walked(&mut k, m);
        push("MGLRU aging walk (per PTE)", t.per(n));
    }
    let target = pages / 4;
    k.core.drain_all_stock(m);
    k.core.memcgs[m as usize].limit = Some(target);
    let t = Timer::start();
    while k.core.memcgs[m as usize].usage > target {
        if k.try_to_free_mem_cgroup_pages(m, 1024) == 0 && !k.reclaim_throttle_writeback() {
            break;
        }
    }
    push(names[1], t.per(k.core.vm.get(Item::PSWPOUT)));
    k.core.memcgs[m as usize].limit = None;
    k.core.wait_until(k.core.now + 1_000_000_000);
    k.wb_complete();
    let t = Timer::start();
    for i in 0..pages {
        assert!(k.anon_access(space, i, m, false));
    }
    push(names[2], t.per(k.core.vm.get(Item::PSWPIN)));
}

/// Every event, classic then MGLRU, over `pages` pages each; the whole
/// set is measured `rounds` times and each event keeps its fastest round
/// (the least disturbed by other work on the host).
pub fn cost_per_event(pages: u64, rounds: u32) -> Vec<EventCost> {
    let mut best = one_round(pages);
    for _ in 1..rounds {
        for (b, r) in best.iter_mut().zip(one_round(pages)) {
            b.ns = b.ns.min(r.ns);
        }
    }
    best
}

fn one_round(pages: u64) -> Vec<EventCost> {
    let mut out = Vec::new();
    file_events(&ClassicLru::new, "classic", pages, &mut out);
    file_events(&LruGen::new, "mglru", pages, &mut out);
    for disk in [false, true] {
        anon_events(
            &ClassicLru::new,
            "classic",
            disk,
            false,
            pages,
            &mut out,
            None,
        );
    }
    anon_events(
        &ClassicLru::new,
        "classic",
        false,
        true,
        pages,
        &mut out,
        None,
    );
    // The debugfs command "+ memcg 0 max_seq 60 1" (forced walk).
    let walked = |k: &mut Kernel<LruGen>, m: u16| {
        let leaf = |k: &Kernel<LruGen>| {
            k.policy
                .lrugen
                .get(m as usize)
                .map_or(0, |l| l.stats.mm_leaf_total)
        };
        let before = leaf(k);
        k.policy.run_aging(&mut k.core, m, 60, true);
        leaf(k) - before
    };
    anon_events(
        &LruGen::new,
        "mglru",
        false,
        false,
        pages,
        &mut out,
        Some(&walked),
    );
    anon_events(&LruGen::new, "mglru", true, false, pages, &mut out, None);
    out
}

/// A synthetic foliosim trace of about `events` events in the shape of a
/// recorded application: four threads of one process reading a 256 MiB
/// file in 16 KiB preads at scattered offsets, faulting a 64 MiB shared
/// library's mapping and touching their heap (faults every fourth page),
/// in a 128 MiB group, so reads miss, reclaim and refault.
pub fn synthetic_trace(events: u64) -> String {
    use std::fmt::Write;
    const MIB: u64 = 1 << 20;
    let mut t = format!(
        "{}\n# memcg-limit: {}\nF 1 {2} {2} - /data\nF 2 {3} {3} - /lib.so\n0 0 n 1 p\n",
        foliosim_workload::rectrace::MAGIC,
        128 * MIB,
        256 * MIB,
        64 * MIB
    );
    t += "1 1 n 2 t\n1 1 n 3 t\n1 1 n 4 t\n1 1 o 1 1\n1 1 mf 1 16384 2 0 p\n1 1 ma 2 65536\n";
    let mut x: u64 = 1;
    for i in 0..events {
        // The LCG of the catalogue's drivers (x = 69069 x + 1 mod 2^32).
        x = (69069 * x + 1) % (1 << 32);
        let task = 1 + i % 4;
        let _ = match i % 8 {
            0..=4 => writeln!(t, "2 {task} r 1 {} 16384 3", (x % 16384) * 16384),
            5 | 6 => writeln!(t, "2 {task} pf 1 {} r", x % 16384),
            _ => writeln!(t, "2 {task} pa 2 {} w", (x % 16384) * 4),
        };
    }
    t += "1 2 x\n1 3 x\n1 4 x\n1 1 x\n";
    t
}

/// Host seconds one replay of `trace` takes with the whole kernel model
/// (`cfg` as given, the trace's own memcg limit when `cfg` has none),
/// and the events it replayed.
pub fn replay_speed(
    cfg: crate::sim::SimConfig,
    trace: &[u8],
    label: &str,
) -> Result<(u64, f64), String> {
    let rd = foliosim_workload::rectrace::Reader::new(trace, label).map_err(|e| e.to_string())?;
    let t = Instant::now();
    let (_, st) = crate::recreplay::replay(cfg, rd, Default::default())?;
    Ok((st.events, t.elapsed().as_secs_f64()))
}

/// The table `foliosim bench` prints.
pub fn render(rows: &[EventCost], pages: u64, runs: &[(String, f64)]) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "model cost per event, ns of host time ({pages} pages per event kind)"
    );
    let _ = writeln!(
        s,
        "{:<32} {:>10} {:>10} {:>12}",
        "event", "classic", "mglru", "events"
    );
    let mut seen: Vec<&str> = Vec::new();
    for r in rows {
        if seen.contains(&r.event) {
            continue;
        }
        seen.push(r.event);
        let get = |lru: &str| rows.iter().find(|x| x.event == r.event && x.lru == lru);
        let cell = |lru: &str| get(lru).map_or("-".to_string(), |x| format!("{:.1}", x.ns));
        let _ = writeln!(
            s,
            "{:<32} {:>10} {:>10} {:>12}",
            r.event,
            cell("classic"),
            cell("mglru"),
            r.events
        );
    }
    if !runs.is_empty() {
        let _ = writeln!(s, "\nwhole runs, s of host time");
        for (what, secs) in runs {
            let _ = writeln!(s, "{what:<60} {secs:>8.2}");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The divisors are the kernel's counts of each event: every read of a
    /// cached page is a hit, fault-around maps 64 KiB per fault, shrinking
    /// to a quarter evicts at least three quarters, and every page evicted
    /// with a shadow refaults when read again.
    #[test]
    fn events_are_counted_as_the_kernel_counts_them() {
        let pages = 4096;
        let rows = cost_per_event(pages, 1);
        let get = |e: &str, l: &str| {
            rows.iter()
                .find(|r| r.event == e && r.lru == l)
                .unwrap_or_else(|| panic!("{e} {l} missing"))
                .events
        };
        for lru in ["classic", "mglru"] {
            assert_eq!(get("page-cache hit", lru), pages);
            for (e, _) in LARGE_FOLIO_EVENTS {
                assert_eq!(get(e, lru), 2 * pages, "every page read twice");
            }
            assert_eq!(get("fault + fault-around (cached)", lru), pages / 16);
            let evicted = get("eviction with shadow", lru);
            assert!(evicted >= pages * 3 / 4, "{lru}: {evicted}");
            // Every evicted page, and only those, is read in again.
            assert_eq!(get("refault (read in)", lru), evicted, "{lru}");
            assert!(get("swap-out (zram)", lru) >= pages * 3 / 4, "{lru}");
            assert_eq!(
                get("swap-in (zram)", lru),
                get("swap-out (zram)", lru),
                "{lru}"
            );
        }
        // 64 KiB mTHP: every page faulted in whole folios, swapped out
        // and back in (pages, not folios, are the divisor).
        assert_eq!(get("anon fault (zram, 64K mTHP)", "classic"), pages);
        let out = get("swap-out (zram, 64K mTHP)", "classic");
        assert!(out >= pages * 3 / 4 && out % 16 == 0, "{out}");
        assert_eq!(get("swap-in (zram, 64K mTHP)", "classic"), out);
        // Only MGLRU ages; its forced walk visits every mapped PTE.
        assert!(rows
            .iter()
            .all(|r| !(r.lru == "classic" && r.event.starts_with("MGLRU"))));
        assert_eq!(get("MGLRU aging walk (per PTE)", "mglru"), pages);
        assert!(rows.iter().all(|r| r.ns.is_finite() && r.ns > 0.0));
    }
}
