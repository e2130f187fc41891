//! `--trace FILE` and its filters, shared by the workload commands; and
//! the progress bar (`progress`) on stderr when it is a terminal.

use std::path::PathBuf;

use foliosim::trace::{TraceFilter, TraceFormat, TraceSpec};

#[derive(clap::Args, Clone, Debug, Default)]
pub struct TraceArgs {
    /// Write the kernel's mm tracepoints (filemap, pagemap, vmscan,
    /// readahead) to FILE in ftrace's text format, on the simulated clock
    /// (docs/tracing.md); a FILE ending in .dat gets trace-cmd's trace.dat.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// The trace file's format: text (ftrace's `trace` file) or dat
    /// (trace-cmd's trace.dat, for `trace-cmd report` and KernelShark);
    /// by default dat for a FILE ending in .dat, else text.
    #[arg(long, value_name = "text|dat")]
    pub trace_format: Option<String>,
    /// Only these events: names (mm_lru_activate) or systems (vmscan),
    /// comma separated.
    #[arg(long, value_name = "EVENTS")]
    pub trace_events: Option<String>,
    /// Only events about this file (its name in the job or scenario).
    #[arg(long, value_name = "PATH")]
    pub trace_file: Option<String>,
    /// Only events about this memory cgroup and those below it (/foliosim
    /// for a fio job's --memcg-limit group).
    #[arg(long, value_name = "CGROUP")]
    pub trace_cgroup: Option<String>,
    /// Only events in this window of simulated seconds.
    #[arg(long, value_name = "START,END")]
    pub trace_window: Option<String>,
}

impl TraceArgs {
    /// Checks the options and creates the trace file.
    pub fn spec(&self) -> Result<Option<TraceSpec>, String> {
        let Some(path) = &self.trace else {
            for (set, name) in [
                (self.trace_events.is_some(), "--trace-events"),
                (self.trace_file.is_some(), "--trace-file"),
                (self.trace_cgroup.is_some(), "--trace-cgroup"),
                (self.trace_window.is_some(), "--trace-window"),
                (self.trace_format.is_some(), "--trace-format"),
            ] {
                if set {
                    return Err(format!("{name}: needs --trace FILE"));
                }
            }
            return Ok(None);
        };
        let mut filter = TraceFilter::default();
        if let Some(e) = &self.trace_events {
            filter.events =
                TraceFilter::parse_events(e).map_err(|m| format!("--trace-events: {m}"))?;
        }
        if let Some(w) = &self.trace_window {
            filter.window =
                Some(TraceFilter::parse_window(w).map_err(|m| format!("--trace-window: {m}"))?);
        }
        if let Some(c) = &self.trace_cgroup {
            if !c.starts_with('/') {
                return Err(format!(
                    "--trace-cgroup: '{c}' is not a cgroup path (it starts with /)"
                ));
            }
            let c = if c.len() > 1 {
                c.trim_end_matches('/')
            } else {
                c
            };
            filter.cgroup = Some(c.to_string());
        }
        if let Some(f) = &self.trace_file {
            if f.is_empty() {
                return Err("--trace-file: empty file name".into());
            }
            filter.file = Some(f.clone());
        }
        let format = match self.trace_format.as_deref() {
            Some("text") => TraceFormat::Text,
            Some("dat") => TraceFormat::Dat,
            Some(f) => return Err(format!("--trace-format: '{f}' is not text or dat")),
            None if path.extension().is_some_and(|e| e == "dat") => TraceFormat::Dat,
            None => TraceFormat::Text,
        };
        let file =
            std::fs::File::create(path).map_err(|e| format!("--trace: {}: {e}", path.display()))?;
        Ok(Some(TraceSpec::with_format(Box::new(file), filter, format)))
    }
}

/// Checks the options, creates the trace file and arms it for the next
/// model run on this thread.
pub fn arm(a: &TraceArgs) -> Result<Option<TraceSpec>, String> {
    let spec = a.spec()?;
    if let Some(s) = &spec {
        foliosim::trace::arm(s.clone());
    }
    Ok(spec)
}

/// After a traced run: the trace file's write error, if any.
pub fn finish(spec: &Option<TraceSpec>, path: Option<&std::path::Path>) -> Result<(), String> {
    if let Some(s) = spec {
        s.outcome().map_err(|e| {
            format!(
                "--trace: {}: {e}",
                path.map(|p| p.display().to_string()).unwrap_or_default()
            )
        })?;
    }
    Ok(())
}

/// The progress bar: installed only when stderr is a terminal; it shows
/// itself once a run has taken 2 s of wall time
/// (FOLIOSIM_PROGRESS_DELAY_MS changes that, for tests).
pub mod progress {
    use std::io::IsTerminal;
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

    static BAR: std::sync::OnceLock<ProgressBar> = std::sync::OnceLock::new();
    /// Set by a sweep: its points run side by side, and one run's bar
    /// would show whichever point ticked last.
    static OFF: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

    /// No per-run bar from now on in this process (sweeps).
    pub fn disable() {
        OFF.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Clears the bar when the run is over (before the results print).
    pub fn done() {
        if let Some(b) = BAR.get() {
            b.finish_and_clear();
        }
    }

    struct Bar {
        bar: ProgressBar,
        start: Instant,
        shown: Mutex<bool>,
        delay: Duration,
        /// Simulated seconds the run lasts, when known.
        total_s: Option<u64>,
        cell: Mutex<String>,
    }

    impl Bar {
        fn show_if_long(&self) {
            let mut shown = self.shown.lock().unwrap();
            if !*shown && self.start.elapsed() >= self.delay {
                *shown = true;
                self.bar.set_draw_target(ProgressDrawTarget::stderr());
            }
        }
    }

    impl foliosim::progress::ProgressSink for Bar {
        fn tick(&self, now_ns: u64, pages: u64) {
            let s = now_ns / 1_000_000_000;
            if self.total_s.is_some() {
                self.bar.set_position(s.min(self.bar.length().unwrap_or(s)));
            }
            let cell = self.cell.lock().unwrap();
            let sep = if cell.is_empty() { "" } else { ": " };
            // With a known end the bar already shows the simulated time.
            let msg = match self.total_s {
                Some(_) => format!("{cell}{sep}{pages} pages"),
                None => format!("{cell}{sep}simulated {s} s, {pages} pages"),
            };
            self.bar.set_message(msg);
            drop(cell);
            self.show_if_long();
        }

        fn cell(&self, label: &str) {
            *self.cell.lock().unwrap() = label.to_string();
            self.bar.set_message(format!("cell {label}"));
            self.show_if_long();
        }
    }

    /// Installs the bar for a run lasting `total_s` simulated seconds
    /// when known; nothing when stderr is not a terminal.
    pub fn install(total_s: Option<u64>) {
        if OFF.load(std::sync::atomic::Ordering::Relaxed) || !std::io::stderr().is_terminal() {
            return;
        }
        let bar = match total_s {
            Some(n) => {
                let b = ProgressBar::with_draw_target(Some(n), ProgressDrawTarget::hidden());
                b.set_style(
                    ProgressStyle::with_template(
                        "{elapsed_precise} [{bar:30}] {pos}/{len} s simulated, ETA {eta} {msg}",
                    )
                    .expect("valid template")
                    .progress_chars("=> "),
                );
                b
            }
            None => {
                let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
                b.set_style(
                    ProgressStyle::with_template("{elapsed_precise} {spinner} {msg}")
                        .expect("valid template"),
                );
                b
            }
        };
        let _ = BAR.set(bar.clone());
        foliosim::progress::install(Box::new(Bar {
            bar,
            start: Instant::now(),
            shown: Mutex::new(false),
            delay: Duration::from_millis(
                std::env::var("FOLIOSIM_PROGRESS_DELAY_MS")
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(2000),
            ),
            total_s,
            cell: Mutex::new(String::new()),
        }));
    }
}
