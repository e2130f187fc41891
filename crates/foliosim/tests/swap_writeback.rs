//! Anonymous reclaim to a disk swap device: the writes are asynchronous
//! (swap_writepage_bdev_async), and the device completes them while the
//! reclaimer goes on scanning. Traced on this project's host (Linux 6.18,
//! cgroup v1, swap file on virtio-blk; docs/findings/heldout-2026-12-02.md
//! section 8): once limit reclaim falls to priority 0, each call writes a
//! few hundred pages (508 in most calls) and then frees the first of them,
//! rotated to the inactive tail by folio_end_writeback, instead of writing
//! the whole inactive anon list before any write completes.

use foliosim::mm::{MmConfig, SwapKind};
use foliosim::scenario::run_scenario;
use foliosim::sim::SimConfig;
use foliosim::trace::{arm, TraceFilter, TraceSpec};
use foliosim_workload::scenario::parse;
use std::io::Write;
use std::sync::{Arc, Mutex};

const M: u64 = 1 << 20;

#[derive(Clone, Default)]
struct Buf(Arc<Mutex<Vec<u8>>>);

impl Write for Buf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Swap writes (mm_vmscan_write_folio) in each memcg reclaim call, in order.
fn writes_per_reclaim_call(text: &str) -> Vec<u64> {
    let mut calls = Vec::new();
    for line in text.lines() {
        if line.contains("mm_vmscan_memcg_reclaim_begin:") {
            calls.push(0);
        } else if line.contains("mm_vmscan_write_folio:") {
            if let Some(n) = calls.last_mut() {
                *n += 1;
            }
        }
    }
    calls
}

/// 96 MiB of anon written, then read at random beside a 128 MiB file read
/// at random, in a 176 MiB group: anon goes to swap once file reclaim no
/// longer keeps up (the shape of the host's development case).
const SCENARIO: &str = "[machine]\nmemory = \"1G\"\nseed = 21\n\n\
    [[cgroup]]\npath = \"app\"\nmemory.limit_in_bytes = \"176M\"\n\n\
    [[file]]\nname = \"data\"\nsize = \"128M\"\n\n\
    [[process]]\nname = \"app\"\ncgroup = \"app\"\nsteps = [\n\
    { op = \"mmap_anon\", map = \"heap\", size = \"96M\" },\n\
    { op = \"touch\", map = \"heap\", pattern = \"seq\", write = true },\n\
    { op = \"loop\", count = 3, steps = [\n\
      { op = \"touch\", map = \"heap\", pattern = \"random\" },\n\
      { op = \"read\", file = \"data\", pattern = \"random\", bs = \"16k\" },\n\
    ] },\n]\n";

#[test]
fn disk_swap_writes_complete_during_a_reclaim_call() {
    let sc = parse(SCENARIO, "t.toml").unwrap_or_else(|e| panic!("{e}"));
    let mut c = SimConfig {
        mm: MmConfig {
            ram_bytes: 1024 * M,
            reserved_bytes: 8 * M,
            swap: SwapKind::Disk,
            swap_bytes: 1024 * M,
            ..MmConfig::default()
        },
        ..SimConfig::default()
    };
    c.mm.check_invariants = true;
    // As the oracle models the host: statistics flushed every 2 s, the
    // first flush before the limit is met (the phase of the host's run
    // that went to swap; a later flush keeps anon out of reclaim here).
    c.mm.memcg_stats_lazy_flush = true;
    c.mm.stats_flush_phase_ns = 348_000_000;
    let buf = Buf::default();
    let filter = TraceFilter {
        events: TraceFilter::parse_events("mm_vmscan_memcg_reclaim_begin,mm_vmscan_write_folio")
            .unwrap(),
        ..TraceFilter::default()
    };
    arm(TraceSpec::new(Box::new(buf.clone()), filter));
    let r = run_scenario(c, &sc).unwrap();
    let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
    let calls = writes_per_reclaim_call(&text);
    let total: u64 = calls.iter().sum();
    let most = calls.iter().copied().max().unwrap_or(0);
    let pswpout = r.run.vmstat.get("pswpout").copied().unwrap_or(0);
    assert_eq!(
        total, pswpout,
        "every swap write is traced in a reclaim call"
    );
    assert!(pswpout > 2048, "the scenario swaps: {pswpout}");
    // 419 here; without completions during the call, one call wrote the
    // whole inactive anon list (24,350 of 24,439).
    assert!(
        most <= 2048,
        "one reclaim call wrote {most} of {pswpout} swapped pages"
    );
}
