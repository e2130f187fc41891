"""The generated example scenarios are what their generators write: run each
generator on a copy of its inputs and compare with the committed files, so a
hand edit of a generated file (or a generator change not run again) fails
here, naming the file."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# (generator, inputs it reads, files it writes), paths relative to examples/.
GENERATORS = [
    (
        "gen_kernel_build.py",
        ["data/compiles-6.12-defconfig.csv"],
        ["kernel-build.toml", "seed003-kernel-build-tmpfs.toml"],
    ),
    (
        "cache_ext/gen_filesearch.py",
        ["cache_ext/ycsb-c.toml"],
        ["cache_ext/filesearch.toml", "cache_ext/isolation.toml"],
    ),
]


@pytest.mark.parametrize("script,inputs,outputs", GENERATORS, ids=[g[0] for g in GENERATORS])
def test_generated_examples_are_up_to_date(tmp_path, script, inputs, outputs):
    for rel in [script, *inputs]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(EXAMPLES / rel, tmp_path / rel)
    subprocess.run([sys.executable, str(tmp_path / script)], check=True)
    for rel in outputs:
        written = (tmp_path / rel).read_text()
        committed = (EXAMPLES / rel).read_text()
        assert written == committed, f"examples/{rel} differs from what {script} writes: run it again"
