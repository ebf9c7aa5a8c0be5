"""Benchmark: `probes diff` on the default pipeline's data, against reading the same rows.

For each PATH (default: ``data/pararel``, ParaRel's 224,010 queries, and ``data``, the whole tree) the old side is
a copy of PATH in which one relation's patterns (or one variant's stems) are reworded and some rows dropped, the
new side PATH itself; or, with ``--old REV --new REV``, two git revisions of the project read through DVC. Prints
the seconds to open both sides, to read their rows (the baseline: what any diff must do), and the whole diff,
with the ratio diff / read. Usage: ``python bench/diff.py [--paths data/pararel data] [--old REV --new REV]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path


def _edited_copy(path: Path, tmp: Path) -> Path:
    """A copy of ``path`` with a few changes: each jsonl file of a dataset folder loses its last 50 rows, and a
    ParaRel pattern file has its patterns reworded (a space before the final full stop)."""
    out = tmp / path.name
    shutil.copytree(path, out)
    for f in sorted(out.rglob("*.jsonl")):
        lines = f.read_text(encoding="utf-8").splitlines(keepends=True)
        if f.name == "patterns.jsonl":
            rows = [json.loads(line) for line in lines]
            for r in rows:
                r["pattern"] = r["pattern"].rstrip(".").rstrip() + " ."
            f.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        elif f.name != "edges.jsonl" and f.name != "relations.jsonl" and len(lines) > 100:
            f.write_text("".join(lines[:-50]), encoding="utf-8")
    return out


def run(path: Path, old_spec: str | None, new_spec: str | None) -> dict:
    from probekit.versions.diff import diff
    from probekit.versions.sides import folder_side, open_side

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        if old_spec:
            old, new = open_side(old_spec, path), open_side(new_spec, path)
        else:
            old, new = folder_side(_edited_copy(path, Path(tmp))), folder_side(path)
        t1 = time.perf_counter()
        n = sum(len(rows) for side in (old, new) for e in side.entries.values() for rows in e.load().values())
        t2 = time.perf_counter()
        result = diff(old, new)
        t3 = time.perf_counter()
        old.close()
        new.close()
    return {"path": str(path), "open_s": round(t1 - t0, 2), "read_s": round(t2 - t1, 2), "diff_s": round(t3 - t2, 2),
            "ratio": round((t3 - t2) / (t2 - t1), 2), "rows_both_sides": n, **result.totals()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--paths", nargs="+", default=["data/pararel", "data"])
    p.add_argument("--old", help="a git revision (with --new): both sides read through DVC")
    p.add_argument("--new", help="a git revision, or omit for the working tree (with --old)")
    args = p.parse_args()
    print("| PATH | open both sides (s) | read rows (s) | diff (s) | diff / read | rows (both sides) | added | "
          "removed | changed | unchanged |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for path in args.paths:
        r = run(Path(path), args.old, args.new)
        print(f"| {r['path']} | {r['open_s']} | {r['read_s']} | {r['diff_s']} | {r['ratio']} | {r['rows_both_sides']} "
              f"| {r['added']} | {r['removed']} | {r['changed']} | {r['unchanged']} |", flush=True)


if __name__ == "__main__":
    main()
