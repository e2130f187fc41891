//! Writes over evicted page cache, and the executor's large I/O buffers.
//!
//! filemap_add_folio() gives a shadow entry to workingset_refault() only
//! when the caller's gfp lacks __GFP_WRITE: a folio created by write_begin
//! (FGP_WRITE) is about to be overwritten, so its eviction is no refault.
//! Measured on this project's host (Linux 6.18, cgroup v1): a 384 MiB file
//! written twice over in a 192 MiB group had 0 workingset_refault_file in
//! three runs, where the model counted 98,048. A read of the evicted pages
//! still refaults.
//!
//! An I/O step with a buffer of 128 KiB or more maps it at the step's start
//! and writes it through (the oracle's executor), so each such step
//! charges its pages (memory.stat pgpgin) and frees them at its end.

use foliosim::mm::MmConfig;
use foliosim::scenario::{run_scenario, ScenarioReport};
use foliosim::sim::SimConfig;
use foliosim_workload::scenario::parse;

const M: u64 = 1 << 20;

fn run(steps: &str, process_memory: bool) -> ScenarioReport {
    let text = format!(
        "[machine]\nmemory = \"1G\"\nswap = \"none\"\nseed = 1\n\n\
         [[cgroup]]\npath = \"app\"\nmemory.limit_in_bytes = \"64M\"\n\n\
         [[file]]\nname = \"out\"\nsize = \"128M\"\nprefill = false\n\n\
         [[process]]\nname = \"writer\"\ncgroup = \"app\"\nsteps = [\n{steps}]\n"
    );
    let sc = parse(&text, "t.toml").unwrap_or_else(|e| panic!("{e}"));
    let mut c = SimConfig {
        mm: MmConfig {
            ram_bytes: 1024 * M,
            reserved_bytes: 8 * M,
            process_memory,
            ..MmConfig::default()
        },
        ..SimConfig::default()
    };
    c.mm.check_invariants = true;
    run_scenario(c, &sc).unwrap_or_else(|e| panic!("{e}"))
}

fn stat(r: &ScenarioReport, key: &str) -> u64 {
    r.cgroups["app"].get(key).copied().unwrap_or(0)
}

const WRITE: &str = "{ op = \"write\", file = \"out\", pattern = \"seq\", bs = \"1M\" },\n";
const READ: &str = "{ op = \"read\", file = \"out\", pattern = \"seq\", bs = \"64k\" },\n";

#[test]
fn rewriting_evicted_pages_is_no_refault() {
    let r = run(&format!("{WRITE}{WRITE}"), false);
    assert!(
        stat(&r, "pgsteal_file") > 16_384,
        "the first pass is evicted by the second"
    );
    assert_eq!(stat(&r, "workingset_refault_file"), 0);
}

#[test]
fn reading_evicted_written_pages_refaults() {
    let r = run(&format!("{WRITE}{READ}"), false);
    assert!(
        stat(&r, "workingset_refault_file") > 8_192,
        "the read met the written pages' shadows: {}",
        stat(&r, "workingset_refault_file")
    );
}

#[test]
fn a_large_step_buffer_is_charged_at_each_step() {
    let charges = |steps: &str, pm| stat(&run(steps, pm), "memcg_pgpgin_events");
    let two = format!("{WRITE}{WRITE}");
    // The executor's own charges: with process memory less without.
    let one = charges(WRITE, true) - charges(WRITE, false);
    let both = charges(&two, true) - charges(&two, false);
    // The image (132 pages), the thread's stack and arena (4) and the
    // 1 MiB buffer (256); the second step maps its buffer again.
    assert_eq!(one, 132 + 4 + 256);
    assert_eq!(both - one, 256, "the second step's buffer");
}
