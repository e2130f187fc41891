//! One fio job's operations across its files: which file each I/O goes to
//! (io_u.c get_next_file, file_service_type, openfiles), when fio syncs
//! (get_rw_ddir's fsync / fdatasync / sync_file_range every N writes,
//! end_fsync, fsync_on_close), what a verifying write job reads back
//! (verify_backlog's interleaved reads, do_verify after each loop) and the
//! file lifecycle (pre_read, unlink_each_loop, unlink). The offsets within a
//! file come from [`IoGen`]; timing (rate, thinktime) is the runner's.
//!
//! Simplifications, documented: with several files each file runs its own
//! loops (fio ends a loop when every file is done), so verify and
//! unlink_each_loop act at the end of the job only; zipf / pareto / normal
//! file service draw over the file indices directly (fio draws over
//! `nr_files << FIO_FSERVICE_SHIFT` ranges); the verify reads model the I/O
//! only, not the checksums.

use std::collections::VecDeque;

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

use crate::fio::{FileService, FioJob, SyncFileRange};
use crate::iogen::{Dir, Io, IoGen};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncKind {
    Fsync,
    Fdatasync,
    SyncFileRange(SyncFileRange),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoKind {
    /// The job's own I/O (counted in its statistics).
    Job,
    /// A verify read-back of a written block.
    Verify,
    /// pre_read before the job starts (not counted).
    PreRead,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Drop the file's clean page cache (fio's invalidate on open / wrap,
    /// and before verifying).
    Invalidate(usize),
    Io {
        file: usize,
        io: Io,
        kind: IoKind,
    },
    /// fsync(2) and friends on the file; `range` is the byte range synced
    /// (sync_file_range covers the last N writes' bytes).
    Sync {
        file: usize,
        kind: SyncKind,
        range: (u64, u64),
    },
    /// unlink(2): the file and its page cache go.
    Unlink(usize),
    /// read_iolog: the job sleeps until the next log entry is due.
    Stall(Stall),
}

/// When a replayed entry is due (fio's iolog_delay() and v2's `wait`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stall {
    /// This many ns after the previous entry was issued; the entry after
    /// the stall is issued when it ends.
    AfterIssue(u64),
    /// This many ns after the run began (fio's genesis).
    SinceStart(u64),
}

#[derive(Clone, Copy, Debug)]
enum Step {
    Op(Op),
    /// Read back the logged pieces (fio's do_verify).
    VerifyReads,
}

/// A written block to read back.
#[derive(Clone, Copy, Debug)]
struct Piece {
    file: u32,
    offset: u64,
    len: u64,
}

pub struct JobIo {
    /// Each file's generator, made when the file is first used and
    /// dropped once it is done (a job may have many thousands of files).
    gens: Vec<Option<IoGen>>,
    /// The job without its file list, and the files: a file's generator
    /// runs a copy of `tmpl` narrowed to the file.
    tmpl: FioJob,
    files: Vec<crate::fio::JobFile>,
    seed: u64,
    done: Vec<bool>,
    open: Vec<bool>,
    /// The open files (at most `openfiles`).
    open_list: Vec<usize>,
    nr_open: u32,
    nr_done: usize,
    openfiles: u32,
    service: FileService,
    service_nr: u64,
    service_left: u64,
    cur: Option<usize>,
    next_rr: usize,
    rng: Pcg64Mcg,
    /// Bytes / I/Os across all files (several files only).
    limit_bytes: Option<u64>,
    limit_ios: Option<u64>,
    bytes: u64,
    ios: u64,
    has_writes: bool,
    writes: u64,
    last_was_sync: bool,
    last_write_file: usize,
    /// Byte range written since the last sync_file_range, per the last file.
    sfr_range: (u64, u64),
    fsync_blocks: u64,
    fdatasync_blocks: u64,
    sfr: SyncFileRange,
    sfr_nr: u64,
    end_fsync: bool,
    fsync_on_close: bool,
    verify: bool,
    verify_only: bool,
    verify_sorted: bool,
    backlog: u64,
    backlog_batch: u64,
    verify_batch: u64,
    last_dir: Dir,
    pieces: VecDeque<Piece>,
    unlink: bool,
    unlink_each_loop: bool,
    passes: u64,
    pending: VecDeque<Step>,
    pre_read: Option<(usize, u64)>,
    bs: u64,
    finished: bool,
    /// read_iolog: the log's entries replace everything above.
    replay: Option<Replay>,
}

/// The job narrowed to file `f` of `nr` (`tmpl` has no file list: a copy
/// per file must not copy every other file's entry).
fn file_job(tmpl: &FioJob, f: &crate::fio::JobFile, nr: usize) -> FioJob {
    let job = tmpl;
    let mut j = tmpl.clone();
    j.filename = f.name.clone();
    j.offset = f.offset;
    j.size = f.size;
    if nr == 1 {
        // One file: its generator keeps the job's byte budget (fio's
        // size= below filesize= ends the job early).
        if f.size != job.size && job.io_size.is_none() {
            j.io_size = Some(job.size);
        }
    } else {
        // Several files: the budget is the job's, counted here.
        j.io_size = None;
        j.number_ios = None;
    }
    j
}

impl JobIo {
    pub fn new(job: &FioJob, seed: u64) -> JobIo {
        let nr = job.files.len().max(1);
        let files = if job.files.is_empty() {
            vec![crate::fio::JobFile {
                name: job.filename.clone(),
                offset: job.offset,
                size: job.size,
            }]
        } else {
            job.files.clone()
        };
        let tmpl = FioJob {
            files: Vec::new(),
            ..job.clone()
        };
        let gens = (0..nr).map(|_| None).collect();
        let c = &job.ctl;
        let multi = nr > 1;
        let loops = job.loops.max(1);
        let verify = c.verify && c.do_verify && job.rw.has_writes();
        // fio's log_io_piece: a list in issue order with a random map, an
        // offset-sorted tree otherwise.
        let verify_sorted = !(job.rw.is_random()
            && !job.norandommap
            && job.random_distribution == crate::fio::RandomDist::Random);
        JobIo {
            gens,
            tmpl,
            files,
            seed,
            done: vec![false; nr],
            open: vec![false; nr],
            open_list: Vec::with_capacity(c.openfiles.clamp(1, nr as u32) as usize),
            nr_open: 0,
            nr_done: 0,
            openfiles: c.openfiles.clamp(1, nr as u32),
            service: c.file_service,
            service_nr: c.file_service_nr.max(1),
            service_left: 0,
            cur: None,
            next_rr: 0,
            // fio's next_file_state seed; the draws themselves are not fio's.
            rng: Pcg64Mcg::seed_from_u64(
                crate::fio_rand::job_rand_seeds(job, seed)[crate::fio_rand::FIO_RAND_FILE_OFF],
            ),
            limit_bytes: (multi && !job.time_based)
                .then(|| job.io_size.unwrap_or(job.size).saturating_mul(loops)),
            limit_ios: if multi && !job.time_based {
                job.number_ios.map(|n| n.saturating_mul(loops))
            } else {
                None
            },
            bytes: 0,
            ios: 0,
            has_writes: job.rw.has_writes(),
            writes: 0,
            last_was_sync: false,
            last_write_file: 0,
            sfr_range: (u64::MAX, 0),
            fsync_blocks: c.fsync_blocks,
            fdatasync_blocks: c.fdatasync_blocks,
            sfr: c.sync_file_range,
            sfr_nr: c.sync_file_range_nr,
            end_fsync: job.end_fsync,
            fsync_on_close: c.fsync_on_close,
            verify,
            verify_only: c.verify_only && job.rw.has_writes(),
            verify_sorted,
            backlog: if verify { c.verify_backlog } else { 0 },
            backlog_batch: c.verify_backlog_batch.max(1),
            verify_batch: 0,
            last_dir: Dir::Read,
            pieces: VecDeque::new(),
            unlink: c.unlink,
            unlink_each_loop: c.unlink_each_loop,
            passes: 1,
            pending: VecDeque::new(),
            pre_read: c.pre_read.then_some((0, 0)),
            bs: job.bs.max(1),
            finished: false,
            replay: job.iolog.clone().map(|log| Replay::new(job, log)),
        }
    }

    /// Puts an operation back to be returned next (the runner held it
    /// back: rate, flow).
    /// See [`IoGen::adjusted`]: the job's I/O on `file` was moved.
    pub fn adjusted(&mut self, file: usize, orig: Io, new: Io) {
        if let Some(Some(g)) = self.gens.get_mut(file) {
            g.adjusted(orig, new);
        }
    }

    pub fn unget(&mut self, op: Op) {
        self.pending.push_front(Step::Op(op));
    }

    pub fn nr_files(&self) -> usize {
        self.gens.len()
    }

    /// The next operation, or None when the job is done.
    pub fn next_op(&mut self) -> Option<Op> {
        loop {
            if let Some(op) = self.step() {
                return Some(op);
            }
            if let Some(r) = self.replay.as_mut() {
                return r.next_op();
            }
            if let Some(op) = self.pre_read_op() {
                return Some(op);
            }
            if self.pre_read.is_some() {
                continue;
            }
            if self.finished {
                return None;
            }
            if let Some(op) = self.main_op() {
                return Some(op);
            }
        }
    }

    /// Pending steps first (syncs, invalidations, verify reads, unlinks).
    fn step(&mut self) -> Option<Op> {
        while let Some(s) = self.pending.front().copied() {
            match s {
                Step::Op(op) => {
                    self.pending.pop_front();
                    return Some(op);
                }
                Step::VerifyReads => match self.pieces.pop_front() {
                    Some(p) => return Some(self.verify_read(p)),
                    None => {
                        self.pending.pop_front();
                    }
                },
            }
        }
        None
    }

    fn verify_read(&mut self, p: Piece) -> Op {
        self.last_dir = Dir::Read;
        Op::Io {
            file: p.file as usize,
            io: Io {
                offset: p.offset,
                len: p.len,
                dir: Dir::Read,
            },
            kind: IoKind::Verify,
        }
    }

    /// fio's pre_read_file(): each file's region read in bs chunks.
    fn pre_read_op(&mut self) -> Option<Op> {
        let (f, pos) = self.pre_read?;
        let j = &self.files[f];
        if pos < j.size {
            let len = self.bs.min(j.size - pos);
            self.pre_read = Some((f, pos + len));
            return Some(Op::Io {
                file: f,
                io: Io {
                    offset: j.offset + pos,
                    len,
                    dir: Dir::Read,
                },
                kind: IoKind::PreRead,
            });
        }
        self.pre_read = (f + 1 < self.gens.len()).then_some((f + 1, 0));
        None
    }

    fn main_op(&mut self) -> Option<Op> {
        // get_rw_ddir(): a sync is due before the next I/O.
        if self.has_writes && !self.last_was_sync && self.writes > 0 {
            let f = self.last_write_file;
            let due = |n: u64| n > 0 && self.writes.is_multiple_of(n);
            let kind = if due(self.fsync_blocks) {
                Some(SyncKind::Fsync)
            } else if due(self.fdatasync_blocks) {
                Some(SyncKind::Fdatasync)
            } else if due(self.sfr_nr) && self.sfr != SyncFileRange::default() {
                Some(SyncKind::SyncFileRange(self.sfr))
            } else {
                None
            };
            if let Some(kind) = kind {
                self.last_was_sync = true;
                let range = match kind {
                    SyncKind::SyncFileRange(_) => {
                        std::mem::replace(&mut self.sfr_range, (u64::MAX, 0))
                    }
                    _ => (0, u64::MAX),
                };
                return Some(Op::Sync {
                    file: f,
                    kind,
                    range,
                });
            }
        }
        // check_get_verify(): after every verify_backlog writes, read back
        // verify_backlog_batch of the logged blocks.
        if self.backlog > 0 && !self.pieces.is_empty() {
            if self.verify_batch == 0
                && (self.pieces.len() as u64).is_multiple_of(self.backlog)
                && self.last_dir != Dir::Read
            {
                self.verify_batch = self.backlog_batch;
            }
            if self.verify_batch > 0 {
                self.verify_batch -= 1;
                let p = self.pieces.pop_front().expect("not empty");
                return Some(self.verify_read(p));
            }
        }
        let over = self.limit_bytes.is_some_and(|l| self.bytes >= l)
            || self.limit_ios.is_some_and(|l| self.ios >= l);
        let Some(f) = (!over).then(|| self.next_file()).flatten() else {
            self.end_of_loop(true);
            self.finished = true;
            return None;
        };
        let nr = self.gens.len();
        let g = self.gen(f);
        let before = g.passes();
        let Some(io) = g.next_io() else {
            self.close_file(f);
            return None;
        };
        let inval = g.take_invalidate();
        let new_loop = nr == 1 && g.passes() > before;
        self.bytes += io.len;
        self.ios += 1;
        if new_loop {
            // fio ends the loop (syncs, verifies, unlinks) before the
            // files are reopened for the next one.
            self.end_of_loop(false);
        }
        if inval {
            self.pending.push_back(Step::Op(Op::Invalidate(f)));
        }
        let write = io.dir == Dir::Write;
        if write {
            self.writes += 1;
            self.last_was_sync = false;
            self.last_write_file = f;
            self.sfr_range = (
                self.sfr_range.0.min(io.offset),
                self.sfr_range.1.max(io.offset + io.len),
            );
            if self.verify {
                if self.pieces.capacity() == 0 {
                    let per = self.files[f].size / self.bs;
                    self.pieces.reserve(per.min(1 << 20) as usize);
                }
                self.pieces.push_back(Piece {
                    file: f as u32,
                    offset: io.offset,
                    len: io.len,
                });
            }
        }
        self.last_dir = io.dir;
        if write && self.verify_only {
            // verify_only: the writes are not issued, only logged.
            return None;
        }
        let op = Op::Io {
            file: f,
            io,
            kind: IoKind::Job,
        };
        if self.pending.is_empty() {
            return Some(op);
        }
        self.pending.push_back(Step::Op(op));
        None
    }

    /// The end of a loop (do_io's end_fsync / fsync_on_close, do_verify,
    /// unlink_each_loop) or of the job (unlink).
    fn end_of_loop(&mut self, last: bool) {
        let nr = self.gens.len();
        if self.has_writes && !self.last_was_sync && (self.end_fsync || self.fsync_on_close) {
            for f in 0..nr {
                self.pending.push_back(Step::Op(Op::Sync {
                    file: f,
                    kind: SyncKind::Fsync,
                    range: (0, u64::MAX),
                }));
            }
            self.last_was_sync = true;
        }
        if self.verify && !self.pieces.is_empty() {
            // do_verify(): sync and drop each file's cache so the reads
            // come from the device, then read back what was written.
            for f in 0..nr {
                self.pending.push_back(Step::Op(Op::Sync {
                    file: f,
                    kind: SyncKind::Fsync,
                    range: (0, u64::MAX),
                }));
                self.pending.push_back(Step::Op(Op::Invalidate(f)));
            }
            if self.verify_sorted {
                // Offset order, a rewritten block once.
                let v = self.pieces.make_contiguous();
                v.sort_by_key(|p| (p.file, p.offset));
                let mut keep: VecDeque<Piece> = VecDeque::with_capacity(v.len());
                for p in v.iter() {
                    match keep.back() {
                        Some(b) if b.file == p.file && b.offset == p.offset => {
                            *keep.back_mut().expect("back") = *p;
                        }
                        _ => keep.push_back(*p),
                    }
                }
                self.pieces = keep;
            }
            self.pending.push_back(Step::VerifyReads);
        }
        if (!last && self.unlink_each_loop) || (last && self.unlink) {
            for f in 0..nr {
                self.pending.push_back(Step::Op(Op::Unlink(f)));
            }
        }
        if !last {
            self.passes += 1;
        }
    }

    /// A file's region is done: fio closes it (fsync_on_close) and, under
    /// non-uniform service, starts it over instead.
    fn close_file(&mut self, f: usize) {
        let nr_files = self.gens.len();
        let nonuniform = matches!(
            self.service,
            FileService::Zipf(_) | FileService::Pareto(_) | FileService::Normal(_)
        );
        if nonuniform && self.nr_files() > 1 {
            let mut g = IoGen::new(&file_job(&self.tmpl, &self.files[f], nr_files), self.seed);
            // fio_file_reset(): no reopen, so no invalidation.
            g.take_invalidate();
            self.gens[f] = Some(g);
            return;
        }
        // Done for good: its generator goes.
        self.gens[f] = None;
        if self.open[f] {
            self.open[f] = false;
            self.nr_open -= 1;
            self.open_list.retain(|&o| o != f);
        }
        if !self.done[f] {
            self.done[f] = true;
            self.nr_done += 1;
        }
        if self.fsync_on_close && self.has_writes && self.nr_files() > 1 {
            self.pending.push_back(Step::Op(Op::Sync {
                file: f,
                kind: SyncKind::Fsync,
                range: (0, u64::MAX),
            }));
        }
        if self.cur == Some(f) {
            self.cur = None;
        }
    }

    /// File `f`'s generator, made on first use (fio opens the file then).
    fn gen(&mut self, f: usize) -> &mut IoGen {
        let nr = self.gens.len();
        let (tmpl, files, seed) = (&self.tmpl, &self.files, self.seed);
        self.gens[f].get_or_insert_with(|| IoGen::new(&file_job(tmpl, &files[f], nr), seed))
    }

    fn open_file(&mut self, f: usize) -> bool {
        if self.open[f] {
            return true;
        }
        if self.nr_open >= self.openfiles {
            return false;
        }
        self.open[f] = true;
        self.nr_open += 1;
        self.open_list.push(f);
        true
    }

    /// __get_next_file().
    fn next_file(&mut self) -> Option<usize> {
        let nr = self.gens.len();
        if self.nr_done >= nr {
            return None;
        }
        if let Some(f) = self.cur.filter(|&f| self.open[f] && !self.done[f]) {
            if self.service == FileService::Sequential {
                return Some(f);
            }
            if self.service_left > 0 {
                self.service_left -= 1;
                return Some(f);
            }
        }
        let f = match self.service {
            FileService::RoundRobin | FileService::Sequential => self.next_file_rr()?,
            _ => self.next_file_rand()?,
        };
        self.cur = Some(f);
        self.service_left = self.service_nr - 1;
        Some(f)
    }

    /// get_next_file_rr(): the next file that is not done and open (or can
    /// be opened within `openfiles`).
    fn next_file_rr(&mut self) -> Option<usize> {
        let nr = self.gens.len();
        if self.nr_open >= self.openfiles {
            // A closed file would be refused (fio's -EBUSY, after which it
            // tries the file after it): the first open file from here on.
            let from = self.next_rr;
            let f = self
                .open_list
                .iter()
                .copied()
                .min_by_key(|&f| (f + nr - from) % nr)?;
            self.next_rr = (f + 1) % nr;
            return Some(f);
        }
        for _ in 0..nr {
            let f = self.next_rr;
            self.next_rr = (self.next_rr + 1) % nr;
            if !self.done[f] && self.open_file(f) {
                return Some(f);
            }
        }
        None
    }

    fn next_file_rand(&mut self) -> Option<usize> {
        let nr = self.gens.len();
        if self.nr_open >= self.openfiles && self.service == FileService::Random {
            // fio draws again after each refused (closed) file: uniform
            // over the open ones.
            let k = self.rng.gen_range(0..self.open_list.len().max(1));
            return self.open_list.get(k).copied();
        }
        // Bounded retries, then the first usable file (fio loops until one
        // is found; the bound only guards against a degenerate draw).
        for _ in 0..(64 * nr).min(4096) {
            let f = self.draw_file(nr);
            if !self.done[f] && self.open_file(f) {
                return Some(f);
            }
        }
        (0..nr).find(|&f| !self.done[f] && self.open_file(f))
    }

    fn draw_file(&mut self, nr: usize) -> usize {
        let n = nr as f64;
        match self.service {
            FileService::Zipf(theta) => {
                // Exact zipf over the file indices.
                let total: f64 = (1..=nr).map(|i| (i as f64).powf(-theta)).sum();
                let mut u: f64 = self.rng.gen::<f64>() * total;
                for i in 0..nr {
                    u -= ((i + 1) as f64).powf(-theta);
                    if u <= 0.0 {
                        return i;
                    }
                }
                nr - 1
            }
            FileService::Pareto(h) => {
                let pow = h.ln() / (1.0 - h).ln();
                let u: f64 = self.rng.gen();
                (((n - 1.0) * u.powf(pow)) as usize).min(nr - 1)
            }
            FileService::Normal(dev) if dev > 0.0 => {
                let z: f64 = (0..12).map(|_| self.rng.gen::<f64>()).sum::<f64>() - 6.0;
                let x = n / 2.0 + z * (n * dev / 100.0);
                (x.max(0.0) as usize).min(nr - 1)
            }
            _ => self.rng.gen_range(0..nr),
        }
    }
}

/// read_iolog: the log's entries as operations (fio's read_iolog_get(),
/// ipo_special()): every file action and every entry with a delay comes
/// after a stall that marks its issue; `open` drops the file's clean cache
/// (td_io_open_file()'s invalidate); a `close` with fsync_on_close, and
/// the job's end with end_fsync, sync written files; unlink ends it.
struct Replay {
    log: std::sync::Arc<crate::fio::iolog::IoLog>,
    pos: usize,
    queued: VecDeque<Op>,
    open: Vec<bool>,
    invalidate: bool,
    fsync_on_close: bool,
    end_fsync: bool,
    unlink: bool,
    writes: bool,
    last_was_sync: bool,
    ended: bool,
}

impl Replay {
    fn new(job: &FioJob, log: std::sync::Arc<crate::fio::iolog::IoLog>) -> Replay {
        let c = &job.ctl;
        Replay {
            open: vec![false; log.files.len()],
            writes: job.rw.has_writes(),
            log,
            pos: 0,
            queued: VecDeque::new(),
            invalidate: job.invalidate,
            fsync_on_close: c.fsync_on_close,
            end_fsync: job.end_fsync || c.fsync_on_close,
            unlink: c.unlink || c.unlink_each_loop,
            last_was_sync: false,
            ended: false,
        }
    }

    fn next_op(&mut self) -> Option<Op> {
        while self.queued.is_empty() {
            let Some(&e) = self.log.entries.get(self.pos) else {
                if std::mem::replace(&mut self.ended, true) {
                    return None;
                }
                self.end();
                continue;
            };
            self.pos += 1;
            self.entry(e);
        }
        self.queued.pop_front()
    }

    fn entry(&mut self, e: crate::fio::iolog::Entry) {
        use crate::fio::iolog::Act;
        let f = e.file as usize;
        if e.act == Act::Wait {
            let at = e.offset.saturating_mul(1_000_000);
            return self.queued.push_back(Op::Stall(Stall::SinceStart(at)));
        }
        if e.delay_us > 0 || e.act.on_file() {
            let d = e.delay_us.saturating_mul(1000);
            self.queued.push_back(Op::Stall(Stall::AfterIssue(d)));
        }
        let dir = match e.act {
            Act::Open => {
                self.open[f] = true;
                return self.push_if(self.invalidate, Op::Invalidate(f));
            }
            Act::Close => {
                self.open[f] = false;
                return self.sync_due(f, self.fsync_on_close);
            }
            Act::Add | Act::Wait => return,
            Act::Sync | Act::Datasync => {
                let kind = match e.act {
                    Act::Sync => SyncKind::Fsync,
                    _ => SyncKind::Fdatasync,
                };
                return self.sync(f, kind);
            }
            Act::Read => Dir::Read,
            Act::Write => Dir::Write,
            Act::Trim => Dir::Trim,
        };
        self.last_was_sync = false;
        let io = Io {
            offset: e.offset,
            len: e.len,
            dir,
        };
        let kind = IoKind::Job;
        self.queued.push_back(Op::Io { file: f, io, kind });
    }

    fn push_if(&mut self, cond: bool, op: Op) {
        if cond {
            self.queued.push_back(op);
        }
    }

    fn sync(&mut self, file: usize, kind: SyncKind) {
        self.last_was_sync = true;
        let range = (0, u64::MAX);
        self.queued.push_back(Op::Sync { file, kind, range });
    }

    /// should_fsync(): a job that writes, and did not just sync.
    fn sync_due(&mut self, f: usize, want: bool) {
        if want && self.writes && !self.last_was_sync {
            self.sync(f, SyncKind::Fsync);
        }
    }

    /// do_io()'s end_fsync (fio_file_fsync() reopens a closed file, which
    /// invalidates it first), then unlink.
    fn end(&mut self) {
        let nr = self.open.len();
        if self.end_fsync && self.writes && !self.last_was_sync {
            for f in 0..nr {
                self.push_if(!self.open[f] && self.invalidate, Op::Invalidate(f));
                self.sync(f, SyncKind::Fsync);
            }
        }
        for f in (0..nr).filter(|_| self.unlink) {
            self.queued.push_back(Op::Unlink(f));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fio::test_job as job;

    fn ops(j: &FioJob, max: usize) -> Vec<Op> {
        let mut g = JobIo::new(j, 1);
        let mut v = Vec::new();
        while let Some(op) = g.next_op() {
            v.push(op);
            assert!(v.len() <= max, "runaway job");
        }
        v
    }

    /// The offsets of the I/Os of `kind`, in issue order.
    fn offsets(v: &[Op], kind: IoKind) -> Vec<u64> {
        v.iter()
            .filter_map(|o| match o {
                Op::Io { io, kind: k, .. } if *k == kind => Some(io.offset),
                _ => None,
            })
            .collect()
    }

    fn io_files(v: &[Op]) -> Vec<usize> {
        v.iter()
            .filter_map(|o| match o {
                Op::Io {
                    file,
                    kind: IoKind::Job,
                    ..
                } => Some(*file),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn nrfiles_round_robin_covers_each_file() {
        let j = job("size=64k\nnrfiles=4\n");
        assert_eq!(j.files.len(), 4);
        assert!(j.files.iter().all(|f| f.size == 16 << 10));
        let v = ops(&j, 1000);
        let files = io_files(&v);
        assert_eq!(files.len(), 16);
        assert_eq!(&files[..8], &[0, 1, 2, 3, 0, 1, 2, 3]);
        // Each file is opened (and its cache dropped) once.
        let inval = v.iter().filter(|o| matches!(o, Op::Invalidate(_))).count();
        assert_eq!(inval, 4);
    }

    #[test]
    fn sequential_service_finishes_a_file_first() {
        let j = job("size=32k\nnrfiles=2\nfile_service_type=sequential\n");
        let files = io_files(&ops(&j, 1000));
        assert_eq!(files, vec![0, 0, 0, 0, 1, 1, 1, 1]);
        let j = job("size=32k\nnrfiles=2\nfile_service_type=roundrobin:2\n");
        assert_eq!(io_files(&ops(&j, 1000)), vec![0, 0, 1, 1, 0, 0, 1, 1]);
    }

    #[test]
    fn openfiles_limits_the_open_set() {
        let j = job("size=48k\nnrfiles=3\nopenfiles=1\n");
        let files = io_files(&ops(&j, 1000));
        assert_eq!(files, vec![0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]);
    }

    #[test]
    fn random_service_reaches_every_file_and_stops_at_size() {
        let j = job("size=256k\nnrfiles=8\nfile_service_type=random\n");
        let files = io_files(&ops(&j, 10_000));
        assert_eq!(files.len(), 64);
        for f in 0..8 {
            assert_eq!(files.iter().filter(|&&x| x == f).count(), 8);
        }
        assert_ne!(&files[..8], &[0, 1, 2, 3, 4, 5, 6, 7]);
    }

    #[test]
    fn zipf_service_prefers_the_first_files() {
        let j = job("size=4m\nnrfiles=8\nfile_service_type=zipf:1.2\n");
        let files = io_files(&ops(&j, 100_000));
        assert_eq!(files.len(), 1024, "the job's size is the budget");
        let c0 = files.iter().filter(|&&x| x == 0).count();
        let c7 = files.iter().filter(|&&x| x == 7).count();
        assert!(c0 > 3 * c7, "zipf: {c0} vs {c7}");
    }

    #[test]
    fn fsync_every_n_writes_and_end_fsync() {
        let j = job("size=64k\nrw=write\nfsync=4\nend_fsync=1\n");
        let v = ops(&j, 1000);
        let mut writes = 0;
        let mut syncs_after = Vec::new();
        for o in &v {
            match o {
                Op::Io { io, .. } if io.dir == Dir::Write => writes += 1,
                Op::Sync {
                    kind: SyncKind::Fsync,
                    ..
                } => syncs_after.push(writes),
                _ => {}
            }
        }
        // One after writes 4, 8, 12, 16; the last write was synced, so
        // end_fsync adds none (fio's last_was_sync).
        assert_eq!(syncs_after, vec![4, 8, 12, 16]);
        let j = job("size=20k\nrw=write\nfdatasync=2\nend_fsync=1\n");
        let v = ops(&j, 1000);
        let kinds: Vec<_> = v
            .iter()
            .filter_map(|o| match o {
                Op::Sync { kind, .. } => Some(*kind),
                _ => None,
            })
            .collect();
        assert_eq!(
            kinds,
            vec![SyncKind::Fdatasync, SyncKind::Fdatasync, SyncKind::Fsync]
        );
        // A read job never syncs (should_fsync needs writes).
        let j = job("size=16k\nrw=read\nfsync=1\nend_fsync=1\n");
        assert!(!ops(&j, 100).iter().any(|o| matches!(o, Op::Sync { .. })));
    }

    #[test]
    fn sync_file_range_covers_the_written_range() {
        let j = job("size=32k\nrw=write\nsync_file_range=write,wait_after:4\n");
        let v = ops(&j, 1000);
        let r: Vec<_> = v
            .iter()
            .filter_map(|o| match o {
                Op::Sync {
                    kind: SyncKind::SyncFileRange(f),
                    range,
                    ..
                } => Some((f.write, f.wait_after, f.wait_before, *range)),
                _ => None,
            })
            .collect();
        assert_eq!(
            r,
            vec![
                (true, true, false, (0, 16384)),
                (true, true, false, (16384, 32768))
            ]
        );
    }

    #[test]
    fn verify_reads_back_after_the_writes() {
        let j = job("size=32k\nrw=write\nverify=crc32c\n");
        let v = ops(&j, 1000);
        let kinds: Vec<_> = v
            .iter()
            .map(|o| match o {
                Op::Io { io, kind, .. } => format!("{kind:?}{}", io.offset / 4096),
                Op::Sync { .. } => "S".into(),
                Op::Invalidate(_) => "I".into(),
                Op::Unlink(_) => "U".into(),
                Op::Stall(_) => "T".into(),
            })
            .collect();
        assert_eq!(
            kinds.join(" "),
            "I Job0 Job1 Job2 Job3 Job4 Job5 Job6 Job7 S I Verify0 Verify1 Verify2 Verify3 Verify4 Verify5 Verify6 Verify7"
        );
        // do_verify=0: no read-back; verify_only: reads without writes.
        let j = job("size=32k\nrw=write\nverify=md5\ndo_verify=0\n");
        assert!(!ops(&j, 100).iter().any(|o| matches!(
            o,
            Op::Io {
                kind: IoKind::Verify,
                ..
            }
        )));
        let j = job("size=32k\nrw=write\nverify=md5\nverify_only\n");
        let v = ops(&j, 100);
        assert!(!v.iter().any(|o| matches!(
            o,
            Op::Io {
                kind: IoKind::Job,
                ..
            }
        )));
        assert_eq!(
            v.iter()
                .filter(|o| matches!(
                    o,
                    Op::Io {
                        kind: IoKind::Verify,
                        ..
                    }
                ))
                .count(),
            8
        );
    }

    #[test]
    fn verify_backlog_interleaves() {
        let j = job("size=32k\nrw=write\nverify=crc32c\nverify_backlog=2\n");
        let v = ops(&j, 1000);
        let seq: Vec<String> = v
            .iter()
            .filter_map(|o| match o {
                Op::Io { io, kind, .. } => Some(format!(
                    "{}{}",
                    if *kind == IoKind::Verify { "v" } else { "w" },
                    io.offset / 4096
                )),
                _ => None,
            })
            .collect();
        assert_eq!(
            seq.join(" "),
            "w0 w1 v0 v1 w2 w3 v2 v3 w4 w5 v4 v5 w6 w7 v6 v7"
        );
    }

    #[test]
    fn random_verify_keeps_issue_order_sequential_is_sorted() {
        let j = job("size=64k\nrw=randwrite\nverify=md5\n");
        let v = ops(&j, 1000);
        let w = offsets(&v, IoKind::Job);
        let r = offsets(&v, IoKind::Verify);
        assert_eq!(w, r, "random map: the list keeps issue order");
        let j = job("size=64k\nrw=randwrite\nverify=md5\nnorandommap\n");
        let r = offsets(&ops(&j, 1000), IoKind::Verify);
        assert!(
            r.windows(2).all(|w| w[0] < w[1]),
            "sorted, rewrites once: {r:?}"
        );
    }

    #[test]
    fn unlink_and_loops() {
        let j = job("size=8k\nrw=write\nloops=2\nunlink_each_loop=1\nunlink=1\n");
        let v = ops(&j, 100);
        let s: Vec<String> = v
            .iter()
            .map(|o| match o {
                Op::Io { io, .. } => format!("w{}", io.offset / 4096),
                Op::Sync { .. } => "S".into(),
                Op::Invalidate(_) => "I".into(),
                Op::Unlink(_) => "U".into(),
                Op::Stall(_) => "T".into(),
            })
            .collect();
        assert_eq!(s.join(" "), "I w0 w1 U I w0 w1 U");
    }

    #[test]
    fn pre_read_reads_each_file_first() {
        let j = job("size=32k\nnrfiles=2\npre_read=1\nrw=randread\n");
        assert!(!j.invalidate, "pre_read turns invalidate off");
        let v = ops(&j, 1000);
        let pre: Vec<(usize, u64)> = v
            .iter()
            .take(8)
            .filter_map(|o| match o {
                Op::Io {
                    file,
                    io,
                    kind: IoKind::PreRead,
                } => Some((*file, io.offset / 4096)),
                _ => None,
            })
            .collect();
        let want: Vec<(usize, u64)> = (0..2).flat_map(|f| (0..4).map(move |b| (f, b))).collect();
        assert_eq!(
            pre, want,
            "each file's region, in order, before any job I/O"
        );
        assert!(!v.iter().any(|o| matches!(o, Op::Invalidate(_))));
    }
}
