//! The debugfs view of MGLRU: /sys/kernel/debug/lru_gen as text and as
//! JSON for the report.

use super::*;

impl LruGen {
    /// The debugfs lru_gen file for one memcg (not the "full" variant):
    /// `memcg ID PATH`, ` node 0`, then per generation from the oldest
    /// evictable: seq, age in ms, anon pages, file pages.
    pub fn lru_gen_seq_show(&self, core: &Core, memcg: MemcgId) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let Some(lv) = self.lrugen.get(memcg as usize) else {
            return s;
        };
        let path = core
            .memcgs
            .get(memcg as usize)
            .map_or("", |m| m.name.as_str());
        let _ = writeln!(s, "memcg {:5} {}", memcg, path);
        let _ = writeln!(s, " node {:5}", 0);
        for seq in evictable_min_seq(&lv.min_seq, MAX_SWAPPINESS / 2)..=lv.max_seq {
            let gen = lru_gen_from_seq(seq);
            let age_ms = core.now.saturating_sub(lv.timestamps[gen]) / 1_000_000;
            let _ = writeln!(
                s,
                " {:10} {:10} {:10}  {:10} ",
                seq, age_ms, lv.nr_pages[gen][0], lv.nr_pages[gen][1]
            );
        }
        s
    }

    /// /sys/kernel/debug/lru_gen for one memcg as JSON: each generation's
    /// seq, age and anon/file sizes, plus the tiers' PID-controller state
    /// and the aging/eviction statistics.
    pub(super) fn lru_gen_debug_view(
        &self,
        core: &Core,
        memcg: MemcgId,
    ) -> Option<serde_json::Value> {
        if !self.enabled() {
            return None;
        }
        let lv = self.lrugen.get(memcg as usize)?;
        let gens: Vec<serde_json::Value> = (evictable_min_seq(&lv.min_seq, MAX_SWAPPINESS / 2)
            ..=lv.max_seq)
            .map(|seq| {
                let gen = lru_gen_from_seq(seq);
                serde_json::json!({
                    "seq": seq,
                    "age_ms": core.now.saturating_sub(lv.timestamps[gen]) / 1_000_000,
                    "anon": lv.nr_pages[gen][LRU_GEN_ANON],
                    "file": lv.nr_pages[gen][LRU_GEN_FILE],
                })
            })
            .collect();
        let tiers: Vec<serde_json::Value> = (0..MAX_NR_TIERS)
            .map(|tier| {
                serde_json::json!({
                    "tier": tier,
                    "anon": {"avg_refaulted": lv.avg_refaulted[0][tier], "avg_total": lv.avg_total[0][tier], "refaulted": lv.refaulted[0][tier], "evicted": lv.evicted[0][tier], "protected": lv.protected[0][tier]},
                    "file": {"avg_refaulted": lv.avg_refaulted[1][tier], "avg_total": lv.avg_total[1][tier], "refaulted": lv.refaulted[1][tier], "evicted": lv.evicted[1][tier], "protected": lv.protected[1][tier]},
                })
            })
            .collect();
        Some(serde_json::json!({
            "memcg": memcg,
            "path": core.memcgs.get(memcg as usize).map_or("", |m| m.name.as_str()),
            "node": 0,
            "enabled": format!("{:#06x}", self.caps),
            "max_seq": lv.max_seq,
            "min_seq": {"anon": lv.min_seq[0], "file": lv.min_seq[1]},
            "generations": gens,
            "tiers": tiers,
            "stats": lv.stats,
        }))
    }
}
