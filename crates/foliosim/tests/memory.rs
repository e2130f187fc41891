//! The model's own memory follows what the workload touches: page frames
//! are created as first allocated and a file's page-cache index only has
//! leaves where pages were cached (issue 12, "Memory").

use foliosim::mm::filemap::OpenFile;
use foliosim::mm::readahead::FileRaState;
use foliosim::mm::vmscan::classic::ClassicLru;
use foliosim::mm::{Kernel, MmConfig, PAGE_SIZE};

fn open(k: &mut Kernel<ClassicLru>, bytes: u64, memcg: u16) -> OpenFile {
    let mapping = k.core.add_file(bytes);
    OpenFile {
        mapping,
        ra: FileRaState::new(128),
        fmode_random: false,
        vm_rand_read: false,
        vm_seq_read: false,
        memcg,
        pte: foliosim::mm::rmap::NO_PTES,
    }
}

#[test]
fn a_1tib_machine_reading_4mib_of_a_1tib_file_allocates_what_it_read() {
    let cfg = MmConfig {
        ram_bytes: 1 << 40,
        check_invariants: true,
        ..MmConfig::default()
    };
    let mut k = Kernel::new(cfg, ClassicLru::new());
    let mut f = open(&mut k, 1 << 40, 0);
    let pages = 1024u64;
    for p in 0..pages {
        k.filemap_read(&mut f, p * PAGE_SIZE, PAGE_SIZE).unwrap();
    }
    let cached = k.core.files[f.mapping as usize].nrpages;
    // Readahead runs ahead of the reader, by at most its 32-page window
    // twice over (the async window is queued one window ahead).
    assert!((pages..=pages + 64).contains(&cached), "cached {cached}");
    // Nothing was freed, so the arena holds exactly the cached folios.
    let t = &k.core.folios;
    assert_eq!(t.nr_frames() as u64, cached);
    assert_eq!(
        t.nr_free,
        t.capacity() as u64 - cached,
        "free counts the never-used frames"
    );
    k.check_invariants().unwrap();
    // 24 bytes per frame and a 528-byte leaf per 64 cached pages, each
    // arena up to twice what it holds (Vec doubling), and the index's
    // directory: 4 bytes per 64 pages of the 1 TiB file (16 MiB), the one
    // cost that follows the size.
    let dir = (1u64 << 40) / PAGE_SIZE / 64 * 4;
    let per_page_bound = 2 * (24 + 528 / 64 + 1);
    let fp = k.core.mem_footprint() as u64;
    assert!(fp >= dir, "footprint {fp} below the directory's {dir}");
    assert!(
        fp <= dir + cached * per_page_bound + 4096,
        "footprint {fp}: more than {per_page_bound} bytes per cached page over the directory"
    );
}

#[test]
fn freed_frames_are_reused_before_new_ones_are_made() {
    let cfg = MmConfig {
        ram_bytes: 64 << 20,
        reserved_bytes: 4 << 20,
        check_invariants: true,
        ..MmConfig::default()
    };
    let mut k = Kernel::new(cfg, ClassicLru::new());
    let limit = 1024;
    let m = k.add_memcg("t", Some(limit));
    let mut f = open(&mut k, 4096 * PAGE_SIZE, m);
    for p in 0..4096 {
        k.filemap_read(&mut f, p * PAGE_SIZE, PAGE_SIZE).unwrap();
    }
    // Four times the limit went through the cache; reclaim freed frames
    // and the arena only grows when no freed frame is left, so it stays at
    // the peak of frames in use, which the memcg limit bounds.
    let frames = k.core.folios.nr_frames() as u64;
    assert!(
        frames <= limit + 1,
        "{frames} frames for a {limit}-page memcg"
    );
    assert!(
        frames >= limit / 2,
        "the cache filled the memcg: {frames} frames"
    );
    assert!(
        k.core.folios.capacity() as u64 > 4 * limit,
        "RAM itself was not the bound"
    );
    k.check_invariants().unwrap();
}

#[test]
fn streaming_a_file_16_times_ram_keeps_the_index_to_what_is_present() {
    let cfg = MmConfig {
        ram_bytes: 256 << 20,
        reserved_bytes: 16 << 20,
        ..MmConfig::default()
    };
    let mut k = Kernel::new(cfg, ClassicLru::new());
    let size = 4u64 << 30;
    let mut f = open(&mut k, size, 0);
    for pos in (0..size).step_by(1 << 20) {
        k.filemap_read(&mut f, pos, 1 << 20).unwrap();
    }
    k.check_invariants().unwrap();
    let a = &k.core.files[f.mapping as usize];
    let file_pages = size / PAGE_SIZE;
    assert_eq!(
        k.core.vm.get(foliosim::mm::vmstat::Item::PGPGIN),
        size / 1024,
        "the whole file was read in"
    );
    // Emptied leaves were released: every leaf left holds a page or a shadow.
    assert_eq!(a.nodes().filter(|(_, n)| n.count > 0).count(), a.nr_nodes());
    // Pages and shadows left: the cache (at most RAM) and the shadows the
    // shadow-node shrinker lets stay. It trims toward a node per 8 LRU
    // pages, halving the excess when reclaim calls it, so allow twice that.
    let ram_pages = (240u64 << 20) / PAGE_SIZE;
    let leaves = a.nr_nodes() as u64;
    assert!(leaves <= ram_pages / 64 + ram_pages / 4, "{leaves} leaves");
    assert!(
        k.core
            .vm
            .get(foliosim::mm::vmstat::Item::WORKINGSET_NODERECLAIM)
            > 0
    );
    assert!(
        a.nrshadows > 0 && a.nrshadows < file_pages - a.nrpages,
        "the shrinker dropped shadows"
    );
    // A streamed file fills its leaves: at most 16 bytes per entry present
    // (a 528-byte leaf holds 64).
    let entries = a.nrpages + a.nrshadows;
    assert!(
        leaves * 528 <= 16 * entries,
        "{leaves} leaves for {entries} entries"
    );
}

#[test]
fn the_hosts_memory_check_bounds_what_a_run_allocates() {
    use foliosim::sim::footprint_bytes;
    // The CLI refuses runs whose bound exceeds the host's memory: the bound
    // follows the workload's pages, not the simulated machine, so a 1 TiB
    // machine with a 10 GiB file passes on a laptop...
    let big = MmConfig {
        ram_bytes: 1 << 40,
        ..MmConfig::default()
    };
    assert!(footprint_bytes(&big, [10u64 << 30]) < 1 << 30);
    // ...while frames never exceed the machine's, whatever the files.
    let small = MmConfig {
        ram_bytes: 64 << 20,
        reserved_bytes: 4 << 20,
        check_invariants: true,
        ..MmConfig::default()
    };
    let file = 256u64 << 20;
    let bound = footprint_bytes(&small, [file]);
    let frames = (60u128 << 20) / PAGE_SIZE as u128;
    assert!(
        bound < frames * 24 + file as u128 / PAGE_SIZE as u128 * 9 + 4096,
        "bound {bound}"
    );
    // A run that streams the whole file stays within the bound (each arena
    // up to twice what it holds: Vec doubling).
    let mut k = Kernel::new(small, ClassicLru::new());
    let mut f = open(&mut k, file, 0);
    for p in 0..file / PAGE_SIZE {
        k.filemap_read(&mut f, p * PAGE_SIZE, PAGE_SIZE).unwrap();
    }
    let fp = k.core.mem_footprint() as u128;
    assert!(
        fp <= 2 * bound,
        "footprint {fp} over twice the bound {bound}"
    );
    assert!(k.core.folios.nr_frames() as u128 <= frames);
}
