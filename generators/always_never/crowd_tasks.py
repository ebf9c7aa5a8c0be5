"""Crowd tasks: statements out to crowdworkers, their answers back in as majority gold (the annotation store).

The **answers** format of the store (``ANSWER_COLUMNS``): one row per (statement, worker): ``template_id, x, y,
statement, worker, answer``. :func:`export` writes the statements to annotate in this format with ``worker`` and
``answer`` empty; each worker fills a copy (an empty ``worker`` cell means the file's name, so one file per worker
needs no ids), or a crowd platform's results are converted to it. :func:`import_answers` turns the answer files
into gold, which :func:`write_gold` writes as a gold table (the format: :mod:`generators.always_never.annotations`).

**Majority rule**: the gold of a statement is the answer given by strictly more workers than any other. A
*tie* (e.g. three workers, three answers) gives no gold: the statement is dropped, counted, and stays
unannotated, so the next export lists it again for more answers. Blank answers are skipped and counted; a
worker answering the same statement twice, an unknown template or answer word, a missing column, or a
statement that no longer reads as its template does (the template was edited after the export) is a
``DataError`` naming file and line. Overall agreement: the mean per-statement agreement over the statements
with at least two workers, and Fleiss' kappa over the same statements (the form for a varying number of
raters per item).
"""

from __future__ import annotations

import csv
import io
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from probekit.outputs import atomic
from probekit.errors import DataError, shown
from generators.always_never.annotations import GOLD_COLUMNS, Gold, Key, _key_of, _read_csv, annotated_template, outcome_of
from probekit.probes.templates import MASK, ProbeSpec, Template

ANSWER_COLUMNS = ("template_id", "x", "y", "statement", "worker", "answer")


# --- export ---------------------------------------------------------------------------------------------


def statement(template: Template, x: str, y: str) -> str:
    """What a crowdworker reads: the template filled, the mask removed (``A chicken has a horn.``)."""
    text = template.fill({"x": x, "y": y}).replace(MASK, " ")
    text = " ".join(text.split())
    return re.sub(r" ([.,?!])", r"\1", text)


def _write_csv(path: str | Path, columns: Sequence[str], rows: Iterable[Sequence]) -> None:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(rows)
    atomic.write_text(path, buf.getvalue())


def export(spec: ProbeSpec, candidates: Iterable[Key], out_csv: str | Path,
           annotated: Iterable[Key] = ()) -> dict:
    """Write the statements of ``candidates`` to annotate, one row each with empty worker and answer, in the
    order given; candidates already ``annotated`` and repeated ones are left out and counted."""
    annotated, seen = set(annotated), set()
    rows, skipped, repeated = [], 0, 0
    by_template: Counter = Counter()
    for key in candidates:
        tid, x, y = key
        template = annotated_template(spec, tid)
        if key in seen:
            repeated += 1
            continue
        seen.add(key)
        if key in annotated:
            skipped += 1
            continue
        rows.append((tid, x, y, statement(template, x, y), "", ""))
        by_template[tid] += 1
    _write_csv(out_csv, ANSWER_COLUMNS, rows)
    return {"written": len(rows), "by_template": dict(by_template), "already_annotated": skipped,
            "repeated": repeated}


# --- import ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    key: Key
    worker: str
    answer: str  # outcome key
    where: str  # file:line


@dataclass
class Aggregated:
    """The gold of :func:`import_answers` and what it cost: ties, thin statements, agreement."""

    gold: list[Gold]
    ties: list[Key]
    too_few: list[Key]  # fewer than ``min_workers`` answers
    stats: dict


def read_answers(paths: Sequence[str | Path], spec: ProbeSpec) -> tuple[list[Answer], dict]:
    """Every non-blank answer of the files (``ANSWER_COLUMNS``), checked; and counts of what was skipped."""
    answers, first = [], {}
    blank = 0
    for path in paths:
        for line, row in _read_csv(path, ANSWER_COLUMNS):
            where = f"{path}:{line}"
            template, key = _key_of(spec, row, where)
            expected = statement(template, key[1], key[2])
            if row["statement"] and row["statement"] != expected:
                raise DataError(f"{where}: statement {shown(row['statement'])} is not what template "
                                f"{shown(key[0])} says now ({shown(expected)}): was the template edited after the "
                                f"export?")
            if not row["answer"]:
                blank += 1
                continue
            outcome = outcome_of(template, row["answer"])
            if outcome is None:
                raise DataError(f"{where}: answer {shown(row['answer'])} is not one of "
                                f"{', '.join(template.answers.values())}")
            worker = row["worker"] or Path(path).stem
            if (key, worker) in first:
                raise DataError(f"{where}: worker {shown(worker)} already answered this statement "
                                f"(at {first[key, worker]})")
            first[key, worker] = where
            answers.append(Answer(key, worker, outcome, where))
    return answers, {"files": len(paths), "answers": len(answers), "blank": blank}


def fleiss_kappa(items: Sequence[Mapping[str, int]]) -> float | None:
    """Fleiss' kappa of ``items`` (category -> number of raters), each with at least two raters; the
    number of raters may vary per item (observed agreement averaged per item). None when undefined."""
    items = [c for c in items if sum(c.values()) >= 2]
    if not items:
        return None
    totals: Counter = Counter()
    for c in items:
        totals.update(c)
    n_all = sum(totals.values())
    p_e = sum((v / n_all) ** 2 for v in totals.values())
    p_o = sum((sum(v * v for v in c.values()) - sum(c.values())) / (sum(c.values()) * (sum(c.values()) - 1))
              for c in items) / len(items)
    if p_e >= 1:
        return None
    return (p_o - p_e) / (1 - p_e)


def aggregate(answers: Sequence[Answer], min_workers: int = 1) -> Aggregated:
    """Majority gold per statement (see the module docstring: ties give no gold), with agreement."""
    votes: dict[Key, Counter] = defaultdict(Counter)
    for a in answers:
        votes[a.key][a.answer] += 1
    gold, ties, too_few, shares = [], [], [], []
    for key, counts in votes.items():
        n = sum(counts.values())
        if n < min_workers:
            too_few.append(key)
            continue
        (top, k), *rest = counts.most_common()
        if rest and rest[0][1] == k:
            ties.append(key)
            continue
        share = k / n
        if n >= 2:
            shares.append(share)
        gold.append(Gold(*key, gold=top, n_workers=n, agreement=round(share, 4)))
    kappa = fleiss_kappa([c for k, c in votes.items() if k not in set(too_few)])
    workers = {a.worker for a in answers}
    stats = {"statements": len(votes), "gold": len(gold), "ties": len(ties), "too_few_workers": len(too_few),
             "workers": len(workers),
             "mean_agreement": round(sum(shares) / len(shares), 4) if shares else None,
             "statements_with_2_or_more_workers": len(shares) + len(ties),
             "fleiss_kappa": round(kappa, 4) if kappa is not None else None,
             "gold_distribution": dict(sorted(Counter(g.gold for g in gold).items()))}
    gold.sort(key=lambda g: g.key)
    return Aggregated(gold, sorted(ties), sorted(too_few), stats)


def import_answers(csv_paths: Sequence[str | Path], spec: ProbeSpec, min_workers: int = 1) -> Aggregated:
    """Read and aggregate the answer files into a gold table (see :func:`aggregate`)."""
    answers, counts = read_answers(csv_paths, spec)
    result = aggregate(answers, min_workers)
    result.stats = {**counts, **result.stats}
    return result


def write_gold(gold: Iterable[Gold], out_csv: str | Path) -> None:
    """The gold table (``GOLD_COLUMNS``)."""
    _write_csv(out_csv, GOLD_COLUMNS,
               ((g.template_id, g.x, g.y, g.gold, "" if g.n_workers is None else g.n_workers,
                 "" if g.agreement is None else g.agreement) for g in gold))
