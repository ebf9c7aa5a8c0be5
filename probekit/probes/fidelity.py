"""Fidelity report: each generated probe next to the original oLMpics release of it.

Per probe and split: sizes, gold-label distribution, example stems, vocabulary overlap, and the count of
rows that break a construction rule. The generic rules hold for every probe (unique ids and contents, no
stray spaces, the mask count of the format, a gold label among the choices, distinct choices); a
generator module may add its own ``rule(row) -> problem | None`` (checked on our rows, which carry the
facts they came from). Ours must break none; the release's counts are reported as found.

A generator module may also define ``release_problems(rows_by_split: dict[str, list[dict]]) -> dict[str,
Counter]``: per split, counts of the release's defects that its generation fixes (ALWAYS-NEVER: the typos,
stray spaces and duplicate statements its release parse repairs), added to the release's problems beside
the generic counts.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Callable, Iterable, Mapping

from probekit.data.examples import SPLITS, answer_text, example_problem
from probekit.probes.templates import MASK

WORD = re.compile(r"[a-z]+")


def generic_problems(rows: list[dict], fmt: str) -> Counter:
    """Counts of rows breaking each generic rule."""
    problems: Counter = Counter()
    ids = Counter(r.get("id") for r in rows)
    contents = Counter(_content(r) for r in rows if not example_problem(r))
    masks = 1 if fmt == "mc_mlm" else 0
    for r in rows:
        if example_problem(r):
            problems["malformed row"] += 1
            continue
        stem = r["question"]["stem"]
        texts = [c["text"] for c in r["question"]["choices"]]
        problems["duplicate id"] += ids[r["id"]] > 1
        problems["duplicate content"] += contents[_content(r)] > 1
        problems["leading/trailing space in stem or choice"] += any(t != t.strip() for t in [stem, *texts])
        problems[f"stem without exactly {masks} {MASK}"] += stem.count(MASK) != masks
        problems["repeated choice text"] += len(set(texts)) != len(texts)
    return +problems


def _content(row: Mapping) -> tuple:
    return row["question"]["stem"], tuple(sorted(c["text"] for c in row["question"]["choices"])), answer_text(row)


def vocabulary(rows: Iterable[Mapping]) -> set[str]:
    """Lower-cased words of the stems and choices (numbers and the mask left out)."""
    words: set[str] = set()
    for r in rows:
        text = " ".join([r["question"]["stem"].replace(MASK, " "), *(c["text"] for c in r["question"]["choices"])])
        words.update(WORD.findall(text.lower()))
    return words


def summary(rows: list[dict], fmt: str, rule: Callable[[dict], str | None] | None = None,
            extra_problems: Mapping[str, int] | None = None) -> dict:
    """What the report shows of one split (``extra_problems``: counts added to the rules' problems)."""
    labels = Counter(answer_text(r) for r in rows if not example_problem(r))
    problems = generic_problems(rows, fmt)
    if rule is not None:
        problems.update(p for p in map(rule, rows) if p)
    problems.update(extra_problems or {})
    problems = +problems
    choices = Counter(len(r["question"]["choices"]) for r in rows if not example_problem(r))
    return {"n": len(rows), "choices_per_row": dict(sorted(choices.items())),
            "labels": dict(labels.most_common(8)), "distinct_gold": len(labels),
            "examples": [r["question"]["stem"] for r in rows[:3]], "problems": dict(sorted(problems.items()))}


def compare(ours: Mapping[str, list[dict]], release: Mapping[str, list[dict]], fmt: str,
            rule: Callable[[dict], str | None] | None = None,
            release_problems: Mapping[str, Mapping[str, int]] | None = None) -> dict:
    """One probe: per split, our summary and the release's, and the vocabulary overlap; ``release_problems``
    (per split) are added to the release's problems (the defects our generation fixes)."""
    out = {}
    for split in SPLITS:
        a, b = ours.get(split, []), release.get(split, [])
        va, vb = vocabulary(a), vocabulary(b)
        out[split] = {"ours": summary(a, fmt, rule),
                      "release": summary(b, fmt, extra_problems=(release_problems or {}).get(split)),
                      "vocabulary": {"ours": len(va), "release": len(vb), "shared": len(va & vb),
                                     "release_covered": round(len(va & vb) / len(vb), 3) if vb else None}}
    return out


def markdown(report: Mapping[str, Mapping]) -> str:
    """The report as markdown: a section per probe, a table per split."""
    lines = ["# Fidelity: generated probes next to the oLMpics release", "",
             "Per probe and split: ours (`original` variant) and the original release file. *Problems* counts rows "
             "breaking a construction rule: the generic ones (unique ids and contents, no stray spaces, the mask "
             "count of the format, distinct choices), the probe's own rule (ours only) and, for the release, the "
             "defects the probe's generation fixes (its `release_problems`, e.g. typos fixed). Vocabulary: distinct "
             "lower-case words of stems and choices; *covered* = share of the release's words that ours also use.",
             ""]
    for probe, splits in report.items():
        lines += [f"## {probe}", ""]
        for split, r in splits.items():
            o, rel, v = r["ours"], r["release"], r["vocabulary"]
            rows = [("examples", o["n"], rel["n"]),
                    ("choices per row", _kv(o["choices_per_row"]), _kv(rel["choices_per_row"])),
                    ("distinct gold answers", o["distinct_gold"], rel["distinct_gold"]),
                    ("most frequent gold answers", _kv(o["labels"]), _kv(rel["labels"])),
                    ("problems", _kv(o["problems"]) or "0", _kv(rel["problems"]) or "0"),
                    ("vocabulary", v["ours"], v["release"]),
                    ("first stem", _code(o["examples"]), _code(rel["examples"]))]
            lines += [f"**{split}** (shared vocabulary {v['shared']}, covered {v['release_covered']})", "",
                      "| | ours | release |", "| --- | --- | --- |"]
            lines += [f"| {name} | {a} | {b} |" for name, a, b in rows] + [""]
    return "\n".join(lines)


def _kv(d: Mapping) -> str:
    return ", ".join(f"{k}: {v}" for k, v in d.items())


def _code(examples: list[str]) -> str:
    return f"`{examples[0]}`".replace("|", "\\|") if examples else "–"


def run(probes: Path, release_path: Callable[[str, str], Path], out: Path) -> dict:
    """Compare every probe folder under ``probes`` (its ``original`` variant) with its release files (adding
    the counts of the probe module's ``release_problems`` to the release's problems, where it has one);
    write ``out`` (markdown) and the same report as JSON beside it (``.json``)."""
    import importlib
    import json

    from probekit import atomic
    from probekit.data.jsonl import read_jsonl

    report = {}
    for meta_path in sorted(Path(probes).glob("*/original/meta.json")):
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        probe, folder = meta["probe"], meta_path.parent
        module = importlib.import_module(f"generators.{probe}")
        rule, fixed = getattr(module, "rule", None), getattr(module, "release_problems", None)
        ours = {s: read_jsonl(folder / f"{s}.jsonl") for s in SPLITS if (folder / f"{s}.jsonl").is_file()}
        release = {s: read_jsonl(release_path(probe, s)) for s in SPLITS}
        report[probe] = compare(ours, release, meta["format"], rule, fixed(release) if fixed else None)
    atomic.write_text(out, markdown(report))
    atomic.write_json(out.with_suffix(".json"), report)
    return report
