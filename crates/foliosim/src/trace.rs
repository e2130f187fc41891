//! The kernel's mm tracepoints (include/trace/events/filemap.h, pagemap.h,
//! vmscan.h, readahead.h), written as ftrace's `trace` file prints them:
//! comment header, then `comm-pid [cpu] flags secs.usecs: event: fields`
//! with each event's TP_printk() format, on the model's simulated clock;
//! or as trace-cmd's binary trace.dat (dat.rs).
//!
//! Off costs one predictable branch per hook: `Core::trace` is an
//! `Option<Box<Tracer>>` and the formatting lives in cold, out-of-line
//! methods here, written straight into a buffered writer.
//!
//! Fields the model has no value for get deterministic stand-ins
//! (docs/tracing.md): pfn = folio slot + PFN_BASE, page/folio pointers =
//! the vmemmap address of that pfn, dev = 253:0 (virtio's vda; 0:N for
//! tmpfs), ino = mapping number + 1, nid 0, zid/classzone 2 (ZONE_NORMAL),
//! cpu 0.

use std::io::{self, Write};

pub mod dat;

use crate::mm::folio::FolioId;
use crate::mm::memcontrol::{MemCgroup, MemcgId};

/// The events, in the order of `NAMES`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Ev {
    AddToPageCache,
    DeleteFromPageCache,
    FilemapFault,
    FilemapMapPages,
    LruInsertion,
    LruActivate,
    LruIsolate,
    ShrinkInactive,
    ShrinkActive,
    WriteFolio,
    DirectReclaimBegin,
    DirectReclaimEnd,
    MemcgReclaimBegin,
    MemcgReclaimEnd,
    KswapdWake,
    KswapdSleep,
    RaUnbounded,
    SyncRa,
    AsyncRa,
    RaOrder,
}

pub const NR_EVENTS: usize = 20;

/// The kernel's event names and their trace systems.
pub const NAMES: [(&str, &str); NR_EVENTS] = [
    ("filemap", "mm_filemap_add_to_page_cache"),
    ("filemap", "mm_filemap_delete_from_page_cache"),
    ("filemap", "mm_filemap_fault"),
    ("filemap", "mm_filemap_map_pages"),
    ("pagemap", "mm_lru_insertion"),
    ("pagemap", "mm_lru_activate"),
    ("vmscan", "mm_vmscan_lru_isolate"),
    ("vmscan", "mm_vmscan_lru_shrink_inactive"),
    ("vmscan", "mm_vmscan_lru_shrink_active"),
    ("vmscan", "mm_vmscan_write_folio"),
    ("vmscan", "mm_vmscan_direct_reclaim_begin"),
    ("vmscan", "mm_vmscan_direct_reclaim_end"),
    ("vmscan", "mm_vmscan_memcg_reclaim_begin"),
    ("vmscan", "mm_vmscan_memcg_reclaim_end"),
    ("vmscan", "mm_vmscan_kswapd_wake"),
    ("vmscan", "mm_vmscan_kswapd_sleep"),
    ("readahead", "page_cache_ra_unbounded"),
    ("readahead", "page_cache_sync_ra"),
    ("readahead", "page_cache_async_ra"),
    ("readahead", "page_cache_ra_order"),
];

/// Stand-in pfn of folio slot 0 (4 GiB into physical memory).
pub const PFN_BASE: u64 = 0x100000;
/// x86-64's vmemmap base: struct page pointers are vmemmap + pfn * 64.
const VMEMMAP: u64 = 0xffff_ea00_0000_0000;
/// enum lru_list.
pub const LRU_INACTIVE_ANON: u32 = 0;
pub const LRU_ACTIVE_ANON: u32 = 1;
pub const LRU_INACTIVE_FILE: u32 = 2;
pub const LRU_ACTIVE_FILE: u32 = 3;
pub const LRU_UNEVICTABLE: u32 = 4;
const LRU_NAMES: [&str; 5] = [
    "inactive_anon",
    "active_anon",
    "inactive_file",
    "active_file",
    "unevictable",
];
/// GFP_KERNEL with __GFP_MOVABLE|__GFP_HIGHMEM, as page cache and anon
/// allocations print (GFP_HIGHUSER_MOVABLE); memcg reclaim prints what
/// try_charge passes down, GFP_KERNEL for the model's charges.
const GFP_HIGHUSER_MOVABLE: &str = "GFP_HIGHUSER_MOVABLE";
const GFP_KERNEL: &str = "GFP_KERNEL";

/// How the trace file is written: ftrace's text (the `trace` file) or
/// trace-cmd's binary trace.dat (dat.rs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TraceFormat {
    #[default]
    Text,
    Dat,
}

/// What `--trace` and its filters asked for (checked by `TraceSpec::parse_*`).
#[derive(Clone, Debug, Default)]
pub struct TraceFilter {
    /// Bit per event; 0 = all.
    pub events: u32,
    /// Only events about this file (its name as the workload gives it).
    pub file: Option<String>,
    /// Only events about this cgroup and those below it ("/" is all).
    pub cgroup: Option<String>,
    /// Simulated time window [start, end) in ns.
    pub window: Option<(u64, u64)>,
}

impl TraceFilter {
    /// `--trace-events a,b`: event names or whole systems (filemap,
    /// pagemap, vmscan, readahead); "system:event" is accepted too.
    pub fn parse_events(spec: &str) -> Result<u32, String> {
        let mut mask = 0u32;
        for tok in spec.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let name = tok.rsplit(':').next().unwrap_or(tok);
            let mut hit = false;
            for (i, (sys, ev)) in NAMES.iter().enumerate() {
                if name == *ev || name == *sys || (tok.ends_with(":*") && tok.starts_with(sys)) {
                    mask |= 1 << i;
                    hit = true;
                }
            }
            if !hit {
                let known: Vec<&str> = NAMES.iter().map(|(_, e)| *e).collect();
                return Err(format!(
                    "unknown event '{tok}' (known: filemap, pagemap, vmscan, readahead, {})",
                    known.join(", ")
                ));
            }
        }
        if mask == 0 {
            return Err("no event named".into());
        }
        Ok(mask)
    }

    /// `--trace-window START,END` in simulated seconds.
    pub fn parse_window(spec: &str) -> Result<(u64, u64), String> {
        let (a, b) = spec
            .split_once(',')
            .ok_or_else(|| format!("'{spec}' is not START,END (simulated seconds)"))?;
        let secs = |s: &str| -> Result<u64, String> {
            let v: f64 = s
                .trim()
                .parse()
                .map_err(|_| format!("'{}' is not a number of seconds", s.trim()))?;
            if !v.is_finite() || v < 0.0 || v > 1e9 {
                return Err(format!("'{}' is not a time in [0, 1e9] seconds", s.trim()));
            }
            Ok((v * 1e9).round() as u64)
        };
        let (s, e) = (secs(a)?, secs(b)?);
        if e <= s {
            return Err(format!("'{spec}': END must be after START"));
        }
        Ok((s, e))
    }
}

/// Where `--trace` writes, shared between the command line (which opens
/// the file and reads back the outcome) and the run (which writes).
#[derive(Default)]
pub struct TraceSink {
    out: Option<Box<dyn Write + Send>>,
    /// The first write error, as a message.
    pub error: Option<String>,
    /// Events written per event, filled when the run's tracer is dropped.
    pub written: [u64; NR_EVENTS],
}

/// `--trace` and its filters, armed for a run with `arm`. Cloning shares
/// the sink: the first run set up with it writes the trace.
#[derive(Clone)]
pub struct TraceSpec {
    pub sink: std::sync::Arc<std::sync::Mutex<TraceSink>>,
    pub filter: TraceFilter,
    pub format: TraceFormat,
}

impl std::fmt::Debug for TraceSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceSpec")
            .field("filter", &self.filter)
            .field("format", &self.format)
            .finish()
    }
}

impl TraceSpec {
    pub fn new(out: Box<dyn Write + Send>, filter: TraceFilter) -> TraceSpec {
        TraceSpec {
            sink: std::sync::Arc::new(std::sync::Mutex::new(TraceSink {
                out: Some(out),
                ..TraceSink::default()
            })),
            filter,
            format: TraceFormat::Text,
        }
    }

    /// The same, writing `format`.
    pub fn with_format(
        out: Box<dyn Write + Send>,
        filter: TraceFilter,
        format: TraceFormat,
    ) -> TraceSpec {
        TraceSpec {
            format,
            ..TraceSpec::new(out, filter)
        }
    }

    /// The tracer for a run; None once another run has taken the sink.
    pub fn tracer(&self) -> Option<Box<Tracer>> {
        let out = self.sink.lock().ok()?.out.take()?;
        let mut t = Tracer::with_format(out, self.filter.clone(), self.format);
        t.sink = Some(self.sink.clone());
        Some(Box::new(t))
    }

    /// After the run: the first error, if any, and the events written.
    pub fn outcome(&self) -> Result<[u64; NR_EVENTS], String> {
        let s = self
            .sink
            .lock()
            .map_err(|_| "trace writer panicked".to_string())?;
        match &s.error {
            Some(e) => Err(e.clone()),
            None => Ok(s.written),
        }
    }
}

thread_local! {
    static ARMED: std::cell::RefCell<Option<TraceSpec>> = const { std::cell::RefCell::new(None) };
}

/// Arms `spec` for the next model run set up on this thread (Sim::new
/// takes it): the run drivers and their configs stay as they are.
pub fn arm(spec: TraceSpec) {
    ARMED.with(|a| *a.borrow_mut() = Some(spec));
}

/// The armed trace's tracer, disarming it.
pub fn take_armed() -> Option<Box<Tracer>> {
    ARMED
        .with(|a| a.borrow_mut().take())
        .and_then(|s| s.tracer())
}

/// Per-memcg or per-file filter decision, cached: 0 not known yet.
const UNKNOWN: u8 = 0;
const PASS: u8 = 1;
const DROP: u8 = 2;

/// The trace writer. Installed in `Core::trace` by the driver.
pub struct Tracer {
    out: io::BufWriter<Box<dyn Write + Send>>,
    filter: TraceFilter,
    file_ok: Vec<u8>,
    memcg_ok: Vec<u8>,
    /// `current` as the trace names it (comm, pid).
    comm: String,
    pid: u32,
    /// Events written, per event (for tests and the summary).
    pub written: [u64; NR_EVENTS],
    err: Option<io::Error>,
    sink: Option<std::sync::Arc<std::sync::Mutex<TraceSink>>>,
    /// trace.dat's ring buffer; None for the text format.
    dat: Option<Box<dat::DatWriter>>,
}

/// kswapd's comm and a stand-in pid.
const KSWAPD: (&str, u32) = ("kswapd0", 2);

/// What a hook knows about the context it fires in.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    pub now: u64,
    pub kswapd: bool,
    pub memcgs: &'a [MemCgroup],
}

impl Tracer {
    pub fn new(out: Box<dyn Write + Send>, filter: TraceFilter) -> Tracer {
        Tracer::with_format(out, filter, TraceFormat::Text)
    }

    pub fn with_format(
        out: Box<dyn Write + Send>,
        filter: TraceFilter,
        format: TraceFormat,
    ) -> Tracer {
        let mut t = Tracer {
            out: io::BufWriter::with_capacity(1 << 16, out),
            filter,
            file_ok: Vec::new(),
            memcg_ok: Vec::new(),
            comm: "foliosim".into(),
            pid: 1,
            written: [0; NR_EVENTS],
            err: None,
            sink: None,
            dat: None,
        };
        if format == TraceFormat::Dat {
            match dat::DatWriter::new() {
                Ok(d) => t.dat = Some(Box::new(d)),
                Err(e) => {
                    // Reported at the end; nothing is written meanwhile.
                    t.note(Err(e));
                    t.filter.events = 1 << 31;
                }
            }
        } else {
            let r = t.header();
            t.note(r);
        }
        t
    }

    /// The header the kernel's `trace` file starts with (the default
    /// irq-info columns). The entries line is left out: a stream does not
    /// know its count in advance.
    fn header(&mut self) -> io::Result<()> {
        let o = &mut self.out;
        writeln!(o, "# tracer: nop")?;
        writeln!(o, "#")?;
        writeln!(
            o,
            "#                                _-----=> irqs-off/BH-disabled"
        )?;
        writeln!(o, "#                               / _----=> need-resched")?;
        writeln!(
            o,
            "#                              | / _---=> hardirq/softirq"
        )?;
        writeln!(o, "#                              || / _--=> preempt-depth")?;
        writeln!(
            o,
            "#                              ||| / _-=> migrate-disable"
        )?;
        writeln!(o, "#                              |||| /     delay")?;
        writeln!(
            o,
            "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION"
        )?;
        writeln!(o, "#              | |         |   |||||     |         |")
    }

    /// The task the next events are charged to (fio's job, a scenario's
    /// process).
    pub fn set_task(&mut self, comm: &str, pid: u32) {
        if self.comm != comm {
            self.comm.clear();
            self.comm.push_str(comm);
        }
        self.pid = pid;
    }

    /// Names a mapping for `--trace-file` (the file name the workload uses).
    pub fn name_file(&mut self, mapping: u32, name: &str) {
        let m = mapping as usize;
        if self.file_ok.len() <= m {
            self.file_ok.resize(m + 1, DROP);
        }
        self.file_ok[m] = match &self.filter.file {
            Some(f) if f != name => DROP,
            _ => PASS,
        };
    }

    /// Flushes the buffer; reports the first write error seen.
    pub fn finish(&mut self) -> io::Result<()> {
        if let Some(e) = self.err.take() {
            return Err(e);
        }
        if let Some(d) = self.dat.take() {
            d.finish(&mut self.out)?;
        }
        self.out.flush()
    }

    fn memcg_pass(&mut self, memcgs: &[MemCgroup], memcg: MemcgId) -> bool {
        let Some(path) = self.filter.cgroup.as_deref() else {
            return true;
        };
        let m = memcg as usize;
        if self.memcg_ok.len() <= m {
            self.memcg_ok.resize(m + 1, UNKNOWN);
        }
        if self.memcg_ok[m] == UNKNOWN {
            let p = cgroup_path(memcgs, memcg);
            let inside = path == "/"
                || p == path
                || (p.starts_with(path) && p.as_bytes().get(path.len()) == Some(&b'/'));
            self.memcg_ok[m] = if inside { PASS } else { DROP };
        }
        self.memcg_ok[m] == PASS
    }

    fn file_pass(&self, mapping: u32) -> bool {
        self.filter.file.is_none() || self.file_ok.get(mapping as usize) == Some(&PASS)
    }

    /// The common checks; writes the line's prefix when the event passes.
    fn begin(&mut self, ev: Ev, cx: Ctx, memcg: Option<MemcgId>, mapping: Option<u32>) -> bool {
        let bit = 1u32 << ev as u8;
        if self.filter.events != 0 && self.filter.events & bit == 0 {
            return false;
        }
        if let Some((s, e)) = self.filter.window {
            if cx.now < s || cx.now >= e {
                return false;
            }
        }
        if let Some(m) = mapping {
            if !self.file_pass(m) {
                return false;
            }
        }
        if let Some(m) = memcg {
            if !self.memcg_pass(cx.memcgs, m) {
                return false;
            }
        }
        self.written[ev as usize] += 1;
        let (comm, pid) = if cx.kswapd {
            KSWAPD
        } else {
            (self.comm.as_str(), self.pid)
        };
        if let Some(d) = self.dat.as_mut() {
            d.begin(ev, cx.now, pid, comm);
            return true;
        }
        let us = cx.now / 1000;
        let r = write!(
            self.out,
            "{comm:>16}-{pid:<7} [000] ..... {:5}.{:06}: {}: ",
            us / 1_000_000,
            us % 1_000_000,
            NAMES[ev as usize].1
        );
        self.note(r);
        true
    }

    /// trace.dat: the event's fields, in its layout's order (dat.rs);
    /// false when the text format is written.
    fn dat_fields(&mut self, values: &[u64]) -> bool {
        let Some(d) = self.dat.as_mut() else {
            return false;
        };
        let r = d.fields(values);
        self.note(r);
        true
    }

    /// The vmscan counter events: `v` is the record (trace.dat's values),
    /// which the text prints as `name=value` in the same order, `names`
    /// as TP_printk() words them; the last value prints as `last` (a
    /// symbol or flags). Reclaim's priority, printed from the record, is
    /// never negative (12 down to 0).
    fn counters(&mut self, names: &str, v: &[u64], last: &str) {
        if self.dat_fields(v) {
            return;
        }
        let mut names = names.split(' ');
        let mut r = Ok(());
        for (x, name) in v[..v.len() - 1].iter().zip(names.by_ref()) {
            r = r.and_then(|_| write!(self.out, "{name}={x} "));
        }
        let name = names.next().expect("a name per value");
        let r = r.and_then(|_| writeln!(self.out, "{name}={last}"));
        self.note(r);
    }

    fn note(&mut self, r: io::Result<()>) {
        if let Err(e) = r {
            self.err.get_or_insert(e);
        }
    }

    /// mm_filemap_add_to_page_cache / mm_filemap_delete_from_page_cache
    /// (mm_filemap_op_page_cache: "dev %d:%d ino %lx pfn=0x%lx ofs=%lu order=%u").
    #[cold]
    #[inline(never)]
    pub fn filemap_op(&mut self, ev: Ev, cx: Ctx, f: FolioRec) {
        if self.begin(ev, cx, Some(f.memcg), Some(f.mapping)) {
            let (maj, min) = dev(f.shmem, f.mapping);
            let d = dat::dev_t(maj, min);
            if self.dat_fields(&[pfn(f.id), f.mapping as u64 + 1, f.index, d, 0]) {
                return;
            }
            let (maj, min) = dev(f.shmem, f.mapping);
            let r = writeln!(
                self.out,
                "dev {maj}:{min} ino {:x} pfn=0x{:x} ofs={} order=0",
                f.mapping + 1,
                pfn(f.id),
                f.index << crate::mm::PAGE_SHIFT
            );
            self.note(r);
        }
    }

    /// mm_filemap_fault ("dev=%d:%d ino=%lx ofs=%lld").
    #[cold]
    #[inline(never)]
    pub fn filemap_fault(&mut self, cx: Ctx, memcg: MemcgId, mapping: u32, index: u64) {
        if self.begin(Ev::FilemapFault, cx, Some(memcg), Some(mapping)) {
            let (maj, min) = dev(false, mapping);
            let d = dat::dev_t(maj, min);
            if self.dat_fields(&[mapping as u64 + 1, d, index]) {
                return;
            }
            let (maj, min) = dev(false, mapping);
            let r = writeln!(
                self.out,
                "dev={maj}:{min} ino={:x} ofs={}",
                mapping + 1,
                index << crate::mm::PAGE_SHIFT
            );
            self.note(r);
        }
    }

    /// mm_filemap_map_pages (mm_filemap_op_page_cache_range: "dev=%d:%d ino=%lx ofs=%lld-%lld").
    #[cold]
    #[inline(never)]
    pub fn filemap_range(
        &mut self,
        ev: Ev,
        cx: Ctx,
        memcg: MemcgId,
        mapping: u32,
        first: u64,
        last: u64,
    ) {
        if self.begin(ev, cx, Some(memcg), Some(mapping)) {
            let (maj, min) = dev(false, mapping);
            let d = dat::dev_t(maj, min);
            if self.dat_fields(&[mapping as u64 + 1, d, first, last]) {
                return;
            }
            let (maj, min) = dev(false, mapping);
            let r = writeln!(
                self.out,
                "dev={maj}:{min} ino={:x} ofs={}-{}",
                mapping + 1,
                first << crate::mm::PAGE_SHIFT,
                ((last + 1) << crate::mm::PAGE_SHIFT) - 1
            );
            self.note(r);
        }
    }

    /// mm_lru_insertion ("folio=%p pfn=0x%lx lru=%d flags=%s%s%s%s%s%s",
    /// the flags as page-types prints them).
    #[cold]
    #[inline(never)]
    pub fn lru_insertion(&mut self, cx: Ctx, f: FolioRec, lru: u32, mapped: bool, swapcache: bool) {
        if self.begin(Ev::LruInsertion, cx, Some(f.memcg), f.file_mapping()) {
            let flags = (mapped as u64 * dat::PAGEMAP_MAPPED)
                | ((lru < LRU_INACTIVE_FILE) as u64 * dat::PAGEMAP_ANONYMOUS)
                | (swapcache as u64 * dat::PAGEMAP_SWAPCACHE)
                | ((lru < LRU_INACTIVE_FILE || f.shmem) as u64 * dat::PAGEMAP_SWAPBACKED);
            if self.dat_fields(&[page_ptr(f.id), pfn(f.id), lru as u64, flags]) {
                return;
            }
            let anon = lru < LRU_INACTIVE_FILE;
            let r = writeln!(
                self.out,
                "folio={:016x} pfn=0x{:x} lru={lru} flags={}{}{}{}  ",
                page_ptr(f.id),
                pfn(f.id),
                if mapped { 'M' } else { ' ' },
                if anon { 'a' } else { 'f' },
                if swapcache { 's' } else { ' ' },
                // PG_swapbacked: anon and tmpfs folios.
                if anon || f.shmem { 'b' } else { ' ' },
            );
            self.note(r);
        }
    }

    /// mm_lru_activate ("folio=%p pfn=0x%lx").
    #[cold]
    #[inline(never)]
    pub fn lru_activate(&mut self, cx: Ctx, f: FolioRec) {
        if self.begin(Ev::LruActivate, cx, Some(f.memcg), f.file_mapping()) {
            if self.dat_fields(&[page_ptr(f.id), pfn(f.id)]) {
                return;
            }
            let r = writeln!(
                self.out,
                "folio={:016x} pfn=0x{:x}",
                page_ptr(f.id),
                pfn(f.id)
            );
            self.note(r);
        }
    }

    /// mm_vmscan_write_folio ("page=%p pfn=0x%lx flags=%s").
    #[cold]
    #[inline(never)]
    pub fn write_folio(&mut self, cx: Ctx, f: FolioRec, file: bool) {
        if self.begin(Ev::WriteFolio, cx, Some(f.memcg), f.file_mapping()) {
            if self.dat_fields(&[pfn(f.id), dat::reclaim_flags(file)]) {
                return;
            }
            let r = writeln!(
                self.out,
                "page={:016x} pfn=0x{:x} flags={}",
                page_ptr(f.id),
                pfn(f.id),
                reclaim_flags(file)
            );
            self.note(r);
        }
    }

    /// mm_vmscan_lru_isolate ("classzone=%d order=%d nr_requested=%lu
    /// nr_scanned=%lu nr_skipped=%lu nr_taken=%lu lru=%s", 6.18's fields).
    #[cold]
    #[inline(never)]
    pub fn lru_isolate(&mut self, cx: Ctx, memcg: MemcgId, s: &LruIsolate) {
        if self.begin(Ev::LruIsolate, cx, Some(memcg), None) {
            // highest_zoneidx (printed as classzone) 2, order 0; one zone,
            // so nothing is skipped.
            let v = [
                2,
                0,
                s.nr_requested,
                s.nr_scanned,
                0,
                s.nr_taken,
                s.lru as u64,
            ];
            let names = "classzone order nr_requested nr_scanned nr_skipped nr_taken lru";
            self.counters(names, &v, LRU_NAMES[s.lru as usize]);
        }
    }

    /// mm_vmscan_lru_shrink_inactive.
    #[cold]
    #[inline(never)]
    pub fn shrink_inactive(&mut self, cx: Ctx, memcg: MemcgId, s: &ShrinkInactive) {
        if self.begin(Ev::ShrinkInactive, cx, Some(memcg), None) {
            let v = [
                0,
                s.nr_scanned,
                s.nr_reclaimed,
                s.nr_dirty,
                s.nr_writeback,
                0,
                s.nr_immediate,
                s.nr_activate[0],
                s.nr_activate[1],
                s.nr_ref_keep,
                0,
                s.priority as u64,
                dat::reclaim_flags(s.file),
            ];
            let names = "nid nr_scanned nr_reclaimed nr_dirty nr_writeback nr_congested nr_immediate nr_activate_anon nr_activate_file nr_ref_keep nr_unmap_fail priority flags";
            self.counters(names, &v, reclaim_flags(s.file));
        }
    }

    /// mm_vmscan_lru_shrink_active ("nid=%d nr_taken=%ld nr_active=%ld
    /// nr_deactivated=%ld nr_referenced=%ld priority=%d flags=%s").
    #[cold]
    #[inline(never)]
    pub fn shrink_active(&mut self, cx: Ctx, memcg: MemcgId, s: &ShrinkActive) {
        if self.begin(Ev::ShrinkActive, cx, Some(memcg), None) {
            let v = [
                0,
                s.nr_taken,
                s.nr_active,
                s.nr_deactivated,
                s.nr_referenced,
                s.priority as u64,
                dat::reclaim_flags(s.file),
            ];
            let names = "nid nr_taken nr_active nr_deactivated nr_referenced priority flags";
            self.counters(names, &v, reclaim_flags(s.file));
        }
    }

    /// mm_vmscan_direct_reclaim_begin / mm_vmscan_memcg_reclaim_begin
    /// ("order=%d gfp_flags=%s").
    #[cold]
    #[inline(never)]
    pub fn reclaim_begin(&mut self, ev: Ev, cx: Ctx, memcg: Option<MemcgId>) {
        if self.begin(ev, cx, memcg, None) {
            let g = if ev == Ev::MemcgReclaimBegin {
                dat::GFP_KERNEL
            } else {
                dat::GFP_HIGHUSER_MOVABLE
            };
            if self.dat_fields(&[0, g]) {
                return;
            }
            let gfp = if ev == Ev::MemcgReclaimBegin {
                GFP_KERNEL
            } else {
                GFP_HIGHUSER_MOVABLE
            };
            let r = writeln!(self.out, "order=0 gfp_flags={gfp}");
            self.note(r);
        }
    }

    /// mm_vmscan_direct_reclaim_end / mm_vmscan_memcg_reclaim_end
    /// ("nr_reclaimed=%lu").
    #[cold]
    #[inline(never)]
    pub fn reclaim_end(&mut self, ev: Ev, cx: Ctx, memcg: Option<MemcgId>, nr_reclaimed: u64) {
        if self.begin(ev, cx, memcg, None) {
            if self.dat_fields(&[nr_reclaimed]) {
                return;
            }
            let r = writeln!(self.out, "nr_reclaimed={nr_reclaimed}");
            self.note(r);
        }
    }

    /// mm_vmscan_kswapd_wake ("nid=%d order=%d") / mm_vmscan_kswapd_sleep
    /// ("nid=%d").
    #[cold]
    #[inline(never)]
    pub fn kswapd(&mut self, cx: Ctx, wake: bool) {
        let ev = if wake {
            Ev::KswapdWake
        } else {
            Ev::KswapdSleep
        };
        if self.begin(ev, Ctx { kswapd: true, ..cx }, None, None) {
            // kswapd_wake: nid, zid (ZONE_NORMAL), order.
            if self.dat_fields(if wake { &[0, 2, 0] } else { &[0] }) {
                return;
            }
            let r = if wake {
                writeln!(self.out, "nid=0 order=0")
            } else {
                writeln!(self.out, "nid=0")
            };
            self.note(r);
        }
    }

    /// page_cache_ra_unbounded ("dev=%d:%d ino=%lx index=%lu
    /// nr_to_read=%lu lookahead_size=%lu").
    #[cold]
    #[inline(never)]
    pub fn ra_unbounded(
        &mut self,
        cx: Ctx,
        memcg: MemcgId,
        mapping: u32,
        index: u64,
        nr_to_read: u64,
        lookahead: u64,
    ) {
        if self.begin(Ev::RaUnbounded, cx, Some(memcg), Some(mapping)) {
            let (maj, min) = dev(false, mapping);
            let d = dat::dev_t(maj, min);
            if self.dat_fields(&[mapping as u64 + 1, d, index, nr_to_read, lookahead]) {
                return;
            }
            let (maj, min) = dev(false, mapping);
            let r = writeln!(
                self.out,
                "dev={maj}:{min} ino={:x} index={index} nr_to_read={nr_to_read} lookahead_size={lookahead}",
                mapping + 1
            );
            self.note(r);
        }
    }

    /// page_cache_ra_order, on entry before the large-folio check
    /// ("dev=%d:%d ino=%lx index=%lu order=%u size=%u async_size=%u
    /// ra_pages=%u").
    #[cold]
    #[inline(never)]
    pub fn ra_order(
        &mut self,
        cx: Ctx,
        memcg: MemcgId,
        mapping: u32,
        index: u64,
        ra: &crate::mm::readahead::FileRaState,
    ) {
        if self.begin(Ev::RaOrder, cx, Some(memcg), Some(mapping)) {
            let (maj, min) = dev(false, mapping);
            let v = [
                mapping as u64 + 1,
                dat::dev_t(maj, min),
                index,
                ra.order as u64,
                ra.size,
                ra.async_size,
                ra.ra_pages,
            ];
            if self.dat_fields(&v) {
                return;
            }
            let r = writeln!(
                self.out,
                "dev={maj}:{min} ino={:x} index={index} order={} size={} async_size={} ra_pages={}",
                mapping + 1,
                ra.order,
                ra.size,
                ra.async_size,
                ra.ra_pages
            );
            self.note(r);
        }
    }

    /// page_cache_sync_ra / page_cache_async_ra (page_cache_ra_op:
    /// "dev=%d:%d ino=%lx index=%lu req_count=%lu order=%u size=%u
    /// async_size=%u ra_pages=%u mmap_miss=%u prev_pos=%lld").
    #[cold]
    #[inline(never)]
    pub fn ra_op(
        &mut self,
        ev: Ev,
        cx: Ctx,
        memcg: MemcgId,
        mapping: u32,
        index: u64,
        req_count: u64,
        ra: &crate::mm::readahead::FileRaState,
    ) {
        if self.begin(ev, cx, Some(memcg), Some(mapping)) {
            let (maj, min) = dev(false, mapping);
            let v = [
                mapping as u64 + 1,
                dat::dev_t(maj, min),
                index,
                ra.order as u64,
                ra.size,
                ra.async_size,
                ra.ra_pages,
                ra.mmap_miss as u64,
                ra.prev_pos, // u64::MAX is loff_t -1
                req_count,
            ];
            if self.dat_fields(&v) {
                return;
            }
            let (maj, min) = dev(false, mapping);
            // prev_pos is a loff_t that starts at -1.
            let prev_pos = if ra.prev_pos == u64::MAX {
                -1
            } else {
                ra.prev_pos as i64
            };
            let r = writeln!(
                self.out,
                "dev={maj}:{min} ino={:x} index={index} req_count={req_count} order={} size={} async_size={} ra_pages={} mmap_miss={} prev_pos={prev_pos}",
                mapping + 1,
                ra.order,
                ra.size,
                ra.async_size,
                ra.ra_pages,
                ra.mmap_miss
            );
            self.note(r);
        }
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        let r = self.finish();
        if let Some(sink) = self.sink.take() {
            if let Ok(mut s) = sink.lock() {
                s.written = self.written;
                if let Err(e) = r {
                    s.error.get_or_insert(e.to_string());
                }
            }
        }
    }
}

/// What the hooks pass about one folio.
#[derive(Clone, Copy)]
pub struct FolioRec {
    pub id: FolioId,
    pub memcg: MemcgId,
    pub mapping: u32,
    pub index: u64,
    /// A page-cache folio (not anon / swap cache).
    pub file: bool,
    pub shmem: bool,
}

impl FolioRec {
    fn file_mapping(&self) -> Option<u32> {
        // Anon folios belong to no file: a file filter drops them.
        Some(if self.file { self.mapping } else { u32::MAX })
    }
}

/// mm_vmscan_lru_isolate's counts.
#[derive(Clone, Copy)]
pub struct LruIsolate {
    pub nr_requested: u64,
    pub nr_scanned: u64,
    pub nr_taken: u64,
    /// enum lru_list (LRU_INACTIVE_ANON...).
    pub lru: u32,
}

/// mm_vmscan_lru_shrink_active's counts.
#[derive(Clone, Copy)]
pub struct ShrinkActive {
    pub nr_taken: u64,
    pub nr_active: u64,
    pub nr_deactivated: u64,
    pub nr_referenced: u64,
    pub priority: i32,
    pub file: bool,
}

/// struct reclaim_stat and the rest of mm_vmscan_lru_shrink_inactive.
#[derive(Clone, Copy, Default)]
pub struct ShrinkInactive {
    pub nr_scanned: u64,
    pub nr_reclaimed: u64,
    pub nr_dirty: u64,
    pub nr_writeback: u64,
    pub nr_immediate: u64,
    pub nr_activate: [u64; 2],
    pub nr_ref_keep: u64,
    pub priority: i32,
    pub file: bool,
}

fn pfn(id: FolioId) -> u64 {
    PFN_BASE + id as u64
}

fn page_ptr(id: FolioId) -> u64 {
    VMEMMAP + pfn(id) * 64
}

/// A disk file is on vda (253:0); tmpfs has an anonymous device per mount.
fn dev(shmem: bool, _mapping: u32) -> (u32, u32) {
    if shmem {
        (0, 27)
    } else {
        (253, 0)
    }
}

/// show_reclaim_flags(trace_reclaim_flags(file)).
fn reclaim_flags(file: bool) -> &'static str {
    if file {
        "RECLAIM_WB_FILE|RECLAIM_WB_ASYNC"
    } else {
        "RECLAIM_WB_ANON|RECLAIM_WB_ASYNC"
    }
}

/// The cgroup's path from the root ("/a/b"); the root is "/".
pub fn cgroup_path(memcgs: &[MemCgroup], memcg: MemcgId) -> String {
    if memcg == 0 {
        return "/".into();
    }
    let mut parts = Vec::new();
    let mut m = memcg;
    while m != 0 {
        let c = &memcgs[m as usize];
        parts.push(c.name.trim_matches('/'));
        m = c.parent;
    }
    parts.reverse();
    format!("/{}", parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A writer the test can read back.
    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);
    impl Write for Buf {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn run(filter: TraceFilter, f: impl FnOnce(&mut Tracer, &[MemCgroup])) -> Vec<String> {
        let buf = Buf::default();
        let memcgs = vec![
            MemCgroup::new(0, "/", None),
            {
                let mut m = MemCgroup::new(1, "a", None);
                m.parent = 0;
                m
            },
            {
                let mut m = MemCgroup::new(2, "b", None);
                m.parent = 1;
                m
            },
        ];
        let mut t = Tracer::new(Box::new(buf.clone()), filter);
        f(&mut t, &memcgs);
        drop(t);
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .map(String::from)
            .collect()
    }

    fn folio(memcg: MemcgId) -> FolioRec {
        FolioRec {
            id: 5,
            memcg,
            mapping: 0,
            index: 3,
            file: true,
            shmem: false,
        }
    }

    #[test]
    fn lines_have_ftrace_layout_and_tp_printk_fields() {
        let lines = run(TraceFilter::default(), |t, m| {
            t.set_task("fio", 1000);
            let cx = Ctx {
                now: 12_345_678_901,
                kswapd: false,
                memcgs: m,
            };
            t.filemap_op(Ev::AddToPageCache, cx, folio(1));
            t.kswapd(cx, true);
            t.reclaim_end(Ev::MemcgReclaimEnd, cx, Some(1), 32);
        });
        // "%16s-%-7d [%03d] %s %5lu.%06lu: " then TP_printk(); ofs is
        // index << PAGE_SHIFT, ino the mapping + 1, pfn PFN_BASE + slot.
        assert_eq!(
            lines,
            [
                "             fio-1000    [000] .....    12.345678: mm_filemap_add_to_page_cache: dev 253:0 ino 1 pfn=0x100005 ofs=12288 order=0",
                "         kswapd0-2       [000] .....    12.345678: mm_vmscan_kswapd_wake: nid=0 order=0",
                "             fio-1000    [000] .....    12.345678: mm_vmscan_memcg_reclaim_end: nr_reclaimed=32",
            ]
        );
    }

    #[test]
    fn filters_drop_what_they_should() {
        let filter = TraceFilter {
            events: TraceFilter::parse_events("filemap").unwrap(),
            cgroup: Some("/a".into()),
            window: Some(TraceFilter::parse_window("1,2").unwrap()),
            file: Some("data".into()),
        };
        let lines = run(filter, |t, m| {
            t.name_file(0, "data");
            let at = |now| Ctx {
                now,
                kswapd: false,
                memcgs: m,
            };
            t.filemap_op(Ev::AddToPageCache, at(1_500_000_000), folio(2)); // kept: /a/b
            t.filemap_op(Ev::AddToPageCache, at(1_500_000_000), folio(0)); // root
            t.filemap_op(Ev::AddToPageCache, at(2_000_000_000), folio(1)); // window end
            t.lru_activate(at(1_500_000_000), folio(1)); // pagemap
            t.name_file(0, "other");
            t.filemap_op(Ev::AddToPageCache, at(1_500_000_000), folio(1)); // file
        });
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].contains("mm_filemap_add_to_page_cache"));
    }

    #[test]
    fn bad_filters_are_refused() {
        assert!(TraceFilter::parse_events("mm_nosuch").is_err());
        assert!(TraceFilter::parse_events(",").is_err());
        assert_eq!(
            TraceFilter::parse_events("vmscan:mm_vmscan_kswapd_wake").unwrap(),
            1 << Ev::KswapdWake as u8
        );
        assert_eq!(
            TraceFilter::parse_window("0.5,1").unwrap(),
            (500_000_000, 1_000_000_000)
        );
        assert!(TraceFilter::parse_window("2,1").is_err());
        assert!(TraceFilter::parse_window("-1,1").is_err());
        assert!(TraceFilter::parse_window("nan,1").is_err());
    }
}
