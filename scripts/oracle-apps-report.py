#!/usr/bin/env python3
"""The catalogue's app.json files (scripts/oracle-apps) as a markdown table:
real median against the model's for the judged counters, and the verdict
of docs/fidelity/apps.md's rule (pgpgin and pgmajfault within 15%,
workingset_refault_file within 25% where it exceeds 1,000)."""
import json
import pathlib
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "target/oracle-apps")
runs = sorted(root.glob("*/app.json"))
if not runs:
    sys.exit(f"{root}: no */app.json (run scripts/oracle-apps first)")


def fmt(v):
    if v is None:
        return "-"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.2f}"


print("| application | limit | runs | pgpgin real / model (MiB) | err | pgmajfault real / model | err | refault_file real / model | err | wall s real / model |")
print("|---|---:|---:|---|---:|---|---:|---|---:|---|")
judged = within = 0
for p in runs:
    r = json.loads(p.read_text())
    rows = {x["counter"].split(" (")[0]: x for x in r["rows"]}
    cells = []
    for key, scale in (("pgpgin", 1 / 2**20), ("pgmajfault", 1), ("workingset_refault_file", 1)):
        x = rows[key]
        rm, mm = x["real_median"], x["model_median"]
        s = lambda v: None if v is None else v * scale
        mark = {True: "", False: " ✗", None: " (not judged)"}[x["within"]]
        cells.append(f"{fmt(s(rm))} / {fmt(s(mm))}")
        cells.append(("-" if x["err_pct"] is None else f"{x['err_pct']:+.1f}%") + mark)
        if x["within"] is not None:
            judged += 1
            within += x["within"]
    wall = rows["wall time / simulated"]
    cells.append(f"{fmt(wall['real_median'])} / {fmt(wall['model_median'])}")
    print(f"| {r['name']} | {r['memcg_limit'] >> 20}M | {len(r['traces'])} | " + " | ".join(cells) + " |")
print()
print(f"Judged counters within tolerance: {within} of {judged}" + (f" ({100 * within / judged:.0f}%)" if judged else ""))
