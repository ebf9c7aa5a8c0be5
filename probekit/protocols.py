"""The protocols: one record each, the one list of them. A protocol is a way of evaluating a model on data (zero-shot
MC, a learning curve, ParaRel's queries, CALUM's fine-tuning...): the model families it applies to, its paper (the
params' ``runs.<paper>`` lists the models that run it), the params sections it reads, what ``probes run`` reproduces
and limits for it, where the pipeline writes its results, and the functions that run it and report a set of its runs.

The functions are named as ``module:function`` and imported when called (:func:`function`): this layer knows
the names, :mod:`evaluators` holds the code (``evaluators.shared.api.evaluate`` runs a protocol by name)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable

from probekit.errors import UsageError
from probekit.scoring import FAMILIES


@dataclass(frozen=True)
class Protocol:
    name: str
    title: str                         # as a skip reason names it ("MC-MLM learning curves: for a masked LM only")
    families: tuple[str, ...]          # the model families it applies to (the others: skipped, said why)
    paper: str                         # the params' `runs.<paper>` list: the models that run it
    reported: str                      # the `probes run --probes` choice (the report that shows its results)
    sections: tuple[str, ...] = ()     # the params sections its run reads where the call is silent
    profiled: bool = False             # its metrics.json records the params' `profile` (part of a grid cell's key)
    stages: tuple[str, ...] = ()       # the report stages `probes run` reproduces for it ({key}: the model's alias)
    limits: tuple[str, ...] = ()       # the params `probes run --limit N` sets for it
    results: tuple[str, ...] = ()      # where the pipeline writes its runs
    run: str | None = None             # "module:function": one run (evaluators.shared.api.evaluate)
    report: str | None = None          # "module:function": the report of a grid's stored runs (None: no grid)


REGISTRY = {p.name: p for p in (
    Protocol("audit", "the tokenization audit", FAMILIES, "olmpics", "olmpics", stages=("audit@{key}",),
             results=("reports/tokenization",)),
    Protocol("zeroshot", "zero-shot MC", FAMILIES, "olmpics", "olmpics", sections=("scoring", "zeroshot"),
             stages=("report", "heatmaps"), limits=("zeroshot.limit",),
             results=("results/zeroshot", "results/release", "results/zeroshot_grid"),
             run="evaluators.olmpics.runs:zeroshot", report="evaluators.grid.report:zeroshot"),
    Protocol("features", "MC-MLM mask features", ("mlm",), "olmpics", "olmpics", sections=("scoring", "curve"),
             results=("data/features",), run="evaluators.olmpics.runs:features"),
    Protocol("curve", "MC-MLM learning curves", ("mlm",), "olmpics", "olmpics",
             sections=("scoring", "curve", "mlm_baseline"), profiled=True, stages=("olmpics_report",),
             results=("results/curve",), run="evaluators.olmpics.runs:curve", report="evaluators.grid.report:curves"),
    Protocol("mcqa", "MC-QA learning curves (a fine-tuned encoder)", ("mlm",), "olmpics", "olmpics",
             sections=("mcqa",), profiled=True, results=("results/curve",), run="evaluators.olmpics.runs:mcqa",
             report="evaluators.grid.report:curves"),
    Protocol("pararel", "ParaRel evaluation", FAMILIES, "pararel", "pararel", sections=("scoring", "pararel_eval"),
             profiled=True, stages=("pararel_report",), limits=("pararel_eval.limit",), results=("results/pararel",),
             run="evaluators.pararel.runs:pararel", report="evaluators.grid.report:pararel"),
    Protocol("consistency", "consistency training", ("mlm",), "consistency", "pararel",
             sections=("scoring", "consistency"), profiled=True,
             limits=("consistency.limit", "consistency.eval_limit"),
             results=("results/consistency",), run="evaluators.pararel.runs:consistency"),
    Protocol("calum", "CALUM (a fine-tuned classifier)", FAMILIES, "calum", "calum", sections=("calum_eval",),
             profiled=True, stages=("calum_report",), limits=("calum_eval.limit", "calum_eval.eval_limit"),
             results=("results/calum",), run="evaluators.calum.runs:calum", report="evaluators.grid.report:calum"),
)}
"""protocol name -> its record."""

PAPERS = tuple(dict.fromkeys(p.paper for p in REGISTRY.values()))
"""The keys of the params' ``runs`` (the models each runs): the three papers, and ParaRel §8's consistency training
apart from ParaRel's evaluation (the paper trains BERT-base only: "the baseline, BERT base, and our model")."""

REPORTED = tuple(dict.fromkeys(p.reported for p in REGISTRY.values()))
"""``probes run --probes``' choices: the reports, each reproducing the runs of its protocols."""

GRID = tuple(name for name, p in REGISTRY.items() if p.report)
"""The protocols an evaluation grid runs (those with a report of stored runs)."""

SECTION_MODELS = {
    "scoring": "evaluators.shared.params:ScoringParams", "zeroshot": "evaluators.shared.params:ZeroshotParams",
    "curve": "evaluators.shared.params:CurveParams",
    "mlm_baseline": "evaluators.shared.params:MlmBaselineParams", "mcqa": "evaluators.shared.params:McqaParams",
    "pararel_eval": "evaluators.shared.params:ParaRelEvalParams",
    "consistency": "evaluators.pararel.consistency_training:ConsistencyParams",
    "calum_eval": "evaluators.calum.params:CalumEvalParams"}
"""The typed model of each section a protocol reads (``module:class``)."""


def get(name: str) -> Protocol:
    """The record of protocol ``name``; a :class:`UsageError` naming the protocols when there is none."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise UsageError(f"no protocol {name!r}; the protocols are {', '.join(REGISTRY)}") from None


def function(dotted: str) -> Callable:
    """The function (or class) a record names as ``module:function``, imported now."""
    module, _, name = dotted.partition(":")
    return getattr(importlib.import_module(module), name)


def of_report(reported: str) -> list[Protocol]:
    """The protocols whose runs ``reported`` (a ``probes run --probes`` choice) reproduces, in registry order."""
    return [p for p in REGISTRY.values() if p.reported == reported]
