"""oLMpics' part of ``probes run``'s table: each statistic of a probe's original examples beside the same statistic
on its NO-LANG and PERTURBED controls, so that a score a model earns without reading the template shows at a
glance (Talmor et al. 2020, §3: "If the learning curve of a model does not change when the input is perturbed or
even mostly deleted, then the model shows low language sensitivity"). Read from the reports' JSON (``results/metrics.json`` for zero-shot, ``results/olmpics.json`` for the
learning curves); nothing is recomputed.

One row per probe and statistic: the zero-shot accuracy (the checkpoint's MLM head, per variant), and per training
setting the curve's WS (what the medals compare), its MAX, and the language sensitivity to each control. Each cell
is ``value [95% CI]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from evaluators.shared import smoke
from evaluators.shared.bootstrap import MAX_INTERVAL

VARIANTS = {"original": "original", "nolang": "NO-LANG", "perturbed": "PERTURBED"}
"""The variants side by side, in the papers' names, and their keys in the reports' JSON."""
CONTROLS = ("nolang", "perturbed")
BASELINES = ("MLM-BASELINE", "ESIM")   # the oLMpics baseline rows' labels (results written before `baseline`)
SETTINGS = ("MLP", "LINEAR", "MC-QA")
MAIN = {"MLP", "MC-QA"}   # the setting the medals use (MLP WS for MC-MLM, MC-QA WS for MC-QA)
MEDALS = {"success": "✓", "partial": "✓–"}
NEW_HEAD = "† new MLM head"
CONSTANT = "⚠"
BELOW = "↓"
FLOORED = "¹"
"""The mark of an interval whose lower bound is the value itself (a maximum's: :data:`MAX_NOTE`)."""
COLUMNS = ("probe", "setting", "statistic", *VARIANTS.values(), "dev examples", "N of MAX", "reference", "notes")
MAX_NOTE = f"{FLOORED} {MAX_INTERVAL}"


@dataclass(frozen=True)
class Cell:
    value: float
    low: float | None = None
    high: float | None = None
    std: float | None = None
    marks: tuple[str, ...] = ()

    def text(self) -> str:
        spread = f" ± {self.std:.3f}" if self.std is not None else ""
        interval = f" [{self.low:.3f}, {self.high:.3f}]" if self.low is not None and self.high is not None else ""
        return f"{self.value:.3f}{spread}{interval}" + "".join(f" {m}" for m in self.marks)


@dataclass(frozen=True)
class ControlRow:
    probe: str
    setting: str
    statistic: str
    cells: dict = field(default_factory=dict)   # variant key (VARIANTS) -> Cell
    examples: int | None = None
    at_n: int | None = None
    reference: str = ""
    notes: tuple[str, ...] = ()
    smoke: bool = False


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _floored(value: float, low) -> tuple[str, ...]:
    return (FLOORED,) if _number(low) and round(low, 3) >= round(value, 3) else ()


RANDOM_INIT = "zero-shot, random init"
"""The setting of a model's random-init baseline row (``random:<model>``, the ``zeroshot_random`` stage)."""


def random_init_rows(metrics: dict) -> list[ControlRow]:
    """The zero-shot rows of a model's random-init baseline (``metrics.json``'s entry ``random:<model>``: its
    architecture and tokenizer with fresh weights), with the same controls and intervals, setting
    :data:`RANDOM_INIT`; its note says what it is, not :data:`NEW_HEAD` (every weight is new, not the head only)."""
    rows = []
    for row in zero_shot_rows(metrics):
        if row.setting != "zero-shot":
            continue
        init = next((m.get("random_init") for m in metrics[row.probe].values()
                     if isinstance(m, dict) and isinstance(m.get("random_init"), dict)), None) or {}
        what = f"random init of {init['of']} (seed {init.get('seed')})" if init.get("of") else "random init"
        rows.append(replace(row, setting=RANDOM_INIT, notes=(what, *(n for n in row.notes if n != NEW_HEAD))))
    return rows


def zero_shot_rows(metrics: dict) -> list[ControlRow]:
    """The zero-shot accuracy per probe (``metrics.json``'s entry for the model): original, NO-LANG and PERTURBED
    side by side, and the released file's original examples in a row of their own (it has no controls)."""
    rows = []
    for probe, variants in sorted(metrics.items()):
        if not isinstance(variants, dict):
            continue
        for setting, names in (("zero-shot", {v: v for v in VARIANTS}),
                               ("zero-shot, release file", {"release": "original"})):   # metrics key -> column
            found = {v: m for v in names if isinstance(m := variants.get(v), dict) and _number(m.get("accuracy"))}
            if not found:
                continue
            cells = {names[v]: Cell(m["accuracy"], m.get("accuracy_low"), m.get("accuracy_high"),
                                    marks=(CONSTANT,) if m.get("constant_predictor") else ())
                     for v, m in found.items()}
            first = next(iter(found.values()))
            chance = f"chance {first['chance']:.3f}" if _number(first.get("chance")) else ""
            constant = "; ".join(f"{VARIANTS[names[v]]} {m['constant_predictor']}" for v, m in found.items()
                                 if m.get("constant_predictor"))
            notes = (NEW_HEAD,) if any(m.get("zero_shot") is False for m in found.values()) else ()
            notes += (f"{CONSTANT} constant predictor ({constant})",) if constant else ()
            rows.append(ControlRow(probe, setting, "accuracy", cells, first.get("n"), reference=chance,
                                   notes=notes, smoke=any(smoke.is_smoke(m) for m in found.values())))
    return rows


def _baseline(models: dict, setting: str, label: str) -> tuple[str, dict] | None:
    """The probe's baseline row in ``setting`` (MLM-BASELINE, ESIM), for a model's row ``label``."""
    for name, entry in sorted(models.items()):
        if name == label or not isinstance(entry, dict):
            continue
        if entry.get("baseline", name in BASELINES) and isinstance(entry.get(setting), dict) \
                and "MAX" in entry[setting]:
            return name, entry[setting]
    return None


def _constant_runs(m: dict) -> dict[str, int]:
    """The number of (N, seed) runs of each variant's curve that answered one choice throughout."""
    found = m.get("constant_predictor") or {}
    return {v: len(found[v].get("runs") or ()) for v in VARIANTS if isinstance(found.get(v), dict)
            and found[v].get("runs")}


def _curve_cells(m: dict, key: str, runs: dict[str, int]) -> dict[str, Cell]:
    """WS or MAX of the original and of each control's curve (on the original examples that have a control row)."""
    mark = lambda v: (CONSTANT,) if runs.get(v) else ()   # noqa: E731
    cells = {"original": Cell(m[key], m.get(f"{key}_low"), m.get(f"{key}_high"),
                              m.get(f"{key}_std") if key == "WS" else None,
                              mark("original") + (_floored(m[key], m.get(f"{key}_low")) if key == "MAX" else ()))}
    for c in CONTROLS:
        value = m.get(f"{c}_control_{key}")
        if _number(value):
            low = m.get(f"{c}_control_{key}_low")
            below = (BELOW,) if key == "WS" and m.get(f"{c}_below_chance") else ()
            cells[c] = Cell(value, low, m.get(f"{c}_control_{key}_high"),
                            marks=mark(c) + below + (_floored(value, low) if key == "MAX" else ()))
    return cells


def _sensitivity_cells(m: dict) -> dict[str, Cell]:
    return {c: Cell(m[c], m.get(f"{c}_low"), m.get(f"{c}_high"),
                    marks=((BELOW,) if m.get(f"{c}_below_chance") else ()) + _floored(m[c], m.get(f"{c}_low")))
            for c in CONTROLS if _number(m.get(c))}


def curve_rows(olmpics: dict, key: str) -> list[ControlRow]:
    """Per probe and setting of the model (``olmpics.json``): WS, MAX and the language sensitivities, the original
    beside each control, with chance and the probe's baseline row in the same setting as the line to beat."""
    rows = []
    for probe, models in sorted(olmpics.items()):
        entry = models.get(key) if isinstance(models, dict) else None
        if not isinstance(entry, dict):
            continue
        settings = sorted((s for s, m in entry.items() if isinstance(m, dict) and _number(m.get("MAX"))),
                          key=lambda s: (SETTINGS.index(s) if s in SETTINGS else len(SETTINGS), s))
        for setting in settings:
            m, base = entry[setting], _baseline(models, setting, key)
            chance = f"chance {m['chance']:.3f}" if _number(m.get("chance")) else ""
            runs = _constant_runs(m)
            constant = f"{CONSTANT} constant predictor in " + ", ".join(
                f"{VARIANTS[v]} {n} of {m['constant_predictor'][v].get('of', '?')} runs" for v, n in runs.items()) \
                if runs else ""
            medal = entry.get("medal") if setting in MAIN else None
            medal = f"medal {MEDALS[medal]}" if medal in MEDALS else "no medal" if medal == "none" else ""
            common = dict(examples=m.get("n"), smoke=entry.get("profile") == smoke.SMOKE)
            for stat in (s for s in ("WS", "MAX") if _number(m.get(s))):
                line = [chance] + ([f"{base[0]} {base[1][stat]:.3f}"] if base and _number(base[1].get(stat)) else [])
                rows.append(ControlRow(probe, setting, stat, _curve_cells(m, stat, runs),
                                       at_n=m.get("MAX_at_n") if stat == "MAX" else None,
                                       reference="; ".join(x for x in line if x),
                                       notes=tuple(x for x in (medal if stat == "WS" else "", constant) if x),
                                       **common))
            sensitivity = _sensitivity_cells(m)
            if sensitivity:
                theirs = ", ".join(f"{VARIANTS[c]} {base[1][c]:.3f}" for c in CONTROLS
                                   if base and _number(base[1].get(c)))
                rows.append(ControlRow(probe, setting, "sensitivity", sensitivity,
                                       reference=f"{base[0]}: {theirs}" if theirs else "", **common))
    return rows


def table(rows: list[ControlRow]) -> str:
    """The rows as a Markdown table (:data:`COLUMNS`); an absent cell is "—"."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|---|---|---|---|---|---|---:|---:|---|---|"]
    for r in rows:
        cells = [r.cells[v].text() if v in r.cells else "—" for v in VARIANTS]
        notes = "; ".join(r.notes + ((smoke.MARK,) if r.smoke else ()))
        lines.append("| " + " | ".join([r.probe, r.setting, r.statistic, *cells,
                                        "" if r.examples is None else str(r.examples),
                                        "" if r.at_n is None else str(r.at_n), r.reference, notes]) + " |")
    return "\n".join(lines)


def legend(rows: list[ControlRow]) -> list[str]:
    """What the columns and the marks the rows use mean, and, wherever a MAX interval is printed, :data:`MAX_NOTE`."""
    lines = ["oLMpics columns: **original**, **NO-LANG**, **PERTURBED**: one statistic on the probe's examples and on "
             "its two controls (NO-LANG keeps only [MASK] and the arguments, answers replaced by nonsense words; "
             "PERTURBED-LANG replaces the probe's key words), `value [95% CI]` (percentile bootstrap over dev "
             "examples, resampling facts: all rows of a fact, under every template, with their control rows, drawn together; a "
             "control's on the original examples that have a control row); **accuracy** (setting "
             "zero-shot): the checkpoint's MLM head before any training; **WS**: the paper's weighted mean of the "
             "seed-averaged learning curve (what the medals compare with the baseline row's WS), `± std` over seeds "
             "where there are several; **MAX**: the curve's best accuracy; **sensitivity**: the WS formula over "
             "max(0, acc(original) − acc(control)): 0 when the original never beats the control, so the model "
             "reads nothing the control removed; **dev examples**: the original's; **N of MAX**: the training size "
             "where the original's curve reached its MAX; **reference**: chance (a uniform guess) and the probe's "
             "baseline row (MLM-BASELINE, ESIM) in the same setting; **medal**: the oLMpics report's (✓ success, "
             "✓– partial), from the main setting's WS (MLP, MC-QA)."]
    marks = {m for r in rows for c in r.cells.values() for m in c.marks}
    notes = {n for r in rows for n in r.notes}
    if any(r.setting == RANDOM_INIT for r in rows):
        lines.append(f"**{RANDOM_INIT}**: the model's random-init baseline row (`random:<model>`: its architecture "
                     "and tokenizer with every weight freshly initialised), scored as the model is: what the "
                     "architecture and the answer set earn without any training, the line a zero-shot score must "
                     "clear to show knowledge.")
    if NEW_HEAD in notes:
        lines.append(f"{NEW_HEAD}: the checkpoint has no MLM head; a newly initialised one scored, so not a "
                     "zero-shot result (no knowledge is measured).")
    if CONSTANT in marks:
        lines.append(f"{CONSTANT}: a constant predictor: the model gave one answer to every dev example of that "
                     "variant at zero-shot (the answer in the notes), or in that many (N, seed) runs of its curve: "
                     "the number measures no knowledge.")
    if BELOW in marks:
        lines.append(f"{BELOW}: the control's own WS interval lies entirely below chance, so the sensitivity "
                     "counts the control's failure, not the model's use of language.")
    if any(r.statistic == "MAX" for r in rows):
        lines.append(MAX_NOTE)
    return lines
