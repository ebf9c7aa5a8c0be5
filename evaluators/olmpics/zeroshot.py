"""Zero-shot multiple choice: MC-MLM (oLMpics §2) for masked LMs, and the same probes for every LM family
through the engine's rules (``engine.py``).

MC-MLM scores each choice by the pretrained MLM head's logit at the mask. The softmax over only the K
candidates (the paper's mask m ∈ {0, -inf}^|V|) is monotone in the raw logits, so the prediction is the
candidate with the highest logit; the raw logits are what we record. The other rules record log-probabilities.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from evaluators.engine.models import LoadedModel
from evaluators.engine.scorer import Engine
from evaluators.shared.answers import distribution
from probekit.data.jsonl import read_json
from probekit.data.units import fact_unit
from probekit.sources.capped import capped_of
from probekit.outputs import atomic
from probekit.sources.fetch import sha256_file


def evaluate(engine: Engine, examples: Iterable[Mapping]) -> tuple[list[dict], dict]:
    """Per-example predictions (input order) and metrics of a model on multiple-choice cloze examples."""
    examples = list(examples)
    labels = [[c["label"] for c in e["question"]["choices"]] for e in examples]
    scores = engine.score([e["question"]["stem"] for e in examples],
                          [[c["text"] for c in e["question"]["choices"]] for e in examples], [e["id"] for e in examples])
    rule = engine.scoring.rule
    predictions, ties = [], 0
    for e, label_row, row in zip(examples, labels, scores):
        # a tie goes to the first of the tied choices in the file's order (counted in metrics: "ties")
        best = max(range(len(row)), key=row.__getitem__)
        prediction = label_row[best]
        ties += row.count(max(row)) > 1
        # `choice`: the chosen word, from which the report tells a constant predictor (one word on every example)
        # `unit`: the fact the reports' intervals resample (one fact under several templates is one draw)
        predictions.append({"id": e["id"], "unit": fact_unit(e), "scores": row, "prediction": prediction,
                            "choice": e["question"]["choices"][best]["text"], "gold": e["answerKey"],
                            "correct": prediction == e["answerKey"], "rule": rule})
    n = len(predictions)
    # `answers`: the answer texts' distribution (labels hide a constant answer where choices are shuffled per row)
    metrics = {"accuracy": sum(p["correct"] for p in predictions) / n if n else 0.0, "n": n,
               "chance": chance_level([len(row) for row in labels]), "ties": ties,
               "answers": distribution(p["choice"] for p in predictions), **engine.scoring.record()}
    return predictions, metrics


def chance_level(n_choices: Sequence[int]) -> float:
    """Expected accuracy of a uniform guess: the mean of 1/#choices, summed exactly (0.2, not 0.2000...09)."""
    return float(sum(Fraction(1, k) for k in n_choices) / len(n_choices)) if n_choices else 0.0


def describe(path: Path, probe: str | None) -> dict:
    """Probe, variant and fingerprint of a data file: from its meta.json, else (a release file) its sha256; and
    ``capped``, the caps its sources carry (:func:`probekit.sources.capped.capped_of`), where they carry one."""
    meta = path.parent / "meta.json"
    if meta.is_file():
        m = read_json(meta)
        caps = capped_of(m.get("sources"))
        return {"probe": m["probe"], "variant": m["variant"], "data_fingerprint": m["fingerprint"],
                **({"capped": caps} if caps else {})}
    return {"probe": probe or path.stem, "variant": "release", "data_fingerprint": sha256_file(path)}


def run(loaded: LoadedModel, datasets: Mapping[str, tuple[Path, list[dict]]], out: Path, *, split: str = "dev",
        rule: str | None = None, batch_size: int | str = "auto", limit: int | None = None,
        multi_token: str = "error", probe: str | None = None, progress: bool = True,
        profile: str | None = None) -> dict[str, dict]:
    """Evaluate each ``{variant: (path, examples)}`` (read and checked by the caller, ``limit`` applied);
    write ``predictions.jsonl`` and ``metrics.json`` per variant under ``out``. ``profile``: the params file's
    (smoke, paper, rehearsal), recorded in each metrics.json.

    ``probe`` names the probe of a bare jsonl file (an original release file), which has no meta.json.
    """
    engine = Engine(loaded.model, loaded.tokenizer, loaded.family, rule=rule, batch_size=batch_size,
                    multi_token=multi_token, progress=progress)
    results = {}
    with atomic.atomic_path(out, kind="results") as tmp:
        for variant, (path, examples) in datasets.items():
            predictions, metrics = evaluate(engine, examples)
            metrics.update({
                "model": loaded.name, "model_id": loaded.model_id,
                "lm_head": "pretrained" if loaded.head_pretrained else "newly_initialised",
                "zero_shot": loaded.head_pretrained, "data": str(path), "split": split, "limit": limit,
                "profile": profile,
                **describe(path, probe), **loaded.provenance(),
            })
            target = tmp / variant if variant else tmp
            atomic.write_jsonl(target / "predictions.jsonl", predictions)
            atomic.write_json(target / "metrics.json", metrics)
            results[variant] = metrics
    return results
