"""The oLMpics report's flags on numbers that would mislead: a constant predictor (⚠; :mod:`evaluators.olmpics.constant`),
a language sensitivity measured against a control that scores below chance (↓), and a ↑ or a medal earned by a model
no better on the original than on its PERTURBED-LANG control, or no better than its random-init row (⚑): the
paper's medal rule stands as the paper states it, the flag sits beside it."""

from __future__ import annotations

from evaluators.olmpics.constant import described
from evaluators.olmpics.results import CONTROLS, MAIN, Probe
from evaluators.shared.report import CONSTANT


def constant_mark(probe: Probe, label: str, setting: str, variants: tuple[str, ...] = ("original",),
                  zero_shot: bool = False) -> str:
    """`` ⚠`` when a variant of the row's ``setting`` had a constant predictor: at the zero-shot point
    (``zero_shot``), else in some (N, seed) run."""
    result = probe.results[label].get(setting)
    found = [result.constant.get(v) for v in variants] if result else []
    hit = any(f and (f["zero_shot"] if zero_shot else f["runs"]) for f in found)
    return f" {CONSTANT}" if hit else ""


DEGENERATE = "⚑"
"""The mark beside a ↑ or a medal that the controls or the random-init row undo."""


def _points(test: dict) -> str:
    return f"{100 * test['diff']:+.1f} [{100 * test['low']:+.1f}, {100 * test['high']:+.1f}] points"


def degenerate(probe: Probe, label: str) -> list[tuple[str, str]]:
    """``[(on, why)]``: why the row's ↑ (``on`` = "↑") or medal (``on`` = "medal") is no evidence of knowledge: the
    zero-shot interval above chance but the paired difference to its PERTURBED-LANG zero-shot, or to its
    random-init row's, not above 0; a medal whose main PERTURBED sensitivity's interval reaches 0, or whose main WS
    is not above its random-init row's (paired interval not above 0); a medal also carries its ↑'s reasons."""
    found = []
    zero = probe.zero_shot(label)
    if zero and zero["above_chance"]:
        test = zero.get("vs_control", {}).get("perturbed")
        if test and test["low"] <= 0:
            found.append(("↑", f"zero-shot no better than its PERTURBED-LANG zero-shot ({_points(test)} on "
                               f"{test['n']} paired examples): it reads no template"))
        test = (probe.vs_random or {}).get((label, "zero_shot"))
        if test and test["low"] <= 0:
            found.append(("↑", f"zero-shot no better than its random-init row {probe.random_rows[label]} "
                               f"({_points(test)})"))
    if probe.medals.get(label) in ("✓", "✓–"):
        main = MAIN[probe.protocol]
        found += [("medal", why) for on, why in found if on == "↑"]
        c = probe.cells[label].get(main, {}).get("perturbed")
        if c and c["low"] <= 0:
            found.append(("medal", f"{main} sensitivity to PERTURBED-LANG {100 * c['value']:.1f} [{100 * c['low']:.1f}"
                                   f", {100 * c['high']:.1f}]: no better on the original than on PERTURBED"))
        test = (probe.vs_random or {}).get((label, "WS"))
        if test and test["low"] <= 0:
            found.append(("medal", f"{main} WS no better than its random-init row {probe.random_rows[label]} "
                                   f"({_points(test)})"))
    return found


def degenerate_mark(probe: Probe, label: str, on: str) -> str:
    """`` ⚑`` when :func:`degenerate` finds a reason against the row's ``on`` (↑ or medal)."""
    return f" {DEGENERATE}" if any(o == on for o, _ in degenerate(probe, label)) else ""


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
    flagged = [(label, on, why) for label in probe.rows for on, why in degenerate(probe, label)]
    if flagged:
        lines += [f"{DEGENERATE} a ↑ or medal earned by a model no better on the original than on PERTURBED-LANG, or "
                  "no better than its random-init row (the paper's rule awards it; the numbers do not show knowledge):",
                  "", *(f"- {label} {on}: {why}" for label, on, why in flagged), ""]
    if constant_notes:
        lines += [f"{CONSTANT} constant predictor, one answer to every dev example (those accuracies measure no "
                  "knowledge):", "", *(f"- {note}" for note in constant_notes), ""]
    if below:
        lines += ["↓ sensitivity against a control below chance (it counts the control's failure, not the model's "
                  "use of language):", "", *(f"- {note}" for note in below), ""]
    return lines
