"""The oLMpics results behind the report: learning curves read from the evaluators' folders, their statistics with
bootstrap intervals over dev examples, paired tests between rows, and the medals.

Input: ``<root>/<model>/<probe>/<setting>/metrics.json`` from the learning-curve and MC-QA evaluators, with
``<variant>/predictions.jsonl`` beside it for ``original`` and each control."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import ValidationError

from evaluators.shared.bootstrap import accuracy_statistic, bootstrap, paired_bootstrap, weighted_means
from evaluators.olmpics.pairing import pair_rows
from evaluators.olmpics import constant
from evaluators.olmpics.metrics import curve_max, curve_sensitivity, curve_ws, max_summary, weighted_score
from evaluators.shared.params import Medals
from probekit.data import jsonl
from probekit.data.units import fact_unit
from probekit.errors import DataError, ParamsError

SETTINGS = ("MLP", "LINEAR", "MC-QA")
MAIN = {"MC-MLM": "MLP", "MC-QA": "MC-QA"}
CONTROLS = {"perturbed": "pert", "nolang": "nolang"}
REQUIRED = ("protocol", "setting", "model", "baseline", "lm_head", "probe", "n", "chance", "sizes", "seeds",
            "zero_shot", "curve", "controls")
NO_HEAD = "the checkpoint has no MLM head (newly initialised): its zero-shot column measures no knowledge"


def _field(obj, path: Path, dotted: str):
    """``obj[a][b]...`` for ``dotted = "a.b..."``; a DataError naming the file and the field when absent."""
    for key in dotted.split("."):
        if not isinstance(obj, dict) or key not in obj:
            raise DataError(f"{path}: missing field '{dotted}'")
        obj = obj[key]
    return obj


def _predictions(path: Path, sizes: list[int], seeds: list, control: bool):
    """``(ids, correct [seeds, sizes, n] bool, zero_shot list, source_ids, constant points, units)`` from one
    predictions.jsonl (:func:`evaluators.olmpics.constant.runs`). ``units``: each row's fact, the ``unit`` the
    evaluator wrote (:func:`probekit.data.units.fact_unit`; a file written before rows carried it: the same
    function on the prediction row, its id)."""
    if not path.is_file():
        raise DataError(f"{path}: predictions file missing")
    ids, correct, zero, sources, rows, units = [], [], [], [], [], []
    for line_no, line in jsonl.lines(path):
        try:
            row = jsonl.loads(line, f"{path}:{line_no}")
            rows.append(row)
            ids.append(str(row["id"]))
            units.append(str(row.get("unit") or fact_unit(row)))
            correct.append([row["correct"][str(n)] for n in sizes])
            zero.append(row.get("zero_shot"))
            if control:  # as the evaluators do: a control row without source_id keeps its original's id
                sources.append(str(row.get("source_id", row["id"])))
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}:{line_no}: not valid JSON: {exc}") from None
        except (KeyError, TypeError) as exc:
            raise DataError(f"{path}:{line_no}: missing field {exc}") from None
    try:
        array = np.asarray(correct, dtype=bool)
    except ValueError:
        array = None
    if array is None or array.shape != (len(ids), len(sizes), len(seeds)) or not ids:
        raise DataError(f"{path}: expected one bool per seed ({len(seeds)}) and size ({len(sizes)}) on each row")
    return ids, array.transpose(2, 1, 0), zero, sources, constant.runs(constant.read(rows, sizes, seeds, path),
                                                                        sizes, seeds), units


def _check(path: Path, meta: dict, prefix: str, correct: np.ndarray, sizes: list[int]) -> None:
    """The curve in metrics.json must be the one the predictions give (stale files are caught here)."""
    accuracy = correct.mean(axis=-1)
    for k, size in enumerate(sizes):
        for stat in ("mean", "std"):
            _field(meta, path, f"{prefix}curve.{size}.{stat}")
        per_seed = _field(meta, path, f"{prefix}curve.{size}.per_seed")
        if not np.allclose(accuracy[:, k], per_seed, atol=1e-3):
            raise DataError(f"{path}: {prefix}curve.{size}.per_seed {per_seed} disagrees with the predictions "
                            f"({np.round(accuracy[:, k], 4).tolist()})")


def _check_statistics(path: Path, meta: dict, correct: np.ndarray) -> None:
    """metrics.json's WS and MAX must be the statistics of the seed-averaged curve the predictions give: a file
    written when MAX was a mean of per-seed maxima (``MAX.mean``, no ``MAX.value``) is refused, named."""
    accuracy = correct.mean(axis=-1)
    expected = {"WS": curve_ws(accuracy), "MAX": curve_max(accuracy)}
    for stat, value in expected.items():
        if isinstance(meta.get(stat), dict) and "value" not in meta[stat] and "mean" in meta[stat]:
            raise DataError(f"{path}: {stat} has `mean` but no `value`: written by an older version, which "
                            f"averaged per-seed statistics; re-run the curve")
        written = _field(meta, path, f"{stat}.value")
        if not np.isclose(written, value, atol=1e-6):
            raise DataError(f"{path}: {stat}.value {written} disagrees with the predictions' seed-averaged curve "
                            f"({value:.6g})")


def align(ids_a: list[str], ids_b: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Positions pairing the k-th occurrence of an id in ``ids_a`` with its k-th occurrence in ``ids_b`` (the
    release has duplicate ids), in ``ids_a`` order; rows without a partner are dropped."""
    partner = pair_rows(ids_a, ids_b)
    return np.flatnonzero(partner >= 0), partner[partner >= 0]


@dataclass
class Result:
    """One model's learning curve on one probe in one setting: metrics.json and its predictions as arrays."""

    path: Path
    meta: dict
    ids: list[str]
    correct: np.ndarray  # [seeds, sizes, n] bool
    zero_shot: np.ndarray | None  # [n] bool; None without a zero-shot result
    controls: dict  # name -> (original positions, control correct [seeds, sizes, m]) aligned through source_id
    constant: dict  # variant (original, each control) -> its constant points (:func:`evaluators.olmpics.constant.runs`)
    control_zero: dict | None = None  # name -> (original positions, the control's zero-shot correct [m]), aligned
    facts: list[str] | None = None  # per original row, its fact (the predictions' ``unit``); None: its id

    @property
    def random_of(self) -> str | None:
        """The model id whose random-init baseline this row is (``random:<model>``), else None."""
        return (self.meta.get("random_init") or {}).get("of")

    def units(self, positions=None) -> list[str]:
        """The unit the bootstrap resamples, per original row (or per row of ``positions``): the fact
        (:func:`probekit.data.units.fact_unit`, ``facts``), which every template of it shares and a release file's
        repeated id names. Rows of one unit are drawn together, each original with its control rows (aligned to
        it through ``source_id``)."""
        units = self.ids if self.facts is None else self.facts
        return units if positions is None else [units[p] for p in positions]

    @property
    def label(self) -> str:
        return self.meta["baseline"] or self.meta["model"]

    @property
    def sizes(self) -> list[int]:
        return [int(s) for s in self.meta["sizes"]]


def load(path: Path, meta: dict) -> Result:
    """A :class:`Result` from a metrics.json and the predictions beside it; every field checked."""
    for key in REQUIRED:
        _field(meta, path, key)
    if meta["setting"] not in SETTINGS or meta["protocol"] not in MAIN:
        raise DataError(f"{path}: unknown protocol/setting {meta['protocol']!r}/{meta['setting']!r}")
    sizes, seeds = [int(s) for s in meta["sizes"]], meta["seeds"]
    ids, correct, zero, _, constant_points, facts = _predictions(path.parent / "original" / "predictions.jsonl",
                                                                sizes, seeds, False)
    if len(ids) != meta["n"]:
        raise DataError(f"{path}: n = {meta['n']} but {len(ids)} original predictions")
    _check(path, meta, "", correct, sizes)
    _check_statistics(path, meta, correct)
    zero_shot = None
    if meta["zero_shot"] is not None:
        _field(meta, path, "zero_shot.accuracy")
        if any(z is None for z in zero):
            raise DataError(f"{path}: zero_shot is set but some original predictions have zero_shot null")
        zero_shot = np.asarray(zero, bool)
    controls, constants, control_zero = {}, {"original": constant_points}, {}
    for name in sorted(meta["controls"]):
        if name not in CONTROLS:
            raise DataError(f"{path}: unknown control {name!r} (known: {', '.join(CONTROLS)})")
        _, c_correct, c_zero, sources, constants[name], _ = _predictions(path.parent / name / "predictions.jsonl",
                                                                         sizes, seeds, True)
        _check(path, meta, f"controls.{name}.", c_correct, sizes)
        mine, theirs = align(ids, sources)
        if not len(mine):
            raise DataError(f"{path}: no {name} row's source_id matches an original id")
        controls[name] = (mine, c_correct[..., theirs])
        if zero_shot is not None and None not in c_zero:   # the control's untrained-head point, where recorded
            control_zero[name] = (mine, np.asarray(c_zero, bool)[theirs])
    return Result(path, meta, ids, correct, zero_shot, controls, constants, control_zero, facts)


def curve_statistics(correct: np.ndarray) -> dict:
    """Vectorised WS and MAX of the seed-averaged curve of ``correct [seeds, sizes, n]`` on resampled examples
    (:mod:`evaluators.olmpics.metrics`, the definitions metrics.json is written with): one resample applies to
    every (size, seed) point, then seeds are averaged and the statistic recomputed."""
    return {"WS": lambda weights: curve_ws(weighted_means(correct, weights)),
            "MAX": lambda weights: curve_max(weighted_means(correct, weights))}


def sensitivity_statistic(full: np.ndarray, control: np.ndarray):
    """Vectorised language sensitivity of the seed-averaged curves of aligned ``[seeds, sizes, m]`` arrays."""
    return lambda weights: curve_sensitivity(weighted_means(full, weights), weighted_means(control, weights))


def _cell(ci: dict, n: int, std: float | None = None, **extra) -> dict:
    """A statistic's cell: ``value`` (the statistic on every example), its interval, and, for WS only, ``std``
    over seeds (of the per-seed WS, whose mean ``value`` is; None over one seed, where it is undefined; for MAX and
    sensitivity None: no per-seed value averages to them) and ``seeds``."""
    return {"value": ci["estimate"], "std": std, "low": ci["low"], "high": ci["high"], "n": n, **extra}


def _seed_std(values: np.ndarray) -> float | None:
    return float(np.std(values, ddof=1)) if len(values) > 1 else None


def cells(result: Result, *, resamples: int, seed: int) -> dict:
    """``{WS, MAX, <control>...}`` cells (the statistic of the seed-averaged curve and its bootstrap interval;
    WS with its std over seeds, MAX with ``at_n``) and ``zero_shot``. A control's cell (the language sensitivity)
    also holds ``control_WS`` and ``control_MAX``, the control curve's own WS and MAX and their intervals on the same
    examples (``{estimate, low, high}``; what ``probes run`` prints beside the original's), and ``below_chance``:
    that interval lies entirely below chance, so max(0, acc − control) counts the control's failure, not the
    model's use of language, as sensitivity (a random head's NO-LANG at 41% of a 50% task)."""
    accuracy, n, units = result.correct.mean(axis=-1), len(result.ids), result.units()
    stats = curve_statistics(result.correct)
    out = {"WS": _cell(bootstrap(stats["WS"], n, resamples=resamples, seed=seed, units=units), n,
                       _seed_std(weighted_score(accuracy)), seeds=len(result.meta["seeds"])),
           "MAX": _cell(bootstrap(stats["MAX"], n, resamples=resamples, seed=seed, units=units), n,
                        at_n=max_summary(accuracy, result.sizes)["at_n"])}
    for name, (positions, control) in result.controls.items():
        ci = bootstrap(sensitivity_statistic(result.correct[..., positions], control), len(positions),
                       resamples=resamples, seed=seed, units=result.units(positions))
        own = {key: bootstrap(statistic, len(positions), resamples=resamples, seed=seed,
                              units=result.units(positions))
               for key, statistic in curve_statistics(control).items()}
        out[name] = _cell(ci, len(positions), control_WS=own["WS"], control_MAX=own["MAX"],
                          below_chance=bool(own["WS"]["high"] < result.meta["chance"]))
    if result.zero_shot is not None:
        ci = bootstrap(accuracy_statistic(result.zero_shot), n, resamples=resamples, seed=seed, units=units)
        out["zero_shot"] = {"mean": ci["estimate"], "low": ci["low"], "high": ci["high"], "n": n,
                            "above_chance": bool(ci["low"] > result.meta["chance"]
                                                 and result.meta["lm_head"] == "pretrained"),
                            "vs_control": {name: {**paired_bootstrap(
                                accuracy_statistic(result.zero_shot[positions]), accuracy_statistic(control),
                                len(positions), resamples=resamples, seed=seed, units=result.units(positions)),
                                "n": len(positions)}
                                for name, (positions, control) in (result.control_zero or {}).items()}}
    return out


def paired_zero_shot(a: Result, b: Result, *, resamples: int, seed: int) -> dict | None:
    """Paired bootstrap of the zero-shot accuracy, A − B, over the dev examples both were scored on."""
    if a.zero_shot is None or b.zero_shot is None:
        return None
    pa, pb = align(a.ids, b.ids)
    if not len(pa):
        return None
    test = paired_bootstrap(accuracy_statistic(a.zero_shot[pa]), accuracy_statistic(b.zero_shot[pb]), len(pa),
                            resamples=resamples, seed=seed, units=a.units(pa))
    return {**test, "n": len(pa)}


def paired(a: Result, b: Result, key: str, *, resamples: int, seed: int) -> dict | None:
    """Paired bootstrap of ``key`` (WS or MAX), A − B, over the dev examples both were scored on."""
    pa, pb = align(a.ids, b.ids)
    if not len(pa):
        return None
    test = paired_bootstrap(curve_statistics(a.correct[..., pa])[key],
                            curve_statistics(b.correct[..., pb])[key], len(pa),
                            resamples=resamples, seed=seed, units=a.units(pa))
    return {**test, "n": len(pa)}


def medal(test: dict | None, zero: dict | None, protocol: str, rule: dict) -> str:
    """``✓``, ``✓–``, ``""`` or ``n/a`` (no baseline) by the rule documented in the report's legend."""
    if test is None:
        return "n/a"

    def beats(margin: float) -> bool:
        return test["low"] > 0 and test["diff"] >= margin - 1e-9

    zero_ok = protocol == "MC-MLM" and zero is not None and zero["above_chance"]
    if beats(rule["success"]) and (zero_ok or protocol == "MC-QA"):
        return "✓"
    return "✓–" if beats(rule["partial"]) or zero_ok else ""


def medal_rule(medals: dict | None = None) -> dict:
    """The medal thresholds: ``medals`` over the defaults of :class:`evaluators.shared.params.Medals`, checked there."""
    try:
        return Medals.model_validate(medals or {}).model_dump()
    except ValidationError:
        raise ParamsError(f"medals: expected {{success, partial}} with 0 <= partial <= success, got {medals}") \
            from None


@dataclass
class Probe:
    """One probe under one protocol: its results by row label and setting, and everything computed on them."""

    title: str
    protocol: str
    results: dict  # label -> setting -> Result
    cells: dict  # label -> setting -> cells()
    vs_baseline: dict  # (label, setting, key) -> paired test against the setting's baseline row
    pairs: list  # (A, B, paired test) on the main setting's WS
    medals: dict  # model label -> medal
    random_rows: dict | None = None   # model label -> the label of its random-init baseline row
    vs_random: dict | None = None     # (label, "zero_shot" or "WS") -> paired test against its random-init row
    data: str = "generated"   # what its curves trained and were evaluated on: generated probes, or the release's
    # own files (metrics.json `curve_data`, evaluators/olmpics/release_curves.py): a probe section of its own each

    def is_baseline(self, label: str) -> bool:
        return bool(next(iter(self.results[label].values())).meta["baseline"])

    @property
    def rows(self) -> list[str]:
        """Models, then baselines, each sorted."""
        return sorted(self.results, key=lambda label: (self.is_baseline(label), label))

    def zero_shot(self, label: str) -> dict | None:
        """The row's zero-shot cell (the first setting, in :data:`SETTINGS` order, that has one)."""
        return next((self.cells[label][s]["zero_shot"] for s in SETTINGS
                     if "zero_shot" in self.cells[label].get(s, {})), None)

    def settings(self) -> list[str]:
        """The settings any row has, in :data:`SETTINGS` order."""
        return [s for s in SETTINGS if any(s in by_setting for by_setting in self.results.values())]


def _group(results: list[Result]) -> dict:
    """``{(probe, protocol, data): {label: {setting: Result}}}`` (``data``: ``generated``, or ``release`` for a curve
    on the release's own files); two results for one cell are an error."""
    groups: dict = defaultdict(lambda: defaultdict(dict))
    for r in results:
        cell = groups[r.meta["probe"], r.meta["protocol"], r.meta.get("curve_data", "generated")][r.label]
        if r.meta["setting"] in cell:
            raise DataError(f"{r.path}: a second {r.meta['setting']} result for {r.label} on {r.meta['probe']} "
                            f"(first: {cell[r.meta['setting']].path})")
        cell[r.meta["setting"]] = r
    return groups


def random_rows(by_label: dict) -> dict:
    """``{label: the label of its random-init baseline row}``: the row whose ``random_init.of`` is the label's
    ``model_id`` (``random:<model>``, :mod:`probekit.tokens.refs`)."""
    ids = {label: next(iter(by_setting.values())).meta.get("model_id") for label, by_setting in by_label.items()}
    found = {}
    for other, by_setting in sorted(by_label.items()):
        of = next(iter(by_setting.values())).random_of
        for label, model_id in ids.items():
            if of and model_id == of and label != other:
                found.setdefault(label, other)
    return found


def analyse(results: list[Result], *, resamples: int = 1000, seed: int = 0,
            medals: dict | None = None) -> list[Probe]:
    """Group results by probe and protocol (sorted), and compute cells, paired tests and medals."""
    rule, groups = medal_rule(medals), _group(results)
    protocols = defaultdict(set)
    for probe, protocol, _ in groups:
        protocols[probe].add(protocol)
    probes = []
    for (name, protocol, data), by_label in sorted(groups.items()):
        parts = ([protocol] if len(protocols[name]) > 1 else []) + (["on the release files"] if data != "generated"
                                                                    else [])
        title = f"{name} ({', '.join(parts)})" if parts else name
        computed = {label: {s: cells(r, resamples=resamples, seed=seed) for s, r in by_setting.items()}
                    for label, by_setting in by_label.items()}
        probe = Probe(title, protocol, dict(by_label), computed, {}, [], {}, data=data)
        models = [label for label in probe.rows if not probe.is_baseline(label)]
        for setting in probe.settings():
            baselines = sorted((computed[label][setting]["WS"]["value"], label) for label in probe.rows
                               if probe.is_baseline(label) and setting in by_label[label])
            if not baselines:
                continue
            best = by_label[baselines[-1][1]][setting]
            for label in models:
                if setting in by_label[label]:
                    for key in ("WS", "MAX"):
                        probe.vs_baseline[label, setting, key] = paired(by_label[label][setting], best, key,
                                                                        resamples=resamples, seed=seed)
        main = MAIN[protocol]
        with_main = [label for label in probe.rows if main in by_label[label]]
        probe.pairs = [(a, b, paired(by_label[a][main], by_label[b][main], "WS", resamples=resamples, seed=seed))
                       for i, a in enumerate(with_main) for b in with_main[i + 1:]]
        for label in models:
            if main in by_label[label]:
                probe.medals[label] = medal(probe.vs_baseline.get((label, main, "WS")), probe.zero_shot(label),
                                            protocol, rule)
        probe.random_rows, probe.vs_random = random_rows(by_label), {}
        for label, other in probe.random_rows.items():
            first = next(s for s in SETTINGS if s in by_label[label])
            if first in by_label[other]:
                probe.vs_random[label, "zero_shot"] = paired_zero_shot(by_label[label][first], by_label[other][first],
                                                                       resamples=resamples, seed=seed)
            if main in by_label[label] and main in by_label[other]:
                probe.vs_random[label, "WS"] = paired(by_label[label][main], by_label[other][main], "WS",
                                                      resamples=resamples, seed=seed)
        probes.append(probe)
    return probes
