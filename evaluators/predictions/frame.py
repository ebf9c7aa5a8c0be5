"""Predictions beside their rows, as a pandas frame, and a control joined to its base: the public way to look at
answers (a notebook, the results browser).

```python
from evaluators.predictions import load_predictions, join_controls
frame = load_predictions("results", probe="age_comparison", split="dev")
pair = join_controls(frame, control="perturbed")          # one row per (run, base example)
pair[pair.correct_base & ~pair.correct_control]            # right on the original, wrong on PERTURBED
```"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from evaluators.predictions.files import PredictionFile, find_predictions
from evaluators.predictions.records import Answer, Dataset, margin, read_answers
from evaluators.predictions.rows import dataset_rows
from probekit.errors import UsageError

COLUMNS = ["collection", "probe", "variant", "split", "run", "model", "protocol", "id", "stem", "choices", "gold",
           "answer", "template", "group", "source_id", "args", "facts", "predicted", "index", "correct", "margin",
           "scores", "data", "source"]


def collect(results: str | Path = "results", *, data: str | Path = "data", root: str | Path | None = None,
            files: Iterable[PredictionFile] | None = None, keep=None
            ) -> dict[Dataset, dict[str, tuple[PredictionFile, dict[str, Answer]]]]:
    """Every run's answers grouped by the dataset they scored: ``{dataset: {run label: (file, {id: answer})}}``,
    datasets and runs in the order their files sort. ``keep(file)``: read only the files it accepts. Two files
    giving the same run label on one dataset are an error naming both."""
    files = list(files) if files is not None else find_predictions(results, data=data, root=root)
    out: dict[Dataset, dict[str, tuple[PredictionFile, dict[str, Answer]]]] = {}
    for pf in files:
        if keep is not None and not keep(pf):
            continue
        for (ds, run), answers in read_answers(pf).items():
            runs = out.setdefault(ds, {})
            if run in runs:
                raise UsageError(f"{pf.path}: run {run!r} on {ds.probe}/{ds.variant}/{ds.split} is also in "
                                 f"{runs[run][0].path}")
            runs[run] = (pf, answers)
    return out


def load_predictions(results: str | Path = "results", *, data: str | Path = "data", root: str | Path | None = None,
                     probe: str | None = None, variant: str | None = None, split: str | None = None,
                     models: Iterable[str] | None = None, collection: str | None = None) -> pd.DataFrame:
    """One row per run and example it answered, the example's fields beside the answer (:data:`COLUMNS`: the row's
    ``stem``, ``choices``, ``gold``, ``answer``, ``template``, ``group``, ``source_id``, ``args``, ``facts``; the
    answer's ``predicted`` text, ``index``, ``correct``, ``margin`` and ``scores``). ``probe``, ``variant``,
    ``split``, ``models`` (model aliases or run labels) and ``collection`` keep only those."""
    results = Path(results)
    root = Path(root) if root is not None else results.parent
    models = set(models) if models is not None else None

    def keep(pf: PredictionFile) -> bool:
        return ((probe is None or pf.probe in (None, probe)) and (variant is None or pf.variant in (None, variant))
                and (split is None or pf.split in (None, split)))

    records = []
    for ds, runs in collect(results, data=data, root=root, keep=keep).items():
        if ((probe and ds.probe != probe) or (variant and ds.variant != variant) or (split and ds.split != split)
                or (collection and ds.collection != collection)):
            continue
        chosen = {r: v for r, v in runs.items() if models is None or r in models or v[0].model in models}
        if not chosen:
            continue
        wanted = set().union(*(answers.keys() for _, answers in chosen.values()))
        by_id = {row["id"]: row for row in dataset_rows(ds, root=root, ids=wanted)}
        for run, (pf, answers) in chosen.items():
            for id_, a in answers.items():
                row = by_id.get(id_)
                if row is None:
                    raise UsageError(f"{pf.path}: example {id_} is not a row of {ds.path} (the dataset changed "
                                     f"since the run: re-run it)")
                records.append({**{k: ds.__dict__[k] for k in ("collection", "probe", "variant", "split")},
                                "run": run, "model": pf.model, "protocol": pf.protocol, **row,
                                "predicted": a.predicted, "index": a.index, "correct": a.correct,
                                "margin": margin(a.scores, row["gold"]) if a.scores else a.margin,
                                "scores": a.scores, "data": ds.path, "source": str(pf.path)})
    return pd.DataFrame.from_records(records, columns=COLUMNS)


def join_controls(frame: pd.DataFrame, *, control: str = "perturbed", base: str = "original") -> pd.DataFrame:
    """Each ``control`` row beside its ``base`` row (the control's ``source_id`` is the base's ``id``), per run
    answering both: every column twice, suffixed ``_base`` and ``_control``; ``collection``, ``probe``, ``split``
    and ``run`` once. A run that answered one side only is left out (count them with the frame itself)."""
    keys = ["collection", "probe", "split", "run"]
    missing = [c for c in keys + ["variant", "id", "source_id"] if c not in frame.columns]
    if missing:
        raise UsageError(f"not a frame of load_predictions(): no column {', '.join(missing)}")
    b = frame[frame["variant"] == base]
    c = frame[frame["variant"] == control]
    if c.empty:
        known = ", ".join(sorted(frame["variant"].dropna().unique()))
        raise UsageError(f"no rows of the control {control!r} (variants in the frame: {known or 'none'})")
    if c["source_id"].isna().all():
        raise UsageError(f"{control!r} rows name no base (source_id): not a control of {base!r}")
    joined = c.merge(b, left_on=keys + ["source_id"], right_on=keys + ["id"], suffixes=("_control", "_base"))
    return joined.reset_index(drop=True)
