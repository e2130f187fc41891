//! Page-cache policies for cache_ext ([`crate::mm::cache_ext`]): user
//! programs (cache_ext's BPF policies), so they live outside `mm`. One
//! file per policy (FIFO and MRU share one), written from the behaviour
//! of cache_ext's published policies (cache-ext/cache_ext,
//! policies/*.bpf.c).
//!
//! A policy is selected by a spec `NAME[:key=val,...]`; `default` means no
//! policy (the kernel's LRU alone).

pub mod admit_filter;
pub mod fifo_mru;
pub mod get_scan;
pub mod lfu;
pub mod lhd;
pub mod lhd_model;
pub mod mglru_bpf;
pub mod mglru_bpf_model;
pub mod s3fifo;

use crate::mm::cache_ext::CacheExtOps;

/// A parsed `NAME[:key=val,...]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicySpec {
    pub name: String,
    pub args: Vec<(String, String)>,
}

/// The registry: name, one-line description, keys accepted.
const POLICIES: &[(&str, &str, &[&str])] = &[
    ("fifo", "evict in insertion order", &[]),
    ("mru", "evict the most recently used first", &[]),
    ("lfu", "least frequently used, by sampling", &["sample"]),
    (
        "s3fifo",
        "S3-FIFO: small and main FIFOs with a ghost set",
        &[],
    ),
    (
        "get-scan",
        "evict the scan thread's folios first",
        &["scan", "scan_min"],
    ),
    (
        "admit-filter",
        "bypass the cache for a task or large reads (FIFO eviction)",
        &["comm", "max"],
    ),
    (
        "lhd",
        "least hit density (LHD), sampled in groups of 16",
        &["reconfig"],
    ),
    (
        "mglru-bpf",
        "cache_ext's port of MGLRU: generations, tiers, PID controller",
        &[],
    ),
];

/// Builds a fresh instance of a policy registered at run time.
pub type ExternalPolicy =
    std::sync::Arc<dyn Fn() -> Result<Box<dyn CacheExtOps>, String> + Send + Sync>;

/// Policies registered at run time under `py:NAME` (the Python package's:
/// a policy class written in Python). Process-wide, as the spec that names
/// one travels through command lines and scenario files.
static EXTERNAL: std::sync::Mutex<std::collections::BTreeMap<String, ExternalPolicy>> =
    std::sync::Mutex::new(std::collections::BTreeMap::new());

/// The prefix of run-time policies' specs.
pub const EXTERNAL_PREFIX: &str = "py:";

fn registry() -> std::sync::MutexGuard<'static, std::collections::BTreeMap<String, ExternalPolicy>>
{
    EXTERNAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Registers (or replaces) `py:NAME`. NAME: letters, digits, `_`, `-`, `.`.
pub fn register_external(name: &str, build: ExternalPolicy) -> Result<(), String> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        return Err(format!(
            "policy name {name:?}: use letters, digits, '_', '-' and '.'"
        ));
    }
    registry().insert(name.to_string(), build);
    Ok(())
}

/// Removes `py:NAME` (no-op if absent).
pub fn unregister_external(name: &str) {
    registry().remove(name);
}

fn external(name: &str) -> Option<ExternalPolicy> {
    registry().get(name).cloned()
}

fn unknown_external(name: &str) -> String {
    format!(
        "unknown policy \"{EXTERNAL_PREFIX}{name}\": no Python policy registered under that name \
         (Python policies run from the foliosim package: foliosim.run(..., machine={{\"policy\": MyPolicy}}))"
    )
}

/// The names `--policy` accepts, `default` first.
pub fn policy_names() -> Vec<&'static str> {
    std::iter::once("default")
        .chain(POLICIES.iter().map(|p| p.0))
        .collect()
}

/// One line listing the policies, for errors and `--policy help`.
pub fn policy_help() -> String {
    format!("policies: {}", policy_names().join(", "))
}

impl PolicySpec {
    /// Parses a spec; errors name what is wrong (the caller adds the
    /// option or file and line).
    pub fn parse(spec: &str) -> Result<PolicySpec, String> {
        if let Some(rest) = spec.trim().strip_prefix(EXTERNAL_PREFIX) {
            let (name, keys) = match rest.split_once(':') {
                Some((n, k)) => (n.trim(), Some(k)),
                None => (rest.trim(), None),
            };
            if external(name).is_none() {
                return Err(unknown_external(name));
            }
            if keys.is_some() {
                return Err(format!(
                    "policy {EXTERNAL_PREFIX}{name}: takes no keys (configure the Python object)"
                ));
            }
            return Ok(PolicySpec {
                name: format!("{EXTERNAL_PREFIX}{name}"),
                args: Vec::new(),
            });
        }
        let (name, rest) = match spec.split_once(':') {
            Some((n, r)) => (n, Some(r)),
            None => (spec, None),
        };
        let name = name.trim();
        if name != "default" && !POLICIES.iter().any(|p| p.0 == name) {
            return Err(format!("unknown policy {name:?} ({})", policy_help()));
        }
        let mut args = Vec::new();
        if let Some(rest) = rest {
            for kv in rest.split(',') {
                let Some((k, v)) = kv.split_once('=') else {
                    return Err(format!("policy {name}: expected key=value, got {kv:?}"));
                };
                let (k, v) = (k.trim(), v.trim());
                let keys = POLICIES
                    .iter()
                    .find(|p| p.0 == name)
                    .map(|p| p.2)
                    .unwrap_or(&[]);
                if !keys.contains(&k) {
                    return Err(if keys.is_empty() {
                        format!("policy {name}: takes no keys, got {k:?}")
                    } else {
                        format!(
                            "policy {name}: unknown key {k:?} (keys: {})",
                            keys.join(", ")
                        )
                    });
                }
                if args.iter().any(|(a, _): &(String, String)| a == k) {
                    return Err(format!("policy {name}: key {k:?} given twice"));
                }
                args.push((k.to_string(), v.to_string()));
            }
        }
        Ok(PolicySpec {
            name: name.to_string(),
            args,
        })
    }

    pub fn is_default(&self) -> bool {
        self.name == "default"
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.args
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// A numeric key, or its default.
    pub fn get_u64(&self, key: &str, default: u64) -> Result<u64, String> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => crate::policy::parse_u64(v)
                .ok_or_else(|| format!("policy {}: {key}: not a number: {v:?}", self.name)),
        }
    }

    /// Builds the policy; None for `default`.
    pub fn build(&self) -> Result<Option<Box<dyn CacheExtOps>>, String> {
        if let Some(name) = self.name.strip_prefix(EXTERNAL_PREFIX) {
            let build = external(name).ok_or_else(|| unknown_external(name))?;
            return build().map(Some);
        }
        Ok(Some(match self.name.as_str() {
            "default" => return Ok(None),
            "fifo" => Box::new(fifo_mru::OneList::fifo()),
            "mru" => Box::new(fifo_mru::OneList::mru()),
            "lfu" => {
                let n = self.get_u64("sample", 20)?;
                // list_sample takes at most 2048 folios for 32 candidates.
                if n == 0 || n > 64 {
                    return Err(format!("policy lfu: sample: {n} is not in 1..=64"));
                }
                Box::new(lfu::Lfu::new(n as usize))
            }
            "s3fifo" => Box::new(s3fifo::S3Fifo::default()),
            "get-scan" => {
                let min = self.get_u64("scan_min", get_scan::SCAN_MIN as u64)?;
                if min == 0 || min > i64::MAX as u64 {
                    return Err(format!("policy get-scan: scan_min: {min} is not >= 1"));
                }
                Box::new(get_scan::GetScan::new(
                    self.get("scan").unwrap_or("scan"),
                    min as i64,
                ))
            }
            "admit-filter" => {
                let max =
                    match self.get("max") {
                        None => None,
                        Some(v) => Some(parse_u64(v).ok_or_else(|| {
                            format!("policy admit-filter: max: not a size: {v:?}")
                        })?),
                    };
                Box::new(admit_filter::AdmitFilter::new(
                    self.get("comm").map(str::to_string),
                    max,
                ))
            }
            "lhd" => Box::new(lhd::Lhd::new(
                self.get_u64("reconfig", lhd_model::REQS_PER_RECONFIG)?
                    .max(1),
            )),
            "mglru-bpf" => Box::new(mglru_bpf::MglruBpf::default()),
            other => return Err(format!("unknown policy {other:?} ({})", policy_help())),
        }))
    }
}

/// Parses and builds a spec in one go.
pub fn new_policy(spec: &str) -> Result<Option<Box<dyn CacheExtOps>>, String> {
    PolicySpec::parse(spec)?.build()
}

/// Decimal with an optional k/m/g (binary) suffix.
/// What cache_ext's policies test before choosing a folio
/// (folio_test_uptodate, _lru, _dirty, _writeback in their BPF code): a
/// folio the kernel could reclaim now.
#[inline]
pub(crate) fn evictable(f: &crate::mm::folio::Folio) -> bool {
    use crate::mm::folio::pg;
    f.test(pg::UPTODATE) && f.test(pg::LRU) && !f.test(pg::DIRTY) && !f.test(pg::WRITEBACK)
}

pub(crate) fn parse_u64(v: &str) -> Option<u64> {
    let v = v.trim();
    let (num, mult) = match v.char_indices().last()? {
        (i, 'k' | 'K') => (&v[..i], 1u64 << 10),
        (i, 'm' | 'M') => (&v[..i], 1 << 20),
        (i, 'g' | 'G') => (&v[..i], 1 << 30),
        _ => (v, 1),
    };
    num.parse::<u64>().ok()?.checked_mul(mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_parsing_and_errors() {
        assert!(PolicySpec::parse("default").unwrap().is_default());
        assert!(new_policy("default").unwrap().is_none());
        assert_eq!(new_policy("fifo").unwrap().unwrap().name(), "fifo");
        let e = PolicySpec::parse("lru2").unwrap_err();
        assert!(
            e.contains("unknown policy \"lru2\"") && e.contains("fifo"),
            "{e}"
        );
        let e = PolicySpec::parse("fifo:x=1").unwrap_err();
        assert!(e.contains("takes no keys"), "{e}");
        let e = PolicySpec::parse("fifo:x").unwrap_err();
        assert!(e.contains("key=value"), "{e}");
        assert_eq!(parse_u64("4k"), Some(4096));
    }

    #[test]
    fn run_time_policies_register_build_and_go() {
        let e = PolicySpec::parse("py:t_reg").unwrap_err();
        assert!(e.contains("unknown policy \"py:t_reg\""), "{e}");
        let built = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let b = built.clone();
        register_external(
            "t_reg",
            std::sync::Arc::new(move || {
                b.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Ok(Box::new(fifo_mru::OneList::fifo()) as Box<dyn CacheExtOps>)
            }),
        )
        .unwrap();
        let spec = PolicySpec::parse("py:t_reg").unwrap();
        assert_eq!(spec.name, "py:t_reg");
        assert_eq!(spec.build().unwrap().unwrap().name(), "fifo");
        assert_eq!(built.load(std::sync::atomic::Ordering::Relaxed), 1);
        let e = PolicySpec::parse("py:t_reg:x=1").unwrap_err();
        assert!(e.contains("takes no keys"), "{e}");
        assert!(register_external("a b", std::sync::Arc::new(|| Err("x".into()))).is_err());
        register_external("t_fail", std::sync::Arc::new(|| Err("boom".into()))).unwrap();
        assert_eq!(new_policy("py:t_fail").err(), Some("boom".to_string()));
        unregister_external("t_reg");
        unregister_external("t_fail");
        assert!(PolicySpec::parse("py:t_reg").is_err());
        assert_eq!(parse_u64("x"), None);
    }
}
