"""probekit's datasets as one Hugging Face Hub dataset repo: one config per probe variant, found from the dataset
folders' ``meta.json`` ``format`` (one small exporter per format, nothing per probe), Parquet shards in the layout
``Dataset.push_to_hub`` writes (``<config>/<split>-00000-of-00001.parquet``) and the root dataset card (``configs``,
``dataset_info``, licences, a ``probekit`` block per config: version, fingerprint, counts, templates, sources).

A config's version is its YAML's semantic version + ``+`` + the first 12 hex of its fingerprint, the sha256 of
exactly the rows published: changing one variant changes only its config.
"""

from __future__ import annotations

import fnmatch
import hashlib
import importlib.util
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterable, Mapping

import yaml

from . import atomic
from .errors import DataError, UsageError

HERE = Path(__file__).resolve().parent
CARD = "README.md"
SPLITS = ("train", "validation", "dev", "test")
TASKS = {"mc_mlm": ["fill-mask", "multiple-choice"], "mc_qa": ["multiple-choice", "question-answering"],
         "cloze_set": ["fill-mask"], "pair_cls": ["text-classification"]}
SIZES = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
         (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M")]


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
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not valid JSON: {exc}") from None


def _card_parts(folder: Path) -> tuple[str, list[str]]:
    """The construction rule (the prose of the dataset's own card before its first table) and its languages."""
    from huggingface_hub import DatasetCard

    path = folder / CARD
    if not path.is_file():
        return "", []
    card = DatasetCard(path.read_text(encoding="utf-8"), ignore_metadata_errors=True)
    lines = []
    for line in card.text.strip().splitlines()[1:]:   # after the "# title" line
        if line.startswith(("|", "```", "Params")):
            break
        lines.append(line.rstrip())
    language = card.data.language or []
    return "\n".join(lines).strip(), [language] if isinstance(language, str) else list(language)


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
    from .probe_dataset import read_examples

    _need(meta, folder, "variant", "splits")
    splits = list(meta["splits"])

    def load():
        rows = {s: read_examples(folder / f"{s}.jsonl") for s in splits}
        ids = sorted({str(t) for s in meta["splits"].values() for t in s.get("template_ids", [])})
        return rows, ids

    probe, variant = meta["probe"], meta["variant"]
    name = (probe if variant == "original" else f"{probe}-{variant}") + _suffix(meta)
    construction, language = _card_parts(folder)
    return [Config(name, folder, meta, load, f"{probe}.yaml", construction, language)]


def _pairs(folder: Path, meta: dict) -> list[Config]:
    """``pair_cls`` (CALUM): a task folder, one config per variant ``<probe>-<task>-<variant>``."""
    from .pair_dataset import read_pairs

    _need(meta, folder, "counts")
    construction, language = _card_parts(folder)
    task = meta.get("task") or folder.name
    out = []
    for variant, counts in meta["counts"].items():
        def load(variant=variant, splits=tuple(counts)):
            style = (meta.get("styles") or {}).get(variant)
            return {s: read_pairs(folder, variant, s) for s in splits}, [style] if style else []

        style = (meta.get("styles") or {}).get(variant)
        out.append(Config(f"{meta['probe']}-{task}-{variant}", folder, meta, load, f"{meta['probe']}.yaml",
                          construction, language, f"Variant `{variant}`" + (f": style `{style}`." if style else ".")))
    return out


def _cloze(folder: Path, meta: dict) -> list[Config]:
    """``cloze_set`` (ParaRel): one config per relation ``<probe>-<relation>``, split ``test``, one row per
    (pattern, tuple) query with the relation's candidates."""
    from .cloze_dataset import queries, read_cloze_set

    _need(meta, folder, "relations")
    data = lru_cache(maxsize=1)(lambda: read_cloze_set(folder))
    construction, language = _card_parts(folder)
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
        out.append(Config(f"{meta['probe']}-{relation}", folder, meta, load, f"{meta['probe']}/{relation}.yaml",
                          construction, language, note))
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
        raise DataError(f"{where}: version {value!r} is not a semantic version MAJOR[.MINOR[.PATCH]]")
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
def _yaml_file(name: str) -> dict:
    return yaml.safe_load((HERE / name).read_text(encoding="utf-8"))


def licence_policy() -> dict:
    return _yaml_file("licence_policy.yaml")["sources"]


def restriction(meta: dict) -> str | None:
    """Why a config may not be published for any use (a non-commercial or unlicensed source), or None."""
    policy, reasons = licence_policy(), []
    for name in sorted(meta.get("sources") or {}):
        entry = policy.get(name)
        if entry is None:
            reasons.append(f"{name}: no licence decision in probekit/licence_policy.yaml")
        elif not entry.get("commercial"):
            reasons.append(f"{name}: {entry['why']}")
    if not reasons and "-nc" in str(meta.get("license")):
        reasons.append(f"licence {meta['license']} is non-commercial")
    return "; ".join(reasons) or None


def paper(meta: dict) -> str | None:
    p = _yaml_file("papers.yaml")
    return p["by_probe"].get(meta["probe"]) or p["by_format"].get(meta.get("format"))


def _generators_dir() -> Path | None:
    spec = importlib.util.find_spec("generators")
    return Path(list(spec.submodule_search_locations)[0]) if spec and spec.submodule_search_locations else None


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
        "template_file": template_file,
        "templates_sha256": template_sha,
        "template_ids": list(template_ids),
        "generator_version": str(meta.get("generator_version")),
        "licence": meta["license"],
        "restricted": restriction(meta),
        "sources": digests,
        "format": meta["format"],
        "dataset": dataset,
        "paper": paper(meta),
        "language": config.language,
        **({"note": config.note} if config.note else {}),
    }
    table = {name: {digests[name]: {"license_id": s.get("license_id"),
                                   "license": " ".join(str(s.get("license") or "").split()),
                                   "files": dict(sorted((s.get("files") or {}).items()))}}
             for name, s in sources.items()}
    folder = {dataset: {"fingerprint": meta.get("fingerprint"), "construction": config.construction}}
    return Export(config, rows, json.loads(json.dumps(block)), table, folder)


# --- Parquet ---------------------------------------------------------------------------------------------------

class _Irregular(Exception):
    pass


def _shape(value, memo: dict):
    if value is None:
        return None
    if isinstance(value, (bool, int, float, str)):
        return type(value).__name__
    if isinstance(value, dict):
        return {k: _shape(v, memo) for k, v in value.items()}
    if isinstance(value, list):
        if id(value) not in memo:
            shape = None
            for v in value:
                shape = _unify(shape, _shape(v, memo))
            memo[id(value)] = ("list", shape)
        return memo[id(value)]
    raise _Irregular(type(value).__name__)


def _unify(a, b):
    if a is None or a == b:
        return b if a is None else a
    if b is None:
        return a
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        return {k: _unify(a[k], b[k]) for k in a}
    if isinstance(a, tuple) and isinstance(b, tuple):
        return ("list", _unify(a[1], b[1]))
    raise _Irregular(f"{a} vs {b}")


def features(rows: Iterable[dict], columns: list[str]):
    """The config's features: Arrow's inference for a column whose values all have one shape (nulls allowed),
    ``Json()`` for one whose dicts have different keys or whose types mix (``args``, ``facts``), so every row
    loads back exactly as written."""
    import pyarrow as pa
    from datasets import Features, Json
    from datasets.features.features import generate_from_arrow_type

    rows = list(rows)
    out = {}
    for column in columns:
        values, memo, shape = [r[column] for r in rows], {}, None
        try:
            for v in values:
                shape = _unify(shape, _shape(v, memo))
            out[column] = generate_from_arrow_type(pa.array(values).type)
        except (_Irregular, pa.ArrowException):
            out[column] = Json()
    return Features(out)


def write_parquet(exp: Export, out: Path) -> dict:
    """``<config>/<split>-NNNNN-of-NNNNN.parquet`` under ``out`` (shards of at most ``datasets``' max shard size,
    as ``push_to_hub``), each split turned into Arrow once; returns the config's ``DatasetInfo``."""
    import datasets
    from datasets import Dataset
    from datasets.info import DatasetInfo
    from datasets.splits import SplitDict, SplitInfo
    from datasets.utils.py_utils import convert_file_size_to_int

    columns = list(dict.fromkeys(k for r in exp.rows.values() for k in (r[0] if r else {})))
    feats = features((row for r in exp.rows.values() for row in r), columns)
    info = DatasetInfo(config_name=exp.name, features=feats, splits=SplitDict(), download_size=0, dataset_size=0)
    max_shard = convert_file_size_to_int(datasets.config.MAX_SHARD_SIZE)
    was_enabled = datasets.utils.logging.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        for split, rows in exp.rows.items():
            ds = Dataset.from_dict({c: [r[c] for r in rows] for c in columns}, features=feats)
            nbytes, shards = ds.data.nbytes, int(ds.data.nbytes / max_shard) + 1
            for i in range(shards):
                path = out / exp.name / f"{split}-{i:05d}-of-{shards:05d}.parquet"
                path.parent.mkdir(parents=True, exist_ok=True)
                (ds.shard(shards, i, contiguous=True) if shards > 1 else ds).to_parquet(str(path))
                info.download_size += path.stat().st_size
            info.splits.add(SplitInfo(name=split, num_bytes=nbytes, num_examples=len(ds)))
            info.dataset_size += nbytes
    finally:
        if was_enabled:
            datasets.enable_progress_bars()
    info.size_in_bytes = info.download_size + info.dataset_size
    return info


# --- the dataset card -----------------------------------------------------------------------------------------

@dataclass
class Card:
    """What the root card is made of: per config its ``probekit`` block and ``DatasetInfo``; the dataset folders
    (construction rule, fingerprint) and the sources (licence, file checksums) the configs name."""

    blocks: dict[str, dict]
    infos: dict  # {config: datasets.info.DatasetInfo}
    datasets: dict  # {folder: {construction, fingerprint}}
    sources: dict  # {source: {digest: {license_id, license, files}}}
    extra_configs: dict | None = None  # configs of the repo that probekit did not write: kept as they are

    @classmethod
    def empty(cls) -> Card:
        return cls({}, {}, {}, {})

    @classmethod
    def parse(cls, text: str | None) -> Card:
        """The parts of a card written by :func:`render` (an empty card for None; a foreign card's configs are
        kept as they are)."""
        if not text:
            return cls.empty()
        from datasets.info import DatasetInfosDict
        from datasets.utils.metadata import MetadataConfigs
        from huggingface_hub import DatasetCard

        data = DatasetCard(text, ignore_metadata_errors=True).data
        block = data.to_dict().get("probekit") or {}
        blocks = dict(block.get("configs") or {})
        infos = dict(DatasetInfosDict.from_dataset_card_data(data))
        extra = {k: v for k, v in MetadataConfigs.from_dataset_card_data(data).items() if k not in blocks}
        return cls(blocks, infos, dict(block.get("datasets") or {}), dict(block.get("sources") or {}), extra)

    @classmethod
    def of(cls, exp: Export, info=None) -> Card:
        """The card of one exported config (``info``: its ``DatasetInfo``, once its Parquet files are written)."""
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


def _size_category(n: int) -> str:
    return next((label for limit, label in SIZES if n < limit), "n>1T")


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def _quote(text: str) -> str:
    return "\n".join("> " + line if line else ">" for line in text.splitlines()) or "> (no card)"


def _section(name: str, b: dict, card: Card, repo_id: str) -> str:
    papers = _yaml_file("papers.yaml")["papers"]
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
    """The root README: YAML header (``configs`` and ``dataset_info`` written by ``datasets``' own helpers, the
    Hub fields, the ``probekit`` block) and one section per config."""
    from datasets.info import DatasetInfosDict
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCard, DatasetCardData

    repo_id, blocks = repo_id or "ORG/NAME", card.blocks
    licences = sorted({b["licence"] for b in blocks.values()})
    papers = _yaml_file("papers.yaml")["papers"]
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
    names = [*(card.extra_configs or {}), *blocks]
    DatasetInfosDict({k: card.infos[k] for k in names if k in card.infos}).to_dataset_card_data(data)
    configs = {name: {"data_files": [{"split": s, "path": f"{name}/{s}-*"} for s in b["counts"]]}
               for name, b in blocks.items()}
    MetadataConfigs({**(card.extra_configs or {}), **configs}).to_dataset_card_data(data)
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
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / CARD).is_file())):
        raise UsageError(f"{out}: exists and is not an earlier export (no {CARD}); give a new or empty folder")
    card = Card.empty()
    with atomic.atomic_path(out) as tmp:
        tmp.mkdir(parents=True)
        for exp in exports:
            card = card.update(Card.of(exp, write_parquet(exp, tmp)))
            if on_config:
                on_config(exp)
        atomic.write_text(tmp / CARD, render(card, repo_id))
    return card
