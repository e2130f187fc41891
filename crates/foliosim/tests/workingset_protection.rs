//! `foliosim reproduce workingset-protection` (seed 004) at reduced size:
//! the JSON rows' fields, the change rows against their before/after
//! rows, determinism, and the fold-fix variant's one behaviour change.

mod common;

use foliosim::reproduce::workingset_protection::{
    change_pct, reproduces, workingset_protection, Base, Row, Size, AFTER, BEFORE, LULESH_METRICS,
    REWORK_V2, SEED_LULESH, SEED_TPCC, TPCC_METRICS,
};

/// A second of queries, one timestep, two samples: a few seconds in all.
const SMALL: Size = Size {
    tpcc_duration_ns: Some(1_000_000_000),
    lulesh_timesteps: Some(1),
    lulesh_samples: 2,
    base: Base::Seed,
};

fn find<'a>(rows: &'a [Row], e: &str, v: &str, m: &str) -> &'a Row {
    rows.iter()
        .find(|r| r.experiment == e && r.variant == v && r.metric == m)
        .unwrap_or_else(|| panic!("no row {e}/{v}/{m}"))
}

#[test]
fn rows_have_the_issues_fields_and_consistent_changes() {
    let rows = workingset_protection(4, SMALL, 2).unwrap();
    // JSON: exactly the five fields, seed_value null where the seed has
    // no figure.
    let json = serde_json::to_value(&rows).unwrap();
    for r in json.as_array().unwrap() {
        let mut keys: Vec<&str> = r.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        keys.sort();
        assert_eq!(
            keys,
            ["experiment", "metric", "seed_value", "value", "variant"]
        );
    }
    assert!(find(&rows, "tpcc", BEFORE, "throughput")
        .seed_value
        .is_none());
    assert!(find(&rows, "lulesh", BEFORE, "throughput")
        .seed_value
        .is_none());
    for (table, e, before) in [
        (&SEED_TPCC, "tpcc", BEFORE),
        (&SEED_LULESH, "lulesh", REWORK_V2),
    ] {
        for s in table.rows() {
            assert_eq!(find(&rows, e, before, s.metric).seed_value, Some(s.before));
            assert_eq!(find(&rows, e, AFTER, s.metric).seed_value, Some(s.after));
        }
    }
    // Change rows: the percent from before to after, model and seed.
    for m in TPCC_METRICS {
        let (b, a) = (
            find(&rows, "tpcc", BEFORE, m),
            find(&rows, "tpcc", AFTER, m),
        );
        let c = find(&rows, "tpcc", "change", m);
        assert_eq!(c.value, change_pct(b.value, a.value), "{m}");
        assert_eq!(
            c.seed_value,
            b.seed_value
                .zip(a.seed_value)
                .map(|(x, y)| change_pct(x, y))
        );
    }
    for m in LULESH_METRICS {
        let (b, a) = (
            find(&rows, "lulesh", REWORK_V2, m),
            find(&rows, "lulesh", AFTER, m),
        );
        assert_eq!(
            find(&rows, "lulesh", "change", m).value,
            change_pct(b.value, a.value)
        );
    }
    // The measurements are real: queries ran, the file thrashed, the
    // transactions are the reads over 8, the time is the loop's.
    let t = find(&rows, "tpcc", BEFORE, "transactions").value;
    assert!(t > 1000.0, "transactions {t}");
    assert_eq!(find(&rows, "tpcc", BEFORE, "time_s").value, 1.0);
    assert_eq!(find(&rows, "tpcc", BEFORE, "throughput").value, t);
    assert!(find(&rows, "tpcc", BEFORE, "workingset_refault_file").value > 0.0);
    assert!(find(&rows, "lulesh", AFTER, "throughput").value > 0.0);
    // Same inputs, same rows.
    assert_eq!(rows, workingset_protection(4, SMALL, 1).unwrap());
}

#[test]
fn reproduces_is_the_issues_half_to_twice_rule() {
    assert!(reproduces(-30.0, -57.1));
    assert!(reproduces(-100.0, -57.1));
    assert!(!reproduces(-28.0, -57.1));
    assert!(!reproduces(3.4, -57.1));
    assert!(reproduces(20.0, 10.2));
    assert!(!reproduces(21.0, 10.2));
    assert!(!reproduces(f64::INFINITY, 10.2));
}

/// The seed's directions at reduced size. The model does not reproduce
/// them yet (docs/fidelity/seed004.md says why); this stays ignored until
/// it does, and fails when run.
#[test]
#[ignore = "seed 004 does not reproduce in the model yet: docs/fidelity/seed004.md"]
fn rows_move_in_the_seeds_direction() {
    let rows = workingset_protection(4, SMALL, 2).unwrap();
    for r in rows.iter().filter(|r| r.variant == "change") {
        if let Some(s) = r.seed_value {
            if s != 0.0 {
                assert_eq!(
                    r.value.signum(),
                    s.signum(),
                    "{} {}: {} vs seed {s}",
                    r.experiment,
                    r.metric,
                    r.value
                );
            }
        }
    }
}

/// One mapped page in 64 of a file read in a loop through a memcg much
/// smaller than what the faults bring in, with the aging's page-table walk
/// off (lru_gen.enabled=0x1: core only) and old prefaulted PTEs (arm64), so
/// that eviction's rmap walk, not the walk or a neighbour's look-around,
/// is the first to see a touched page's young PTE. Returns PGACTIVATE of
/// the memcg.
fn mapped_loop_activations(variants: &str) -> u64 {
    use foliosim::mm::filemap::OpenFile;
    use foliosim::mm::readahead::FileRaState;
    use foliosim::mm::vmscan::lru_gen::LruGen;
    use foliosim::mm::vmstat::Item;
    use foliosim::mm::{Kernel, PAGE_SIZE};
    let cfg = common::variants_cfg(256 << 20, variants);
    let mut policy = LruGen::new();
    policy.set_sysctl("lru_gen.enabled", "0x1").unwrap();
    let mut k = Kernel::new(cfg, policy);
    let memcg = k.add_memcg("mapped", Some(2048));
    let pages = 65536;
    let mapping = k.core.add_file(pages * PAGE_SIZE);
    let mut f = OpenFile {
        mapping,
        ra: FileRaState::new(k.core.cfg.read_ahead_kb),
        fmode_random: false,
        vm_rand_read: false,
        vm_seq_read: false,
        memcg,
        pte: foliosim::mm::rmap::NO_PTES,
    };
    for _ in 0..4 {
        for idx in (0..pages).step_by(64) {
            assert!(k.mmap_access(&mut f, idx));
        }
    }
    k.check_invariants().unwrap();
    k.core.memcgs[memcg as usize].stat.get(Item::PGACTIVATE)
}

#[test]
fn fold_fix_keeps_a_mapped_folio_on_its_first_young_pte() {
    // v2 of the rework activated every folio eviction found young; with
    // the fix a folio's first young PTE only sets PG_referenced
    // (FOLIOREF_KEEP), its second activates it.
    let v2 = mapped_loop_activations("wsprot-rework,no-wsprot-fold-fix,arm64,pf-set-active");
    let fixed = mapped_loop_activations("wsprot-rework,wsprot-fold-fix,arm64,pf-set-active");
    eprintln!("pgactivate: v2 {v2}, with the fold fix {fixed}");
    assert!(v2 > 0);
    assert!(fixed < v2, "fold fix {fixed} vs v2 {v2}");
}

/// A file six times a 16M memcg read twice through a descriptor under
/// MGLRU; returns (workingset_nodereclaim, file refaults).
fn shadow_nodes_two_passes(variants: &str) -> (u64, u64) {
    use foliosim::mm::filemap::OpenFile;
    use foliosim::mm::readahead::FileRaState;
    use foliosim::mm::vmscan::lru_gen::LruGen;
    use foliosim::mm::vmstat::Item;
    use foliosim::mm::{Kernel, PAGE_SIZE};
    let cfg = common::variants_cfg(256 << 20, variants);
    let mut k = Kernel::new(cfg, LruGen::new());
    let memcg = k.add_memcg("shadows", Some(4096));
    let mapping = k.core.add_file(24576 * PAGE_SIZE);
    let mut f = OpenFile {
        mapping,
        ra: FileRaState::new(k.core.cfg.read_ahead_kb),
        fmode_random: false,
        vm_rand_read: false,
        vm_seq_read: false,
        memcg,
        pte: foliosim::mm::rmap::NO_PTES,
    };
    for _ in 0..2 {
        for p in 0..24576 {
            k.filemap_read(&mut f, p * PAGE_SIZE, PAGE_SIZE).unwrap();
        }
    }
    k.check_invariants().unwrap();
    let st = &k.core.memcgs[memcg as usize].stat;
    (
        st.get(Item::WORKINGSET_NODERECLAIM),
        st.get(Item::WORKINGSET_REFAULT_FILE),
    )
}

#[test]
fn shadow_vmstat_keeps_an_mglru_memcgs_shadows() {
    // 6.1-7.0: count_shadow_nodes() reads the NR_LRU_BASE counters, 4096
    // pages here, so up to 512 shadow-only nodes stay, more than the ~320
    // the second pass needs: every second-pass read is a refault. 7.1+
    // (lruvec_lru_size(), which MGLRU leaves at 0): nodes go, refaults are
    // lost.
    let (old_nodes, old_refaults) = shadow_nodes_two_passes("shadow-vmstat");
    let (new_nodes, new_refaults) = shadow_nodes_two_passes("shadow-lru-size");
    eprintln!("shadow-vmstat: {old_nodes} nodes reclaimed, {old_refaults} refaults; shadow-lru-size: {new_nodes}, {new_refaults}");
    assert_eq!(old_nodes, 0);
    assert!(old_refaults >= 20000, "refaults {old_refaults}");
    assert!(new_nodes > 0);
    assert!(new_refaults < old_refaults / 2);
}
