"""The learning curves on the original release's own files: what a curve reads when it is given a release probe
(``--release-of [SOURCE:]PROBE``) instead of a generated probe folder.

The original trains every curve on the released train file and validates on the released dev file
(alontalmor/oLMpics ``allennlp_models/config/transformer_masked_lm.jsonnet`` lines 30-31, ``transformer_mc_qa.jsonnet``
lines 29-30, ``mlm_baseline.jsonnet`` and ``esim_baseline.jsonnet`` lines 28-29: ``"train_data_path"``,
``"validation_data_path"``; the README's run commands, lines 62, 73, 78 and 83, pass both for each run). A
release probe is found as zero-shot's ``--release-of`` finds it (:func:`evaluators.olmpics.runs.curve_inputs`
through :func:`~evaluators.olmpics.runs.data_path`: the manifest's file of the probe and split) and its rows are
read and checked by the one reader of probe files (:func:`probekit.probes.dataset.read_examples`). The release has
no controls: a release curve has its ``original`` variant only (no NO-LANG, no PERTURBED: those are built from a
generated row's template and slots, which a release row does not carry), and no intermediate variant (MC-QA's
single-hop facts)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DATA = "release"
"""What a release curve's metrics.json records as ``curve_data`` (a generated curve records none)."""
FULL = "original"
"""The variant name a release curve's rows take, so its files read as a generated curve's (``original/``)."""


@dataclass(frozen=True)
class ReleaseFiles:
    """One probe's release train file and evaluation file (``split``), as a curve reads them."""

    probe: str
    source: str
    train: Path
    dev: Path

    @property
    def name(self) -> str:
        """The probe: what ``{probe}`` in ``--out`` stands for."""
        return self.probe

    def splits(self, split: str) -> tuple[dict, dict]:
        """``({variant: (file, rows)} of train, ... of split)`` as :func:`probekit.probes.dataset.read_split`
        gives them for a probe folder, the release's rows under :data:`FULL`."""
        from probekit.probes.dataset import read_examples

        return {FULL: (self.train, read_examples(self.train))}, {FULL: (self.dev, read_examples(self.dev))}

    def variants(self, split: str) -> dict[str, dict]:
        """``{FULL: {"train", "dev", "path", "probe"}}``, as :func:`evaluators.olmpics.learning_curve.read_variants`
        gives a probe folder's (no controls)."""
        train, dev = self.splits(split)
        return {FULL: {"train": train[FULL][1], "dev": dev[FULL][1], "path": self.dev, "probe": self.probe}}


def curve_variants(data, split: str) -> dict[str, dict]:
    """What a curve trains and evaluates on: a :class:`ReleaseFiles`' rows, or a probe or variant folder's
    (:func:`evaluators.olmpics.learning_curve.read_variants`)."""
    if isinstance(data, ReleaseFiles):
        return data.variants(split)
    from evaluators.olmpics.learning_curve import read_variants

    return read_variants(Path(data), split)


def record(data) -> dict:
    """What a curve's metrics.json adds for ``data``: ``{"curve_data": "release", "release_source", "data": the
    evaluation file}`` for a release probe (the browser reads its rows there), nothing for a generated one (its
    files unchanged)."""
    if not isinstance(data, ReleaseFiles):
        return {}
    return {"curve_data": DATA, "release_source": data.source, "data": str(data.dev)}
