"""The report stage: every ``metrics.json`` under the result folders -> a markdown report and, when asked,
the ``dvc metrics`` summary and the models' dot plot (:mod:`evaluators.shared.zeroshot_figure`). Only the paths
given are written."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from evaluators.shared import applies  # noqa: E402
from evaluators.shared.answers import described as described_answers, distribution  # noqa: E402
from evaluators.shared.zeroshot_figure import figure  # noqa: E402
from evaluators.shared.bootstrap import accuracy_statistic, bootstrap, paired_bootstrap  # noqa: E402
from probekit.outputs import atomic  # noqa: E402
from probekit.data.examples import LABELS  # noqa: E402
from probekit.data.jsonl import read_json, read_jsonl  # noqa: E402
from probekit.data.units import fact_unit  # noqa: E402
from probekit.errors import DataError  # noqa: E402

VARIANT_ORDER = ("original", "nolang", "perturbed", "release", "release_phrasing")
NOT_ZERO_SHOT = "MLM head newly initialised: not a zero-shot result"
LEGEND = """Columns:
- **model**: the alias or id evaluated; **probe**, **variant**: the dataset (`release` is the original oLMpics
  file, `nolang` and `perturbed` the NO-LANG and PERTURBED-LANG controls, the others our generated phrasings);
- **accuracy**: share of dev examples whose highest-scoring choice is the gold one (MC-MLM), with its 95%
  bootstrap interval (1000 resamples, seed 0) resampling the fact, the unit the data repeats: all rows of a fact
  (its `args` and `facts`, under every template; a release row's id, which a release file repeats) drawn together;
- **n**: examples scored; **chance**: the expected accuracy of a uniform guess (mean of 1/#choices);
- **vs chance**: accuracy − chance (negative: below chance);
- **answers**: the answer texts the model chose, the most frequent first, with their counts (choices are shuffled
  per row, so a constant text answer hides behind varied labels);
- **setup**: `zero-shot` when the checkpoint's own MLM head scored the choices; `† not zero-shot` when the head
  was newly initialised (the checkpoint has none): such rows check the pipeline, they measure no knowledge;
  `random init of X (seed s)`: the random-init baseline of X (`random:X`), X's architecture and tokenizer with
  every weight freshly drawn: what a pretrained X must beat before its score reads as knowledge;
- **⊘** (on an original row above chance): its PERTURBED-LANG control scores at least the original's lower bound,
  so the model reads no template: the score comes from the objects or the answer words, not the language."""

NO_TEMPLATE = "⊘"
"""The mark of a score no better than its PERTURBED-LANG control's: the model reads no template."""


CONSTANT = "⚠"
"""The mark of a constant predictor's number (every oLMpics report; CALUM's report words it in full)."""


def constant_choice(positions: Sequence, words: Sequence | None = None) -> str | None:
    """What a constant predictor answered: ``None`` unless one choice was made on every example of a variant, the
    same word (``words``: the chosen choices' texts, e.g. `younger` on all 500 age examples, whose choice order is
    shuffled) or the same position (``positions``: labels or indices, e.g. always the first choice, as ties give).
    Then ``"`younger`"`` or ``"choice A"`` (an index: its label, 0 is A), for the report's note."""
    if len(positions) < 2:
        return None
    if words is not None and None not in words and len(set(words)) == 1:
        return f"`{words[0]}`"
    if None not in positions and len(set(positions)) == 1:
        first = positions[0]
        return f"choice {LABELS[first] if isinstance(first, (int, np.integer)) else first}"
    return None


def deviation(std: float | None, seeds: int, fmt: Callable[[float], str]) -> str:
    """A standard deviation over ``seeds`` as a report prints it: ``fmt(std)``, or "—" over fewer than two seeds,
    where it is undefined (not "0.0")."""
    return "—" if seeds < 2 or std is None else fmt(std)


def iter_metrics(folders: Iterable[Path], skipped: list | None = None) -> Iterator[tuple[Path, dict]]:
    """``(path, metrics)`` for every ``metrics.json`` under ``folders``, in sorted order; a run that skipped its
    model (:mod:`evaluators.shared.applies`) is no result: appended to ``skipped`` when given, else passed over."""
    for folder in folders:
        for path in sorted(Path(folder).rglob("metrics.json")):
            metrics = read_json(path)
            if applies.is_skipped(metrics):
                if skipped is not None:
                    skipped.append(metrics)
                continue
            yield path, metrics


def collect(folders: Iterable[Path]) -> pd.DataFrame:
    """One row per metrics.json under ``folders`` (see :func:`frame`); the runs that skipped their model are in
    ``df.attrs["skipped"]``."""
    folders, skipped = list(folders), []
    df = frame(iter_metrics(folders, skipped))
    if df.empty and not skipped:
        raise DataError(f"no metrics.json under {', '.join(map(str, folders))}")
    df.attrs["skipped"] = skipped
    return df


def frame(found: Iterable[tuple[Path, dict]]) -> pd.DataFrame:
    """One row per ``(path, metrics)``: model, probe, variant, accuracy (and its 95% bootstrap interval), n,
    chance, zero_shot, and the per-example correctness read from the predictions.jsonl beside it."""
    keys = ("model", "probe", "variant", "accuracy", "n", "chance", "zero_shot")
    rows = []
    for path, m in found:
        missing = [k for k in keys if k not in m]
        if missing:
            raise DataError(f"{path}: missing field(s) {missing} (not a probekit metrics.json?)")
        predictions = read_jsonl(path.parent / "predictions.jsonl")
        correct = np.asarray([p["correct"] for p in predictions], bool)
        units = fact_units(predictions)
        ci = bootstrap(accuracy_statistic(correct), len(correct), units=units) if len(correct) else \
            {"low": 0.0, "high": 0.0}
        constant = constant_choice([p.get("prediction") for p in predictions], [p.get("choice") for p in predictions])
        rows.append({**{k: m[k] for k in keys}, "low": ci["low"], "high": ci["high"], "correct": correct, "units": units,
                     "fingerprint": m.get("data_fingerprint"), "setup": setup_title(m), "constant": constant,
                     "answers": answers(predictions),
                     "random_init": m.get("random_init"), "profile": m.get("profile"),
                     "capped": tuple(m.get("capped") or ())})
    if not rows:
        return pd.DataFrame()
    df = pd.DataFrame(rows)
    df["no_template"] = no_template(df)
    order = {v: i for i, v in enumerate(VARIANT_ORDER)}
    df["_order"] = df["variant"].map(lambda v: order.get(v, len(order)))
    return df.sort_values(["model", "probe", "_order", "variant"]).drop(columns="_order").reset_index(drop=True)


def fact_units(predictions: list[dict]) -> list[str]:
    """The unit a zero-shot interval resamples, per prediction: the fact, the ``unit`` the evaluator wrote
    (:func:`probekit.data.units.fact_unit`: one fact under several templates is one unit); a file written before
    predictions carried it gives the same function's answer on the prediction row, its id."""
    return [str(p.get("unit") or fact_unit(p)) for p in predictions]


def answers(predictions: list[dict]) -> dict | None:
    """The predictions' answer texts (:func:`evaluators.shared.answers.distribution`); None where the file records
    none (written before ``choice`` was)."""
    texts = [p["choice"] for p in predictions if p.get("choice") is not None]
    return distribution(texts) if texts else None


def no_template(df: pd.DataFrame) -> list[bool]:
    """Per row: an ``original`` score above chance (its interval) that its model's PERTURBED-LANG control on the same
    probe reaches (the control's accuracy ≥ the original's lower bound): the model reads no template."""
    perturbed = {(r.model, r.probe): r.accuracy for r in df.itertuples() if r.variant == "perturbed"}
    return [r.variant == "original" and r.low > r.chance and (r.model, r.probe) in perturbed
            and perturbed[r.model, r.probe] >= r.low for r in df.itertuples()]


def _setup(r) -> str:
    if isinstance(r.random_init, dict):
        return f"random init of {r.random_init['of']} (seed {r.random_init['seed']})"
    return "zero-shot" if r.zero_shot else "† not zero-shot"


def markdown(df: pd.DataFrame) -> str:
    """One table row per model, probe and variant, with n, chance and the setup; a legend for every column; the
    models a protocol skipped (``df.attrs["skipped"]``), and why."""
    skipped = applies.skipped_lines(df.attrs.get("skipped", ()))
    if df.empty:
        return "\n".join(["# MC-MLM accuracy (dev)", "", "No results.", "", *skipped])
    table = pd.DataFrame({
        "model": df.model, "probe": [p + (" ⚠ capped" if c else "") for p, c in zip(df.probe, df.capped)],
        "variant": df.variant,
        "accuracy": [f"{a:.3f} [{lo:.3f}, {hi:.3f}]" + (f" {CONSTANT}" if isinstance(c, str) else "")
                     + (f" {NO_TEMPLATE}" if flat else "")
                     for a, lo, hi, c, flat in zip(df.accuracy, df.low, df.high, df.constant, df.no_template)],
        "n": df.n, "chance": df.chance.map("{:.3f}".format),
        "vs chance": (df.accuracy - df.chance).map("{:+.3f}".format),
        "answers": [described_answers(a) if a else "—" for a in df.answers],
        "setup": [_setup(r) for r in df.itertuples()],
    })
    lines = ["# MC-MLM accuracy (dev)", ""]
    if not df.zero_shot.all():
        models = ", ".join(sorted(set(df.model[~df.zero_shot])))
        lines += [f"**† {models}: {NOT_ZERO_SHOT}.** These rows check the pipeline; they measure no knowledge.",
                  ""]
    lines += constant_lines(df) + capped_lines(df)
    flat = df[df.no_template]
    if len(flat):
        lines += [f"**{NO_TEMPLATE} reads no template**: " + ", ".join(
            f"{r.model} {r.probe} {r.accuracy:.3f} [{r.low:.3f}, {r.high:.3f}] vs perturbed "
            f"{df[(df.model == r.model) & (df.probe == r.probe) & (df.variant == 'perturbed')].accuracy.iloc[0]:.3f}"
            for r in flat.itertuples()) + ": above chance, but its PERTURBED-LANG control (nonsense template words) "
            "scores as high, so the score comes from the objects or the answer words, not the template.", ""]
    lines += [table.to_markdown(index=False, disable_numparse=True), "", LEGEND, "", *skipped]
    differences = paired_differences(df)
    if len(differences):
        lines += ["## Paired differences", "", "Models scored on the same data (same probe, variant and fingerprint): "
                  "accuracy A − B, its 95% paired bootstrap interval over the shared examples (a drawn fact counts on both "
                  "sides together), and whether it holds "
                  "(the interval excludes 0).", "", differences.to_markdown(index=False, disable_numparse=True), ""]
    return "\n".join(lines)


def constant_lines(df: pd.DataFrame) -> list[str]:
    """The constant predictors among the rows, flagged as CALUM's report flags them: per model, each dataset it
    answered with one choice throughout, and that choice."""
    flagged = df[[isinstance(c, str) for c in df.constant]]
    if flagged.empty:
        return []
    by_model = {model: ", ".join(f"{r.probe}/{r.variant} ({r.constant} on all {r.n})" for r in rows.itertuples())
                for model, rows in flagged.groupby("model", sort=True)}
    return [f"**{CONSTANT} constant predictor**: " + "; ".join(f"{m}: {w}" for m, w in by_model.items())
            + f". A {CONSTANT} accuracy is the share of examples whose gold is that choice: it measures no "
              "knowledge (the model gave one answer to every example of that dataset).", ""]


def capped_lines(df: pd.DataFrame) -> list[str]:
    """The probes whose data a run made from a capped source, accepted (``capped`` in their metrics:
    :mod:`probekit.sources.capped`), each with its caps."""
    by_probe = {probe: sorted({c for caps in rows.capped for c in caps})
                for probe, rows in df.groupby("probe", sort=True)}
    return [f"**⚠ capped data**: {probe}: {'; '.join(caps)} (accepted: `capped: accept`); not the paper's sizes."
            for probe, caps in by_probe.items() if caps] + ([""] if any(by_probe.values()) else [])


def paired_differences(df: pd.DataFrame) -> pd.DataFrame:
    """Every pair of models on the same data, compared by a paired bootstrap over the same examples."""
    out = []
    for (probe, variant, _), group in df.groupby(["probe", "variant", "fingerprint"], sort=True, dropna=False):
        rows = list(group.itertuples())
        for i, a in enumerate(rows):
            for b in rows[i + 1:]:
                if len(a.correct) != len(b.correct):
                    continue
                test = paired_bootstrap(accuracy_statistic(a.correct), accuracy_statistic(b.correct), len(a.correct),
                                        units=a.units)
                out.append({"probe": probe, "variant": variant, "A": a.model, "B": b.model,
                            "A − B": f"{test['diff']:+.3f} [{test['low']:+.3f}, {test['high']:+.3f}]",
                            "p": f"{test['p_value']:.3f}", "holds": "yes" if test["holds"] else "no"})
    return pd.DataFrame(out)


def summary(df: pd.DataFrame) -> dict:
    """``{model: {probe: {variant: {accuracy, n, chance, zero_shot, lm_head, answers}}}}`` for ``dvc metrics``
    (``answers``: :func:`evaluators.shared.answers.distribution`), with ``constant_predictor`` (the one choice,
    :func:`constant_choice`) where the model answered one choice throughout, ``reads_no_template`` where
    :func:`no_template` holds, ``random_init`` (``{of, seed}``) for a random-init baseline, and the ``profile`` the
    result was run under (smoke, paper, rehearsal), where its metrics.json names one."""
    nested: dict = {}
    for r in df.itertuples():
        nested.setdefault(r.model, {}).setdefault(r.probe, {})[r.variant] = {
            "accuracy": round(r.accuracy, 4), "accuracy_low": round(r.low, 4), "accuracy_high": round(r.high, 4),
            "n": int(r.n), "chance": round(r.chance, 4),
            "zero_shot": bool(r.zero_shot), "lm_head": "pretrained" if r.zero_shot else "newly_initialised",
            **({"answers": r.answers} if r.answers else {}),
            **({"constant_predictor": r.constant} if isinstance(r.constant, str) else {}),
            **({"reads_no_template": True} if r.no_template else {}),
            **({"random_init": r.random_init} if isinstance(r.random_init, dict) else {}),
            **({"profile": r.profile} if isinstance(r.profile, str) else {}),
            **({"capped": list(r.capped)} if r.capped else {})}
    return nested


def setup_title(metrics: dict) -> str:
    """How a zero-shot result was scored, for a figure's title: MC-MLM (the mask logit) or the family's rule."""
    rule = metrics.get("rule", "mask-logit")
    return "zero-shot MC-MLM" if rule == "mask-logit" else \
        f"zero-shot, {metrics.get('scoring', 'the')} rule {rule}"


def save(fig: plt.Figure, path: Path, dpi: int = 100) -> None:
    """A figure as PNG, atomically and byte-reproducibly (no software tag)."""
    with atomic.atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=dpi, metadata={"Software": None})
    plt.close(fig)


def run(folders: Iterable[Path], *, out: Path, metrics: Path | None = None, plot: Path | None = None) -> list[Path]:
    """Write the report to ``out`` and, when given, ``metrics`` and the plot; returns what was written."""
    return write(collect(folders), out=out, metrics=metrics, plot=plot)


def write(df: pd.DataFrame, *, out: Path, metrics: Path | None = None, plot: Path | None = None) -> list[Path]:
    """The report of a :func:`frame` to ``out`` and, when given, ``metrics`` and the plot."""
    atomic.write_text(out, markdown(df))
    written = [out]
    if metrics:
        atomic.write_json(metrics, summary(df))
        written.append(metrics)
    if plot:
        save(figure(df), plot) if not df.empty else applies.empty_plot(plot)
        written.append(plot)
    return written
