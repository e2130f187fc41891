//! Cross-checks of a parsed scenario: the cgroup tree, unique names, the
//! maps each step names (bound by an earlier mmap step, followed through
//! the steps' order), and the barrier schedule, run abstractly until every
//! thread ends or none can move.

use super::parse::Cx;
use super::*;
use crate::fio::ParseError;
use std::collections::{BTreeMap, BTreeSet};

/// Barrier rounds the abstract run follows before it stops looking (a
/// schedule still live then is taken as sound; the runtime catches the
/// rest).
const BARRIER_ROUNDS: u64 = 100_000;

pub(crate) fn check(cx: &Cx, sc: &mut Scenario) -> Result<(), ParseError> {
    cgroups(cx, &mut sc.cgroups)?;
    let mut seen = BTreeMap::new();
    for f in &sc.files {
        if let Some(l) = seen.insert(f.name.as_str(), f.line) {
            return Err(cx.error_at(
                f.line,
                "name",
                format!("duplicate file '{}' (first at line {l})", f.name),
            ));
        }
    }
    let mut seen = BTreeMap::new();
    for p in &sc.processes {
        if let Some(l) = seen.insert(p.name.as_str(), p.line) {
            return Err(cx.error_at(
                p.line,
                "name",
                format!("duplicate process '{}' (first at line {l})", p.name),
            ));
        }
        maps(cx, p)?;
    }
    sc.barriers = barriers(cx, &sc.processes)?;
    Ok(())
}

/// Paths are checked as they are read; here: no duplicates, every parent
/// declared, and parents sorted before their children (the order cgroups
/// are created in).
fn cgroups(cx: &Cx, cgs: &mut [Cgroup]) -> Result<(), ParseError> {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for cg in cgs.iter() {
        if let Some(l) = seen.insert(cg.path.as_str(), cg.line) {
            return Err(cx.error_at(
                cg.line,
                "path",
                format!("duplicate cgroup '{}' (first at line {l})", cg.path),
            ));
        }
    }
    for cg in cgs.iter() {
        if let Some((parent, _)) = cg.path.rsplit_once('/') {
            if !seen.contains_key(parent) {
                return Err(cx.error_at(
                    cg.line,
                    "path",
                    format!("parent cgroup '{parent}' of '{}' is not declared (add a [[cgroup]] with path = \"{parent}\")", cg.path),
                ));
            }
        }
        // v1 refuses a memsw limit below the memory limit (-EINVAL).
        if let (Some(max), Some(memsw)) = (cg.max, cg.memsw_limit) {
            if memsw < max {
                return Err(cx.error_at(
                    cg.line,
                    "memsw_limit",
                    format!("memory.memsw.limit_in_bytes ({memsw}) is below memory.limit_in_bytes ({max}): the kernel refuses it"),
                ));
            }
        }
    }
    cgs.sort_by_key(|c| c.path.matches('/').count());
    Ok(())
}

/// A thread's name in messages: the process, and the body's index when it
/// has several.
fn thread_label(p: &Process, i: usize) -> String {
    if p.threads.len() == 1 {
        p.name.clone()
    } else {
        format!("{}.thread[{i}]", p.name)
    }
}

fn op_map(op: &Op) -> Option<&str> {
    match op {
        Op::Touch(TouchStep { map, .. }) | Op::Munmap { map } | Op::Madvise { map, .. } => {
            Some(map)
        }
        _ => None,
    }
}

/// Maps created by a body's steps (not its forked children's).
fn created(steps: &[Step], out: &mut BTreeSet<String>) {
    for s in steps {
        match &s.op {
            Op::MmapAnon { map, .. } | Op::MmapFile(MmapFileStep { map, .. }) => {
                out.insert(map.clone());
            }
            Op::Loop { steps, .. } => created(steps, out),
            _ => {}
        }
    }
}

/// Every map a step uses must be bound first: by an earlier mmap step of
/// the same thread body (followed in order, through loops and munmaps), or
/// by another one-thread body of the process (order between threads is
/// decided at run time).
fn maps(cx: &Cx, p: &Process) -> Result<(), ParseError> {
    for (i, th) in p.threads.iter().enumerate() {
        // A body with count > 1 binds one mapping per thread under each
        // name, so only one-thread bodies lend names to the others.
        let mut others = BTreeSet::new();
        for (j, o) in p.threads.iter().enumerate() {
            if j != i && o.count == 1 {
                created(&o.steps, &mut others);
            }
        }
        let mut st = MapState::default();
        walk(cx, &th.steps, &mut st, &others, false)?;
    }
    Ok(())
}

#[derive(Default, Clone)]
struct MapState {
    bound: BTreeMap<String, usize>,
    unmapped: BTreeMap<String, usize>,
    exited: Option<usize>,
}

fn walk(
    cx: &Cx,
    steps: &[Step],
    st: &mut MapState,
    others: &BTreeSet<String>,
    in_fork: bool,
) -> Result<(), ParseError> {
    for s in steps {
        if let Some(l) = st.exited {
            return Err(cx.error_at(
                s.line,
                "op",
                format!("never runs: it follows the exit step at line {l}"),
            ));
        }
        match &s.op {
            Op::MmapAnon { map, .. } | Op::MmapFile(MmapFileStep { map, .. }) => {
                if let Some(l) = st.bound.get(map) {
                    return Err(cx.error_at(
                        s.line,
                        "map",
                        format!("map '{map}' is already mapped (line {l}); munmap it first"),
                    ));
                }
                st.bound.insert(map.clone(), s.line);
                st.unmapped.remove(map);
            }
            Op::Loop {
                count,
                duration_ns,
                steps,
            } => {
                walk(cx, steps, st, others, in_fork)?;
                // A second pass finds what the first iteration leaves
                // behind (a map unmapped at the end and used again).
                if count.is_some_and(|c| c > 1) || duration_ns.is_some() {
                    walk(cx, steps, st, others, in_fork)?;
                }
            }
            Op::Fork { steps, .. } => {
                // A forked child starts with no mappings (see Op::Fork).
                let mut child = MapState::default();
                walk(cx, steps, &mut child, &BTreeSet::new(), true)?;
            }
            Op::Barrier { .. } if in_fork => {
                return Err(cx.error_at(
                    s.line,
                    "name",
                    "a barrier inside fork is not supported (barrier parties are the scenario's threads, counted before the run)".into(),
                ));
            }
            Op::Exit => st.exited = Some(s.line),
            op => {
                if let Some(map) = op_map(op) {
                    let ok = st.bound.contains_key(map) || (!in_fork && others.contains(map));
                    if !ok {
                        let why = if let Some(l) = st.unmapped.get(map) {
                            format!("map '{map}' was unmapped at line {l}")
                        } else if in_fork {
                            format!("map '{map}' is not mapped in this forked child (a child starts with no mappings)")
                        } else {
                            format!("map '{map}' is not mapped by an earlier mmap_anon or mmap_file step of this thread or another one-thread body of the process")
                        };
                        return Err(cx.error_at(s.line, "map", why));
                    }
                    if let Op::Munmap { .. } = op {
                        if st.bound.remove(map).is_some() {
                            st.unmapped.insert(map.to_string(), s.line);
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

fn has_barrier(steps: &[Step]) -> bool {
    steps.iter().any(|s| match &s.op {
        Op::Barrier { .. } => true,
        Op::Loop { steps, .. } => has_barrier(steps),
        _ => false,
    })
}

/// Barrier steps of a body, with whether each sits inside a duration loop.
fn barrier_sites(steps: &[Step], in_duration: bool, out: &mut Vec<(String, usize, bool)>) {
    for s in steps {
        match &s.op {
            Op::Barrier { name } => out.push((name.clone(), s.line, in_duration)),
            Op::Loop {
                duration_ns, steps, ..
            } => barrier_sites(steps, in_duration || duration_ns.is_some(), out),
            _ => {}
        }
    }
}

/// Walks a body's barrier arrivals one by one, expanding counted loops
/// lazily; a duration loop counts as one iteration (its partners are all
/// inside duration loops too, see `barriers`).
struct Cursor<'a> {
    frames: Vec<(&'a [Step], usize, u64)>,
}

impl<'a> Cursor<'a> {
    fn new(steps: &'a [Step]) -> Self {
        Cursor {
            frames: vec![(steps, 0, 1)],
        }
    }

    fn next(&mut self) -> Option<(&'a str, usize)> {
        loop {
            let (steps, idx, left) = self.frames.last_mut()?;
            if *idx == steps.len() {
                *left -= 1;
                if *left == 0 {
                    self.frames.pop();
                } else {
                    *idx = 0;
                }
                continue;
            }
            let s = &steps[*idx];
            *idx += 1;
            match &s.op {
                Op::Barrier { name } => return Some((name, s.line)),
                Op::Loop {
                    count,
                    duration_ns,
                    steps,
                } if has_barrier(steps) => {
                    let n = if duration_ns.is_some() {
                        1
                    } else {
                        count.unwrap_or(1)
                    };
                    self.frames.push((steps, 0, n));
                }
                Op::Exit => {
                    self.frames.clear();
                    return None;
                }
                _ => {}
            }
        }
    }
}

fn barriers(cx: &Cx, procs: &[Process]) -> Result<Vec<Barrier>, ParseError> {
    // One group per thread body: its identical threads (process count x
    // thread count) arrive together, since a round needs all of them.
    struct Group<'a> {
        label: String,
        copies: u64,
        steps: &'a [Step],
    }
    let mut groups = Vec::new();
    for p in procs {
        for (i, th) in p.threads.iter().enumerate() {
            groups.push(Group {
                label: thread_label(p, i),
                copies: p.count as u64 * th.count as u64,
                steps: &th.steps,
            });
        }
    }
    // name -> (parties, groups naming it, first site)
    let mut named: BTreeMap<String, (u64, BTreeSet<usize>)> = BTreeMap::new();
    let mut sites: BTreeMap<String, Vec<(usize, usize, bool)>> = BTreeMap::new();
    for (g, grp) in groups.iter().enumerate() {
        let mut v = Vec::new();
        barrier_sites(grp.steps, false, &mut v);
        for (name, line, dur) in v {
            let e = named.entry(name.clone()).or_default();
            if e.1.insert(g) {
                e.0 += grp.copies;
            }
            sites.entry(name).or_default().push((g, line, dur));
        }
    }
    for (name, (parties, gs)) in &named {
        let s = &sites[name];
        if *parties < 2 {
            let g = *gs.iter().next().unwrap_or(&0);
            return Err(cx.error_at(
                s[0].1,
                "name",
                format!("barrier '{name}' is reached only by thread {} (a barrier needs two or more threads)", groups[g].label),
            ));
        }
        // In a duration loop the number of rounds depends on time: every
        // arrival must then be inside one, or the partners' counts differ.
        if let (Some(d), Some(o)) = (s.iter().find(|x| x.2), s.iter().find(|x| !x.2)) {
            return Err(cx.error_at(
                d.1,
                "name",
                format!(
                    "barrier '{name}' is inside a duration loop in thread {} but thread {} reaches it outside one (line {}): their rounds cannot match",
                    groups[d.0].label, groups[o.0].label, o.1
                ),
            ));
        }
    }
    // The abstract run.
    let mut cursors: Vec<Cursor> = groups.iter().map(|g| Cursor::new(g.steps)).collect();
    let mut at: Vec<Option<(&str, usize)>> = cursors.iter_mut().map(|c| c.next()).collect();
    let mut rounds = 0u64;
    loop {
        if at.iter().all(Option::is_none) {
            break;
        }
        let mut moved = false;
        for (name, (_, gs)) in &named {
            if gs.iter().all(|&g| at[g].is_some_and(|(b, _)| b == name)) {
                for &g in gs {
                    at[g] = cursors[g].next();
                }
                moved = true;
                rounds += 1;
            }
        }
        if !moved {
            let mut why = Vec::new();
            let mut first_line = None;
            for (g, a) in at.iter().enumerate() {
                let Some((b, line)) = a else { continue };
                first_line.get_or_insert(*line);
                let missing: Vec<String> = named[*b]
                    .1
                    .iter()
                    .filter(|&&o| at[o].is_none_or(|(ob, _)| ob != *b))
                    .map(|&o| match at[o] {
                        Some((ob, ol)) => {
                            format!("{} (waiting at '{ob}', line {ol})", groups[o].label)
                        }
                        None => format!("{} (ended)", groups[o].label),
                    })
                    .collect();
                why.push(format!(
                    "{} waits at '{b}' (line {line}) for {}",
                    groups[g].label,
                    missing.join(", ")
                ));
            }
            return Err(cx.error_at(
                first_line.unwrap_or(1),
                "barrier",
                format!("barriers can never complete: {}", why.join("; ")),
            ));
        }
        if rounds >= BARRIER_ROUNDS {
            break;
        }
    }
    Ok(named
        .into_iter()
        .map(|(name, (parties, _))| Barrier {
            name,
            parties: parties.min(u32::MAX as u64) as u32,
        })
        .collect())
}
