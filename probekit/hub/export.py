"""probekit's datasets as one Hugging Face Hub dataset repo: one config per probe variant, found from the dataset
folders' ``meta.json`` ``format`` (one small exporter per format, nothing per probe), Parquet shards in the layout
``Dataset.push_to_hub`` writes (``<config>/<split>-00000-of-00001.parquet``, :mod:`parquet`) and the root dataset card (:mod:`card`).

A config's version is its YAML's semantic version + ``+`` + the first 12 hex of its fingerprint, the sha256 of
exactly the rows published: changing one variant changes only its config.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterable, Mapping


from probekit import yamlfile
from probekit.data.card import papers_of
from probekit.data.jsonl import read_json
from probekit.errors import DataError, UsageError, shown
from probekit.names import LONGEST_CONFIG, check_name

HERE = Path(__file__).resolve().parent
CARD = "README.md"
SPLITS = ("train", "validation", "dev", "test")


@dataclass
class Config:
    """One Hub config: where its rows come from (``load() -> ({split: rows}, template_ids)``), its template file
    (relative to the generators folder) and what the dataset's own card says about it."""

    name: str
    folder: Path
    meta: dict
    load: Callable[[], tuple[dict[str, list[dict]], list[str]]]
    template_file: str | None
    construction: str  # the dataset's (shared by the configs of one folder)
    language: list[str]
    note: str = ""  # what is particular to this config
    role: str = "main"  # main | control | grid (the dataset card's; the lm-eval groups take the main configs)
    citation: str | None = None  # the probe's: a key of probekit/data/papers.yaml or a BibTeX entry; None: none
    templates: dict | None = None  # {template id: text} as the dataset's own card recorded them (None: not recorded)

    @property
    def probe(self) -> str:
        return self.meta["probe"]


@dataclass
class Export:
    """A config's rows as published (every row with every column), and its ``probekit`` block."""

    config: Config
    rows: dict[str, list[dict]]
    block: dict
    sources: dict  # {source: {digest: {license_id, license, files}}}
    dataset: dict  # {folder: {construction, fingerprint}}

    @property
    def name(self) -> str:
        return self.config.name


# --- reading the dataset folders -----------------------------------------------------------------------------

def _read_json(path: Path) -> dict:
    return read_json(path)


@dataclass(frozen=True)
class CardParts:
    """What a dataset's own card tells the Hub card: how the rows were made (the prose before its first table),
    its languages, the folder's role, the probe's citation and the templates' texts (the card's ``probekit``
    block)."""

    construction: str
    language: list[str]
    role: str
    citation: str | None
    templates: dict | None = None


def _card_parts(folder: Path, meta: dict) -> CardParts:
    """The parts of the dataset card of ``folder`` (a card without a ``probekit`` block: the role its meta
    shows, no citation)."""
    from huggingface_hub import DatasetCard

    path = folder / CARD
    if not path.is_file():
        return CardParts("", [], _role(meta, {}), None)
    card = DatasetCard(path.read_text(encoding="utf-8"), ignore_metadata_errors=True)
    lines = []
    for line in card.text.strip().splitlines()[1:]:   # after the "# title" line
        if line.startswith(("|", "```", "Params")):
            break
        lines.append(line.rstrip())
    language = card.data.language or []
    block = card.data.to_dict().get("probekit") or {}
    templates = block.get("templates")
    return CardParts("\n".join(lines).strip(), [language] if isinstance(language, str) else list(language),
                     _role(meta, block), block.get("citation"),
                     {str(k): str(v) for k, v in templates.items()} if isinstance(templates, dict) else None)


def _role(meta: dict, block: dict) -> str:
    if block.get("role"):
        return block["role"]
    if (meta.get("params") or {}).get("mode") == "grid":
        return "grid"
    return "control" if "control" in (meta.get("definition") or {}) else "main"


def _need(meta: dict, folder: Path, *keys: str) -> None:
    missing = [k for k in keys if k not in meta]
    if missing:
        raise DataError(f"{folder / 'meta.json'}: no {', '.join(repr(k) for k in missing)} (format {meta['format']})")


def _suffix(meta: dict) -> str:
    """``-<mode>`` for a dataset generated in another mode than ``sample`` (the grids: ``age_comparison-grid``)."""
    mode = (meta.get("params") or {}).get("mode")
    return f"-{mode}" if mode and mode != "sample" else ""


def _mc(folder: Path, meta: dict) -> list[Config]:
    """``mc_mlm``/``mc_qa``: a variant folder, one config (``<probe>`` for ``original``, else ``<probe>-<variant>``)."""
    from probekit.probes.dataset import read_examples

    _need(meta, folder, "variant", "splits")
    splits = list(meta["splits"])

    def load():
        rows = {s: read_examples(folder / f"{s}.jsonl") for s in splits}
        ids = sorted({str(t) for s in meta["splits"].values() for t in s.get("template_ids", [])})
        return rows, ids

    probe, variant = meta["probe"], meta["variant"]
    name = (probe if variant == "original" else f"{probe}-{variant}") + _suffix(meta)
    card = _card_parts(folder, meta)
    return [Config(name, folder, meta, load, f"{probe}/probe.yaml", card.construction, card.language,
                   role=card.role, citation=card.citation, templates=card.templates)]


def _pairs(folder: Path, meta: dict) -> list[Config]:
    """``pair_cls`` (CALUM): a task folder, one config per variant ``<probe>-<task>-<variant>``."""
    from probekit.data.pairs import read_pairs

    _need(meta, folder, "counts")
    card = _card_parts(folder, meta)
    task = meta.get("task") or folder.name
    out = []
    for variant, counts in meta["counts"].items():
        style = (meta.get("styles") or {}).get(variant)

        def load(variant=variant, splits=tuple(counts), style=style):
            return {s: read_pairs(folder, variant, s) for s in splits}, [style] if style else []

        out.append(Config(f"{meta['probe']}-{task}-{variant}", folder, meta, load, f"{meta['probe']}/probe.yaml",
                          card.construction, card.language,
                          f"Variant `{variant}`" + (f": style `{style}`." if style else "."),
                          role=card.role, citation=card.citation))
    return out


def _cloze(folder: Path, meta: dict) -> list[Config]:
    """``cloze_set`` (ParaRel): one config per relation ``<probe>-<relation>``, split ``test``, one row per
    (pattern, tuple) query with the relation's candidates."""
    from probekit.data.cloze import queries, read_cloze_set

    _need(meta, folder, "relations")
    data = lru_cache(maxsize=1)(lambda: read_cloze_set(folder))
    card = _card_parts(folder, meta)
    out = []
    for relation, info in meta["relations"].items():
        def load(relation=relation):
            cs = data()
            q = queries(cs, relation)
            patterns = {p["pattern_id"]: p["pattern"] for p in cs.patterns if p["relation"] == relation}
            subjects = {t["tuple_id"]: t["subject"] for t in cs.tuples if t["relation"] == relation}
            candidates = list(q.candidates)
            rows = [{"id": i, "relation": relation, "pattern_id": p, "tuple_id": t, "sub_label": subjects[t],
                     "obj_label": gold, "pattern": patterns[p], "query": stem, "candidates": candidates}
                    for i, p, t, gold, stem in zip(q.ids, q.pattern_ids, q.tuple_ids, q.gold, q.stems)]
            return {"test": rows}, [str(p) for p in patterns]

        note = (f"Relation `{relation}` ({info.get('class')}): {info.get('patterns')} patterns x {info.get('tuples')} "
                f"tuples, one row per query, answered from its {info.get('candidates')} candidates (`candidates`).")
        out.append(Config(f"{meta['probe']}-{relation}", folder, meta, load,
                          f"{meta['probe']}/patterns/{relation}.yaml", card.construction, card.language, note,
                          role=card.role, citation=card.citation))
    return out


EXPORTERS: dict[str, Callable[[Path, dict], list[Config]]] = {
    "mc_mlm": _mc, "mc_qa": _mc, "pair_cls": _pairs, "cloze_set": _cloze}


def selected(name: str, probe: str | None, wanted: Iterable[str] | None) -> bool:
    """Whether a config is chosen by ``--probes`` (probe or config names, globs; None: every config)."""
    return wanted is None or any(fnmatch.fnmatchcase(name, w) or (probe is not None and fnmatch.fnmatchcase(probe, w))
                                 for w in wanted)


def discover(data: str | Path, probes: Iterable[str] | None = None) -> list[Config]:
    """Every config of the dataset folders under ``data`` (a folder whose ``meta.json`` has a known ``format``;
    others, like cached features, are skipped), sorted by name; ``probes``: probe or config names (globs)."""
    data = Path(data)
    if not data.is_dir():
        raise UsageError(f"--data {data}: no such folder")
    configs: dict[str, Config] = {}
    datasets: list[Path] = []
    for meta_path in sorted(data.rglob("meta.json")):
        folder = meta_path.parent
        if any(d in folder.parents for d in datasets):
            continue
        meta = _read_json(meta_path)
        exporter = EXPORTERS.get(meta.get("format") or "")
        if exporter is None:
            continue
        for field in ("probe", "license", "definition_version"):
            if field not in meta:
                raise DataError(f"{meta_path}: no '{field}'")
        datasets.append(folder)
        for config in exporter(folder, meta):
            check_name(config.name, f"{meta_path}: the Hub config name it makes", DataError, LONGEST_CONFIG)
            if config.name in configs:
                raise DataError(f"config {config.name}: built from both {configs[config.name].folder} and {folder}")
            configs[config.name] = config
    chosen = sorted(configs.values(), key=lambda c: c.name)
    if probes:
        wanted = list(probes)
        unknown = [w for w in wanted if not any(selected(c.name, c.probe, [w]) for c in chosen)]
        if unknown:
            raise UsageError(f"--probes {','.join(unknown)}: no such probe or config under {data} (probes: "
                             f"{', '.join(sorted({c.probe for c in chosen})) or 'none'})")
        chosen = [c for c in chosen if selected(c.name, c.probe, wanted)]
    if not chosen:
        raise UsageError(f"--data {data}: no dataset folders (a meta.json with format "
                         f"{', '.join(EXPORTERS)}) here")
    return chosen


# --- versions, licences, fingerprints -------------------------------------------------------------------------

_SEMVER = re.compile(r"^(\d+)(?:\.(\d+))?(?:\.(\d+))?$")


def semantic_version(value, where: str) -> str:
    """``MAJOR[.MINOR[.PATCH]]`` as ``MAJOR.MINOR.PATCH``; anything else is an error naming ``where``."""
    m = _SEMVER.match(str(value).strip()) if isinstance(value, (int, str)) and not isinstance(value, bool) else None
    if not m:
        raise DataError(f"{where}: version {shown(value)} is not a semantic version MAJOR[.MINOR[.PATCH]]")
    return ".".join(str(int(g or 0)) for g in m.groups())


def fingerprint(rows: Mapping[str, list[dict]]) -> str:
    """sha256 of the rows published: per split (sorted), its name then one canonical JSON line per row."""
    h = hashlib.sha256()
    for split in sorted(rows):
        h.update(json.dumps(split).encode() + b"\n")
        for row in rows[split]:
            h.update(json.dumps(row, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")
    return h.hexdigest()


@lru_cache(maxsize=None)
def package_yaml(name: str) -> dict:
    """A data file shipped beside this module (``licence_policy.yaml``)."""
    return yamlfile.read(HERE / name)


def licence_policy() -> dict:
    return package_yaml("licence_policy.yaml")["sources"]


def restriction(meta: dict) -> str | None:
    """Why a config may not be published for any use (a non-commercial or unlicensed source), or None."""
    policy, reasons = licence_policy(), []
    for name in sorted(meta.get("sources") or {}):
        entry = policy.get(name)
        if entry is None:
            reasons.append(f"{name}: no licence decision in probekit/hub/licence_policy.yaml")
        elif not entry.get("commercial"):
            reasons.append(f"{name}: {entry['why']}")
    if not reasons and "-nc" in str(meta.get("license")):
        reasons.append(f"licence {meta['license']} is non-commercial")
    return "; ".join(reasons) or None


def paper(citation: str | None) -> str | None:
    """The key of a config's paper in ``probekit/data/papers.yaml`` (None: a probe citing none, or its own
    BibTeX)."""
    return citation if citation in papers_of() else None


def _generators_dir() -> Path | None:
    from probekit.params import generators_folder

    return generators_folder()


def _template(rel: str | None) -> tuple[str | None, str | None]:
    """``generators/<rel>`` and the sha256 of its bytes (None when this install has no such file)."""
    root = _generators_dir()
    if rel is None or root is None or not (root / rel).is_file():
        return (f"generators/{rel}" if rel else None), None
    return f"generators/{rel}", hashlib.sha256((root / rel).read_bytes()).hexdigest()


def _source_digest(source: dict) -> str:
    return hashlib.sha256(json.dumps(source.get("files") or {}, sort_keys=True).encode()).hexdigest()[:16]


def _complete(rows: list[dict]) -> list[dict]:
    """Every row with every column (first-seen order), a missing one as None: what Parquet holds."""
    columns = list(dict.fromkeys(k for r in rows for k in r))
    return rows if all(len(r) == len(columns) for r in rows) else [{c: r.get(c) for c in columns} for r in rows]


def _split_key(split: str):
    return (SPLITS.index(split), "") if split in SPLITS else (len(SPLITS), split)


def export(config: Config, data_root: Path) -> Export:
    """Load a config's rows and build its ``probekit`` block."""
    split_rows, template_ids = config.load()
    rows = {s: _complete(split_rows[s]) for s in sorted(split_rows, key=_split_key) if split_rows[s]}
    fp, meta = fingerprint(rows), config.meta
    template_file, template_sha = _template(config.template_file)
    where = f"{config.folder / 'meta.json'} definition_version (the version of {template_file})"
    sources = meta.get("sources") or {}
    dataset = (config.folder.relative_to(data_root).as_posix() if config.folder.is_relative_to(data_root)
               else config.folder.name)
    digests = {name: _source_digest(s) for name, s in sorted(sources.items())}
    block = {
        "version": f"{semantic_version(meta['definition_version'], where)}+{fp[:12]}",
        "probe": config.probe,
        "fingerprint": fp,
        "counts": {s: len(r) for s, r in rows.items()},
        "templates_sha256": template_sha,
        "template_ids": list(template_ids),
        **({"template_texts": {t: config.templates[t] for t in template_ids if t in config.templates}}
           if config.templates else {}),
        "generator_version": str(meta.get("generator_version")),
        "licence": meta["license"],
        "restricted": restriction(meta),
        "sources": digests,
        "format": meta["format"],
        "dataset": dataset,
        "paper": paper(config.citation),
        **({"bibtex": config.citation.strip()} if config.citation and not paper(config.citation) else {}),
        "role": config.role,
        "language": config.language,
        **({"note": config.note} if config.note else {}),
    }
    table = {name: {digests[name]: {"license_id": s.get("license_id"),
                                   "license": " ".join(str(s.get("license") or "").split()),
                                   "files": dict(sorted((s.get("files") or {}).items()))}}
             for name, s in sources.items()}
    first = next((r[0] for r in rows.values() if r), None)
    folder = {dataset: {"fingerprint": meta.get("fingerprint"), "construction": config.construction,
                        **({"example": json.dumps(first, ensure_ascii=False, default=str)} if first else {})}}
    return Export(config, rows, json.loads(json.dumps(block)), table, folder)
