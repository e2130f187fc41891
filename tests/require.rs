//! What a test needs from outside the model: a tool (fio, jq, script, a C
//! compiler), host features (root, a memory cgroup, zram), and the fio
//! examples corpus. Included by path by the tests that need it
//! (`#[path = ".../tests/require.rs"] mod require;`), so that every crate
//! decides "missing" the same way:
//!
//! - a missing tool or host feature skips the test, saying why on stderr,
//!   on a developer's machine; under CI (`CI` set, and not "", "0" or
//!   "false") the test fails instead, naming what is missing — CI installs
//!   the tools (`.ci/run`) and runs as root with a memory cgroup, so a
//!   skip there would be a test passing without testing;
//! - the corpus is in the repository (`tests/corpora`): missing, it fails
//!   everywhere.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// Whether this is a CI run: `CI` set to anything but "", "0" or "false"
/// (CI systems set CI=true).
pub fn in_ci() -> bool {
    std::env::var("CI")
        .is_ok_and(|v| !matches!(v.trim().to_ascii_lowercase().as_str(), "" | "0" | "false"))
}

/// The running test cannot run here because of `why`, which names what is
/// missing. Under CI this panics with `why`; elsewhere it prints
/// "SKIPPED <test>: <why>" and returns, and the caller returns.
#[track_caller]
pub fn skip(why: &str) {
    // libtest names each test's thread after the test.
    let test = std::thread::current()
        .name()
        .unwrap_or("this test")
        .to_string();
    if in_ci() {
        panic!("{test}: {why} (CI is set: the test must run here, not skip)");
    }
    eprintln!("SKIPPED {test}: {why} (under CI=true this fails)");
}

/// `name` on PATH (as `Command::new(name)` finds it), or None after
/// [`skip`] naming it and `package`, the Debian package that has it.
#[track_caller]
pub fn tool(name: &str, package: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join(name))
            .find(|p| is_executable(p))
    });
    if found.is_none() {
        skip(&format!(
            "{name} is not installed (not on PATH): apt-get install -y {package} (.ci/run does)"
        ));
    }
    found
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The repository's root: every crate including this is crates/NAME.
pub fn repo_root() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    // Without the "../..", for the messages that name paths in it.
    p.canonicalize().unwrap_or(p)
}

/// fio's own examples/ job files, in the repository (tests/corpora/
/// fio-examples, with their SOURCE): the folder, after checking it holds
/// them. Missing or emptied, every test reading it fails, here or in CI.
#[track_caller]
pub fn fio_examples() -> PathBuf {
    let dir = repo_root().join("tests/corpora/fio-examples");
    let n = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "fio"))
                .count()
        })
        .unwrap_or(0);
    assert!(
        n > 0 && dir.join("SOURCE").is_file(),
        "the fio examples corpus is missing: {} has {n} job files and {} SOURCE \
         (it is part of the repository: git checkout tests/corpora)",
        dir.display(),
        if dir.join("SOURCE").is_file() {
            "a"
        } else {
            "no"
        }
    );
    dir
}
