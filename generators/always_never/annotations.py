"""Human annotations as gold: the annotation store's gold tables, and the release parsed back into gold.

A probe whose gold comes from people (ALWAYS-NEVER) keeps it in an *annotation store*, two CSV formats:

- **answers**: one row per (statement, worker), exported to crowdworkers and imported back as gold by
  :mod:`generators.always_never.crowd_tasks` (the format and the majority rule are there).
- **gold** (``GOLD_COLUMNS``): one row per statement: ``template_id, x, y, gold, n_workers, agreement``,
  written by :func:`~generators.always_never.crowd_tasks.write_gold` from :func:`~generators.always_never.crowd_tasks.import_answers`, read
  by :func:`read_gold`; ``gold`` is the template's outcome key (for ALWAYS-NEVER the word itself),
  ``agreement`` the share of the statement's workers who gave the gold answer.

The original release is an annotation source too (:func:`parse_release`): each release row is parsed back
into (template_id, x, y, gold) by matching its stem against the templates, with its defects fixed and
counted (stray spaces, the explicit word fixes of the probe's params, duplicate ids, duplicate and
conflicting statements, rows matching no template), also per split under readable names (what the fidelity
report adds to the release's problems, through the probe's ``release_problems``); it counts as one "worker"
(the release's gold is the crowd majority the authors kept; their worker counts were not released).
"""

from __future__ import annotations

import csv
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Sequence

from probekit.data.examples import SPLITS, example_problem
from probekit.errors import DataError, shown
from probekit.probes.templates import MASK, SLOT, ProbeSpec, Template, TemplateError

GOLD_COLUMNS = ("template_id", "x", "y", "gold", "n_workers", "agreement")
CANDIDATE_COLUMNS = ("template_id", "x", "y")
SLOTS = ("x", "y")  # the store's slot columns: an annotated probe's templates have exactly these slots

Key = tuple  # (template_id, x, y)


@dataclass(frozen=True)
class Gold:
    """One annotated statement: its key, gold outcome and where the annotation came from."""

    template_id: str
    x: str
    y: str
    gold: str  # outcome key of the template's answers
    n_workers: int | None = None
    agreement: float | None = None  # None: unknown (the release)
    source: str = ""  # the file it was read from
    line: int = 0
    kind: str = "annotations"  # "annotations" (a gold CSV) or "release"
    split: str | None = None  # the release's split; None for new annotations
    release_id: str | None = None
    fixes: Mapping[str, str] = field(default_factory=dict)  # word fixes applied to the release stem

    @property
    def key(self) -> Key:
        return self.template_id, self.x, self.y

    def facts(self) -> dict:
        """What a generated row keeps of its annotation (checked by the probe's ``rule``)."""
        facts = {"kind": self.kind, "source": self.source, "line": self.line, "gold": self.gold,
                 "n_workers": self.n_workers, "agreement": self.agreement}
        if self.release_id is not None:
            facts["release_id"] = self.release_id
        if self.fixes:
            facts["fixes"] = dict(self.fixes)
        return facts


# --- templates ------------------------------------------------------------------------------------------


def annotated_template(spec: ProbeSpec, template_id: str) -> Template:
    """The template, checked to fit the store: slots exactly ``x`` and ``y``, closed answers."""
    template = spec.template(template_id)
    if set(template.slots) != set(SLOTS):
        raise TemplateError(f"{spec.path}: template {shown(template_id)}: an annotated template needs the slots "
                            f"{list(SLOTS)} (the columns of the annotation store), has {list(template.slots)}")
    if not template.answers:
        raise TemplateError(f"{spec.path}: template {shown(template_id)}: an annotated template needs closed 'answers'")
    return template


def outcome_of(template: Template, answer: str) -> str | None:
    """The outcome key of an answer (an answer word or an outcome key, any case), or None."""
    answer = answer.strip().lower()
    for outcome, word in template.answers.items():
        if answer in (outcome.lower(), word.lower()):
            return outcome
    return None


def _pattern(template: Template) -> re.Pattern:
    """A regex matching the template's filled texts, one named group per slot."""
    parts, seen, pos = [], set(), 0
    for m in re.finditer(r"\[MASK\]|" + SLOT.pattern, template.text):
        parts.append(re.escape(template.text[pos:m.start()]))
        if m.group(0) == MASK:
            parts.append(re.escape(MASK))
        elif m.group(1) in seen:
            parts.append(f"(?P={m.group(1)})")
        else:
            seen.add(m.group(1))
            parts.append(rf"(?P<{m.group(1)}>\S(?:.*?\S)?)")
        pos = m.end()
    parts.append(re.escape(template.text[pos:]))
    return re.compile("".join(parts))


def _literal_length(template: Template) -> int:
    return len(SLOT.sub("", template.text))


class Matcher:
    """Parses a stem back into (template_id, slot values): the template whose text it fills; when several
    do, the most specific one (the most literal text: ``contains some {y}`` before ``contains {y}``)."""

    def __init__(self, spec: ProbeSpec, template_ids: Iterable[str] | None = None):
        ids = list(template_ids) if template_ids is not None else list(spec.templates)
        self.templates = [spec.template(t) for t in ids]
        self.patterns = [(t, _pattern(t), _literal_length(t)) for t in self.templates]

    def match(self, stem: str) -> tuple[Template, dict[str, str], bool] | None:
        """``(template, values, ambiguous)`` or None; ``ambiguous``: another template matched as specifically."""
        hits = [(length, t, m.groupdict()) for t, p, length in self.patterns if (m := p.fullmatch(stem))]
        if not hits:
            return None
        best = max(length for length, _, _ in hits)
        top = [(t, values) for length, t, values in hits if length == best]
        return top[0][0], top[0][1], len(top) > 1


# --- reading the store: CSV helpers, candidates, gold tables --------------------------------------------


def _read_csv(path: str | Path, required: Sequence[str]) -> Iterator[tuple[int, dict[str, str]]]:
    """``(line, row)`` of a CSV file with a header; cells stripped; a missing column names file and line 1."""
    try:
        f = open(path, newline="", encoding="utf-8-sig")
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    with f:
        reader = csv.DictReader(f)
        try:
            header = reader.fieldnames or []
        except UnicodeDecodeError as exc:
            raise DataError(f"{path}: not UTF-8 text ({exc.reason})") from None
        missing = [c for c in required if c not in header]
        if missing:
            raise DataError(f"{path}:1: missing column(s) {missing} (need {', '.join(required)}; "
                            f"found {', '.join(header) or 'no header'})")
        try:
            for row in reader:
                yield reader.line_num, {k: (v or "").strip() for k, v in row.items() if isinstance(k, str)}
        except (csv.Error, UnicodeDecodeError) as exc:
            raise DataError(f"{path}:{reader.line_num}: unreadable CSV: {exc}") from None


def _key_of(spec: ProbeSpec, row: Mapping[str, str], where: str) -> tuple[Template, Key]:
    tid = row["template_id"]
    if tid not in spec.templates:
        raise DataError(f"{where}: unknown template_id {shown(tid)} ({spec.path} has: {', '.join(spec.templates)})")
    try:
        template = annotated_template(spec, tid)
    except TemplateError as exc:
        raise DataError(f"{where}: {exc}") from None
    for slot in SLOTS:
        if not row[slot]:
            raise DataError(f"{where}: empty {shown(slot)}")
    return template, (tid, row["x"], row["y"])


def read_candidates(path: str | Path, spec: ProbeSpec) -> list[Key]:
    """Candidate statements ``(template_id, x, y)`` of a CSV with those columns (others are ignored)."""
    return [_key_of(spec, row, f"{path}:{line}")[1] for line, row in _read_csv(path, CANDIDATE_COLUMNS)]


def read_gold(path: str | Path, spec: ProbeSpec) -> list[Gold]:
    """A gold table (``GOLD_COLUMNS``), checked: every error names the file and line."""
    out, seen = [], {}
    for line, row in _read_csv(path, GOLD_COLUMNS):
        where = f"{path}:{line}"
        template, key = _key_of(spec, row, where)
        if key in seen:
            raise DataError(f"{where}: statement {key} already has a gold answer (at line {seen[key]})")
        seen[key] = line
        outcome = outcome_of(template, row["gold"])
        if outcome is None:
            raise DataError(f"{where}: gold {shown(row['gold'])} is not one of {', '.join(template.answers.values())}")
        try:
            n = int(row["n_workers"]) if row["n_workers"] else None
            agreement = float(row["agreement"]) if row["agreement"] else None
        except ValueError:
            raise DataError(f"{where}: n_workers must be an integer and agreement a number, got "
                            f"{shown(row['n_workers'])}, {shown(row['agreement'])}") from None
        if (n is not None and n < 1) or (agreement is not None and not 0 <= agreement <= 1):
            raise DataError(f"{where}: n_workers must be at least 1 and agreement within [0, 1]")
        out.append(Gold(*key, gold=outcome, n_workers=n, agreement=agreement, source=str(path), line=line))
    return out


# --- the release as an annotation source -------------------------------------------------------------


def apply_fixes(stem: str, fixes: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    """``stem`` with each whole word of ``fixes`` replaced, and the fixes that applied."""
    applied = {}
    for wrong, right in fixes.items():
        pattern = re.compile(rf"(?<![\w]){re.escape(wrong)}(?![\w])")
        if pattern.search(stem):
            stem = pattern.sub(right, stem)
            applied[wrong] = right
    return stem, applied


def release_gold_of(row: Mapping, matcher: Matcher, fixes: Mapping[str, str]) -> tuple[Gold | None, str, dict]:
    """One release row parsed: ``(gold or None, problem, details)``; details: the stem as fixed, whether
    its spaces were fixed, the word fixes applied, whether the match was ambiguous."""
    problem = example_problem(row)
    if problem:
        return None, f"malformed row: {problem}", {}
    raw = row["question"]["stem"]
    spaced = " ".join(raw.split())
    stem, applied = apply_fixes(spaced, fixes)
    details = {"stem": stem, "spaces_fixed": spaced != raw, "fixes": applied}
    hit = matcher.match(stem)
    if hit is None:
        return None, "matches no template", details
    template, values, details["ambiguous"] = hit
    word = next(c["text"] for c in row["question"]["choices"] if c["label"] == row["answerKey"])
    outcome = outcome_of(template, word)
    if outcome is None:
        return None, f"gold {shown(word)} is not an answer word of template {shown(template.id)}", details
    choices = sorted(c["text"].strip().lower() for c in row["question"]["choices"])
    if choices != sorted(w.lower() for w in template.answers.values()):
        return None, f"choices {choices} are not the answer words of template {shown(template.id)}", details
    return Gold(template.id, values["x"], values["y"], outcome, n_workers=1, kind="release",
                release_id=str(row["id"]), fixes=applied), "", details


# Per-split names of the release defects that parsing fixes or leaves out (``report["by_split"]``); the
# fidelity report adds them to the release's problems. Malformed rows and duplicate ids are not among them:
# the generic rules of the fidelity report count those already.
WORD_FIXED = "word fixed ({} -> {})"
SPACES_FIXED = "stray spaces fixed"
UNMATCHED = "matches no template (left out)"
AMBIGUOUS = "matches two templates equally (the first taken)"
NOT_ANSWERS = "gold or choices not the template's answer words (left out)"
DUPLICATE = "duplicate statement (extra row dropped)"
CONFLICTING = "statement with conflicting gold (row left out)"
ALSO_IN_DEV = "statement also in dev (train row dropped)"


def parse_release(files: Mapping[str, str | Path], spec: ProbeSpec, fixes: Mapping[str, str] | None = None,
                  template_ids: Iterable[str] | None = None) -> tuple[list[Gold], dict]:
    """The release files (``{split: jsonl}``) parsed back into gold statements, keeping each row's split,
    and a report counting every defect fixed and every row left out (nothing is dropped silently); see
    :func:`parse_release_rows`."""
    from probekit.data.jsonl import read_jsonl

    rows, lines = {}, {}
    for split in SPLITS:
        if split in files:
            rows[split], lines[split] = read_jsonl(files[split], with_lines=True)
    return parse_release_rows(rows, spec, fixes, template_ids,
                              sources={s: str(files[s]) for s in rows}, lines=lines)


def parse_release_rows(rows_by_split: Mapping[str, Sequence], spec: ProbeSpec,
                       fixes: Mapping[str, str] | None = None, template_ids: Iterable[str] | None = None,
                       sources: Mapping[str, str] | None = None,
                       lines: Mapping[str, Sequence[int]] | None = None) -> tuple[list[Gold], dict]:
    """Release rows (``{split: [row, ...]}``, read from ``sources[split]`` at ``lines[split]``; default: the
    split's name and the row's position) parsed back into gold statements, keeping each row's split, and a
    report counting every defect fixed and every row left out (nothing is dropped silently).

    Duplicate statements: an exact duplicate (same statement, same gold) keeps its first row; statements
    given different gold answers are all dropped (no gold is invented); a statement in both train and dev is
    kept in dev only (so dev stays unseen). Duplicate ids are counted (our ids are derived from content).
    ``report["by_split"]`` counts the same defects per split under readable names (``WORD_FIXED`` ...), each
    in the split of the row it concerns: what generation from this release fixes.
    """
    fixes = dict(fixes or {})
    sources, lines = dict(sources or {}), dict(lines or {})
    matcher = Matcher(spec, template_ids)
    report: dict = {"rows": {}, "spaces_fixed": 0, "word_fixes": Counter(), "matched": Counter(),
                    "ambiguous": 0, "unmatched": 0, "left_out": [], "duplicate_ids": 0,
                    "exact_duplicates": 0, "conflicting_statements": 0, "conflicting_rows": 0,
                    "in_train_and_dev": 0}
    by_split: dict[str, Counter] = {}
    ids: Counter = Counter()
    parsed: dict[Key, list[Gold]] = defaultdict(list)
    for split in SPLITS:
        if split not in rows_by_split:
            continue
        rows = rows_by_split[split]
        path = sources.get(split, split)
        numbers = lines.get(split) or range(1, len(rows) + 1)
        report["rows"][split] = len(rows)
        problems = by_split[split] = Counter()
        for row, line in zip(rows, numbers):
            gold, problem, details = release_gold_of(row, matcher, fixes)
            if isinstance(row, Mapping) and "id" in row:
                ids[row["id"]] += 1
            report["spaces_fixed"] += bool(details.get("spaces_fixed"))
            problems[SPACES_FIXED] += bool(details.get("spaces_fixed"))
            word_fixes = [(w, r) for w, r in details.get("fixes", {}).items()]
            report["word_fixes"].update(f"{w} -> {r}" for w, r in word_fixes)
            problems.update(WORD_FIXED.format(w, r) for w, r in word_fixes)
            if gold is None:
                report["unmatched"] += problem == "matches no template"
                problems[UNMATCHED] += problem == "matches no template"
                problems[NOT_ANSWERS] += problem.startswith(("gold ", "choices "))
                report["left_out"].append(f"{path}:{line}: {problem}: {shown(details.get('stem', ''))}")
                continue
            report["ambiguous"] += bool(details.get("ambiguous"))
            problems[AMBIGUOUS] += bool(details.get("ambiguous"))
            report["matched"][gold.template_id] += 1
            parsed[gold.key].append(replace(gold, source=str(path), line=line, split=split))
    report["duplicate_ids"] = sum(n - 1 for n in ids.values() if n > 1)
    kept = []
    for key, golds in parsed.items():
        if len({g.gold for g in golds}) > 1:
            report["conflicting_statements"] += 1
            report["conflicting_rows"] += len(golds)
            for g in golds:
                by_split[g.split][CONFLICTING] += 1
            report["left_out"] += [f"{g.source}:{g.line}: statement {key} also has gold "
                                   f"{sorted({h.gold for h in golds} - {g.gold})}" for g in golds]
            continue
        splits = {g.split for g in golds}
        if len(splits) > 1:
            report["in_train_and_dev"] += 1
        chosen = next(g for g in golds if g.split == ("dev" if "dev" in splits else golds[0].split))
        report["exact_duplicates"] += len(golds) - 1
        for g in golds:
            if g is not chosen:
                by_split[g.split][DUPLICATE if g.split == chosen.split else ALSO_IN_DEV] += 1
        kept.append(chosen)
    kept.sort(key=lambda g: (SPLITS.index(g.split), g.line))
    report["statements"] = len(kept)
    report["word_fixes"] = dict(sorted(report["word_fixes"].items()))
    report["matched"] = {t: report["matched"][t] for t in spec.templates if report["matched"][t]}
    report["by_split"] = {split: dict(sorted((+counts).items())) for split, counts in by_split.items()}
    return kept, report
