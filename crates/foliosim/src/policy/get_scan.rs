//! GET-SCAN (cache_ext's get_scan.bpf.c): GET requests and long scans
//! share a cache. Folios added by a scan thread (recognised by its comm,
//! key `scan=NAME`, default "scan") go to a scan list, the others to a
//! general list, both in insertion order with access counts. Eviction
//! samples (5 per candidate, least frequently used of each group) from the
//! scan list while it holds at least 5,000 folios (key `scan_min`), else
//! from the general list; with no scan folios at all it proposes nothing
//! and the kernel's own reclaim runs. The 5,000 is an absolute count in
//! get_scan.bpf.c, sized for the paper's 10 GiB cgroup; a run scaled down
//! scales it with `scan_min`. The score is the access count alone: unlike
//! the sampling policy's (lfu.rs), get_scan.bpf.c's does not rank folios
//! under read, off the LRU, dirty or under writeback last, so such a folio
//! can be proposed and the kernel skips it. Its +100000 for a file's last
//! page (LevelDB's index block) is left out: the model's tables share one
//! file.

use crate::mm::cache_ext::{CacheExtCtx, CacheExtOps, EvictionCtx, ListId};
use crate::mm::folio::FolioId;

const SAMPLE: usize = 5;
/// Scan folios below which the general list is sampled (1000 x rate),
/// cache_ext's constant.
pub const SCAN_MIN: i64 = 1000 * SAMPLE as i64;

pub struct GetScan {
    scan_comm: String,
    general: Option<ListId>,
    scans: Option<ListId>,
    accesses: Vec<u32>,
    by_scan: Vec<bool>,
    scan_pages: i64,
    scan_min: i64,
}

impl GetScan {
    pub fn new(scan_comm: &str, scan_min: i64) -> Self {
        GetScan {
            scan_comm: scan_comm.to_string(),
            scan_min,
            general: None,
            scans: None,
            accesses: Vec::new(),
            by_scan: Vec::new(),
            scan_pages: 0,
        }
    }
}

impl CacheExtOps for GetScan {
    fn name(&self) -> &str {
        "get-scan"
    }

    fn init(&mut self, cx: &mut CacheExtCtx) -> Result<(), String> {
        self.general = Some(cx.list_create().map_err(|e| e.to_string())?);
        self.scans = Some(cx.list_create().map_err(|e| e.to_string())?);
        let n = cx.nr_folio_slots();
        self.accesses = vec![0; n];
        self.by_scan = vec![false; n];
        Ok(())
    }

    fn folio_added(&mut self, cx: &mut CacheExtCtx, id: FolioId) {
        let (Some(g), Some(s)) = (self.general, self.scans) else {
            return;
        };
        let scan = cx.comm() == self.scan_comm;
        if cx.list_add_tail(if scan { s } else { g }, id).is_ok() {
            self.accesses[id as usize] = 1;
            self.by_scan[id as usize] = scan;
            self.scan_pages += scan as i64;
        }
    }

    fn folio_accessed(&mut self, _cx: &mut CacheExtCtx, id: FolioId) {
        let a = &mut self.accesses[id as usize];
        *a = a.saturating_add(1);
    }

    fn folio_evicted(&mut self, _cx: &mut CacheExtCtx, id: FolioId) {
        if std::mem::take(&mut self.by_scan[id as usize]) {
            self.scan_pages -= 1;
        }
        self.accesses[id as usize] = 0;
    }

    fn evict_folios(&mut self, cx: &mut CacheExtCtx, ev: &mut EvictionCtx) {
        let (Some(g), Some(s)) = (self.general, self.scans) else {
            return;
        };
        if self.scan_pages == 0 {
            return;
        }
        let list = if self.scan_pages < self.scan_min {
            g
        } else {
            s
        };
        let acc = &self.accesses;
        let _ = cx.list_sample(list, ev, SAMPLE, |id, _| acc[id as usize] as u64);
    }
}
