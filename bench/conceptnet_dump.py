"""Benchmark: peak memory of ``read_assertions`` does not grow with the size of the ConceptNet dump.

Writes synthetic assertion files in the official 5-column format (edge URI, relation, start, end, JSON;
about 10% English-English edges as in 5.7, many languages, senses, surface texts), runs
``read_assertions`` on each in a fresh subprocess, and prints each run's peak RSS (the child's own
``ru_maxrss`` via ``os.wait4``) and wall time, the RSS of a child that only imports, and the RSS ratio
largest / smallest. Usage: ``python bench/conceptnet_dump.py [--sizes 1000000 4000000] [--gzip]``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LANGS = ["en"] * 32 + ["fr", "de", "ja", "es", "it", "ru", "zh", "pt", "nl", "fi", "sv", "pl"] * 6
RELATIONS = ["RelatedTo"] * 8 + ["Synonym"] * 3 + ["IsA", "Antonym", "AtLocation", "UsedFor", "HasProperty",
             "CapableOf", "PartOf", "FormOf", "DerivedFrom", "HasContext", "ExternalURL", "dbpedia/genre"]
SENSES = ["", "", "/n", "/v", "/a", "/n/wn/animal", "/n/wikt/en_1", "/v/wn/motion"]
DATASETS = ["/d/conceptnet/4/en", "/d/wiktionary/en", "/d/wordnet/3.1", "/d/verbosity", "/d/dbpedia/en"]

CHILD = """
import json, sys
from pathlib import Path
from probekit.sources.loaders.conceptnet import DEFAULT_RELATIONS, read_assertions
if sys.argv[1] != "-":
    r = read_assertions(Path(sys.argv[1]), Path(sys.argv[2]), DEFAULT_RELATIONS, memory_limit=sys.argv[3],
                        threads=int(sys.argv[4]))
    print(json.dumps({k: r[k] for k in ("rows_read", "rows_kept", "rows_written")}))
"""


def write_synthetic(path: Path, n: int, vocab: int, seed: int = 0) -> None:
    """``n`` assertion lines over a vocabulary of ``vocab`` words (pairs joined by ``_`` as phrases)."""
    rng = random.Random(seed)
    words = [f"w{i:x}" for i in range(vocab)]
    with (gzip.open(path, "wt", compresslevel=1, encoding="utf-8", newline="\n") if path.suffix == ".gz"
          else open(path, "w", encoding="utf-8", newline="\n")) as out:
        for i in range(n):
            rel = rng.choice(RELATIONS)
            a, b = (f"/c/{rng.choice(LANGS)}/{_phrase(rng, words)}{rng.choice(SENSES)}" for _ in range(2))
            meta = {"dataset": rng.choice(DATASETS), "license": "cc:by-sa/4.0",
                    "sources": [{"activity": "/s/activity/omcs/omcs1_possibly_free_text",
                                 "contributor": f"/s/contributor/omcs/user{i % 9973}"}],
                    "surfaceText": f"[[{a.split('/')[3]}]] is related to [[{b.split('/')[3]}]]",
                    "weight": round(rng.choice([0.5, 1.0, 1.0, 2.0, rng.uniform(0.1, 10)]), 3)}
            out.write(f"/a/[/r/{rel}/,{a}/,{b}/]\t/r/{rel}\t{a}\t{b}\t{json.dumps(meta)}\n")


def _phrase(rng: random.Random, words: list[str]) -> str:
    return rng.choice(words) if rng.random() < 0.7 else f"{rng.choice(words)}_{rng.choice(words)}"


def run_child(args: list[str]) -> tuple[float, float, str]:
    """Peak RSS (MiB) and wall seconds of one fresh ``python -c CHILD args`` process, and its stdout."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", CHILD, *args], cwd=REPO, stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"child failed ({proc.returncode}) for {args}")
    return usage.ru_maxrss / 1024, time.perf_counter() - t0, out.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 4_000_000])
    parser.add_argument("--vocab", type=int, default=300_000)
    parser.add_argument("--gzip", action="store_true", help="write and read .csv.gz, as the dump is served")
    parser.add_argument("--memory-limit", default="1GB")
    parser.add_argument("--threads", type=int, default=min(4, os.cpu_count() or 1))
    parser.add_argument("--dir", type=Path, default=None, help="where to write the files (default: a temp folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        base_rss, base_t, _ = run_child(["-"])
        print(f"DuckDB memory_limit {args.memory_limit}, threads {args.threads}, cpus {os.cpu_count()}")
        print(f"{'import only':>24}: peak RSS {base_rss:7.1f} MiB, {base_t:6.1f} s")
        peaks = []
        for n in sorted(args.sizes):
            path = Path(tmp) / f"assertions-{n}.csv{'.gz' if args.gzip else ''}"
            t0 = time.perf_counter()
            write_synthetic(path, n, args.vocab)
            made = time.perf_counter() - t0
            rss, secs, out = run_child([str(path), str(Path(tmp) / f"edges-{n}.parquet"), args.memory_limit,
                                        str(args.threads)])
            peaks.append(rss)
            size = path.stat().st_size / 2**20
            print(f"{n:>12,} rows {size:7.0f} MiB: peak RSS {rss:7.1f} MiB, {secs:6.1f} s "
                  f"({n / secs / 1e6:.2f} M rows/s; file written in {made:.0f} s) {out}")
            path.unlink()
        print(f"RSS ratio largest/smallest: {peaks[-1] / peaks[0]:.2f} for a {max(args.sizes) / min(args.sizes):.0f}x "
              f"larger file")


if __name__ == "__main__":
    main()
