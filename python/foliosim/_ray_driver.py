"""The Ray side of ``foliosim sweep --ray ADDRESS`` (and of
``foliosim.sweep(..., ray_address=...)``): reads the pending
``POINT REPEAT`` pairs on stdin, runs each as one Ray task on the cluster
at ADDRESS, and prints one JSON object per finished row on stdout as it
finishes (``{"point", "repeat", "names", "values"}``, or ``{"error"}``).
The sweep process journals the rows; this driver writes no files.

Run as ``python -m foliosim._ray_driver --address ADDRESS GRID``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys


def _row(grid: str, point: int, repeat: int):
    from foliosim import _native

    names, values = _native.grid_row(grid, point, repeat)
    return point, repeat, names, values


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m foliosim._ray_driver")
    ap.add_argument("--address", required=True)
    ap.add_argument("grid")
    args = ap.parse_args(argv)
    # Only the rows go to stdout: whatever Ray prints goes to stderr.
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    pending = [tuple(int(x) for x in line.split()) for line in sys.stdin if line.strip()]

    def emit(obj) -> None:
        out.write(json.dumps(obj) + "\n")
        out.flush()

    try:
        import ray
    except ImportError as e:
        emit({"error": f"Ray is not installed in {sys.executable}: {e}"})
        return 1
    ray.init(address=args.address, log_to_driver=False, logging_level="ERROR")
    # One CPU per task: each point is one single-threaded run.
    task = ray.remote(num_cpus=1, max_retries=0)(_row)
    refs = [task.remote(args.grid, p, r) for p, r in pending]
    try:
        while refs:
            done, refs = ray.wait(refs, num_returns=1)
            for ref in done:
                point, repeat, names, values = ray.get(ref)
                emit({"point": point, "repeat": repeat, "names": names, "values": values})
    except Exception as e:  # a task's ValueError, or the cluster going away
        emit({"error": str(e).strip().splitlines()[-1] if str(e).strip() else repr(e)})
        return 1
    finally:
        ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
