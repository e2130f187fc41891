//! The scenario's cgroups in the kernel model.

use foliosim_workload::scenario::Scenario;

use super::err;
use crate::mm::memcontrol::{MemcgId, MemcgKnobs};
use crate::mm::vmscan::ReclaimPolicy;
use crate::mm::{Kernel, PAGE_SIZE};

/// Attaches the cache_ext policy `spec` to `memcg` (the classic LRU only).
pub fn attach_policy<P: ReclaimPolicy>(
    k: &mut Kernel<P>,
    memcg: MemcgId,
    spec: &str,
) -> Result<(), String> {
    let Some(ops) = crate::policy::new_policy(spec)? else {
        return Ok(());
    };
    if k.policy.name() != "classic" {
        return Err(format!(
            "policy {} needs the classic LRU (cache_ext does not hook MGLRU); use --lru classic",
            ops.name()
        ));
    }
    k.core.cache_ext_attach(memcg, ops)
}

/// Creates the scenario's cgroups under its root memcg and returns their
/// (path, memcg) in declaration order, parents first.
///
/// `root` is the scenario's own group, as the oracle makes one fresh group
/// and builds the scenario's hierarchy inside it: `--memcg-limit` is that
/// group's limit (the root's when there is no limit and no [[cgroup]]), so
/// it caps every cgroup of the scenario together, hierarchically, and the
/// processes without a cgroup run in it. Sizes are bytes / PAGE_SIZE,
/// rounded down as page_counter_memparse() does.
pub fn setup_cgroups<P: ReclaimPolicy>(
    k: &mut Kernel<P>,
    root: MemcgId,
    sc: &Scenario,
) -> Result<Vec<(String, MemcgId)>, String> {
    let mut out: Vec<(String, MemcgId)> = Vec::new();
    let pages = |b: Option<u64>| b.map(|b| b / PAGE_SIZE);
    for c in &sc.cgroups {
        let parent = match c.path.rsplit_once('/') {
            None => root,
            Some((parent, _)) => match out.iter().find(|(q, _)| q == parent) {
                Some(&(_, id)) => id,
                None => {
                    return Err(err(
                        sc,
                        c.line,
                        "path",
                        format!("parent '{parent}' is not declared before it"),
                    ))
                }
            },
        };
        let knobs = MemcgKnobs {
            max: pages(c.max),
            high: pages(c.high),
            low: pages(c.low),
            min: pages(c.min),
            swappiness: c.swappiness,
            swap_max: pages(c.swap_max),
            memsw_limit: pages(c.memsw_limit),
            oom_group: c.oom_group,
            oom_kill_disable: c.oom_kill_disable,
        };
        let id = k.add_memcg_child(parent, &c.path, knobs);
        if let Some(spec) = &c.policy {
            attach_policy(k, id, spec).map_err(|e| err(sc, c.line, "policy", e))?;
        }
        out.push((c.path.clone(), id));
    }
    Ok(out)
}
