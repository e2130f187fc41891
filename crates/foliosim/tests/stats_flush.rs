//! Lazily flushed memcg statistics (mm/memcontrol.c, 6.18): the periodic
//! flusher runs every FLUSH_TIME (2 s); classic reclaim and the workingset
//! code read lruvec_page_state(), i.e. the values as of the last flush.

use foliosim::mm::filemap::OpenFile;
use foliosim::mm::memcontrol::{MemcgId, MemcgKnobs};
use foliosim::mm::readahead::FileRaState;
use foliosim::mm::vmscan::classic::ClassicLru;
use foliosim::mm::vmstat::Item;
use foliosim::mm::{Kernel, MmConfig, SwapKind, FLUSH_TIME_NS, PAGE_SIZE};

fn cfg(phase_ns: u64) -> MmConfig {
    MmConfig {
        ram_bytes: 256 << 20,
        reserved_bytes: 4 << 20,
        swap: SwapKind::Zram,
        swap_bytes: 64 << 20,
        check_invariants: true,
        stats_flush_phase_ns: phase_ns,
        memcg_stats_lazy_flush: true,
        ..MmConfig::default()
    }
}

fn open(k: &mut Kernel<ClassicLru>, pages: u64, memcg: MemcgId) -> OpenFile {
    OpenFile {
        mapping: k.core.add_file(pages * PAGE_SIZE),
        ra: FileRaState::new(128),
        fmode_random: false,
        vm_rand_read: false,
        vm_seq_read: false,
        memcg,
        pte: foliosim::mm::rmap::NO_PTES,
    }
}

#[test]
fn periodic_flush_every_flush_time_from_its_phase() {
    // The phase is when the first flush runs; 0 means at FLUSH_TIME, a
    // later one (a host's deferred flusher, as the oracle measures it) is
    // kept.
    for (phase, first) in [
        (0, FLUSH_TIME_NS),
        (FLUSH_TIME_NS, FLUSH_TIME_NS),
        (500_000_000, 500_000_000),
        (FLUSH_TIME_NS + 300_000_000, FLUSH_TIME_NS + 300_000_000),
    ] {
        let mut k = Kernel::new(cfg(phase), ClassicLru::new());
        k.core.schedule_timeout(first - 1);
        assert_eq!(
            k.core.stats_flush_seq, 0,
            "phase {phase}: none before {first}"
        );
        k.core.schedule_timeout(1);
        assert_eq!(k.core.stats_flush_seq, 1, "phase {phase}");
        assert_eq!(k.core.flush_last_time, first);
        // A long sleep runs every flush it crosses; the last one is the
        // ratelimit's reference.
        k.core.schedule_timeout(3 * FLUSH_TIME_NS + 1);
        assert_eq!(k.core.stats_flush_seq, 4);
        assert_eq!(k.core.flush_last_time, first + 3 * FLUSH_TIME_NS);
    }
}

/// A tmpfs file half again the group's limit, written through a shared
/// mapping, then read once in order. A fault swap-in (SGP_CACHE) is not
/// marked accessed, so reclaim's first look at it (PTE young) keeps it and
/// its second (not touched again) swaps it out: nothing is activated. Had
/// the swap-ins been marked, each would be activated on its first look;
/// with the flushed sizes still empty (no flush before 2 s)
/// inactive_is_low() never lets reclaim age the active list back, and
/// the group would OOM once everything was active.
#[test]
fn shmem_fault_swapins_are_not_activated() {
    let mut k = Kernel::new(cfg(FLUSH_TIME_NS), ClassicLru::new());
    let m = k.add_memcg_child(
        0,
        "m",
        MemcgKnobs {
            max: Some(2048),
            ..Default::default()
        },
    );
    let mm = k.mm_alloc(m, 0);
    k.core.current = mm;
    let mut f = OpenFile {
        mapping: k.core.shmem_file_setup(3072 * PAGE_SIZE),
        ..open(&mut k, 0, m)
    };
    for p in 0..3072 {
        assert!(k.mmap_write_access(&mut f, p).0, "write of page {p}");
    }
    for p in 0..3072 {
        assert!(k.mmap_access(&mut f, p), "read of page {p}: OOM");
    }
    if let Err(e) = k.check_invariants() {
        panic!("{e}");
    }
    assert!(k.core.now < FLUSH_TIME_NS, "no flush during the run");
    let s = k.core.memcg_stat_total(m);
    assert_eq!(s.get(Item::OOM_KILL), 0);
    // The read pass finds every page swapped out (each was reclaimed
    // before the pass came back to it).
    assert_eq!(s.get(Item::PSWPIN), 3072);
    assert_eq!(s.get(Item::PGACTIVATE), 0);
}

/// 1024 anon pages and a 768-page file F in a 2048-page group, optionally a
/// sleep across a flush, then a 512-page file G that pushes part of F out,
/// then F read again. Returns (file refaults, file activations, clock).
fn refault_after(sleep_ns: u64) -> (u64, u64, u64) {
    let mut k = Kernel::new(cfg(0), ClassicLru::new());
    let m = k.add_memcg_child(
        0,
        "m",
        MemcgKnobs {
            max: Some(2048),
            ..Default::default()
        },
    );
    let mm = k.mm_alloc(m, 0);
    k.core.current = mm;
    let space = k.mmap_anon(mm, 1024 * PAGE_SIZE);
    for i in 0..1024 {
        assert!(k.anon_access(space, i, m, true));
    }
    let mut f = open(&mut k, 768, m);
    let mut g = open(&mut k, 512, m);
    assert_eq!(
        k.filemap_read(&mut f, 0, 768 * PAGE_SIZE),
        Some(768 * PAGE_SIZE)
    );
    k.core.schedule_timeout(sleep_ns);
    assert_eq!(
        k.filemap_read(&mut g, 0, 512 * PAGE_SIZE),
        Some(512 * PAGE_SIZE)
    );
    assert_eq!(
        k.filemap_read(&mut f, 0, 768 * PAGE_SIZE),
        Some(768 * PAGE_SIZE)
    );
    if let Err(e) = k.check_invariants() {
        panic!("{e}");
    }
    let s = k.core.memcg_stat_total(m);
    (
        s.get(Item::WORKINGSET_REFAULT_FILE),
        s.get(Item::WORKINGSET_ACTIVATE_FILE),
        k.core.now,
    )
}

#[test]
fn refaults_before_the_first_flush_see_an_empty_workingset() {
    // Before any flush the group's flushed LRU sizes are 0, so
    // workingset_test_recent() finds no refault distance small enough.
    let (refaults, activations, now) = refault_after(0);
    assert!(
        now < FLUSH_TIME_NS,
        "the run must end before the first flush ({now} ns)"
    );
    assert!(refaults > 0, "F must refault");
    assert_eq!(activations, 0);
    // The same run with a flush after F was read: the flushed sizes hold
    // the anon and F, and the refaults of F fit in them.
    let (refaults, activations, _) = refault_after(FLUSH_TIME_NS);
    assert!(refaults > 0, "F must refault");
    assert!(
        activations > 0,
        "{activations} of {refaults} refaults activated"
    );
}

/// scn-mix-swappiness-200 (an anon pass beside random 4k preads of a
/// file, 256 MiB group, zram) with the first flush at 1.5 s: here a read
/// batch's folio is reclaimed under the async readahead of the same
/// read and its id reused for another index (the kernel's batch holds
/// references; the model re-checks). Taking the stale folio for the
/// read's page made the copied length wrap and the clock jump by ~2^52 ns.
/// The run's CPU time (elapsed less I/O wait) stays that of its work.
#[test]
fn a_read_never_copies_from_a_folio_freed_under_its_readahead() {
    use foliosim::scenario::run_scenario;
    use foliosim::sim::{LruKind, SimConfig};
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../oracle/cases/scn-mix-swappiness-200.toml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let sc = foliosim_workload::scenario::parse(&text, path).unwrap();
    let c = SimConfig {
        mm: MmConfig {
            ram_bytes: 24 << 30,
            read_ahead_kb: 8192,
            swap: SwapKind::Zram,
            swap_bytes: 1 << 30,
            stats_flush_phase_ns: 1_500_000_000,
            memcg_stats_lazy_flush: true,
            ..MmConfig::default()
        },
        lru: LruKind::Classic,
        memcg_limit: None,
        seed: 1,
        timeline: false,
        lru_gen_sysctl: vec![],
    };
    let r = run_scenario(c, &sc).unwrap();
    let cpu = r.run.elapsed_ns - r.run.io_wait_ns;
    assert!(cpu < 20 * FLUSH_TIME_NS, "cpu time {cpu} ns");
    assert!(r.run.vmstat["pswpin"] > 0);
}
