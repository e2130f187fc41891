//! Options the fio examples corpus needed: each test asserts the option's
//! effect on the parsed job (offsets, sizes, seeds) or its refusal line.

use foliosim_workload::fio::parse_job_str;

fn jobs(text: &str) -> Vec<foliosim_workload::fio::FioJob> {
    parse_job_str(text, "t.fio").unwrap_or_else(|e| panic!("{e}"))
}

fn err(text: &str) -> String {
    parse_job_str(text, "t.fio").unwrap_err().to_string()
}

#[test]
fn offset_increment_moves_each_clone() {
    let v = jobs("[a]\nfilename=f\nsize=64k\noffset=4k\noffset_increment=96k\nnumjobs=3\n");
    // In thread order the clones are subjobs 0, 2, 1 (fio's add_job).
    let offs: Vec<u64> = v.iter().map(|j| j.offset).collect();
    assert_eq!(offs, [4096, 4096 + 2 * 96 * 1024, 4096 + 96 * 1024]);
    // Each clone's file reaches its own region's end (fio extends it).
    assert!(v.iter().all(|j| j.size == 64 * 1024));
    assert_eq!(v[1].file_size(), 4096 + 2 * 96 * 1024 + 64 * 1024);
    assert_eq!(v[1].files[0].offset, v[1].offset);
    // A byte offset is not aligned, whatever offset_align says.
    let v = jobs("[a]\nsize=64k\nbs=8k\noffset=1k\noffset_increment=3k\noffset_align=8k\nnumjobs=2\n");
    assert_eq!(v[1].offset, 4096);
}

#[test]
fn offset_increment_errors_name_the_option() {
    let e = err("[a]\nfilesize=16k\noffset_increment=16k\nnumjobs=2\n");
    assert_eq!(
        e,
        "t.fio:1: offset_increment: job 'a': clone 1 starts at 16384, not before filesize 16384"
    );
    let e = err("[a]\nsize=4k\noffset_increment=9223372036854775807\nnumjobs=3\n");
    assert!(e.starts_with("t.fio:1: offset: "), "{e}");
}
