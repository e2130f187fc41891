//! The patch registry: one entry per kernel patch or behaviour the model
//! can switch, with its name as users type it (`--variant NAME`), its
//! subject and reference, the release that merged it, the seed it comes
//! from, one line of help and the switch it sets in [`Variants`].
//! Everything else is derived from [`PATCHES`]: `--variant` parsing, help
//! and errors, the release presets (release.rs), `foliosim variants`, the
//! Python package's list and the run headers' patch names. docs/patches.md
//! says how to add one.

use serde::Serialize;

use super::release::KernelRelease;
use KernelRelease::*;

/// The switches the registry sets: one per patch (or per group of
/// patches that only make sense together), read by the mechanism's
/// functions. The JSON report carries them under these names.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Variants {
    /// Seed 002 patch 1: only the faulting address counts as an mmap hit.
    pub mmap_miss_p1: bool,
    /// Seed 002 patch 2: FAULT_FLAG_TRIED retries are not counted as hits.
    pub mmap_miss_p2: bool,
    /// arch_wants_old_prefaulted_pte(): fault-around maps old PTEs (arm64).
    pub old_prefaulted_ptes: bool,
    /// Seed 000: what folio_add_lru() does to a folio added in the fault
    /// path under MGLRU.
    pub pf_activation: PfActivation,
    /// Seed 004: workingset protection rework.
    pub mglru_wsprot_rework: bool,
    /// Seed 004: the fix folded into the rework (LULESH); only matters
    /// with `mglru_wsprot_rework`.
    pub mglru_wsprot_fold_fix: bool,
    /// count_shadow_nodes() sizes a memcg with lruvec_lru_size().
    pub shadow_lru_size: bool,
    /// Seed 003: the reclaim loop rework.
    pub mglru_reclaim_rework: bool,
    /// Seed 003: the isolate_folios() type-fallback fix on top.
    pub mglru_isolate_fallback_fix: bool,
    /// MGLRU's aging feedback, type selection and refault detection of
    /// 6.14 (they depend on each other, so one switch).
    pub mglru_feedback_rework: bool,
    /// MGLRU's workingset_refault/activate counting of 6.5+.
    pub mglru_refault_accounting_fix: bool,
    /// do_async_mmap_readahead() leaves mmap_miss alone for a locked folio.
    /// Not in the JSON report while off: it is newer than the recorded
    /// figures' schema.
    #[serde(skip_serializing_if = "is_false")]
    pub mmap_miss_skip_locked: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Seed 000's fault-path activation under MGLRU, in its three published
/// forms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PfActivation {
    /// Before the patch (Linux 6.1 to 7.1): folio_set_active().
    #[default]
    SetActive,
    /// The seed's patch (v1): folio_mark_accessed() instead.
    MarkAccessed,
    /// As merged for Linux 7.2 (6cbdd9726fb5): a refaulted PG_workingset
    /// folio still gets folio_set_active(); any other gets
    /// folio_mark_accessed() unless already PG_referenced, and
    /// lru_gen_folio_seq() places PG_referenced folios one generation
    /// younger than the oldest.
    Merged,
}

/// Where an entry's behaviour comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Merged for this release.
    Merged(&'static str),
    /// Posted to linux-mm, not merged.
    Posted,
    /// The kernel's behaviour before a patch replaced it.
    Before,
    /// An architecture's choice, not a patch.
    Arch,
    /// A shorthand for other entries.
    Shorthand,
}

impl Origin {
    /// As `foliosim variants` prints it.
    pub fn label(self) -> &'static str {
        match self {
            Origin::Merged(r) => r,
            Origin::Posted => "posted only",
            Origin::Before => "before",
            Origin::Arch => "arch",
            Origin::Shorthand => "shorthand",
        }
    }
}

/// What an entry sets.
#[derive(Clone, Copy)]
pub enum Switch {
    /// A boolean of [`Variants`]: on under the entry's name, off under its
    /// `off` name.
    Flag(fn(&mut Variants) -> &mut bool),
    /// One form of seed 000's fault-path activation.
    Pf(PfActivation),
    /// Turns the named entries off.
    Clear(&'static [&'static str]),
}

/// One kernel patch or behaviour.
pub struct Patch {
    /// As users type it: `--variant NAME`.
    pub name: &'static str,
    /// The name that turns a flag off (the kernel without the patch).
    pub off: Option<&'static str>,
    /// Older spellings still taken.
    pub aliases: &'static [&'static str],
    /// The patch's subject line (or the behaviour's kernel function).
    pub subject: &'static str,
    /// lore Message-ID or commit.
    pub reference: &'static str,
    pub origin: Origin,
    /// The seed it comes from ("000" to "004"), if any.
    pub seed: Option<&'static str>,
    /// One line for `--variant`'s help and `foliosim variants`.
    pub help: &'static str,
    pub switch: Switch,
    /// The release presets that carry it, stated one by one.
    pub releases: &'static [KernelRelease],
}

/// 6.14 onwards: seed 004's series.
const SINCE_6_14: &[KernelRelease] = &[V6_14, V6_16, V6_18, V7_0, V7_2, MmNew];
/// 7.2 and the seeds' mm-new: seed 003's series and the 2026 shadow sizing.
const SINCE_7_2: &[KernelRelease] = &[V7_2, MmNew];

/// The registry. Order is the order of `foliosim variants` and help.
pub const PATCHES: &[Patch] = &[
    Patch {
        name: "p1",
        off: None,
        aliases: &[],
        subject: "mm/filemap: tighten mmap_miss hit accounting (1/2: only the faulting address is a fault-around hit)",
        reference: "v3 2026-04-27 (fujunjie); v2 lore.kernel.org/r/tencent_4EDE373816615C46CFD48A6EF3B61E232308",
        origin: Origin::Merged("7.2"),
        seed: Some("002"),
        help: "filemap_map_pages() credits mmap_miss for the faulting page only",
        switch: Switch::Flag(|v| &mut v.mmap_miss_p1),
        releases: &[V7_2],
    },
    Patch {
        name: "p2",
        off: None,
        aliases: &[],
        subject: "mm/filemap: tighten mmap_miss hit accounting (2/2: FAULT_FLAG_TRIED retries are no hit)",
        reference: "v3 2026-04-27 (fujunjie); v2 lore.kernel.org/r/tencent_4EDE373816615C46CFD48A6EF3B61E232308",
        origin: Origin::Merged("7.2"),
        seed: Some("002"),
        help: "a retried fault does not cancel its own miss",
        switch: Switch::Flag(|v| &mut v.mmap_miss_p2),
        releases: &[V7_2],
    },
    Patch {
        name: "baseline",
        off: None,
        aliases: &[],
        subject: "neither of seed 002's patches",
        reference: "",
        origin: Origin::Shorthand,
        seed: Some("002"),
        help: "p1 and p2 off",
        switch: Switch::Clear(&["p1", "p2"]),
        releases: &[],
    },
    Patch {
        name: "arm64",
        off: Some("x86"),
        aliases: &["old-ptes"],
        subject: "arm64: mm: implement arch_wants_old_prefaulted_pte()",
        reference: "20210120173612.20913-1-will@kernel.org",
        origin: Origin::Arch,
        seed: Some("000"),
        help: "fault-around maps old PTEs (arm64); x86 (young-ptes) maps them young",
        switch: Switch::Flag(|v| &mut v.old_prefaulted_ptes),
        releases: &[],
    },
    Patch {
        name: "pf-set-active",
        off: None,
        aliases: &["before-000"],
        subject: "folio_add_lru() in the fault path: folio_set_active()",
        reference: "",
        origin: Origin::Before,
        seed: Some("000"),
        help: "MGLRU activates every folio added in the fault path (before seed 000)",
        switch: Switch::Pf(PfActivation::SetActive),
        releases: &[V6_1, V6_6, V6_12, V6_14, V6_16, V6_18, V7_0],
    },
    Patch {
        name: "pf-mark-accessed",
        off: None,
        aliases: &["after-000"],
        subject: "mm/mglru: Use folio_mark_accessed to replace folio_set_active in PF",
        reference: "2026-04-18 (Barry Song); v1 20250916072226.220426-1-liulei.rjpt@vivo.com",
        origin: Origin::Posted,
        seed: Some("000"),
        help: "the seed's v1: folio_mark_accessed() instead",
        switch: Switch::Pf(PfActivation::MarkAccessed),
        releases: &[MmNew],
    },
    Patch {
        name: "pf-merged",
        off: None,
        aliases: &[],
        subject: "mm/mglru: Use folio_mark_accessed to replace folio_set_active in PF (as merged)",
        reference: "6cbdd9726fb5",
        origin: Origin::Merged("7.2"),
        seed: Some("000"),
        help: "as merged: refaulted workingset folios still activated, others marked accessed",
        switch: Switch::Pf(PfActivation::Merged),
        releases: &[V7_2],
    },
    Patch {
        name: "wsprot-rework",
        off: Some("wsprot-legacy"),
        aliases: &[],
        subject: "mm/mglru: rework workingset protection",
        reference: "20241206003126.1338283-7-yuzhao@google.com",
        origin: Origin::Merged("6.14"),
        seed: Some("004"),
        help: "MGLRU's workingset protection rework (PG_workingset and the refs bits reused)",
        switch: Switch::Flag(|v| &mut v.mglru_wsprot_rework),
        releases: SINCE_6_14,
    },
    Patch {
        name: "wsprot-fold-fix",
        off: Some("no-wsprot-fold-fix"),
        aliases: &[],
        subject: "fix folded into mm/mglru: rework workingset protection (LULESH)",
        reference: "20241206003126.1338283-7-yuzhao@google.com (thread)",
        origin: Origin::Merged("6.14"),
        seed: Some("004"),
        help: "folio_check_references() keeps a mapped folio on its first young PTE; off = v2 as posted",
        switch: Switch::Flag(|v| &mut v.mglru_wsprot_fold_fix),
        releases: SINCE_6_14,
    },
    Patch {
        name: "feedback-rework",
        off: Some("feedback-legacy"),
        aliases: &[],
        subject: "mm/mglru: rework aging feedback, rework type selection, rework refault detection",
        reference: "20241206003126.1338283-4-yuzhao@google.com (patches 3-5 of 6)",
        origin: Origin::Merged("6.14"),
        seed: Some("004"),
        help: "MGLRU's aging feedback, type selection and refault detection of 6.14 (legacy: 6.1-6.13)",
        switch: Switch::Flag(|v| &mut v.mglru_feedback_rework),
        releases: SINCE_6_14,
    },
    Patch {
        name: "refault-accounting-fix",
        off: Some("no-refault-accounting-fix"),
        aliases: &[],
        subject: "Multi-gen LRU: Fix workingset accounting",
        reference: "Kalesh Singh, 2023",
        origin: Origin::Merged("6.5"),
        seed: None,
        help: "every MGLRU refault with a shadow counts in workingset_refault (off: 6.1's counting)",
        switch: Switch::Flag(|v| &mut v.mglru_refault_accounting_fix),
        releases: &[V6_6, V6_12, V6_14, V6_16, V6_18, V7_0, V7_2, MmNew],
    },
    Patch {
        name: "shadow-lru-size",
        off: Some("shadow-vmstat"),
        aliases: &[],
        subject: "mm: workingset: use lruvec_lru_size() to get the number of lru pages",
        reference: "Qi Zheng, 2026",
        origin: Origin::Merged("7.1"),
        seed: None,
        help: "count_shadow_nodes() sizes a memcg with lruvec_lru_size() (off: the NR_LRU_BASE counters)",
        switch: Switch::Flag(|v| &mut v.shadow_lru_size),
        releases: SINCE_7_2,
    },
    Patch {
        name: "reclaim-rework",
        off: Some("reclaim-legacy"),
        aliases: &[],
        subject: "mm/mglru: reclaim loop and dirty writeback rework (14 patches, v6)",
        reference: "v1 20260318-mglru-reclaim-v1-0-2c46f9eb0508@tencent.com",
        origin: Origin::Merged("7.2"),
        seed: Some("003"),
        help: "MGLRU's reclaim loop with a scan budget and the dirty flush inside it",
        switch: Switch::Flag(|v| &mut v.mglru_reclaim_rework),
        releases: SINCE_7_2,
    },
    Patch {
        name: "isolate-fallback-fix",
        off: Some("no-isolate-fallback-fix"),
        aliases: &[],
        subject: "mm/mglru: Avoid falling back to another type when scan_folios() leaves no remaining pages",
        reference: "Barry Song, 2026-04-26 (seed 003's thread)",
        origin: Origin::Merged("7.2"),
        seed: Some("003"),
        help: "isolate_folios() keeps scanning a type that scanned folios but isolated none",
        switch: Switch::Flag(|v| &mut v.mglru_isolate_fallback_fix),
        releases: SINCE_7_2,
    },
    Patch {
        name: "mmap-miss-skip-locked",
        off: Some("no-mmap-miss-skip-locked"),
        aliases: &[],
        subject: "mm: readahead: improve mmap_miss heuristic for concurrent faults",
        reference: "e338d8353154; 20250815183224.62007-1-roman.gushchin@linux.dev",
        origin: Origin::Merged("6.18"),
        seed: None,
        // Merged for 6.18, but no preset takes it yet: the presets'
        // recorded figures predate it (docs/patches.md).
        help: "do_async_mmap_readahead() does not count a hit on a folio locked for I/O",
        switch: Switch::Flag(|v| &mut v.mmap_miss_skip_locked),
        releases: &[],
    },
];

/// The entry `tok` names and whether it turns its switch on.
pub fn lookup(tok: &str) -> Option<(&'static Patch, bool)> {
    PATCHES.iter().find_map(|p| {
        if p.name == tok || p.aliases.contains(&tok) {
            Some((p, true))
        } else if p.off == Some(tok) || (p.off.is_some() && off_alias(p, tok)) {
            Some((p, false))
        } else {
            None
        }
    })
}

/// x86's older spelling.
fn off_alias(p: &Patch, tok: &str) -> bool {
    p.name == "arm64" && tok == "young-ptes"
}

/// Every name `--variant` takes, on and off.
pub fn names() -> impl Iterator<Item = &'static str> {
    PATCHES
        .iter()
        .flat_map(|p| std::iter::once(p.name).chain(p.off))
}

/// The valid name nearest to `tok` (edit distance), if close enough to be
/// a likely typo.
pub fn nearest(tok: &str) -> Option<&'static str> {
    crate::suggest::nearest(tok, names())
}

/// The error for an unknown name: the nearest one, and where the list is.
pub fn unknown(tok: &str) -> String {
    match nearest(tok) {
        Some(n) => format!(
            "unknown variant '{tok}' (did you mean '{n}'? `foliosim variants` lists them all)"
        ),
        None => format!(
            "unknown variant '{tok}' (`foliosim variants` lists them all: {})",
            names().collect::<Vec<_>>().join(", ")
        ),
    }
}

/// `--variant`'s help: every name with its line.
pub fn variant_help() -> String {
    let mut s = String::from(
        "Patches and behaviours over the kernel's (--kernel's preset, mm-new's without it), comma or plus separated:",
    );
    for p in PATCHES {
        let off = p.off.map(|o| format!(" | {o}")).unwrap_or_default();
        s.push_str(&format!("\n  {}{off}: {}", p.name, p.help));
    }
    s
}

impl Variants {
    /// The model's default: the seeds' kernel, mm-new, on x86.
    pub fn newest() -> Self {
        preset(MmNew)
    }

    /// Applies a comma- or plus-separated list such as "p1+p2,arm64".
    pub fn apply(&mut self, spec: &str) -> Result<(), String> {
        for tok in split_tokens(spec) {
            let (p, on) = lookup(tok).ok_or_else(|| unknown(tok))?;
            self.set(p, on);
        }
        Ok(())
    }

    /// Sets `p`'s switch.
    fn set(&mut self, p: &Patch, on: bool) {
        match p.switch {
            Switch::Flag(f) => *f(self) = on,
            Switch::Pf(a) => self.pf_activation = a,
            Switch::Clear(names) => {
                for n in names {
                    if let Some((q, _)) = lookup(n) {
                        self.set(q, false);
                    }
                }
            }
        }
    }

    /// Whether `p`'s switch is on here.
    fn has(&self, p: &Patch) -> bool {
        match p.switch {
            Switch::Flag(f) => *f(&mut self.clone()),
            Switch::Pf(a) => self.pf_activation == a,
            Switch::Clear(_) => false,
        }
    }

    /// The names of what is on, in registry order, x86 named when arm64 is
    /// off (run headers, the reproductions' "base kernel").
    pub fn names(&self) -> Vec<&'static str> {
        PATCHES
            .iter()
            .filter_map(|p| match (self.has(p), p.origin) {
                (true, _) => Some(p.name),
                (false, Origin::Arch) => p.off,
                _ => None,
            })
            .collect()
    }

    /// Short label for tables ("baseline", "p1", "p1+p2").
    pub fn mmap_miss_label(&self) -> &'static str {
        match (self.mmap_miss_p1, self.mmap_miss_p2) {
            (false, false) => "baseline",
            (true, false) => "p1",
            (false, true) => "p2",
            (true, true) => "p1+p2",
        }
    }
}

/// The tokens of a comma- or plus-separated list.
pub fn split_tokens(spec: &str) -> impl Iterator<Item = &str> {
    spec.split([',', '+'])
        .map(str::trim)
        .filter(|t| !t.is_empty())
}

/// A set as compare's `--set`, sweeps' `set` and Python's `variants` take
/// it: variant names plus the LRU by name. Returns (lru, variants).
pub fn split_set(set: &str) -> (Option<&str>, Vec<&str>) {
    let mut lru = None;
    let mut variants = Vec::new();
    for tok in split_tokens(set) {
        match tok {
            "classic" | "mglru" => lru = Some(tok),
            _ => variants.push(tok),
        }
    }
    (lru, variants)
}

/// The switches `release` carries: the entries that list it, every other
/// switch off.
pub fn preset(release: KernelRelease) -> Variants {
    let mut v = Variants::default();
    for p in PATCHES.iter().filter(|p| p.releases.contains(&release)) {
        v.set(p, true);
    }
    v
}

/// `foliosim variants`: one row per entry, a column per release ("x":
/// its preset carries it).
pub fn table_text() -> String {
    let w = PATCHES.iter().map(|p| p.name.len()).max().unwrap_or(4);
    let wo = PATCHES
        .iter()
        .filter_map(|p| p.off)
        .map(str::len)
        .max()
        .unwrap_or(3);
    let mut s = format!(
        "{:<w$} {:<wo$} {:<11} {:<4}",
        "name", "off", "merged", "seed"
    );
    for k in KernelRelease::ALL {
        s.push_str(&format!(" {:>6}", k.name()));
    }
    s.push_str("  subject\n");
    for p in PATCHES {
        let (off, seed) = (p.off.unwrap_or("-"), p.seed.unwrap_or("-"));
        s.push_str(&format!(
            "{:<w$} {off:<wo$} {:<11} {seed:<4}",
            p.name,
            p.origin.label()
        ));
        for k in KernelRelease::ALL {
            let has = if p.releases.contains(&k) { "x" } else { "-" };
            s.push_str(&format!(" {has:>6}"));
        }
        s.push_str(&format!("  {}\n", p.subject));
    }
    s
}

/// `foliosim variants --format json`: the registry as a list of objects.
pub fn table_json() -> serde_json::Value {
    let rows: Vec<serde_json::Value> = PATCHES
        .iter()
        .map(|p| {
            serde_json::json!({
                "name": p.name,
                "off": p.off,
                "aliases": p.aliases,
                "subject": p.subject,
                "reference": p.reference,
                "merged": p.origin.label(),
                "seed": p.seed,
                "help": p.help,
                "releases": p.releases.iter().map(|k| k.name()).collect::<Vec<_>>(),
            })
        })
        .collect();
    serde_json::Value::Array(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The presets as they were written out field by field before the
    /// registry (5f12223): the registry must give the same switches.
    fn before_registry(k: KernelRelease) -> Variants {
        let newest = Variants {
            pf_activation: PfActivation::MarkAccessed,
            mglru_wsprot_rework: true,
            mglru_wsprot_fold_fix: true,
            shadow_lru_size: true,
            mglru_reclaim_rework: true,
            mglru_isolate_fallback_fix: true,
            mglru_feedback_rework: true,
            mglru_refault_accounting_fix: true,
            ..Variants::default()
        };
        let before_seed_004 = Variants {
            mglru_refault_accounting_fix: true,
            ..Variants::default()
        };
        match k {
            MmNew => newest,
            V7_2 => Variants {
                pf_activation: PfActivation::Merged,
                mmap_miss_p1: true,
                mmap_miss_p2: true,
                ..newest
            },
            V6_14 | V6_16 | V6_18 | V7_0 => Variants {
                mglru_wsprot_rework: true,
                mglru_wsprot_fold_fix: true,
                mglru_feedback_rework: true,
                ..before_seed_004
            },
            V6_1 => Variants::default(),
            V6_6 | V6_12 => before_seed_004,
        }
    }

    #[test]
    fn presets_are_what_they_were() {
        for k in KernelRelease::ALL {
            assert_eq!(preset(k), before_registry(k), "{}", k.name());
        }
        assert_eq!(Variants::newest(), preset(MmNew));
    }

    #[test]
    fn every_release_has_one_fault_path_activation() {
        for k in KernelRelease::ALL {
            let n = PATCHES
                .iter()
                .filter(|p| matches!(p.switch, Switch::Pf(_)) && p.releases.contains(&k))
                .count();
            assert_eq!(n, 1, "{}", k.name());
        }
    }

    #[test]
    fn names_are_unique_and_every_one_parses() {
        let mut all: Vec<&str> = names().collect();
        all.extend(PATCHES.iter().flat_map(|p| p.aliases.iter().copied()));
        let n = all.len();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), n, "a name is taken twice");
        for name in all {
            Variants::newest().apply(name).unwrap();
        }
    }

    #[test]
    fn apply_sets_and_clears() {
        let mut v = Variants::newest();
        v.apply("p1+p2,arm64,wsprot-legacy,pf-merged").unwrap();
        assert!(v.mmap_miss_p1 && v.mmap_miss_p2 && v.old_prefaulted_ptes);
        assert!(!v.mglru_wsprot_rework);
        assert_eq!(v.pf_activation, PfActivation::Merged);
        v.apply("baseline,young-ptes,before-000").unwrap();
        assert!(!v.mmap_miss_p1 && !v.mmap_miss_p2 && !v.old_prefaulted_ptes);
        assert_eq!(v.pf_activation, PfActivation::SetActive);
    }

    #[test]
    fn unknown_names_suggest_the_nearest() {
        let e = Variants::newest().apply("wsprot-rewrok").unwrap_err();
        assert_eq!(
            e,
            "unknown variant 'wsprot-rewrok' (did you mean 'wsprot-rework'? `foliosim variants` lists them all)"
        );
        let e = Variants::newest().apply("zzzzzzzzzzzzzzzz").unwrap_err();
        assert!(e.contains("lists them all: p1, p2, baseline"), "{e}");
    }

    #[test]
    fn names_of_a_preset() {
        assert_eq!(
            preset(V6_1).names(),
            ["x86", "pf-set-active"],
            "6.1 has none of the registry's patches"
        );
        assert_eq!(
            Variants::newest().names(),
            [
                "x86",
                "pf-mark-accessed",
                "wsprot-rework",
                "wsprot-fold-fix",
                "feedback-rework",
                "refault-accounting-fix",
                "shadow-lru-size",
                "reclaim-rework",
                "isolate-fallback-fix"
            ]
        );
    }

    #[test]
    fn sets_split_the_lru_from_the_variants() {
        assert_eq!(split_set("mglru+p1, p2"), (Some("mglru"), vec!["p1", "p2"]));
        assert_eq!(split_set("baseline"), (None, vec!["baseline"]));
    }
}
