//! cache_ext policies written in Python: a class whose methods are
//! `struct cache_ext_ops`'s members (`init`, `folio_added`,
//! `folio_accessed`, `folio_evicted`, `admit_folio`, `evict_folios`), run
//! by the model as its built-in policies are ([`CacheExtOps`]). Each call
//! gets a [`PolicyContext`] with cache_ext's kfuncs (the lists, the
//! folio's fields, `current`), valid during that call only.
//!
//! A callback that raises, or runs past its time budget, stops the run
//! with one line naming the policy, the callback and the error. The budget
//! is enforced by a watchdog thread that raises TimeoutError inside the
//! callback (PyThreadState_SetAsyncExc), so an endless loop ends too.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use foliosim::mm::cache_ext::{
    AdmissionCtx, CacheExtCtx, CacheExtOps, EvictionCtx, IterAction, ListId,
};
use foliosim::mm::folio::{pg, FolioId};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// The flag names `folio_test` takes (the kernel's PG_ names, lower case).
const FLAGS: &[(&str, u32)] = &[
    ("locked", pg::LOCKED),
    ("referenced", pg::REFERENCED),
    ("uptodate", pg::UPTODATE),
    ("dirty", pg::DIRTY),
    ("lru", pg::LRU),
    ("active", pg::ACTIVE),
    ("workingset", pg::WORKINGSET),
    ("readahead", pg::READAHEAD),
    ("reclaim", pg::RECLAIM),
    ("writeback", pg::WRITEBACK),
    ("swapbacked", pg::SWAPBACKED),
    ("unevictable", pg::UNEVICTABLE),
    ("mapped", pg::MAPPED),
];

/// The kfuncs a callback may use, over the model's state for the length of
/// the call. The pointers are set before the call and cleared after it;
/// every method checks them, so a context kept past its call raises.
#[pyclass(unsendable, name = "PolicyContext", module = "foliosim._native")]
pub struct PolicyContext {
    cx: *mut CacheExtCtx<'static>,
    ev: *mut EvictionCtx,
}

impl PolicyContext {
    fn cx(&mut self) -> PyResult<&mut CacheExtCtx<'static>> {
        // SAFETY: set only for the duration of the callback, during which
        // the CacheExtCtx it points to is alive and not otherwise borrowed
        // (the adapter holds it exclusively while Python runs).
        unsafe { self.cx.as_mut() }.ok_or_else(|| {
            PyRuntimeError::new_err("the policy context was used outside its callback")
        })
    }
    fn ev(&mut self) -> PyResult<&mut EvictionCtx> {
        // SAFETY: as for `cx`; set only during evict_folios().
        unsafe { self.ev.as_mut() }
            .ok_or_else(|| PyRuntimeError::new_err("no eviction request: only in evict_folios()"))
    }
}

fn list_err(e: foliosim::mm::cache_ext::ListError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

fn list_id(l: u32) -> PyResult<ListId> {
    u8::try_from(l)
        .map(ListId)
        .map_err(|_| PyValueError::new_err(format!("no such list {l}")))
}

/// A list_iterate() callback's return value as an [`IterAction`]:
/// None/CONTINUE, STOP, EVICT, or ("head"|"tail"|"evict_head"|"evict_tail", list).
fn iter_action(v: &Bound<'_, PyAny>) -> PyResult<IterAction> {
    if v.is_none() {
        return Ok(IterAction::Continue);
    }
    if let Ok(s) = v.extract::<String>() {
        return match s.as_str() {
            "continue" => Ok(IterAction::Continue),
            "stop" => Ok(IterAction::Stop),
            "evict" => Ok(IterAction::Evict),
            _ => Err(PyValueError::new_err(format!(
                "list_iterate: unknown verdict {s:?} (continue, stop, evict, (\"head\", list), (\"tail\", list), (\"evict_head\", list), (\"evict_tail\", list))"
            ))),
        };
    }
    if let Ok((w, l)) = v.extract::<(String, u32)>() {
        let l = list_id(l)?;
        return match w.as_str() {
            "head" => Ok(IterAction::MoveHead(l)),
            "tail" => Ok(IterAction::MoveTail(l)),
            "evict_head" => Ok(IterAction::EvictHead(l)),
            "evict_tail" => Ok(IterAction::EvictTail(l)),
            _ => Err(PyValueError::new_err(format!(
                "list_iterate: unknown move {w:?} (head, tail, evict_head or evict_tail)"
            ))),
        };
    }
    Err(PyValueError::new_err(
        "list_iterate: a verdict is None, \"continue\", \"stop\", \"evict\", or (\"head\"|\"tail\"|\"evict_head\"|\"evict_tail\", list)",
    ))
}

#[pymethods]
impl PolicyContext {
    /// The memcg id the policy is attached to.
    #[getter]
    fn memcg(&mut self) -> PyResult<u16> {
        Ok(self.cx()?.memcg())
    }
    /// `current`'s pid, tid and comm.
    #[getter]
    fn pid(&mut self) -> PyResult<u32> {
        Ok(self.cx()?.pid())
    }
    #[getter]
    fn tid(&mut self) -> PyResult<u32> {
        Ok(self.cx()?.tid())
    }
    #[getter]
    fn comm(&mut self) -> PyResult<String> {
        Ok(self.cx()?.comm().to_string())
    }
    /// Simulated time, ns.
    #[getter]
    fn now(&mut self) -> PyResult<u64> {
        Ok(self.cx()?.now())
    }
    fn list_create(&mut self) -> PyResult<u32> {
        Ok(self.cx()?.list_create().map_err(list_err)?.0 as u32)
    }
    fn list_add(&mut self, list: u32, folio: FolioId) -> PyResult<()> {
        let l = list_id(list)?;
        self.cx()?.list_add(l, folio).map_err(list_err)
    }
    fn list_add_tail(&mut self, list: u32, folio: FolioId) -> PyResult<()> {
        let l = list_id(list)?;
        self.cx()?.list_add_tail(l, folio).map_err(list_err)
    }
    #[pyo3(signature = (list, folio, tail = false))]
    fn list_move(&mut self, list: u32, folio: FolioId, tail: bool) -> PyResult<()> {
        let l = list_id(list)?;
        self.cx()?.list_move(l, folio, tail).map_err(list_err)
    }
    fn list_del(&mut self, folio: FolioId) -> PyResult<()> {
        self.cx()?.list_del(folio).map_err(list_err)
    }
    fn list_len(&mut self, list: u32) -> PyResult<u64> {
        let l = list_id(list)?;
        self.cx()?.list_len(l).map_err(list_err)
    }
    /// The list the folio is on, or None.
    fn list_of(&mut self, folio: FolioId) -> PyResult<Option<u32>> {
        Ok(self.cx()?.list_of(folio).map(|l| l.0 as u32))
    }
    fn nr_valid(&mut self) -> PyResult<u64> {
        Ok(self.cx()?.nr_valid())
    }
    fn folio_valid(&mut self, folio: FolioId) -> PyResult<bool> {
        Ok(self.cx()?.folio_valid(folio))
    }
    /// A folio flag by its kernel name ("uptodate", "locked", "lru", ...),
    /// as the kernel shows it (locked and not uptodate while read).
    fn folio_test(&mut self, folio: FolioId, flag: &str) -> PyResult<bool> {
        let bit = FLAGS
            .iter()
            .find(|(n, _)| *n == flag)
            .map(|(_, b)| *b)
            .ok_or_else(|| {
                let names: Vec<&str> = FLAGS.iter().map(|(n, _)| *n).collect();
                PyValueError::new_err(format!(
                    "unknown folio flag {flag:?} ({})",
                    names.join(", ")
                ))
            })?;
        let cx = self.cx()?;
        if (folio as usize) >= cx.nr_folio_slots() {
            return Err(PyValueError::new_err(format!("no folio {folio}")));
        }
        Ok(cx.folio_test(folio, bit))
    }
    /// (mapping, index): the file and the page offset in it.
    fn folio_key(&mut self, folio: FolioId) -> PyResult<(u32, u32)> {
        let cx = self.cx()?;
        if (folio as usize) >= cx.nr_folio_slots() {
            return Err(PyValueError::new_err(format!("no folio {folio}")));
        }
        let f = cx.folio(folio);
        Ok((f.mapping, f.index))
    }
    /// evict_folios(): folios reclaim asks for in this call.
    #[getter]
    fn request_nr_folios(&mut self) -> PyResult<u64> {
        Ok(self.ev()?.request_nr_folios)
    }
    /// evict_folios(): proposes a candidate; False once 32 were proposed
    /// (a 33rd aborts the call, as the kernel's eviction_ctx does).
    fn propose(&mut self, folio: FolioId) -> PyResult<bool> {
        Ok(self.ev()?.propose(folio))
    }
    fn nr_proposed(&mut self) -> PyResult<usize> {
        Ok(self.ev()?.nr_proposed())
    }
    /// Walks `list` from its head as cache_ext's iterate kfuncs do (until
    /// 32 are proposed, whatever the request, or 4,097 nodes), calling
    /// `fn(folio)`; its verdict: None or "continue", "stop", "evict"
    /// (propose it, left in place), ("head", list) or ("tail", list) (move
    /// it), ("evict_head", list) or ("evict_tail", list) (propose and
    /// move it). evict_folios() only. Returns the nodes visited.
    fn list_iterate(&mut self, py: Python<'_>, list: u32, callback: Py<PyAny>) -> PyResult<usize> {
        let l = list_id(list)?;
        let ev = self.ev()? as *mut EvictionCtx;
        let cx = self.cx()?;
        let mut failed: Option<PyErr> = None;
        // SAFETY: `ev` is the evict_folios() request, alive for the call and
        // distinct from the CacheExtCtx.
        let visited = cx
            .list_iterate(l, unsafe { &mut *ev }, |id, _| {
                match callback
                    .call1(py, (id,))
                    .and_then(|v| iter_action(v.bind(py)))
                {
                    Ok(a) => a,
                    Err(e) => {
                        failed = Some(e);
                        IterAction::Stop
                    }
                }
            })
            .map_err(list_err)?;
        match failed {
            Some(e) => Err(e),
            None => Ok(visited),
        }
    }
    /// cache_ext's list_sample: takes `request * group` folios off the
    /// list's head and proposes the lowest `score(folio)` of each group.
    /// evict_folios() only. Returns the folios proposed.
    fn list_sample(
        &mut self,
        py: Python<'_>,
        list: u32,
        group: usize,
        score: Py<PyAny>,
    ) -> PyResult<usize> {
        let l = list_id(list)?;
        let ev = self.ev()? as *mut EvictionCtx;
        let cx = self.cx()?;
        let mut failed: Option<PyErr> = None;
        // SAFETY: as in list_iterate.
        let n = cx
            .list_sample(l, unsafe { &mut *ev }, group, |id, _| {
                if failed.is_some() {
                    return u64::MAX;
                }
                match score.call1(py, (id,)).and_then(|v| v.extract::<u64>(py)) {
                    Ok(s) => s,
                    Err(e) => {
                        failed = Some(e);
                        u64::MAX
                    }
                }
            })
            .map_err(list_err)?;
        match failed {
            Some(e) => Err(e),
            None => Ok(n),
        }
    }
}

/// The watchdog's shared state: which callback is running, since when.
#[derive(Default)]
struct Armed {
    /// (generation, thread ident, deadline) of the running callback.
    running: Option<(u64, std::os::raw::c_long, Instant)>,
    generation: u64,
    fired: bool,
    shutdown: bool,
}

struct Watchdog {
    state: Mutex<Armed>,
    wake: Condvar,
}

impl Watchdog {
    fn start() -> Arc<Watchdog> {
        let w = Arc::new(Watchdog {
            state: Mutex::new(Armed::default()),
            wake: Condvar::new(),
        });
        let me = w.clone();
        std::thread::spawn(move || me.watch());
        w
    }

    fn watch(&self) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if st.shutdown {
                return;
            }
            let Some((gen, _, deadline)) = st.running else {
                st = self.wake.wait(st).unwrap_or_else(|e| e.into_inner());
                continue;
            };
            let now = Instant::now();
            if now < deadline {
                st = self
                    .wake
                    .wait_timeout(st, deadline - now)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
                continue;
            }
            // Past the deadline: interrupt the callback with the GIL held,
            // so that it cannot finish between the check and the raise.
            drop(st);
            Python::attach(|_py| {
                let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
                if let Some((g, tid, _)) = s.running {
                    if g == gen && !s.fired {
                        s.fired = true;
                        // SAFETY: the GIL is held; the exception type is a
                        // borrowed builtin, which SetAsyncExc increfs.
                        unsafe {
                            pyo3::ffi::PyThreadState_SetAsyncExc(
                                tid,
                                pyo3::ffi::PyExc_TimeoutError,
                            );
                        }
                    }
                }
            });
            st = self.state.lock().unwrap_or_else(|e| e.into_inner());
            // Wait for the callback to end (or another to start).
            while st.running.map(|r| r.0) == Some(gen) && !st.shutdown {
                st = self.wake.wait(st).unwrap_or_else(|e| e.into_inner());
            }
        }
    }

    fn arm(&self, tid: std::os::raw::c_long, budget: Duration) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.generation += 1;
        st.running = Some((st.generation, tid, Instant::now() + budget));
        st.fired = false;
        self.wake.notify_all();
    }

    /// Ends the callback; true if the watchdog interrupted it. Called with
    /// the GIL held: an interrupt raised but not yet delivered is cleared.
    fn disarm(&self, tid: std::os::raw::c_long) -> bool {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.running = None;
        let fired = st.fired;
        if fired {
            // SAFETY: the GIL is held by the caller; NULL clears.
            unsafe { pyo3::ffi::PyThreadState_SetAsyncExc(tid, std::ptr::null_mut()) };
        }
        self.wake.notify_all();
        fired
    }
}

/// The watchdog thread holds an Arc too: this handle stops it on drop.
struct WatchdogHandle(Arc<Watchdog>);

impl Drop for WatchdogHandle {
    fn drop(&mut self) {
        let mut st = self.0.state.lock().unwrap_or_else(|e| e.into_inner());
        st.shutdown = true;
        self.0.wake.notify_all();
    }
}

/// The hooks a policy object may define (indices into `PyPolicy::has`).
const HOOKS: [&str; 6] = [
    "init",
    "folio_added",
    "folio_accessed",
    "folio_evicted",
    "admit_folio",
    "evict_folios",
];
const INIT: usize = 0;
const FOLIO_ADDED: usize = 1;
const FOLIO_ACCESSED: usize = 2;
const FOLIO_EVICTED: usize = 3;
const ADMIT_FOLIO: usize = 4;
const EVICT_FOLIOS: usize = 5;

/// One Python policy instance attached to a memcg.
pub struct PyPolicy {
    obj: Py<PyAny>,
    spec: String,
    budget: Duration,
    watchdog: WatchdogHandle,
    /// Which of [`HOOKS`] the object defines, looked up once: an undefined
    /// one costs no GIL round trip per page.
    has: [bool; 6],
}

/// One line from a Python exception: `Type: message`, newlines folded.
fn one_line(py: Python<'_>, e: &PyErr) -> String {
    let ty = e
        .get_type(py)
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "Exception".into());
    let msg = e.value(py).to_string();
    let msg = msg.split_whitespace().collect::<Vec<_>>().join(" ");
    if msg.is_empty() {
        ty
    } else {
        format!("{ty}: {msg}")
    }
}

impl PyPolicy {
    pub fn new(py: Python<'_>, obj: Py<PyAny>, spec: String, budget: Duration) -> PyPolicy {
        let b = obj.bind(py);
        let has = HOOKS.map(|h| b.hasattr(h).unwrap_or(true));
        PyPolicy {
            obj,
            spec,
            budget,
            watchdog: WatchdogHandle(Watchdog::start()),
            has,
        }
    }

    /// Calls hook `hook` as `method(ctx, *args)` if the object has it (an
    /// unset member does nothing, as in struct_ops). Errors are one line.
    fn invoke<R>(
        &self,
        cx: &mut CacheExtCtx,
        ev: Option<&mut EvictionCtx>,
        hook: usize,
        args: &[u64],
        ret: impl FnOnce(&Bound<'_, PyAny>) -> PyResult<R>,
    ) -> Result<Option<R>, String> {
        if !self.has[hook] {
            return Ok(None);
        }
        let method = HOOKS[hook];
        Python::attach(|py| {
            let obj = self.obj.bind(py);
            let ctx = Py::new(
                py,
                PolicyContext {
                    // SAFETY: erased lifetimes; cleared below before `cx`
                    // and `ev` go out of scope.
                    cx: unsafe {
                        std::mem::transmute::<*mut CacheExtCtx<'_>, *mut CacheExtCtx<'static>>(
                            cx as *mut CacheExtCtx<'_>,
                        )
                    },
                    ev: ev.map_or(std::ptr::null_mut(), |e| e as *mut EvictionCtx),
                },
            )
            .map_err(|e| self.fail(py, method, &e))?;
            let mut all: Vec<Bound<'_, PyAny>> = vec![ctx.bind(py).clone().into_any()];
            for &a in args {
                let Ok(o) = a.into_pyobject(py);
                all.push(o.into_any());
            }
            // SAFETY: the GIL is held; the call has no other precondition.
            let tid = unsafe { pyo3::ffi::PyThread_get_thread_ident() } as std::os::raw::c_long;
            let t0 = Instant::now();
            self.watchdog.0.arm(tid, self.budget);
            let r = PyTuple::new(py, all).and_then(|a| obj.call_method1(method, a));
            let fired = self.watchdog.0.disarm(tid);
            let took = t0.elapsed();
            {
                let mut c = ctx.borrow_mut(py);
                c.cx = std::ptr::null_mut();
                c.ev = std::ptr::null_mut();
            }
            let over = fired || took > self.budget;
            match r {
                Ok(v) if !over => ret(&v).map(Some).map_err(|e| self.fail(py, method, &e)),
                Ok(_) => Err(self.fail_budget(method)),
                Err(_) if fired => Err(self.fail_budget(method)),
                Err(e) => Err(self.fail(py, method, &e)),
            }
        })
    }

    fn fail(&self, py: Python<'_>, method: &str, e: &PyErr) -> String {
        format!("policy {}: {method}: {}", self.spec, one_line(py, e))
    }

    /// (Without the time it ran: the message is the same on every run.)
    fn fail_budget(&self, method: &str) -> String {
        format!(
            "policy {}: {method}: over its budget of {} ms per callback",
            self.spec,
            self.budget.as_millis(),
        )
    }
}

/// Builds the run-time registry entry for `py:NAME`: each run calls
/// `factory()` for a fresh policy object.
pub fn external(
    name: &str,
    factory: Py<PyAny>,
    budget: Duration,
) -> foliosim::policy::ExternalPolicy {
    let spec = format!("{}{name}", foliosim::policy::EXTERNAL_PREFIX);
    Arc::new(move || -> Result<Box<dyn CacheExtOps>, String> {
        Python::attach(|py| {
            let obj = factory
                .call0(py)
                .map_err(|e| format!("policy {spec}: creating it: {}", one_line(py, &e)))?;
            Ok(Box::new(PyPolicy::new(py, obj, spec.clone(), budget)) as Box<dyn CacheExtOps>)
        })
    })
}

impl CacheExtOps for PyPolicy {
    fn name(&self) -> &str {
        &self.spec
    }

    fn init(&mut self, cx: &mut CacheExtCtx) -> Result<(), String> {
        // attach() adds "policy NAME: init: " itself.
        let lead = format!("policy {}: init: ", self.spec);
        self.invoke(cx, None, INIT, &[], |_| Ok(()))
            .map(|_| ())
            .map_err(|e| e.strip_prefix(&lead).map(str::to_string).unwrap_or(e))
    }

    fn folio_added(&mut self, cx: &mut CacheExtCtx, id: FolioId) {
        self.hook(cx, FOLIO_ADDED, id);
    }

    fn folio_accessed(&mut self, cx: &mut CacheExtCtx, id: FolioId) {
        self.hook(cx, FOLIO_ACCESSED, id);
    }

    fn folio_evicted(&mut self, cx: &mut CacheExtCtx, id: FolioId) {
        self.hook(cx, FOLIO_EVICTED, id);
    }

    fn admit_folio(&mut self, cx: &mut CacheExtCtx, req: &AdmissionCtx) -> bool {
        let args = [req.mapping as u64, req.index, req.nr_pages];
        match self.invoke(cx, None, ADMIT_FOLIO, &args, |v| v.is_truthy()) {
            Ok(b) => b.unwrap_or(false),
            Err(e) => {
                cx.fail(e);
                false
            }
        }
    }

    fn evict_folios(&mut self, cx: &mut CacheExtCtx, ev: &mut EvictionCtx) {
        if let Err(e) = self.invoke(cx, Some(ev), EVICT_FOLIOS, &[], |_| Ok(())) {
            cx.fail(e);
        }
    }
}

impl PyPolicy {
    /// A hook called with one folio; a failure stops the run.
    fn hook(&mut self, cx: &mut CacheExtCtx, hook: usize, id: FolioId) {
        if let Err(e) = self.invoke(cx, None, hook, &[id as u64], |_| Ok(())) {
            cx.fail(e);
        }
    }
}
