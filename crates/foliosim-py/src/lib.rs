//! The `foliosim._native` extension module: thin wrappers over the
//! command line's library (`foliosim_cli`), so that a Python run parses
//! its options and builds its machine exactly as `foliosim` does. The
//! Python side (python/foliosim) turns the JSON into dicts and frames.
//! Every call releases the GIL while the model runs.

mod policy;

use std::path::PathBuf;
use std::time::Duration;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Runs one workload command line (`["fio", "job.fio", "--memcg-limit=64M"]`)
/// and returns foliosim's JSON object, as `--json` prints it. Bad input
/// raises ValueError with the command line's one-line message.
#[pyfunction]
#[pyo3(signature = (argv, fio_overrides = Vec::new()))]
fn run_json(
    py: Python<'_>,
    argv: Vec<String>,
    fio_overrides: Vec<(String, String)>,
) -> PyResult<String> {
    py.detach(|| foliosim_cli::run_argv(&argv, &fio_overrides).map(|r| r.to_json()))
        .map_err(PyValueError::new_err)
}

/// `foliosim sweep`: returns (csv path, parquet path, rows run now, rows
/// taken from the journal).
#[pyfunction]
#[pyo3(signature = (grid, out = None, jobs = None, resume = false, ray = None, python = String::from("python3")))]
fn sweep(
    py: Python<'_>,
    grid: PathBuf,
    out: Option<PathBuf>,
    jobs: Option<usize>,
    resume: bool,
    ray: Option<String>,
    python: String,
) -> PyResult<(String, String, usize, usize)> {
    let a = foliosim_cli::sweep::SweepArgs {
        grid,
        out,
        jobs,
        resume,
        ray,
        python,
    };
    let o = py
        .detach(|| foliosim_cli::sweep::sweep(&a))
        .map_err(PyValueError::new_err)?;
    Ok((
        o.csv.display().to_string(),
        o.parquet.display().to_string(),
        o.ran,
        o.resumed,
    ))
}

/// One (point, repeat) of a grid, run here: (column names, values), the
/// row the sweep journals. What a Ray task runs.
#[pyfunction]
fn grid_row(
    py: Python<'_>,
    grid: PathBuf,
    point: usize,
    repeat: u64,
) -> PyResult<(Vec<String>, Vec<String>)> {
    py.detach(|| {
        let g = foliosim_cli::sweep::Grid::load(&grid)?;
        g.run_row(point, repeat)
    })
    .map_err(PyValueError::new_err)
}

/// (points, repeats) of a grid, after checking every point.
#[pyfunction]
fn grid_size(py: Python<'_>, grid: PathBuf) -> PyResult<(usize, u64)> {
    py.detach(|| {
        let g = foliosim_cli::sweep::Grid::load(&grid)?;
        g.check()?;
        Ok::<_, String>((g.len(), g.repeats))
    })
    .map_err(PyValueError::new_err)
}

/// The patch registry (`foliosim variants --format json`) as JSON: one
/// object per patch or behaviour `variants=` takes.
#[pyfunction]
fn variants_json() -> String {
    foliosim::mm::patches::table_json().to_string()
}

/// A set as compare's `--set` takes it ("mglru+p1,p2"): (the LRU if one
/// is named, the variant names), split as the command line splits it.
#[pyfunction]
fn split_set(set: &str) -> (Option<String>, Vec<String>) {
    let (lru, v) = foliosim::mm::patches::split_set(set);
    (
        lru.map(String::from),
        v.into_iter().map(String::from).collect(),
    )
}

/// Registers a cache_ext policy written in Python as `py:NAME`: each run
/// calls `factory()` (the class) for a fresh object. `budget_ms`: the
/// longest one callback may run before the run stops with an error.
#[pyfunction]
#[pyo3(signature = (name, factory, budget_ms = 100))]
fn register_policy(name: &str, factory: Py<PyAny>, budget_ms: u64) -> PyResult<()> {
    if budget_ms == 0 {
        return Err(PyValueError::new_err("budget_ms: must be at least 1"));
    }
    let build = policy::external(name, factory, Duration::from_millis(budget_ms));
    foliosim::policy::register_external(name, build).map_err(PyValueError::new_err)
}

/// Removes `py:NAME`.
#[pyfunction]
fn unregister_policy(name: &str) {
    foliosim::policy::unregister_external(name);
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(register_policy, m)?)?;
    m.add_function(wrap_pyfunction!(unregister_policy, m)?)?;
    m.add_class::<policy::PolicyContext>()?;
    m.add_function(wrap_pyfunction!(run_json, m)?)?;
    m.add_function(wrap_pyfunction!(sweep, m)?)?;
    m.add_function(wrap_pyfunction!(grid_row, m)?)?;
    m.add_function(wrap_pyfunction!(grid_size, m)?)?;
    m.add_function(wrap_pyfunction!(variants_json, m)?)?;
    m.add_function(wrap_pyfunction!(split_set, m)?)?;
    Ok(())
}
