"""foliosim from Python: the deterministic model of the Linux page cache,
readahead and reclaim (the repository's README and docs/python.md).

Three calls:

- :func:`run` runs one workload (a fio job file or fio's command-line
  form, a scenario, seed 002's mmap probe or a trace) on a modelled
  machine and returns a :class:`Result`: the kernel's counters as dicts
  under their kernel names, the timeline as a DataFrame.
- :func:`compare` runs one workload under several variant sets and
  returns the counters side by side with relative deltas.
- :func:`sweep` runs a grid file (docs/sweep.md) on every core, or each
  point as a task on a Ray cluster, and returns one DataFrame in the same
  schema as ``foliosim sweep``'s CSV.

Every call parses its options with the command line's own code (the
native module wraps it), so a Python run and a ``foliosim`` run with the
same options give the same counters. Bad input raises ValueError with
the command line's one-line message.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

from . import _native

__all__ = [
    "run",
    "compare",
    "sweep",
    "read_table",
    "Result",
    "workload_argv",
    "register_policy",
    "unregister_policy",
    "variants",
]

Workload = Union[str, os.PathLike, Sequence[str]]
MachineValue = Union[
    str, int, bool, Sequence[str], Mapping[str, Union[str, int]], Callable[[], Any]
]

#: The default time one policy callback may run (ms); a class attribute
#: ``budget_ms`` overrides it.
POLICY_BUDGET_MS = 100


def register_policy(name: str, factory: Callable[[], Any], budget_ms: Optional[int] = None) -> str:
    """Registers a cache_ext policy written in Python as ``py:NAME`` and
    returns that spec, for scenario files (``policy = "py:NAME"``) and
    command lines run through :func:`run`. ``factory`` (usually the class)
    is called once per run for a fresh object whose methods are cache_ext's
    hooks: ``init(cx)``, ``folio_added(cx, folio)``,
    ``folio_accessed(cx, folio)``, ``folio_evicted(cx, folio)``,
    ``admit_folio(cx, mapping, index, nr_pages) -> bool`` and
    ``evict_folios(cx)``; a missing method does nothing (docs/cache_ext.md).
    A callback that raises or runs past ``budget_ms`` stops the run with
    a one-line ValueError.
    """
    if not callable(factory):
        raise TypeError("register_policy: factory must be callable (a class, or a function returning a policy object)")
    if budget_ms is None:
        budget_ms = int(getattr(factory, "budget_ms", POLICY_BUDGET_MS))
    _native.register_policy(name, factory, int(budget_ms))
    return "py:" + name


def unregister_policy(name: str) -> None:
    """Removes ``py:NAME``."""
    _native.unregister_policy(name)


def workload_argv(workload: Workload) -> List[str]:
    """The ``foliosim`` command line (without the program name) of a workload.

    A sequence is taken as the command line itself (``["fio", "--name=j",
    "--rw=read", "--size=16M"]``, ``["mmap-probe", "--file-size", "64M"]``,
    ``["run", "--usemem", "-n 2 64M"]``). A path picks the command by its
    suffix: ``.fio`` a fio job file, ``.toml`` a scenario, ``.csv`` and
    ``.oracleGeneral`` a trace to replay.
    """
    if isinstance(workload, (str, os.PathLike)):
        path = os.fspath(workload)
        if path in ("mmap-probe", "probe"):
            return ["mmap-probe"]
        suffix = os.path.splitext(path)[1]
        cmd = {".fio": "fio", ".toml": "run", ".csv": "replay", ".oracleGeneral": "replay"}.get(suffix)
        if cmd is None:
            raise ValueError(
                f"{path}: cannot tell the workload from the name (.fio, .toml, .csv, "
                ".oracleGeneral), give the command line as a list instead"
            )
        return [cmd, path]
    argv = [os.fspath(a) for a in workload]
    if not argv:
        raise ValueError("workload: empty command line")
    return argv


def _machine_argv(machine: Optional[Mapping[str, MachineValue]]) -> List[str]:
    out: List[str] = []
    for key, value in (machine or {}).items():
        opt = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            if value:
                out.append(opt)
        elif isinstance(value, Mapping):
            # sysctl={"vm.swappiness": 100}
            out.extend(f"{opt}={k}={v}" for k, v in value.items())
        elif isinstance(value, (list, tuple)):
            out.extend(f"{opt}={v}" for v in value)
        else:
            out.append(f"{opt}={value}")
    return out


def _variant_argv(variants: Union[None, str, Sequence[str]]) -> List[str]:
    if variants is None:
        return []
    if isinstance(variants, str):
        variants = [variants]
    out: List[str] = []
    for v in variants:
        # compare's sets name the LRU too: "mglru+pf-set-active"; split as
        # the command line splits them.
        lru, names = _native.split_set(v)
        if lru is not None:
            out.append(f"--lru={lru}")
        out.extend(f"--variant={n}" for n in names)
    return out


def variants() -> List[Dict[str, Any]]:
    """The patch registry, as ``foliosim variants --format json`` prints it:
    one dict per patch or behaviour ``variants=`` takes (``name``, ``off``,
    ``subject``, ``reference``, ``merged``, ``seed``, ``help`` and the
    ``releases`` whose ``--kernel`` preset carries it)."""
    return json.loads(_native.variants_json())


def _frame(rows: List[Dict[str, Any]], frame: str):
    if frame == "polars" or (frame == "auto" and _has_polars()):
        import polars as pl

        return pl.DataFrame(rows)
    import pandas as pd

    return pd.DataFrame(rows)


def _has_polars() -> bool:
    try:
        import polars  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass
class Result:
    """One run's report.

    ``vmstat`` is the machine's /proc/vmstat (pgpgin/pgpgout in KiB, as the
    kernel prints them) and ``memcg`` the workload group's memory.stat
    (sizes in bytes), each a dict under the kernel's counter names;
    ``foliosim_*`` entries are the model's explanations, not kernel
    counters. ``raw`` is foliosim's whole JSON object (``--json``).
    """

    argv: List[str]
    raw: Dict[str, Any] = field(repr=False)

    @property
    def vmstat(self) -> Dict[str, int]:
        return self.raw["vmstat"]

    @property
    def memcg(self) -> Dict[str, int]:
        return self.raw["memcg"]

    @property
    def elapsed_s(self) -> float:
        """Simulated seconds the run took."""
        return self.raw["elapsed_ns"] / 1e9

    @property
    def jobs(self) -> List[Dict[str, Any]]:
        """fio's per-job statistics (empty for other workloads)."""
        return self.raw.get("jobs", [])

    @property
    def cgroups(self) -> Dict[str, Dict[str, int]]:
        """A scenario's memory.stat per cgroup path (empty otherwise)."""
        return self.raw.get("cgroups", {})

    @property
    def processes(self) -> List[Dict[str, Any]]:
        """A scenario's processes: name, OOM-killed, rss (empty otherwise)."""
        return self.raw.get("processes", [])

    def timeline_frame(self, frame: str = "pandas"):
        """The counters at the end of each simulated second: one row per
        second, columns ``second``, ``vmstat.<counter>``, ``memcg.<counter>``.

        ``frame`` is "pandas", "polars" or "auto" (polars where installed).
        Needs the run made with ``timeline=True`` (the default).
        """
        samples = self.raw.get("timeline")
        if samples is None:
            raise ValueError("this run has no timeline (run(..., timeline=True))")
        rows = []
        for s in samples:
            row: Dict[str, Any] = {"second": s["second"]}
            row.update({f"vmstat.{k}": v for k, v in s["vmstat"].items()})
            row.update({f"memcg.{k}": v for k, v in s["memcg"].items()})
            rows.append(row)
        return _frame(rows, frame)

    @property
    def timeline(self):
        """:meth:`timeline_frame` as a pandas DataFrame."""
        return self.timeline_frame("pandas")

    def counters(self) -> Dict[str, int]:
        """Every counter in one dict: ``vmstat.<name>`` and ``memcg.<name>``."""
        out = {f"vmstat.{k}": v for k, v in self.vmstat.items()}
        out.update({f"memcg.{k}": v for k, v in self.memcg.items()})
        return out


def run(
    workload: Workload,
    machine: Optional[Mapping[str, MachineValue]] = None,
    variants: Union[None, str, Sequence[str]] = None,
    *,
    fio: Optional[Mapping[str, Union[str, int]]] = None,
    timeline: bool = True,
) -> Result:
    """Runs one workload through the model.

    ``workload``: see :func:`workload_argv` (a path or the command line).
    ``machine``: machine options under the command line's names, "_" or
    "-" alike: ``{"memory": "1G", "memcg_limit": "400M", "lru": "mglru",
    "swap": "zram:1G", "sysctl": {"vm.swappiness": 100}, "seed": 3}``.
    ``variants``: variant names (``["p1", "p2"]`` or ``"p1+p2"``;
    "classic"/"mglru" pick the LRU as compare's sets do). ``fio``: fio job
    options that override every job's own (``{"bs": "64k"}``).
    ``timeline``: sample the counters every simulated second.
    """
    machine = dict(machine or {})
    registered = None
    policy = machine.get("policy")
    if policy is not None and not isinstance(policy, str):
        # A policy class: registered for this run only.
        name = getattr(policy, "__name__", None) or type(policy).__name__
        machine["policy"] = register_policy(name, policy)
        registered = name
    try:
        argv = workload_argv(workload) + _machine_argv(machine) + _variant_argv(variants)
        if timeline and "--timeline" not in argv:
            argv.append("--timeline")
        overrides = [(str(k), str(v)) for k, v in (fio or {}).items()]
        raw = json.loads(_native.run_json(argv, overrides))
    finally:
        if registered is not None:
            unregister_policy(registered)
    return Result(argv=argv, raw=raw)


def compare(
    workload: Workload,
    sets: Sequence[str],
    machine: Optional[Mapping[str, MachineValue]] = None,
    *,
    fio: Optional[Mapping[str, Union[str, int]]] = None,
):
    """Runs ``workload`` under each variant set (``["baseline", "p1+p2",
    "mglru"]``) and returns a pandas DataFrame indexed by counter, one
    column per set, then ``d(SET)`` columns with each later set's change
    relative to the first (NaN where the first is 0). Counters zero in
    every set are left out, as ``foliosim compare`` does; ``elapsed_s`` is
    the last row.
    """
    import pandas as pd

    if len(sets) < 2:
        raise ValueError("compare: give at least two sets")
    results = [run(workload, machine, s, fio=fio, timeline=False) for s in sets]
    counters = [r.counters() for r in results]
    names = sorted({k for c in counters for k in c})
    data = {s: [c.get(k, 0) for k in names] for s, c in zip(sets, counters)}
    df = pd.DataFrame(data, index=pd.Index(names, name="counter"))
    df = df[(df != 0).any(axis=1)].astype("float64")
    df.loc["elapsed_s"] = [r.elapsed_s for r in results]
    base = df[sets[0]]
    for s in sets[1:]:
        df[f"d({s})"] = (df[s] - base) / base.where(base != 0)
    return df


def sweep(
    grid: Union[str, os.PathLike],
    *,
    out: Union[None, str, os.PathLike] = None,
    jobs: Optional[int] = None,
    ray_address: Optional[str] = None,
    resume: bool = False,
    frame: str = "pandas",
):
    """Runs a grid file (docs/sweep.md) and returns its table: one row per
    (point, repeat), sorted, columns ``point, repeat, seed``,
    ``param.<name>`` per varied parameter, ``elapsed_s``, fio's
    ``fio.read_bytes``/``fio.write_bytes`` (fio workloads), then
    ``memcg.<counter>`` and ``vmstat.<counter>`` — ``foliosim sweep``'s CSV.

    ``out``: output prefix (PREFIX.csv, PREFIX.parquet and the journal
    PREFIX.journal.csv); default a fresh temporary folder. A journal left
    by a killed sweep with the same prefix is resumed. ``jobs``: runs at
    once (default every core). ``ray_address``: run each point as a task
    on that Ray cluster instead (this interpreter must have Ray; the
    cluster's nodes must see the grid's files at the same paths); the
    table is the same as a local run's. ``frame``: "pandas" or "polars".
    """
    if out is None:
        out = os.path.join(tempfile.mkdtemp(prefix="foliosim-sweep-"), "sweep")
    csv_path, _parquet, _ran, _resumed = _native.sweep(
        os.fspath(grid),
        os.fspath(out),
        jobs,
        resume,
        ray_address,
        sys.executable,
    )
    return read_table(csv_path, frame=frame)


def read_table(path: Union[str, os.PathLike], frame: str = "pandas"):
    """A sweep's CSV as a DataFrame (parameter values kept as written:
    no NA guessing)."""
    if frame == "polars":
        import polars as pl

        return pl.read_csv(path, infer_schema_length=None)
    import pandas as pd

    return pd.read_csv(path, keep_default_na=False, na_filter=False)
