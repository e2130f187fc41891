//! `foliosim fio` with fio's page_fault engine: the example runs and
//! prints the anonymous counters; a bad engine option is one line naming
//! file, line and option, exit code 2.

use std::process::Command;

fn foliosim(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_foliosim"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_example_runs_and_swaps_over_its_limit() {
    let job = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/page-fault-anon.fio"
    );
    let (code, out, err) = foliosim(&["fio", job, "--memcg-limit", "96M", "--swap", "zram:256M"]);
    assert_eq!(code, Some(0), "{err}");
    for want in [
        "fill: (groupid=0, jobs=1): err= 0",
        "late-thp: (groupid=2, jobs=1): err= 0",
        "\npgfault ",
        "\npswpout ",
        "\npswpin ",
        "\nthp_fault_alloc ",
    ] {
        assert!(out.contains(want), "{want}: {out}");
    }
}

#[test]
fn a_bad_engine_option_is_one_line_and_exit_2() {
    let dir = std::env::temp_dir().join(format!("foliosim-pf-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let job = dir.join("bad.fio");
    std::fs::write(
        &job,
        "[a]\nioengine=page_fault\nsize=1m\nmadvise_hint=hugepage\n",
    )
    .unwrap();
    let (code, _, err) = foliosim(&["fio", job.to_str().unwrap()]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.trim_end().ends_with(
            "bad.fio:4: madvise_hint: bad madvise_hint 'hugepage' (none, random, sequential)"
        ),
        "{err}"
    );
    let (code, _, err) = foliosim(&[
        "fio",
        "--name=o",
        "--ioengine=page_fault",
        "--size=1m",
        "--offset=4k",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("--offset") && err.contains("job 'o': ioengine=page_fault maps"),
        "{err}"
    );
}
