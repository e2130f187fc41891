//! Processes that map one file each have page tables of their own
//! (mm/rmap.rs). Traced on this project's host (Linux 6.18; three
//! processes touching one 192 MiB mapped file at random,
//! docs/findings/heldout-2026-12-02.md section 9): every process
//! faults each 16-page fault-around window it touches (9,086 fault-around
//! calls, the model made 3,160 when a page one process mapped counted as
//! mapped for all), and as each exits, zap_pte_range() marks the folios
//! its young PTEs mapped accessed, so pages two processes used end up
//! active (48,276 activations at exit on the host).

use foliosim::mm::MmConfig;
use foliosim::scenario::{run_scenario, ScenarioReport};
use foliosim::sim::SimConfig;
use foliosim_workload::scenario::parse;

const M: u64 = 1 << 20;
/// 8 MiB: 2,048 pages, 128 fault-around windows of 16 pages.
const PAGES: u64 = 2048;

fn run(readers: u32, extra_steps: &str) -> ScenarioReport {
    let text = format!(
        "[machine]\nmemory = \"512M\"\n\n\
         [[file]]\nname = \"f\"\nsize = \"8M\"\n\n\
         [[process]]\nname = \"warm\"\nsteps = [\n\
         {{ op = \"read\", file = \"f\", bs = \"128k\", passes = 1 }},\n\
         {{ op = \"barrier\", name = \"cached\" }},\n]\n\n\
         [[process]]\nname = \"reader\"\ncount = {readers}\nsteps = [\n\
         {{ op = \"barrier\", name = \"cached\" }},\n\
         {{ op = \"mmap_file\", map = \"m\", file = \"f\" }},\n\
         {{ op = \"touch\", map = \"m\", pattern = \"seq\" }},\n{extra_steps}]\n"
    );
    let sc = parse(&text, "t.toml").unwrap_or_else(|e| panic!("{e}"));
    let c = SimConfig {
        mm: MmConfig {
            ram_bytes: 512 * M,
            reserved_bytes: 8 * M,
            check_invariants: true,
            ..MmConfig::default()
        },
        ..SimConfig::default()
    };
    run_scenario(c, &sc).unwrap()
}

fn vm(r: &ScenarioReport, k: &str) -> u64 {
    r.run.vmstat[k]
}

#[test]
fn each_process_faults_the_pages_it_maps_into_its_own_page_tables() {
    let one = run(1, "");
    let three = run(3, "");
    // The file is cached: every fault is a minor one over a window.
    assert_eq!(vm(&one, "pgmajfault"), vm(&three, "pgmajfault"));
    let windows = PAGES / 16;
    let faults = |r: &ScenarioReport| vm(r, "pgfault") - vm(&one, "pgfault") + windows;
    assert_eq!(faults(&one), windows);
    assert_eq!(
        faults(&three),
        3 * windows,
        "each reader faults each window"
    );
}

#[test]
fn pages_several_processes_used_are_active_after_they_exit() {
    // The warming read marked each page accessed once (PG_referenced);
    // the first reader's exit marks them again, which activates them. No
    // activation came from exits before (the PTEs went unread).
    let three = run(3, "");
    let act = vm(&three, "pgactivate");
    assert!(
        act >= PAGES,
        "the exits activated the pages the readers used: {act}"
    );
    let active = three.run.memcg["active_file"];
    assert_eq!(active, PAGES * 4096, "the whole file is active");
}

#[test]
fn madv_dontneed_zaps_only_this_processes_ptes() {
    // Each reader drops its PTEs and touches the file again: it faults
    // every window a second time, and nobody else's PTEs help or go.
    let again = "{ op = \"madvise\", map = \"m\", advice = \"dontneed\" },\n\
                 { op = \"touch\", map = \"m\", pattern = \"seq\" },\n";
    let base = run(2, "");
    let r = run(2, again);
    let windows = PAGES / 16;
    assert_eq!(vm(&r, "pgfault") - vm(&base, "pgfault"), 2 * windows);
    assert_eq!(vm(&r, "pgmajfault"), vm(&base, "pgmajfault"));
}
