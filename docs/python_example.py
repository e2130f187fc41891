# %% [markdown]
# # foliosim from Python: a notebook-style example
#
# Run with `python docs/python_example.py [PLOT.png]` (or cell by cell in
# an editor that reads `# %%` cells). It runs one fio job with its
# timeline, then sweeps memcg limits x LRUs and plots refaults against the
# limit. docs/python_example.png is its plot.

# %%
import sys
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display needed
import matplotlib.pyplot as plt

import foliosim

work = Path(tempfile.mkdtemp(prefix="foliosim-example-"))
out_png = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_suffix(".png")

# %% [markdown]
# One run: a 24 MiB file read twice at 16 MiB/s in a 16 MiB memory cgroup.
# The second pass refaults what the first one evicted recently enough.

# %%
job = work / "reread.fio"
job.write_text("[reread]\nrw=read\nbs=64k\nsize=24M\nloops=2\ninvalidate=0\nrate=16m\n")
r = foliosim.run(job, machine={"memory": "256M", "memcg_limit": "16M"})
print(f"elapsed {r.elapsed_s:.2f}s, pgpgin {r.vmstat['pgpgin']} KiB, "
      f"refaults {r.memcg['workingset_refault_file']}")
timeline = r.timeline  # a pandas DataFrame, one row per simulated second
print(timeline[["second", "memcg.pgpgin", "memcg.workingset_refault_file", "memcg.pgscan_direct"]].to_string(index=False))

# %% [markdown]
# A sweep: the same job without the rate limit, memcg limit x LRU,
# 2 repeats (docs/sweep.md). One DataFrame back, one row per run.

# %%
(work / "job.fio").write_text("[reread]\nrw=read\nbs=64k\nsize=24M\nloops=2\ninvalidate=0\n")
grid = work / "grid.toml"
grid.write_text(
    'workload = ["fio", "job.fio"]\nrepeats = 2\n\n[base]\nmemory = "256M"\n\n[vary]\n'
    'memcg-limit = ["4M", "8M", "12M", "16M", "20M", "24M", "28M", "32M"]\nset = ["classic", "mglru"]\n'
)
df = foliosim.sweep(grid, out=work / "sweep")
limit_mib = df["param.memcg-limit"].str.rstrip("M").astype(int).rename("limit_mib")
summary = df.groupby(["param.set", limit_mib])["memcg.workingset_refault_file"].mean().unstack(0)
print(summary)

# %%
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
ax1.plot(timeline["second"], timeline["memcg.pgpgin"] / 1024, marker="o", label="pgpgin (MiB)")
ax1.plot(timeline["second"], timeline["memcg.workingset_refault_file"] * 4 / 1024, marker="s",
         label="refaulted (MiB)")
ax1.set_xlabel("simulated second")
ax1.set_title("one run: 24M read twice in a 16M memcg")
ax1.legend()
for lru, col in summary.items():
    ax2.plot(summary.index, col, marker="o", label=lru)
ax2.set_xlabel("memory.max (MiB)")
ax2.set_ylabel("workingset_refault_file")
ax2.set_title("sweep: refaults vs memcg limit")
ax2.legend(title="LRU")
fig.tight_layout()
fig.savefig(out_png, dpi=80)
print(f"wrote {out_png}")
