"""Modules that moved when the tree became four layers (README "Layout"): importing an old name fails
at once with a message naming the new one, instead of a ``ModuleNotFoundError`` deep inside user code.
The packages ``probekit`` and ``evaluators`` install the finder when imported."""

from __future__ import annotations

import importlib.abc
import sys

MOVED = {
    "evaluators.audit": "evaluators.engine.audit",
    "evaluators.calum_metrics": "evaluators.calum.metrics",
    "evaluators.calum_report": "evaluators.calum.report",
    "evaluators.causal": "evaluators.engine.causal",
    "evaluators.collator": "evaluators.engine.collator",
    "evaluators.consistency_training": "evaluators.pararel.consistency_training",
    "evaluators.curve": "evaluators.olmpics.mc_mlm_curve",
    "evaluators.esim": "evaluators.olmpics.esim",
    "evaluators.features": "evaluators.olmpics.features",
    "evaluators.glove": "evaluators.olmpics.glove",
    "evaluators.grid_report": "evaluators.grid.report",
    "evaluators.heads": "evaluators.olmpics.heads",
    "evaluators.heatmap": "evaluators.olmpics.heatmap",
    "evaluators.kept_models": "evaluators.engine.kept_models",
    "evaluators.learning_curve": "evaluators.olmpics.learning_curve",
    "evaluators.masked": "evaluators.engine.masked",
    "evaluators.masked_queries": "evaluators.engine.masked_queries",
    "evaluators.mcqa": "evaluators.olmpics.mcqa",
    "evaluators.mcqa_esim": "evaluators.olmpics.mcqa_esim",
    "evaluators.metrics": "evaluators.olmpics.metrics",
    "evaluators.mlm_curve": "evaluators.olmpics.mc_mlm",
    "evaluators.models": "evaluators.engine.models",
    "evaluators.multitask": "evaluators.calum.multitask",
    "evaluators.olmpics_plots": "evaluators.olmpics.plots",
    "evaluators.olmpics_report": "evaluators.olmpics.report",
    "evaluators.olmpics_results": "evaluators.olmpics.results",
    "evaluators.pairs": "evaluators.engine.pairs",
    "evaluators.pararel_metrics": "evaluators.pararel.metrics",
    "evaluators.pararel_plots": "evaluators.pararel.plots",
    "evaluators.pararel_report": "evaluators.pararel.report",
    "evaluators.runner": "evaluators.engine.runner",
    "evaluators.seq2seq": "evaluators.engine.seq2seq",
    "evaluators.statements": "probekit.tokens.statements",
    "evaluators.zeroshot": "evaluators.olmpics.zeroshot",
    "probekit.annotations": "probekit.probes.annotations",
    "probekit.build": "generators.build",
    "probekit.cli": "probes.main",
    "probekit.cli_calum": "probes.calum",
    "probekit.cli_curves": "probes.olmpics",
    "probekit.cli_grid": "probes.grid",
    "probekit.cli_pararel": "probes.pararel",
    "probekit.cli_publish": "probes.publish",
    "probekit.cloze_dataset": "probekit.data.cloze",
    "probekit.controls": "probekit.probes.controls",
    "probekit.crowd_tasks": "probekit.probes.crowd_tasks",
    "probekit.examples": "probekit.data.examples",
    "probekit.fidelity": "probekit.probes.fidelity",
    "probekit.hub_card": "probekit.hub.card",
    "probekit.hub_export": "probekit.hub.export",
    "probekit.hub_parquet": "probekit.hub.parquet",
    "probekit.lexicon": "probekit.probes.lexicon",
    "probekit.loaders": "probekit.sources.loaders",
    "probekit.pair_dataset": "probekit.data.pairs",
    "probekit.pattern_edges": "probekit.sources.pattern_edges",
    "probekit.pattern_graphs": "probekit.sources.pattern_graphs",
    "probekit.probe_dataset": "probekit.probes.dataset",
    "probekit.publish": "probekit.hub.publish",
    "probekit.sparql": "probekit.sources.sparql",
    "probekit.templates": "probekit.probes.templates",
    "probekit.vectors": "probekit.sources.vectors",
    "probekit.writer": "probekit.data.writer",
}
"""Old module -> the module that holds its code now (split modules: the one that holds most of it)."""


class MovedModuleError(ModuleNotFoundError):
    pass


class _MovedFinder(importlib.abc.MetaPathFinder):
    """Last on ``sys.meta_path``: asked only for names no other finder knows."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname in MOVED:
            raise MovedModuleError(f"{fullname} moved to {MOVED[fullname]} (README, Layout); "
                                   f"import it from there", name=fullname)
        return None


def install() -> None:
    if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
        sys.meta_path.append(_MovedFinder())
