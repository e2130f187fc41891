"""The foliosim Python package: runs equal the CLI's, timelines, compare,
bad input, and sweeps: 200+ points locally and on a Ray cluster give the
same table, and a sweep killed at about half resumes to the same table."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import foliosim

from conftest import TIMINGS

REPO = Path(__file__).resolve().parents[2]

JOB = "[seqread]\nrw=read\nbs=4k\nsize=8M\n\n[randread]\nrw=randread\nbs=4k\nsize=4M\nfilename=other\n"


def cli_json(bin_path, argv):
    out = subprocess.run([str(bin_path), *argv, "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def test_a_fio_run_has_the_clis_counters(tmp_path, foliosim_bin):
    job = tmp_path / "two.fio"
    job.write_text(JOB)
    r = foliosim.run(job, machine={"memory": "128M", "memcg_limit": "6M", "sysctl": {"vm.swappiness": 100}},
                     variants="mglru+pf-set-active", timeline=False)
    assert r.argv == ["fio", str(job), "--memory=128M", "--memcg-limit=6M", "--sysctl=vm.swappiness=100",
                      "--lru=mglru", "--variant=pf-set-active"]
    cli = cli_json(foliosim_bin, r.argv)
    assert r.vmstat == cli["vmstat"]
    assert r.memcg == cli["memcg"]
    assert r.raw["lru"] == cli["lru"] == "mglru"
    # The 6M group read 12M of files: it reclaimed (memcg reclaim counts
    # in the group's memory.stat, not /proc/vmstat), and fio read it all.
    assert r.memcg["pgscan_direct"] > 0
    assert sum(j["read"]["io_bytes"] for j in r.jobs) == 12 << 20


def test_the_timeline_is_a_frame_of_per_second_counters(tmp_path):
    # 3 simulated seconds at 1 MiB/s.
    r = foliosim.run(["fio", "--name=slow", "--rw=read", "--bs=4k", "--size=8M", "--rate=1m",
                      "--time_based", "--runtime=3"], machine={"memory": "128M"})
    tl = r.timeline
    assert isinstance(tl, pd.DataFrame)
    assert list(tl["second"]) == [1, 2, 3]
    assert {"vmstat.pgpgin", "memcg.pgpgin", "memcg.workingset_refault_file"} <= set(tl.columns)
    # pgpgin (KiB) grows each second and ends at the run's figure.
    kib = list(tl["vmstat.pgpgin"])
    assert kib == sorted(kib) and kib[0] > 0
    assert kib[-1] <= r.vmstat["pgpgin"]
    assert r.elapsed_s == pytest.approx(3.0, abs=0.01)


def test_compare_lists_sets_side_by_side_with_deltas(tmp_path):
    job = tmp_path / "j.fio"
    job.write_text(JOB)
    df = foliosim.compare(job, ["baseline", "mglru"], machine={"memory": "128M", "memcg_limit": "6M"})
    assert list(df.columns) == ["baseline", "mglru", "d(mglru)"]
    a = foliosim.run(job, machine={"memory": "128M", "memcg_limit": "6M"}, timeline=False)
    assert df.loc["vmstat.pgpgin", "baseline"] == a.vmstat["pgpgin"]
    row = df.loc["vmstat.pgpgin"]
    assert row["d(mglru)"] == pytest.approx((row["mglru"] - row["baseline"]) / row["baseline"])
    assert (df.drop(index="elapsed_s")[["baseline", "mglru"]] != 0).any(axis=1).all()


def test_bad_input_raises_the_clis_one_line_message(tmp_path):
    with pytest.raises(ValueError, match=r"^fio option --bs \(argument 2\): bad size 'zz'$"):
        foliosim.run(["fio", "--name=j", "--bs=zz", "--size=1M"])
    with pytest.raises(ValueError, match="--memcg-limit"):
        foliosim.run(["fio", "--name=j", "--size=1M"], machine={"memcg_limit": "1Q"})
    # A mistyped machine key is named as foliosim's, with the nearest name.
    with pytest.raises(
        ValueError,
        match=r"^--memcg-limt: unknown foliosim option \(did you mean --memcg-limit\?\)$",
    ):
        foliosim.run(["fio", "--name=j", "--size=1M"], machine={"memcg_limt": "64M"})
    with pytest.raises(ValueError, match=r"did you mean --memcg-limit"):
        foliosim.run(["run", "--usemem", "-n 1 4M"], machine={"memcg_limt": "64M"})
    with pytest.raises(ValueError, match="cannot tell the workload"):
        foliosim.run(tmp_path / "x.txt")


def test_a_scenario_the_probe_and_a_trace_run(tmp_path):
    sc = foliosim.run(REPO / "examples" / "anon-oom.toml", timeline=False)
    assert sc.cgroups and sc.processes
    pr = foliosim.run(["mmap-probe", "--file-size", "16M", "--memcg-limit", "8M"], timeline=False)
    assert pr.vmstat["pgmajfault"] > 0
    trace = tmp_path / "t.csv"
    trace.write_text("time,id\n1,5\n2,6\n3,5\n4,7\n")
    tr = foliosim.run(["replay", str(trace), "--csv-spec", "time-col=1, obj-id-col=2, has-header=true"],
                      timeline=False)
    # Pages 5, 6 and 7 read once each (replay reads with readahead off).
    assert tr.vmstat["pgpgin"] == 3 * 4


def grid_200(tmp_path: Path, mib: int = 1) -> Path:
    """5 x 4 x 5 x 2 = 200 points of a (1-4) x `mib` MiB read: small and
    quick."""
    (tmp_path / "read.fio").write_text("[r]\nrw=read\nbs=4k\nsize=2M\n")
    g = tmp_path / "grid.toml"
    g.write_text(
        'workload = ["fio", "read.fio"]\nseed = 3\n\n[base]\nmemory = "256M"\n\n[vary]\n'
        f'memcg-limit = ["1M", "2M", "3M", "4M", "{8 * mib}M"]\n'
        f'fio.size = ["{mib}M", "{2 * mib}M", "{3 * mib}M", "{4 * mib}M"]\n'
        'fio.bs = ["4k", "8k", "16k", "32k", "64k"]\n'
        'set = ["baseline", "mglru"]\n'
    )
    return g


def check_table(df: pd.DataFrame, n: int):
    assert list(df.columns[:7]) == ["point", "repeat", "seed", "param.memcg-limit", "param.fio.size",
                                    "param.fio.bs", "param.set"]
    assert len(df) == n
    assert list(df["point"]) == list(range(n)), "each point once, in order"
    sizes = df["param.fio.size"].str.rstrip("M").astype(int) * (1 << 20)
    assert (df["fio.read_bytes"] == sizes).all()


def test_a_200_point_sweep_is_the_same_locally_and_on_ray(tmp_path, ray_cluster):
    g = grid_200(tmp_path)
    t0 = time.monotonic()
    local = foliosim.sweep(g, out=tmp_path / "local", jobs=2)
    t_local = time.monotonic() - t0
    t0 = time.monotonic()
    on_ray = foliosim.sweep(g, out=tmp_path / "ray", ray_address=ray_cluster)
    t_ray = time.monotonic() - t0
    TIMINGS.append(f"sweep of 200 points: local (2 jobs) {t_local:.1f}s, Ray (2 nodes) {t_ray:.1f}s")
    check_table(local, 200)
    pd.testing.assert_frame_equal(local, on_ray)
    for ext in ("csv", "parquet"):
        assert (tmp_path / f"local.{ext}").read_bytes() == (tmp_path / f"ray.{ext}").read_bytes(), ext
    # The Parquet file holds the same table (integer parameters stay
    # strings only where some value is not an integer).
    pq = pd.read_parquet(tmp_path / "local.parquet")
    assert list(pq.columns) == list(local.columns)
    pd.testing.assert_frame_equal(pq, local, check_dtype=False)


def test_the_clis_ray_option_gives_the_local_table(tmp_path, ray_cluster, foliosim_bin):
    g = tmp_path / "small.toml"
    (tmp_path / "read.fio").write_text("[r]\nrw=read\nbs=4k\nsize=2M\n")
    g.write_text('workload = ["fio", "read.fio"]\nrepeats = 3\n[vary]\nmemcg-limit = ["1M", "4M"]\n')
    subprocess.run([str(foliosim_bin), "sweep", str(g), "--out", str(tmp_path / "a")], check=True)
    subprocess.run([str(foliosim_bin), "sweep", str(g), "--out", str(tmp_path / "b"), "--ray", ray_cluster,
                    "--python", sys.executable], check=True)
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()


def test_a_sweep_killed_at_half_resumes_to_the_same_table(tmp_path, foliosim_bin):
    # Larger reads (8-32 MiB): the sweep lasts long enough to be caught
    # at half.
    g = grid_200(tmp_path, mib=8)
    subprocess.run([str(foliosim_bin), "sweep", str(g), "--out", str(tmp_path / "whole"), "--jobs", "2"],
                   check=True, capture_output=True)
    journal = tmp_path / "killed.journal.csv"
    p = subprocess.Popen([str(foliosim_bin), "sweep", str(g), "--out", str(tmp_path / "killed"), "--jobs", "2"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # Kill it once about half the rows (header + 100) are journalled.
        while p.poll() is None:
            if journal.exists() and journal.read_bytes().count(b"\n") >= 101:
                break
            time.sleep(0.002)
        os.kill(p.pid, signal.SIGKILL)
    finally:
        p.wait()
    assert p.returncode == -signal.SIGKILL, "the sweep ended before it was killed"
    recorded = journal.read_bytes().count(b"\n") - 1
    assert 100 <= recorded < 200
    assert not (tmp_path / "killed.csv").exists()
    out = subprocess.run([str(foliosim_bin), "sweep", str(g), "--out", str(tmp_path / "killed"), "--resume"],
                         check=True, capture_output=True, text=True).stdout
    assert f"200 rows ({200 - recorded} run now, {recorded} from the journal)" in out
    assert (tmp_path / "whole.csv").read_bytes() == (tmp_path / "killed.csv").read_bytes()
    df = foliosim.read_table(tmp_path / "killed.csv")
    check_table(df, 200)


def test_the_docs_example_makes_a_frame_and_a_plot(tmp_path):
    out = tmp_path / "plot.png"
    subprocess.run([sys.executable, str(REPO / "docs" / "python_example.py"), str(out)], check=True,
                   cwd=tmp_path, capture_output=True)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert out.stat().st_size > 10_000


def test_the_patch_registry_comes_from_the_native_module():
    reg = foliosim.variants()
    names = [p["name"] for p in reg]
    assert names[:2] == ["p1", "p2"]
    ws = next(p for p in reg if p["name"] == "wsprot-rework")
    assert ws["off"] == "wsprot-legacy" and "6.14" in ws["releases"]
    # Sets split as the command line splits them.
    assert foliosim._variant_argv("mglru+p1,p2") == ["--lru=mglru", "--variant=p1", "--variant=p2"]
