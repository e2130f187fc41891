//! The scenario's cgroups in the kernel model.

use foliosim_workload::scenario::Scenario;

use super::err;
use crate::mm::memcontrol::MemcgId;
use crate::mm::vmscan::ReclaimPolicy;
use crate::mm::{Kernel, PAGE_SIZE};

/// Creates the scenario's cgroups under its root memcg and returns their
/// (path, memcg) in declaration order. The one place cgroups are set up:
/// with the memcg hierarchy (add_memcg_child and its knobs) this is what
/// changes. Until then the model's memcgs are flat with a hard limit, so
/// knobs it cannot honour are refused, not dropped.
pub fn setup_cgroups<P: ReclaimPolicy>(
    k: &mut Kernel<P>,
    root: MemcgId,
    sc: &Scenario,
) -> Result<Vec<(String, MemcgId)>, String> {
    let mut out: Vec<(String, MemcgId)> = Vec::new();
    if root != 0 && !sc.cgroups.is_empty() {
        return Err(format!(
            "{}: --memcg-limit with [[cgroup]]s needs the memcg hierarchy (not in this build): give the limits in the scenario",
            sc.file
        ));
    }
    for c in &sc.cgroups {
        let need = |knob: &str| {
            err(
                sc,
                c.line,
                knob,
                format!(
                    "cgroup '{}': needs the memcg hierarchy and its knobs (not in this build)",
                    c.path
                ),
            )
        };
        if c.high.is_some() {
            return Err(need("high"));
        }
        if c.low.is_some() {
            return Err(need("low"));
        }
        if c.min.is_some() {
            return Err(need("min"));
        }
        if c.swappiness.is_some() {
            return Err(need("swappiness"));
        }
        if c.swap_max.is_some() {
            return Err(need("swap_max"));
        }
        if c.memsw_limit.is_some() {
            return Err(need("memsw_limit"));
        }
        if c.oom_group {
            return Err(need("oom_group"));
        }
        if c.oom_kill_disable {
            return Err(need("oom_kill_disable"));
        }
        if let Some((parent, _)) = c.path.rsplit_once('/') {
            let p = sc.cgroups.iter().find(|p| p.path == parent);
            if p.is_some_and(|p| p.max.is_some()) || c.max.is_some() {
                return Err(need("max"));
            }
            if !out.iter().any(|(q, _)| q == parent) {
                return Err(err(
                    sc,
                    c.line,
                    "path",
                    format!("parent '{parent}' is not declared before it"),
                ));
            }
        }
        let id = k.add_memcg(&c.path, c.max.map(|b| b.div_ceil(PAGE_SIZE)));
        out.push((c.path.clone(), id));
    }
    Ok(out)
}
