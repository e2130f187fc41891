//! The scenario file format: every example parses, each kind of bad input
//! gets its one-line `file:line: key: msg`, aliases mean the same thing,
//! barrier schedules are judged by their abstract run, usemem's command
//! line maps onto the steps usemem.c runs, and the random generator only
//! writes valid, reproducible scenarios.

use foliosim_workload::scenario::gen::{random_scenario, Limits};
use foliosim_workload::scenario::{
    parse, usemem, Amount, FileFs, IoStep, Op, Pattern, Scenario, TouchStep,
};
use proptest::prelude::*;
use std::path::PathBuf;

const EXAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");

fn ok(text: &str) -> Scenario {
    parse(text, "t.toml").unwrap_or_else(|e| panic!("{e}"))
}

/// The error line, asserting it starts with `prefix` ("t.toml:LINE: key:").
fn err(text: &str, prefix: &str) -> String {
    let e = parse(text, "t.toml")
        .expect_err("should be refused")
        .to_string();
    assert!(
        e.starts_with(prefix),
        "expected prefix {prefix:?}, got {e:?}"
    );
    assert!(!e.contains('\n'), "not one line: {e:?}");
    e
}

const SLEEPER: &str = "steps = [{ op = \"sleep\", time = \"1s\" }]";

#[test]
fn every_example_parses() {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(EXAMPLES)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    paths.sort();
    for p in &paths {
        let text = std::fs::read_to_string(p).unwrap();
        let label = p.display().to_string();
        let sc = parse(&text, &label).unwrap_or_else(|e| panic!("{e}"));
        assert!(!sc.processes.is_empty(), "{label}");
        assert_eq!(sc.file, label);
    }
    assert!(
        paths.len() >= 6,
        "expected the six documented examples, found {}",
        paths.len()
    );
}

#[test]
fn parse_file_names_the_path() {
    let p = PathBuf::from(EXAMPLES).join("anon-oom.toml");
    let sc = foliosim_workload::scenario::parse_file(&p).unwrap();
    assert_eq!(sc.file, p.display().to_string());
    // The OOM example: no swap, a 256M limit, the hog asks for 512M.
    assert_eq!(sc.machine.swap.as_deref(), Some("none"));
    assert_eq!(sc.cgroups[0].max, Some(256 << 20));
    let e = foliosim_workload::scenario::parse_file(std::path::Path::new("/nonexistent/x.toml"))
        .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("/nonexistent/x.toml: scenario file: cannot read"),
        "{e}"
    );
}

#[test]
fn seed003_example_has_the_reproducers_shape() {
    let text =
        std::fs::read_to_string(PathBuf::from(EXAMPLES).join("seed003-aging-oom.toml")).unwrap();
    let sc = ok(&text);
    let readers = &sc.processes[0];
    assert_eq!((readers.name.as_str(), readers.count), ("reader", 8));
    // The 120 ms pause after each pass, inside the readers' loop.
    let Op::Loop {
        steps,
        duration_ns: Some(_),
        ..
    } = &readers.threads[0].steps[3].op
    else {
        panic!("readers loop")
    };
    assert!(steps.iter().any(|s| s.op == Op::Sleep { ns: 120_000_000 }));
    // 8 readers and 8 pressure threads meet at "warm"; "round" is the
    // threads' join.
    let parties: Vec<(&str, u32)> = sc
        .barriers
        .iter()
        .map(|b| (b.name.as_str(), b.parties))
        .collect();
    assert_eq!(parties, [("round", 8), ("warm", 16)]);
    assert_eq!(sc.cgroups[0].max, Some(1 << 30));
    assert_eq!(sc.machine.lru.as_deref(), Some("mglru"));
}

#[test]
fn full_shape_and_defaults() {
    let sc = ok(r#"
[machine]
memory = "2G"
swap = "zram:1G"
sysctl = { vm.swappiness = "100", "vm.dirty_ratio" = 20 }

[[cgroup]]
path = "a/b"
max = "64M"

[[cgroup]]
path = "a"

[[file]]
name = "d"
size = "8M"

[[file]]
name = "t"
size = "8M"
fs = "tmpfs"

[[process]]
name = "p"
cgroup = "a/b"
steps = [
  { op = "mmap_anon", map = "m", size = "4M" },
  { op = "touch", map = "m" },
  { op = "touch", map = "m", pattern = "zipf:0.99", write = true, accesses = 10, think = "120ms" },
  { op = "read", file = "d", bs = "64k", amount = "1M" },
  { op = "write", file = "t", duration = "1s" },
  { op = "free", map = "m" },
]
"#);
    // Parents sorted before children.
    let paths: Vec<&str> = sc.cgroups.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(paths, ["a", "a/b"]);
    assert_eq!(sc.cgroups[1].max, Some(64 << 20));
    assert_eq!(
        sc.machine.sysctl,
        [
            ("vm.swappiness".to_string(), "100".to_string()),
            ("vm.dirty_ratio".to_string(), "20".to_string())
        ]
    );
    // A disk file is prefilled unless told otherwise; tmpfs never.
    assert!(sc.files[0].prefill && sc.files[0].fs == FileFs::Disk);
    assert!(!sc.files[1].prefill && sc.files[1].fs == FileFs::Tmpfs);
    let steps = &sc.processes[0].threads[0].steps;
    assert_eq!(steps[0].line, 27);
    assert_eq!(
        steps[1].op,
        Op::Touch(TouchStep {
            map: "m".into(),
            pattern: Pattern::Seq,
            write: false,
            amount: Amount::Passes(1),
            think_ns: 0
        })
    );
    assert_eq!(
        steps[2].op,
        Op::Touch(TouchStep {
            map: "m".into(),
            pattern: Pattern::Zipf { theta: 0.99 },
            write: true,
            amount: Amount::Accesses(10),
            think_ns: 120_000_000
        })
    );
    // amount = 1M of 64k blocks: 16 accesses.
    let Op::Io(IoStep {
        amount,
        bs,
        write: false,
        ..
    }) = &steps[3].op
    else {
        panic!()
    };
    assert_eq!((amount.clone(), *bs), (Amount::Accesses(16), 65536));
    let Op::Io(IoStep {
        amount,
        bs,
        write: true,
        ..
    }) = &steps[4].op
    else {
        panic!()
    };
    assert_eq!(
        (amount.clone(), *bs),
        (Amount::Duration(1_000_000_000), 4096)
    );
    assert_eq!(steps[5].op, Op::Munmap { map: "m".into() });
}

#[test]
fn v1_and_v2_knob_names_agree() {
    let spell = |knobs: &str| {
        let sc = ok(&format!(
            "[[cgroup]]\npath = \"g\"\n{knobs}\n[[process]]\nname = \"p\"\n{SLEEPER}\n"
        ));
        sc.cgroups[0].clone()
    };
    let v2 = spell(
        "memory.max = \"1G\"\nmemory.swap.max = \"2G\"\nmemory.oom.group = 1\nmemory.low = \"1M\"",
    );
    let plain = spell("max = \"1G\"\nswap_max = \"2G\"\noom_group = true\nlow = \"1M\"");
    let quoted = spell("\"memory.max\" = \"1G\"\n\"memory.swap.max\" = \"2G\"\n\"memory.oom.group\" = true\n\"memory.low\" = 1048576");
    assert_eq!(v2, plain);
    assert_eq!(v2, quoted);
    assert_eq!(
        (v2.max, v2.swap_max, v2.oom_group, v2.low),
        (Some(1 << 30), Some(2 << 30), true, Some(1 << 20))
    );
    let v1 = spell("memory.limit_in_bytes = \"1G\"\nmemory.memsw.limit_in_bytes = \"3G\"\nmemory.swappiness = 0\noom_kill_disable = true");
    assert_eq!(
        (v1.max, v1.memsw_limit, v1.swappiness, v1.oom_kill_disable),
        (Some(1 << 30), Some(3 << 30), Some(0), true)
    );
    // "max" and -1 are the kernel's unlimited.
    assert_eq!(spell("max = \"max\"\nmemsw_limit = -1").max, None);
}

#[test]
fn errors_name_file_line_and_key() {
    // Unknown key, with the known ones listed.
    let e = err(
        &format!("[[process]]\nname = \"p\"\nstepz = 1\n{SLEEPER}\n"),
        "t.toml:3: stepz: unknown key in [[process]]",
    );
    assert!(e.contains("oom_score_adj"), "{e}");
    err(
        "[machine]\nmemroy = \"1G\"\n",
        "t.toml:2: memroy: unknown key in [machine]",
    );
    // Unknown key inside a step, on the step's own line.
    err(
        "[[process]]\nname = \"p\"\nsteps = [\n  { op = \"sleep\", time = \"1s\" },\n  { op = \"sleep\", tim = \"1s\" },\n]\n",
        "t.toml:5: tim: unknown key in a step",
    );
    // Bad size.
    let e = err(
        "[[process]]\nname = \"p\"\nsteps = [\n  { op = \"mmap_anon\", map = \"b\", size = \"1Q\" },\n]\n",
        "t.toml:4: size: ",
    );
    assert!(e.contains("1Q"), "{e}");
    err(
        "[[cgroup]]\npath = \"g\"\nmax = true\n",
        "t.toml:3: max: expected a size",
    );
    // A process in a cgroup that does not exist.
    err(
        &format!("[[process]]\nname = \"p\"\ncgroup = \"nope\"\n{SLEEPER}\n"),
        "t.toml:3: cgroup: cgroup 'nope' is not declared",
    );
    // A cgroup whose parent is not declared.
    err(
        "[[cgroup]]\npath = \"a\"\n\n[[cgroup]]\npath = \"x/y\"\n",
        "t.toml:4: path: parent cgroup 'x'",
    );
    // A barrier cycle names both barriers and both threads.
    let e = err(
        "[[process]]\nname = \"a\"\nsteps = [{ op = \"barrier\", name = \"X\" }, { op = \"barrier\", name = \"Y\" }]\n\
         [[process]]\nname = \"b\"\nsteps = [{ op = \"barrier\", name = \"Y\" }, { op = \"barrier\", name = \"X\" }]\n",
        "t.toml:3: barrier: barriers can never complete",
    );
    assert!(
        e.contains("a waits at 'X'") && e.contains("b waits at 'Y'"),
        "{e}"
    );
    // Missing required key: the line of the table that lacks it.
    err(
        "[[file]]\nsize = \"1M\"\n",
        "t.toml:1: name: missing in [[file]]",
    );
    // Invalid TOML.
    err("[[process]\n", "t.toml:1: toml: invalid TOML");
}

#[test]
fn references_and_duplicates_are_checked() {
    let file = "[[file]]\nname = \"f\"\nsize = \"1M\"\n";
    err(
        &format!("{file}[[process]]\nname = \"p\"\nsteps = [{{ op = \"read\", file = \"g\" }}]\n"),
        "t.toml:6: file: file 'g' is not declared",
    );
    err(
        &format!("{file}{file}[[process]]\nname = \"p\"\n{SLEEPER}\n"),
        "t.toml:4: name: duplicate file 'f' (first at line 1)",
    );
    err(
        &format!("[[process]]\nname = \"p\"\n{SLEEPER}\n[[process]]\nname = \"p\"\n{SLEEPER}\n"),
        "t.toml:4: name: duplicate process 'p'",
    );
    err(
        "[[cgroup]]\npath = \"g\"\n[[cgroup]]\npath = \"g\"\n",
        "t.toml:3: path: duplicate cgroup 'g'",
    );
    // A map used before any mmap, after its munmap, or mapped twice.
    err(
        "[[process]]\nname = \"p\"\nsteps = [{ op = \"touch\", map = \"m\" }]\n",
        "t.toml:3: map: map 'm' is not mapped",
    );
    let e = err(
        "[[process]]\nname = \"p\"\nsteps = [\n{ op = \"mmap_anon\", map = \"m\", size = 4096 },\n{ op = \"munmap\", map = \"m\" },\n{ op = \"touch\", map = \"m\" },\n]\n",
        "t.toml:6: map: ",
    );
    assert!(e.contains("unmapped at line 5"), "{e}");
    err(
        "[[process]]\nname = \"p\"\nsteps = [\n{ op = \"mmap_anon\", map = \"m\", size = 4096 },\n{ op = \"mmap_anon\", map = \"m\", size = 4096 },\n]\n",
        "t.toml:5: map: map 'm' is already mapped (line 4)",
    );
    // A loop whose body unmaps a map it uses again on the next iteration.
    err(
        "[[process]]\nname = \"p\"\nsteps = [\n{ op = \"mmap_anon\", map = \"m\", size = 4096 },\n\
         { op = \"loop\", count = 2, steps = [\n  { op = \"touch\", map = \"m\" },\n  { op = \"munmap\", map = \"m\" },\n] },\n]\n",
        "t.toml:6: map: map 'm' was unmapped at line 7",
    );
    // Another one-thread body's map may be used (ordering is the run's).
    ok("[[process]]\nname = \"p\"\n[[process.thread]]\nsteps = [{ op = \"mmap_anon\", map = \"m\", size = 4096 }]\n\
        [[process.thread]]\ncount = 2\nsteps = [{ op = \"touch\", map = \"m\" }]\n");
    // A forked child starts with no mappings.
    err(
        "[[process]]\nname = \"p\"\nsteps = [\n{ op = \"mmap_anon\", map = \"m\", size = 4096 },\n\
         { op = \"fork\", steps = [{ op = \"touch\", map = \"m\" }] },\n]\n",
        "t.toml:5: map: map 'm' is not mapped in this forked child",
    );
}

#[test]
fn nonsense_values_are_refused() {
    let step = |s: &str| {
        format!("[[process]]\nname = \"p\"\nsteps = [\n{{ op = \"mmap_anon\", map = \"m\", size = 4096 }},\n{s},\n]\n")
    };
    err(
        &step("{ op = \"mmap_anon\", map = \"z\", size = 0 }"),
        "t.toml:5: size: size must be more than 0",
    );
    err(
        &step("{ op = \"compute\", time = \"1ms\", sys = \"yes\" }"),
        "t.toml:5: sys:",
    );
    err(
        &step("{ op = \"sleep\", time = \"1ms\", sys = true }"),
        "t.toml:5: sys: unknown key",
    );
    let sc = ok(&step("{ op = \"compute\", time = \"1ms\", sys = true }"));
    assert!(matches!(
        sc.processes[0].threads[0].steps[1].op,
        Op::Compute {
            ns: 1_000_000,
            sys: true
        }
    ));
    let sc = ok(&step("{ op = \"compute\", time = \"1ms\" }"));
    assert!(matches!(
        sc.processes[0].threads[0].steps[1].op,
        Op::Compute { sys: false, .. }
    ));
    err(
        &step("{ op = \"touch\", map = \"m\", pattern = \"stride:0\" }"),
        "t.toml:5: pattern: stride must be 1 page or more",
    );
    err(
        &step("{ op = \"touch\", map = \"m\", pattern = \"zipf\" }"),
        "t.toml:5: pattern: pattern 'zipf' needs a value",
    );
    err(
        &step("{ op = \"touch\", map = \"m\", pattern = \"hotcold:90/0\" }"),
        "t.toml:5: pattern: hot size 0%",
    );
    err(
        &step("{ op = \"touch\", map = \"m\", pattern = \"ycsb:1.5\" }"),
        "t.toml:5: pattern: ycsb theta",
    );
    err(
        &step("{ op = \"touch\", map = \"m\", pattern = \"lru\" }"),
        "t.toml:5: pattern: unknown pattern 'lru'",
    );
    // append is O_APPEND's shared end of file: writes only.
    err(
        &step("{ op = \"touch\", map = \"m\", pattern = \"append\" }"),
        "t.toml:5: pattern: pattern 'append' is for write steps",
    );
    err(
        &step("{ op = \"touch\", map = \"m\", passes = 0 }"),
        "t.toml:5: passes: 0 is out of range",
    );
    err(
        &step("{ op = \"touch\", map = \"m\", passes = 1, accesses = 2 }"),
        "t.toml:5: accesses: give one of",
    );
    // Think time on a step that waits for nothing is not a key it has.
    err(
        &step("{ op = \"munmap\", map = \"m\", think = \"1ms\" }"),
        "t.toml:5: think: unknown key in a step",
    );
    err(
        &step("{ op = \"sleep\", time = \"10\" }"),
        "t.toml:5: time: time '10' needs a unit",
    );
    err(
        &step("{ op = \"sleep\", time = \"0s\" }"),
        "t.toml:5: time: time must be more than 0",
    );
    err(
        &step("{ op = \"loop\", steps = [{ op = \"exit\" }] }"),
        "t.toml:5: count: a loop needs count or duration",
    );
    err(
        &step("{ op = \"frobnicate\" }"),
        "t.toml:5: op: unknown op 'frobnicate'",
    );
    err(
        &step("{ op = \"exit\" }, { op = \"touch\", map = \"m\" }"),
        "t.toml:5: op: never runs: it follows the exit step at line 5",
    );
    err(
        &format!("[[process]]\nname = \"p\"\ncount = 0\n{SLEEPER}\n"),
        "t.toml:3: count: 0 is out of range",
    );
    err(
        &format!("[[process]]\nname = \"p\"\noom_score_adj = 1001\n{SLEEPER}\n"),
        "t.toml:3: oom_score_adj: 1001 is out of range",
    );
    err(
        "[[file]]\nname = \"t\"\nsize = \"1M\"\nfs = \"tmpfs\"\nprefill = true\n",
        "t.toml:5: prefill: a tmpfs file starts empty",
    );
    err(
        "[machine]\nswap = \"zram\"\n",
        "t.toml:2: swap: bad swap 'zram'",
    );
    err(
        "[machine]\ndevice = \"floppy\"\n",
        "t.toml:2: device: unknown device 'floppy'",
    );
    err(
        "[machine]\ntmpfs_huge = \"force\"\n",
        "t.toml:2: tmpfs_huge: unknown huge= option 'force' (never, always, within_size, advise)",
    );
    err(
        "[[cgroup]]\npath = \"../x\"\n",
        "t.toml:2: path: bad cgroup path",
    );
    err(
        "[[cgroup]]\npath = \"g\"\nmemory.limit_in_bytes = \"2G\"\nmemory.memsw.limit_in_bytes = \"1G\"\n",
        "t.toml:1: memsw_limit: memory.memsw.limit_in_bytes (1073741824) is below",
    );
    err(
        "[[cgroup]]\npath = \"g\"\nmax = \"1G\"\nmemory.max = \"2G\"\n",
        "t.toml:4: memory.max: given twice (as 'max' and 'memory.max')",
    );
    err(
        "[[cgroup]]\npath = \"g\"\n",
        "t.toml:1: process: a scenario needs at least one [[process]]",
    );
}

#[test]
fn barrier_schedules() {
    let two = |a: &str, b: &str| {
        format!(
            "[[process]]\nname = \"a\"\nsteps = [{a}]\n[[process]]\nname = \"b\"\nsteps = [{b}]\n"
        )
    };
    let bar = |n: &str| format!("{{ op = \"barrier\", name = \"{n}\" }}");
    let lp =
        |count: u32, n: &str| format!("{{ op = \"loop\", count = {count}, steps = [{}] }}", bar(n));
    // Parties count every thread of every process copy naming it.
    let sc = ok(&format!(
        "[[process]]\nname = \"a\"\ncount = 3\nsteps = [{}]\n[[process]]\nname = \"b\"\n[[process.thread]]\ncount = 2\nsteps = [{}]\n",
        bar("X"),
        lp(1, "X")
    ));
    assert_eq!(sc.barriers[0].parties, 5);
    // Counted loops are expanded: 3 rounds against 3 arrivals is fine...
    ok(&two(
        &lp(3, "X"),
        &format!("{}, {}, {}", bar("X"), bar("X"), bar("X")),
    ));
    // ...3 against 2 leaves one thread waiting for one that has ended.
    let e = err(
        &two(&lp(3, "X"), &lp(2, "X")),
        "t.toml:3: barrier: barriers can never complete",
    );
    assert!(e.contains("a waits at 'X' (line 3) for b (ended)"), "{e}");
    // A barrier only one thread reaches.
    err(
        &two(&bar("X"), "{ op = \"exit\" }"),
        "t.toml:3: name: barrier 'X' is reached only by thread a",
    );
    // In a duration loop with partners outside one.
    err(
        &two(&format!("{{ op = \"loop\", duration = \"1s\", steps = [{}] }}", bar("X")), &bar("X")),
        "t.toml:3: name: barrier 'X' is inside a duration loop in thread a but thread b reaches it outside one (line 6)",
    );
    // A cycle through three threads.
    let e = err(
        &format!(
            "{}[[process]]\nname = \"c\"\nsteps = [{}, {}]\n",
            two(
                &format!("{}, {}", bar("X"), bar("Y")),
                &format!("{}, {}", bar("Y"), bar("Z"))
            ),
            bar("Z"),
            bar("X")
        ),
        "t.toml:3: barrier: ",
    );
    assert!(e.contains("c waits at 'Z'"), "{e}");
    // A barrier in a forked child is refused (its parties are dynamic).
    err(
        &two(
            &format!("{{ op = \"fork\", steps = [{}] }}", bar("X")),
            &bar("X"),
        ),
        "t.toml:3: name: a barrier inside fork is not supported",
    );
    // Nesting is bounded (the map check follows each loop body twice).
    let mut deep = "{ op = \"sleep\", time = \"1s\" }".to_string();
    for _ in 0..9 {
        deep = format!("{{ op = \"loop\", count = 2, steps = [{deep}] }}");
    }
    err(
        &format!("[[process]]\nname = \"a\"\nsteps = [{deep}]\n"),
        "t.toml:3: steps: loops and forks nested more than 8 deep",
    );
    // Huge counted loops are followed lazily, up to a bound.
    ok(&two(&lp(1_000_000_000, "X"), &lp(1_000_000_000, "X")));
}

fn args(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

#[test]
fn usemem_command_lines() {
    // usemem -n 4 --random 1G: 4 processes, each maps 1 GiB and writes one
    // random word per 8 bytes of it (do_rw_once with step = sizeof(long)).
    let sc = usemem::parse_args(&args("usemem -n 4 --random 1G")).unwrap();
    let p = &sc.processes[0];
    assert_eq!((p.count, p.threads.len(), p.threads[0].count), (4, 1, 1));
    let ops: Vec<&Op> = p.threads[0].steps.iter().map(|s| &s.op).collect();
    assert_eq!(
        ops[0],
        &Op::Barrier {
            name: "start".into()
        }
    );
    assert_eq!(
        ops[1],
        &Op::MmapAnon {
            map: "unit0".into(),
            size: 1 << 30
        }
    );
    assert_eq!(
        ops[2],
        &Op::Touch(TouchStep {
            map: "unit0".into(),
            pattern: Pattern::Random,
            write: true,
            amount: Amount::Accesses((1 << 30) / 8),
            think_ns: 0
        })
    );
    assert_eq!(
        ops[3],
        &Op::Munmap {
            map: "unit0".into()
        }
    );
    assert_eq!(sc.barriers[0].parties, 4);

    // Short options clustered and with attached values, long prefixes,
    // --opt=value; -o reads; -r repeats; -u splits into units.
    let sc = usemem::parse_args(&args("-ot2 --rep=3 --unit 256m 512m")).unwrap();
    let th = &sc.processes[0].threads[0];
    assert_eq!(th.count, 2);
    let maps: Vec<_> = th
        .steps
        .iter()
        .filter(|s| matches!(s.op, Op::MmapAnon { .. }))
        .collect();
    assert_eq!(maps.len(), 2);
    assert!(th.steps.iter().any(|s| s.op
        == Op::Touch(TouchStep {
            map: "unit1".into(),
            pattern: Pattern::Seq,
            write: false,
            amount: Amount::Passes(3),
            think_ns: 0
        })));

    // One task: no start barrier (a barrier of one is refused).
    let sc = usemem::parse_args(&args("-s 2 --delay 5u 64m")).unwrap();
    assert!(sc.barriers.is_empty());
    let ops: Vec<&Op> = sc.processes[0].threads[0]
        .steps
        .iter()
        .map(|s| &s.op)
        .collect();
    assert!(matches!(
        ops[1],
        Op::Touch(TouchStep { think_ns: 5000, .. })
    ));
    assert_eq!(ops[2], &Op::Sleep { ns: 2_000_000_000 });

    // A step over a page: strided pages, one loop iteration per pass.
    let t = usemem::to_toml(&args("-j 16k -r 2 1m")).unwrap();
    assert!(t.contains("pattern = \"stride:4\", accesses = 64"), "{t}");

    // Refusals name the option.
    for (cmd, what) in [
        ("-P 1G", "-P: not supported"),
        ("--prealloc 1G", "--prealloc: not supported"),
        ("-f /tmp/x 1G", "-f: not supported"),
        ("--hugetlb 1G", "--hugetlb: not supported"),
        ("--r 1G", "--r: ambiguous"),
        ("--bogus 1G", "--bogus: unknown usemem option"),
        ("-q", "usemem: missing SIZE"),
        ("-n x 1G", "-n: bad number 'x'"),
        ("1G 2G", "usemem: one SIZE expected"),
        ("0", "SIZE: 0 bytes"),
        ("1Q", "SIZE: bad size '1Q'"),
        ("-y -u 1m -n 2 2m", "--sync-rw: to sync tasks"),
        ("-j 6000 1m", "--step: 6000"),
    ] {
        let e = usemem::parse_args(&args(cmd)).expect_err(cmd);
        assert!(e.starts_with(what), "{cmd}: {e}");
    }
    // A newline smuggled into an argument cannot reach the TOML.
    let t = usemem::to_toml(&["-s".into(), "1\n[[x]]".into(), "1m".into()]);
    assert!(t.is_err(), "{t:?}");
    let t = usemem::to_toml(&["-s".into(), "1\n".into(), "1m".into()]).unwrap();
    assert!(t.lines().next().unwrap().contains("\\n"), "{t}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Whatever the generator writes parses, and parsing is a function of
    /// the text.
    #[test]
    fn generated_scenarios_parse(seed in any::<u64>()) {
        let lim = Limits::default();
        let text = random_scenario(seed, lim);
        prop_assert_eq!(&text, &random_scenario(seed, lim));
        let a = parse(&text, "gen.toml").map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        let b = parse(&text, "gen.toml").unwrap();
        prop_assert_eq!(&a, &b);
        // Every barrier it places completes: parties at least two.
        for bar in &a.barriers {
            prop_assert!(bar.parties >= 2);
        }
    }

    /// Larger limits too.
    #[test]
    fn generated_scenarios_parse_wide(seed in any::<u64>()) {
        let lim = Limits { processes: 6, threads: 4, steps: 20, max_bytes: 1 << 20, cgroups: 6, files: 4 };
        let text = random_scenario(seed, lim);
        parse(&text, "gen.toml").map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
    }
}

#[test]
fn generator_varies_with_the_seed() {
    let texts: std::collections::BTreeSet<String> = (0..20)
        .map(|s| random_scenario(s, Limits::default()))
        .collect();
    assert_eq!(texts.len(), 20);
}
