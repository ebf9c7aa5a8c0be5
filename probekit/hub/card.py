"""The root dataset card of a probekit Hub repo: YAML (``configs`` and ``dataset_info`` as ``push_to_hub`` writes
them, in the Hub's documented card format; the Hub's fields; a ``probekit`` block per config) and a section per
config; parsed back to compare a publish with what the Hub holds; and the whole upload folder written at once."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from probekit.outputs import atomic
from probekit.data.card import papers_of
from probekit.hub import changelog
from probekit.hub.export import CARD, Export
from probekit.hub.parquet import write_parquet

TASKS = {"mc_mlm": ["fill-mask", "multiple-choice"], "mc_qa": ["multiple-choice", "question-answering"],
         "cloze_set": ["fill-mask"], "pair_cls": ["text-classification"]}
FIELDS = {  # what a row of each family holds, as published
    "mc_mlm": {"id": "content hash of the row", "question": "`stem` (the text, one `[MASK]`) and `choices` "
               "(`label`, `text`)", "answerKey": "the label of the gold choice", "probe": "the probe",
               "variant": "the variant", "template_id": "the template the stem was filled from",
               "args": "the slot values", "source_id": "a control row: the row it was derived from"},
    "mc_qa": {"id": "content hash of the row", "question": "`stem` (a question) and `choices` (`label`, `text`)",
              "answerKey": "the label of the gold choice", "probe": "the probe", "variant": "the variant",
              "template_id": "the template the question was filled from", "args": "the slot values"},
    "cloze_set": {"id": "`<tuple_id>/<pattern_id>`", "relation": "the Wikidata relation", "pattern_id": "the "
                  "pattern", "tuple_id": "the fact", "sub_label": "the subject", "obj_label": "the gold object",
                  "pattern": "the pattern, `[X]` the subject and `[Y]` the object", "query": "the pattern "
                  "filled: the subject at `[X]`, `[MASK]` at `[Y]`", "candidates": "the relation's objects, "
                  "the answers a query is scored over"},
    "pair_cls": {"pair_id": "the example, shared by its variants", "variant": "the variant", "sentence1": "the "
                 "first segment as read (indicator and text)", "sentence2": "the second segment",
                 "label": "the gold label (null: unlabelled test)"},
}
SHARED, SHARED_KEYS = "shared", ("format", "generator_version", "licence", "restricted", "sources", "paper",
                                   "bibtex", "language", "role")
SIZES = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
         (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M")]


@dataclass
class Card:
    """What the root card is made of: per config its ``probekit`` block and ``dataset_info`` entry; the dataset
    folders (construction rule, fingerprint) and the sources (licence, file checksums) the configs name."""

    blocks: dict[str, dict]
    infos: dict  # {config: its dataset_info entry (config_name, features, splits, sizes)}
    datasets: dict  # {folder: {construction, fingerprint}}
    sources: dict  # {source: {digest: {license_id, license, files}}}
    extra_configs: dict | None = None  # {config: its configs entry}: the repo's configs probekit did not write

    @classmethod
    def empty(cls) -> Card:
        return cls({}, {}, {}, {})

    @classmethod
    def parse(cls, text: str | None) -> Card:
        """The parts of a card written by :func:`render` (an empty card for None; a foreign card's configs are
        kept as they are)."""
        if not text:
            return cls.empty()
        from huggingface_hub import DatasetCard

        data = DatasetCard(text, ignore_metadata_errors=True).data.to_dict()
        block = data.get("probekit") or {}
        shared = {k: d.get(SHARED, {}) for k, d in (block.get("datasets") or {}).items()}
        blocks = {n: {**shared.get(b.get("dataset"), {}), **b} for n, b in (block.get("configs") or {}).items()}
        infos = _by_config(data.get("dataset_info"))
        extra = {k: v for k, v in _by_config(data.get("configs")).items() if k not in blocks}
        datasets = {k: {f: v for f, v in d.items() if f != SHARED} for k, d in (block.get("datasets") or {}).items()}
        return cls(blocks, infos, datasets, dict(block.get("sources") or {}), extra)

    @classmethod
    def of(cls, exp: Export, info=None) -> Card:
        """The card of one exported config (``info``: its ``dataset_info`` entry, once its Parquet files are
        written)."""
        return cls({exp.name: exp.block}, {exp.name: info} if info is not None else {}, exp.dataset, exp.sources)

    def update(self, new: Card) -> Card:
        """This card with ``new``'s configs put in or replaced; dataset folders and sources that no config names
        any more are dropped."""
        blocks = dict(sorted({**self.blocks, **new.blocks}.items()))
        folders = {**self.datasets, **new.datasets}
        sources = {n: {**self.sources.get(n, {}), **new.sources.get(n, {})} for n in {*self.sources, *new.sources}}
        used = {(n, d) for b in blocks.values() for n, d in (b.get("sources") or {}).items()}
        return Card(blocks, {**self.infos, **new.infos},
                    {k: folders[k] for k in sorted({b["dataset"] for b in blocks.values()}) if k in folders},
                    {n: {d: e for d, e in sorted(v.items()) if (n, d) in used} for n, v in sorted(sources.items())
                     if any((n, d) in used for d in v)},
                    {k: v for k, v in (self.extra_configs or {}).items() if k not in new.blocks})


def _compact(blocks: dict[str, dict], datasets: dict[str, dict]) -> dict:
    """The ``configs`` and ``datasets`` of the card's ``probekit`` block: what the configs of one dataset folder
    share (:data:`SHARED_KEYS`, as its first config has them) written once, under the folder's ``shared``."""
    folders = {k: dict(v) for k, v in datasets.items()}
    configs = {}
    for name, b in blocks.items():
        folder = folders.get(b["dataset"])
        if folder is None:
            configs[name] = b
            continue
        shared = folder.setdefault(SHARED, {k: b[k] for k in SHARED_KEYS if k in b})
        configs[name] = {k: v for k, v in b.items() if k not in shared or shared[k] != v}
    return {"configs": configs, "datasets": folders}


def _by_config(entries) -> dict[str, dict]:
    """A card's ``dataset_info`` or ``configs`` (a list of entries, or one entry) by config name (``default``
    when an entry has none), each entry without its ``config_name``."""
    entries = [entries] if isinstance(entries, dict) else entries if isinstance(entries, list) else []
    return {e.get("config_name", "default"): {k: v for k, v in e.items() if k != "config_name"}
            for e in entries if isinstance(e, dict)}


def _entries(by_config: dict[str, dict]) -> list[dict]:
    """``{config: entry}`` as the card lists them, sorted by config name, ``config_name`` first."""
    return [{"config_name": name, **by_config[name]} for name in sorted(by_config)]


def _dataset_info(infos: dict[str, dict]) -> list[dict] | dict:
    """The ``dataset_info`` field as ``push_to_hub`` writes it: one entry per config, or the entry alone when
    there is one config (without ``config_name`` when that is ``default``)."""
    entries = _entries(infos)
    if len(entries) != 1:
        return entries
    return entries[0] if entries[0]["config_name"] != "default" else {k: v for k, v in entries[0].items()
                                                                      if k != "config_name"}


def _size_category(n: int) -> str:
    return next((label for limit, label in SIZES if n < limit), "n>1T")


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def _quote(text: str) -> str:
    return "\n".join("> " + line if line else ">" for line in text.splitlines()) or "> (no card)"


def _section(name: str, b: dict, card: Card, repo_id: str) -> str:
    papers = papers_of()
    counts = ", ".join(f"{s} {n}" for s, n in b["counts"].items())
    restricted = f"**yes**: {b['restricted']}" if b.get("restricted") else "no"
    sources = ", ".join(f"[`{s}`](#source-{s}-{d}) (files `{d}`)" for s, d in b["sources"].items())
    folder = card.datasets.get(b["dataset"], {})
    if b.get("paper") in papers:
        cite = f"\nIt reproduces {papers[b['paper']]['name']} (cited below).\n"
    else:
        cite = f"\nCite:\n\n```bibtex\n{b['bibtex']}\n```\n" if b.get("bibtex") else ""
    note = f"\n{b['note']}\n" if b.get("note") else ""
    tag = changelog.tag(name, b["version"])
    changes = changelog.table(name, b.get(changelog.KEY) or [], b.get("role") or "main")
    return f"""### {name}

| | |
| --- | --- |
| version | `{b['version']}` |
| tag | `{tag}` (the Hub revision of this version) |
| role | {b.get('role', 'main')} |
| rows | {counts} |
| licence | {b['licence']} |
| restricted | {_md(restricted)} |
| generator version | {b['generator_version']} |
| templates | {_md(', '.join(f'`{t}`' for t in b['template_ids'])) or '–'} (sha256 `{b.get('templates_sha256')}`) |
| fingerprint | `{b['fingerprint']}` (sha256 of the rows published) |
| dataset | [{b['dataset']}](#dataset-{_anchor(b['dataset'])}) (fingerprint `{folder.get('fingerprint')}`) |
| sources | {sources or 'none: synthetic, generated from the templates alone'} |

`load_dataset("{repo_id}", "{name}")`; this version: `load_dataset("{repo_id}", "{name}", revision="{tag}")`.
{note}{cite}{changes and chr(10) + changes}"""


def _anchor(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _datasets_text(card: Card) -> str:
    """Each dataset folder once: how its rows were made (its own card's words), its fields and an example row."""
    out = []
    for folder, d in card.datasets.items():
        formats = {b.get("format") for b in card.blocks.values() if b["dataset"] == folder}
        fields = next((FIELDS[f] for f in formats if f in FIELDS), {})
        glossary = "\n".join(f"| `{k}` | {v} |" for k, v in fields.items())
        example = f"\n\nAn example row:\n\n```json\n{d['example']}\n```" if d.get("example") else ""
        out.append(f"""### Dataset {folder} <a name="dataset-{_anchor(folder)}"></a>

{_quote(d.get('construction') or '')}

| field | meaning |
| --- | --- |
{glossary}{example}
""")
    return "\n".join(out)


def _citations(card: Card) -> str:
    papers = papers_of()
    keys = sorted({b["paper"] for b in card.blocks.values() if b.get("paper") in papers})
    return "\n".join(f"{papers[k]['name']}:\n\n```bibtex\n{papers[k]['bibtex'].strip()}\n```\n" for k in keys)


def _sources_text(sources: dict) -> str:
    out = []
    for name, versions in sources.items():
        for digest, s in versions.items():
            files = "\n".join(f"| `{f}` | `{h}` |" for f, h in s["files"].items())
            out.append(f"""### Source {name} ({digest}) <a name="source-{name}-{digest}"></a>

Licence: {s.get('license') or s.get('license_id')}

<details><summary>{len(s['files'])} files, sha256</summary>

| file | sha256 |
| --- | --- |
{files}

</details>
""")
    return "\n".join(out)


def render(card: Card, repo_id: str | None = None) -> str:
    """The root README: YAML header (``configs`` and ``dataset_info`` as ``push_to_hub`` writes them, the Hub
    fields, the ``probekit`` block) and one section per config."""
    from huggingface_hub import DatasetCard, DatasetCardData

    repo_id, blocks = repo_id or "ORG/NAME", card.blocks
    licences = sorted({b["licence"] for b in blocks.values()})
    papers = papers_of()
    names = sorted({papers[b["paper"]]["name"] for b in blocks.values() if b.get("paper") in papers})
    family = ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else "".join(names) or "probe"
    total = sum(n for b in blocks.values() for n in b["counts"].values())
    data = DatasetCardData(
        pretty_name=f"probekit: {family} probes",
        license=licences,
        language=sorted({lang for b in blocks.values() for lang in b.get("language") or []}) or None,
        task_categories=sorted({t for b in blocks.values() for t in TASKS.get(b.get("format"), [])}),
        size_categories=[_size_category(total)],
        source_datasets=sorted({f"extended|{s}" for b in blocks.values() for s in b["sources"]}
                               | ({"original"} if any(not b["sources"] for b in blocks.values()) else set())),
        tags=["probing", "language-models", "probekit"],
    )
    if "other" in licences:
        data.license_name, data.license_link = "per-config", "README.md"
    data.probekit = {**_compact(blocks, card.datasets), "sources": card.sources}
    configs = {**(card.extra_configs or {}),
               **{name: {"data_files": [{"split": s, "path": f"{name}/{s}-*"} for s in b["counts"]]}
                  for name, b in blocks.items()}}
    infos = {k: {n: v for n, v in card.infos[k].items() if n != "config_name"} for k in configs if k in card.infos}
    if infos:
        data.dataset_info = _dataset_info(infos)
    data.configs = _entries(configs)
    table = "\n".join(f"| [{n}](#{n.lower()}) | `{b['version']}` | "
                      f"{', '.join(f'{s} {c}' for s, c in b['counts'].items())} | {b['licence']} | "
                      f"{'**yes**' if b.get('restricted') else 'no'} |" for n, b in blocks.items())
    body = f"""# probekit: {family} probes

Probe datasets generated by probekit from their knowledge sources, one config per probe and variant. A
config's version is its probe definition's semantic version + `+` + the first 12 hex digits of its fingerprint
(the sha256 of exactly the rows published), so a change to one variant changes only its config.

```python
from datasets import load_dataset
ds = load_dataset("{repo_id}", "{next(iter(blocks), 'CONFIG')}")
```

A config marked *restricted* is built from a source that is non-commercial or has no licence: its section
says why, and each source's licence is below. Not legal advice.

| config | version | rows | licence | restricted |
| --- | --- | --- | --- | --- |
{table}

## Configs

{chr(10).join(_section(n, b, card, repo_id) for n, b in blocks.items())}
## Datasets

{_datasets_text(card)}
## Papers

{_citations(card) or 'None.'}
## Sources

{_sources_text(card.sources) or 'None.'}"""
    return str(DatasetCard(f"---\n{data.to_yaml()}\n---\n\n{body}"))


def write_folder(exports: Iterable[Export], out: str | Path, repo_id: str | None = None,
                 on_config: Callable[[Export], None] | None = None,
                 previous: changelog.Previous | None = None) -> Card:
    """Write the whole upload folder (every config's Parquet shards and the README) at ``out``, atomically;
    ``exports`` is consumed one config at a time. Each config's "Changes" are those of ``previous`` (an earlier
    dry-run folder's card and rows) and, when its fingerprint changed, a new entry counted against its rows;
    without ``previous`` every config is "first published"."""
    out = Path(out)
    card = Card.empty()
    old = previous.card if previous is not None else Card.empty()
    with atomic.atomic_path(out, kind="dry-run") as tmp:
        tmp.mkdir(parents=True)
        for exp in exports:
            block = changelog.with_history(exp.block, changelog.history(
                exp.block, old.blocks.get(exp.name), lambda: exp.rows,
                lambda: previous.rows(exp.name) if previous is not None else None))
            card = card.update(Card({exp.name: block}, {exp.name: write_parquet(exp, tmp)}, exp.dataset,
                                    exp.sources))
            if on_config:
                on_config(exp)
        atomic.write_text(tmp / CARD, render(card, repo_id))
    return card
