//! cache_ext (SOSP 2025, "Customizing the Page Cache with eBPF"): per-memcg
//! page-cache policies, the kernel side. A policy implements
//! [`CacheExtOps`] (the `struct cache_ext_ops` members) and keeps folios on
//! up to five lists of its own ([`list`]); the kernel calls it from the
//! hooks cache_ext adds:
//!
//! * `folio_added` from `__filemap_add_folio()` (readahead folios too);
//! * `folio_accessed` from `folio_mark_accessed()`, i.e. read()/write()
//!   through file descriptors only: a PTE's accessed bit never reaches the
//!   policy (as in cache_ext, which hooks only that function);
//! * `folio_evicted` on every removal from the page cache (reclaim,
//!   truncation, invalidation);
//! * `admit_folio` on a read miss before synchronous readahead: `true`
//!   makes the read bypass the page cache;
//! * `evict_folios` from `shrink_lruvec()` (classic LRU only), asked for
//!   the inactive-file scan target of `get_scan_count()` in calls of at
//!   most [`CACHE_EXT_EVICT_BATCH`] candidates.
//!
//! Folios stay on the kernel's LRU as well: the policy only chooses which
//! ones reclaim tries first; what it does not pick, or picks too little
//! of, the kernel's own loop reclaims.

pub mod list;

use crate::mm::filemap::AddressSpace;

use crate::mm::folio::{pg, Folio, FolioId, FolioTable};
pub use list::{ListError, ListId, ListSpace, CACHE_EXT_ITERATE_MAX, CACHE_EXT_MAX_LISTS};

/// Candidates one evict_folios() call may propose (cache_ext's
/// eviction_ctx array).
pub const CACHE_EXT_EVICT_BATCH: usize = 32;
/// Folios one list_sample() call may take (MAX_SAMPLE_FOLIOS).
pub const CACHE_EXT_MAX_SAMPLE: usize = 2048;

/// What the kernel tells a policy about the task in whose context a hook
/// runs (`current`): scenarios name processes, fio runs name jobs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskInfo {
    pub pid: u32,
    pub tid: u32,
    pub comm: String,
}

/// A handle to a registered task (see [`CacheExt::register_task`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TaskRef(pub u32);

/// An admission request: a read missed the page cache at `index`.
#[derive(Clone, Copy, Debug)]
pub struct AdmissionCtx {
    pub mapping: u32,
    pub index: u64,
    /// Pages the read asks for from `index` on.
    pub nr_pages: u64,
}

/// The eviction request of one evict_folios() call and the candidates the
/// policy proposes.
pub struct EvictionCtx {
    /// Folios reclaim wants from this call (at most CACHE_EXT_EVICT_BATCH).
    pub request_nr_folios: u64,
    cand: [FolioId; CACHE_EXT_EVICT_BATCH],
    nr: usize,
    overflow: bool,
}

impl EvictionCtx {
    pub fn new(request: u64) -> Self {
        EvictionCtx {
            request_nr_folios: request.min(CACHE_EXT_EVICT_BATCH as u64),
            cand: [0; CACHE_EXT_EVICT_BATCH],
            nr: 0,
            overflow: false,
        }
    }
    /// Proposes a folio for eviction. Proposing more than
    /// CACHE_EXT_EVICT_BATCH aborts the whole call (nothing is evicted);
    /// returns false from then on.
    #[inline]
    pub fn propose(&mut self, id: FolioId) -> bool {
        if self.nr == CACHE_EXT_EVICT_BATCH {
            self.overflow = true;
            return false;
        }
        self.cand[self.nr] = id;
        self.nr += 1;
        true
    }
    pub fn nr_proposed(&self) -> usize {
        self.nr
    }
    /// Whether the request is filled (policies stop proposing there).
    pub fn full(&self) -> bool {
        self.nr as u64 >= self.request_nr_folios
    }
    pub fn aborted(&self) -> bool {
        self.overflow
    }
    pub fn candidates(&self) -> &[FolioId] {
        &self.cand[..self.nr]
    }
}

/// The folio table and the files, as the hooks' callers pass them: a
/// policy sees a file folio whose read is in flight locked and !uptodate,
/// as the file's own tracker (the one reclaim and readers use) has it.
#[derive(Clone, Copy)]
pub struct Folios<'a> {
    pub table: &'a FolioTable,
    pub files: &'a [AddressSpace],
}

impl<'a> Folios<'a> {
    pub fn new(table: &'a FolioTable, files: &'a [AddressSpace]) -> Self {
        Folios { table, files }
    }
    /// Folios without files: no read is ever in flight (unit tests).
    pub fn table(table: &'a FolioTable) -> Self {
        Folios { table, files: &[] }
    }
}

impl std::ops::Deref for Folios<'_> {
    type Target = FolioTable;
    fn deref(&self) -> &FolioTable {
        self.table
    }
}

/// What a list_iterate() callback does with the node it was given: the
/// verdicts of cache_ext's iterate kfuncs. `bpf_cache_ext_list_iterate()`
/// moves nothing (Continue, Stop, Evict); `..._iterate_extended()` moves
/// continued and evicted nodes as its options say (MoveHead/MoveTail,
/// EvictHead/EvictTail).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IterAction {
    Continue,
    Stop,
    /// Propose the folio for eviction; it stays where it is, so one the
    /// kernel fails to reclaim is met again first next time.
    Evict,
    /// Propose it and move it to the head / tail of a list (the extended
    /// kfunc's evict_mode).
    EvictHead(ListId),
    EvictTail(ListId),
    /// Move the folio to the head / tail of a list and go on.
    MoveHead(ListId),
    MoveTail(ListId),
}

/// The view a policy callback has: its memcg's lists, the folios' fields,
/// and the hook's context (memcg, current task, simulated time).
pub struct CacheExtCtx<'a> {
    lists: &'a mut ListSpace,
    folios: &'a FolioTable,
    files: &'a [AddressSpace],
    memcg: u16,
    task: &'a TaskInfo,
    now: u64,
    error: &'a mut Option<String>,
}

impl<'a> CacheExtCtx<'a> {
    pub fn memcg(&self) -> u16 {
        self.memcg
    }
    pub fn pid(&self) -> u32 {
        self.task.pid
    }
    pub fn tid(&self) -> u32 {
        self.task.tid
    }
    /// `current->comm`: the process name (scenarios) or fio job name.
    pub fn comm(&self) -> &str {
        &self.task.comm
    }
    /// Simulated time, ns.
    pub fn now(&self) -> u64 {
        self.now
    }
    /// Folio slots (FolioId < this): size per-folio policy arrays with it.
    pub fn nr_folio_slots(&self) -> usize {
        self.folios.capacity()
    }
    /// The folio's fields (flags in `pg`, mapping, index), as the kernel
    /// shows them: a file folio whose read is in flight is locked and not
    /// uptodate (folio_end_read() flips both at completion).
    #[inline]
    pub fn folio(&self, id: FolioId) -> Folio {
        let mut v = *self.folios.get(id);
        if v.is_file_lru() {
            let busy = self
                .files
                .get(v.mapping as usize)
                .is_some_and(|a| a.io_done_at(v.index as u64, self.now).is_some());
            if busy {
                v.flags = (v.flags & !pg::UPTODATE) | pg::LOCKED;
            }
        }
        v
    }
    pub fn folio_test(&self, id: FolioId, flag: u32) -> bool {
        self.folio(id).test(flag)
    }
    /// Reports a policy failure (a Python callback raising, a budget
    /// overrun): the run stops with this one-line error.
    pub fn fail(&mut self, msg: String) {
        if self.error.is_none() {
            *self.error = Some(msg);
        }
    }
    pub fn list_create(&mut self) -> Result<ListId, ListError> {
        self.lists.list_create(self.memcg)
    }
    pub fn list_add(&mut self, list: ListId, id: FolioId) -> Result<(), ListError> {
        self.lists.add(self.memcg, list, id, false)
    }
    pub fn list_add_tail(&mut self, list: ListId, id: FolioId) -> Result<(), ListError> {
        self.lists.add(self.memcg, list, id, true)
    }
    pub fn list_move(&mut self, list: ListId, id: FolioId, tail: bool) -> Result<(), ListError> {
        self.lists.move_to(self.memcg, list, id, tail)
    }
    pub fn list_del(&mut self, id: FolioId) -> Result<(), ListError> {
        self.lists.del(self.memcg, id)
    }
    pub fn list_len(&self, list: ListId) -> Result<u64, ListError> {
        self.lists.len(self.memcg, list)
    }
    pub fn list_of(&self, id: FolioId) -> Option<ListId> {
        self.lists.list_of(id)
    }
    /// Folios in this memcg's valid set (its page cache under the policy).
    pub fn nr_valid(&self) -> u64 {
        self.lists.nr_valid(self.memcg)
    }
    /// Whether `id` is in this memcg's valid folios set.
    pub fn folio_valid(&self, id: FolioId) -> bool {
        self.lists.is_valid(self.memcg, id)
    }

    /// Walks `list` from its head, applying `f`'s verdict to each node, as
    /// cache_ext_list_iterate() does: it stops when the eviction array is
    /// full (CACHE_EXT_EVICT_BATCH proposals, whatever the call's
    /// request: the kfunc does not look at it, and the artifact's
    /// callbacks do not either) or after the node past
    /// CACHE_EXT_ITERATE_MAX (its `iter > max_iter` test comes before the
    /// callback, so 4,097 nodes). Returns the nodes visited.
    pub fn list_iterate(
        &mut self,
        list: ListId,
        ev: &mut EvictionCtx,
        mut f: impl FnMut(FolioId, &Folio) -> IterAction,
    ) -> Result<usize, ListError> {
        let mut id = self.lists.head(self.memcg, list)?;
        let mut visited = 0;
        if ev.nr_proposed() >= CACHE_EXT_EVICT_BATCH {
            return Ok(0);
        }
        while id != crate::mm::folio::NIL && visited <= CACHE_EXT_ITERATE_MAX {
            let next = self.lists.next_of(id);
            visited += 1;
            // (propose it, move it to (list, tail?))
            let (propose, moved) = match f(id, &self.folio(id)) {
                IterAction::Continue => (false, None),
                IterAction::Stop => break,
                IterAction::Evict => (true, None),
                IterAction::EvictHead(to) => (true, Some((to, false))),
                IterAction::EvictTail(to) => (true, Some((to, true))),
                IterAction::MoveHead(to) => (false, Some((to, false))),
                IterAction::MoveTail(to) => (false, Some((to, true))),
            };
            if propose {
                ev.propose(id);
            }
            if let Some((to, tail)) = moved {
                self.lists.move_to(self.memcg, to, id, tail)?;
            }
            if ev.nr_proposed() == CACHE_EXT_EVICT_BATCH {
                break;
            }
            id = next;
        }
        Ok(visited)
    }

    /// Sampling eviction (cache_ext's list_sample): takes
    /// `request_nr_folios * group` folios off `list`'s head, proposes the
    /// lowest `score` of each consecutive group of `group` (ties: the
    /// earlier), and puts every sampled folio back at the tail in order.
    /// A list shorter than the sample, or a sample over
    /// CACHE_EXT_MAX_SAMPLE, proposes nothing (the kfunc's -1). Returns
    /// the folios proposed.
    pub fn list_sample(
        &mut self,
        list: ListId,
        ev: &mut EvictionCtx,
        group: usize,
        mut score: impl FnMut(FolioId, &Folio) -> u64,
    ) -> Result<usize, ListError> {
        let group = group.max(1);
        let want = ev.request_nr_folios.saturating_sub(ev.nr_proposed() as u64) as usize;
        let n = want * group;
        if n > CACHE_EXT_MAX_SAMPLE || (self.lists.len(self.memcg, list)? as usize) < n {
            return Ok(0);
        }
        let mut proposed = 0;
        for _ in 0..want {
            let mut best = (u64::MAX, crate::mm::folio::NIL);
            for _ in 0..group {
                let id = self.lists.head(self.memcg, list)?;
                self.lists.move_to(self.memcg, list, id, true)?;
                let s = score(id, &self.folio(id));
                if best.1 == crate::mm::folio::NIL || s < best.0 {
                    best = (s, id);
                }
            }
            if !ev.propose(best.1) {
                break;
            }
            proposed += 1;
        }
        Ok(proposed)
    }
}

/// `struct cache_ext_ops`: a page-cache policy for one memcg. The default
/// methods do nothing, as an unset struct_ops member.
pub trait CacheExtOps {
    /// The policy's registry name.
    fn name(&self) -> &str;
    /// Called once when attached: create lists here.
    fn init(&mut self, cx: &mut CacheExtCtx) -> Result<(), String>;
    fn folio_added(&mut self, _cx: &mut CacheExtCtx, _id: FolioId) {}
    fn folio_accessed(&mut self, _cx: &mut CacheExtCtx, _id: FolioId) {}
    /// The folio leaves the page cache; it is still on the policy's list
    /// during the call and is taken off after it.
    fn folio_evicted(&mut self, _cx: &mut CacheExtCtx, _id: FolioId) {}
    /// true: the read bypasses the page cache.
    fn admit_folio(&mut self, _cx: &mut CacheExtCtx, _req: &AdmissionCtx) -> bool {
        false
    }
    fn evict_folios(&mut self, cx: &mut CacheExtCtx, ev: &mut EvictionCtx);
}

/// Per-policy-run counters, printed under `cache_ext` in reports.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CacheExtStats {
    pub folio_added: u64,
    pub folio_accessed: u64,
    pub folio_evicted: u64,
    pub admit_calls: u64,
    pub admit_bypassed: u64,
    pub evict_calls: u64,
    pub evict_aborted: u64,
    pub candidates: u64,
    pub candidates_invalid: u64,
    pub candidates_reclaimed: u64,
    /// shrink_lruvec() calls where the policy reclaimed under 80% of the
    /// request and the kernel's own loop ran.
    pub fallthrough: u64,
}

/// The kernel's cache_ext state: the policies per memcg, their lists, the
/// tasks hooks report as `current`.
#[derive(Default)]
pub struct CacheExt {
    pub lists: ListSpace,
    ops: Vec<Option<Box<dyn CacheExtOps>>>,
    tasks: Vec<TaskInfo>,
    current: usize,
    /// Hook and eviction counts per memcg (index: memcg id).
    stats: Vec<CacheExtStats>,
    /// The first policy failure; the driver stops the run on it.
    pub error: Option<String>,
    /// Some memcg has a policy: the hooks test this first, so a run
    /// without cache_ext pays one predictable branch per hook.
    enabled: bool,
}

impl crate::mm::Core {
    /// Attaches `ops` as `memcg`'s policy and runs its init(), the policy
    /// seeing this machine's folios and files.
    pub fn cache_ext_attach(
        &mut self,
        memcg: u16,
        ops: Box<dyn CacheExtOps>,
    ) -> Result<(), String> {
        let n = self.memcgs.len();
        let folios = Folios::new(&self.folios, &self.files);
        self.cache_ext.attach(folios, n, memcg, ops, self.now)
    }

    /// The hooks with this machine's folios and files (the policy's view
    /// of reads in flight comes from the files' trackers).
    #[inline(always)]
    pub fn cache_ext_folio_added(&mut self, id: FolioId) {
        let folios = Folios::new(&self.folios, &self.files);
        self.cache_ext.folio_added(folios, id, self.now);
    }

    #[inline(always)]
    pub fn cache_ext_folio_accessed(&mut self, id: FolioId) {
        let folios = Folios::new(&self.folios, &self.files);
        self.cache_ext.folio_accessed(folios, id, self.now);
    }

    #[inline(always)]
    pub fn cache_ext_folio_evicted(&mut self, id: FolioId) {
        let folios = Folios::new(&self.folios, &self.files);
        self.cache_ext.folio_evicted(folios, id, self.now);
    }

    #[inline(always)]
    pub fn cache_ext_admit_folio(&mut self, memcg: u16, req: AdmissionCtx) -> bool {
        let folios = Folios::new(&self.folios, &self.files);
        self.cache_ext.admit_folio(folios, memcg, req, self.now)
    }

    pub fn cache_ext_evict_folios(
        &mut self,
        memcg: u16,
        request: u64,
        out: &mut [FolioId; CACHE_EXT_EVICT_BATCH],
    ) -> (usize, Option<usize>) {
        let folios = Folios::new(&self.folios, &self.files);
        self.cache_ext
            .evict_folios(folios, memcg, request, self.now, out)
    }
}

impl CacheExt {
    /// Whether `memcg` has a policy (cheap; on every hook).
    #[inline]
    pub fn active(&self, memcg: u16) -> bool {
        self.enabled && matches!(self.ops.get(memcg as usize), Some(Some(_)))
    }

    #[inline]
    pub fn any_active(&self) -> bool {
        self.enabled
    }

    /// `memcg`'s counts (zero where it never had a policy).
    pub fn stats(&self, memcg: u16) -> CacheExtStats {
        self.stats.get(memcg as usize).cloned().unwrap_or_default()
    }

    /// `memcg`'s counts, to add to: a memcg with a policy (sized with
    /// `ops` at attach; the hooks count only for such memcgs).
    pub fn stats_mut(&mut self, memcg: u16) -> &mut CacheExtStats {
        &mut self.stats[memcg as usize]
    }

    pub fn policy_name(&self, memcg: u16) -> Option<&str> {
        self.ops.get(memcg as usize)?.as_deref().map(|o| o.name())
    }

    /// Registers a task (pid, tid, comm) hooks can report as `current`.
    pub fn register_task(&mut self, pid: u32, tid: u32, comm: &str) -> TaskRef {
        if self.tasks.is_empty() {
            self.tasks.push(TaskInfo::default());
        }
        if let Some(i) = self
            .tasks
            .iter()
            .position(|t| t.pid == pid && t.tid == tid && t.comm == comm)
        {
            return TaskRef(i as u32);
        }
        self.tasks.push(TaskInfo {
            pid,
            tid,
            comm: comm.to_string(),
        });
        TaskRef(self.tasks.len() as u32 - 1)
    }

    /// Sets `current` for the hooks that follow.
    #[inline]
    pub fn set_current(&mut self, t: TaskRef) {
        self.current = t.0 as usize;
    }

    /// Attaches `ops` to `memcg` and runs its init().
    pub fn attach(
        &mut self,
        folios: Folios<'_>,
        nr_memcgs: usize,
        memcg: u16,
        mut ops: Box<dyn CacheExtOps>,
        now: u64,
    ) -> Result<(), String> {
        if self.tasks.is_empty() {
            self.tasks.push(TaskInfo::default());
        }
        self.lists
            .ensure(folios.capacity(), nr_memcgs.max(memcg as usize + 1));
        if self.ops.len() <= memcg as usize {
            self.ops.resize_with(memcg as usize + 1, || None);
            self.stats.resize_with(memcg as usize + 1, Default::default);
        }
        if self.ops[memcg as usize].is_some() {
            return Err(format!("memcg {memcg} already has a cache_ext policy"));
        }
        let mut cx = CacheExtCtx {
            lists: &mut self.lists,
            folios: folios.table,
            files: folios.files,
            memcg,
            task: &self.tasks[self.current],
            now,
            error: &mut self.error,
        };
        ops.init(&mut cx)
            .map_err(|e| format!("policy {}: init: {e}", ops.name()))?;
        self.ops[memcg as usize] = Some(ops);
        self.enabled = true;
        Ok(())
    }

    /// Runs `f` on `memcg`'s policy with a context, if it has one.
    #[inline]
    fn call<R>(
        &mut self,
        folios: Folios<'_>,
        memcg: u16,
        now: u64,
        f: impl FnOnce(&mut dyn CacheExtOps, &mut CacheExtCtx) -> R,
    ) -> Option<R> {
        let CacheExt {
            lists,
            ops,
            tasks,
            current,
            error,
            ..
        } = self;
        // A failed policy is called no more: the kernel's LRU goes on alone
        // until the driver stops the run.
        if error.is_some() {
            return None;
        }
        let op = ops.get_mut(memcg as usize)?.as_deref_mut()?;
        let mut cx = CacheExtCtx {
            lists,
            folios: folios.table,
            files: folios.files,
            memcg,
            task: &tasks[*current],
            now,
            error,
        };
        Some(f(op, &mut cx))
    }

    /// __filemap_add_folio(): the folio joins the valid set and the
    /// policy's folio_added() runs.
    #[inline(always)]
    pub fn folio_added(&mut self, folios: Folios<'_>, id: FolioId, now: u64) {
        if self.enabled {
            self.folio_added_slow(folios, id, now);
        }
    }

    #[inline(never)]
    fn folio_added_slow(&mut self, folios: Folios<'_>, id: FolioId, now: u64) {
        let memcg = folios.get(id).memcg;
        if !self.active(memcg) {
            return;
        }
        self.lists.register(memcg, id);
        self.stats_mut(memcg).folio_added += 1;
        self.call(folios, memcg, now, |op, cx| op.folio_added(cx, id));
    }

    /// folio_mark_accessed().
    #[inline(always)]
    pub fn folio_accessed(&mut self, folios: Folios<'_>, id: FolioId, now: u64) {
        if self.enabled {
            self.valid_folio_hook(
                folios,
                id,
                now,
                |s| &mut s.folio_accessed,
                |op, cx| op.folio_accessed(cx, id),
            );
        }
    }

    /// Any removal from the page cache: folio_evicted(), then the folio
    /// leaves the lists and the valid set.
    #[inline(always)]
    pub fn folio_evicted(&mut self, folios: Folios<'_>, id: FolioId, now: u64) {
        if self.enabled
            && self.valid_folio_hook(
                folios,
                id,
                now,
                |s| &mut s.folio_evicted,
                |op, cx| op.folio_evicted(cx, id),
            )
        {
            self.lists.unregister(id);
        }
    }

    /// A hook on a folio already in the page cache: the policy hears only
    /// of folios in its valid set, and each call is counted in `count`.
    /// Returns whether the folio is valid.
    #[inline(never)]
    fn valid_folio_hook(
        &mut self,
        folios: Folios<'_>,
        id: FolioId,
        now: u64,
        count: fn(&mut CacheExtStats) -> &mut u64,
        hook: impl FnOnce(&mut dyn CacheExtOps, &mut CacheExtCtx),
    ) -> bool {
        let memcg = folios.get(id).memcg;
        if !self.lists.is_valid(memcg, id) {
            return false;
        }
        *count(self.stats_mut(memcg)) += 1;
        self.call(folios, memcg, now, hook);
        true
    }

    /// admit_folio() on a read miss: true means bypass the page cache.
    #[inline(always)]
    pub fn admit_folio(
        &mut self,
        folios: Folios<'_>,
        memcg: u16,
        req: AdmissionCtx,
        now: u64,
    ) -> bool {
        self.enabled && self.admit_folio_slow(folios, memcg, req, now)
    }

    #[inline(never)]
    fn admit_folio_slow(
        &mut self,
        folios: Folios<'_>,
        memcg: u16,
        req: AdmissionCtx,
        now: u64,
    ) -> bool {
        if !self.active(memcg) {
            return false;
        }
        self.stats_mut(memcg).admit_calls += 1;
        let bypass = self
            .call(folios, memcg, now, |op, cx| op.admit_folio(cx, &req))
            .unwrap_or(false);
        self.stats_mut(memcg).admit_bypassed += bypass as u64;
        bypass
    }

    /// One evict_folios() call for up to `request` folios. Returns the
    /// candidates that are valid and isolatable (on the kernel LRU, not
    /// isolated, not unevictable), written into `out`; an aborted call
    /// (more than CACHE_EXT_EVICT_BATCH proposed) returns none. The second
    /// value is the number proposed, None for an aborted call or a policy
    /// that failed (either ends the caller's loop).
    pub fn evict_folios(
        &mut self,
        folios: Folios<'_>,
        memcg: u16,
        request: u64,
        now: u64,
        out: &mut [FolioId; CACHE_EXT_EVICT_BATCH],
    ) -> (usize, Option<usize>) {
        if !self.active(memcg) {
            return (0, None);
        }
        let mut ev = EvictionCtx::new(request);
        self.stats_mut(memcg).evict_calls += 1;
        if self
            .call(folios, memcg, now, |op, cx| op.evict_folios(cx, &mut ev))
            .is_none()
        {
            return (0, None);
        }
        if ev.aborted() {
            self.stats_mut(memcg).evict_aborted += 1;
            return (0, None);
        }
        let proposed = ev.nr_proposed();
        self.stats_mut(memcg).candidates += proposed as u64;
        let mut n = 0;
        for &id in ev.candidates() {
            let ok = (id as usize) < folios.f.len()
                && self.lists.is_valid(memcg, id)
                && {
                    let f = folios.get(id);
                    f.test(pg::LRU)
                        && !f.test(pg::ISOLATED)
                        && !f.test(pg::UNEVICTABLE)
                        && f.is_file_lru()
                }
                && !out[..n].contains(&id);
            if ok {
                out[n] = id;
                n += 1;
            } else {
                self.stats_mut(memcg).candidates_invalid += 1;
            }
        }
        (n, Some(proposed))
    }

    pub fn check(&self) -> Result<(), String> {
        self.lists.check()
    }
}
