//! Storage (block/): device profiles with latency, bandwidth and queue depth.
//! A request of n pages issued at t completes at
//! max(t, when a queue slot frees) + latency + n pages / bandwidth, with the
//! transfer part serialised on the device's bandwidth. The queue is
//! `queue_depth` slots: a request takes the slot of the request issued
//! `queue_depth` requests before it and cannot start before that one
//! completed. Completion times never decrease in submission order, so the
//! slots are a ring (allocated once; submitting allocates nothing).

use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub struct DeviceProfile {
    pub name: &'static str,
    /// Per-request service latency, ns.
    pub latency_ns: u64,
    /// Sustained bandwidth, bytes per second.
    pub bw_bytes_per_s: u64,
    pub queue_depth: u32,
    /// Per-request latency once a memory cgroup first met its limit, ns
    /// (None: latency_ns throughout). The oracle's VM host serves a read
    /// 43-46 us before a group's first limit and 48-51 us after it
    /// (block_rq_issue to _complete, docs/fidelity/scenarios.md): a
    /// change of the device's, not of the kernel's paths, which the
    /// oracle sets from each real run's own misses after the limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pressure_latency_ns: Option<u64>,
}

pub const PROFILES: &[&str] = &["nvme", "sata-ssd", "hdd", "virtio", "ramdisk", "zram"];

impl DeviceProfile {
    /// A named profile. "virtio" is the reference machine's virtio-blk
    /// disk as measured (mm::profile); the others are datasheet-style
    /// figures, not measured here (docs/calibration.md).
    pub fn by_name(name: &str) -> Option<DeviceProfile> {
        if name == "virtio" {
            return Some(super::profile::reference().device("virtio"));
        }
        let (n, lat, bw, qd): (&'static str, u64, u64, u32) = match name {
            "nvme" => ("nvme", 80_000, 3_000_000_000, 1024),
            "sata-ssd" => ("sata-ssd", 120_000, 520_000_000, 32),
            "hdd" => ("hdd", 8_000_000, 180_000_000, 32),
            "ramdisk" => ("ramdisk", 2_000, 12_000_000_000, 1024),
            "zram" => ("zram", 5_000, 3_500_000_000, 1024),
            _ => return None,
        };
        Some(DeviceProfile {
            name: n,
            latency_ns: lat,
            bw_bytes_per_s: bw,
            queue_depth: qd,
            pressure_latency_ns: None,
        })
    }
}

#[derive(Clone, Debug)]
pub struct BlockDev {
    pub profile: DeviceProfile,
    /// When the device's transfer pipe is next free.
    busy_until: u64,
    /// Completion time of the request holding each queue slot.
    slots: Vec<u64>,
    next_slot: usize,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub requests: u64,
}

impl BlockDev {
    pub fn new(profile: DeviceProfile) -> Self {
        BlockDev {
            slots: vec![0; profile.queue_depth.max(1) as usize],
            next_slot: 0,
            profile,
            busy_until: 0,
            bytes_read: 0,
            bytes_written: 0,
            requests: 0,
        }
    }

    /// A memory cgroup met its limit for the first time.
    pub fn limit_met(&mut self) {
        if let Some(l) = self.profile.pressure_latency_ns.take() {
            self.profile.latency_ns = l;
        }
    }

    /// Submits a request of `bytes` at time `now`; returns its completion time.
    #[inline]
    pub fn submit(&mut self, now: u64, bytes: u64, write: bool) -> u64 {
        let xfer = bytes * 1_000_000_000 / self.profile.bw_bytes_per_s;
        let start = now.max(self.busy_until).max(self.slots[self.next_slot]);
        self.busy_until = start + xfer;
        self.slots[self.next_slot] = start + xfer + self.profile.latency_ns;
        self.next_slot = (self.next_slot + 1) % self.slots.len();
        self.requests += 1;
        if write {
            self.bytes_written += bytes;
        } else {
            self.bytes_read += bytes;
        }
        start + xfer + self.profile.latency_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn the_pressure_latency_holds_from_the_first_limit_on() {
        let mut p = DeviceProfile::by_name("ramdisk").unwrap();
        p.pressure_latency_ns = Some(9_000);
        let mut d = BlockDev::new(p);
        let xfer = 4096 * 1_000_000_000 / d.profile.bw_bytes_per_s;
        assert_eq!(d.submit(0, 4096, false), 2_000 + xfer);
        d.limit_met();
        assert_eq!(d.submit(100_000, 4096, false), 100_000 + 9_000 + xfer);
        // Once: a later limit changes nothing.
        d.limit_met();
        assert_eq!(d.profile.latency_ns, 9_000);
        assert_eq!(d.profile.pressure_latency_ns, None);
    }

    #[test]
    fn transfers_serialise_on_bandwidth() {
        let mut d = BlockDev::new(DeviceProfile::by_name("sata-ssd").unwrap());
        let a = d.submit(0, 520_000, false); // 1 ms of transfer
        let b = d.submit(0, 520_000, false);
        assert_eq!(a, 1_000_000 + 120_000);
        assert_eq!(b, 2_000_000 + 120_000);
        assert!(DeviceProfile::by_name("floppy").is_none());
        for p in PROFILES {
            assert!(DeviceProfile::by_name(p).is_some());
        }
    }

    #[test]
    fn a_full_queue_delays_the_next_request() {
        let mut p = DeviceProfile::by_name("nvme").unwrap();
        p.queue_depth = 2;
        let mut d = BlockDev::new(p);
        let x = 4096 * 1_000_000_000 / 3_000_000_000; // transfer of 4 KiB
        let a = d.submit(0, 4096, false);
        let b = d.submit(0, 4096, false);
        assert_eq!(
            (a, b),
            (x + 80_000, 2 * x + 80_000),
            "two slots: latencies overlap"
        );
        // The third request waits for the first slot to free.
        let c = d.submit(0, 4096, false);
        assert_eq!(c, a + x + 80_000);
    }
}
