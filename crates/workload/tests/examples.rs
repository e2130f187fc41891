//! Every fio job file shipped in examples/ must parse, and the seed
//! examples must say what the seeds' command lines say.

use foliosim_workload::fio::{parse_cmdline, parse_job_file, FioJob};
use std::path::PathBuf;

const EXAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");

fn example(name: &str) -> Vec<FioJob> {
    parse_job_file(&PathBuf::from(EXAMPLES).join(name)).unwrap()
}

fn strip_source(mut v: Vec<FioJob>) -> Vec<FioJob> {
    v.iter_mut().for_each(|j| j.source.clear());
    v
}

#[test]
fn every_example_parses() {
    let mut n = 0;
    let mut entries: Vec<_> = std::fs::read_dir(EXAMPLES)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "fio"))
        .collect();
    entries.sort();
    for p in entries {
        let jobs = parse_job_file(&p).unwrap_or_else(|e| panic!("{e}"));
        assert!(!jobs.is_empty(), "{}", p.display());
        n += 1;
    }
    assert!(n >= 4, "expected the seed and basic examples, found {n}");
}

#[test]
fn seed000_file_equals_its_command_line() {
    let cmd: Vec<String> = "--name=hot_ws --rw=read --bs=4K --size=600M --runtime=600 \
        --zonemode=strided --zonesize=4K --zonerange=64K --time_based --direct=0 \
        --filename=hot_data.bin --ioengine=mmap --fadvise_hint=0 --group_reporting --numjobs=1"
        .split_whitespace()
        .map(String::from)
        .collect();
    let file = example("seed000-strided-mmap.fio");
    assert_eq!(
        strip_source(file),
        strip_source(parse_cmdline(&cmd).unwrap())
    );
}

#[test]
fn seed003_file_equals_its_command_line() {
    let cmd: Vec<String> = "--directory=/mnt/ramdisk --filename_format=test.$jobnum.img \
        --name=cached --numjobs=16 --size=3072M --buffered=1 --ioengine=mmap \
        --rw=randread --norandommap --time_based --ramp_time=1m --runtime=5m --group_reporting"
        .split_whitespace()
        .map(String::from)
        .collect();
    let file = example("seed003-cached-randread-mmap.fio");
    assert_eq!(file.len(), 16);
    // fio adds the clones counting down: thread 2 is $jobnum 15.
    assert_eq!(file[1].filename, "/mnt/ramdisk/test.15.img");
    assert_eq!(file[15].filename, "/mnt/ramdisk/test.1.img");
    assert_eq!(file[0].ramp_time_ns, 60_000_000_000);
    assert_eq!(file[0].runtime_ns, Some(300_000_000_000));
    assert_eq!(
        strip_source(file),
        strip_source(parse_cmdline(&cmd).unwrap())
    );
}
