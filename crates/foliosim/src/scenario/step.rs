//! The steps the model runs, one function per step (mmap, touch, pread
//! and pwrite, kv_get, munmap, madvise, fadvise, truncate, barrier, exit),
//! and the page or block accesses that touch, io and kv_get start, a slice
//! at a time.

use super::*;

impl<'a> Driver<'a> {
    /// A step other than a loop or fork.
    pub(super) fn op<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        id: usize,
        step: &'a Step,
        gen: usize,
    ) -> Result<Flow, String> {
        let line = step.line;
        let proc = self.threads[id].proc;
        k.core.now = self.threads[id].t;
        self.touch_own_memory(k, proc, STEP_OWN_PAGES, k.core.now);
        match &step.op {
            Op::MmapAnon { map, size } => self.mmap_anon(k, id, map, *size, line)?,
            Op::MmapFile(s) => self.mmap_file(k, id, s, line)?,
            Op::Touch(s) => self.touch(id, step, gen, s)?,
            Op::Io(s) => {
                self.io(id, step, gen, s)?;
                self.map_step_buf(k, id, s.bs);
                if self.threads[id].cur.is_none() {
                    self.unmap_step_buf(k, id);
                }
            }
            Op::KvGet(s) => self.kv_get(id, step, gen, s)?,
            Op::Munmap { map } => {
                let mi = self.mapped(id, map, line)?;
                k.core.cpu(k.core.cost.syscall);
                let m = self.procs[proc].maps.swap_remove(mi);
                self.unmap(k, proc, m);
            }
            Op::Madvise { map, advice } => {
                let mi = self.mapped(id, map, line)?;
                k.core.cpu(k.core.cost.syscall);
                self.madvise(k, proc, mi, *advice, line)?;
            }
            Op::Fsync { file } => {
                let fi = self.file_index(file, line)?;
                k.core.cpu(k.core.cost.syscall);
                k.file_write_and_wait_range(self.files[fi].mapping, 0, u64::MAX);
            }
            Op::Fadvise(s) => {
                let fi = self.file_index(&s.file, line)?;
                k.core.cpu(k.core.cost.syscall);
                self.fadvise(k, id, fi, s.advice, s.offset, s.len, line)?;
            }
            Op::Truncate { file, size } => self.truncate(k, file, *size, line)?,
            Op::Sleep { ns } => k.core.now += ns,
            Op::Compute { ns, sys: false } => {
                k.core.now += ns;
                self.user_ns += ns;
            }
            Op::Compute { ns, sys: true } => k.core.cpu(*ns),
            Op::Barrier { name } => return Ok(self.barrier(k, id, name)),
            Op::Exit => {
                let t = k.core.now;
                self.threads[id].t = t;
                self.end_proc(k, proc, t, false);
                return Ok(Flow::Parked);
            }
            Op::Loop { .. } | Op::Fork { .. } | Op::Fio { .. } => unreachable!("compiled away"),
        }
        let th = &mut self.threads[id];
        th.t = k.core.now;
        if th.cur.is_none() {
            th.pc += 1;
        }
        self.after_slice(k, id, true)
    }

    /// The mapping named `map` of the thread's process, or the step's error.
    fn mapped(&self, id: usize, map: &str, line: usize) -> Result<usize, String> {
        self.find_map(id, map).ok_or_else(|| {
            err(
                self.sc,
                line,
                "map",
                format!("'{map}' is not mapped by this process"),
            )
        })
    }

    /// mmap(MAP_PRIVATE|MAP_ANONYMOUS) of `size` bytes.
    fn mmap_anon<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        id: usize,
        map: &'a str,
        size: u64,
        line: usize,
    ) -> Result<(), String> {
        if self.own_map(id, map) {
            return Err(err(
                self.sc,
                line,
                "map",
                format!("'{map}' is already mapped"),
            ));
        }
        if size == 0 {
            return Err(err(self.sc, line, "size", "must be > 0"));
        }
        k.core.cpu(k.core.cost.syscall);
        let proc = self.threads[id].proc;
        let space = k.mmap_anon(self.procs[proc].mm, size);
        self.add_map(id, map, size.div_ceil(PAGE_SIZE), MapKind::Anon { space });
        Ok(())
    }

    /// mmap of a page-aligned range of a [[file]].
    fn mmap_file<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        id: usize,
        s: &'a MmapFileStep,
        line: usize,
    ) -> Result<(), String> {
        let sc = self.sc;
        let (map, file, offset) = (&s.map, &s.file, s.offset);
        if self.own_map(id, map) {
            return Err(err(sc, line, "map", format!("'{map}' is already mapped")));
        }
        let fi = self.file_index(file, line)?;
        let fsize = sc.files[fi].size;
        let len = if s.len == 0 {
            fsize.saturating_sub(offset)
        } else {
            s.len
        };
        if offset % PAGE_SIZE != 0 || offset + len > fsize || len == 0 {
            return Err(err(sc, line, "offset", format!("[{offset}, +{len}) is not a page-aligned range inside file '{file}' ({fsize} bytes)")));
        }
        k.core.cpu(k.core.cost.syscall);
        let proc = self.threads[id].proc;
        let mut open = self.open_file(fi, self.procs[proc].memcg);
        // Page tables of its own (a tmpfs file keeps one PTE per folio).
        if !k.core.files[open.mapping as usize].shmem {
            open.pte = k.core.mmap_ptes(open.mapping, open.memcg);
        }
        self.files[fi].mappers += 1;
        let kind = MapKind::File {
            file: fi,
            open,
            first: offset >> PAGE_SHIFT,
            private: s.private,
        };
        self.add_map(id, map, len.div_ceil(PAGE_SIZE), kind);
        Ok(())
    }

    /// Loads or stores to pages of a mapping.
    fn touch(&mut self, id: usize, step: &Step, gen: usize, s: &TouchStep) -> Result<(), String> {
        let mi = self.mapped(id, &s.map, step.line)?;
        let m = &self.procs[self.threads[id].proc].maps[mi];
        if let MapKind::File { private: true, .. } = m.kind {
            if s.write {
                return Err(err(
                    self.sc,
                    step.line,
                    "write",
                    "stores to a private file mapping (copy-on-write) are not modelled",
                ));
            }
        }
        let (mid, pages) = (m.id, m.pages);
        let target = Target::Map(mid);
        self.start_access(
            id, step, gen, &s.pattern, pages, &s.amount, s.write, s.think_ns, target,
        )
    }

    /// pread or pwrite of `bs` blocks of a file.
    fn io(&mut self, id: usize, step: &Step, gen: usize, s: &IoStep) -> Result<(), String> {
        let fi = self.file_index(&s.file, step.line)?;
        let (bs, direct) = (s.bs, s.direct);
        if bs == 0 || (direct && bs % 512 != 0) {
            let why = if direct {
                " for O_DIRECT (a multiple of 512)"
            } else {
                ""
            };
            let msg = format!("{bs} is not a valid block size{why}");
            return Err(err(self.sc, step.line, "bs", msg));
        }
        // Blocks of the [[file]]'s size; the last may be short (a short
        // read or write at the end, as pread/pwrite give).
        let blocks = self.sc.files[fi].size.div_ceil(bs);
        self.fd(id, fi);
        let target = Target::Io {
            file: fi,
            bs,
            direct,
            append: s.pattern == Pattern::Append,
        };
        self.start_access(
            id, step, gen, &s.pattern, blocks, &s.amount, s.write, s.think_ns, target,
        )
    }

    /// GETs or SCANs of a key-value store's sorted tables.
    fn kv_get(&mut self, id: usize, step: &Step, gen: usize, s: &KvGetStep) -> Result<(), String> {
        let sc = self.sc;
        let fi = self.file_index(&s.file, step.line)?;
        let bc = &mut self.procs[self.threads[id].proc].block_caches[fi];
        if bc.as_ref().map(|c| c.capacity()) != Some(s.block_cache) {
            *bc = Some(BlockCache::new(s.block_cache));
        }
        let layout = SstLayout::in_file(
            s.keys,
            s.record,
            PAGE_SIZE,
            s.table_size,
            s.level_base,
            &s.file,
            sc.files[fi].size,
        )
        .map_err(|e| err(sc, step.line, "keys", e))?;
        self.fd(id, fi);
        let slot = &mut self.threads[id].kv[gen];
        match slot {
            Some((l, c)) if c.capacity() == s.table_cache as usize => *l = layout,
            _ => *slot = Some((layout, TableCache::new(s.table_cache as usize))),
        }
        let target = Target::Kv {
            file: fi,
            records: s.records,
        };
        self.start_access(
            id, step, gen, &s.pattern, s.keys, &s.amount, false, s.think_ns, target,
        )
    }

    /// ftruncate within the [[file]]'s size.
    fn truncate<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        file: &str,
        size: u64,
        line: usize,
    ) -> Result<(), String> {
        let sc = self.sc;
        let fi = self.file_index(file, line)?;
        if size > sc.files[fi].size {
            return Err(err(
                sc,
                line,
                "size",
                format!(
                    "file '{file}' cannot grow past its [[file]] size ({} bytes) in the model",
                    sc.files[fi].size
                ),
            ));
        }
        k.core.cpu(k.core.cost.syscall);
        k.truncate_setsize(self.files[fi].mapping, size);
        Ok(())
    }

    /// Waits at the named barrier (released when all its threads arrive).
    fn barrier<P: ReclaimPolicy>(&mut self, k: &mut Kernel<P>, id: usize, name: &str) -> Flow {
        let bi = self
            .bar_names
            .iter()
            .position(|n| *n == name)
            .expect("compiled barrier");
        self.threads[id].t = k.core.now;
        self.threads[id].st = St::Barrier(bi);
        self.bars[bi].waiting.push(id);
        self.try_release(bi);
        Flow::Parked
    }

    #[allow(clippy::too_many_arguments)]
    fn start_access(
        &mut self,
        id: usize,
        step: &Step,
        gen: usize,
        pattern: &Pattern,
        n: u64,
        amount: &Amount,
        write: bool,
        think: u64,
        what: Target,
    ) -> Result<(), String> {
        let seed = {
            let th = &self.threads[id];
            let mut ident = th.ident.clone();
            ident.push(step.id);
            stream_seed(self.seed, &ident)
        };
        let th = &mut self.threads[id];
        let g = match &mut th.gens[gen] {
            // The same step again (a loop): the stream goes on, a
            // sequential pass starts over. A region of another size
            // (remapped) gets a new stream.
            Some(g) if g.len() == n => {
                g.restart();
                g
            }
            slot => slot.insert(
                AccessGen::new(pattern, n, seed)
                    .map_err(|e| err(self.sc, step.line, "pattern", e))?,
            ),
        };
        let left = match *amount {
            Amount::Passes(p) => Left::Count(p.saturating_mul(g.len())),
            Amount::Accesses(a) => Left::Count(a),
            Amount::Duration(d) => Left::Until(th.t.saturating_add(d)),
        };
        let done = match left {
            Left::Count(c) => c == 0,
            Left::Until(u) => th.t >= u,
        };
        if !done {
            th.cur = Some(Cur {
                left,
                think,
                write,
                gen,
                what,
            });
        }
        Ok(())
    }

    /// One access of the step in progress.
    pub(super) fn access<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        id: usize,
    ) -> Result<Flow, String> {
        let th = &mut self.threads[id];
        let mut cur = th.cur.expect("a step in progress");
        let proc = th.proc;
        k.core.now = th.t;
        k.core.current = self.procs[proc].mm;
        if k.core.cache_ext.any_active() {
            if self.ce_tasks.len() <= id {
                self.ce_tasks.resize(id + 1, None);
            }
            let p = &self.procs[proc];
            let ce = &mut k.core.cache_ext;
            let t = *self.ce_tasks[id].get_or_insert_with(|| {
                // pid 1000 + process (as the tracer's); the first thread's
                // tid is the pid, the others' 100000 + thread.
                let pid = 1000 + proc as u32;
                let tid = if p.threads.first() == Some(&id) {
                    pid
                } else {
                    100_000 + id as u32
                };
                // comm is the program's: the [[process]] name without the
                // instance suffix ("scan[0]" runs as "scan"); a forked
                // child keeps its parent's.
                let prog = p.name.split(['[', '/']).next().unwrap_or(&p.name);
                let comm: String = prog.chars().take(15).collect();
                ce.register_task(pid, tid, &comm)
            });
            ce.set_current(t);
        }
        if let Some(t) = k.core.trace.as_deref_mut() {
            // comm is at most TASK_COMM_LEN - 1 bytes.
            let comm: String = self.procs[proc].name.chars().take(15).collect();
            t.set_task(&comm, 1000 + proc as u32);
        }
        let idx = match th.oom_wait {
            Some(w) => match self.oom_synchronize(k, id, w)? {
                Some(idx) => idx,
                None => return Ok(Flow::Continue),
            },
            None => th.gens[cur.gen].as_mut().expect("generator").next_index(),
        };
        let ok = match cur.what {
            Target::Map(mid) => {
                let p = &mut self.procs[proc];
                let Some(m) = p.maps.iter_mut().find(|m| m.id == mid) else {
                    let line = self.step_line(&self.threads[id]);
                    return Err(err(
                        self.sc,
                        line,
                        "map",
                        "touched after another thread unmapped it",
                    ));
                };
                p.touches += 1;
                match &mut m.kind {
                    MapKind::Anon { space } => k.anon_access(*space, idx, p.memcg, cur.write),
                    MapKind::File { open, first, .. } => {
                        let index = *first + idx;
                        if cur.write {
                            let (ok, dirtied) = k.mmap_write_access(open, index);
                            if dirtied {
                                k.balance_dirty_pages();
                            }
                            ok
                        } else {
                            k.mmap_access(open, index)
                        }
                    }
                }
            }
            Target::Io {
                file,
                bs,
                direct,
                append,
            } => {
                let idx = if append {
                    let blocks = self.sc.files[file].size.div_ceil(bs);
                    let f = &mut self.files[file];
                    let i = (f.append_at / bs) % blocks;
                    f.append_at = (i + 1) * bs;
                    i
                } else {
                    idx
                };
                let p = &mut self.procs[proc];
                p.ios += 1;
                p.io_bytes += bs;
                let open = self.threads[id].fds[file]
                    .as_mut()
                    .expect("opened at the step's start");
                let pos = idx * bs;
                let ok = if direct {
                    let done = k.iomap_dio_rw(open, pos, bs, cur.write);
                    k.core.wait_until(done);
                    true
                } else if cur.write {
                    k.filemap_write(open, pos, bs).is_some()
                } else if bs == PAGE_SIZE {
                    let t0 = k.core.now;
                    let ok = k.filemap_read(open, pos, bs).is_some();
                    let d = k.core.now - t0;
                    if d >= foliosim_workload::scenario::READ_MISS_FLOOR_NS {
                        // Before or after a charge met a limit of its
                        // group or an ancestor (the executor's failcnt).
                        let mut m = p.memcg;
                        let mut pressure = false;
                        while m != 0 {
                            let mc = &k.core.memcgs[m as usize];
                            pressure |= mc.first_fail_ns > 0;
                            m = mc.parent;
                        }
                        let c = &mut p.read_misses[pressure as usize];
                        c.0 += 1;
                        c.1 += d;
                    }
                    ok
                } else {
                    k.filemap_read(open, pos, bs).is_some()
                };
                if ok {
                    self.touch_io_buffer(k, id, bs, !cur.write);
                }
                ok
            }
            Target::Kv { file, records } => {
                let th = &mut self.threads[id];
                let p = &mut self.procs[proc];
                p.ops += 1;
                let open = th.fds[file].as_mut().expect("opened at the step's start");
                let (layout, cache) = th.kv[cur.gen].as_mut().expect("made at the step's start");
                let blocks = p.block_caches[file]
                    .as_mut()
                    .expect("made at the step's start");
                let charge = layout.block_charge();
                let mut ok = true;
                foliosim_workload::lsm::plan(layout, cache, idx, records, |r| {
                    let (off, len) = r.range();
                    let data = matches!(r, KvRead::Data { .. });
                    if ok && !(data && blocks.lookup(off)) {
                        p.ios += 1;
                        p.io_bytes += len;
                        ok = k.filemap_read(open, off, len).is_some();
                        if ok && data {
                            blocks.insert(off, charge);
                        }
                    }
                });
                ok
            }
        };
        // The return to user space: memory.high reclaim and its penalty
        // sleep, which the thread's clock takes from the kernel's.
        k.mem_cgroup_handle_over_high();
        if !ok && !k.core.mms[self.procs[proc].mm as usize].oom_killed {
            if let Some(domain) = k.core.memcg_in_oom.take() {
                // The access is retried when the domain has room; the
                // wait is per task, the kernel's flag the current one's.
                let th = &mut self.threads[id];
                th.oom_wait = Some((domain, idx));
                th.t = k.core.now;
                return self.after_slice(k, id, true);
            }
            let line = self.step_line(&self.threads[id]);
            return Err(err(
                self.sc,
                line,
                "oom",
                format!(
                    "process {}: a charge failed and the OOM killer found no task to kill (the kernel would retry the fault forever)",
                    self.procs[proc].name
                ),
            ));
        }
        let th = &mut self.threads[id];
        th.t = k.core.now + cur.think;
        let finished = match &mut cur.left {
            Left::Count(c) => {
                *c -= 1;
                *c == 0
            }
            Left::Until(u) => th.t >= *u,
        };
        if finished {
            th.cur = None;
            th.pc += 1;
            self.unmap_step_buf(k, id);
        } else {
            th.cur = Some(cur);
        }
        self.after_slice(k, id, ok)
    }
}
