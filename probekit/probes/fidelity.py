"""Fidelity report: each generated probe next to the original oLMpics release of it, and a test of our
construction run over the release.

Like for like: a probe with a ``release_phrasing`` variant (AGE-COMPARISON, MULTI-HOP, ANTONYM NEGATION:
the release's wording) is compared in that variant, the others in ``original``; the report names the variant.

Per probe and split: sizes, gold-label distribution, example stems, vocabulary overlap, the numbers the
stems and choices hold (how many distinct, their range: our AGE train ages 43-120 against the release's
41-104) and two counts of rows breaking a rule:

* *problems*: the generic rules that hold for every probe (unique ids and contents, no stray spaces, the
  mask count of the format, a gold label among the choices, distinct choices); on ours, the generator
  module's own ``rule(row) -> problem | None`` too (it reads the facts our rows carry); on the release, the
  counts of the generator module's ``release_problems(rows_by_split) -> {split: Counter}``, the release's
  defects its generation fixes (ALWAYS-NEVER: the typos, stray spaces and duplicate statements its release
  parse repairs);
* *our construction rules*: the rules the probe's generator enforces, read back from each row's stem with
  our params and tables (:mod:`generators.shared.release_rules`: value ranges, pairing, single tokens,
  duplicates, balance), run over ours and over the release alike, and over our ``original`` variant too
  where ours is ``release_phrasing`` (side ``ours (original)``). Ours must break none (``probes fidelity``
  fails when one of our rows does, after writing the report).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from probekit.data.examples import SPLITS, answer_text, example_problem
from probekit.probes.templates import MASK

WORD = re.compile(r"[a-z]+")
INTEGER = re.compile(r"(?<![\w.])\d+(?![\w.]\d)")
LIKE_FOR_LIKE = "release_phrasing"  # the variant written in the release's wording, where a probe has one
STRAY_SPACE = "leading/trailing space in stem or choice"
NO_RELEASE = "no original release"   # a probe of ours that the oLMpics release does not have: not compared


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
        problems[STRAY_SPACE] += any(t != t.strip() for t in [stem, *texts])
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


def numbers(rows: Iterable[Mapping]) -> dict | None:
    """The whole numbers written in the stems and choices: how many distinct, and their ``[min, max]``
    (None when there are none)."""
    found = {int(n) for r in rows if not example_problem(r)
             for text in (r["question"]["stem"], *(c["text"] for c in r["question"]["choices"]))
             for n in INTEGER.findall(text)}
    return {"distinct": len(found), "range": [min(found), max(found)]} if found else None


def summary(rows: list[dict], fmt: str, rule: Callable[[dict], str | None] | None = None,
            extra_problems: Mapping[str, int] | None = None, by_design: Iterable[str] = ()) -> dict:
    """What the report shows of one split (``extra_problems``: counts added to the rules' problems;
    ``by_design``: generic rules the variant's templates break on purpose, counted apart as ``by_design``)."""
    labels = Counter(answer_text(r) for r in rows if not example_problem(r))
    problems = generic_problems(rows, fmt)
    if rule is not None:
        problems.update(p for p in map(rule, rows) if p)
    problems.update(extra_problems or {})
    problems = +problems
    designed = {name: problems.pop(name) for name in sorted(by_design) if name in problems}
    choices = Counter(len(r["question"]["choices"]) for r in rows if not example_problem(r))
    return {"n": len(rows), "choices_per_row": dict(sorted(choices.items())),
            "labels": dict(labels.most_common(8)), "distinct_gold": len(labels), "numbers": numbers(rows),
            "examples": [r["question"]["stem"] for r in rows[:3]], "problems": dict(sorted(problems.items())),
            **({"by_design": designed} if designed else {})}


def compare(ours: Mapping[str, list[dict]], release: Mapping[str, list[dict]], fmt: str,
            rule: Callable[[dict], str | None] | None = None,
            release_problems: Mapping[str, Mapping[str, int]] | None = None,
            check: Callable[[Mapping[str, list[dict]]], Mapping[str, Mapping[str, int]]] | None = None,
            variant: str = "original", by_design: Iterable[str] = (),
            more_rules: Mapping[str, Mapping[str, Mapping[str, int]]] | None = None) -> dict:
    """One probe: per split, our summary and the release's, the vocabulary overlap and, with ``check`` (our
    construction rules, per split: rule -> rows breaking it), its counts on ours and on the release;
    ``release_problems`` (per split) are added to the release's problems (the defects our generation fixes);
    ``by_design``: generic rules our variant breaks on purpose (the release's wording), not counted on ours;
    ``more_rules``: further sides of the construction rules' counts (``{side: {split: {rule: n}}}``: our
    ``original`` variant, where ours is ``release_phrasing``)."""
    rules = {"ours": check(ours), "release": check(release), **(more_rules or {})} if check else None
    out = {}
    for split in SPLITS:
        a, b = ours.get(split, []), release.get(split, [])
        va, vb = vocabulary(a), vocabulary(b)
        out[split] = {"variant": variant, "ours": summary(a, fmt, rule, by_design=by_design),
                      "release": summary(b, fmt, extra_problems=(release_problems or {}).get(split)),
                      "vocabulary": {"ours": len(va), "release": len(vb), "shared": len(va & vb),
                                     "release_covered": round(len(va & vb) / len(vb), 3) if vb else None}}
        if rules:
            names = sorted({name for side in rules.values() for name in side.get(split, {})})
            out[split]["rules"] = {name: {side: int(rules[side].get(split, {}).get(name, 0)) for side in rules}
                                   for name in names}
    return out


def broken(splits: Mapping[str, Mapping], side: str) -> dict[str, int]:
    """Per split, the rows of ``side`` breaking a rule: problems plus construction rules; ``ours`` counts our
    every side (``ours`` and ``ours (original)``), ``release`` the release."""
    return {split: sum(s[side]["problems"].values()) + sum(n for r in s.get("rules", {}).values()
                                                           for k, n in r.items() if k.split(" ")[0] == side)
            for split, s in splits.items()}


def sizes(report: Mapping[str, Mapping]) -> dict[str, dict[str, dict[str, int]]]:
    """``{probe: {split: {ours, release}}}``: the row counts (what the docs quote)."""
    return {probe: {split: {"ours": s["ours"]["n"], "release": s["release"]["n"]} for split, s in splits.items()}
            for probe, splits in report.items()}


INTRO = (
    "Per probe and split: ours and the original release file, like for like: a probe with a "
    "`release_phrasing` variant (the release's wording) is compared in it, the others in `original`; each "
    "section names the variant. *Problems* counts rows breaking a generic rule (unique ids and contents, no "
    "stray spaces, the mask count of the format, distinct choices), the probe's own rule (ours only: it reads "
    "our rows' facts) and, for the release, the defects the probe's generation fixes (its `release_problems`, "
    "e.g. typos fixed). *Our construction rules* are the rules the probe's generator enforces (value ranges, "
    "pairing, single tokens, duplicates, balance), read back from each stem with our params and tables and "
    "run over ours and the release alike (and over our `original` variant where ours is `release_phrasing`): "
    "rows breaking each; ours must break none. *Numbers*: the whole "
    "numbers of the stems and choices, distinct count and range. Vocabulary: distinct lower-case words of stems "
    "and choices; *covered* = share of the release's words that ours also use.")


def markdown(report: Mapping[str, Mapping]) -> str:
    """The report as markdown: a summary table of sizes and broken rules, then a section per probe."""
    lines = ["# Fidelity: generated probes next to the oLMpics release", "", INTRO, "",
             "| probe | variant | train: ours / release | dev: ours / release | rules broken (a row counts once "
             "per rule), ours: train / dev | release: train / dev |", "| --- | --- | --- | --- | --- | --- |"]
    for probe, splits in report.items():
        if splits == NO_RELEASE:
            lines.append(f"| {probe} | – | {NO_RELEASE} | | | |")
            continue
        n = {s: f"{r['ours']['n']} / {r['release']['n']}" for s, r in splits.items()}
        o, rel = broken(splits, "ours"), broken(splits, "release")
        variant = next(iter(splits.values()), {}).get("variant", "original")
        lines.append(f"| {probe} | `{variant}` | {n.get('train', '–')} | {n.get('dev', '–')} | "
                     f"{' / '.join(map(str, o.values()))} | {' / '.join(map(str, rel.values()))} |")
    lines.append("")
    for probe, splits in report.items():
        if splits == NO_RELEASE:
            continue
        variant = next(iter(splits.values()), {}).get("variant", "original")
        lines += [f"## {probe}", "", f"Ours: variant `{variant}`.", ""]
        for split, r in splits.items():
            o, rel, v = r["ours"], r["release"], r["vocabulary"]
            rows = [("examples", o["n"], rel["n"]),
                    ("choices per row", _kv(o["choices_per_row"]), _kv(rel["choices_per_row"])),
                    ("distinct gold answers", o["distinct_gold"], rel["distinct_gold"]),
                    ("most frequent gold answers", _kv(o["labels"]), _kv(rel["labels"])),
                    ("numbers (distinct; range)", _numbers(o.get("numbers")), _numbers(rel.get("numbers"))),
                    ("problems", _kv(o["problems"]) or "0", _kv(rel["problems"]) or "0"),
                    *([("as the release's wording has it (not counted)", _kv(o["by_design"]), "")]
                      if o.get("by_design") else []),
                    ("vocabulary", v["ours"], v["release"]),
                    ("first stem", _code(o["examples"]), _code(rel["examples"]))]
            lines += [f"**{split}** (shared vocabulary {v['shared']}, covered {v['release_covered']})", "",
                      "| | ours | release |", "| --- | --- | --- |"]
            lines += [f"| {name} | {a} | {b} |" for name, a, b in rows] + [""]
            if r.get("rules"):
                sides = list(next(iter(r["rules"].values())))
                lines += [f"Our construction rules on {split}: rows breaking each", "",
                          "| rule | " + " | ".join(sides) + " |", "| --- |" + " --- |" * len(sides)]
                lines += [f"| {name} | " + " | ".join(str(c[side]) for side in sides) + " |"
                          for name, c in r["rules"].items()] + [""]
    return "\n".join(lines)


def _kv(d: Mapping) -> str:
    return ", ".join(f"{k}: {v}" for k, v in d.items())


def _numbers(n: Mapping | None) -> str:
    return f"{n['distinct']}; {n['range'][0]}–{n['range'][1]}" if n else "none"


def _code(examples: list[str]) -> str:
    return f"`{examples[0]}`".replace("|", "\\|") if examples else "–"


def run(probes: Path, release_path: Callable[[str, str], Path | None], out: Path,
        tables: Callable[[tuple[str, ...]], Mapping] | None = None, *, release_rules=None,
        generator: Callable[[str], Any] | None = None) -> dict:
    """Compare every probe folder under ``probes`` (its ``release_phrasing`` variant where it has one, else
    ``original``) with its release files: the generic rules, the probe module's ``rule`` (ours) and
    ``release_problems`` (the release), and our construction rules where :data:`release_rules.CHECKS` has
    the probe (``tables(names)``: our table sets, for the checks that read them); write ``out`` (markdown)
    and the same report as JSON beside it (``.json``). A probe the release does not have (``release_path``
    gives None) is reported as :data:`NO_RELEASE` and not compared. ``release_rules`` (the module
    ``generators.shared.release_rules``) and ``generator`` (a probe's name -> its generator module) are the
    generators' own, given by the caller: this layer sits below them and imports none."""
    from types import SimpleNamespace

    from probekit.outputs import atomic
    from probekit.data.jsonl import read_json, read_jsonl
    from probekit.errors import UsageError

    def no_tables(names):
        raise UsageError(f"the fidelity check of {', '.join(names)} needs our table sets (--tables)")

    release_rules = release_rules or SimpleNamespace(CHECKS={})
    report = {}
    for meta_path in sorted(Path(probes).glob("*/original/meta.json")):
        probe = read_json(meta_path)["probe"]
        if any(release_path(probe, s) is None for s in SPLITS):
            report[probe] = NO_RELEASE
            continue
        name = LIKE_FOR_LIKE if (meta_path.parent.parent / LIKE_FOR_LIKE / "meta.json").is_file() else "original"
        folder = meta_path.parent.parent / name
        meta = read_json(folder / "meta.json")
        module = generator(probe) if generator else None
        rule, fixed = getattr(module, "rule", None), getattr(module, "release_problems", None)
        ours = {s: read_jsonl(folder / f"{s}.jsonl") for s in SPLITS if (folder / f"{s}.jsonl").is_file()}
        release = {s: read_jsonl(release_path(probe, s)) for s in SPLITS}
        check, designed, more = None, [], None
        if probe in release_rules.CHECKS and "params" in meta:
            ctx = release_rules.Context(release_rules.spec_of(probe), name, meta["params"], tables or no_tables)
            check = lambda rows, ctx=ctx, fn=release_rules.CHECKS[probe]: fn(rows, ctx)  # noqa: E731
            base = meta_path.parent
            if name != "original":  # our paper variant too, by the same rules
                first = read_json(meta_path)
                paper = release_rules.Context(ctx.spec, "original", first.get("params", meta["params"]), ctx.tables)
                more = {"ours (original)": release_rules.CHECKS[probe](
                    {s: read_jsonl(base / f"{s}.jsonl") for s in SPLITS if (base / f"{s}.jsonl").is_file()}, paper)}
        if name == LIKE_FOR_LIKE:  # the release's wording: its stray spaces are the template's, on purpose
            spec = release_rules.spec_of(probe)
            if any(spec.templates[t].text != spec.templates[t].text.strip() for t in spec.variants[name].templates):
                designed = [STRAY_SPACE]
        report[probe] = compare(ours, release, meta["format"], rule, fixed(release) if fixed else None,
                                check=check, variant=name, by_design=designed, more_rules=more)
    atomic.write_text(out, markdown(report))
    atomic.write_json(out.with_suffix(".json"), report)
    return report
