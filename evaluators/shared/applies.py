"""Which protocols apply to which model families, in one place. Every evaluation stage of the pipeline runs for
every model of the params' ``models``; a stage whose protocol does not fit the model's family (a causal LM given
to the MC-MLM learning curves) writes its usual output folder with a ``metrics.json`` that says it skipped and
why, instead of failing, and the reports list what each model skipped.

The family is read from the model's config and tokenizer only (:func:`probekit.tokens.family.family_of`), and
only for the protocols that do not apply to every family.

The params' ``runs`` lists the models each paper runs (the paper profile's: oLMpics uncased BERT, ParaRel cased BERT,
CALUM's five families): the pipeline has no stage for a model a paper does not run, and a command run by hand for
one writes the same skipped ``metrics.json`` (each protocol's paper: :mod:`evaluators.protocols`), without reading the
model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Mapping

from evaluators import protocols
from probekit.data.jsonl import loads
from probekit.outputs import atomic
from probekit.scoring import FAMILIES, FAMILY_WORDS


def left_out(protocol: str, alias: str, params) -> str | None:
    """Why ``protocol`` does not run for the model ``alias``: ``params`` (a :class:`probekit.params.ParamsFile`)
    has a ``runs`` list of the protocol's paper without it; None when it runs (no params, or no such list)."""
    if params is None:
        return None
    record = protocols.get(protocol)
    papers = params.protocols_of(alias)
    if record.paper in papers:
        return None
    return (f"{record.title}: {params.label} runs.{record.paper} does not list {alias} (it runs "
            f"{', '.join(papers) or 'no paper'})")


def reason(protocol: str, family: str, model: str) -> str | None:
    """Why ``protocol`` does not apply to ``model`` of ``family``; None when it applies."""
    record = protocols.get(protocol)
    if family in record.families:
        return None
    needs = " or ".join(FAMILY_WORDS[f] for f in record.families)
    return f"{record.title}: for {needs} only; {model} is {FAMILY_WORDS.get(family, family)}"


def applies_to_all(protocol: str) -> bool:
    return set(protocols.get(protocol).families) >= set(FAMILIES)


def check(protocol: str, ref) -> tuple[str | None, str | None]:
    """``(reason, family)`` for the resolved model ``ref`` (:class:`probekit.tokens.refs.ModelRef`): the reason is
    None when ``protocol`` applies. A protocol for every family reads nothing (the family is then None)."""
    if applies_to_all(protocol):
        return None, None
    from probekit.tokens.family import family_of

    family = family_of(ref)
    return reason(protocol, family, ref.name), family


def record(protocol: str, ref, family: str, why: str, device: str | None = None) -> dict:
    """The ``metrics.json`` of a skipped run."""
    return {"skipped": why, "protocol": protocol, "model": ref.name, "model_id": ref.spec,
            "revision": getattr(ref, "revision", None), "family": family, "device": device}


def write_skipped(outs: Iterable[Path], metrics: Mapping) -> None:
    """Each of ``outs`` (a stage's output folders) replaced, atomically, by a folder holding only ``metrics``
    as ``metrics.json``."""
    for out in outs:
        with atomic.atomic_path(out, kind="results") as tmp:
            tmp.mkdir()
            atomic.write_json(tmp / "metrics.json", dict(metrics))


def skip(protocol: str, ref, device: str | None, outs: Iterable[Path], params=None) -> bool:
    """When ``protocol`` does not run for ``ref``: its ``params`` entry leaves the protocol's paper out
    (:func:`left_out`, checked first: nothing of the model is read) or the protocol does not apply to its family.
    Then write the skipped ``metrics.json`` into each of ``outs``, print one line saying so, and return True (the
    command then exits 0); else False."""
    why, family = left_out(protocol, ref.name, params), None
    if why is None:
        why, family = check(protocol, ref)
    if why is None:
        return False
    outs = list(outs)
    write_skipped(outs, record(protocol, ref, family, why, device))
    where = str(outs[0]) + (f" and {len(outs) - 1} more" if len(outs) > 1 else "")
    print(f"skipped {protocol} for {ref.name}: {why} (wrote {where})")
    return True


def is_skipped(metrics) -> bool:
    return isinstance(metrics, Mapping) and isinstance(metrics.get("skipped"), str)


def read_skipped(path: Path) -> dict | None:
    """The skipped record at ``path`` (a metrics.json), else None (a result, or no such file)."""
    try:
        m = loads(Path(path).read_bytes(), str(path))   # NaN or a key twice: refused, not taken for a result
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return m if is_skipped(m) else None


def skipped_lines(records: Iterable[Mapping]) -> list[str]:
    """A report's "Skipped" section: one line per model and protocol (several outputs of one run said once);
    empty when nothing was skipped."""
    seen = {}
    for m in records:
        seen.setdefault((str(m.get("model")), str(m.get("protocol"))), m["skipped"])
    if not seen:
        return []
    return ["## Skipped", "", *(f"- {model}: {protocol} skipped ({why})" for (model, protocol), why in sorted(
        seen.items())), ""]


def with_skipped(text: str, records: Iterable[Mapping]) -> str:
    """A report's ``text`` with its "Skipped" section (:func:`skipped_lines`) at the end; as it is when nothing
    was skipped."""
    lines = skipped_lines(records)
    return text.rstrip("\n") + "\n\n" + "\n".join(lines) if lines else text


def empty_plot(path: Path) -> None:
    """A blank PNG at ``path``: a report's plot when every run skipped its model (the stage's output exists)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(2, 1))
    with atomic.atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=100, metadata={"Software": None})
    plt.close(fig)
