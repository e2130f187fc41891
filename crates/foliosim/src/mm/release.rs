//! Kernel releases (`--kernel`): which patches of the registry
//! (patches.rs) each carries, and the release-bound behaviours that are
//! not patch switches (large folios per file system, mTHP swap, tmpfs
//! orders).

use serde::Serialize;

use super::patches::{self, Variants};

/// A kernel release the model can be set to (`--kernel`): the seeds'
/// patches each release carries and whether ext4's regular files hold
/// large folios (ext4 gained them in 6.16). `MmNew` is the seeds' own
/// kernel, 7.0-era mm-new, with every patch the seeds describe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum KernelRelease {
    #[serde(rename = "6.1")]
    V6_1,
    #[serde(rename = "6.6")]
    V6_6,
    #[serde(rename = "6.12")]
    V6_12,
    /// 6.14 and 6.15: seed 004's series, ext4 still order 0.
    #[serde(rename = "6.14")]
    V6_14,
    /// 6.16 and 6.17: as 6.14, with ext4's large folios.
    #[serde(rename = "6.16")]
    V6_16,
    #[serde(rename = "6.18")]
    V6_18,
    #[serde(rename = "7.0")]
    V7_0,
    #[serde(rename = "7.2")]
    V7_2,
    #[serde(rename = "mm-new")]
    MmNew,
}

pub const KERNEL_RELEASES: &str = "6.1, 6.6, 6.12, 6.14, 6.16, 6.18, 7.0, 7.2, mm-new";

impl KernelRelease {
    /// Every preset, oldest first (KERNEL_RELEASES names them).
    pub const ALL: [KernelRelease; 9] = [
        KernelRelease::V6_1,
        KernelRelease::V6_6,
        KernelRelease::V6_12,
        KernelRelease::V6_14,
        KernelRelease::V6_16,
        KernelRelease::V6_18,
        KernelRelease::V7_0,
        KernelRelease::V7_2,
        KernelRelease::MmNew,
    ];

    /// The name `--kernel` takes ("6.18", "mm-new").
    pub fn name(self) -> &'static str {
        match self {
            KernelRelease::V6_1 => "6.1",
            KernelRelease::V6_6 => "6.6",
            KernelRelease::V6_12 => "6.12",
            KernelRelease::V6_14 => "6.14",
            KernelRelease::V6_16 => "6.16",
            KernelRelease::V6_18 => "6.18",
            KernelRelease::V7_0 => "7.0",
            KernelRelease::V7_2 => "7.2",
            KernelRelease::MmNew => "mm-new",
        }
    }

    /// "6.18", "6.18.44-fc-v669" (a host's osrelease: its major.minor
    /// picks the preset at or below it), "mm-new".
    pub fn parse(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if s == "mm-new" {
            return Ok(KernelRelease::MmNew);
        }
        let mut it = s.split(|c: char| !c.is_ascii_digit());
        let major: Option<u32> = it.next().and_then(|x| x.parse().ok());
        let minor: Option<u32> = it.next().and_then(|x| x.parse().ok());
        let (Some(major), Some(minor)) = (major, minor) else {
            return Err(format!(
                "unknown kernel release '{s}' (known: {KERNEL_RELEASES})"
            ));
        };
        // The newest numbered preset at or below major.minor.
        let numbered = Self::ALL
            .iter()
            .rev()
            .filter(|k| **k != KernelRelease::MmNew);
        numbered
            .copied()
            .find(|k| k.number() <= (major, minor))
            .ok_or_else(|| {
                format!(
                    "kernel release '{s}' is older than the oldest preset (known: {KERNEL_RELEASES})"
                )
            })
    }

    /// (major, minor) of a numbered release; mm-new sorts above them all.
    fn number(self) -> (u32, u32) {
        let (ma, mi) = self.name().split_once('.').unwrap_or(("999", "0"));
        (ma.parse().unwrap_or(999), mi.parse().unwrap_or(0))
    }

    /// mapping_large_folio_support() of an ext4 regular file: since 6.16
    /// (ext4_set_inode_mapping_order()).
    pub fn ext4_large_folios(self) -> bool {
        self >= KernelRelease::V6_16
    }

    /// Large anon folios swapped out whole (mTHP swap-out without a
    /// split, 6.10), a large swap-cache folio mapped whole on a fault
    /// (6.11) and large folios swapped in from a synchronous device
    /// (alloc_swap_folio, 6.12). 6.1 and 6.6 swap a PMD-sized THP out
    /// whole too, then map it back one page per fault; the model, holding
    /// one mapping state per folio, splits it before swap-out there.
    pub fn large_anon_swap(self) -> bool {
        self >= KernelRelease::V6_12
    }

    /// The orders a tmpfs `huge=always|within_size` write may take: PMD
    /// only before 6.14; 6.14 to 6.17 size them by the write
    /// (shmem_mapping_size_orders(), Baolin Wang's tmpfs large folios);
    /// 6.18's "fix the strategy for the tmpfs huge= options" tries every
    /// order from PMD down.
    pub fn tmpfs_write_orders(self) -> TmpfsWriteOrders {
        if self >= KernelRelease::V6_18 {
            TmpfsWriteOrders::FromPmd
        } else if self >= KernelRelease::V6_14 {
            TmpfsWriteOrders::WriteSize
        } else {
            TmpfsWriteOrders::Pmd
        }
    }

    /// shmem_swap_alloc_folio(): a tmpfs swap entry read back whole from a
    /// synchronous device (6.14).
    pub fn shmem_large_swapin(self) -> bool {
        self >= KernelRelease::V6_14
    }

    /// The patches the release carries: every registry entry that lists
    /// it (patches::PATCHES, `foliosim variants`), nothing filled in from
    /// another release. 7.1 takes the 7.0 preset (its source was not
    /// read); 7.0 and 7.2 were read in Debian's linux-source packages
    /// (docs/large_folios.md, "Kernel releases").
    pub fn variants(self) -> Variants {
        patches::preset(self)
    }
}

/// KernelRelease::tmpfs_write_orders().
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TmpfsWriteOrders {
    /// HPAGE_PMD_ORDER only.
    Pmd,
    /// shmem_mapping_size_orders(): the largest order the write's length
    /// from the index fills, lowered to the index's alignment, and every
    /// order below it.
    WriteSize,
    /// Every order from PMD down.
    FromPmd,
}
