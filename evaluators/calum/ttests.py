"""CALUM §5.1.1's t-tests (papers/004, lines 142-144), per model, on its single-task runs, beside the paper's claims:

- REVERSE, NLI vs STS: "For each model, we performed a t-test on the results according to the task type, i.e. NLI
  and STS. For the REVERSE case, the consistency of STS tasks outperformed that of NLI tasks under a significance
  level of 0.01."
- SIGNAL, NLI vs STS: "For the SIGNAL case, however, the difference of consistency between NLI and STS tasks was
  marginal."
- SIGNAL, RTE and MRPC vs the others: "The consistency performance of the RTE and MRPC tasks is worse than the
  others, and the difference was statistically significant with a significance level of 0.01."

The paper names neither the sample nor the test, and the original code (DSincerity/CALM) has no t-test. Ours: one
observation per (task, seed) run, its C_R (REVERSE) or C_S (SIGNAL) as recorded in ``per_seed``: the group's tasks'
seeds pooled (five seeds of MNLI, QNLI and RTE against five of QQP and MRPC: 15 against 10; a model's Korean tasks apart from its English ones), Welch's two-sided t-test
(unequal variances; ``scipy.stats.ttest_ind(equal_var=False)``), df by Welch-Satterthwaite. A task's type:
NLI (MNLI, QNLI, RTE, KorNLI, KLUE-NLI) or STS (QQP, MRPC, KLUE-STS: the paper's "STS" for its paraphrase tasks).
A test needs two observations per side; with fewer, or with no variance on either side, t and p are undefined
(``—``). A verdict says whether our result agrees with the claim at the paper's level, 0.01."""

from __future__ import annotations

import math
from typing import Mapping, NamedTuple

from evaluators.calum.results import KOREAN, Row, is_single, row_label, row_order
from evaluators.calum.tables import task_name

ALPHA = 0.01
NLI = ("mnli", "qnli", "rte", "kornli", "klue_nli")
STS = ("qqp", "mrpc", "klue_sts")
SMALL = ("rte", "mrpc")
UNDEFINED = "—"


class Test(NamedTuple):
    """One of the paper's tests: its case (the statistic), the two groups of tasks (``None``: every other task of
    the row) and the paper's claim (``expect``): group B's consistency above A's at ``ALPHA``, or no significant
    difference (``none``)."""
    case: str
    stat: str
    label: str
    a: tuple[str, ...]
    b: tuple[str, ...] | None
    claim: str
    expect: str


TESTS = (
    Test("REVERSE", "C_R", "NLI vs STS", NLI, STS, "STS > NLI (p < 0.01)", "b_greater"),
    Test("SIGNAL", "C_S", "NLI vs STS", NLI, STS, "marginal difference", "none"),
    Test("SIGNAL", "C_S", "RTE, MRPC vs the others", SMALL, None, "RTE, MRPC < the others (p < 0.01)", "a_less"),
)


def welch(a: list[float], b: list[float]) -> dict:
    """Welch's two-sided t-test of ``a`` against ``b``: ``{n_a, n_b, mean_a, mean_b, t, df, p}``; ``t``, ``df``
    and ``p`` are None with fewer than two values a side or no variance on either (t undefined)."""
    out = {"n_a": len(a), "n_b": len(b), "mean_a": sum(a) / len(a) if a else None,
           "mean_b": sum(b) / len(b) if b else None, "t": None, "df": None, "p": None}
    if len(a) < 2 or len(b) < 2:
        return out
    va = sum((x - out["mean_a"]) ** 2 for x in a) / (len(a) - 1) / len(a)
    vb = sum((x - out["mean_b"]) ** 2 for x in b) / (len(b) - 1) / len(b)
    if va + vb == 0:
        return out
    from scipy.stats import ttest_ind

    result = ttest_ind(a, b, equal_var=False)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    return out | {"t": float(result.statistic), "df": df, "p": float(result.pvalue)}


def verdict(test: Test, r: Mapping) -> str:
    """Whether ``r`` agrees with the paper's claim at ``ALPHA``: ``agrees``, ``differs`` or ``—`` (no test)."""
    if r["p"] is None:
        return UNDEFINED
    significant = r["p"] < ALPHA
    if test.expect == "none":
        return "agrees" if not significant else "differs"
    return "agrees" if significant and r["mean_b"] > r["mean_a"] else "differs"   # both claims: B above A


def _values(runs: Mapping[str, Mapping], tasks, stat: str) -> list[float]:
    return [v for t in tasks if t in runs for v in (runs[t].get(stat) or {}).get("per_seed") or []
            if isinstance(v, (int, float))]


def ttests(cells: Mapping[tuple[Row, str, str], tuple[str, Mapping]], published: Mapping) -> list[dict]:
    """Each model row's tests (single-task runs; :func:`evaluators.calum.results.index`'s cells), a test only where
    both of its groups have a run: ``{row, case, stat, test, a, b, claim, verdict, n_a, ... p}``."""
    rows: dict[tuple[Row, bool], dict[str, Mapping]] = {}
    for (row, setting, task), (_, m) in cells.items():
        if is_single(setting):   # a model's English and Korean tasks apart (Tables 2 and 5)
            rows.setdefault((row, task in KOREAN), {})[task] = m
    out = []
    for row, korean in sorted(rows, key=lambda k: (row_order({r for r, _ in rows}, published).index(k[0]), k[1])):
        runs = rows[(row, korean)]
        for test in TESTS:
            a = [t for t in test.a if t in runs]
            b = [t for t in (test.b or [t for t in runs if t not in test.a]) if t in runs]
            if not a or not b:
                continue
            r = welch(_values(runs, a, test.stat), _values(runs, b, test.stat))
            out.append({"row": row_label(row) + (" (Korean)" if korean else ""), "model_id": row.model_id, "case": test.case, "stat": test.stat,
                        "test": test.label, "a": a, "b": b, "claim": test.claim, **r, "verdict": verdict(test, r)})
    return out


def _num(value, fmt: str) -> str:
    return UNDEFINED if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, fmt)


def section(results: list[dict]) -> list[str]:
    """The report's markdown section for :func:`ttests`'s results (none: no lines)."""
    if not results:
        return []
    lines = ["## Task types: t-tests (§5.1.1)", "",
             "Welch's two-sided t-test per model on its single-task runs: one observation per (task, seed), the "
             "case's consistency (REVERSE: C_R, SIGNAL: C_S), the group's tasks pooled; df by Welch-Satterthwaite. "
             "The paper names neither its sample nor its test (docs/limits.md). **Paper** quotes its claim; "
             f"**ours** says whether our result agrees with it at its level, {ALPHA}; — : fewer than two "
             "observations a side, or no variance.", "",
             "| model | case | test | group A (n) | group B (n) | mean A | mean B | t | df | p | paper | ours |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in results:
        names = [", ".join(map(task_name, r[k])) + f" ({r['n_' + k]})" for k in ("a", "b")]
        lines.append(f"| {r['row']} | {r['case']} ({r['stat']}) | {r['test']} | {names[0]} | {names[1]} | "
                     f"{_num(r['mean_a'] and 100 * r['mean_a'], '.1f')} | "
                     f"{_num(r['mean_b'] and 100 * r['mean_b'], '.1f')} | {_num(r['t'], '.2f')} | "
                     f"{_num(r['df'], '.1f')} | {_num(r['p'], '.2g')} | {r['claim']} | {r['verdict']} |")
    return lines + [""]
