"""The root dataset card of a probekit Hub repo: YAML (``configs`` and ``dataset_info`` as ``push_to_hub`` writes
them, in the Hub's documented card format; the Hub's fields; a ``probekit`` block per config) and a section per
config; parsed back to compare a publish with what the Hub holds; and the whole upload folder written at once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from probekit import atomic
from probekit.hub.export import CARD, Export, package_yaml
from probekit.hub.parquet import write_parquet

TASKS = {"mc_mlm": ["fill-mask", "multiple-choice"], "mc_qa": ["multiple-choice", "question-answering"],
         "cloze_set": ["fill-mask"], "pair_cls": ["text-classification"]}
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
        blocks = dict(block.get("configs") or {})
        infos = _by_config(data.get("dataset_info"))
        extra = {k: v for k, v in _by_config(data.get("configs")).items() if k not in blocks}
        return cls(blocks, infos, dict(block.get("datasets") or {}), dict(block.get("sources") or {}), extra)

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
    papers = package_yaml("papers.yaml")["papers"]
    counts = ", ".join(f"{s} {n}" for s, n in b["counts"].items())
    restricted = f"**yes**: {b['restricted']}" if b.get("restricted") else "no"
    sources = ", ".join(f"[`{s}`](#source-{s}-{d}) (files `{d}`)" for s, d in b["sources"].items())
    template = (f"`{b['template_file']}` (sha256 `{b['templates_sha256']}`)" if b.get("templates_sha256")
                else f"`{b.get('template_file')}`")
    folder = card.datasets.get(b["dataset"], {})
    bib = (papers.get(b.get("paper") or "") or {}).get("bibtex", "").strip()
    cite = f"\nIt reproduces {papers[b['paper']]['name']}:\n\n```bibtex\n{bib}\n```\n" if bib else ""
    note = f"\n{b['note']}\n" if b.get("note") else ""
    return f"""### {name}

| | |
| --- | --- |
| version | `{b['version']}` |
| rows | {counts} |
| licence | {b['licence']} |
| restricted | {_md(restricted)} |
| generator version | {b['generator_version']} |
| template file | {template} |
| templates | {_md(', '.join(f'`{t}`' for t in b['template_ids'])) or '–'} |
| fingerprint | `{b['fingerprint']}` (sha256 of the rows published) |
| dataset folder | `{b['dataset']}` (its meta.json fingerprint `{folder.get('fingerprint')}`) |
| sources | {sources or 'none: synthetic, generated from the templates alone'} |

`load_dataset("{repo_id}", "{name}")`. Construction (the dataset's own card):

{_quote(folder.get('construction') or '')}
{note}{cite}"""


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
    papers = package_yaml("papers.yaml")["papers"]
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
    data.probekit = {"configs": blocks, "datasets": card.datasets, "sources": card.sources}
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
## Sources

{_sources_text(card.sources) or 'None.'}"""
    return str(DatasetCard(f"---\n{data.to_yaml()}\n---\n\n{body}"))


def write_folder(exports: Iterable[Export], out: str | Path, repo_id: str | None = None,
                 on_config: Callable[[Export], None] | None = None) -> Card:
    """Write the whole upload folder (every config's Parquet shards and the README) at ``out``, atomically;
    ``exports`` is consumed one config at a time."""
    out = Path(out)
    card = Card.empty()
    with atomic.atomic_path(out) as tmp:
        tmp.mkdir(parents=True)
        for exp in exports:
            card = card.update(Card.of(exp, write_parquet(exp, tmp)))
            if on_config:
                on_config(exp)
        atomic.write_text(tmp / CARD, render(card, repo_id))
    return card
