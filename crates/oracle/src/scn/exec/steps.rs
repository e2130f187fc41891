//! The scenario steps the oracle runs on the real kernel, one function per
//! step, over the step descriptions the model runs too
//! (foliosim_workload::scenario): mmap, touch, munmap, madvise, pread and
//! pwrite, kv_get, fadvise, compute, loops and forks.

use super::*;

/// Kernel time: reads of /dev/zero, whose cost is the kernel's clearing
/// of the buffer (a bare system call such as getppid() spends most of its
/// time in user space on entry and exit).
pub(super) fn compute_sys(ns: u64) -> Result<(), String> {
    let mut zero = std::fs::File::open("/dev/zero").map_err(|e| format!("open /dev/zero: {e}"))?;
    let mut buf = vec![0u8; 64 << 10];
    let until = Instant::now() + Duration::from_nanos(ns);
    while Instant::now() < until {
        for _ in 0..4 {
            std::io::Read::read(&mut zero, &mut buf).map_err(|e| format!("read /dev/zero: {e}"))?;
        }
    }
    Ok(())
}

/// User time: a loop of arithmetic.
pub(super) fn compute_user(ns: u64) {
    let until = Instant::now() + Duration::from_nanos(ns);
    let mut x = 0u64;
    while Instant::now() < until {
        for _ in 0..1000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
}

/// The inner steps `count` times or for `duration_ns`, whichever ends
/// first.
pub(super) fn run_loop(
    t: &mut ThreadCtx,
    count: Option<u64>,
    duration_ns: Option<u64>,
    steps: &[Step],
) -> Result<Flow, String> {
    let start = Instant::now();
    let mut k = 0u64;
    loop {
        if count.is_some_and(|c| k >= c) {
            break;
        }
        if duration_ns.is_some_and(|d| start.elapsed() >= Duration::from_nanos(d)) {
            break;
        }
        if let Flow::Exit = run_steps(t, steps)? {
            return Ok(Flow::Exit);
        }
        k += 1;
    }
    Ok(Flow::Next)
}

/// fork(): `count` workers, the same program in this process's cgroup,
/// waited for when `wait`.
pub(super) fn fork(t: &mut ThreadCtx, st: &Step, count: u32, wait: bool) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("fork: {e}"))?;
    let mut a = t.p.args.clone();
    a.fork = t.path.clone();
    let seq = t.forks;
    t.forks += 1;
    let mut kids = Vec::new();
    // fork() starts each child at once; spawning the program again
    // takes milliseconds each, which let the first workers finish
    // before the last began (scn-fork-pressure's workers peaked
    // at 295-305 MiB of memory+swap where fork()ed ones hold 320).
    // The workers wait at this gate until all are spawned.
    let gate = StartGate::new()?;
    a.start_fd = Some(gate.read);
    for j in 0..count {
        a.ident = t.ident.clone();
        a.ident.extend([st.id, seq, j as u64]);
        // The same program, in this process's cgroup (inherited),
        // on the CPUs after this process's.
        let mut c = Command::new(&exe);
        if let Some(cpu) = t.p.args.cpu {
            let w = cpu_for(&t.p.args.cpus, cpu, 1 + j as usize);
            a.cpu = Some(w);
            pin_on_spawn(&mut c, w);
        }
        let c = c
            .args(["oracle", "__scenario-proc"])
            .args(a.to_args())
            .stdin(std::process::Stdio::null())
            .spawn()
            .map_err(|e| format!("fork: {e}"))?;
        kids.push(c);
    }
    drop(gate);
    if wait {
        for mut c in kids {
            let s = c.wait().map_err(|e| format!("waitpid: {e}"))?;
            // Killed (the OOM killer) is an outcome; an error is ours.
            if s.code().is_some_and(|c| c != 0) {
                return Err(format!("a forked worker failed ({s})"));
            }
        }
    }
    Ok(())
}

/// mmap(MAP_PRIVATE|MAP_ANONYMOUS) of `size` bytes, named `map`.
pub(super) fn mmap_anon(t: &mut ThreadCtx, map: &str, size: &u64) -> Result<(), String> {
    // SAFETY: a fresh private anonymous mapping; checked below.
    let a = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            *size as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if a == libc::MAP_FAILED {
        return Err(format!(
            "mmap {size} bytes: {}",
            std::io::Error::last_os_error()
        ));
    }
    insert_map(
        t,
        map,
        Region {
            addr: a as usize,
            len: *size as usize,
        },
    )?;
    Ok(())
}

/// mmap of a file (MAP_SHARED, or MAP_PRIVATE), named after the step's map.
pub(super) fn mmap_file(t: &mut ThreadCtx, s: &MmapFileStep) -> Result<(), String> {
    let file = s.file.as_str();
    let (f, size) = open(t, file, false)?;
    let real = f.metadata().map_err(|e| e.to_string())?.len().max(size);
    let len = if s.len == 0 {
        real.saturating_sub(s.offset)
    } else {
        s.len
    };
    if len == 0 {
        return Err(format!(
            "mmap of '{file}': nothing to map at offset {}",
            s.offset
        ));
    }
    let flags = if s.private {
        libc::MAP_PRIVATE
    } else {
        libc::MAP_SHARED
    };
    // SAFETY: a fresh mapping of an open file; checked below.
    let a = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            flags,
            f.as_raw_fd(),
            s.offset as libc::off_t,
        )
    };
    if a == libc::MAP_FAILED {
        return Err(format!(
            "mmap '{file}': {}",
            std::io::Error::last_os_error()
        ));
    }
    insert_map(
        t,
        &s.map,
        Region {
            addr: a as usize,
            len: len as usize,
        },
    )?;
    Ok(())
}

/// Loads or stores to pages of a mapping, one word per page.
pub(super) fn touch(t: &mut ThreadCtx, st: &Step, s: &TouchStep) -> Result<(), String> {
    let r = region(t, &s.map)?;
    let n = (r.len as u64).div_ceil(PAGE);
    let g = access_gen(t, st, &s.pattern, n)?;
    let mut b = Budget::new(&s.amount, n);
    let mut i = 0u64;
    let mut sum = 0u64;
    while b.take(i) {
        let page = g.next_index();
        let p = (r.addr + (page * PAGE) as usize) as *mut u64;
        // SAFETY: page < n, so p is inside the mapping (aligned).
        unsafe {
            if s.write {
                std::ptr::write_volatile(p, touch_word(page, i));
            } else {
                sum = sum.wrapping_add(std::ptr::read_volatile(p as *const u8) as u64);
            }
        }
        i += 1;
        think(s.think_ns);
    }
    std::hint::black_box(sum);
    Ok(())
}

/// munmap of a mapping this process made.
pub(super) fn munmap(t: &mut ThreadCtx, map: &str) -> Result<(), String> {
    let r =
        t.p.maps
            .lock()
            .unwrap()
            .remove(map)
            .ok_or_else(|| format!("no mapping named '{map}' in this process"))?;
    // SAFETY: exactly a mapping this process made and still holds.
    unsafe { libc::munmap(r.addr as *mut _, r.len) };
    Ok(())
}

/// madvise over a whole mapping.
pub(super) fn madvise(t: &mut ThreadCtx, map: &str, advice: &Madvice) -> Result<(), String> {
    let r = region(t, map)?;
    // SAFETY: advice over a mapping this process holds.
    if unsafe { libc::madvise(r.addr as *mut _, r.len, madvice(*advice)) } != 0 {
        return Err(format!(
            "madvise '{map}': {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// pread or pwrite of `bs` blocks; buffered 4 KiB reads are timed.
pub(super) fn io(t: &mut ThreadCtx, st: &Step, s: &IoStep) -> Result<(), String> {
    let file = s.file.as_str();
    let (f, size) = thread_file(t, file, s.direct)?;
    let bs = s.bs.max(1);
    let n = (size / bs).max(1);
    let pr = t.p;
    let cursor = if s.write && s.pattern == Pattern::Append {
        Some(append_cursor(t, file)?)
    } else {
        None
    };
    let g = access_gen(t, st, &s.pattern, n)?;
    let mut buf = AlignedBuf::new(bs as usize)?;
    let mut b = Budget::new(&s.amount, n);
    let mut i = 0u64;
    // Buffered 4 KiB reads are timed: the misses are the run's own
    // measure of the device (read_miss_summary).
    let timed = !s.write && !s.direct && bs == PAGE;
    let mut misses = Vec::new();
    let mut pressured = (0u64, 0u64);
    let mut seen = 0usize;
    while b.take(i) {
        let off = match cursor {
            Some(c) => {
                let at = c.fetch_add(bs, std::sync::atomic::Ordering::Relaxed);
                (at / bs % n) * bs
            }
            None => g.next_index() * bs,
        };
        let r = if s.write {
            f.write_all_at(buf.slice(bs as usize), off)
        } else if timed {
            let t0 = monotonic_ns();
            let r = f.read_at(buf.slice(bs as usize), off).map(|_| ());
            let d = monotonic_ns() - t0;
            // Misses before pressure and after it, apart.
            if d >= READ_MISS_FLOOR_NS {
                if !pr.pressure.load(std::sync::atomic::Ordering::Relaxed) {
                    if misses.len() < READ_MISS_CAP {
                        misses.push(d.min(u32::MAX as u64) as u32);
                    }
                    // Counted apart from what is kept: past the cap
                    // the groups are still looked at every 32nd.
                    seen += 1;
                    if seen % PRESSURE_CHECK_EVERY == 0 && under_pressure(&pr.failcnt) {
                        pr.pressure
                            .store(true, std::sync::atomic::Ordering::Relaxed);
                    }
                } else {
                    pressured.0 += 1;
                    pressured.1 += d;
                }
            }
            r
        } else {
            f.read_at(buf.slice(bs as usize), off).map(|_| ())
        };
        r.map_err(|e| {
            format!(
                "{} '{file}' at {off}: {e}",
                if s.write { "pwrite" } else { "pread" }
            )
        })?;
        i += 1;
        think(s.think_ns);
    }
    if !misses.is_empty() {
        t.p.read_misses.lock().unwrap().extend(misses);
    }
    if pressured.0 > 0 {
        let mut m = t.p.pressure_misses.lock().unwrap();
        m.0 += pressured.0;
        m.1 += pressured.1;
    }
    Ok(())
}

/// GETs or SCANs of a key-value store's sorted tables.
pub(super) fn kv_get(t: &mut ThreadCtx, st: &Step, s: &KvGetStep) -> Result<(), String> {
    let file = s.file.as_str();
    let (f, size) = thread_file(t, file, false)?;
    {
        let mut bcs = t.p.block_caches.lock().unwrap();
        let bc = bcs
            .entry(s.file.clone())
            .or_insert_with(|| foliosim_workload::lsm::BlockCache::new(s.block_cache));
        if bc.capacity() != s.block_cache {
            *bc = foliosim_workload::lsm::BlockCache::new(s.block_cache);
        }
    }
    let l = foliosim_workload::lsm::SstLayout::in_file(
        s.keys,
        s.record,
        4096,
        s.table_size,
        s.level_base,
        file,
        size,
    )
    .map_err(|e| format!("kv_get: {e}"))?;
    let mut cache = t
        .tables
        .remove(&st.id)
        .filter(|c| c.capacity() == s.table_cache as usize)
        .unwrap_or_else(|| foliosim_workload::lsm::TableCache::new(s.table_cache as usize));
    let ops = &t.p.ops;
    let block_caches = &t.p.block_caches;
    let g = access_gen(t, st, &s.pattern, s.keys)?;
    let mut buf = AlignedBuf::new(l.index_bytes.max(l.block_bytes).max(4096) as usize)?;
    let mut b = Budget::new(&s.amount, s.keys);
    let mut i = 0u64;
    let mut res = Ok(());
    while b.take(i) {
        foliosim_workload::lsm::plan(&l, &mut cache, g.next_index(), s.records, |r| {
            let (off, len) = r.range();
            let data = matches!(r, foliosim_workload::lsm::KvRead::Data { .. });
            // The lock is not held across the read: LevelDB's
            // readers look up and insert, and read in between.
            let cached = data && {
                let mut bcs = block_caches.lock().unwrap();
                bcs.get_mut(file).is_some_and(|bc| bc.lookup(off))
            };
            if res.is_ok() && !cached {
                res = f.read_at(buf.slice(len as usize), off).map(|_| ());
                if res.is_ok() && data {
                    let mut bcs = block_caches.lock().unwrap();
                    if let Some(bc) = bcs.get_mut(file) {
                        bc.insert(off, l.block_charge());
                    }
                }
            }
        });
        res.as_ref().map_err(|e| format!("pread '{file}': {e}"))?;
        ops.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        i += 1;
        think(s.think_ns);
    }
    t.tables.insert(st.id, cache);
    Ok(())
}

/// posix_fadvise of a range of a file.
pub(super) fn fadvise(t: &mut ThreadCtx, s: &FadviseStep) -> Result<(), String> {
    let file = s.file.as_str();
    let (f, _) = thread_file(t, file, false)?;
    // SAFETY: advice on an open descriptor.
    let r = unsafe {
        libc::posix_fadvise(
            f.as_raw_fd(),
            s.offset as i64,
            s.len as i64,
            fadvice(s.advice),
        )
    };
    if r != 0 {
        return Err(format!(
            "fadvise '{file}': {}",
            std::io::Error::from_raw_os_error(r)
        ));
    }
    Ok(())
}
