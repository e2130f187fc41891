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
