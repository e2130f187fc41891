use super::*;

fn one(text: &str) -> FioJob {
    let mut v = parse_job_str(text, "t.fio").unwrap();
    assert_eq!(v.len(), 1);
    v.remove(0)
}

fn err(text: &str) -> String {
    parse_job_str(text, "t.fio").unwrap_err().to_string()
}

fn args(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

#[test]
fn defaults_are_fios() {
    let j = one("[a]\nsize=1m\n");
    assert_eq!(j.name, "a");
    assert_eq!(j.filename, "a.0.0");
    assert_eq!(j.size, 1 << 20);
    assert_eq!(j.rw, Rw::Read);
    assert_eq!(j.bs, 4096);
    assert_eq!(j.ioengine, IoEngine::Psync);
    assert_eq!(j.rwmixread, 50);
    assert_eq!(j.randseed, 0x89);
    assert_eq!(j.fadvise_hint, FadviseHint::On);
    assert!(j.invalidate && !j.direct && !j.time_based && !j.norandommap);
    assert_eq!(j.loops, 1);
    assert_eq!(j.runtime_ns, None);
    assert_eq!(j.io_size, None);
    assert!(!j.zonemode_strided);
    assert_eq!(j.source, "t.fio:1");
}

#[test]
fn sizes_follow_kb_base() {
    assert_eq!(parse_size("4k", 1024), Ok(4096));
    assert_eq!(parse_size("4KB", 1024), Ok(4096));
    assert_eq!(parse_size("4KiB", 1024), Ok(4000));
    assert_eq!(parse_size("4KiB", 1000), Ok(4096));
    assert_eq!(parse_size("4k", 1000), Ok(4000));
    assert_eq!(parse_size("600M", 1024), Ok(600 << 20));
    assert_eq!(parse_size("3072M", 1024), Ok(3072 << 20));
    assert_eq!(parse_size("0x89", 1024), Ok(0x89));
    assert_eq!(parse_size("512b", 1024), Ok(512));
    assert!(parse_size("12Q", 1024).is_err());
    assert!(parse_size("50%", 1024).unwrap_err().contains("percentages"));
    assert!(parse_size("4ki", 1024).unwrap_err().contains("ambiguous"));
    assert!(parse_size("99999999999p", 1024)
        .unwrap_err()
        .contains("too large"));
    // kb_base in the same section applies whatever the order.
    let j = one("[a]\nsize=1m\nkb_base=1000\n");
    assert_eq!(j.size, 1_000_000);
}

#[test]
fn times_follow_fio_units() {
    assert_eq!(parse_time_us("600", true), Ok(600_000_000));
    assert_eq!(parse_time_us("1m", true), Ok(60_000_000));
    assert_eq!(parse_time_us("5m", true), Ok(300_000_000));
    assert_eq!(parse_time_us("250ms", true), Ok(250_000));
    assert_eq!(parse_time_us("100", false), Ok(100));
    assert_eq!(parse_time_us("2s", false), Ok(2_000_000));
    assert!(parse_time_us("5min", true).is_err());
    let j = one("[a]\nsize=1m\nruntime=2\nramp_time=10ms\nthinktime=120ms\n");
    assert_eq!(j.runtime_ns, Some(2_000_000_000));
    assert_eq!(j.ramp_time_ns, 10_000_000);
    assert_eq!(j.thinktime_us, 120_000);
}

#[test]
fn global_applies_to_later_jobs_and_numjobs_clones() {
    let text = "; comment\n[global]\nbs=8k # trailing\nsize=1m\n\n[a]\nrw=randread\nnumjobs=3\n[b]\nfilename=shared\ndirectory=/mnt\nnumjobs=2\nbs=4k\n";
    let v = parse_job_str(text, "t.fio").unwrap();
    assert_eq!(v.len(), 5);
    let names: Vec<_> = v
        .iter()
        .map(|j| (j.name.as_str(), j.jobnum, j.filename.as_str(), j.bs))
        .collect();
    assert_eq!(
        names,
        vec![
            // fio 3.33 adds clones counting down (add_job).
            ("a", 0, "a.0.0", 8192),
            ("a", 2, "a.2.0", 8192),
            ("a", 1, "a.1.0", 8192),
            ("b", 0, "/mnt/shared", 4096),
            ("b", 1, "/mnt/shared", 4096),
        ]
    );
    assert!(v.iter().all(|j| j.numjobs == 1));
    assert_eq!(v[3].source, "t.fio:9");
}

#[test]
fn filename_format_and_directory() {
    let v = parse_cmdline(&args(
        "--directory=/mnt/ramdisk --filename_format='test.$jobnum.img' --name=cached --numjobs=2 --size=3072M",
    ))
    .unwrap();
    assert_eq!(v[0].filename, "/mnt/ramdisk/test.0.img");
    assert_eq!(v[1].filename, "/mnt/ramdisk/test.1.img");
    assert_eq!(make_filename(Some("$JobName-$filenum"), "x", 3, 0), "x-0");
}

#[test]
fn seed000_command_line() {
    let v = parse_cmdline(&args(
        "--name=hot_ws --rw=read --bs=4K --size=600M --runtime=600 --zonemode=strided --zonesize=4K --zonerange=64K --time_based --direct=0 --filename=hot_data.bin --ioengine=mmap --fadvise_hint=0 --group_reporting --numjobs=1",
    ))
    .unwrap();
    assert_eq!(v.len(), 1);
    let j = &v[0];
    assert_eq!(j.filename, "hot_data.bin");
    assert_eq!(j.size, 600 << 20);
    assert!(j.zonemode_strided && j.time_based);
    assert_eq!((j.zonesize, j.zonerange, j.zoneskip), (4096, 65536, 0));
    assert_eq!(j.runtime_ns, Some(600_000_000_000));
    assert_eq!(j.ioengine, IoEngine::Mmap);
    assert_eq!(j.fadvise_hint, FadviseHint::Off);
    assert_eq!(j.source, "<command line>:1");
}

#[test]
fn cmdline_globals_separate_values_and_errors() {
    let v = parse_cmdline(&args(
        "--size 1m --bs=8k --name=a --rw randread --name=b --rw=write",
    ))
    .unwrap();
    assert_eq!(v.len(), 2);
    assert_eq!((v[0].rw, v[0].bs, v[0].size), (Rw::RandRead, 8192, 1 << 20));
    assert_eq!(
        (v[1].rw, v[1].source.as_str()),
        (Rw::Write, "<command line>:7")
    );
    let e = parse_cmdline(&args("--name=a --size=1m --iodepth=4 --bogus=1")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "fio option --bogus (argument 4): unknown or unsupported fio option"
    );
    let e = parse_cmdline(&args("--name=a --rw")).unwrap_err();
    assert_eq!(e.to_string(), "fio option --rw (argument 2): needs a value");
    let e = parse_cmdline(&args("--name=a")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "fio option --size (argument 1): job 'a': you need to specify size= (or filesize=): the model has no existing file to take the size from (give one with --existing-file-size)"
    );
}

#[test]
fn rwmix_zones_and_distributions() {
    let j = one("[a]\nsize=1m\nrw=randrw\nrwmixwrite=30\nrandom_distribution=zipf:0.8\n");
    assert_eq!(j.rwmixread, 70);
    assert_eq!(j.random_distribution, RandomDist::Zipf(0.8));
    let j = one("[a]\nsize=1m\nrandom_distribution=pareto\n");
    assert_eq!(j.random_distribution, RandomDist::Pareto(0.2));
    let j = one("[a]\nsize=1m\nzonesize=4k\n");
    assert!(j.zonemode_strided);
    assert_eq!(j.zonerange, 4096, "zonerange defaults to zonesize");
    assert!(err("[a]\nsize=1m\nzonemode=none\nzonesize=4k\n").contains("not compatible"));
    assert_eq!(
        err("[a]\nsize=1m\nzonemode=strided\n"),
        "t.fio:1: zonesize: job 'a': zonesize must be given with zonemode=strided"
    );
}

#[test]
fn block_sizes_per_direction_ranges_and_splits() {
    let j = one("[a]\nsize=1m\nrw=randrw\nbs=4k,8k\n");
    assert_eq!(
        (j.min_bs, j.max_bs, j.bs),
        ([4096, 8192], [4096, 8192], 4096)
    );
    // fio 3.33 reads bs=4k-16k as read 4k, write (and trim) 16k.
    let j = one("[a]\nsize=1m\nbs=4k-16k\n");
    assert_eq!((j.min_bs, j.max_bs), ([4096, 16384], [4096, 16384]));
    // An empty first value leaves the read size alone.
    let j = one("[a]\nsize=1m\nbs=,8k\n");
    assert_eq!(j.min_bs, [4096, 8192]);
    // A trailing ',' stops the copy to the later directions.
    let j = one("[a]\nsize=1m\nbs=8k,\n");
    assert_eq!(j.min_bs, [8192, 4096]);
    let j = one("[a]\nsize=1m\nbsrange=64k-4k,8k:16k\n");
    assert_eq!((j.min_bs, j.max_bs), ([4096, 8192], [65536, 16384]));
    // bssplit: missing percentages share the rest; sorted by percent.
    let j = one("[a]\nsize=1m\nbssplit=4k/10:64k:16k/0:8k/50\n");
    let r: Vec<(u64, u32)> = j.bssplit[0].iter().map(|b| (b.bs >> 10, b.perc)).collect();
    assert_eq!(r, vec![(4, 10), (64, 20), (16, 20), (8, 50)]);
    assert_eq!((j.min_bs[0], j.max_bs[0]), (4096, 65536));
    assert_eq!(j.bssplit[1], j.bssplit[0], "one list: every direction");
    let j = one("[a]\nsize=1m\nbssplit=4k/50:8k/50,,\n");
    assert_eq!(j.bssplit[0].len(), 2);
    assert!(j.bssplit[1].is_empty(), "empty write part: write keeps bs");
    assert_eq!(j.min_bs[1], 4096);
    assert!(err("[a]\nsize=1m\nbssplit=4k/80:8k/30\n").contains("more than 100"));
    assert!(err("[a]\nsize=1m\nbssplit=4k/x\n").contains("bad percentage"));
    assert!(err("[a]\nsize=1m\nbsrange=4k\n").contains("lo-hi"));
    // blockalign: random jobs only, and it turns the random map off.
    let j = one("[a]\nsize=1m\nrw=randread\nba=2k\n");
    assert_eq!(j.ba, [2048, 2048]);
    assert!(j.norandommap);
    let j = one("[a]\nsize=1m\nrw=read\nba=2k\n");
    assert_eq!(j.ba, [4096, 4096]);
    assert!(!j.norandommap);
    let j = one("[a]\nsize=1m\nbs_unaligned\n");
    assert!(j.bs_unaligned);
}

#[test]
fn random_options_and_rw_modifiers() {
    let j = one("[a]\nsize=1m\nrw=randread:8\nrw_sequencer=identical\n");
    assert_eq!((j.rw_seq_nr, j.rw_seq_add), (8, 0));
    assert_eq!(j.rw_sequencer, RwSequencer::Identical);
    let j = one("[a]\nsize=1m\nrw=read:-8k\n");
    assert_eq!((j.rw_seq_nr, j.rw_seq_add), (1, -8192));
    let j = one("[a]\nsize=1m\nrw=randrw\npercentage_random=20,70\n");
    assert_eq!(j.percentage_random, [20, 70]);
    let j = one("[a]\nsize=1m\nrandom_generator=lfsr\n");
    assert_eq!(j.random_generator, RandomGenerator::Lfsr);
    assert!(j.random_generator_set && j.randrepeat);
    let j = one("[a]\nsize=1m\nrandseed=5\nrandrepeat=0\n");
    assert!(!j.randrepeat && j.randseed_set);
    // Without randseed: seeded from the run's --seed (tests/fio_options.rs).
    let j = one("[a]\nsize=1m\nrandrepeat=0\n");
    assert!(!j.randrepeat && !j.randseed_set);
    // Non-uniform distributions never use the random map.
    let j = one("[a]\nsize=1m\nrw=randread\nrandom_distribution=zipf:1.2\n");
    assert!(j.norandommap);
    // Thread numbers run over all jobs and clones.
    let v = parse_job_str("[a]\nsize=1m\nnumjobs=2\n[b]\nsize=1m\n", "t.fio").unwrap();
    let tn: Vec<u32> = v.iter().map(|j| j.thread_number).collect();
    assert_eq!(tn, vec![1, 2, 3]);
}

#[test]
fn zoned_distributions() {
    let j = one("[a]\nsize=1m\nrw=randread\nrandom_distribution=zoned:50/5:30/15:20/\n");
    assert_eq!(j.random_distribution, RandomDist::Zoned);
    let z: Vec<(u8, u8)> = j.zone_split[0]
        .iter()
        .map(|z| (z.access_perc, z.size_perc))
        .collect();
    assert_eq!(
        z,
        vec![(50, 5), (30, 15), (20, 80)],
        "a missing size takes the rest"
    );
    assert_eq!(j.zone_split[1], j.zone_split[0]);
    assert!(
        err("[a]\nsize=1m\nrw=randrw\nrandom_distribution=zoned:60/10:40/90,100/100\n")
            .contains("per-direction")
    );
    let j = one("[a]\nsize=1m\nrw=randread\nrandom_distribution=zoned_abs:70/64k:30/512k\n");
    assert_eq!(j.random_distribution, RandomDist::ZonedAbs);
    assert_eq!(j.zone_split[0][1].size, 512 << 10);
    assert_eq!(
        err("[a]\nsize=1m\nrandom_distribution=zoned:50/5:30/15\n"),
        "t.fio:3: random_distribution: '50/5:30/15': zone access percentages add up to 80, not 100"
    );
    assert!(err("[a]\nsize=1m\nrandom_distribution=zoned:50/60:50/60\n").contains("more than 100"));
    assert!(err("[a]\nsize=1m\nrandom_distribution=zoned:150/60\n").contains("access percentage"));
    assert!(err("[a]\nsize=1m\nrandom_distribution=zoned\n").contains("bad random_distribution"));
    assert!(
        err("[a]\nsize=1m\nrw=randread\nrandom_distribution=zoned_abs:50/1m:50/1m\n")
            .contains("exceed the file size")
    );
}

#[test]
fn filesize_stands_in_for_size() {
    let j = one("[a]\nfilesize=2m\noffset=1m\n");
    assert_eq!(
        (j.size, j.offset, j.file_size()),
        (1 << 20, 1 << 20, 2 << 20)
    );
}

#[test]
fn env_expansion() {
    std::env::set_var("FOLIOSIM_TEST_SIZE", "2m");
    let j = one("[a]\nsize=${FOLIOSIM_TEST_SIZE}\n");
    assert_eq!(j.size, 2 << 20);
    assert_eq!(
        err("[a]\nsize=${FOLIOSIM_TEST_UNSET_VAR}\n"),
        // fio substitutes an unset variable with nothing.
        "t.fio:2: size: needs a value"
    );
}

// The error cases the CLI must report (exit 2): exact message shapes.
#[test]
fn error_unknown_option() {
    assert_eq!(
        err("[a]\nsize=1m\nfoo=1\n"),
        "t.fio:3: foo: unknown or unsupported fio option"
    );
    assert_eq!(
        err("[a]\nsize=1m\nlockmem=1m\n"),
        "t.fio:3: lockmem: unknown or unsupported fio option"
    );
}

#[test]
fn error_bad_size() {
    assert_eq!(err("[a]\nsize=12Q\n"), "t.fio:2: size: bad size '12Q'");
}

#[test]
fn error_missing_size() {
    assert_eq!(
        err("[global]\nbs=4k\n[job1]\nrw=read\n"),
        "t.fio:3: size: job 'job1': you need to specify size= (or filesize=): the model has no existing file to take the size from (give one with --existing-file-size)"
    );
}

#[test]
fn error_bs_zero() {
    assert_eq!(err("[a]\nsize=1m\nbs=0\n"), "t.fio:3: bs: bs must be > 0");
}

#[test]
fn error_bad_rw() {
    assert_eq!(
        err("[a]\nrw=readish\nsize=1m\n"),
        "t.fio:2: rw: bad rw 'readish' (read, write, randread, randwrite, rw, readwrite, randrw)"
    );
    // A random rw's postfix is an I/O count, a sequential one's bytes.
    assert_eq!(
        err("[a]\nrw=randread:4k\nsize=1m\n"),
        "t.fio:2: rw: 'randread:4k': bad ':4k' modifier: bad number '4k'"
    );
    assert_eq!(
        err("[a]\nrw=read:-x\nsize=1m\n"),
        "t.fio:2: rw: 'read:-x': bad ':-x' modifier: bad size 'x'"
    );
}

#[test]
fn error_bad_random_distribution() {
    assert_eq!(
        err("[a]\nsize=1m\nrandom_distribution=zipf:abc\n"),
        "t.fio:3: random_distribution: bad random_distribution 'zipf:abc': 'abc' is not a number"
    );
    assert!(err("[a]\nsize=1m\nrandom_distribution=gamma\n")
        .starts_with("t.fio:3: random_distribution: bad random_distribution 'gamma'"));
    assert!(err("[a]\nsize=1m\nrandom_distribution=zipf:1\n").contains("!= 1"));
}

#[test]
fn error_bad_zonemode() {
    assert_eq!(
        err("[a]\nsize=1m\nzonemode=zns\n"),
        "t.fio:3: zonemode: unsupported zonemode 'zns' (none, strided or zbd)"
    );
}

#[test]
fn error_option_outside_section() {
    assert_eq!(
        err("\nsize=1m\n[a]\n"),
        "t.fio:2: size: option outside of any [job] section"
    );
}

#[test]
fn error_malformed_section_header() {
    assert_eq!(
        err("[a\nsize=1m\n"),
        "t.fio:1: [a: malformed section header (want [name])"
    );
    assert_eq!(
        err("[]\n"),
        "t.fio:1: []: malformed section header (want [name])"
    );
}

#[test]
fn error_other_refusals() {
    assert!(err("[a]\nsize=1m\nioengine=net\n")
        .starts_with("t.fio:3: ioengine: ioengine 'net' is not modelled: network"));
    assert!(err("[a]\nsize=1m\nfilename=::\n").contains("no file name"));
    assert_eq!(
        err("[a]\nsize=1m\nbs=4k,8k,16k,32k\n"),
        "t.fio:3: bs: '4k,8k,16k,32k': at most 3 values (read,write,trim)"
    );
    assert!(err("[a]\nsize=2k\n").contains("smaller than bs"));
    assert_eq!(
        err("[a]\nsize=1m\nnrfiles=0\n"),
        "t.fio:3: nrfiles: nrfiles must be > 0"
    );
    assert!(err("[a]\nsize=1m\nfadvise_hint=noreuse\n").contains("unsupported fadvise_hint"));
    assert_eq!(
        err("[a]\nsize=1m\nrwmixread=101\n"),
        "t.fio:3: rwmixread: 101 out of range [0, 100]"
    );
    let e = parse_job_file(Path::new("/nonexistent/x.fio")).unwrap_err();
    assert!(e
        .to_string()
        .starts_with("/nonexistent/x.fio: job file: cannot read"));
}

#[test]
fn error_no_jobs_and_overflow() {
    assert_eq!(
        err("[global]\nsize=1m\n"),
        "t.fio: [job]: no job sections (only [global] or nothing)"
    );
    assert!(err("[a]\nsize=8p\noffset=16383p\n").contains("overflows"));
}

// init.c add_job: a group starts at a new_group/stonewall job that has
// jobs before it; clones share the group; the count runs on across
// the command line and job files.
#[test]
fn groupid_follows_new_group_and_stonewall() {
    let jobs = parse_job_str(
        "[global]\nsize=1m\n[a]\nstonewall\nnumjobs=2\n[b]\n[c]\nnew_group\ngroup_reporting\n[d]\nwait_for_previous\nnew_group=0\n[e]\nstonewall=0\n",
        "t.fio",
    )
    .unwrap();
    let g: Vec<(String, u32, bool)> = jobs
        .iter()
        .map(|j| (j.name.clone(), j.groupid, j.group_reporting))
        .collect();
    let want = [
        ("a", 0, false),
        ("a", 0, false),
        ("b", 0, false),
        ("c", 1, true),
        ("d", 2, false),
        ("e", 2, false),
    ];
    assert_eq!(g.len(), want.len());
    for (got, w) in g.iter().zip(want) {
        assert_eq!((got.0.as_str(), got.1, got.2), w);
    }
    let args: Vec<String> = [
        "--size=1m",
        "--name=x",
        "--name=y",
        "--new_group",
        "--group_reporting",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let jobs = parse_cmdline(&args).unwrap();
    assert_eq!((jobs[0].groupid, jobs[0].group_reporting), (0, false));
    assert_eq!((jobs[1].groupid, jobs[1].group_reporting), (1, true));
    assert_eq!(
        err("[a]\nsize=1m\nstonewall=2\n"),
        "t.fio:3: stonewall: bad boolean '2' (0 or 1)"
    );
}

#[test]
fn accepted_cosmetic_options() {
    let j = one("[a]\nsize=1m\ngroup_reporting\ndescription=x y\niodepth=32\nthread\npercentile_list=50:99\n");
    assert_eq!(j.size, 1 << 20);
}

#[test]
fn overrides_win_over_job_files_and_name_their_source_in_errors() {
    let dir = std::env::temp_dir().join(format!("foliosim-override-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("j.fio");
    std::fs::write(&f, "[global]\nbs=8k\n[a]\nsize=1m\nbs=16k\n[b]\nsize=2m\n").unwrap();
    let kw = Keywords::default();
    let file = vec![f.display().to_string()];
    let ov = |k: &str, v: &str| vec![(k.to_string(), v.to_string())];
    // Without overrides: the section's bs, then [global]'s.
    let plain = parse_cmdline_overriding(&file, &kw, &[]).unwrap();
    assert_eq!((plain[0].bs, plain[1].bs), (16384, 8192));
    // A command-line option only gives a default: the file's own wins.
    let cmd = parse_cmdline_with(&[file[0].clone(), "--bs=64k".into()], &kw).unwrap();
    assert_eq!((cmd[0].bs, cmd[1].bs), (16384, 8192));
    // An override applies after each job's section: every job has it.
    let o = parse_cmdline_overriding(&file, &kw, &ov("bs", "64k")).unwrap();
    assert_eq!((o[0].bs, o[1].bs), (65536, 65536));
    assert_eq!((o[0].size, o[1].size), (1 << 20, 2 << 20));
    let cmdline =
        parse_cmdline_overriding(&args("--name=c --size=1m --bs=4k"), &kw, &ov("size", "3m"))
            .unwrap();
    assert_eq!(cmdline[0].size, 3 << 20);
    let e = parse_cmdline_overriding(&file, &kw, &ov("bs", "zz"))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("<override>:1: bs: "), "{e}");
}
