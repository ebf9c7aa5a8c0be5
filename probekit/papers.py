"""The papers, as the params name them: the keys of ``runs`` (the models each paper runs, :meth:`probekit.params.
ParamsFile.runs`). Each protocol of :mod:`evaluators` belongs to one (``evaluators.protocols``)."""

from __future__ import annotations

PAPERS = ("olmpics", "pararel", "consistency", "calum")
"""oLMpics, ParaRel and CALUM, and ParaRel §8's consistency training apart from ParaRel's evaluation (the paper
trains BERT-base only: "the baseline, BERT base, and our model")."""
