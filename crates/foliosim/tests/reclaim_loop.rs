//! Seed 003's swappiness experiment at reduced size: the kernel-build proxy
//! on the classic LRU moves as Barry Song's classic table does (more swap
//! and fewer file refaults as swappiness rises), and the MGLRU report
//! carries the type-selection counters that explain its own balance.

use foliosim::reproduce::reclaim_loop::{kendall_tau, trend, KERNEL_BUILD_TOML};
use foliosim::scenario::run_scenario;
use foliosim::sim::{LruKind, SimConfig};
use foliosim_workload::scenario::{parse, Scenario};

/// The proxy with fewer compiles (2 per make job instead of 8).
fn proxy() -> Scenario {
    let text = KERNEL_BUILD_TOML.replace("count = 8,", "count = 2,");
    assert_ne!(text, KERNEL_BUILD_TOML, "the proxy's loop count moved");
    parse(&text, "kernel-build.toml").expect("the shipped proxy parses")
}

fn cfg(lru: LruKind, swappiness: u32) -> SimConfig {
    let mut c = SimConfig::default();
    c.mm.ram_bytes = 2 << 30;
    c.mm.swap = foliosim::mm::SwapKind::Zram;
    c.mm.swap_bytes = 1 << 30;
    c.mm.swappiness = swappiness;
    c.lru = lru;
    c
}

#[test]
fn classic_swaps_more_and_refaults_less_file_as_swappiness_rises() {
    let sc = proxy();
    let run = |s| {
        let r = run_scenario(cfg(LruKind::Classic, s), &sc).unwrap();
        let m = r.cgroups["kbuild"].clone();
        (
            r.run.vmstat["pswpout"],
            m["workingset_refault_file"],
            m["workingset_refault_anon"],
        )
    };
    let (lo, hi) = (run(35), run(175));
    assert!(lo.0 > 0, "the proxy swaps at swappiness 35: {lo:?}");
    assert!(
        hi.0 > lo.0,
        "pswpout rises with swappiness: {lo:?} -> {hi:?}"
    );
    assert!(hi.1 < lo.1, "file refaults fall: {lo:?} -> {hi:?}");
    assert!(hi.2 > lo.2, "anon refaults rise: {lo:?} -> {hi:?}");
}

#[test]
fn mglru_report_counts_type_choices_and_fallbacks_per_cgroup() {
    let sc = proxy();
    let mut c = cfg(LruKind::Mglru, 100);
    c.mm.variants
        .apply("reclaim-rework,no-isolate-fallback-fix")
        .unwrap();
    let r = run_scenario(c, &sc).unwrap();
    let st = &r.cgroup_lru_gen["kbuild"]["stats"];
    let n = |k: &str, i: usize| st[k][i].as_u64().unwrap();
    let chosen = n("type_chosen", 0) + n("type_chosen", 1);
    assert!(chosen > 0, "isolate_folios() ran: {st}");
    // Every fallback follows a round of the chosen type, so there are at
    // most as many fallbacks as choices.
    let fallback = n("type_fallback", 0) + n("type_fallback", 1);
    assert!(fallback <= chosen, "{st}");
    // The anon evicted reached zram: a fallback or a choice took anon.
    assert!(r.run.vmstat["pswpout"] > 0);
    assert!(n("type_chosen", 0) + n("type_fallback", 0) > 0, "{st}");
    // The classic LRU has no lru_gen view.
    let r = run_scenario(cfg(LruKind::Classic, 100), &sc).unwrap();
    assert!(r.cgroup_lru_gen.is_empty());
}

#[test]
fn trend_and_tau_read_the_seeds_series() {
    // Barry Song's mainline MGLRU pswpout: one dip at 105.
    let mainline = [3365968.0, 3565887.0, 3396069.0, 3935186.0, 4256014.0];
    assert_eq!(trend(&mainline), "up and down");
    assert!((kendall_tau(&mainline) - 0.8).abs() < 1e-9);
    let classic_refault_file = [750021.0, 459740.0, 303701.0, 173236.0, 117625.0];
    assert_eq!(trend(&classic_refault_file), "falls");
    assert_eq!(kendall_tau(&classic_refault_file), -1.0);
}
