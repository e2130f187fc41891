//! The anon/swap/shmem calibration cases, built in Rust until the scenario
//! parser is merged (then they become `oracle/cases/*.toml`). Each fits a
//! 256 MiB group on a 2-core host in well under a minute.

use foliosim_workload::scenario::{
    Amount, Barrier, Cgroup, FileFs, FileSpec, MachineDefaults, Op, Pattern, Process, Scenario,
    Step, Thread,
};

const M: u64 = 1 << 20;

/// Builds steps with increasing pseudo line numbers (for error messages).
struct B {
    line: usize,
}

impl B {
    fn s(&mut self, op: Op) -> Step {
        self.line += 1;
        Step {
            line: self.line,
            op,
        }
    }
    fn anon(&mut self, map: &str, size: u64) -> Step {
        self.s(Op::MmapAnon {
            map: map.into(),
            size,
        })
    }
    fn touch(&mut self, map: &str, pattern: Pattern, write: bool, amount: Amount) -> Step {
        self.s(Op::Touch {
            map: map.into(),
            pattern,
            write,
            amount,
            think_ns: 0,
        })
    }
    fn read(&mut self, file: &str, pattern: Pattern, bs: u64, amount: Amount) -> Step {
        self.s(Op::Io {
            file: file.into(),
            pattern,
            write: false,
            bs,
            amount,
            direct: false,
            think_ns: 0,
        })
    }
}

fn process(name: &str, cgroup: &str, steps: Vec<Step>) -> Process {
    Process {
        name: name.into(),
        line: 0,
        cgroup: cgroup.into(),
        count: 1,
        threads: vec![Thread { count: 1, steps }],
        oom_score_adj: 0,
    }
}

fn group(path: &str, max: u64, swappiness: Option<u32>) -> Cgroup {
    Cgroup {
        path: path.into(),
        line: 0,
        max: Some(max),
        swappiness,
        ..Default::default()
    }
}

fn machine(swap: Option<&str>) -> MachineDefaults {
    MachineDefaults {
        swap: swap.map(String::from),
        seed: Some(1),
        ..Default::default()
    }
}

fn scenario(
    name: &str,
    machine: MachineDefaults,
    cgroups: Vec<Cgroup>,
    files: Vec<FileSpec>,
    processes: Vec<Process>,
) -> Scenario {
    Scenario {
        file: format!("builtin:{name}"),
        machine,
        cgroups,
        files,
        processes,
        barriers: vec![],
    }
}

fn file(name: &str, size: u64, fs: FileFs, prefill: bool) -> FileSpec {
    FileSpec {
        name: name.into(),
        line: 0,
        size,
        fs,
        prefill,
    }
}

/// An anon+file mix at `swappiness`: 192 MiB of anon written once, then
/// four rounds of a pass over the anon and a pass over a 128 MiB file
/// (both re-used, so that file refaults activate and anon is scanned).
fn mix(name: &str, swappiness: u32) -> Scenario {
    let mut b = B { line: 0 };
    let inner = vec![
        b.touch("heap", Pattern::Seq, false, Amount::Passes(1)),
        b.read("data", Pattern::Random, 4096, Amount::Passes(1)),
    ];
    let steps = vec![
        b.anon("heap", 192 * M),
        b.touch("heap", Pattern::Seq, true, Amount::Passes(1)),
        b.s(Op::Loop {
            count: Some(4),
            duration_ns: None,
            steps: inner,
        }),
    ];
    scenario(
        name,
        machine(Some("zram:1G")),
        vec![group("mix", 256 * M, Some(swappiness))],
        vec![file("data", 128 * M, FileFs::Disk, true)],
        vec![process("app", "mix", steps)],
    )
}

/// (name, about, scenario) of every built-in case.
pub fn cases() -> Vec<(&'static str, &'static str, Scenario)> {
    let mut v = Vec::new();
    let mut b = B { line: 0 };

    let steps = vec![
        b.anon("heap", 384 * M),
        b.touch("heap", Pattern::Seq, true, Amount::Passes(1)),
        b.touch("heap", Pattern::Seq, false, Amount::Passes(2)),
    ];
    v.push((
        "scn-anon-seq-zram",
        "384 MiB of anon in a 256 MiB group with zram: written once, read twice in order",
        scenario(
            "scn-anon-seq-zram",
            machine(Some("zram:1G")),
            vec![group("app", 256 * M, None)],
            vec![],
            vec![process("seq", "app", steps)],
        ),
    ));

    let steps = vec![
        b.anon("heap", 384 * M),
        b.touch("heap", Pattern::Seq, true, Amount::Passes(1)),
        b.touch("heap", Pattern::Random, false, Amount::Passes(1)),
        b.touch("heap", Pattern::Random, true, Amount::Passes(1)),
    ];
    v.push((
        "scn-anon-rand-zram",
        "384 MiB of anon in a 256 MiB group with zram: written in order, then random reads and writes",
        scenario("scn-anon-rand-zram", machine(Some("zram:1G")), vec![group("app", 256 * M, None)], vec![], vec![process("rand", "app", steps)]),
    ));

    for (name, sw) in [
        ("scn-mix-swappiness-0", 0),
        ("scn-mix-swappiness-60", 60),
        ("scn-mix-swappiness-100", 100),
        ("scn-mix-swappiness-200", 200),
    ] {
        v.push((
            name,
            "anon+file mix (192 MiB anon, 128 MiB file, both re-used, 256 MiB group, zram): the anon/file reclaim shares at this swappiness",
            mix(name, sw),
        ));
    }

    let steps = vec![
        b.anon("cold", 128 * M),
        b.touch("cold", Pattern::Seq, true, Amount::Passes(1)),
        b.read("hot", Pattern::Seq, 64 << 10, Amount::Passes(4)),
    ];
    v.push((
        "scn-cold-anon-hot-file",
        "128 MiB of anon written once beside a 192 MiB file read four times (256 MiB group, zram): the cold anon goes to swap",
        scenario(
            "scn-cold-anon-hot-file",
            machine(Some("zram:1G")),
            vec![group("app", 256 * M, None)],
            vec![file("hot", 192 * M, FileFs::Disk, true)],
            vec![process("app", "app", steps)],
        ),
    ));

    let steps = vec![
        b.anon("heap", 128 * M),
        b.touch("heap", Pattern::Seq, true, Amount::Passes(1)),
        b.read("data", Pattern::Seq, 64 << 10, Amount::Passes(2)),
        b.touch("heap", Pattern::Seq, false, Amount::Passes(1)),
    ];
    v.push((
        "scn-noswap-mix",
        "no swap: 128 MiB of anon and a 256 MiB file read twice in a 256 MiB group: only the file is reclaimed",
        scenario(
            "scn-noswap-mix",
            machine(None),
            vec![group("app", 256 * M, None)],
            vec![file("data", 256 * M, FileFs::Disk, true)],
            vec![process("app", "app", steps)],
        ),
    ));

    let hog = vec![
        b.s(Op::Sleep { ns: 500_000_000 }),
        b.anon("heap", 400 * M),
        b.touch("heap", Pattern::Seq, true, Amount::Passes(1)),
    ];
    let small = vec![
        b.anon("heap", 32 * M),
        b.touch("heap", Pattern::Seq, true, Amount::Passes(1)),
        b.s(Op::Sleep { ns: 3_000_000_000 }),
        b.touch("heap", Pattern::Seq, false, Amount::Passes(1)),
    ];
    v.push((
        "scn-anon-oom",
        "no swap, 256 MiB group: a 400 MiB hog beside a 32 MiB process: the memcg OOM killer kills the hog, the small one survives",
        scenario(
            "scn-anon-oom",
            machine(None),
            vec![group("app", 256 * M, None)],
            vec![],
            vec![process("hog", "app", hog), process("small", "app", small)],
        ),
    ));

    let steps = vec![
        b.s(Op::MmapFile {
            map: "shm".into(),
            file: "shm".into(),
            offset: 0,
            len: 0,
            private: false,
        }),
        b.touch("shm", Pattern::Seq, true, Amount::Passes(1)),
        b.touch("shm", Pattern::Seq, false, Amount::Passes(1)),
    ];
    v.push((
        "scn-shmem-over-limit",
        "a 384 MiB tmpfs file mapped shared and written, then read, in a 256 MiB group with zram: shmem is swapped",
        scenario(
            "scn-shmem-over-limit",
            machine(Some("zram:1G")),
            vec![group("app", 256 * M, None)],
            vec![file("shm", 384 * M, FileFs::Tmpfs, false)],
            vec![process("shm", "app", steps)],
        ),
    ));

    let steps = vec![
        b.s(Op::Io {
            file: "out".into(),
            pattern: Pattern::Seq,
            write: true,
            bs: M,
            amount: Amount::Passes(1),
            direct: false,
            think_ns: 0,
        }),
        b.s(Op::Fsync { file: "out".into() }),
    ];
    let mut m = machine(None);
    m.sysctl = vec![
        ("vm.dirty_background_ratio".into(), "1".into()),
        ("vm.dirty_ratio".into(), "2".into()),
    ];
    v.push((
        "scn-dirty-writer",
        "a 512 MiB sequential buffered writer in a 256 MiB group under dirty_ratio 2 / background 1: throttled, reclaimed behind writeback",
        scenario(
            "scn-dirty-writer",
            m,
            vec![group("app", 256 * M, None)],
            vec![file("out", 512 * M, FileFs::Disk, false)],
            vec![process("writer", "app", steps)],
        ),
    ));

    let a = vec![
        b.anon("heap", 128 * M),
        b.touch("heap", Pattern::Seq, true, Amount::Passes(1)),
        b.s(Op::Barrier {
            name: "filled".into(),
        }),
        b.s(Op::Barrier {
            name: "done".into(),
        }),
        b.touch("heap", Pattern::Seq, false, Amount::Passes(1)),
    ];
    let worker = vec![
        b.anon("heap", 96 * M),
        b.touch("heap", Pattern::Seq, true, Amount::Passes(1)),
    ];
    let c = vec![
        b.s(Op::Barrier {
            name: "filled".into(),
        }),
        b.s(Op::Fork {
            count: 2,
            wait: true,
            steps: worker,
        }),
        b.s(Op::Barrier {
            name: "done".into(),
        }),
    ];
    let mut sc = scenario(
        "scn-fork-pressure",
        machine(Some("zram:1G")),
        vec![group("app", 256 * M, None)],
        vec![],
        vec![process("resident", "app", a), process("forker", "app", c)],
    );
    sc.barriers = ["filled", "done"]
        .iter()
        .map(|n| Barrier {
            name: n.to_string(),
            parties: 2,
        })
        .collect();
    v.push((
        "scn-fork-pressure",
        "a 128 MiB resident process waits while two forked 96 MiB workers fill its 256 MiB group (zram), then reads its memory back",
        sc,
    ));
    v
}

/// Small scenarios for the tests (not suite cases): a zram smoke run, and
/// one that holds every kind of host change (zram swap in use, a tmpfs
/// with a charged file, a group with a process) for two minutes, to be
/// killed mid-run.
pub fn test_cases() -> Vec<(&'static str, &'static str, Scenario)> {
    let mut b = B { line: 0 };
    let smoke = vec![
        b.anon("heap", 96 * M),
        b.touch("heap", Pattern::Seq, true, Amount::Passes(1)),
        b.touch("heap", Pattern::Seq, false, Amount::Passes(1)),
    ];
    let hold = vec![
        b.s(Op::MmapFile {
            map: "shm".into(),
            file: "shm".into(),
            offset: 0,
            len: 0,
            private: false,
        }),
        b.touch("shm", Pattern::Seq, true, Amount::Passes(1)),
        b.anon("heap", 96 * M),
        b.touch("heap", Pattern::Seq, true, Amount::Passes(1)),
        b.s(Op::Sleep {
            ns: 120_000_000_000,
        }),
    ];
    vec![
        (
            "scn-test-smoke-zram",
            "96 MiB of anon written and read in a 64 MiB group with zram",
            scenario(
                "scn-test-smoke-zram",
                machine(Some("zram:256M")),
                vec![group("app", 64 * M, None)],
                vec![],
                vec![process("smoke", "app", smoke)],
            ),
        ),
        (
            "scn-test-hold",
            "zram in use, a tmpfs file, 96 MiB of anon in a 64 MiB group, then a two-minute sleep",
            scenario(
                "scn-test-hold",
                machine(Some("zram:256M")),
                vec![group("app", 64 * M, None)],
                vec![file("shm", 8 * M, FileFs::Tmpfs, false)],
                vec![process("hold", "app", hold)],
            ),
        ),
    ]
}

/// A built-in scenario (suite or test) by name.
pub fn find(name: &str) -> Option<(&'static str, &'static str, Scenario)> {
    cases()
        .into_iter()
        .chain(test_cases())
        .find(|c| c.0 == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_cases_are_safe_and_named_uniquely() {
        let cs = cases();
        assert!(cs.len() >= 10);
        let mut names: Vec<_> = cs.iter().map(|c| c.0).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), cs.len());
        for (n, _, sc) in &cs {
            super::super::check_safe(sc).unwrap_or_else(|e| panic!("{n}: {e}"));
            assert_eq!(
                super::super::skip_reason(sc, &{
                    let mut h = crate::cases::fake_host();
                    h.is_root = true;
                    h
                })
                .filter(|r| !r.contains("zram") && !r.contains("swap")),
                None,
                "{n}"
            );
        }
    }
}
