//! Seed 002's `mmap_miss_probe`: mmap a file and touch one byte at chosen
//! base-page offsets until a fraction of the file's pages has been touched.
//! The page order is generated here so that the model (`foliosim mmap-probe`)
//! and the real host probe (`foliosim oracle mmap-probe`) touch exactly the
//! same pages in the same order.

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::fmt;
use std::str::FromStr;

pub const PAGE_SIZE: u64 = 4096;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Pattern {
    Random,
    Sequential,
    /// Every `n`-th page, wrapping modulo the file's page count.
    Stride(u64),
}

impl FromStr for Pattern {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "random" => Ok(Pattern::Random),
            "sequential" => Ok(Pattern::Sequential),
            _ => {
                let n = s
                    .strip_prefix("stride:")
                    .or_else(|| s.strip_prefix("stride"))
                    .ok_or_else(|| {
                        format!("unknown pattern '{s}' (random, sequential, stride:N)")
                    })?;
                match n.parse::<u64>() {
                    Ok(n) if n > 0 => Ok(Pattern::Stride(n)),
                    _ => Err(format!(
                        "bad stride in pattern '{s}' (want stride:N, N > 0)"
                    )),
                }
            }
        }
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pattern::Random => write!(f, "random"),
            Pattern::Sequential => write!(f, "sequential"),
            Pattern::Stride(n) => write!(f, "stride{n}"),
        }
    }
}

#[derive(Clone, Debug)]
pub struct ProbeSpec {
    pub file_size: u64,
    pub pattern: Pattern,
    /// Fraction of the file's pages touched, in (0, 1].
    pub fraction: f64,
    pub seed: u64,
}

impl ProbeSpec {
    pub fn nr_pages(&self) -> u64 {
        self.file_size.div_ceil(PAGE_SIZE)
    }

    /// Number of touches: the fraction of the file's pages, rounded up.
    pub fn nr_touches(&self) -> u64 {
        ((self.nr_pages() as f64) * self.fraction).ceil() as u64
    }

    /// Page indices in touch order.
    pub fn pages(&self) -> ProbePages {
        ProbePages {
            pattern: self.pattern,
            npages: self.nr_pages().max(1),
            left: self.nr_touches(),
            i: 0,
            rng: Pcg64Mcg::seed_from_u64(self.seed),
        }
    }
}

pub struct ProbePages {
    pattern: Pattern,
    npages: u64,
    left: u64,
    i: u64,
    rng: Pcg64Mcg,
}

impl Iterator for ProbePages {
    type Item = u64;
    #[inline]
    fn next(&mut self) -> Option<u64> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let i = self.i;
        self.i += 1;
        Some(match self.pattern {
            Pattern::Sequential => i % self.npages,
            Pattern::Stride(n) => (i.wrapping_mul(n)) % self.npages,
            Pattern::Random => self.rng.gen_range(0..self.npages),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_parse_and_print() {
        assert_eq!(
            "stride:1021".parse::<Pattern>().unwrap(),
            Pattern::Stride(1021)
        );
        assert_eq!(
            "stride2053".parse::<Pattern>().unwrap(),
            Pattern::Stride(2053)
        );
        assert!("stride:0".parse::<Pattern>().is_err());
        assert!("zigzag".parse::<Pattern>().is_err());
        assert_eq!(Pattern::Stride(4099).to_string(), "stride4099");
    }

    #[test]
    fn stride_wraps_and_count_is_fraction() {
        let s = ProbeSpec {
            file_size: 100 * PAGE_SIZE,
            pattern: Pattern::Stride(30),
            fraction: 0.05,
            seed: 1,
        };
        let v: Vec<u64> = s.pages().collect();
        assert_eq!(v, vec![0, 30, 60, 90, 20]);
    }

    #[test]
    fn random_is_seeded() {
        let s = ProbeSpec {
            file_size: 1 << 30,
            pattern: Pattern::Random,
            fraction: 0.001,
            seed: 7,
        };
        let a: Vec<u64> = s.pages().collect();
        let b: Vec<u64> = s.pages().collect();
        assert_eq!(a, b);
        let c: Vec<u64> = ProbeSpec {
            seed: 8,
            ..s.clone()
        }
        .pages()
        .collect();
        assert_ne!(a, c);
    }
}
