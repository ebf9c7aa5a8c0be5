"""The one dataset card template, for every dataset folder (a probe variant, ParaRel's cloze set, a CALUM pair
set), rendered through ``huggingface_hub.DatasetCard``: front matter (the Hub's fields and a ``probekit`` block
with the folder's role and citation), how the rows were made, the family's tables, a field glossary, an example
row, the params, the sources with their licences, the fingerprint and what to cite."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import yaml

from probekit import yamlfile
from probekit.errors import DataError, shown

ROLES = ("main", "control", "grid")   # what a dataset folder is to its probe (the lm-eval groups take the main ones only)
PAPERS = Path(__file__).resolve().parent / "papers.yaml"

TEMPLATE = """---
{{ card_data }}
---
# {{ title }}

{{ summary }}
{% if body %}
{{ body }}
{% endif %}{% if fields %}
| field | meaning |
| --- | --- |
{% for name, meaning in fields.items() %}| `{{ name }}` | {{ meaning }} |
{% endfor %}{% endif %}{% if example %}
An example row (`{{ example_file }}`):

```json
{{ example }}
```
{% endif %}
Params (`{{ section }}` section: the probe's defaults with the params file over them):

```yaml
{{ params }}
```

{{ sources }}

Fingerprint `{{ fingerprint }}` (sha256 of the params and of the files written).
{% if citation %}
Cite:

```bibtex
{{ citation }}
```
{% endif %}"""


@dataclass(frozen=True)
class CardText:
    """What a dataset family says on its card besides ``meta.json``: the Hub's ``pretty_name`` and
    ``task_categories``, ``configs`` (None: the Hub's default), the title, how the rows were made (``summary``,
    prose: the Hub card quotes it), ``body`` (the family's tables), the ``fields`` glossary, an ``example`` row
    from ``example_file``, the params ``section``, the folder's ``role`` and its ``citation`` (see
    :func:`citation`; None: none)."""

    pretty_name: str
    task_categories: tuple[str, ...]
    title: str
    summary: str
    section: str
    role: str = "main"
    citation: str | None = None
    body: str = ""
    fields: Mapping[str, str] = field(default_factory=dict)
    example: Mapping | None = None
    example_file: str = ""
    configs: list | None = None
    language: tuple[str, ...] = ("en",)
    templates: Mapping[str, str] | None = None
    """The text of each template the rows were filled from, by id (None: none; written in the ``probekit`` block,
    so that a publish can show a reworded template's old and new text)."""


SHOWN_VALUES = 10
"""The values a card lists of a long count (the most frequent first); the rest counted as "+N more"."""


def top_counts(counts: Mapping[str, int], shown: int = SHOWN_VALUES) -> str:
    """``older: 250, younger: 250``; a count of more than ``shown`` values: the ``shown`` most frequent (ties by
    value), then ``+N more`` (``meta.json`` has them all)."""
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0])))
    if len(ranked) <= shown:
        ranked = list(counts.items())
    text = ", ".join(f"{k}: {v}" for k, v in ranked[:shown])
    rest = len(ranked) - shown
    return text + (f", +{rest} more ({sum(v for _, v in ranked[shown:])} rows; all in `meta.json`)" if rest > 0
                   else "")


def citation(ref: str | None, where: str) -> str | None:
    """The BibTeX of a probe's ``citation``: a paper of ``probekit/data/papers.yaml`` by its key, or a BibTeX
    entry written out (``@...``); None: the probe asks for no citation. ``where``: the file and field, for errors."""
    if ref is None:
        return None
    papers = papers_of()
    if ref in papers:
        return papers[ref]["bibtex"].strip()
    if not isinstance(ref, str) or not ref.lstrip().startswith("@"):
        raise DataError(f"{where}: must be a BibTeX entry (@...) or one of {', '.join(papers)}, got {shown(ref)}")
    return ref.strip()


def _bibtex_key(entry: str) -> str:
    match = re.match(r"\s*@\w+\s*\{\s*([^,\s]+)", entry)
    return match.group(1) if match else entry.strip()


def papers_of() -> dict:
    """The papers probekit reproduces, by key: ``{name, bibtex}``."""
    return yamlfile.read(PAPERS)["papers"]


def source_list(sources: Mapping[str, Mapping]) -> str:
    """One markdown bullet per source: ``- `name`: licence``, and the cap a run accepted for it
    (:mod:`probekit.sources.capped`)."""
    return "\n".join(f"- `{name}`: {s['license']}" + (f" (⚠ capped, accepted: {s['capped']['cap']})"
                                                     if isinstance(s.get("capped"), Mapping) else "")
                     for name, s in sources.items())


def render(text: CardText, meta: Mapping) -> str:
    """The README of a dataset folder whose ``meta.json`` is ``meta`` (its licence, params, sources and
    fingerprint filled in by the writer)."""
    from huggingface_hub import DatasetCard, DatasetCardData

    if text.role not in ROLES:
        raise DataError(f"card of {text.title}: role must be one of {', '.join(ROLES)}, got {shown(text.role)}")
    data = DatasetCardData(pretty_name=text.pretty_name, license=meta["license"], language=list(text.language),
                           task_categories=list(text.task_categories))
    if text.configs is not None:
        data.configs = text.configs
    data.probekit = {"role": text.role, "citation": text.citation,
                     **({"templates": dict(text.templates)} if text.templates else {})}
    sources = meta.get("sources") or {}
    cites = {}   # BibTeX key -> entry: the probe's first, then its sources' (a source that is the paper once)
    for entry in [citation(text.citation, f"card of {text.title}: citation"),
                  *(s.get("citation") for s in sources.values())]:
        if entry:
            cites.setdefault(_bibtex_key(entry), entry.strip())
    listed = ("Synthetic: generated from the templates alone, no source data." if not sources
              else "Sources:\n" + source_list(sources))
    params = yaml.safe_dump(meta["params"], sort_keys=False, default_flow_style=None).strip()
    example = json.dumps(text.example, ensure_ascii=False) if text.example else ""
    card = DatasetCard.from_template(
        data, template_str=TEMPLATE, title=text.title, summary=text.summary.strip(), body=text.body.strip(),
        fields=dict(text.fields), example=example, example_file=text.example_file, section=text.section,
        params=params, sources=listed, fingerprint=meta["fingerprint"], citation="\n".join(cites.values()))
    return str(card).rstrip("\n") + "\n"
