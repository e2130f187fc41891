//! Machine profiles: one measured machine's CPU costs and disk, as
//! `foliosim oracle calibrate` writes them (docs/calibration.md). The
//! model's defaults (CpuCosts::default(), the "virtio" device) are the
//! reference machine's profile, embedded at build time and parsed once.

use super::blkdev::DeviceProfile;
use super::CpuCosts;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::OnceLock;

/// The reference machine's profile: the VM this project's oracle runs on.
pub const REFERENCE_TOML: &str = include_str!("../../profiles/reference-vm.toml");
pub const REFERENCE_FILE: &str = "crates/foliosim/profiles/reference-vm.toml";

/// One value, its unit and how it was obtained.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub value: u64,
    pub unit: String,
    pub method: String,
}

/// The machine a profile was measured on.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MachineInfo {
    pub name: String,
    pub cpu: String,
    pub vcpus: u32,
    pub ram_bytes: u64,
    pub virtualization: String,
    pub kernel: String,
    pub date: String,
    pub scratch: String,
    pub fio: String,
    pub measured_by: String,
}

/// The machine's disk, as the model's DeviceProfile.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DeviceEntries {
    pub about: String,
    pub latency_ns: Entry,
    pub bw_bytes_per_s: Entry,
    pub queue_depth: Entry,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MachineProfile {
    pub machine: MachineInfo,
    pub device: DeviceEntries,
    /// Every CpuCosts field by name.
    pub cpu_costs: BTreeMap<String, Entry>,
}

impl MachineProfile {
    /// Parses and checks a profile (every CpuCosts field present, no
    /// other); errors name `file`, with the line where TOML gives one.
    pub fn parse(text: &str, file: &str) -> Result<MachineProfile, String> {
        let p: MachineProfile = toml::from_str(text).map_err(|e| {
            let line = e
                .span()
                .map(|s| format!(": line {}", text[..s.start].lines().count().max(1)));
            let msg = e.message().lines().next().unwrap_or("").to_string();
            format!("{file}{}: {msg}", line.unwrap_or_default())
        })?;
        p.try_cpu_costs()
            .map_err(|e| format!("{file}: [cpu_costs]: {e}"))?;
        if p.device.bw_bytes_per_s.value == 0 || p.device.queue_depth.value == 0 {
            return Err(format!(
                "{file}: [device]: bandwidth and queue depth must be above 0"
            ));
        }
        Ok(p)
    }

    fn try_cpu_costs(&self) -> Result<CpuCosts, String> {
        let m: serde_json::Map<String, serde_json::Value> = self
            .cpu_costs
            .iter()
            .map(|(k, e)| (k.clone(), e.value.into()))
            .collect();
        serde_json::from_value(m.into()).map_err(|e| e.to_string())
    }

    pub fn cpu_costs(&self) -> CpuCosts {
        self.try_cpu_costs().expect("checked by parse")
    }

    /// The machine's disk; named "virtio" for the reference machine's,
    /// "profile" for another's.
    pub fn device(&self, name: &'static str) -> DeviceProfile {
        DeviceProfile {
            name,
            latency_ns: self.device.latency_ns.value,
            bw_bytes_per_s: self.device.bw_bytes_per_s.value,
            queue_depth: self.device.queue_depth.value.min(u32::MAX as u64) as u32,
            pressure_latency_ns: None,
        }
    }

    /// One line naming the machine: name, CPU, vCPUs, virtualisation,
    /// kernel, date.
    pub fn describe(&self) -> String {
        let m = &self.machine;
        format!(
            "{}: {}, {} vCPUs, {}, Linux {}, measured {}",
            m.name, m.cpu, m.vcpus, m.virtualization, m.kernel, m.date
        )
    }

    /// The profile as TOML, CpuCosts's fields in declaration order.
    pub fn to_toml(&self) -> String {
        let mut s = String::from(
            "# A foliosim machine profile (docs/calibration.md): every value with\n\
             # its unit and how it was measured. Written by `foliosim oracle calibrate`.\n\n[machine]\n",
        );
        let m = &self.machine;
        for (k, v) in [
            ("name", &m.name),
            ("cpu", &m.cpu),
            ("virtualization", &m.virtualization),
            ("kernel", &m.kernel),
            ("date", &m.date),
            ("scratch", &m.scratch),
            ("fio", &m.fio),
            ("measured_by", &m.measured_by),
        ] {
            let _ = writeln!(s, "{k} = {}", quote(v));
        }
        let _ = writeln!(s, "vcpus = {}\nram_bytes = {}", m.vcpus, m.ram_bytes);
        let _ = writeln!(s, "\n[device]\nabout = {}", quote(&self.device.about));
        let d = &self.device;
        for (k, e) in [
            ("latency_ns", &d.latency_ns),
            ("bw_bytes_per_s", &d.bw_bytes_per_s),
            ("queue_depth", &d.queue_depth),
        ] {
            entry(&mut s, &format!("device.{k}"), e);
        }
        for k in CPU_COST_FIELDS {
            if let Some(e) = self.cpu_costs.get(*k) {
                entry(&mut s, &format!("cpu_costs.{k}"), e);
            }
        }
        s
    }
}

fn entry(s: &mut String, table: &str, e: &Entry) {
    let _ = writeln!(
        s,
        "\n[{table}]\nvalue = {}\nunit = {}\nmethod = {}",
        e.value,
        quote(&e.unit),
        quote(&e.method)
    );
}

/// A TOML basic string.
fn quote(v: &str) -> String {
    let mut q = String::with_capacity(v.len() + 2);
    q.push('"');
    for c in v.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            '\t' => q.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(q, "\\u{:04X}", c as u32);
            }
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

/// CpuCosts's fields in declaration order, the order a profile lists them.
pub const CPU_COST_FIELDS: &[&str] = &[
    "syscall",
    "copy_page",
    "minor_fault",
    "map_page",
    "page_alloc",
    "scan_folio",
    "isolate_lru_folio",
    "folio_referenced",
    "shrink_inactive_list",
    "shrink_active_list",
    "tlb_flush",
    "do_try_to_free_pages",
    "range_entry",
    "reclaim_folio",
    "touch_mapped",
    "fio_io",
    "create",
    "stat",
    "unlink",
    "fallocate",
    "zram_compress",
    "zram_decompress",
];

/// The reference machine's profile, parsed on first use.
pub fn reference() -> &'static MachineProfile {
    static P: OnceLock<MachineProfile> = OnceLock::new();
    P.get_or_init(|| {
        MachineProfile::parse(REFERENCE_TOML, REFERENCE_FILE)
            .expect("the embedded reference profile parses")
    })
}

/// The reference machine's CPU costs (CpuCosts::default()), converted once.
pub fn reference_costs() -> CpuCosts {
    static C: OnceLock<CpuCosts> = OnceLock::new();
    *C.get_or_init(|| reference().cpu_costs())
}

/// Reads a profile file.
pub fn load(path: &std::path::Path) -> Result<MachineProfile, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    MachineProfile::parse(&text, &path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_profile_names_its_machine_and_every_cost() {
        let p = reference();
        assert!(!p.machine.kernel.is_empty() && !p.machine.date.is_empty());
        let keys: Vec<&str> = p.cpu_costs.keys().map(String::as_str).collect();
        let mut fields = CPU_COST_FIELDS.to_vec();
        fields.sort_unstable();
        assert_eq!(keys, fields);
        for f in CPU_COST_FIELDS {
            let e = &p.cpu_costs[*f];
            assert!(!e.method.is_empty() && !e.unit.is_empty(), "{f}");
        }
    }

    #[test]
    fn a_profile_round_trips_through_its_toml() {
        let p = reference();
        let again = MachineProfile::parse(&p.to_toml(), "x.toml").unwrap();
        assert_eq!(&again, p);
    }

    #[test]
    fn bad_profiles_name_the_file_and_line() {
        let t = reference()
            .to_toml()
            .replacen("value = ", "value = \"x\" # ", 1);
        let e = MachineProfile::parse(&t, "m.toml").unwrap_err();
        assert!(e.starts_with("m.toml: line "), "{e}");
        let t = reference()
            .to_toml()
            .replace("[cpu_costs.fio_io]", "[cpu_costs.fio_iox]");
        let e = MachineProfile::parse(&t, "m.toml").unwrap_err();
        assert!(
            e.starts_with("m.toml: [cpu_costs]: unknown field `fio_iox`"),
            "{e}"
        );
    }
}
