//! LHD and cache_ext's MGLRU port through the cache_ext interface: which
//! folios each proposes for eviction after a known history.

use foliosim::mm::cache_ext::{CacheExt, Folios, CACHE_EXT_EVICT_BATCH};
use foliosim::mm::folio::{pg, FolioId, FolioTable};
use foliosim::policy::new_policy;

const MEMCG: u16 = 1;

struct Rig {
    folios: FolioTable,
    cx: CacheExt,
    now: u64,
}

impl Rig {
    fn new(policy: &str, n: usize) -> Rig {
        let folios = FolioTable::new(n);
        let mut cx = CacheExt::default();
        cx.attach(
            Folios::table(&folios),
            4,
            MEMCG,
            new_policy(policy).unwrap().unwrap(),
            0,
        )
        .unwrap();
        Rig { folios, cx, now: 0 }
    }

    /// A clean file folio on the LRU at (mapping 7, index).
    fn add(&mut self, index: u32) -> FolioId {
        let id = self.folios.alloc().unwrap();
        let f = self.folios.get_mut(id);
        f.flags = pg::UPTODATE | pg::LRU;
        f.memcg = MEMCG;
        f.mapping = 7;
        f.index = index;
        self.now += 1;
        self.cx
            .folio_added(Folios::table(&self.folios), id, self.now);
        id
    }

    fn access(&mut self, id: FolioId) {
        self.now += 1;
        self.cx
            .folio_accessed(Folios::table(&self.folios), id, self.now);
    }

    fn evict(&mut self, id: FolioId) {
        self.cx
            .folio_evicted(Folios::table(&self.folios), id, self.now);
        self.folios.free(id);
    }

    fn propose(&mut self, n: u64) -> Vec<FolioId> {
        let mut out = [0; CACHE_EXT_EVICT_BATCH];
        let (k, _) =
            self.cx
                .evict_folios(Folios::table(&self.folios), MEMCG, n, self.now, &mut out);
        out[..k].to_vec()
    }
}

#[test]
fn lhd_keeps_reused_folios_and_evicts_scanned_ones() {
    // 8 hot folios re-read all the time, a stream of scanned folios read
    // once (reclaim takes the oldest 64 of them). With the model updated
    // often (reconfig=512), the proposals are scanned folios only.
    let mut r = Rig::new("lhd:reconfig=512", 4096);
    let mut hot: Vec<FolioId> = (0..8).map(|i| r.add(i)).collect();
    let mut scanned = std::collections::VecDeque::new();
    for round in 0..20_000u32 {
        r.access(hot[(round % 8) as usize]);
        if round % 2 == 0 {
            scanned.push_back(r.add(1000 + round));
            if scanned.len() > 64 {
                let old = scanned.pop_front().unwrap();
                r.evict(old);
            }
        }
        // Now and then a hot folio is reclaimed and read back (so the
        // hot class sees evictions too, which LHD's model needs).
        if round % 500 == 499 {
            let k = (round / 500 % 8) as usize;
            r.evict(hot[k]);
            hot[k] = r.add(k as u32);
        }
    }
    // 72 folios on the list, the hot ones among the first: 4 proposals
    // sample the first 64 in groups of 16 (16 would need 256: none).
    assert!(
        r.propose(16).is_empty(),
        "a sample longer than the list proposes nothing"
    );
    let got = r.propose(4);
    assert_eq!(got.len(), 4);
    for id in got {
        assert!(r.folios.get(id).index >= 1000, "proposed hot folio {id}");
    }
}

#[test]
fn mglru_bpf_proposes_clean_folios_once_and_skips_dirty_ones() {
    let mut r = Rig::new("mglru-bpf", 256);
    let ids: Vec<FolioId> = (0..64).map(|i| r.add(i)).collect();
    // Accessed folios keep their place only through the PID controller's
    // protection; with no refaults yet no tier is protected, so the first
    // proposals are simply the oldest generation's folios, all clean.
    for &id in &ids[..8] {
        for _ in 0..10 {
            r.access(id);
        }
    }
    let got = r.propose(32);
    assert_eq!(got.len(), 32);
    let mut sorted = got.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), 32, "no folio proposed twice");
    // Dirty folios are never proposed: they move to the next generation.
    let mut r = Rig::new("mglru-bpf", 64);
    let ids: Vec<FolioId> = (0..16).map(|i| r.add(i)).collect();
    for &id in &ids {
        r.folios.get_mut(id).set(pg::DIRTY);
    }
    assert!(r.propose(8).is_empty());
}
