//! The mmap probe's options, shared by `foliosim mmap-probe` (the model) and
//! `foliosim oracle mmap-probe` (the real kernel), so that any probe case runs
//! on both with the same command line.

use foliosim_workload::mmap_probe::{Pattern, ProbeSpec};
use foliosim_workload::units::parse_size;

/// What the probe touches: the same for the model's and the oracle's.
#[derive(clap::Args, Clone, Debug)]
pub struct ProbeShape {
    /// Size of the mmapped file (K, M, G suffixes are powers of 1024).
    #[arg(long, default_value = "2G")]
    pub file_size: String,
    /// Touch order: random, sequential or stride:N (every N-th page).
    #[arg(long, default_value = "random")]
    pub pattern: String,
    /// Fraction of the file's pages touched, in (0, 1].
    #[arg(long, default_value_t = 0.01)]
    pub fraction: f64,
}

impl ProbeShape {
    /// The probe of `seed` (its random page order).
    pub fn spec(&self, seed: u64) -> Result<ProbeSpec, String> {
        let file_size = parse_size(&self.file_size).map_err(|e| format!("--file-size: {e}"))?;
        if file_size == 0 {
            return Err("--file-size: must be > 0".into());
        }
        let pattern: Pattern = self
            .pattern
            .parse()
            .map_err(|e| format!("--pattern: {e}"))?;
        if !(self.fraction > 0.0 && self.fraction <= 1.0) {
            return Err(format!("--fraction: {} is not in (0, 1]", self.fraction));
        }
        Ok(ProbeSpec {
            file_size,
            pattern,
            fraction: self.fraction,
            seed,
        })
    }
}

/// `foliosim oracle mmap-probe`'s options: the probe and what the real
/// run can set (the model's `foliosim mmap-probe` takes every machine
/// option instead).
#[derive(clap::Args, Clone, Debug)]
pub struct ProbeArgs {
    #[command(flatten)]
    pub shape: ProbeShape,
    /// Machine RAM for the model (default 8G for `foliosim mmap-probe`; the
    /// oracle always uses the host's RAM and refuses a different value).
    #[arg(long)]
    pub memory: Option<String>,
    /// Memory cgroup limit (required by the oracle).
    #[arg(long)]
    pub memcg_limit: Option<String>,
    /// read_ahead_kb of the file's device (model default 128; on the host,
    /// the device's current value unless given).
    #[arg(long)]
    pub read_ahead_kb: Option<u32>,
    /// Seed of the random page order.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Model variants, comma separated (e.g. p1,p2), passed to the model.
    #[arg(long, value_delimiter = ',')]
    pub variant: Vec<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

impl ProbeArgs {
    pub fn spec(&self) -> Result<ProbeSpec, String> {
        self.shape.spec(self.seed)
    }

    pub fn memcg_limit_bytes(&self) -> Result<Option<u64>, String> {
        self.memcg_limit
            .as_deref()
            .map(|s| parse_size(s).map_err(|e| format!("--memcg-limit: {e}")))
            .transpose()
    }

    /// The oracle runs on the host's RAM: an explicit `--memory` must name
    /// it (MemTotal, within 5%: MemTotal leaves out what the kernel reserves).
    pub fn check_host_memory(&self, host_ram: u64) -> Result<(), String> {
        let Some(s) = &self.memory else { return Ok(()) };
        let m = parse_size(s).map_err(|e| format!("--memory: {e}"))?;
        if (m as f64 - host_ram as f64).abs() > host_ram as f64 * 0.05 {
            return Err(format!(
                "--memory {s}: the real run has the host's RAM ({} MiB); leave --memory out",
                host_ram >> 20
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        p: ProbeArgs,
    }

    fn parse(args: &[&str]) -> ProbeArgs {
        T::try_parse_from(std::iter::once("t").chain(args.iter().copied()))
            .unwrap()
            .p
    }

    #[test]
    fn defaults_and_spec() {
        let p = parse(&[]);
        let s = p.spec().unwrap();
        assert_eq!(
            (s.file_size, s.pattern, s.fraction, s.seed),
            (2 << 30, Pattern::Random, 0.01, 1)
        );
        assert_eq!(p.memcg_limit_bytes(), Ok(None));
        let p = parse(&[
            "--pattern",
            "stride:2053",
            "--variant",
            "p1,p2",
            "--memcg-limit",
            "512M",
        ]);
        assert_eq!(p.spec().unwrap().pattern, Pattern::Stride(2053));
        assert_eq!(p.variant, ["p1", "p2"]);
        assert_eq!(p.memcg_limit_bytes(), Ok(Some(512 << 20)));
    }

    #[test]
    fn bad_values_name_the_option() {
        assert_eq!(
            parse(&["--fraction", "0"]).spec().unwrap_err(),
            "--fraction: 0 is not in (0, 1]"
        );
        assert!(parse(&["--file-size", "2Q"])
            .spec()
            .unwrap_err()
            .starts_with("--file-size: bad size"));
        assert!(parse(&["--pattern", "zigzag"])
            .spec()
            .unwrap_err()
            .starts_with("--pattern: unknown"));
        assert!(parse(&["--memcg-limit", "x"])
            .memcg_limit_bytes()
            .unwrap_err()
            .starts_with("--memcg-limit:"));
        let p = parse(&["--memory", "8G"]);
        assert!(p
            .check_host_memory(24 << 30)
            .unwrap_err()
            .contains("the real run has the host's RAM"));
        assert_eq!(p.check_host_memory(8 << 30), Ok(()));
        assert_eq!(parse(&[]).check_host_memory(24 << 30), Ok(()));
    }
}
