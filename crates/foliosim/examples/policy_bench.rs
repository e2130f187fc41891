//! Cost per cache_ext callback of the built-in Rust policies: each policy
//! runs a looping read over a file twice its memcg, wrapped so every
//! callback is timed (wall clock, so this is a benchmark, not a test).
//!
//!     cargo run --release -p foliosim --example policy_bench

use std::time::Instant;

use foliosim::mm::cache_ext::{AdmissionCtx, CacheExtCtx, CacheExtOps, EvictionCtx};
use foliosim::mm::folio::FolioId;
use foliosim::mm::MmConfig;
use foliosim::sim::{LruKind, Sim, SimConfig};
use foliosim_workload::fio::parse_job_str;

const NAMES: [&str; 5] = [
    "folio_added",
    "folio_accessed",
    "folio_evicted",
    "admit_folio",
    "evict_folios",
];

struct Timed {
    inner: Box<dyn CacheExtOps>,
    ns: std::rc::Rc<std::cell::RefCell<[(u64, u64); 5]>>,
}

impl Timed {
    fn time<R>(&mut self, i: usize, f: impl FnOnce(&mut dyn CacheExtOps) -> R) -> R {
        let t = Instant::now();
        let r = f(self.inner.as_mut());
        let mut ns = self.ns.borrow_mut();
        ns[i].0 += t.elapsed().as_nanos() as u64;
        ns[i].1 += 1;
        r
    }
}

impl CacheExtOps for Timed {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn init(&mut self, cx: &mut CacheExtCtx) -> Result<(), String> {
        self.inner.init(cx)
    }
    fn folio_added(&mut self, cx: &mut CacheExtCtx, id: FolioId) {
        self.time(0, |p| p.folio_added(cx, id))
    }
    fn folio_accessed(&mut self, cx: &mut CacheExtCtx, id: FolioId) {
        self.time(1, |p| p.folio_accessed(cx, id))
    }
    fn folio_evicted(&mut self, cx: &mut CacheExtCtx, id: FolioId) {
        self.time(2, |p| p.folio_evicted(cx, id))
    }
    fn admit_folio(&mut self, cx: &mut CacheExtCtx, req: &AdmissionCtx) -> bool {
        self.time(3, |p| p.admit_folio(cx, req))
    }
    fn evict_folios(&mut self, cx: &mut CacheExtCtx, ev: &mut EvictionCtx) {
        self.time(4, |p| p.evict_folios(cx, ev))
    }
}

fn main() {
    let job = "[r]\nfilename=f\nsize=256m\nrw=read\nbs=4k\nloops=3\ninvalidate=0\n";
    let jobs = parse_job_str(job, "bench.fio").unwrap();
    println!(
        "{:<14}{:>16}{:>16}{:>16}{:>16}{:>16}   (mean ns per call)",
        "policy", NAMES[0], NAMES[1], NAMES[2], NAMES[3], NAMES[4]
    );
    for spec in [
        "fifo",
        "mru",
        "lfu",
        "s3fifo",
        "get-scan:scan=r",
        "admit-filter",
    ] {
        let cfg = SimConfig {
            mm: MmConfig {
                ram_bytes: 2 << 30,
                ..MmConfig::default()
            },
            lru: LruKind::Classic,
            memcg_limit: Some(128 << 20),
            seed: 1,
            timeline: false,
            lru_gen_sysctl: Vec::new(),
        };
        let ns = std::rc::Rc::new(std::cell::RefCell::new([(0u64, 0u64); 5]));
        let mut sim = Sim::new(cfg);
        let inner = foliosim::policy::new_policy(spec).unwrap().unwrap();
        sim.attach_policy(Box::new(Timed {
            inner,
            ns: ns.clone(),
        }))
        .unwrap();
        sim.run_fio(&jobs);
        let ns = ns.borrow();
        print!("{spec:<14}");
        for (t, n) in ns.iter() {
            if *n == 0 {
                print!("{:>16}", "-");
            } else {
                print!("{:>16.1}", *t as f64 / *n as f64);
            }
        }
        println!();
    }
}
