#!/usr/bin/env python3
"""Compare two scripts/figures-snapshot directories value by value.

Prints every JSON value, exit code or non-JSON output line that differs
and exits 1 if any does. Floats must be identical: the model is
deterministic, so a restructuring that moves any figure shows here."""
import json
import pathlib
import sys


def walk(a, b, path, out):
    if type(a) is not type(b):
        out.append(f"{path}: {a!r} -> {b!r}")
    elif isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{path}.{k}: {'missing' if k not in a else a[k]!r} -> {'missing' if k not in b else b[k]!r}")
            else:
                walk(a[k], b[k], f"{path}.{k}", out)
    elif isinstance(a, list):
        if len(a) != len(b):
            out.append(f"{path}: length {len(a)} -> {len(b)}")
        for i, (x, y) in enumerate(zip(a, b)):
            walk(x, y, f"{path}[{i}]", out)
    elif a != b:
        out.append(f"{path}: {a!r} -> {b!r}")


def load(p):
    text = p.read_text()
    try:
        return json.loads(text)
    except ValueError:
        return text.splitlines()


def main():
    a, b = (pathlib.Path(x) for x in sys.argv[1:3])
    diffs = []
    names = sorted({p.relative_to(a) for p in a.rglob("*") if p.is_file() and p.suffix in (".json", ".rc")}
                   | {p.relative_to(b) for p in b.rglob("*") if p.is_file() and p.suffix in (".json", ".rc")})
    for n in names:
        if not (a / n).exists() or not (b / n).exists():
            diffs.append(f"{n}: only in {'B' if not (a / n).exists() else 'A'}")
            continue
        out = []
        walk(load(a / n), load(b / n), "", out)
        diffs += [f"{n}{d}" for d in out]
    for d in diffs[:200]:
        print(d)
    print(f"{len(names)} files, {len(diffs)} differences")
    sys.exit(1 if diffs else 0)


if __name__ == "__main__":
    main()
