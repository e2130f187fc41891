//! `foliosim oracle app`: bad options are one line and exit 2 before
//! anything runs on the host (no cgroup, no tracefs, nothing recorded).

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_foliosim");

fn app(args: &[&str], tag: &str) -> (i32, String, std::path::PathBuf) {
    let dir =
        std::env::temp_dir().join(format!("foliosim-oracle-app-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(BIN)
        .arg("oracle")
        .arg("app")
        .args(["--out", dir.join("out").to_str().unwrap()])
        .args(args)
        .env(foliosim_oracle::journal::ENV, dir.join("journal"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code().unwrap_or(-1), err, dir)
}

#[test]
fn bad_options_are_one_line_and_exit_2_before_anything_runs() {
    for (tag, args, want) in [
        (
            "limit",
            vec!["--memcg-limit", "12Q", "--", "true"],
            "--memcg-limit",
        ),
        (
            "repeat",
            vec!["--memcg-limit", "64M", "--repeat", "0", "--", "true"],
            "--repeat",
        ),
    ] {
        let (code, err, dir) = app(&args, tag);
        assert_eq!(code, 2, "{tag}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{tag}: one line: {err}");
        assert!(err.contains(want), "{tag}: names {want}: {err}");
        // Nothing recorded.
        assert!(!dir.join("out").join("run0.trace").exists(), "{tag}");
        let _ = std::fs::remove_dir_all(&dir);
    }
    // No command: clap's usage error, exit 2.
    let (code, _, dir) = app(&["--memcg-limit", "64M"], "nocmd");
    assert_eq!(code, 2);
    let _ = std::fs::remove_dir_all(&dir);
}
