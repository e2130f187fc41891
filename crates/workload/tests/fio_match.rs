//! foliosim's I/O generator against real fio: for each job below, fio 3.33
//! runs it with `ioengine=null` (no disk I/O) and logs every I/O's offset,
//! size and direction (`write_lat_log` with `log_offset=1`: one log per
//! job, named by fio's thread number, so numjobs clones stay apart); the
//! test asserts `IoGen` yields exactly the same sequence.
//!
//! Skipped, with a printed reason, where fio is missing or is not 3.33
//! (the sequences are 3.33's: io_u.c has changed since, e.g. how
//! sequential writes wrap); under CI=true that fails instead.

use foliosim_workload::fio::parse_job_str;
use foliosim_workload::iogen::{Dir, Io, IoGen};
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "../../../tests/require.rs"]
mod require;

/// One job: its options (without filename), the I/Os compared, and the
/// clone compared (fio thread number, 1-based).
struct Case {
    name: &'static str,
    opts: &'static str,
    max_ios: usize,
    thread: u32,
}

const CASES: &[Case] = &[
    // The random map's whole pass, the busy-block moves included.
    Case {
        name: "randread_map",
        opts: "rw=randread\nsize=64m\n",
        max_ios: 20_000,
        thread: 1,
    },
    Case {
        name: "norandommap",
        opts: "rw=randread\nsize=64m\nnorandommap\n",
        max_ios: 4000,
        thread: 1,
    },
    Case {
        name: "zipf",
        opts: "rw=randread\nsize=64m\nrandom_distribution=zipf:1.2\n",
        max_ios: 4000,
        thread: 1,
    },
    Case {
        name: "pareto",
        opts: "rw=randread\nsize=64m\nrandom_distribution=pareto:0.3\n",
        max_ios: 4000,
        thread: 1,
    },
    Case {
        name: "normal",
        opts: "rw=randread\nsize=64m\nrandom_distribution=normal:10\n",
        max_ios: 4000,
        thread: 1,
    },
    Case {
        name: "zoned",
        opts: "rw=randread\nsize=64m\nrandom_distribution=zoned:50/5:30/15:20/80\n",
        max_ios: 4000,
        thread: 1,
    },
    Case {
        name: "zoned_abs",
        opts: "rw=randrw\nsize=64m\nrandom_distribution=zoned_abs:60/4m:40/32m\n",
        max_ios: 20_000,
        thread: 1,
    },
    Case {
        name: "lfsr",
        opts: "rw=randread\nsize=64m\nrandom_generator=lfsr\n",
        max_ios: 20_000,
        thread: 1,
    },
    Case {
        name: "tausworthe64",
        opts: "rw=randread\nsize=64m\nrandom_generator=tausworthe64\n",
        max_ios: 20_000,
        thread: 1,
    },
    Case {
        name: "bssplit",
        opts: "rw=randread\nsize=64m\nbssplit=4k/50:64k/50\n",
        max_ios: 4000,
        thread: 1,
    },
    Case {
        name: "bssplit_rw",
        opts: "rw=randrw\nsize=64m\nbssplit=4k/20:8k:64k/10,16k/70:4k/\n",
        max_ios: 4000,
        thread: 1,
    },
    Case {
        name: "bsrange",
        opts: "rw=randread\nsize=64m\nbsrange=4k-64k\n",
        max_ios: 4000,
        thread: 1,
    },
    Case {
        name: "bsrange_unaligned",
        opts: "rw=read\nsize=16m\nbsrange=1k-10k\nbs_unaligned\n",
        max_ios: 4000,
        thread: 1,
    },
    Case {
        name: "bs_per_dir",
        opts: "rw=randrw\nsize=64m\nbs=4k-16k\n",
        max_ios: 4000,
        thread: 1,
    },
    Case {
        name: "blockalign",
        opts: "rw=randread\nsize=16m\nbs=8k\nba=2k\n",
        max_ios: 4000,
        thread: 1,
    },
    Case {
        name: "randrw70",
        opts: "rw=randrw\nsize=64m\nrwmixread=70\n",
        max_ios: 20_000,
        thread: 1,
    },
    Case {
        name: "rw_seq",
        opts: "rw=rw\nsize=16m\nrwmixread=30\n",
        max_ios: 4000,
        thread: 1,
    },
    Case {
        name: "backwards",
        opts: "rw=read:-8k\nsize=16m\n",
        max_ios: 4000,
        thread: 1,
    },
    Case {
        name: "holed",
        opts: "rw=write:12k\nsize=16m\n",
        max_ios: 4000,
        thread: 1,
    },
    Case {
        name: "randread_seq8",
        opts: "rw=randread:8\nsize=16m\n",
        max_ios: 4000,
        thread: 1,
    },
    Case {
        name: "randread_ident",
        opts: "rw=randread:4\nrw_sequencer=identical\nsize=16m\n",
        max_ios: 4000,
        thread: 1,
    },
    Case {
        name: "perc_random",
        opts: "rw=randrw\nsize=16m\npercentage_random=30,80\n",
        max_ios: 4000,
        thread: 1,
    },
    // init.c/filesetup.c get_start_offset(): clone N starts at
    // offset + N * offset_increment (byte values: no alignment).
    Case {
        name: "offset_increment",
        opts: "rw=write\nsize=512k\noffset=4k\noffset_increment=640k\nnumjobs=3\n",
        max_ios: 128,
        thread: 3,
    },
    Case {
        name: "numjobs",
        opts: "rw=randread\nsize=16m\nnumjobs=2\n",
        max_ios: 4000,
        thread: 2,
    },
    Case {
        name: "randseed",
        opts: "rw=randrw\nsize=16m\nrandseed=1234\nbsrange=4k-32k\n",
        max_ios: 4000,
        thread: 1,
    },
    Case {
        name: "randseed_zipf",
        opts: "rw=randread\nsize=16m\nrandseed=1234\nrandom_distribution=zipf:0.8\n",
        max_ios: 4000,
        thread: 1,
    },
    // Each loop re-seeds (randrepeat): the second pass repeats the first.
    Case {
        name: "loops",
        opts: "rw=randread\nsize=4m\nloops=2\n",
        max_ios: 4000,
        thread: 1,
    },
    Case {
        name: "allrandrepeat",
        opts: "rw=randrw\nsize=16m\nallrandrepeat=1\nbsrange=4k-16k\nrandseed=77\n",
        max_ios: 4000,
        thread: 1,
    },
    Case {
        name: "randrepeat0_randseed",
        opts: "rw=randread\nsize=16m\nrandrepeat=0\nrandseed=77\nloops=2\n",
        max_ios: 8192,
        thread: 1,
    },
    // Holed reads over several loops (the oracle's strided cases).
    Case {
        name: "holed_loops",
        opts: "rw=read:60k\nsize=16m\nloops=3\n",
        max_ios: 4000,
        thread: 1,
    },
    // Jobs starting at an offset, on a file laid out beforehand (see LAID_OUT).
    Case {
        name: "offset_rand",
        opts: "rw=randrw\noffset=1m\nsize=8m\nbsrange=4k-16k\n",
        max_ios: 4000,
        thread: 1,
    },
    Case {
        name: "offset_back",
        opts: "rw=read:-8k\noffset=1m\nsize=8m\n",
        max_ios: 4000,
        thread: 1,
    },
];

/// Files created (sparse) before fio runs, so that fio's file size is
/// `offset + size` as for a file it lays out itself; without one the null
/// engine takes the file to be `size` long.
const LAID_OUT: &[(&str, u64)] = &[("offset_rand", 9 << 20), ("offset_back", 9 << 20)];

fn fio_version() -> Result<String, String> {
    let out = Command::new("fio")
        .arg("--version")
        .output()
        .map_err(|e| format!("fio not runnable: {e}"))?;
    let v = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if v != "fio-3.33" {
        return Err(format!("fio is {v:?}, these sequences are fio-3.33's"));
    }
    Ok(v)
}

/// The I/Os in a clat log written with log_offset=1: "msec, lat, ddir,
/// bs, offset, prio" per I/O, in completion order (issue order: the null
/// engine completes each I/O at once).
fn read_log(path: &Path) -> Vec<Io> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(|l| {
            let f: Vec<u64> = l.split(',').map(|x| x.trim().parse().unwrap()).collect();
            Io {
                offset: f[4],
                len: f[3],
                dir: if f[2] == 0 { Dir::Read } else { Dir::Write },
            }
        })
        .collect()
}

/// The job as foliosim parses it; fio's copy adds the engine and the log.
fn job_text(dir: &Path, c: &Case) -> String {
    let data = dir.join(format!("{}.data", c.name));
    format!("[{}]\nfilename={}\n{}", c.name, data.display(), c.opts)
}

/// Start fio on the case (fio spends most of its time waiting, so the
/// cases run side by side).
fn start_fio(dir: &Path, c: &Case) -> std::io::Result<std::process::Child> {
    let fio_job = format!(
        "{}ioengine=null\nwrite_lat_log={}\nlog_offset=1\n",
        job_text(dir, c),
        dir.join(c.name).display()
    );
    let jf = dir.join(format!("{}.fio", c.name));
    std::fs::write(&jf, &fio_job)?;
    if let Some((_, len)) = LAID_OUT.iter().find(|(n, _)| *n == c.name) {
        std::fs::File::create(dir.join(format!("{}.data", c.name)))?.set_len(*len)?;
    }
    Command::new("fio")
        .arg("--output=/dev/null")
        .arg(&jf)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
}

fn check_case(
    dir: &Path,
    c: &Case,
    fio: std::io::Result<std::process::Child>,
) -> Result<(), String> {
    let out = fio
        .and_then(|f| f.wait_with_output())
        .map_err(|e| format!("{}: fio: {e}", c.name))?;
    let job = job_text(dir, c);
    let prefix = dir.join(c.name);
    if !out.status.success() {
        return Err(format!(
            "{}: fio failed: {}",
            c.name,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let log = PathBuf::from(format!("{}_clat.{}.log", prefix.display(), c.thread));
    let want = read_log(&log);
    let jobs = parse_job_str(&job, "fio_match").map_err(|e| e.to_string())?;
    let j = jobs
        .iter()
        .find(|j| j.thread_number == c.thread)
        .ok_or_else(|| format!("{}: no thread {}", c.name, c.thread))?;
    let mut g = IoGen::new(j, 0);
    let got: Vec<Io> = std::iter::from_fn(|| g.next_io()).take(c.max_ios).collect();
    let n = want.len().min(c.max_ios);
    if want.len() < 100 {
        return Err(format!("{}: fio logged only {} I/Os", c.name, want.len()));
    }
    for i in 0..n {
        if got.get(i) != Some(&want[i]) {
            return Err(format!(
                "{}: I/O {i} differs: fio {:?}, foliosim {:?} (previous: {:?})",
                c.name,
                want[i],
                got.get(i),
                i.checked_sub(1).map(|p| want[p])
            ));
        }
    }
    if got.len() != n {
        return Err(format!(
            "{}: fio issued {} I/Os, foliosim {} (of at most {})",
            c.name,
            want.len(),
            got.len(),
            c.max_ios
        ));
    }
    Ok(())
}

#[test]
fn iogen_matches_fio_3_33() {
    if require::tool("fio", "fio").is_none() {
        return;
    }
    let version = match fio_version() {
        Ok(v) => v,
        Err(why) => {
            require::skip(&why);
            return;
        }
    };
    let dir = std::env::temp_dir().join(format!("foliosim-fio-match-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let running: Vec<_> = CASES.iter().map(|c| start_fio(&dir, c)).collect();
    let mut failures = Vec::new();
    for (c, fio) in CASES.iter().zip(running) {
        if let Err(e) = check_case(&dir, c, fio) {
            failures.push(e);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        failures.is_empty(),
        "{version}: {} of {} jobs differ:\n{}",
        failures.len(),
        CASES.len(),
        failures.join("\n")
    );
}
