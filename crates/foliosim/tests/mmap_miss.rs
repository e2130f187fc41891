//! mmap_miss on a fault that finds its folio cached: the registry's
//! `mmap-miss-skip-locked` (Roman Gushchin's 6.18 patch) leaves it alone
//! while the folio is still locked for its read.

use foliosim::mm::filemap::OpenFile;
use foliosim::mm::vmscan::classic::ClassicLru;
use foliosim::mm::{Kernel, PAGE_SIZE};

mod common;

/// mmap_miss after a cached-folio fault on a folio whose read is still in
/// flight, from 5, with the patch `on` or off.
fn miss_after_fault_on_a_folio_under_read(on: bool) -> u32 {
    let mut cfg = common::cfg();
    cfg.variants
        .apply(if on {
            "mmap-miss-skip-locked"
        } else {
            "no-mmap-miss-skip-locked"
        })
        .unwrap();
    let mut k = Kernel::new(cfg, ClassicLru::new());
    let m = k.add_memcg("t", None);
    let mut f = OpenFile::new(k.core.add_data_file(64 * PAGE_SIZE), 128, m);
    // Read pages 0-3 without waiting: they stay locked until the read ends.
    k.force_page_cache_ra(&f, 0, 4);
    let id = k.core.files[f.mapping as usize].folio(1).expect("read");
    f.ra.mmap_miss = 5;
    k.do_async_mmap_readahead(&mut f, id, 1);
    f.ra.mmap_miss
}

#[test]
fn a_fault_on_a_folio_under_read_is_no_hit_with_the_patch() {
    assert_eq!(miss_after_fault_on_a_folio_under_read(false), 4);
    assert_eq!(miss_after_fault_on_a_folio_under_read(true), 5);
}
