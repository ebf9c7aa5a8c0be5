"""ConceptNet edges: the official 5.7 assertions dump, or offline English subsets, as one ``edges`` table.

``edges`` columns: ``relation`` (ConceptNet's /r/ name: ``IsA``, ``AtLocation``, ``dbpedia/genre``...),
``head``, ``tail`` (lower-case, ``_`` as space, whitespace collapsed), ``weight`` (the dump's edge weight;
1.0 for the subsets, which carry none), ``source`` (``conceptnet5.7``, ``cn100k``, ``twc``, ``evalution``).
English only, only the relations asked for, no self-loops (head == tail), one row per (relation, head,
tail, source) with the highest weight, sorted by relation, head, tail, source.

``edge_source``:

- ``dump``: ``raw/conceptnet_dump/conceptnet-assertions-5.7.0.csv.gz`` (or the decompressed ``.csv``),
  read by :func:`read_assertions` in one DuckDB pass with bounded memory. English = both ends ``/c/en/``;
  the term is the URI's third segment (``/c/en/dog/n/wn/animal`` -> ``dog``), so senses merge.
- ``subsets``: ``raw/conceptnet_subsets/``: CN-100K (Li et al. 2016, via InductivE; ``Rel<TAB>head<TAB>tail``),
  the TextWorld-Commonsense ConceptNet subgraph (IBM commonsense-rl; ``head<TAB>rel<TAB>tail``, lower-case
  relations), EVALution 1.0 ``RELATIONS.txt`` (Santus et al. 2015; 17 columns, relatum1, relation,
  relatum2 first; its README and RELATA.txt hold no pairs). Relation names are mapped case-insensitively
  to ConceptNet's (``isa`` -> ``IsA``, TWC's ``genre`` -> ``dbpedia/genre``).

Malformed lines are counted and reported, never fatal: a line with the wrong number of fields, an empty
term, bytes that are not UTF-8, or (dump) JSON that does not parse or has no numeric weight is dropped under
``malformed``; a relation name ConceptNet does not have under ``unknown_relation``. The report gives the first
few per reason with their line number (for bad JSON in the dump, the edge URI: DuckDB's parallel reader gives
no line numbers past the CSV layer). Only a file in which no line parses at all raises ``DataError`` (it is
in the wrong format), naming the file and its first bad line.
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Sequence

import pandas as pd
from pydantic import Field, field_validator

from probekit.errors import DataError, shown
from probekit.sources.loaders import Loaded, LoaderParams, register

COLUMNS = ["relation", "head", "tail", "weight", "source"]
KEY = ["relation", "head", "tail", "source"]
DUMP_SOURCE, SUBSETS_SOURCE = "conceptnet_dump", "conceptnet_subsets"
DUMP_FILES = ("conceptnet-assertions-5.7.0.csv.gz", "conceptnet-assertions-5.7.0.csv")
DUMP_LABEL = "conceptnet5.7"
N_EXAMPLES = 5

# ConceptNet 5.7's relations (github.com/commonsense/conceptnet5/wiki/Relations), then older names that
# CN-100K (ConceptNet 4/OMCS) and EVALution (ConceptNet 5.0) still use.
RELATIONS = (
    "RelatedTo", "FormOf", "IsA", "PartOf", "HasA", "UsedFor", "CapableOf", "AtLocation", "Causes",
    "HasSubevent", "HasFirstSubevent", "HasLastSubevent", "HasPrerequisite", "HasProperty", "MotivatedByGoal",
    "ObstructedBy", "Desires", "CreatedBy", "Synonym", "Antonym", "DistinctFrom", "DerivedFrom", "SymbolOf",
    "DefinedAs", "MannerOf", "LocatedNear", "HasContext", "SimilarTo", "EtymologicallyRelatedTo",
    "EtymologicallyDerivedFrom", "CausesDesire", "MadeOf", "ReceivesAction", "ExternalURL", "InstanceOf",
    "Entails", "NotDesires", "NotUsedFor", "NotCapableOf", "NotHasProperty",
    "dbpedia/genre", "dbpedia/influencedBy", "dbpedia/knownFor", "dbpedia/occupation", "dbpedia/language",
    "dbpedia/field", "dbpedia/product", "dbpedia/capital", "dbpedia/leader", "dbpedia/genus",
    "DesireOf", "InheritsFrom", "LocationOfAction", "NotIsA", "NotHasA", "NotMadeOf", "HasPainIntensity",
    "HasPainCharacter", "MemberOf",
)
_BY_KEY = {key: r for r in RELATIONS for key in {r.lower(), r.split("/")[-1].lower()}}

# What the oLMpics probes draw on: IsA (always-never types, taxonomy conjunction), Antonym and Synonym
# (antonym negation), and every predicate the property-conjunction release phrases ("is related to",
# "is usually located at", "may recieve an", "is the opposite of", ...), plus MadeOf and LocatedNear.
DEFAULT_RELATIONS = (
    "IsA", "Antonym", "Synonym", "RelatedTo", "AtLocation", "UsedFor", "HasProperty", "CapableOf", "PartOf",
    "MadeOf", "HasA", "ReceivesAction", "Desires", "NotDesires", "CausesDesire", "Causes", "HasPrerequisite",
    "HasSubevent", "HasFirstSubevent", "HasLastSubevent", "MotivatedByGoal", "DistinctFrom", "CreatedBy",
    "NotCapableOf", "LocatedNear",
)


@dataclass(frozen=True)
class SubsetFormat:
    files: tuple[str, ...]  # stored names in raw/conceptnet_subsets/
    n_fields: int  # tab-separated fields a line must have
    columns: tuple[int, int, int]  # field index of relation, head, tail


SUBSETS = {
    "cn100k": SubsetFormat(("cn100k_train.txt", "cn100k_valid.txt", "cn100k_test.txt"), 3, (0, 1, 2)),
    "twc": SubsetFormat(("twc_train_conceptnet_subgraph.txt", "twc_valid_conceptnet_subgraph.txt"), 3, (1, 0, 2)),
    "evalution": SubsetFormat(("evalution_RELATIONS.txt",), 17, (1, 0, 2)),
}


def canonical_relation(name: str) -> str | None:
    """ConceptNet's spelling of a relation name (``isa``, ``/r/IsA`` -> ``IsA``), or None if unknown."""
    return _BY_KEY.get(name.strip().removeprefix("/r/").lower())


def canonical_relations(names: Sequence[str]) -> list[str]:
    """Sorted distinct canonical names; ``ValueError`` listing the unknown ones."""
    unknown = [n for n in names if canonical_relation(n) is None]
    if unknown:
        raise ValueError(f"unknown ConceptNet relation(s) {unknown}; known: {', '.join(RELATIONS)}")
    return sorted({canonical_relation(n) for n in names})


class ConceptNetParams(LoaderParams):
    edge_source: Literal["subsets", "dump"] = "subsets"
    relations: list[str] = Field(default=list(DEFAULT_RELATIONS), min_length=1, validate_default=True)
    subsets: list[Literal["cn100k", "twc", "evalution"]] = Field(default=list(SUBSETS), min_length=1)

    @field_validator("relations")
    @classmethod
    def _canonical(cls, names: list[str]) -> list[str]:
        return canonical_relations(names)


def normalise_term(term: str) -> str:
    return " ".join(term.replace("_", " ").lower().split())


# ---------------------------------------------------------------- subsets


class _Tally:
    """Per-file counts of dropped lines by reason, with the first few examples of each."""

    def __init__(self):
        self.dropped: Counter[str] = Counter()
        self.examples: dict[str, list[str]] = {}

    def drop(self, reason: str, where: str = "") -> None:
        self.dropped[reason] += 1
        if where and len(self.examples.setdefault(reason, [])) < N_EXAMPLES:
            self.examples[reason].append(where)

    def report(self, source: str, read: int, kept: int) -> dict:
        return {"source": source, "rows_read": read, "rows_kept": kept, "dropped": dict(sorted(self.dropped.items())),
                "examples": self.examples}


def read_subset_file(path: Path, fmt: SubsetFormat, source: str, relations: set[str]) -> tuple[pd.DataFrame, dict]:
    """The edges of one subset file and its report entry (rows read / kept / dropped by reason)."""
    rows, tally, read = [], _Tally(), 0
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            read += 1
            edge = _parse_line(raw, fmt, tally, f"line {lineno}")
            if edge is None:
                continue
            if edge[0] not in relations:
                tally.drop("relation_not_selected")
            elif edge[1] == edge[2]:
                tally.drop("self_loop", f"line {lineno}")
            else:
                rows.append(edge)
    unparsed = tally.dropped["malformed"] + tally.dropped["unknown_relation"]
    if unparsed == read:
        first = (tally.examples.get("malformed") or tally.examples.get("unknown_relation") or ["the file is empty"])[0]
        raise DataError(f"{path}: no line in the expected format ({fmt.n_fields} tab-separated fields, "
                        f"relation/head/tail in fields {[i + 1 for i in fmt.columns]}): {first}")
    return _frame(rows, source), tally.report(source, read, len(rows))


def _parse_line(raw: bytes, fmt: SubsetFormat, tally: _Tally, where: str) -> tuple[str, str, str] | None:
    """(relation, head, tail) normalised, or None after counting why the line is dropped."""
    try:
        fields = raw.decode("utf-8").rstrip("\r\n").split("\t")
    except UnicodeDecodeError as e:
        return tally.drop("malformed", f"{where}: not UTF-8 ({e.reason})")
    if len(fields) != fmt.n_fields:
        return tally.drop("malformed", f"{where}: {len(fields)} tab-separated fields, expected {fmt.n_fields}")
    rel, head, tail = (fields[i] for i in fmt.columns)
    relation, head, tail = canonical_relation(rel), normalise_term(head), normalise_term(tail)
    if not head or not tail:
        return tally.drop("malformed", f"{where}: empty term")
    if relation is None:
        return tally.drop("unknown_relation", f"{where}: {shown(rel)}")
    return relation, head, tail


def _frame(rows: list[tuple[str, str, str]], source: str) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=["relation", "head", "tail"], dtype="str")
    return df.assign(weight=1.0, source=source)[COLUMNS]


def _load_subsets(folder: Path, subsets: list[str], relations: list[str]) -> tuple[pd.DataFrame, dict, dict]:
    frames, files = [], {}
    for source in sorted(set(subsets)):
        fmt = SUBSETS[source]
        for name in fmt.files:
            path = folder / name
            if not path.is_file():
                raise DataError(f"{path}: missing (run: probes sources fetch {SUBSETS_SOURCE})")
            df, files[name] = read_subset_file(path, fmt, source, set(relations))
            frames.append(df)
    edges = pd.concat(frames, ignore_index=True)
    table = _dedup(edges)
    duplicates = {s: int((edges.source == s).sum() - (table.source == s).sum()) for s in sorted(set(subsets))}
    return table, files, duplicates


def _dedup(edges: pd.DataFrame) -> pd.DataFrame:
    """One row per KEY with the highest weight, sorted by KEY."""
    return _typed(edges.groupby(KEY, sort=True, as_index=False)["weight"].max())


def _typed(df: pd.DataFrame) -> pd.DataFrame:
    return df[COLUMNS].astype({c: "str" for c in KEY} | {"weight": "float64"}).reset_index(drop=True)


# ---------------------------------------------------------------- the dump

_CSV = ("read_csv({src}, columns={{'uri': 'VARCHAR', 'rel': 'VARCHAR', 'start': 'VARCHAR', 'end': 'VARCHAR', "
        "'meta': 'VARCHAR'}}, delim='\t', quote='', escape='', header=false, auto_detect=false, store_rejects=true)")
_TERM = "trim(regexp_replace(lower(replace(split_part({}, '/', 4), '_', ' ')), '\\s+', ' ', 'g'))"
# One pass over the CSV: every line becomes one narrow row; dropped lines keep only their reason.
_STAGE = f"""
WITH lines AS (
    SELECT uri, rel, json_valid(meta) IS TRUE AS json_ok,
           coalesce(starts_with(start, '/c/en/') AND starts_with("end", '/c/en/'), false) AS english,
           coalesce(rel IN (SELECT rel FROM wanted), false) AS selected, start, "end", meta
    FROM {_CSV}
), terms AS (
    SELECT *, CASE WHEN json_ok THEN TRY_CAST(json_extract_string(meta, '$.weight') AS DOUBLE) END AS weight,
           CASE WHEN english AND selected THEN {_TERM.format('start')} END AS head,
           CASE WHEN english AND selected THEN {_TERM.format('"end"')} END AS tail
    FROM lines
), classified AS (
    SELECT *, CASE WHEN weight IS NULL THEN 'malformed'
                   WHEN NOT english THEN 'not_english'
                   WHEN NOT selected THEN 'relation_not_selected'
                   WHEN head = '' OR tail = '' THEN 'malformed'
                   WHEN head = tail THEN 'self_loop' END AS reason
    FROM terms
)
SELECT reason,
       CASE WHEN reason IS NULL THEN substr(rel, 4) END AS relation,
       CASE WHEN reason IS NULL THEN head END AS head,
       CASE WHEN reason IS NULL THEN tail END AS tail,
       CASE WHEN reason IS NULL THEN weight END AS weight,
       CASE WHEN reason = 'malformed' THEN 'edge ' || uri || CASE WHEN weight IS NULL
            THEN ': JSON does not parse or has no numeric weight' ELSE ': empty term' END END AS example
FROM classified
"""


def read_assertions(path: Path, out_parquet: Path, relations: Sequence[str], *, memory_limit: str = "1GB",
                    threads: int | None = None) -> dict:
    """ConceptNet's ``conceptnet-assertions-*.csv[.gz]`` -> ``out_parquet``, the English ``edges`` table.

    The CSV is read once, streaming, by DuckDB under ``memory_limit`` (sorting spills to disk beside
    ``out_parquet``). Returns rows read, kept (before merging duplicates), dropped by reason with
    examples, duplicates merged and rows written."""
    import duckdb

    path, out_parquet = Path(path), Path(out_parquet)
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    uris = ["/r/" + r for r in canonical_relations(relations)]
    threads = threads or min(4, os.cpu_count() or 1)
    with tempfile.TemporaryDirectory(prefix=".conceptnet-", dir=out_parquet.parent) as tmp:
        con = duckdb.connect()
        con.execute(f"SET memory_limit = {_lit(memory_limit)}; SET threads = {int(threads)}; "
                    f"SET preserve_insertion_order = false; SET enable_progress_bar = false; "
                    f"SET temp_directory = {_lit(Path(tmp) / 'spill')}")
        con.execute("CREATE TEMP TABLE wanted AS SELECT unnest(?::VARCHAR[]) AS rel", [uris])
        stage = Path(tmp) / "stage.parquet"
        try:
            con.execute(f"COPY ({_STAGE.format(src=_lit(path))}) TO {_lit(stage)} (FORMAT parquet)")
        except duckdb.Error as e:
            raise DataError(f"{path}: cannot read as a ConceptNet assertions file: {' '.join(str(e).split())}") from None
        report = _dump_report(con, path, _lit(stage))
        written = con.execute(
            f"COPY (SELECT relation, head, tail, max(weight) AS weight, '{DUMP_LABEL}' AS source "
            f"FROM read_parquet({_lit(stage)}) WHERE reason IS NULL GROUP BY relation, head, tail "
            f"ORDER BY relation, head, tail) TO {_lit(out_parquet)} (FORMAT parquet)").fetchone()[0]
        con.close()
    return report | {"duplicates_dropped": report["rows_kept"] - written, "rows_written": written}


def _dump_report(con, path: Path, stage: str) -> dict:
    """Counts by reason from the stage file and DuckDB's CSV rejects; ``DataError`` if no line parsed."""
    counts = dict(con.execute(f"SELECT reason, count(*) FROM read_parquet({stage}) GROUP BY reason").fetchall())
    rejected = con.execute("SELECT line, any_value(error_message) FROM reject_errors GROUP BY line "
                           "ORDER BY line").fetchall()
    examples = [f"line {line}: {' '.join(msg.split())}" for line, msg in rejected[:N_EXAMPLES]]
    examples += [e for (e,) in con.execute(f"SELECT example FROM read_parquet({stage}) WHERE example IS NOT NULL "
                                            f"ORDER BY example LIMIT {N_EXAMPLES}").fetchall()]
    dropped = Counter({k: v for k, v in counts.items() if k is not None}) + Counter(malformed=len(rejected))
    kept = counts.get(None, 0)
    read = kept + sum(dropped.values())
    if dropped["malformed"] == read:
        first = examples[0] if examples else "the file is empty"
        raise DataError(f"{path}: no line is a ConceptNet assertion (5 tab-separated fields, JSON last): {first}")
    return {"source": DUMP_LABEL, "rows_read": read, "rows_kept": kept, "dropped": dict(sorted(dropped.items())),
            "examples": {"malformed": examples} if examples else {}}


def _lit(value) -> str:
    """A SQL string literal."""
    return "'" + str(value).replace("'", "''") + "'"


def _load_dump(folder: Path, relations: list[str]) -> tuple[pd.DataFrame, dict, dict]:
    path = next((folder / n for n in DUMP_FILES if (folder / n).is_file()), None)
    if path is None:
        raise DataError(f"{folder / DUMP_FILES[0]}: missing (run: probes sources fetch {DUMP_SOURCE})")
    with tempfile.TemporaryDirectory(prefix="conceptnet-dump-") as tmp:
        report = read_assertions(path, Path(tmp) / "edges.parquet", relations)
        table = _typed(pd.read_parquet(Path(tmp) / "edges.parquet"))
    return table, {path.name: report}, {DUMP_LABEL: report["duplicates_dropped"]}


# ---------------------------------------------------------------- the loader


@register("conceptnet", params=ConceptNetParams,
          sources=lambda p: ["conceptnet_dump" if p.edge_source == "dump" else "conceptnet_subsets"])
def load(raw: Path, params: ConceptNetParams) -> Loaded:
    """The ``edges`` table from ``raw/conceptnet_subsets/`` or ``raw/conceptnet_dump/`` (``raw`` = raw root)."""
    raw = Path(raw)
    if params.edge_source == "dump":
        table, files, duplicates = _load_dump(raw / DUMP_SOURCE, params.relations)
    else:
        table, files, duplicates = _load_subsets(raw / SUBSETS_SOURCE, params.subsets, params.relations)
    return Loaded({"edges": table}, _report(params, table, files, duplicates))


def _report(params: ConceptNetParams, table: pd.DataFrame, files: dict, duplicates: dict) -> dict:
    per_relation: dict[str, dict[str, int]] = {}
    for (rel, source), n in table.groupby(["relation", "source"]).size().items():
        per_relation.setdefault(rel, {})[source] = int(n)
    return {
        "edge_source": params.edge_source,
        "relations_selected": params.relations,
        "weight": "the dump's edge weight" if params.edge_source == "dump" else "1.0: the subsets carry none",
        "files": files,
        "duplicates_dropped": duplicates,
        "rows": {str(k): int(v) for k, v in table.groupby("source").size().items()} | {"total": len(table)},
        "per_relation": per_relation,
    }
