"""The oLMpics report's flags on numbers that would mislead: a constant predictor (⚠; :mod:`evaluators.olmpics.constant`)
and a language sensitivity measured against a control that scores below chance (↓)."""

from __future__ import annotations

from evaluators.olmpics.constant import described
from evaluators.olmpics.results import CONTROLS, Probe
from evaluators.shared.report import CONSTANT


def constant_mark(probe: Probe, label: str, setting: str, variants: tuple[str, ...] = ("original",),
                  zero_shot: bool = False) -> str:
    """`` ⚠`` when a variant of the row's ``setting`` had a constant predictor: at the zero-shot point
    (``zero_shot``), else in some (N, seed) run."""
    result = probe.results[label].get(setting)
    found = [result.constant.get(v) for v in variants] if result else []
    hit = any(f and (f["zero_shot"] if zero_shot else f["runs"]) for f in found)
    return f" {CONSTANT}" if hit else ""


def flag_lines(probe: Probe) -> list[str]:
    """Under a probe's table: each row's constant predictors (⚠), then each sensitivity measured against a control
    below chance (↓), with the control's own WS."""
    constant_notes, below = [], []
    for label in probe.rows:
        for setting, result in probe.results[label].items():
            notes = [f"{variant}: {text}" for variant, found in result.constant.items()
                     if (text := described(found))]
            if notes:
                constant_notes.append(f"{label} {setting}: " + "; ".join(notes))
            for name, short in CONTROLS.items():
                c = probe.cells[label][setting].get(name)
                if c and c["below_chance"]:
                    own, chance = {k: 100 * v for k, v in c["control_WS"].items()}, 100 * result.meta["chance"]
                    below.append(f"{label} {setting} {short}: the {name} curve's own WS {own['estimate']:.1f} "
                                 f"[{own['low']:.1f}, {own['high']:.1f}] lies below chance ({chance:.1f}%)")
    lines = []
    if constant_notes:
        lines += [f"{CONSTANT} constant predictor, one answer to every dev example (those accuracies measure no "
                  "knowledge):", "", *(f"- {note}" for note in constant_notes), ""]
    if below:
        lines += ["↓ sensitivity against a control below chance (it counts the control's failure, not the model's "
                  "use of language):", "", *(f"- {note}" for note in below), ""]
    return lines
