//! Progress reports for long runs: the model calls these from cold paths
//! only (Core::tick, once per simulated second, and the start of a
//! reproduce cell); a front end (the CLI's progress bar) installs the sink.
//! With none installed each call is one atomic load.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// What a front end does with progress.
pub trait ProgressSink: Send + Sync {
    /// Simulated time `now_ns` reached; `pages` of file data read and
    /// written so far (pgpgin + pgpgout, in pages) by this run.
    fn tick(&self, now_ns: u64, pages: u64);
    /// A reproduce cell starts.
    fn cell(&self, label: &str);
}

static SINK: OnceLock<Box<dyn ProgressSink>> = OnceLock::new();
static ON: AtomicBool = AtomicBool::new(false);

/// Installs the process's sink (the first call wins).
pub fn install(sink: Box<dyn ProgressSink>) {
    if SINK.set(sink).is_ok() {
        ON.store(true, Ordering::Release);
    }
}

#[inline]
pub fn tick(now_ns: u64, pages: u64) {
    if ON.load(Ordering::Relaxed) {
        if let Some(s) = SINK.get() {
            s.tick(now_ns, pages);
        }
    }
}

pub fn cell(label: &str) {
    if ON.load(Ordering::Relaxed) {
        if let Some(s) = SINK.get() {
            s.cell(label);
        }
    }
}
