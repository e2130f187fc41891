//! fio's `zonemode=zbd` (zbd.c, fio 3.33) on what the model has: regular
//! files and block devices that are not zoned. For both, fio emulates
//! zones (zbd_get_zoned_model() gives ZBD_NONE: a regular file always, a
//! block device whose queue/zoned says "none"; init_zone_info()): the
//! region is cut into `zonesize` sequential-write-required zones, all
//! empty, each with a write pointer fio keeps in memory. Resetting a zone
//! only moves its write pointer back (no discard is sent for ZBD_NONE), so
//! the kernel sees only the reads and writes, at the offsets fio moved
//! them to. What this reproduces, per I/O (zbd_adjust_block()):
//!
//! * writes go to the write pointer of the zone the offset falls in, if
//!   that zone is open or can be opened (`max_open_zones`,
//!   `job_max_open_zones`); otherwise zbd_convert_to_open_zone() picks an
//!   open zone (quasi-randomly by offset), or opens the next zone after
//!   the full one. A full zone (or one picked by `zone_reset_threshold` /
//!   `zone_reset_frequency`) is reset first; the length is cut to what is
//!   left of the zone's capacity, in `min_bs` units;
//! * reads (without `read_beyond_wp`) stay below the write pointer: a zone
//!   with less than `min_bs` of data is swapped for the next one with data
//!   (sequential) or the nearest (random), and with none the job ends
//!   (fio's io_u_eof), which is what a read job on a fresh emulated
//!   device does;
//! * trims must start at a zone start and reset that zone
//!   (zbd_do_io_u_trim()); a random trim of an empty zone moves to the
//!   nearest zone with data.
//!
//! The zones are per file and shared by every job on it (fio shares
//! zbd_info between jobs with the same file name). Simplification: fio
//! closes a zone a write fills when the write completes (zbd_put_io);
//! here at submission, as for fio's sync engines. Written afresh from
//! zbd.c.

use crate::iogen::{Dir, Io};

/// The zbd options of a job (thread_options' zone fields).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ZbdOpts {
    pub zone_size: u64,
    /// `zonecapacity` (0: the zone size).
    pub zone_capacity: u64,
    pub max_open_zones: u32,
    pub job_max_open_zones: u32,
    /// `zone_reset_threshold` (zrt) and `zone_reset_frequency` (zrf).
    pub zrt: f64,
    pub zrf: f64,
    pub read_beyond_wp: bool,
}

impl Default for ZbdOpts {
    fn default() -> Self {
        ZbdOpts {
            zone_size: 0,
            zone_capacity: 0,
            max_open_zones: 0,
            job_max_open_zones: 0,
            zrt: 0.0,
            zrf: 0.0,
            read_beyond_wp: false,
        }
    }
}

/// fio's ZBD_MAX_OPEN_ZONES.
pub const ZBD_MAX_OPEN_ZONES: u32 = 4096;

/// One zbd option: `Some(result)` if `key` is one, else None.
pub fn option(
    o: &mut ZbdOpts,
    key: &str,
    val: Option<&str>,
    kb: u64,
) -> Option<Result<(), String>> {
    let need = || {
        val.filter(|v| !v.is_empty())
            .ok_or_else(|| "needs a value".to_string())
    };
    let frac = |v: &str| -> Result<f64, String> {
        v.parse::<f64>()
            .ok()
            .filter(|x| (0.0..=1.0).contains(x))
            .ok_or_else(|| format!("'{v}': a fraction from 0 to 1"))
    };
    let int = |v: &str| -> Result<u32, String> {
        v.parse::<u32>()
            .ok()
            .filter(|&n| n <= ZBD_MAX_OPEN_ZONES)
            .ok_or_else(|| format!("'{v}': 0 to {ZBD_MAX_OPEN_ZONES}"))
    };
    let r = (|| -> Result<bool, String> {
        match key {
            "zonecapacity" => o.zone_capacity = crate::fio::parse_size(need()?, kb)?,
            "max_open_zones" => o.max_open_zones = int(need()?)?,
            "job_max_open_zones" => o.job_max_open_zones = int(need()?)?,
            "zone_reset_threshold" => o.zrt = frac(need()?)?,
            "zone_reset_frequency" => o.zrf = frac(need()?)?,
            "read_beyond_wp" => {
                o.read_beyond_wp = match val.unwrap_or("1") {
                    "1" | "" => true,
                    "0" => false,
                    v => return Err(format!("'{v}': 0 or 1")),
                }
            }
            // Only host-managed devices have a limit of their own.
            "ignore_zone_limits" => {}
            _ => return Ok(false),
        }
        Ok(true)
    })();
    match r {
        Ok(true) => Some(Ok(())),
        Ok(false) => None,
        Err(e) => Some(Err(e)),
    }
}

#[derive(Clone, Copy, Debug)]
struct Zone {
    start: u64,
    wp: u64,
    capacity: u64,
    open: bool,
    reset_zone: bool,
}

/// A file's emulated zones (fio's zoned_block_device_info).
#[derive(Clone, Debug)]
pub struct ZbdInfo {
    zone_size: u64,
    /// nr_zones zones and a sentinel holding the end.
    zones: Vec<Zone>,
    max_open_zones: u32,
    open_zones: Vec<u32>,
    sectors_with_data: u64,
    wp_sectors_with_data: u64,
    write_cnt: u32,
    /// Zone resets done (fio's nr_zone_resets, all jobs).
    pub resets: u64,
}

/// What a job knows of the zones (its fio_file fields and options).
#[derive(Clone, Debug)]
pub struct ZbdJob {
    file_offset: u64,
    io_size: u64,
    min_zone: u32,
    max_zone: u32,
    min_bs: [u64; 2],
    random: bool,
    mixed: bool,
    writes: bool,
    verify: bool,
    opts: ZbdOpts,
    num_open_zones: u32,
    /// Zones this job reset (fio's per-job nr_zone_resets).
    pub resets: u64,
}

impl ZbdInfo {
    /// init_zone_info() for a file or device of `real_size` bytes.
    pub fn new(real_size: u64, o: &ZbdOpts) -> Result<ZbdInfo, String> {
        let zs = o.zone_size;
        if zs == 0 {
            return Err("specifying the zone size is mandatory for a regular file/block device with zonemode=zbd".into());
        }
        if zs < 512 {
            return Err("zone size must be at least 512 bytes for zonemode=zbd".into());
        }
        let cap = if o.zone_capacity == 0 {
            zs
        } else {
            o.zone_capacity
        };
        if cap > zs {
            return Err(format!("zonecapacity {cap} is larger than zone size {zs}"));
        }
        if real_size < zs {
            return Err(format!(
                "file/device size {real_size} is smaller than zone size {zs}"
            ));
        }
        let nr = real_size.div_ceil(zs);
        let mut zones: Vec<Zone> = (0..=nr)
            .map(|i| Zone {
                start: i * zs,
                wp: i * zs,
                capacity: cap,
                open: false,
                reset_zone: false,
            })
            .collect();
        zones[nr as usize].capacity = 0;
        Ok(ZbdInfo {
            zone_size: zs,
            zones,
            // zbd_set_max_open_zones(): the user's limit (no device limit).
            max_open_zones: o.max_open_zones,
            open_zones: Vec::new(),
            sectors_with_data: 0,
            wp_sectors_with_data: 0,
            write_cnt: u32::MAX,
            resets: 0,
        })
    }

    fn nr_zones(&self) -> u32 {
        (self.zones.len() - 1) as u32
    }

    fn zone_idx(&self, offset: u64) -> u32 {
        ((offset / self.zone_size).min(self.nr_zones() as u64)) as u32
    }

    fn cap_end(&self, z: u32) -> u64 {
        let z = &self.zones[z as usize];
        z.start + z.capacity
    }

    fn full(&self, z: u32, required: u64) -> bool {
        self.zones[z as usize].wp + required > self.cap_end(z)
    }

    /// A job's view (zbd_setup_files(), after zbd_zone_align_file_sizes():
    /// a writing job's region is rounded in to whole zones).
    pub fn job(
        &mut self,
        offset: u64,
        size: u64,
        min_bs: [u64; 2],
        flags: (bool, bool, bool, bool),
        opts: &ZbdOpts,
    ) -> Result<ZbdJob, String> {
        let (random, mixed, writes, verify) = flags;
        let (mut off, mut io_size) = (offset, size);
        let end = self.zones[self.nr_zones() as usize].start;
        if off < end && writes {
            let z = &self.zones[self.zone_idx(off) as usize];
            if off != z.start {
                let next = self.zones[self.zone_idx(off) as usize + 1].start;
                if next >= off + io_size {
                    return Err("io_size must be at least one zone".into());
                }
                io_size -= next - off;
                off = next;
            }
            let new_end = self.zones[self.zone_idx(off + io_size) as usize].start;
            if off + io_size != new_end {
                if new_end <= off {
                    return Err("io_size must be at least one zone".into());
                }
                io_size = new_end - off;
            }
        }
        if opts.verify_bs_check(min_bs, verify) {
            return Err(format!(
                "block size is not a divisor of the zone size {}",
                self.zone_size
            ));
        }
        if opts.job_max_open_zones > 0 && self.max_open_zones == 0 {
            return Err(
                "'job_max_open_zones' cannot be used without a global open zones limit".into(),
            );
        }
        if opts.max_open_zones > 0 && opts.max_open_zones != self.max_open_zones {
            return Err("different 'max_open_zones' values".into());
        }
        let mut j = ZbdJob {
            file_offset: off,
            io_size,
            min_zone: self.zone_idx(off),
            max_zone: self.zone_idx(off + io_size),
            min_bs,
            random,
            mixed,
            writes,
            verify,
            opts: opts.clone(),
            num_open_zones: 0,
            resets: 0,
        };
        self.file_reset(&mut j);
        Ok(j)
    }

    /// zbd_file_reset(): a writing job counts the data in its zones, and
    /// one that verifies resets them first (a reset mid-run would lose
    /// what it reads back).
    fn file_reset(&mut self, j: &mut ZbdJob) {
        if !j.writes {
            return;
        }
        let (mut swd, mut wp_swd) = (0, 0);
        for z in &self.zones[j.min_zone as usize..j.max_zone as usize] {
            swd += z.wp - z.start;
            wp_swd += z.wp - z.start;
        }
        self.sectors_with_data = swd;
        self.wp_sectors_with_data = wp_swd;
        if j.verify {
            for z in j.min_zone..j.max_zone {
                self.close_zone(j, z);
                j.resets += self.reset_zone(z) as u64;
            }
        }
        self.reset_write_cnt(j);
    }

    fn reset_write_cnt(&mut self, j: &ZbdJob) {
        self.write_cnt = if j.opts.zrf > 0.0 {
            (1.0 / j.opts.zrf).min(u32::MAX as f64) as u32
        } else {
            u32::MAX
        };
    }

    /// zbd_reset_zone(): true if the zone held data (a reset was done).
    fn reset_zone(&mut self, z: u32) -> bool {
        let zi = &mut self.zones[z as usize];
        let data = zi.wp - zi.start;
        if data == 0 {
            return false;
        }
        zi.wp = zi.start;
        self.sectors_with_data -= data;
        self.wp_sectors_with_data -= data;
        self.resets += 1;
        true
    }

    fn close_zone(&mut self, j: &mut ZbdJob, z: u32) {
        if !self.zones[z as usize].open {
            return;
        }
        if let Some(p) = self.open_zones.iter().position(|&o| o == z) {
            self.open_zones.remove(p);
            j.num_open_zones = j.num_open_zones.saturating_sub(1);
            self.zones[z as usize].open = false;
        }
    }

    /// zbd_open_zone().
    fn open_zone(&mut self, j: &mut ZbdJob, z: u32) -> bool {
        if j.verify && self.full(z, j.min_bs[1]) {
            return false;
        }
        if self.max_open_zones == 0 {
            return true;
        }
        if self.zones[z as usize].open {
            return self.zones[z as usize].wp < self.cap_end(z);
        }
        if j.opts.job_max_open_zones > 0 && j.num_open_zones >= j.opts.job_max_open_zones {
            return false;
        }
        if self.open_zones.len() as u32 >= self.max_open_zones {
            return false;
        }
        self.open_zones.push(z);
        j.num_open_zones += 1;
        self.zones[z as usize].open = true;
        true
    }

    fn valid(j: &ZbdJob, off: u64) -> bool {
        off.wrapping_sub(j.file_offset) < j.io_size
    }

    fn pick_random_open(&self, j: &ZbdJob, off: u64) -> usize {
        ((off - j.file_offset) as u128 * self.open_zones.len() as u128 / j.io_size.max(1) as u128)
            as usize
    }

    /// zbd_convert_to_open_zone(): the zone to write to instead, its
    /// index; None when no zone can be opened.
    fn convert_to_open_zone(&mut self, j: &mut ZbdJob, off: u64) -> Option<u32> {
        let min_bs = j.min_bs[1];
        let limited = self.max_open_zones > 0 || j.opts.job_max_open_zones > 0;
        let mut zi = if limited && !self.open_zones.is_empty() {
            self.open_zones[self.pick_random_open(j, off).min(self.open_zones.len() - 1)]
        } else {
            self.zone_idx(off)
        };
        zi = zi.clamp(j.min_zone, j.max_zone.saturating_sub(1).max(j.min_zone));
        let mut examine = !limited;
        if limited && !self.open_zones.is_empty() {
            // Start from a quasi-random open zone inside the job's range.
            let n = self.open_zones.len();
            let start = self.pick_random_open(j, off).min(n - 1);
            let found = (0..n)
                .map(|k| self.open_zones[(start + k) % n])
                .find(|&z| j.min_zone <= z && z < j.max_zone);
            match found {
                Some(z) => {
                    zi = z;
                    examine = true;
                }
                None => return None,
            }
        }
        if examine && self.zones[zi as usize].wp + min_bs <= self.cap_end(zi) {
            return Some(zi);
        }
        // The zone is full: open the next one, wrapping in the range.
        let span = j.io_size / self.zone_size;
        let mut z = zi;
        for _ in 0..span {
            z += 1;
            if !Self::valid(j, self.zones[z as usize].start) {
                z = j.min_zone;
            }
            if self.zones[z as usize].open {
                continue;
            }
            if self.open_zone(j, z) {
                return Some(z);
            }
        }
        // Or one already open with room.
        let open = self.open_zones.clone();
        open.into_iter()
            .filter(|&o| j.min_zone <= o && o < j.max_zone)
            .find(|&o| self.zones[o as usize].wp + min_bs <= self.cap_end(o))
    }

    /// zbd_find_zone(): the next zone (sequential) or the nearest one
    /// (random) from `zb` with at least `min_bytes` of data.
    fn find_zone(&self, j: &ZbdJob, zb: u32, min_bytes: u64) -> Option<u32> {
        let has = |z: u32| self.zones[z as usize].start + min_bytes <= self.zones[z as usize].wp;
        let (mut up, mut down) = (zb as i64 + 1, zb as i64 - 1);
        let (lo, hi) = (j.min_zone as i64, j.max_zone as i64);
        while up < hi || down >= lo {
            if up < hi {
                if has(up as u32) {
                    return Some(up as u32);
                }
            } else if !j.random {
                break;
            }
            if j.random && down >= lo && has(down as u32) {
                return Some(down as u32);
            }
            up += 1;
            down -= 1;
        }
        None
    }

    /// zbd_adjust_ddir(): a mixed job's first read turns into a write while
    /// no zone holds data (there would be nothing to read).
    pub fn adjust_dir(&self, j: &ZbdJob, dir: Dir) -> Dir {
        if dir != Dir::Read || !j.mixed || self.sectors_with_data > 0 || j.opts.read_beyond_wp {
            dir
        } else {
            Dir::Write
        }
    }

    /// zbd_adjust_block() and, for an accepted write, zbd_queue_io(): the
    /// I/O as fio issues it, or None where fio ends the job (io_u_eof).
    pub fn adjust_block(&mut self, j: &mut ZbdJob, mut io: Io) -> Option<Io> {
        if !Self::valid(j, io.offset) {
            return None;
        }
        let d = (io.dir != Dir::Read) as usize;
        let min_bs = j.min_bs[d].max(1);
        let zb0 = self.zone_idx(io.offset);
        match io.dir {
            Dir::Read if j.opts.read_beyond_wp => Some(io),
            Dir::Read => {
                let mut zb = zb0;
                let mut range = self.zones[zb as usize].wp - self.zones[zb as usize].start;
                if range < min_bs || (!j.random && io.offset + min_bs > self.zones[zb as usize].wp)
                {
                    zb = self.find_zone(j, zb, min_bs)?;
                    range = self.zones[zb as usize].wp - self.zones[zb as usize].start;
                    if !j.random {
                        io.offset = self.zones[zb as usize].start;
                    }
                }
                let z = self.zones[zb as usize];
                if range <= io.len {
                    io.offset = z.start;
                } else if j.random {
                    let within = (io.offset - self.zones[zb0 as usize].start) % (range - io.len);
                    io.offset = z.start + within / min_bs * min_bs;
                }
                let new_len = io.len.min(z.wp - io.offset) / min_bs * min_bs;
                io.len = io.len.min(new_len);
                (io.len > 0).then_some(io)
            }
            Dir::Trim => {
                io.offset = self.adjust_trim(j, io.offset)?;
                Some(io)
            }
            Dir::Write => {
                if io.len > self.zone_size {
                    return None;
                }
                let mut zb = zb0;
                if !self.open_zone(j, zb) {
                    zb = self.convert_to_open_zone(j, io.offset)?;
                }
                if j.opts.zrf > 0.0
                    && self.wp_sectors_with_data as f64 >= j.io_size as f64 * j.opts.zrt
                {
                    self.write_cnt = self.write_cnt.saturating_sub(1);
                    if self.write_cnt == 0 {
                        self.reset_write_cnt(j);
                        self.zones[zb as usize].reset_zone = true;
                    }
                }
                if self.zones[zb as usize].reset_zone || self.full(zb, min_bs) {
                    if j.verify {
                        // fio asserts this cannot happen: open_zone() skips
                        // full zones when verifying.
                        return None;
                    }
                    self.zones[zb as usize].reset_zone = false;
                    j.resets += self.reset_zone(zb) as u64;
                    if self.zones[zb as usize].capacity < min_bs {
                        return None;
                    }
                }
                io.offset = self.zones[zb as usize].wp;
                if !Self::valid(j, io.offset) {
                    return None;
                }
                let new_len = io.len.min(self.cap_end(zb) - io.offset) / min_bs * min_bs;
                if new_len < min_bs {
                    return None;
                }
                io.len = new_len;
                self.queue_write(j, zb, io);
                Some(io)
            }
        }
    }

    /// zbd_queue_io() for a write: the write pointer moves past it, and
    /// the zone is closed once full (zbd_end_zone_io()).
    fn queue_write(&mut self, j: &mut ZbdJob, zb: u32, io: Io) {
        let zone_end = (io.offset + io.len).min(self.cap_end(zb));
        let z = &mut self.zones[zb as usize];
        if z.wp <= zone_end {
            self.sectors_with_data += zone_end - z.wp;
            self.wp_sectors_with_data += zone_end - z.wp;
        }
        z.wp = zone_end;
        if io.offset + io.len >= self.cap_end(zb) {
            self.close_zone(j, zb);
        }
    }

    /// The adjusted offset of a trim (zbd_adjust_block()'s DDIR_TRIM), or
    /// None where the job ends: a random trim of an empty zone moves to
    /// the nearest zone with data.
    fn adjust_trim(&mut self, j: &ZbdJob, offset: u64) -> Option<u64> {
        if !Self::valid(j, offset) {
            return None;
        }
        let zb = self.zone_idx(offset);
        let z = self.zones[zb as usize];
        if !j.random || z.wp > z.start {
            return Some(offset);
        }
        self.find_zone(j, zb, 1)
            .map(|z| self.zones[z as usize].start)
    }

    /// zbd_do_io_u_trim(): a trim resets the zone it starts; Err(EINVAL)
    /// where it does not start at a zone start.
    pub fn do_trim(&mut self, j: &mut ZbdJob, offset: u64) -> Result<(), i32> {
        let zb = self.zone_idx(offset);
        if self.zones[zb as usize].start != offset {
            return Err(22);
        }
        j.resets += self.reset_zone(zb) as u64;
        Ok(())
    }

    /// Bytes written below the write pointers.
    pub fn sectors_with_data(&self) -> u64 {
        self.sectors_with_data
    }
}

impl ZbdOpts {
    /// zbd_verify_bs(): with verify, every block size divides the zone.
    fn verify_bs_check(&self, min_bs: [u64; 2], verify: bool) -> bool {
        verify
            && min_bs
                .iter()
                .any(|&b| b == 0 || !self.zone_size.is_multiple_of(b))
    }
}

/// Each job's zones: the per-file [`ZbdInfo`]s (shared by every zbd job
/// on a file, as fio shares zbd_info by file name; the file's size is the
/// largest region any of them covers) and, per job, the index of its file
/// and its own view, or the error with which fio's setup fails the job.
pub type ZbdSetup = (Vec<ZbdInfo>, Vec<Option<Result<(usize, ZbdJob), String>>>);

pub fn setup(jobs: &[crate::fio::FioJob]) -> ZbdSetup {
    let mut names: std::collections::BTreeMap<&str, (usize, u64, &ZbdOpts)> = Default::default();
    for j in jobs {
        if let Some(o) = &j.zbd {
            let n = names.len();
            let e = names.entry(j.filename.as_str()).or_insert((n, 0, o));
            e.1 = e.1.max(j.file_size());
        }
    }
    let mut order: Vec<_> = names
        .iter()
        .map(|(_, &(i, size, o))| (i, size, o))
        .collect();
    order.sort_by_key(|e| e.0);
    let mut infos: Vec<Result<ZbdInfo, String>> = order
        .iter()
        .map(|&(_, size, o)| ZbdInfo::new(size, o))
        .collect();
    let per_job = jobs
        .iter()
        .map(|j| {
            let o = j.zbd.as_ref()?;
            let idx = names[j.filename.as_str()].0;
            if j.files.len() > 1 {
                return Some(Err(
                    "zonemode=zbd with several files per job is not modelled".into(),
                ));
            }
            // zbd_verify_bs(): a trim resets one whole zone.
            if j.rw.is_trim() && (j.min_bs[1] != j.max_bs[1] || j.min_bs[1] != o.zone_size) {
                return Some(Err(format!(
                    "trim block size {} is not the zone size {}",
                    j.max_bs[1], o.zone_size
                )));
            }
            let info = match &mut infos[idx] {
                Ok(i) => i,
                Err(e) => return Some(Err(e.clone())),
            };
            let flags = (
                j.rw.is_random(),
                j.rw.is_mixed(),
                j.rw.has_writes(),
                j.ctl.verify,
            );
            Some(
                info.job(j.offset, j.size, j.min_bs, flags, o)
                    .map(|zj| (idx, zj)),
            )
        })
        .collect();
    let infos = infos
        .into_iter()
        .map(|r| r.unwrap_or_else(|_| ZbdInfo::empty()))
        .collect();
    (infos, per_job)
}

impl ZbdInfo {
    /// Stands in for a file whose zones could not be set up (its jobs
    /// carry the error and never use it).
    fn empty() -> ZbdInfo {
        ZbdInfo {
            zone_size: 1,
            zones: vec![Zone {
                start: 0,
                wp: 0,
                capacity: 0,
                open: false,
                reset_zone: false,
            }],
            max_open_zones: 0,
            open_zones: Vec::new(),
            sectors_with_data: 0,
            wp_sectors_with_data: 0,
            write_cnt: u32::MAX,
            resets: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fio::parse_job_str;
    use crate::iogen::IoGen;

    const M: u64 = 1 << 20;

    fn run(text: &str, max: usize) -> (Vec<Option<Io>>, ZbdInfo) {
        let jobs = parse_job_str(text, "t.fio").unwrap();
        let (mut infos, mut per) = setup(&jobs);
        let (zi, mut zj) = per.remove(0).unwrap().unwrap();
        let mut g = IoGen::new(&jobs[0], 1);
        let mut out = Vec::new();
        while out.len() < max {
            let Some(io) = g.next_io() else { break };
            let mut io = io;
            io.dir = infos[zi].adjust_dir(&zj, io.dir);
            let a = infos[zi].adjust_block(&mut zj, io);
            out.push(a);
            if a.is_none() {
                break;
            }
        }
        (out, infos.remove(zi))
    }

    #[test]
    fn sequential_writes_follow_the_write_pointer_and_reset_full_zones() {
        // 4 zones of 1 MiB, time_based: the second pass finds every zone
        // full and resets each before writing it again.
        let (ios, info) = run(
            "[a]\nrw=write\nbs=256k\nsize=4m\nzonemode=zbd\nzonesize=1m\ndirect=1\ntime_based\nruntime=10\n",
            32,
        );
        let offs: Vec<u64> = ios.iter().map(|i| i.unwrap().offset).collect();
        let want: Vec<u64> = (0..32).map(|k| (k % 16) * 256 * 1024).collect();
        assert_eq!(offs, want);
        assert_eq!(info.resets, 4);
        assert_eq!(info.sectors_with_data(), 4 * M);
    }

    #[test]
    fn reads_of_empty_zones_end_the_job() {
        let (ios, _) = run(
            "[a]\nrw=read\nbs=4k\nsize=4m\nzonemode=zbd\nzonesize=1m\n",
            4,
        );
        assert_eq!(ios, vec![None]);
        let (ios, _) = run(
            "[a]\nrw=randread\nbs=4k\nsize=4m\nzonemode=zbd\nzonesize=1m\nread_beyond_wp=1\n",
            4,
        );
        assert_eq!(ios.len(), 4);
        assert!(ios.iter().all(|i| i.is_some()));
    }

    #[test]
    fn mixed_job_writes_first_and_reads_only_written_data() {
        let (ios, info) = run(
            "[a]\nrw=randrw\nbs=4k\nsize=4m\nzonemode=zbd\nzonesize=1m\nrandom_generator=lfsr\n",
            400,
        );
        assert_eq!(ios[0].unwrap().dir, Dir::Write);
        let mut wp = [0u64; 4];
        for io in ios.iter().map(|i| i.unwrap()) {
            let z = (io.offset / M) as usize;
            match io.dir {
                Dir::Write => {
                    assert_eq!(
                        io.offset,
                        z as u64 * M + wp[z],
                        "writes go to the write pointer"
                    );
                    wp[z] += io.len;
                }
                Dir::Read => assert!(io.offset + io.len <= z as u64 * M + wp[z], "read past wp"),
                Dir::Trim => unreachable!(),
            }
        }
        assert_eq!(wp.iter().sum::<u64>(), info.sectors_with_data());
    }

    #[test]
    fn open_zone_limit_keeps_random_writes_in_open_zones() {
        let (ios, _) = run(
            "[a]\nrw=randwrite\nbs=64k\nsize=16m\nzonemode=zbd\nzonesize=1m\nmax_open_zones=2\n",
            32,
        );
        // A zone a write fills is closed, which lets another open: at no
        // time are more than two zones partly written.
        let mut fill = [0u64; 16];
        for io in ios.iter().map(|i| i.unwrap()) {
            fill[(io.offset / M) as usize] += io.len;
            let partial = fill.iter().filter(|&&b| b > 0 && b < M).count();
            assert!(partial <= 2, "{fill:?}");
        }
        assert!(fill.iter().filter(|&&b| b > 0).count() >= 2);
    }

    #[test]
    fn zone_setup_errors() {
        let err = |t: &str| {
            let jobs = parse_job_str(t, "t.fio").unwrap();
            setup(&jobs).1.remove(0).unwrap().unwrap_err()
        };
        assert!(
            err("[a]\nrw=write\nsize=4m\nzonemode=zbd\nzonesize=256\n").contains("at least 512")
        );
        assert!(err("[a]\nrw=write\nsize=1m\nzonemode=zbd\nzonesize=2m\n")
            .contains("smaller than zone size"));
        assert!(
            err("[a]\nrw=write\nsize=4m\nzonemode=zbd\nzonesize=1m\nzonecapacity=2m\n")
                .contains("larger than zone size")
        );
        assert!(
            err("[a]\nrw=write\nsize=4m\nzonemode=zbd\nzonesize=1m\njob_max_open_zones=1\n")
                .contains("without a global")
        );
        let e = parse_job_str("[a]\nrw=write\nsize=4m\nzonemode=zbd\n", "t.fio").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("t.fio:1: zonesize: job 'a': zonemode=zbd"),
            "{e}"
        );
        let e = parse_job_str("[a]\nrw=write\nsize=4z\n", "t.fio").unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.fio:1: zonesize: job 'a': a size in zones ('z') needs zonesize"
        );
        let j = &parse_job_str(
            "[a]\nrw=write\nsize=4z\noffset=2z\nzonemode=zbd\nzonesize=1m\n",
            "t.fio",
        )
        .unwrap()[0];
        assert_eq!((j.size, j.offset), (4 * M, 2 * M));
    }
}
