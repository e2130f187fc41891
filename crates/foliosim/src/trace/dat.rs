//! trace-cmd's binary `trace.dat` (file format version 6, trace-cmd.dat.v6(5)):
//! what `trace-cmd record` leaves, read by `trace-cmd report` and KernelShark.
//!
//! Layout: the initial header (magic, "6", endianness, long size, page
//! size), the ring buffer's header_page / header_event descriptions, one
//! format description per event (the kernel 6.18 field layout, checked
//! against this host's tracefs, with print fmt strings of our own that
//! print what the text format prints), empty kallsyms and printk formats,
//! saved cmdlines (pid -> comm of the model's tasks), one CPU, an empty
//! option list and the flyrecord section: CPU 0's ring-buffer pages.
//!
//! A page is a 16-byte header (the absolute timestamp of its first event,
//! `commit` = the bytes of events on it) and events, each a 32-bit header
//! (type_len in the low 5 bits = payload length / 4, time_delta from the
//! previous event in the upper 27) and the payload: the common fields
//! (type id, flags, preempt count, pid) and the event's own. A delta that
//! does not fit 27 bits is carried by a time-extend event first.
//!
//! The header's cmdlines are known only at the end of the run, so pages
//! are spilled to an unlinked temporary file and copied after the header.

use std::collections::BTreeMap;
use std::io::{self, Read, Seek, Write};

use super::{Ev, NAMES, NR_EVENTS};

/// x86-64's page size, the ring buffer's page size.
const PAGE_SIZE: usize = 4096;
/// The page header: u64 timestamp, u64 commit (local_t on a 64-bit kernel).
const PAGE_HDR: usize = 16;
const PAGE_DATA: usize = PAGE_SIZE - PAGE_HDR;
/// ring_buffer_event type_len values with a meaning of their own.
const TYPE_TIME_EXTEND: u32 = 30;
/// Bits of time_delta in an event header.
const TS_SHIFT: u32 = 27;
const TS_MASK: u64 = (1 << TS_SHIFT) - 1;
/// The event ids in the format descriptions (common_type): any unique
/// values do; the kernel numbers its events at boot.
const FIRST_ID: u16 = 1000;

/// GFP_HIGHUSER_MOVABLE and GFP_KERNEL with 6.18's ___GFP bit numbers
/// (RECLAIM = bits 10-11, IO 6, FS 7, HARDWALL 20, HIGHMEM 1, MOVABLE 3).
pub const GFP_HIGHUSER_MOVABLE: u64 = 0x100cca;
pub const GFP_KERNEL: u64 = 0xcc0;
/// trace_reclaim_flags(): RECLAIM_WB_ANON / _FILE | RECLAIM_WB_ASYNC.
pub fn reclaim_flags(file: bool) -> u64 {
    (if file { 0x2 } else { 0x1 }) | 0x8
}
/// mm_lru_insertion's PAGEMAP_* flag bits.
pub const PAGEMAP_MAPPED: u64 = 0x1;
pub const PAGEMAP_ANONYMOUS: u64 = 0x2;
pub const PAGEMAP_SWAPCACHE: u64 = 0x8;
pub const PAGEMAP_SWAPBACKED: u64 = 0x10;

/// new_encode_dev(): the dev_t a tracepoint records.
pub fn dev_t(major: u32, minor: u32) -> u64 {
    ((major as u64) << 20) | minor as u64
}

/// One event field: C type, name, offset, size, signedness.
type Field = (&'static str, &'static str, u16, u8, bool);

/// An event's own fields (after the 8 bytes of common fields) and print fmt.
struct Layout {
    fields: &'static [Field],
    fmt: &'static str,
}

const UL: &str = "unsigned long";
const UI: &str = "unsigned int";

const OP_PAGE_CACHE: &[Field] = &[
    (UL, "pfn", 8, 8, false),
    (UL, "i_ino", 16, 8, false),
    (UL, "index", 24, 8, false),
    ("dev_t", "s_dev", 32, 4, false),
    ("unsigned char", "order", 36, 1, false),
];
const OP_PAGE_CACHE_FMT: &str = r#""dev %u:%u ino %lx pfn=0x%lx ofs=%lu order=%u", REC->s_dev >> 20, REC->s_dev & 0xfffff, REC->i_ino, REC->pfn, REC->index << 12, REC->order"#;
const RA_OP: &[Field] = &[
    (UL, "i_ino", 8, 8, false),
    ("dev_t", "s_dev", 16, 4, false),
    (UL, "index", 24, 8, false),
    (UI, "order", 32, 4, false),
    (UI, "size", 36, 4, false),
    (UI, "async_size", 40, 4, false),
    (UI, "ra_pages", 44, 4, false),
    (UI, "mmap_miss", 48, 4, false),
    ("loff_t", "prev_pos", 56, 8, true),
    (UL, "req_count", 64, 8, false),
];
const RA_OP_FMT: &str = r#""dev=%u:%u ino=%lx index=%lu req_count=%lu order=%u size=%u async_size=%u ra_pages=%u mmap_miss=%u prev_pos=%lld", REC->s_dev >> 20, REC->s_dev & 0xfffff, REC->i_ino, REC->index, REC->req_count, REC->order, REC->size, REC->async_size, REC->ra_pages, REC->mmap_miss, REC->prev_pos"#;
const RECLAIM_BEGIN: &[Field] = &[
    ("int", "order", 8, 4, true),
    (UL, "gfp_flags", 16, 8, false),
];
const RECLAIM_BEGIN_FMT: &str = r#""order=%d gfp_flags=%s", REC->order, __print_flags(REC->gfp_flags, "|", {0x100cca, "GFP_HIGHUSER_MOVABLE"}, {0xcc0, "GFP_KERNEL"})"#;
const RECLAIM_END: &[Field] = &[(UL, "nr_reclaimed", 8, 8, false)];
const RECLAIM_END_FMT: &str = r#""nr_reclaimed=%lu", REC->nr_reclaimed"#;

/// In `Ev` order. The fields are the kernel's (names, types, offsets and
/// sizes of include/trace/events/{filemap,pagemap,vmscan,readahead}.h as
/// 6.18 lays them out); `Tracer`'s hooks pass values in this order.
const LAYOUTS: [Layout; NR_EVENTS] = [
    Layout {
        fields: OP_PAGE_CACHE,
        fmt: OP_PAGE_CACHE_FMT,
    },
    Layout {
        fields: OP_PAGE_CACHE,
        fmt: OP_PAGE_CACHE_FMT,
    },
    Layout {
        fields: &[
            (UL, "i_ino", 8, 8, false),
            ("dev_t", "s_dev", 16, 4, false),
            (UL, "index", 24, 8, false),
        ],
        fmt: r#""dev=%u:%u ino=%lx ofs=%lu", REC->s_dev >> 20, REC->s_dev & 0xfffff, REC->i_ino, REC->index << 12"#,
    },
    Layout {
        fields: &[
            (UL, "i_ino", 8, 8, false),
            ("dev_t", "s_dev", 16, 4, false),
            (UL, "index", 24, 8, false),
            (UL, "last_index", 32, 8, false),
        ],
        fmt: r#""dev=%u:%u ino=%lx ofs=%lu-%lu", REC->s_dev >> 20, REC->s_dev & 0xfffff, REC->i_ino, REC->index << 12, ((REC->last_index + 1) << 12) - 1"#,
    },
    Layout {
        fields: &[
            ("struct folio *", "folio", 8, 8, false),
            (UL, "pfn", 16, 8, false),
            ("enum lru_list", "lru", 24, 4, false),
            (UL, "flags", 32, 8, false),
        ],
        fmt: r#""folio=%016lx pfn=0x%lx lru=%d flags=%s%s%s%s%s%s", REC->folio, REC->pfn, REC->lru, REC->flags & 0x1 ? "M" : " ", REC->flags & 0x2 ? "a" : "f", REC->flags & 0x8 ? "s" : " ", REC->flags & 0x10 ? "b" : " ", REC->flags & 0x20 ? "d" : " ", REC->flags & 0x40 ? "B" : " ""#,
    },
    Layout {
        fields: &[
            ("struct folio *", "folio", 8, 8, false),
            (UL, "pfn", 16, 8, false),
        ],
        fmt: r#""folio=%016lx pfn=0x%lx", REC->folio, REC->pfn"#,
    },
    Layout {
        fields: &[
            ("int", "highest_zoneidx", 8, 4, true),
            ("int", "order", 12, 4, true),
            (UL, "nr_requested", 16, 8, false),
            (UL, "nr_scanned", 24, 8, false),
            (UL, "nr_skipped", 32, 8, false),
            (UL, "nr_taken", 40, 8, false),
            ("int", "lru", 48, 4, true),
        ],
        fmt: r#""classzone=%d order=%d nr_requested=%lu nr_scanned=%lu nr_skipped=%lu nr_taken=%lu lru=%s", REC->highest_zoneidx, REC->order, REC->nr_requested, REC->nr_scanned, REC->nr_skipped, REC->nr_taken, __print_symbolic(REC->lru, {0, "inactive_anon"}, {1, "active_anon"}, {2, "inactive_file"}, {3, "active_file"}, {4, "unevictable"})"#,
    },
    Layout {
        fields: &[
            ("int", "nid", 8, 4, true),
            (UL, "nr_scanned", 16, 8, false),
            (UL, "nr_reclaimed", 24, 8, false),
            (UL, "nr_dirty", 32, 8, false),
            (UL, "nr_writeback", 40, 8, false),
            (UL, "nr_congested", 48, 8, false),
            (UL, "nr_immediate", 56, 8, false),
            (UI, "nr_activate0", 64, 4, false),
            (UI, "nr_activate1", 68, 4, false),
            (UL, "nr_ref_keep", 72, 8, false),
            (UL, "nr_unmap_fail", 80, 8, false),
            ("int", "priority", 88, 4, true),
            ("int", "reclaim_flags", 92, 4, true),
        ],
        fmt: r#""nid=%d nr_scanned=%lu nr_reclaimed=%lu nr_dirty=%lu nr_writeback=%lu nr_congested=%lu nr_immediate=%lu nr_activate_anon=%u nr_activate_file=%u nr_ref_keep=%lu nr_unmap_fail=%lu priority=%d flags=%s", REC->nid, REC->nr_scanned, REC->nr_reclaimed, REC->nr_dirty, REC->nr_writeback, REC->nr_congested, REC->nr_immediate, REC->nr_activate0, REC->nr_activate1, REC->nr_ref_keep, REC->nr_unmap_fail, REC->priority, __print_flags(REC->reclaim_flags, "|", {0x1, "RECLAIM_WB_ANON"}, {0x2, "RECLAIM_WB_FILE"}, {0x8, "RECLAIM_WB_ASYNC"})"#,
    },
    Layout {
        fields: &[
            ("int", "nid", 8, 4, true),
            (UL, "nr_taken", 16, 8, false),
            (UL, "nr_active", 24, 8, false),
            (UL, "nr_deactivated", 32, 8, false),
            (UL, "nr_referenced", 40, 8, false),
            ("int", "priority", 48, 4, true),
            ("int", "reclaim_flags", 52, 4, true),
        ],
        fmt: r#""nid=%d nr_taken=%lu nr_active=%lu nr_deactivated=%lu nr_referenced=%lu priority=%d flags=%s", REC->nid, REC->nr_taken, REC->nr_active, REC->nr_deactivated, REC->nr_referenced, REC->priority, __print_flags(REC->reclaim_flags, "|", {0x1, "RECLAIM_WB_ANON"}, {0x2, "RECLAIM_WB_FILE"}, {0x8, "RECLAIM_WB_ASYNC"})"#,
    },
    Layout {
        fields: &[
            (UL, "pfn", 8, 8, false),
            ("int", "reclaim_flags", 16, 4, true),
        ],
        // page= is vmemmap + pfn * sizeof(struct page), as the text prints it.
        fmt: r#""page=%016lx pfn=0x%lx flags=%s", 0xffffea0000000000 + REC->pfn * 64, REC->pfn, __print_flags(REC->reclaim_flags, "|", {0x1, "RECLAIM_WB_ANON"}, {0x2, "RECLAIM_WB_FILE"}, {0x8, "RECLAIM_WB_ASYNC"})"#,
    },
    Layout {
        fields: RECLAIM_BEGIN,
        fmt: RECLAIM_BEGIN_FMT,
    },
    Layout {
        fields: RECLAIM_END,
        fmt: RECLAIM_END_FMT,
    },
    Layout {
        fields: RECLAIM_BEGIN,
        fmt: RECLAIM_BEGIN_FMT,
    },
    Layout {
        fields: RECLAIM_END,
        fmt: RECLAIM_END_FMT,
    },
    Layout {
        fields: &[
            ("int", "nid", 8, 4, true),
            ("int", "zid", 12, 4, true),
            ("int", "order", 16, 4, true),
        ],
        fmt: r#""nid=%d order=%d", REC->nid, REC->order"#,
    },
    Layout {
        fields: &[("int", "nid", 8, 4, true)],
        fmt: r#""nid=%d", REC->nid"#,
    },
    Layout {
        fields: &[
            (UL, "i_ino", 8, 8, false),
            ("dev_t", "s_dev", 16, 4, false),
            (UL, "index", 24, 8, false),
            (UL, "nr_to_read", 32, 8, false),
            (UL, "lookahead_size", 40, 8, false),
        ],
        fmt: r#""dev=%u:%u ino=%lx index=%lu nr_to_read=%lu lookahead_size=%lu", REC->s_dev >> 20, REC->s_dev & 0xfffff, REC->i_ino, REC->index, REC->nr_to_read, REC->lookahead_size"#,
    },
    Layout {
        fields: RA_OP,
        fmt: RA_OP_FMT,
    },
    Layout {
        fields: RA_OP,
        fmt: RA_OP_FMT,
    },
    Layout {
        // page_cache_ra_order's entry is page_cache_ra_op's first seven
        // fields, at the same offsets.
        fields: RA_OP.split_at(7).0,
        fmt: r#""dev=%u:%u ino=%lx index=%lu order=%u size=%u async_size=%u ra_pages=%u", REC->s_dev >> 20, REC->s_dev & 0xfffff, REC->i_ino, REC->index, REC->order, REC->size, REC->async_size, REC->ra_pages"#,
    },
];

/// The record size the kernel reserves: the struct's size, padded to its
/// largest member's alignment.
fn record_size(l: &Layout) -> usize {
    let end = l
        .fields
        .iter()
        .map(|f| f.2 as usize + f.3 as usize)
        .max()
        .unwrap_or(8);
    let align = l
        .fields
        .iter()
        .map(|f| f.3 as usize)
        .max()
        .unwrap_or(4)
        .max(4);
    end.div_ceil(align) * align
}

/// events/<system>/<event>/format for event `i`.
fn format_file(i: usize) -> String {
    let l = &LAYOUTS[i];
    let mut s = format!(
        "name: {}\nID: {}\nformat:\n",
        NAMES[i].1,
        FIRST_ID + i as u16
    );
    let common: [Field; 4] = [
        ("unsigned short", "common_type", 0, 2, false),
        ("unsigned char", "common_flags", 2, 1, false),
        ("unsigned char", "common_preempt_count", 3, 1, false),
        ("int", "common_pid", 4, 4, true),
    ];
    let line = |s: &mut String, f: &Field| {
        s.push_str(&format!(
            "\tfield:{} {};\toffset:{};\tsize:{};\tsigned:{};\n",
            f.0, f.1, f.2, f.3, f.4 as u8
        ));
    };
    for f in &common {
        line(&mut s, f);
    }
    s.push('\n');
    for f in l.fields {
        line(&mut s, f);
    }
    s.push_str(&format!("\nprint fmt: {}\n", l.fmt));
    s
}

/// events/header_page: the ring-buffer page header on a 64-bit kernel.
fn header_page() -> String {
    let mut s = String::new();
    for (ty, name, off, size, signed) in [
        (" u64", "timestamp", 0, 8, 0),
        (" local_t", "commit", 8, 8, 1),
        (" int", "overwrite", 8, 1, 1),
        (" char", "data", PAGE_HDR, PAGE_DATA, 0),
    ] {
        s.push_str(&format!(
            "\tfield:{ty} {name};\toffset:{off};\tsize:{size};\tsigned:{signed};\n"
        ));
    }
    s
}

/// events/header_event: the 32-bit event header and its special types.
const HEADER_EVENT: &str = "# compressed entry header\n\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n\tarray       :   32 bits\n\n\tpadding     : type == 29\n\ttime_extend : type == 30\n\ttime_stamp : type == 31\n\tdata max type_len  == 28\n";

/// Writes CPU 0's ring buffer as the run goes, the file at the end.
pub struct DatWriter {
    /// Full pages so far (None when the temporary file could not be made:
    /// the error is reported once, by `Tracer`).
    spill: Option<io::BufWriter<std::fs::File>>,
    pages: u64,
    page: Box<[u8; PAGE_SIZE]>,
    /// Bytes of events on `page`; 0 = no page started.
    used: usize,
    last_ts: u64,
    /// The event being filled by `begin` + `fields`.
    rec: [u8; 128],
    rec_len: usize,
    ev: usize,
    now: u64,
    /// pid -> comm, for saved_cmdlines.
    cmdlines: BTreeMap<u32, String>,
    last_pid: Option<u32>,
}

impl DatWriter {
    pub fn new() -> io::Result<DatWriter> {
        let spill = tempfile::tempfile()?;
        Ok(DatWriter {
            spill: Some(io::BufWriter::with_capacity(1 << 16, spill)),
            pages: 0,
            page: Box::new([0; PAGE_SIZE]),
            used: 0,
            last_ts: 0,
            rec: [0; 128],
            rec_len: 0,
            ev: 0,
            now: 0,
            cmdlines: BTreeMap::new(),
            last_pid: None,
        })
    }

    /// Starts an event: the common fields.
    pub fn begin(&mut self, ev: Ev, now: u64, pid: u32, comm: &str) {
        if self.last_pid != Some(pid) {
            self.cmdlines.entry(pid).or_insert_with(|| comm.to_string());
            self.last_pid = Some(pid);
        }
        let i = ev as usize;
        self.ev = i;
        self.now = now;
        self.rec_len = record_size(&LAYOUTS[i]);
        self.rec[..self.rec_len].fill(0);
        self.rec[0..2].copy_from_slice(&(FIRST_ID + i as u16).to_le_bytes());
        // common_flags, common_preempt_count 0; common_pid.
        self.rec[4..8].copy_from_slice(&(pid as i32).to_le_bytes());
    }

    /// The event's own fields, in its layout's order; appends the event.
    pub fn fields(&mut self, values: &[u64]) -> io::Result<()> {
        let l = &LAYOUTS[self.ev];
        debug_assert_eq!(values.len(), l.fields.len(), "{}", NAMES[self.ev].1);
        for (f, v) in l.fields.iter().zip(values) {
            let (off, size) = (f.2 as usize, f.3 as usize);
            // Little endian: the value's low `size` bytes.
            self.rec[off..off + size].copy_from_slice(&v.to_le_bytes()[..size]);
        }
        self.append()
    }

    fn append(&mut self) -> io::Result<()> {
        // Every record is at most 112 bytes, so type_len holds its length.
        let len = self.rec_len.div_ceil(4) * 4;
        debug_assert!(len <= 28 * 4);
        let mut delta = self.now.wrapping_sub(self.last_ts);
        let extend = if delta > TS_MASK { 8 } else { 0 };
        // A new page on the first event, a full page, or a clock that went
        // back (a page's timestamp is absolute).
        if self.used == 0 || self.now < self.last_ts || self.used + extend + 4 + len > PAGE_DATA {
            self.flush_page()?;
            self.page[..8].copy_from_slice(&self.now.to_le_bytes());
            delta = 0;
        } else if extend != 0 {
            let hdr = TYPE_TIME_EXTEND | ((delta & TS_MASK) as u32) << 5;
            self.put(&hdr.to_le_bytes());
            self.put(&((delta >> TS_SHIFT) as u32).to_le_bytes());
            delta = 0;
        }
        let hdr = (len / 4) as u32 | (delta as u32) << 5;
        self.put(&hdr.to_le_bytes());
        let rec = self.rec;
        self.put(&rec[..len]);
        self.last_ts = self.now;
        Ok(())
    }

    fn put(&mut self, b: &[u8]) {
        let at = PAGE_HDR + self.used;
        self.page[at..at + b.len()].copy_from_slice(b);
        self.used += b.len();
    }

    /// Writes the page being filled (its commit set) and clears it.
    fn flush_page(&mut self) -> io::Result<()> {
        if self.used == 0 {
            return Ok(());
        }
        self.page[8..16].copy_from_slice(&(self.used as u64).to_le_bytes());
        if let Some(s) = self.spill.as_mut() {
            s.write_all(&self.page[..])?;
        }
        self.pages += 1;
        self.page.fill(0);
        self.used = 0;
        Ok(())
    }

    /// The whole file: header, then the spilled pages at a page boundary.
    pub fn finish(mut self, out: &mut dyn Write) -> io::Result<()> {
        self.flush_page()?;
        let mut h: Vec<u8> = Vec::new();
        h.extend_from_slice(&[0x17, 0x08, 0x44]);
        h.extend_from_slice(b"tracing6\0");
        h.push(0); // little endian
        h.push(8); // long size
        h.extend_from_slice(&(PAGE_SIZE as u32).to_le_bytes());
        let section = |h: &mut Vec<u8>, name: &[u8], body: &str| {
            h.extend_from_slice(name);
            h.extend_from_slice(&(body.len() as u64).to_le_bytes());
            h.extend_from_slice(body.as_bytes());
        };
        section(&mut h, b"header_page\0", &header_page());
        section(&mut h, b"header_event\0", HEADER_EVENT);
        h.extend_from_slice(&0u32.to_le_bytes()); // no ftrace events
        let mut systems: Vec<&str> = Vec::new();
        for (sys, _) in NAMES {
            if !systems.contains(&sys) {
                systems.push(sys);
            }
        }
        h.extend_from_slice(&(systems.len() as u32).to_le_bytes());
        for sys in systems {
            h.extend_from_slice(sys.as_bytes());
            h.push(0);
            let evs: Vec<usize> = (0..NR_EVENTS).filter(|&i| NAMES[i].0 == sys).collect();
            h.extend_from_slice(&(evs.len() as u32).to_le_bytes());
            for i in evs {
                let f = format_file(i);
                h.extend_from_slice(&(f.len() as u64).to_le_bytes());
                h.extend_from_slice(f.as_bytes());
            }
        }
        h.extend_from_slice(&0u32.to_le_bytes()); // kallsyms
        h.extend_from_slice(&0u32.to_le_bytes()); // printk formats
        let mut cmdlines = String::new();
        for (pid, comm) in &self.cmdlines {
            cmdlines.push_str(&format!("{pid} {comm}\n"));
        }
        h.extend_from_slice(&(cmdlines.len() as u64).to_le_bytes());
        h.extend_from_slice(cmdlines.as_bytes());
        h.extend_from_slice(&1u32.to_le_bytes()); // CPUs
        h.extend_from_slice(b"options  \0");
        h.extend_from_slice(&0u16.to_le_bytes()); // no options
        h.extend_from_slice(b"flyrecord\0");
        let offset = (h.len() + 16).div_ceil(PAGE_SIZE) * PAGE_SIZE;
        let size = self.pages * PAGE_SIZE as u64;
        h.extend_from_slice(&(offset as u64).to_le_bytes());
        h.extend_from_slice(&size.to_le_bytes());
        h.resize(offset, 0);
        out.write_all(&h)?;
        if let Some(s) = self.spill.take() {
            let mut f = s.into_inner().map_err(|e| e.into_error())?;
            f.seek(io::SeekFrom::Start(0))?;
            let n = io::copy(&mut (&mut f).take(size), out)?;
            if n != size {
                return Err(io::Error::other("trace.dat: spilled pages lost"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_match_the_kernels_record_sizes() {
        // Fields never overlap the common fields or each other, and the
        // record sizes are 6.18's sizeof(struct trace_event_raw_*).
        for (i, l) in LAYOUTS.iter().enumerate() {
            let mut end = 8;
            for f in l.fields {
                assert!(f.2 as usize >= end, "{} {}", NAMES[i].1, f.1);
                assert_eq!(f.2 as usize % f.3 as usize, 0, "aligned: {}", f.1);
                end = f.2 as usize + f.3 as usize;
            }
            assert!(l.fmt.starts_with('"'));
        }
        let size = |e: Ev| record_size(&LAYOUTS[e as usize]);
        assert_eq!(size(Ev::AddToPageCache), 40);
        assert_eq!(size(Ev::ShrinkInactive), 96);
        assert_eq!(size(Ev::KswapdSleep), 12);
        assert_eq!(size(Ev::SyncRa), 72);
    }

    #[test]
    fn events_pack_into_pages_with_time_extends() {
        let mut w = DatWriter::new().unwrap();
        // Three events: the second 1 s later (over 27 bits of ns).
        for now in [5, 1_000_000_005, 1_000_000_105] {
            w.begin(Ev::MemcgReclaimEnd, now, 1000, "fio");
            w.fields(&[7]).unwrap();
        }
        let mut out = Vec::new();
        w.finish(&mut out).unwrap();
        assert_eq!(&out[..14], b"\x17\x08\x44tracing6\0\0\x08");
        assert_eq!(out.len() % PAGE_SIZE, 0);
        let page = &out[out.len() - PAGE_SIZE..];
        assert_eq!(u64::from_le_bytes(page[..8].try_into().unwrap()), 5);
        // Each record: 4-byte header + 16 bytes; plus one 8-byte extend.
        assert_eq!(
            u64::from_le_bytes(page[8..16].try_into().unwrap()),
            3 * 20 + 8
        );
        let word = |at: usize| u32::from_le_bytes(page[at..at + 4].try_into().unwrap());
        assert_eq!(word(16), 4, "type_len 4, delta 0");
        let ext = word(36);
        assert_eq!(ext & 31, TYPE_TIME_EXTEND);
        let delta = ((word(40) as u64) << TS_SHIFT) | (ext >> 5) as u64;
        assert_eq!(delta, 1_000_000_000);
        assert_eq!(word(44), 4, "the extended event's own delta is 0");
        assert_eq!(word(64), 4 | 100 << 5);
        let cmdlines = String::from_utf8_lossy(&out);
        assert!(cmdlines.contains("1000 fio\n"));
    }
}
