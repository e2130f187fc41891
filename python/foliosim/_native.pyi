"""Type hints of the native module (crates/foliosim-py)."""

from typing import List, Optional, Tuple

def run_json(argv: List[str], fio_overrides: List[Tuple[str, str]] = ...) -> str:
    """Runs one workload command line; foliosim's JSON object (``--json``)."""

def sweep(
    grid: str,
    out: Optional[str] = None,
    jobs: Optional[int] = None,
    resume: bool = False,
    ray: Optional[str] = None,
    python: str = "python3",
) -> Tuple[str, str, int, int]:
    """``foliosim sweep``: (csv path, parquet path, rows run, rows resumed)."""

def grid_row(grid: str, point: int, repeat: int) -> Tuple[List[str], List[str]]:
    """Runs one (point, repeat) of a grid: (column names, values)."""

def grid_size(grid: str) -> Tuple[int, int]:
    """(points, repeats) of a grid, after checking every point."""

def variants_json() -> str:
    """The patch registry as JSON (``foliosim variants --format json``)."""

def split_set(set: str) -> Tuple[Optional[str], List[str]]:
    """A set such as "mglru+p1,p2": (the LRU if named, the variant names)."""

def register_policy(name: str, factory: object, budget_ms: int = ...) -> None:
    """Registers a Python cache_ext policy class as ``py:NAME``."""

def unregister_policy(name: str) -> None:
    """Removes ``py:NAME``."""

class PolicyContext:
    """cache_ext's kfuncs for one callback (valid during that call only)."""

    memcg: int
    pid: int
    tid: int
    comm: str
    now: int
    request_nr_folios: int
    def list_create(self) -> int: ...
    def list_add(self, list: int, folio: int) -> None: ...
    def list_add_tail(self, list: int, folio: int) -> None: ...
    def list_move(self, list: int, folio: int, tail: bool = ...) -> None: ...
    def list_del(self, folio: int) -> None: ...
    def list_len(self, list: int) -> int: ...
    def list_of(self, folio: int) -> Optional[int]: ...
    def nr_valid(self) -> int: ...
    def folio_valid(self, folio: int) -> bool: ...
    def folio_test(self, folio: int, flag: str) -> bool: ...
    def folio_key(self, folio: int) -> Tuple[int, int]: ...
    def propose(self, folio: int) -> bool: ...
    def nr_proposed(self) -> int: ...
    def list_iterate(self, list: int, callback: object) -> int: ...
    def list_sample(self, list: int, group: int, score: object) -> int: ...
