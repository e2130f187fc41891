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
    let v =
        jobs("[a]\nsize=64k\nbs=8k\noffset=1k\noffset_increment=3k\noffset_align=8k\nnumjobs=2\n");
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

#[test]
fn atomic_writes_are_direct_writes() {
    let v = jobs("[w]\nfilename=/dev/x\nsize=1m\nrw=randwrite\nbs=4k\ndirect=1\nioengine=libaio\natomic=1\nverify=crc64\nverify_write_sequence=0\n");
    let plain = jobs("[w]\nfilename=/dev/x\nsize=1m\nrw=randwrite\nbs=4k\ndirect=1\nioengine=libaio\nverify=crc64\n");
    // No model effect: the same job as without atomic=1 (source aside).
    assert!(v[0].direct);
    assert_eq!(format!("{:?}", v[0]), format!("{:?}", plain[0]));
    // Dropped for a job without writes, as fio does: any engine passes.
    jobs("[r]\nsize=1m\nrw=read\natomic=1\n");
}

#[test]
fn atomic_refusals_name_the_option() {
    assert_eq!(
        err("[w]\nsize=1m\nrw=write\nioengine=libaio\natomic=1\n"),
        "t.fio:5: atomic: job 'w': atomic=1 needs direct=1: the kernel fails buffered RWF_ATOMIC writes with EOPNOTSUPP"
    );
    assert_eq!(
        err("[w]\nsize=1m\nrw=write\ndirect=1\natomic=1\n"),
        "t.fio:5: atomic: job 'w': the ioengine does not support atomic writes (only pvsync2, libaio and io_uring set RWF_ATOMIC)"
    );
    let e = err("[w]\nsize=1m\nrw=write\ndirect=1\nioengine=io_uring\nbsrange=4k-16k\natomic=1\n");
    assert!(
        e.starts_with("t.fio:7: atomic: job 'w': atomic writes need one power-of-two write size"),
        "{e}"
    );
}

#[test]
fn numa_placement_is_accepted_without_effect() {
    let base = "[a]\nsize=1m\nrw=randread\n";
    let plain = jobs(base);
    for extra in [
        "numa_cpu_nodes=0-1\nnuma_mem_policy=interleave:0-1\n",
        "numa_mem_policy=bind:0\n",
        "numa_mem_policy=prefer:1\n",
        "numa_mem_policy=local\n",
    ] {
        let v = jobs(&format!("{base}{extra}"));
        assert_eq!(format!("{:?}", v[0]), format!("{:?}", plain[0]), "{extra}");
    }
    assert_eq!(
        err("[a]\nsize=1m\nnuma_mem_policy=bind\n"),
        "t.fio:3: numa_mem_policy: 'bind': a nodelist is needed for 'bind'"
    );
    assert_eq!(
        err("[a]\nsize=1m\nnuma_mem_policy=prefer:0-1\n"),
        "t.fio:3: numa_mem_policy: 'prefer:0-1': one node only for 'prefer'"
    );
    assert!(err("[a]\nsize=1m\nnuma_mem_policy=spread:0\n")
        .ends_with("memory policy should be: default, prefer, bind, interleave, local"));
}

#[test]
fn continue_on_error_is_checked_and_has_no_model_effect() {
    let plain = jobs("[a]\nsize=1m\nrw=write\n");
    let v = jobs(
        "[a]\nsize=1m\nrw=write\ncontinue_on_error=write\nignore_error=,ENOSPC:28\nerror_dump=0\n",
    );
    assert_eq!(format!("{:?}", v[0]), format!("{:?}", plain[0]));
    assert_eq!(
        err("[a]\nsize=1m\ncontinue_on_error=sometimes\n"),
        "t.fio:3: continue_on_error: bad continue_on_error 'sometimes' (none, read, write, io, verify, all, 0, 1)"
    );
    assert_eq!(
        err("[a]\nsize=1m\nignore_error=,nospace\n"),
        "t.fio:3: ignore_error: ',nospace': 'nospace' is not an errno name or number"
    );
}

#[test]
fn io_priorities_are_accepted_without_effect() {
    let base = "[a]\nsize=1m\nrw=randread\nioengine=libaio\ndirect=1\nbssplit=64k/40:1024k/60\n";
    let plain = jobs(base);
    for extra in [
        "prioclass=2\nprio=7\ncmdprio_bssplit=64k/25/1/1:64k/75/3/2:1024k/0\n",
        "prioclass=3\ncmdprio_percentage=20\ncmdprio_class=1\ncmdprio=0\n",
    ] {
        let v = jobs(&format!("{base}{extra}"));
        assert_eq!(format!("{:?}", v[0]), format!("{:?}", plain[0]), "{extra}");
    }
    assert!(err("[a]\nsize=1m\nprio=8\n").starts_with("t.fio:3: prio: "));
    assert!(err("[a]\nsize=1m\nprioclass=4\n").starts_with("t.fio:3: prioclass: "));
}

#[test]
fn fill_device_writes_up_to_the_capacity() {
    use foliosim_workload::fio::resolve_device_sizes;
    let text = "[w]\nfilename=data\nrw=write\nbs=64k\noffset=1m\nfill_device=1\n";
    let mut v = jobs(text);
    assert!(v[0].size_from_device);
    resolve_device_sizes(&mut v, Some(64 << 20)).unwrap();
    assert_eq!(v[0].size, (64 << 20) - (1 << 20));
    assert_eq!(v[0].file_size(), 64 << 20);
    let mut v = jobs(text);
    assert_eq!(
        resolve_device_sizes(&mut v, None).unwrap_err().to_string(),
        "t.fio:1: size: job 'w': fill_device=1 without size= writes until the file system is full: pass --disk-size (its free space)"
    );
    // size= still bounds it; a job that does not write needs a size.
    assert_eq!(jobs("[w]\nrw=write\nsize=1m\nfill_fs=1\n")[0].size, 1 << 20);
    assert!(err("[r]\nrw=read\nfill_device=1\n").contains("you need to specify size="));
}

fn offsets(j: &foliosim_workload::fio::FioJob, run_seed: u64) -> Vec<u64> {
    let mut g = foliosim_workload::iogen::IoGen::new(j, run_seed);
    std::iter::from_fn(|| g.next_io())
        .take(64)
        .map(|io| io.offset)
        .collect()
}

#[test]
fn randrepeat_0_without_randseed_follows_the_run_seed() {
    let j = &jobs("[a]\nsize=64m\nrw=randread\nrandrepeat=0\n")[0];
    assert_eq!(offsets(j, 1), offsets(j, 1));
    assert_ne!(offsets(j, 1), offsets(j, 2));
    // Clones differ from each other under the same run seed.
    let v = jobs("[a]\nsize=64m\nrw=randread\nrandrepeat=0\nnumjobs=2\n");
    assert_ne!(offsets(&v[0], 1), offsets(&v[1], 1));
    // With randrepeat (default) or a randseed, the run seed plays no part.
    for text in [
        "[a]\nsize=64m\nrw=randread\n",
        "[a]\nsize=64m\nrw=randread\nrandrepeat=0\nrandseed=9\n",
        "[a]\nsize=64m\nrw=randread\nrandrepeat=0\nallrandrepeat=1\n",
    ] {
        let j = &jobs(text)[0];
        assert_eq!(offsets(j, 1), offsets(j, 2), "{text}");
    }
}

#[test]
fn gpu_engines_run_as_psync() {
    use foliosim_workload::fio::IoEngine;
    for (eng, mode, gds) in [
        ("libcufile", "cuda_io", "cufile"),
        ("libhipfile", "rocm_io", "hipfile"),
    ] {
        let posix = &jobs(&format!(
            "[a]\nsize=1m\nioengine={eng}\ngpu_dev_ids=0:1\n{mode}=posix\ndirect=0\niodepth=8\n"
        ))[0];
        assert_eq!(posix.ioengine, IoEngine::Psync);
        assert!(!posix.direct);
        // FIO_SYNCIO: depth 1 whatever iodepth says.
        assert_eq!(posix.iodepth, 1);
        let g = posix.engine_opts.gpu.unwrap();
        assert_eq!((g.engine, g.gds), (eng, false));
        let d = &jobs(&format!(
            "[a]\nsize=1m\nioengine={eng}\n{mode}={gds}\ndirect=1\n"
        ))[0];
        assert!(d.direct && d.engine_opts.gpu.unwrap().gds);
        // GPUDirect Storage is the default mode, and needs direct=1.
        assert_eq!(
            err(&format!("[a]\nsize=1m\nioengine={eng}\n")),
            format!("t.fio:1: {mode}: job 'a': {mode}={gds} (GPUDirect Storage) needs direct=1 (fio's {eng}); use {mode}=posix for buffered I/O")
        );
        assert_eq!(
            err(&format!("[a]\nsize=1m\nioengine={eng}\n{mode}=dma\n")),
            format!("t.fio:4: {mode}: bad {mode} 'dma' ({gds}, posix)")
        );
    }
    // Their options belong to them only.
    assert!(
        err("[a]\nsize=1m\ncuda_io=posix\n").contains("cuda_io: unknown or unsupported fio option")
    );
    // A later ioengine= drops the GPU engine.
    let j = &jobs("[global]\nioengine=libcufile\n[a]\nsize=1m\nioengine=psync\n")[0];
    assert_eq!(j.engine_opts.gpu, None);
}

#[test]
fn steady_state_options_parse_and_bad_ones_are_refused_in_one_line() {
    let j = &jobs("[a]\nsize=1m\nss=bw_slope:0.1%\nss_dur=60s\nsteadystate_ramp_time=5s\n")[0];
    let o = j.ss.expect("a window");
    assert!(o.slope && !o.iops && o.pct);
    assert_eq!((o.limit, o.dur, o.ramp_us), (0.1, 60, 5_000_000));
    // No window, no steady state (fio's default ss_dur is 0).
    assert!(jobs("[a]\nsize=1m\nsteadystate=iops:1%\n")[0].ss.is_none());
    assert_eq!(
        err("[a]\nsize=1m\nss=iops\n"),
        "t.fio:3: ss: 'iops': a threshold must be given with the criterion (e.g. iops:10%)"
    );
    assert!(err("[a]\nsize=1m\nss_dur=x\n").starts_with("t.fio:3: ss_dur: "));
}

#[test]
fn create_serialize_0_sizes_a_later_job_from_the_written_file() {
    use foliosim_workload::fio::resolve_device_sizes;
    // surface-scan.fio's shape: a fill_device writer, then a reader that
    // sets its file up only when it starts.
    let text = "[global]\nbs=64k\n[w]\nfilename=d\nrw=write\nfill_device=1\n[r]\nstonewall\ncreate_serialize=0\nfilename=d\nrw=read\n";
    let mut v = jobs(text);
    resolve_device_sizes(&mut v, Some(32 << 20)).unwrap();
    assert_eq!(v[1].size, 32 << 20);
    assert_eq!(v[1].files[0].size, 32 << 20);
    // A sized writer is known at parse time; the reader's offset counts.
    let v = jobs("[w]\nfilename=d\nrw=write\nsize=8m\n[r]\nwait_for=w\ncreate_serialize=0\nfilename=d\noffset=1m\nrw=read\n");
    assert_eq!((v[1].offset, v[1].size), (1 << 20, 7 << 20));
    // An earlier reader lays its file out too.
    let v =
        jobs("[w]\nfilename=d\nrw=read\nsize=8m\n[r]\nstonewall\ncreate_serialize=0\nfilename=d\n");
    assert_eq!(v[1].size, 8 << 20);
    // No earlier job has the file: refused as fio refuses it.
    assert_eq!(
        err("[w]\nfilename=e\nrw=read\nsize=8m\n[r]\nstonewall\ncreate_serialize=0\nfilename=d\n"),
        "t.fio:5: size: job 'r': you need to specify size= (or filesize=): the model has no existing file to take the size from (give one with --existing-file-size)"
    );
    // With create_serialize (the default) fio sets the files up in job
    // order before any runs (checked with fio 3.33): the writer's setup
    // gives the file its length; a fill_device writer's leaves it empty.
    let v = jobs("[w]\nfilename=d\nrw=write\nsize=8m\n[r]\nfilename=d\nrw=read\n");
    assert_eq!(v[1].size, 8 << 20);
    let e = err("[w]\nfilename=d\nrw=write\nfill_device=1\n[r]\nstonewall\nfilename=d\nrw=read\n");
    assert!(
        e.starts_with("t.fio:5: size: job 'r': you need to specify size="),
        "{e}"
    );
    // Without a stonewall or wait_for, a create_serialize=0 job races
    // the writer: no size to take.
    assert!(
        err("[w]\nfilename=d\nrw=write\nsize=8m\n[r]\ncreate_serialize=0\nfilename=d\n")
            .contains("you need to specify size=")
    );
}

/// A job without size= on a file that exists before the run takes the
/// file's size (the machine's --existing-file-size), and an earlier
/// writer's larger extent wins; without one it is refused.
#[test]
fn existing_files_give_their_size() {
    use foliosim_workload::fio::{parse_job_str_with, Keywords};
    let kw = Keywords {
        existing_file_size: Some(64 << 20),
        ..Keywords::default()
    };
    let v = parse_job_str_with("[r]\nfilename=f\nrw=read\n", "t.fio", &kw).unwrap();
    assert_eq!(v[0].size, 64 << 20);
    let v = parse_job_str_with(
        "[w]\nfilename=f\nrw=write\nsize=96m\n[r]\nstonewall\nfilename=f\nrw=read\n",
        "t.fio",
        &kw,
    )
    .unwrap();
    assert_eq!(v[1].size, 96 << 20);
    let e = parse_job_str_with("[r]\nfilename=f\nrw=read\n", "t.fio", &Keywords::default());
    assert!(e.unwrap_err().to_string().contains("--existing-file-size"));
}
