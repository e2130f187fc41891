//! Random valid scenarios, for property tests of the parser here and of
//! the model's driver elsewhere: small sizes so that a model run is quick,
//! the same text for the same seed and limits.
//!
//! Validity by construction: maps are used only between their mmap and
//! munmap in the same thread body; barriers are placed at the top level of
//! the bodies that take part, each once and in one global order (so every
//! round completes); forked children map their own memory.

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use std::fmt::Write as _;

/// Bounds on what `random_scenario` generates.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// `[[process]]` tables (at least 1).
    pub processes: u32,
    /// Thread bodies a process may have.
    pub threads: u32,
    /// Steps a thread body may have at its top level.
    pub steps: u32,
    /// The largest mapping or file, in bytes (at least a page).
    pub max_bytes: u64,
    pub cgroups: u32,
    pub files: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            processes: 3,
            threads: 3,
            steps: 8,
            max_bytes: 4 << 20,
            cgroups: 3,
            files: 2,
        }
    }
}

const PAGE: u64 = 4096;

struct G {
    rng: Pcg64,
    lim: Limits,
}

impl G {
    fn pages(&mut self) -> u64 {
        let max = (self.lim.max_bytes / PAGE).max(1);
        self.rng.gen_range(1..=max) * PAGE
    }

    fn size(&mut self) -> String {
        let b = self.pages();
        if b.is_multiple_of(1 << 20) && self.rng.gen_bool(0.5) {
            format!("\"{}M\"", b >> 20)
        } else if self.rng.gen_bool(0.5) {
            format!("\"{}k\"", b >> 10)
        } else {
            b.to_string()
        }
    }

    fn pattern(&mut self) -> &'static str {
        const P: &[&str] = &[
            "seq",
            "random",
            "zipf:0.99",
            "zipf:1.2",
            "ycsb",
            "ycsb:0.8",
            "nurand:255",
            "hotcold:90/10",
            "hotcold:80/20",
            "stride:16",
            "stride:3",
        ];
        P[self.rng.gen_range(0..P.len())]
    }

    fn amount(&mut self) -> String {
        match self.rng.gen_range(0..4) {
            0 => String::new(),
            1 => format!(", passes = {}", self.rng.gen_range(1..=2)),
            2 => format!(", accesses = {}", self.rng.gen_range(1..=2000)),
            _ => format!(", duration = \"{}ms\"", self.rng.gen_range(1..=20)),
        }
    }

    fn think(&mut self) -> String {
        if self.rng.gen_bool(0.2) {
            format!(", think = \"{}us\"", self.rng.gen_range(1..=100))
        } else {
            String::new()
        }
    }
}

/// A use of `map` (bound): a touch or a madvise.
fn use_map(g: &mut G, out: &mut String, ind: &str, map: &str) {
    if g.rng.gen_bool(0.8) {
        let write = g.rng.gen_bool(0.5);
        let (p, a, t) = (g.pattern(), g.amount(), g.think());
        let _ = writeln!(
            out,
            "{ind}{{ op = \"touch\", map = \"{map}\", pattern = \"{p}\", write = {write}{a}{t} }},"
        );
    } else {
        const A: &[&str] = &[
            "normal", "random", "willneed", "dontneed", "cold", "pageout",
        ];
        let a = A[g.rng.gen_range(0..A.len())];
        let _ = writeln!(
            out,
            "{ind}{{ op = \"madvise\", map = \"{map}\", advice = \"{a}\" }},"
        );
    }
}

/// A step that needs no map: file I/O, a pause, a computation.
fn plain(g: &mut G, out: &mut String, ind: &str, files: &[(String, bool)]) {
    let k = g.rng.gen_range(0..if files.is_empty() { 2 } else { 6 });
    match k {
        0 => {
            let _ = writeln!(
                out,
                "{ind}{{ op = \"sleep\", time = \"{}ms\" }},",
                g.rng.gen_range(1..=50)
            );
        }
        1 => {
            let _ = writeln!(
                out,
                "{ind}{{ op = \"compute\", time = \"{}us\" }},",
                g.rng.gen_range(1..=500)
            );
        }
        2 | 3 => {
            let (f, _) = &files[g.rng.gen_range(0..files.len())];
            let op = if g.rng.gen_bool(0.5) { "read" } else { "write" };
            let bs = [4096u64, 8192, 65536][g.rng.gen_range(0..3)];
            let (mut p, t) = (g.pattern(), g.think());
            // Some sequential writes append (writes only), without a draw
            // of their own so that the other generated files stay as they were.
            if op == "write" && p == "seq" && bs == 8192 {
                p = "append";
            }
            let amount = match g.rng.gen_range(0..3) {
                0 => format!(", accesses = {}", g.rng.gen_range(1..=500)),
                1 => format!(", amount = \"{}k\"", bs / 1024 * g.rng.gen_range(1..=64)),
                _ => String::new(),
            };
            let direct = if g.rng.gen_bool(0.1) {
                ", direct = true"
            } else {
                ""
            };
            let _ = writeln!(out, "{ind}{{ op = \"{op}\", file = \"{f}\", bs = {bs}, pattern = \"{p}\"{amount}{direct}{t} }},");
        }
        4 => {
            let (f, _) = &files[g.rng.gen_range(0..files.len())];
            let _ = writeln!(out, "{ind}{{ op = \"fsync\", file = \"{f}\" }},");
        }
        _ => {
            let (f, _) = &files[g.rng.gen_range(0..files.len())];
            const A: &[&str] = &[
                "normal",
                "sequential",
                "random",
                "willneed",
                "dontneed",
                "noreuse",
            ];
            let a = A[g.rng.gen_range(0..A.len())];
            let _ = writeln!(
                out,
                "{ind}{{ op = \"fadvise\", file = \"{f}\", advice = \"{a}\" }},"
            );
        }
    }
}

/// One thread body's steps; `barriers` are the barrier names this body
/// takes part in, placed in order at random top-level positions.
fn body(g: &mut G, out: &mut String, files: &[(String, bool)], barriers: &[String]) {
    let n = g.rng.gen_range(1..=g.lim.steps.max(1));
    let mut bound: Vec<String> = Vec::new();
    let mut next_map = 0;
    let mut slots: Vec<u32> = barriers.iter().map(|_| g.rng.gen_range(0..=n)).collect();
    slots.sort_unstable();
    let mut bi = 0;
    let ind = "  ";
    out.push_str("steps = [\n");
    for i in 0..=n {
        while bi < slots.len() && slots[bi] == i {
            let _ = writeln!(
                out,
                "{ind}{{ op = \"barrier\", name = \"{}\" }},",
                barriers[bi]
            );
            bi += 1;
        }
        if i == n {
            break;
        }
        match g.rng.gen_range(0..10) {
            0 | 1 => {
                let map = format!("m{next_map}");
                next_map += 1;
                if !files.is_empty() && g.rng.gen_bool(0.3) {
                    let (f, _) = &files[g.rng.gen_range(0..files.len())];
                    let private = g.rng.gen_bool(0.3);
                    let _ = writeln!(out, "{ind}{{ op = \"mmap_file\", map = \"{map}\", file = \"{f}\", private = {private} }},");
                } else {
                    let s = g.size();
                    let _ = writeln!(
                        out,
                        "{ind}{{ op = \"mmap_anon\", map = \"{map}\", size = {s} }},"
                    );
                }
                bound.push(map);
            }
            2..=4 if !bound.is_empty() => {
                let m = bound[g.rng.gen_range(0..bound.len())].clone();
                use_map(g, out, ind, &m);
            }
            5 if !bound.is_empty() => {
                let m = bound.swap_remove(g.rng.gen_range(0..bound.len()));
                let op = if g.rng.gen_bool(0.5) {
                    "munmap"
                } else {
                    "free"
                };
                let _ = writeln!(out, "{ind}{{ op = \"{op}\", map = \"{m}\" }},");
            }
            6 => {
                // A loop over steps that leave the maps as they were.
                let count = g.rng.gen_range(1..=3);
                let head = if g.rng.gen_bool(0.2) {
                    format!("duration = \"{}ms\"", g.rng.gen_range(1..=30))
                } else {
                    format!("count = {count}")
                };
                let _ = writeln!(out, "{ind}{{ op = \"loop\", {head}, steps = [");
                let inner = "    ";
                let k = g.rng.gen_range(1..=3);
                for _ in 0..k {
                    if !bound.is_empty() && g.rng.gen_bool(0.5) {
                        let m = bound[g.rng.gen_range(0..bound.len())].clone();
                        use_map(g, out, inner, &m);
                    } else if g.rng.gen_bool(0.5) {
                        let s = g.size();
                        let _ = writeln!(
                            out,
                            "{inner}{{ op = \"mmap_anon\", map = \"l{next_map}\", size = {s} }},"
                        );
                        use_map(g, out, inner, &format!("l{next_map}"));
                        let _ =
                            writeln!(out, "{inner}{{ op = \"munmap\", map = \"l{next_map}\" }},");
                        next_map += 1;
                    } else {
                        plain(g, out, inner, files);
                    }
                }
                let _ = writeln!(out, "{ind}] }},");
            }
            7 => {
                let count = g.rng.gen_range(1..=2);
                let wait = g.rng.gen_bool(0.7);
                let s = g.size();
                let _ = writeln!(
                    out,
                    "{ind}{{ op = \"fork\", count = {count}, wait = {wait}, steps = [\n\
                     {ind}  {{ op = \"mmap_anon\", map = \"c\", size = {s} }},\n\
                     {ind}  {{ op = \"touch\", map = \"c\", write = true }},\n\
                     {ind}] }},"
                );
            }
            _ => plain(g, out, ind, files),
        }
    }
    out.push_str("]\n");
}

/// A random valid scenario as TOML text, the same for the same `seed` and
/// `lim`.
pub fn random_scenario(seed: u64, lim: Limits) -> String {
    let mut g = G {
        rng: Pcg64::seed_from_u64(seed),
        lim,
    };
    let mut out = String::new();
    let _ = writeln!(out, "# random scenario, seed {seed}");
    let mem = g.rng.gen_range(16..=128u64);
    out.push_str("[machine]\n");
    let _ = writeln!(out, "memory = \"{mem}M\"");
    let swap = ["none", "zram:64M", "disk:64M"][g.rng.gen_range(0..3)];
    let _ = writeln!(out, "swap = \"{swap}\"");
    let lru = ["classic", "mglru"][g.rng.gen_range(0..2)];
    let _ = writeln!(out, "lru = \"{lru}\"");
    let _ = writeln!(
        out,
        "swappiness = {}",
        [0, 1, 60, 100, 200][g.rng.gen_range(0..5)]
    );
    let _ = writeln!(out, "seed = {}", g.rng.gen_range(0..1000u64));

    let mut cgroups: Vec<String> = Vec::new();
    for i in 0..g.rng.gen_range(0..=lim.cgroups) {
        let path = if !cgroups.is_empty() && g.rng.gen_bool(0.4) {
            let parent = cgroups[g.rng.gen_range(0..cgroups.len())].clone();
            format!("{parent}/g{i}")
        } else {
            format!("g{i}")
        };
        out.push_str("\n[[cgroup]]\n");
        let _ = writeln!(out, "path = \"{path}\"");
        if g.rng.gen_bool(0.7) {
            let key = ["max", "memory.max", "memory.limit_in_bytes"][g.rng.gen_range(0..3)];
            let _ = writeln!(out, "\"{key}\" = \"{}M\"", g.rng.gen_range(4..=64));
        }
        if g.rng.gen_bool(0.2) {
            let _ = writeln!(out, "high = \"{}M\"", g.rng.gen_range(4..=64));
        }
        if g.rng.gen_bool(0.2) {
            let _ = writeln!(out, "low = \"{}M\"", g.rng.gen_range(0..=8));
        }
        if g.rng.gen_bool(0.2) {
            let _ = writeln!(out, "swappiness = {}", g.rng.gen_range(0..=200));
        }
        if g.rng.gen_bool(0.2) {
            let _ = writeln!(out, "swap_max = \"{}M\"", g.rng.gen_range(0..=32));
        }
        if g.rng.gen_bool(0.2) {
            let _ = writeln!(out, "oom_group = true");
        }
        cgroups.push(path);
    }

    let mut files: Vec<(String, bool)> = Vec::new();
    for i in 0..g.rng.gen_range(0..=lim.files) {
        let tmpfs = g.rng.gen_bool(0.3);
        let s = g.size();
        out.push_str("\n[[file]]\n");
        let _ = writeln!(out, "name = \"f{i}\"\nsize = {s}");
        if tmpfs {
            out.push_str("fs = \"tmpfs\"\n");
        } else if g.rng.gen_bool(0.3) {
            out.push_str("prefill = false\n");
        }
        files.push((format!("f{i}"), tmpfs));
    }

    // Thread bodies: (process, body, copies).
    let nproc = g.rng.gen_range(1..=lim.processes.max(1));
    let mut shapes: Vec<(u32, Vec<u32>)> = Vec::new();
    for _ in 0..nproc {
        let count = g.rng.gen_range(1..=2);
        let nt = g.rng.gen_range(1..=lim.threads.max(1));
        shapes.push((count, (0..nt).map(|_| g.rng.gen_range(1..=2)).collect()));
    }
    // Barriers: each names a random set of bodies with two or more threads
    // in all; every member reaches them once, in the barriers' order.
    let bodies: Vec<(usize, usize, u32)> = shapes
        .iter()
        .enumerate()
        .flat_map(|(p, (c, ts))| ts.iter().enumerate().map(move |(t, tc)| (p, t, c * tc)))
        .collect();
    let mut member: Vec<Vec<String>> = vec![Vec::new(); bodies.len()];
    for b in 0..g.rng.gen_range(0..=2) {
        let picks: Vec<usize> = (0..bodies.len()).filter(|_| g.rng.gen_bool(0.5)).collect();
        if picks.iter().map(|&i| bodies[i].2).sum::<u32>() >= 2 {
            for i in picks {
                member[i].push(format!("b{b}"));
            }
        }
    }
    let mut bi = 0;
    for (p, (count, ts)) in shapes.iter().enumerate() {
        out.push_str("\n[[process]]\n");
        let _ = writeln!(out, "name = \"p{p}\"\ncount = {count}");
        if !cgroups.is_empty() && g.rng.gen_bool(0.7) {
            let _ = writeln!(
                out,
                "cgroup = \"{}\"",
                cgroups[g.rng.gen_range(0..cgroups.len())]
            );
        }
        if g.rng.gen_bool(0.2) {
            let _ = writeln!(out, "oom_score_adj = {}", g.rng.gen_range(-1000..=1000));
        }
        if ts.len() == 1 && ts[0] == 1 && g.rng.gen_bool(0.5) {
            body(&mut g, &mut out, &files, &member[bi]);
            bi += 1;
            continue;
        }
        for tc in ts {
            out.push_str("[[process.thread]]\n");
            let _ = writeln!(out, "count = {tc}");
            body(&mut g, &mut out, &files, &member[bi]);
            bi += 1;
        }
    }
    out
}
