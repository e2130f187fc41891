"""Shared fixtures: the CLI binary (built by scripts/test before pytest),
scratch folders, and a Ray cluster of a head and one worker node on this
machine, started for the tests that need it and stopped even on failure."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# Wall-clock figures the tests measure (Ray's start-up, the sweeps),
# printed at the end of the run; nothing asserts on them.
TIMINGS: list = []


def pytest_terminal_summary(terminalreporter):
    if TIMINGS:
        terminalreporter.section("foliosim timings")
        for line in TIMINGS:
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def foliosim_bin() -> Path:
    p = Path(os.environ.get("FOLIOSIM_BIN", REPO / "target" / "release" / "foliosim"))
    if not p.exists():
        pytest.fail(f"{p} is missing: build it first (cargo build --release -p foliosim-cli)")
    return p


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def ray_cluster():
    """The address of a two-node Ray cluster on this machine: `ray start
    --head`, then a worker node with `ray start --address`; the start-up
    time is reported at the end and `ray stop` ends both at the end."""
    ray_bin = Path(sys.executable).parent / "ray"
    if not ray_bin.exists():
        pytest.fail(f"Ray is not installed beside {sys.executable}")
    # A short path: Ray's socket names must fit in 107 bytes.
    tmp = tempfile.mkdtemp(prefix="fsray", dir="/tmp")
    port = _free_port()
    addr = f"127.0.0.1:{port}"
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
    common = ["--num-cpus=1", "--disable-usage-stats"]
    t0 = time.monotonic()
    try:
        subprocess.run(
            [str(ray_bin), "start", "--head", f"--port={port}", "--node-ip-address=127.0.0.1",
             f"--temp-dir={tmp}", "--include-dashboard=false", *common],
            check=True, env=env, capture_output=True,
        )
        subprocess.run(
            [str(ray_bin), "start", f"--address={addr}", "--node-ip-address=127.0.0.1", *common],
            check=True, env=env, capture_output=True,
        )
        TIMINGS.append(f"ray start: head + worker node up in {time.monotonic() - t0:.1f}s")
        yield addr
    finally:
        subprocess.run([str(ray_bin), "stop", "--force"], env=env, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
