//! fio jobs on the model's ext4 (`MmConfig::fs`): metadata reads through
//! the block device's page cache, in the run's counters.

use foliosim::fs::ext4::{Ext4Config, Ext4Geometry};
use foliosim::mm::MmConfig;
use foliosim::sim::{counter, run_fio, LruKind, RunReport, SimConfig};
use foliosim_workload::fio::parse_job_str;

fn cfg(fs: bool) -> SimConfig {
    SimConfig {
        mm: MmConfig {
            ram_bytes: 1 << 30,
            check_invariants: true,
            fs: fs.then(|| Ext4Config::new(Ext4Geometry::mkfs_default(1 << 40), None).unwrap()),
            ..MmConfig::default()
        },
        lru: LruKind::Classic,
        memcg_limit: Some(256 << 20),
        seed: 1,
        timeline: false,
        lru_gen_sysctl: Vec::new(),
    }
}

fn run(text: &str, fs: bool) -> RunReport {
    run_fio(cfg(fs), &parse_job_str(text, "t.fio").unwrap())
}

const STAT: &str = "[global]\nioengine=filestat\nfilesize=4k\nnrfiles=200\n[t0]\n[t1]\n";

#[test]
fn filestat_reads_metadata_only_with_a_file_system() {
    let none = run(STAT, false);
    assert_eq!(counter(&none, "pgpgin"), Some(0));
    let r = run(STAT, true);
    let kib = counter(&r, "pgpgin").unwrap();
    // 400 inodes (13..=412) fill table blocks 0..=25: 26 blocks, and the
    // directory (an htree past one block) at least its root and 2 leaves.
    assert!(kib >= (26 + 3) * 4 && kib <= (26 + 6) * 4, "{kib} KiB");
    // Every block read is a page of the block device charged to the group.
    assert_eq!(r.memcg["file"], kib * 1024);
    assert_eq!(r.memcg["pgpgin"], kib);
    assert_eq!(r.memcg["memcg_pgpgin_events"], kib / 4);
}

/// A second job stat()ing the same files finds them cached (dcache,
/// icache): nothing more is read.
#[test]
fn a_second_stat_of_the_same_files_reads_nothing() {
    let one = "[global]\nioengine=filestat\nfilesize=4k\nfilename=a:b:c:d\nnrfiles=4\n[t0]\n";
    let two = format!("{one}[t1]\nstonewall\n");
    let a = run(one, true);
    let b = run(&two, true);
    assert!(counter(&a, "pgpgin").unwrap() > 0);
    assert_eq!(counter(&a, "pgpgin"), counter(&b, "pgpgin"));
    assert_eq!(a.memcg["file"], b.memcg["file"]);
}

/// A read job: its file's directory block and inode block come on top of
/// the data (one inode on a fresh file system: the readahead stops at the
/// used table, one block).
#[test]
fn a_data_job_opens_its_file_through_the_metadata() {
    let job = "[r]\nrw=read\nsize=1M\nbs=4k\nioengine=psync\n";
    let none = counter(&run(job, false), "pgpgin").unwrap();
    let ext4 = counter(&run(job, true), "pgpgin").unwrap();
    assert_eq!(none, 1024);
    assert_eq!(ext4, none + 2 * 4);
}

/// filedelete: the stat reads plus one inode bitmap and one block bitmap;
/// mballoc's two buddy pages are charged without a read.
#[test]
fn filedelete_reads_the_bitmaps_and_builds_the_buddy() {
    let del = STAT.replace("filestat", "filedelete");
    let s = run(STAT, true);
    let d = run(&del, true);
    assert_eq!(
        counter(&d, "pgpgin").unwrap(),
        counter(&s, "pgpgin").unwrap() + 2 * 4
    );
    assert_eq!(d.memcg["file"], s.memcg["file"] + 4 * 4096);
}

#[test]
fn deterministic() {
    let a = serde_json::to_string(&run(STAT, true)).unwrap();
    let b = serde_json::to_string(&run(STAT, true)).unwrap();
    assert_eq!(a, b);
}

/// A job on a block device opens no file of the file system.
#[test]
fn a_block_device_is_not_on_the_file_system() {
    let job = "[r]\nfilename=/dev/sdz\nrw=read\nsize=1M\nbs=4k\nioengine=psync\n";
    let none = counter(&run(job, false), "pgpgin").unwrap();
    assert_eq!(none, 1024);
    assert_eq!(counter(&run(job, true), "pgpgin").unwrap(), none);
}
