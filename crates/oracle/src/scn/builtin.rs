//! Built-in scenarios for the tests (`foliosim oracle run builtin:NAME`):
//! small, and one that holds every kind of host change for a kill -9. The
//! calibration suite's scenarios are files, `oracle/cases/*.toml`.

use foliosim_workload::scenario::{
    Amount, Cgroup, FileFs, FileSpec, MachineDefaults, MmapFileStep, Op, Pattern, Process,
    Scenario, Step, Thread, TouchStep,
};

const M: u64 = 1 << 20;

/// Builds steps with increasing pseudo line numbers (for error messages).
struct B {
    line: usize,
}

impl B {
    fn s(&mut self, op: Op) -> Step {
        self.line += 1;
        // The pseudo line numbers steps too (unique, in build order).
        Step {
            line: self.line,
            id: self.line as u64,
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
        self.s(Op::Touch(TouchStep {
            map: map.into(),
            pattern,
            write,
            amount,
            think_ns: 0,
        }))
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
        b.s(Op::MmapFile(MmapFileStep {
            map: "shm".into(),
            file: "shm".into(),
            offset: 0,
            len: 0,
            private: false,
        })),
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
    test_cases().into_iter().find(|c| c.0 == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_cases_are_safe_and_found_by_name() {
        for (n, _, sc) in test_cases() {
            super::super::check_safe(&sc).unwrap_or_else(|e| panic!("{n}: {e}"));
            assert_eq!(find(n).unwrap().2, sc);
        }
        assert!(find("../x").is_none());
    }
}
