//! The option builder: fio's options as a job section sets them, over the
//! global section's, checked and turned into [`FioJob`]s.

use super::*;

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum ZoneMode {
    NotSet,
    None,
    Strided,
    Zbd,
}

/// Options as set so far (global defaults overlaid by the job's own).
#[derive(Clone, Debug)]
pub(super) struct Builder {
    pub(super) name: Option<String>,
    pub(super) filename: Option<String>,
    pub(super) directory: Option<String>,
    pub(super) filename_format: Option<String>,
    pub(super) size: Option<u64>,
    pub(super) filesize: Option<u64>,
    pub(super) offset: u64,
    /// fio's `offset_increment`: clone N starts at offset + N * this.
    pub(super) offset_increment: u64,
    pub(super) rw: Rw,
    pub(super) rwmixread: u32,
    /// Per direction (read, write, trim) as fio stores them; 0 = not set.
    pub(super) bs: [u64; 3],
    pub(super) min_bs: [u64; 3],
    pub(super) max_bs: [u64; 3],
    pub(super) ba: [u64; 3],
    pub(super) bssplit: [Vec<BsSplit>; 3],
    pub(super) bs_unaligned: bool,
    pub(super) random_generator: Option<RandomGenerator>,
    pub(super) randrepeat: bool,
    pub(super) randseed_set: bool,
    pub(super) allrandrepeat: bool,
    pub(super) zone_split: [Vec<ZoneSplit>; 3],
    pub(super) percentage_random: [u32; 3],
    pub(super) rw_seq_nr: u32,
    pub(super) rw_sequencer: RwSequencer,
    pub(super) ioengine: IoEngine,
    pub(super) direct: bool,
    /// `atomic`, with the line it was set on (for the engine checks).
    pub(super) atomic: (bool, usize),
    pub(super) iodepth: u32,
    pub(super) iodepth_batch: u32,
    pub(super) iodepth_batch_complete_min: u32,
    pub(super) iodepth_batch_complete_max: u32,
    pub(super) iodepth_low: u32,
    pub(super) engine_opts: EngineOpts,
    pub(super) runtime_us: u64,
    pub(super) time_based: bool,
    pub(super) ramp_time_us: u64,
    pub(super) loops: u64,
    pub(super) io_size: u64,
    pub(super) number_ios: u64,
    pub(super) zonemode: ZoneMode,
    pub(super) zbd: crate::zbd::ZbdOpts,
    pub(super) ss: crate::steadystate::SsOpts,
    pub(super) lat: crate::lat_target::LatOpts,
    /// Sizes given in zones (`Nz`): size, offset, io_size,
    /// offset_increment, zoneskip (fio's size_nz etc.).
    pub(super) nz: [Option<u64>; 5],
    pub(super) zonesize: u64,
    pub(super) zonerange: u64,
    pub(super) zoneskip: u64,
    pub(super) norandommap: bool,
    pub(super) randseed: u64,
    pub(super) random_distribution: RandomDist,
    pub(super) fadvise_hint: FadviseHint,
    pub(super) invalidate: bool,
    pub(super) thinktime_us: u64,
    pub(super) rw_seq_add: i64,
    pub(super) end_fsync: bool,
    /// fio's create_serialize (default 1): files are set up before any
    /// job runs; with 0, each job sets its files up when it starts.
    pub(super) create_serialize: bool,
    pub(super) numjobs: u32,
    pub(super) kb_base: u64,
    pub(super) ctl: jobctl::CtlBuilder,
    pub(super) iolog: iolog::IologOpts,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            name: None,
            filename: None,
            directory: None,
            filename_format: None,
            size: None,
            filesize: None,
            offset: 0,
            offset_increment: 0,
            rw: Rw::Read,
            rwmixread: 50,
            bs: [4096; 3],
            min_bs: [0; 3],
            max_bs: [0; 3],
            ba: [0; 3],
            bssplit: Default::default(),
            bs_unaligned: false,
            random_generator: None,
            randrepeat: true,
            randseed_set: false,
            allrandrepeat: false,
            zone_split: Default::default(),
            percentage_random: [100; 3],
            rw_seq_nr: 1,
            rw_sequencer: RwSequencer::Sequential,
            ioengine: IoEngine::Psync,
            direct: false,
            atomic: (false, 0),
            iodepth: 1,
            iodepth_batch: 1,
            iodepth_batch_complete_min: 1,
            iodepth_batch_complete_max: 0,
            iodepth_low: 0,
            engine_opts: EngineOpts::default(),
            runtime_us: 0,
            time_based: false,
            ramp_time_us: 0,
            loops: 1,
            io_size: 0,
            number_ios: 0,
            zonemode: ZoneMode::NotSet,
            zbd: Default::default(),
            ss: Default::default(),
            lat: Default::default(),
            nz: [None; 5],
            zonesize: 0,
            zonerange: 0,
            zoneskip: 0,
            norandommap: false,
            randseed: 0x89,
            random_distribution: RandomDist::Random,
            fadvise_hint: FadviseHint::On,
            invalidate: true,
            thinktime_us: 0,
            rw_seq_add: 0,
            end_fsync: false,
            create_serialize: true,
            numjobs: 1,
            kb_base: 1024,
            ctl: jobctl::CtlBuilder::default(),
            iolog: iolog::IologOpts::default(),
        }
    }
}

impl Builder {
    pub(super) fn apply_section(&mut self, s: &Section, file: &str) -> Result<(), ParseError> {
        // fio parses kb_base before the other options of a section (it has
        // a higher parse priority), so sizes in the same section see it.
        for e in s.entries.iter().filter(|e| e.key == "kb_base") {
            self.apply(e, file)?;
        }
        // fio parses an engine's own options only once the engine is
        // loaded (fio_options_parse retries unknown options after
        // ioengine_load), so the section's ioengine goes first.
        for e in s.entries.iter().filter(|e| e.key == "ioengine") {
            self.apply(e, file)?;
        }
        for e in s
            .entries
            .iter()
            .filter(|e| e.key != "kb_base" && e.key != "ioengine")
        {
            self.apply(e, file)?;
        }
        Ok(())
    }

    pub(super) fn apply(&mut self, e: &Entry, file: &str) -> Result<(), ParseError> {
        let key = e.key.as_str();
        let err = |msg: String| perr(file, e.line, key, msg);
        let val = e.val.as_deref();
        // A value is required for everything but flags.
        let need = || -> Result<&str, ParseError> {
            match val {
                Some(v) if !v.is_empty() => Ok(v),
                _ => Err(perr(file, e.line, key, "needs a value")),
            }
        };
        let kb = self.kb_base;
        let size = |v: &str| parse_size(v, kb).map_err(err);
        // fio's parse_is_zone(): "Nz" counts zones of zonesize.
        let nz_slot = match key {
            "size" => Some(0),
            "offset" | "fileoffset" => Some(1),
            "io_size" | "io_limit" => Some(2),
            "offset_increment" => Some(3),
            "zoneskip" => Some(4),
            _ => None,
        };
        if let (Some(slot), Some(v)) = (nz_slot, val) {
            if let Some(n) = v.strip_suffix(['z', 'Z']) {
                let n = parse_int(n, 0, u32::MAX as u64).map_err(|e| err(format!("'{v}': {e}")))?;
                if key == "size" && n == 0 {
                    return Err(err("size must be > 0".into()));
                }
                self.nz[slot] = Some(n);
                return Ok(());
            }
            self.nz[slot] = None;
        }
        match key {
            "name" => self.name = Some(need()?.to_string()),
            "filename" => {
                let v = need()?;
                if split_filenames(v).is_empty() {
                    return Err(err(format!("'{v}': no file name")));
                }
                self.filename = Some(v.to_string());
            }
            "directory" => {
                let v = need()?;
                if v.contains(':') {
                    return Err(err(format!(
                        "'{v}': several directories (':') are not supported"
                    )));
                }
                self.directory = Some(v.to_string());
            }
            "filename_format" => {
                let v = need()?;
                let v = v.trim_matches(|c| c == '\'' || c == '"');
                if v.to_ascii_lowercase().contains("$clientuid") {
                    return Err(err("$clientuid is not supported".into()));
                }
                self.filename_format = Some(v.to_string());
            }
            "size" => {
                let v = size(need()?)?;
                if v == 0 {
                    return Err(err("size must be > 0".into()));
                }
                self.size = Some(v);
            }
            "filesize" => {
                let v = need()?;
                // fio: "low-high" (or "low:high") draws each file's size.
                let (lo, hi) = match v.split_once([':', '-']) {
                    Some((a, b)) => (size(a)?, size(b)?),
                    None => {
                        let n = size(v)?;
                        (n, n)
                    }
                };
                if lo == 0 || hi < lo {
                    return Err(err(format!(
                        "'{v}': filesize must be > 0 (a range low-high with low <= high)"
                    )));
                }
                self.filesize = Some(lo);
                self.ctl.filesize_range = (lo, hi);
            }
            "offset" | "fileoffset" => self.offset = size(need()?)?,
            // filesetup.c get_start_offset(): clone N (fio's subjob_number,
            // the `$jobnum` of filename_format) starts N increments further.
            "offset_increment" => self.offset_increment = size(need()?)?,
            // fio aligns the start offset (to this, else the smallest bs)
            // only when offset or offset_increment is a percentage, which
            // foliosim refuses; a byte offset is used as given.
            "offset_align" => {
                size(need()?)?;
            }
            "rw" | "readwrite" => {
                let v = need()?;
                // fio's str_rw_cb(): the postfix of a random rw is an I/O
                // count (atoi), of a sequential one a signed byte offset.
                let (base, post) = match v.split_once(':') {
                    Some((b, a)) => (b, Some(a)),
                    None => (v, None),
                };
                self.rw = parse_rw(base).map_err(err)?;
                self.rw_seq_add = 0;
                self.rw_seq_nr = 1;
                if let Some(a) = post {
                    let bad = |e: String| err(format!("'{v}': bad ':{a}' modifier: {e}"));
                    if self.rw.is_random() {
                        self.rw_seq_nr = parse_int(a, 0, u32::MAX as u64).map_err(bad)? as u32;
                    } else {
                        let (neg, mag) = match a.strip_prefix('-') {
                            Some(m) => (true, m),
                            None => (false, a),
                        };
                        let n = parse_size(mag, kb).map_err(bad)?;
                        let n = i64::try_from(n).map_err(|_| bad("too large".into()))?;
                        self.rw_seq_add = if neg { -n } else { n };
                    }
                }
            }
            "rw_sequencer" => {
                self.rw_sequencer = match need()? {
                    "sequential" => RwSequencer::Sequential,
                    "identical" => RwSequencer::Identical,
                    other => {
                        return Err(err(format!(
                            "bad rw_sequencer '{other}' (sequential or identical)"
                        )))
                    }
                }
            }
            "end_fsync" => self.end_fsync = parse_bool(val).map_err(err)?,
            "create_serialize" => self.create_serialize = parse_bool(val).map_err(err)?,
            "rwmixread" => self.rwmixread = parse_int(need()?, 0, 100).map_err(err)? as u32,
            "rwmixwrite" => self.rwmixread = 100 - parse_int(need()?, 0, 100).map_err(err)? as u32,
            "bs" | "blocksize" => {
                let v = need()?;
                let vals = parse_per_ddir(v, kb).map_err(err)?;
                store_per_ddir(&mut self.bs, vals, "bs").map_err(err)?;
            }
            "ba" | "blockalign" => {
                let v = need()?;
                let vals = parse_per_ddir(v, kb).map_err(err)?;
                store_per_ddir(&mut self.ba, vals, "ba").map_err(err)?;
            }
            "bsrange" | "blocksize_range" => {
                let v = need()?;
                let ranges = parse_bsrange(v, kb).map_err(err)?;
                for (d, r) in ranges.iter().enumerate() {
                    if let Some((lo, hi)) = r {
                        self.min_bs[d] = *lo;
                        self.max_bs[d] = *hi;
                    }
                }
            }
            "bssplit" => {
                let v = need()?;
                for (d, part) in split_ddir_parts(v.trim()).into_iter().enumerate() {
                    if let Some(list) = parse_bssplit(part, kb).map_err(err)? {
                        self.min_bs[d] = list.iter().map(|b| b.bs).min().unwrap_or(0);
                        self.max_bs[d] = list.iter().map(|b| b.bs).max().unwrap_or(0);
                        self.bssplit[d] = list;
                    }
                }
            }
            "bs_unaligned" | "blocksize_unaligned" => {
                self.bs_unaligned = parse_bool(val).map_err(err)?
            }
            "random_generator" => {
                self.random_generator = Some(match need()? {
                    "tausworthe" => RandomGenerator::Tausworthe,
                    "lfsr" => RandomGenerator::Lfsr,
                    "tausworthe64" => RandomGenerator::Tausworthe64,
                    other => {
                        return Err(err(format!(
                            "bad random_generator '{other}' (tausworthe, lfsr, tausworthe64)"
                        )))
                    }
                })
            }
            "percentage_random" => {
                let vals = parse_per_ddir_with(need()?, |s| parse_int(s, 0, 100).map(|n| n as u32))
                    .map_err(err)?;
                store_per_ddir(&mut self.percentage_random, vals, "").map_err(err)?;
            }
            "allrandrepeat" => self.allrandrepeat = parse_bool(val).map_err(err)?,
            "ioengine" => {
                let v = need()?;
                // The GPU engines run as psync: their host-side I/O is one
                // pread/pwrite (posix) or one O_DIRECT DMA (cuFile/hipFile)
                // per I/O; the GPU copies are outside the model.
                self.engine_opts.gpu = crate::engines::GpuIo::parse(v);
                self.ioengine = match self.engine_opts.gpu {
                    Some(_) => IoEngine::Psync,
                    None => IoEngine::parse(v).map_err(err)?,
                };
            }
            "iodepth" => self.iodepth = parse_int(need()?, 1, 1 << 20).map_err(err)? as u32,
            "iodepth_batch" | "iodepth_batch_submit" => {
                self.iodepth_batch = parse_int(need()?, 0, 1 << 20).map_err(err)? as u32
            }
            "iodepth_batch_complete_min" | "iodepth_batch_complete" => {
                self.iodepth_batch_complete_min =
                    parse_int(need()?, 0, 1 << 20).map_err(err)? as u32
            }
            "iodepth_batch_complete_max" => {
                self.iodepth_batch_complete_max =
                    parse_int(need()?, 0, 1 << 20).map_err(err)? as u32
            }
            "iodepth_low" => self.iodepth_low = parse_int(need()?, 0, 1 << 20).map_err(err)? as u32,
            // Offload moves submission to fio's own worker threads: the
            // kernel sees the same I/O.
            "io_submit_mode" => match need()? {
                "inline" | "offload" => {}
                o => return Err(err(format!("bad io_submit_mode '{o}' (inline, offload)"))),
            },
            "direct" => self.direct = parse_bool(val).map_err(err)?,
            "buffered" => self.direct = !parse_bool(val).map_err(err)?,
            // RWF_ATOMIC writes (torn-write protection): checked against
            // the engine and direct= in check_engine; no model effect.
            "atomic" => self.atomic = (parse_bool(val).map_err(err)?, e.line),
            "runtime" | "timeout" => self.runtime_us = parse_time_us(need()?, true).map_err(err)?,
            "time_based" => self.time_based = parse_bool(val).map_err(err)?,
            "ramp_time" => self.ramp_time_us = parse_time_us(need()?, true).map_err(err)?,
            "loops" => self.loops = parse_int(need()?, 1, u32::MAX as u64).map_err(err)?,
            "io_size" | "io_limit" => self.io_size = size(need()?)?,
            "number_ios" => self.number_ios = size(need()?)?,
            "zonemode" => {
                self.zonemode = match need()? {
                    "none" => ZoneMode::None,
                    "strided" => ZoneMode::Strided,
                    "zbd" => ZoneMode::Zbd,
                    other => {
                        return Err(err(format!(
                            "unsupported zonemode '{other}' (none, strided or zbd)"
                        )))
                    }
                }
            }
            "zonesize" => self.zonesize = size(need()?)?,
            "zonerange" => self.zonerange = size(need()?)?,
            "zoneskip" => self.zoneskip = size(need()?)?,
            "norandommap" => self.norandommap = parse_bool(val).map_err(err)?,
            "randseed" => {
                self.randseed = size(need()?)?;
                self.randseed_set = true;
            }
            "randrepeat" => self.randrepeat = parse_bool(val).map_err(err)?,
            "random_distribution" => {
                let v = need()?;
                if v.contains(',') {
                    // fio 3.33 matches the distribution's name up to the
                    // first ',' and so fails per-direction values.
                    return Err(err(format!(
                        "'{v}': per-direction (',') distributions fail to parse in fio 3.33"
                    )));
                }
                self.random_distribution = parse_random_distribution(v).map_err(err)?;
                self.zone_split = Default::default();
                if let Some(rest) = v.strip_prefix("zoned_abs:") {
                    self.zone_split = parse_zoned(rest, true, kb).map_err(err)?;
                } else if let Some(rest) = v.strip_prefix("zoned:") {
                    self.zone_split = parse_zoned(rest, false, kb).map_err(err)?;
                }
            }
            "fadvise_hint" => {
                self.fadvise_hint = match need()? {
                    "0" => FadviseHint::Off,
                    "1" => FadviseHint::On,
                    "sequential" => FadviseHint::Sequential,
                    "random" => FadviseHint::Random,
                    other => {
                        return Err(err(format!(
                            "unsupported fadvise_hint '{other}' (0, 1, sequential, random)"
                        )))
                    }
                }
            }
            "invalidate" => self.invalidate = parse_bool(val).map_err(err)?,
            "thinktime" => self.thinktime_us = parse_time_us(need()?, false).map_err(err)?,
            "numjobs" => self.numjobs = parse_int(need()?, 1, 1 << 20).map_err(err)? as u32,
            "kb_base" => {
                self.kb_base = match need()? {
                    "1024" => 1024,
                    "1000" => 1000,
                    other => return Err(err(format!("bad kb_base '{other}' (1024 or 1000)"))),
                }
            }
            // steadystate.c: the window and criterion ([`crate::steadystate`]).
            k if crate::lat_target::option(&mut self.lat, k, val).is_some() => {
                crate::lat_target::option(&mut self.lat, k, val)
                    .unwrap_or(Ok(()))
                    .map_err(err)?
            }
            k if crate::steadystate::option(&mut self.ss, k, val).is_some() => {
                crate::steadystate::option(&mut self.ss, k, val)
                    .unwrap_or(Ok(()))
                    .map_err(err)?
            }
            // ioprio_set() for the job (and, in libaio/io_uring, cmdprio*
            // per I/O): the model's device has no I/O scheduler to order
            // by priority, so these change nothing it computes.
            "prio" => {
                parse_int(need()?, 0, 7).map_err(err)?;
            }
            "prioclass" => {
                parse_int(need()?, 0, 3).map_err(err)?;
            }
            // Where fio's I/O buffers live (libnuma, numa_set_membind etc.):
            // placement only, like cpus_allowed; the model has one node.
            // The mode's rules are fio's str_numa_mpol_cb().
            "numa_mem_policy" => {
                let v = need()?;
                let (mode, nodes) = match v.split_once(':') {
                    Some((m, n)) => (m, Some(n)),
                    None => (v, None),
                };
                let bad = match (mode, nodes) {
                    ("prefer", Some(n))
                        if n.is_empty() || !n.bytes().all(|c| c.is_ascii_digit()) =>
                    {
                        Some("one node only for 'prefer'")
                    }
                    ("prefer", None) => Some("one node is needed for 'prefer'"),
                    ("local" | "default", Some(_)) => Some("no nodelist for 'local' or 'default'"),
                    ("bind", None) => Some("a nodelist is needed for 'bind'"),
                    ("prefer" | "bind" | "interleave" | "local" | "default", _) => None,
                    _ => Some("memory policy should be: default, prefer, bind, interleave, local"),
                };
                if let Some(m) = bad {
                    return Err(err(format!("'{v}': {m}")));
                }
            }
            k if IGNORED.contains(&k) => {}
            k if crate::zbd::option(&mut self.zbd, k, val, kb).is_some() => {
                crate::zbd::option(&mut self.zbd, k, val, kb)
                    .unwrap_or(Ok(()))
                    .map_err(err)?
            }
            k if self
                .engine_opts
                .gpu
                .is_some_and(|mut g| g.option(k, val).is_some()) =>
            {
                if let Some(g) = self.engine_opts.gpu.as_mut() {
                    g.option(k, val).unwrap_or(Ok(())).map_err(err)?;
                }
            }
            k => {
                match crate::engines::engine_option(self.ioengine, &mut self.engine_opts, k, val) {
                    Some(r) => r.map_err(err)?,
                    None => match jobctl::apply(&mut self.ctl, k, val, kb) {
                        Some(r) => r.map_err(err)?,
                        None => match iolog::option(&mut self.iolog, k, val, kb, (file, e.line)) {
                            Some(r) => r.map_err(err)?,
                            None => return Err(err("unknown or unsupported fio option".into())),
                        },
                    },
                }
            }
        }
        Ok(())
    }

    /// fio's td_min_bs(): the smallest block size of any direction, ranges
    /// and splits included.
    pub(super) fn rw_min_bs(&self) -> u64 {
        (0..3)
            .map(|d| {
                if self.min_bs[d] == 0 {
                    self.bs[d]
                } else {
                    self.min_bs[d]
                }
            })
            .min()
            .unwrap_or(4096)
    }

    /// Sizes given in zones become bytes first (fio does it once the
    /// zone size is known, zbd_recalc_options_with_zone_granularity()).
    pub(super) fn finish(&self, file: &str, line: usize) -> Result<Vec<FioJob>, ParseError> {
        if self.iolog.read.is_some() {
            return self.finish_replay(file, line);
        }
        if self.nz.iter().all(|n| n.is_none()) {
            return self.finish_bytes(file, line);
        }
        let zs = self.zonesize;
        if zs == 0 {
            let name = self.name.clone().unwrap_or_default();
            return Err(perr(
                file,
                line,
                "zonesize",
                format!("job '{name}': a size in zones ('z') needs zonesize"),
            ));
        }
        let mut b = self.clone();
        let bytes = |n: Option<u64>| n.map(|n| n.saturating_mul(zs));
        if let Some(v) = bytes(self.nz[0]) {
            b.size = Some(v);
        }
        b.offset = bytes(self.nz[1]).unwrap_or(b.offset);
        b.io_size = bytes(self.nz[2]).unwrap_or(b.io_size);
        b.offset_increment = bytes(self.nz[3]).unwrap_or(b.offset_increment);
        b.zoneskip = bytes(self.nz[4]).unwrap_or(b.zoneskip);
        b.nz = [None; 5];
        b.finish_bytes(file, line)
    }

    pub(super) fn finish_bytes(&self, file: &str, line: usize) -> Result<Vec<FioJob>, ParseError> {
        let name = self.name.clone().unwrap_or_default();
        let herr = |opt: &str, msg: String| perr(file, line, opt, msg);
        let size = match (self.size, self.filesize) {
            (Some(s), _) => s,
            (None, Some(fs)) => {
                // fio: without size=, the job does every file's region.
                let nr = self.nr_files() as u64;
                if fs <= self.offset {
                    return Err(herr(
                        "filesize",
                        format!(
                            "job '{name}': filesize {fs} is not past offset {}",
                            self.offset
                        ),
                    ));
                }
                (fs - self.offset).saturating_mul(nr)
            }
            // A block device without size= is as big as the device
            // (fio's real_file_size); the machine's --disk-size fills it in.
            (None, None) if self.is_block_device() => 0,
            // fill_device (init.c fixup_options: size -1, the job ends at
            // ENOSPC): writes up to the capacity, which the machine's
            // --disk-size gives for a file system as for a device.
            (None, None) if self.ctl.ctl.fill_device && self.rw.has_writes() => 0,
            // fio takes the size of an existing file: one an earlier job
            // of the run sets up or writes (size_from_written_files).
            (None, None) if self.ioengine != IoEngine::CpuIo => 0,
            // cpuio does no I/O: fio needs no size for it.
            (None, None) if self.ioengine == IoEngine::CpuIo => {
                self.bs.iter().copied().max().unwrap_or(4096)
            }
            (None, None) => {
                return Err(herr(
                    "size",
                    // fio takes an existing file's size here (and refuses the
                    // job, with this message, when there is none); the
                    // model's runs start with no files.
                    format!("job '{name}': you need to specify size= (or filesize=): the model has no existing file to take the size from (give one with --existing-file-size)"),
                ));
            }
        };
        let size_from_file = size == 0
            && !self.is_block_device()
            && !(self.ctl.ctl.fill_device && self.rw.has_writes());
        let size_from_device = size == 0 && !size_from_file;
        self.check_engine(file, line, &name)?;
        let last_offset = u64::from(self.numjobs - 1)
            .checked_mul(self.offset_increment)
            .and_then(|i| i.checked_add(self.offset));
        if last_offset.and_then(|o| o.checked_add(size)).is_none() {
            return Err(herr(
                "offset",
                format!("job '{name}': offset + offset_increment * (numjobs - 1) + size overflows"),
            ));
        }
        // fio's fixup_options(): a range or split overrides bs; random
        // offsets align to ba (random jobs only, else min_bs); any ba other
        // than min_bs, and any non-uniform distribution, turn the map off.
        let random = self.rw.is_random();
        let mut min_bs = [0u64; 3];
        let mut max_bs = [0u64; 3];
        let mut ba = [0u64; 3];
        for d in 0..3 {
            min_bs[d] = if self.min_bs[d] == 0 {
                self.bs[d]
            } else {
                self.min_bs[d]
            };
            max_bs[d] = if self.max_bs[d] == 0 {
                self.bs[d]
            } else {
                self.max_bs[d]
            };
            ba[d] = if self.ba[d] == 0 || !random {
                min_bs[d]
            } else {
                self.ba[d]
            };
        }
        let rw_min_bs = min_bs.iter().copied().min().unwrap_or(4096);
        let t = self.rw.is_trim() as usize;
        let norandommap =
            self.norandommap || self.random_distribution != RandomDist::Random || ba != min_bs;
        if size < rw_min_bs && size != 0 {
            return Err(herr(
                "size",
                format!("job '{name}': size {size} is smaller than bs {rw_min_bs}"),
            ));
        }
        let strided = match self.zonemode {
            ZoneMode::None if self.zonesize != 0 => {
                return Err(herr(
                    "zonesize",
                    format!("job '{name}': zonemode=none and zonesize are not compatible"),
                ))
            }
            ZoneMode::None => false,
            ZoneMode::Strided if self.zonesize == 0 => {
                return Err(herr(
                    "zonesize",
                    format!("job '{name}': zonesize must be given with zonemode=strided"),
                ))
            }
            ZoneMode::Strided => true,
            ZoneMode::Zbd if self.zonesize == 0 => {
                return Err(herr(
                    "zonesize",
                    format!("job '{name}': zonemode=zbd on a regular file or a device that is not zoned needs zonesize (fio emulates the zones)"),
                ))
            }
            ZoneMode::Zbd => false,
            // fio: a zonesize without zonemode means strided.
            ZoneMode::NotSet => self.zonesize != 0,
        };
        let zonerange = if strided && self.zonerange == 0 {
            self.zonesize
        } else {
            self.zonerange
        };
        if strided && self.rw.is_random() && zonerange < rw_min_bs {
            return Err(herr(
                "zonerange",
                format!("job '{name}': zonerange {zonerange} is smaller than bs {rw_min_bs}"),
            ));
        }
        if random && self.random_distribution == RandomDist::ZonedAbs {
            // fio stops the job at its first I/O with "zoned_abs sizes
            // exceed file size"; say so up front.
            let span = if strided { zonerange } else { size };
            for d in 0..2 {
                let total: u64 = self.zone_split[d].iter().map(|z| z.size).sum();
                let lastb = span.saturating_sub(min_bs[d].saturating_sub(ba[d])) / ba[d];
                if total / ba[d] > lastb {
                    return Err(herr(
                        "random_distribution",
                        format!("job '{name}': zoned_abs sizes ({total}) exceed the file size"),
                    ));
                }
            }
        }
        let ctl = self.resolve_ctl(&name, size).map_err(|(o, m)| herr(o, m))?;
        let mut out = Vec::with_capacity(self.numjobs as usize);
        for clone in 0..self.numjobs {
            // init.c add_job() adds the clones after the parent counting
            // down: threads N, N+1, ... get subjob_number 0, numjobs-1,
            // ..., 1; that number is `$jobnum` in file names and the
            // offset_increment multiplier (checked with fio 3.33).
            let jobnum = if clone == 0 { 0 } else { self.numjobs - clone };
            // Cannot overflow: checked above for the last clone.
            let offset = self.offset + u64::from(jobnum) * self.offset_increment;
            if let (None, Some(fs)) = (self.size, self.filesize) {
                if fs <= offset {
                    return Err(herr(
                        "offset_increment",
                        format!("job '{name}': clone {jobnum} starts at {offset}, not before filesize {fs}"),
                    ));
                }
            }
            let files = self.job_files(&name, jobnum, size, offset);
            let filename = files[0].name.clone();
            // Without size=, a filesize range gives the clone its own total.
            let size = match self.size {
                Some(s) => s,
                None => files.iter().map(|f| f.size).sum(),
            };
            let mut ctl = ctl.clone();
            ctl.size_from_file = size_from_file;
            ctl.create_serialize = self.create_serialize;
            ctl.startdelay_us = self.startdelay(&name, jobnum);
            if clone > 0 {
                // fio clears these for the clones of a job (add_job).
                ctl.stonewall = false;
                ctl.new_group = false;
            }
            out.push(FioJob {
                name: name.clone(),
                filename,
                size,
                offset,
                rw: self.rw,
                rwmixread: self.rwmixread,
                bs: rw_min_bs,
                // A trim job's sizes are the trim direction's, kept in the
                // write slot (the generator draws its one direction there).
                min_bs: [min_bs[0], min_bs[1 + t]],
                max_bs: [max_bs[0], max_bs[1 + t]],
                ba: [ba[0], ba[1 + t]],
                bssplit: [self.bssplit[0].clone(), self.bssplit[1 + t].clone()],
                bs_unaligned: self.bs_unaligned,
                random_generator: self.random_generator.unwrap_or(RandomGenerator::Tausworthe),
                random_generator_set: self.random_generator.is_some(),
                randrepeat: self.randrepeat,
                randseed_set: self.randseed_set,
                allrandrepeat: self.allrandrepeat,
                zone_split: [self.zone_split[0].clone(), self.zone_split[1].clone()],
                percentage_random: [self.percentage_random[0], self.percentage_random[1]],
                rw_seq_nr: self.rw_seq_nr,
                rw_sequencer: self.rw_sequencer,
                thread_number: 0,
                ioengine: self.ioengine,
                direct: self.direct,
                iodepth: self.depths().0,
                iodepth_batch: self.depths().1,
                iodepth_batch_complete_min: self.depths().2,
                iodepth_batch_complete_max: self.depths().3,
                iodepth_low: self.depths().4,
                engine_opts: self.engine_opts.clone(),
                nrfiles: self.nr_files(),
                unlink: self.ctl.ctl.unlink,
                size_from_device,
                runtime_ns: (self.runtime_us > 0).then(|| self.runtime_us.saturating_mul(1000)),
                // fio's fixup_options: time_based needs a runtime, and is
                // dropped without one.
                time_based: self.time_based && self.runtime_us > 0,
                ramp_time_ns: self.ramp_time_us.saturating_mul(1000),
                loops: self.loops,
                io_size: (self.io_size > 0).then_some(self.io_size),
                number_ios: (self.number_ios > 0).then_some(self.number_ios),
                zonemode_strided: strided,
                ss: (self.ss.dur > 0).then_some(self.ss),
                lat_target: (self.lat.target_ns > 0).then_some(self.lat),
                zbd: (self.zonemode == ZoneMode::Zbd).then(|| crate::zbd::ZbdOpts {
                    zone_size: self.zonesize,
                    ..self.zbd.clone()
                }),
                zonesize: if strided { self.zonesize } else { 0 },
                zonerange: if strided { zonerange } else { 0 },
                zoneskip: if strided { self.zoneskip } else { 0 },
                norandommap,
                randseed: self.randseed,
                random_distribution: self.random_distribution,
                fadvise_hint: self.fadvise_hint,
                // fio's fixup_options: pre_read turns invalidate off.
                invalidate: self.invalidate && !self.ctl.ctl.pre_read,
                thinktime_us: self.thinktime_us,
                rw_seq_add: self.rw_seq_add,
                end_fsync: self.end_fsync,
                numjobs: 1,
                jobnum,
                source: format!("{file}:{line}"),
                groupid: 0,
                group_reporting: self.ctl.group_reporting,
                files,
                ctl,
                iolog: None,
                write_iolog: self.iolog.write.clone(),
            });
        }
        Ok(out)
    }
}
