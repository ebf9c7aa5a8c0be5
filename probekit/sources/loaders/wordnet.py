"""WordNet 3.0 -> lemma pairs (antonyms, synonyms) and noun hypernym chains, read with NLTK.

``load(raw, params)`` takes the project's raw root and reads ``raw/wordnet/`` (the flat files that
``probes sources fetch wordnet`` stores: ``data.*``, ``index.*``, ``*.exc``, ``lexnames``). Without that
folder it falls back to NLTK's own ``wordnet`` corpus (``NLTK_DATA`` or ``python -m nltk.downloader
wordnet``); without either it raises ``DataError`` saying how to get one. A folder missing some of the
files is a ``DataError`` naming them. WordNet itself is not malformed row by row: nothing is dropped
silently; what is left out by rule (multiword synonyms, self-pairs) is counted in the report.

Tables (every string lowercased, ``_`` -> space; rows sorted by all columns, no duplicates):

``lemma_pairs`` (relation, word1, word2, pos, synset1, synset2)
    ``antonym``: the lemma antonyms of WordNet (``Lemma.antonyms()``, single and multiword); ``synonym``:
    two distinct single-word lemmas of one synset. One row per unordered pair per relation and pos, with
    ``word1 < word2``; ``synset1``/``synset2`` hold the senses of ``word1``/``word2`` (for a pair found in
    several synsets, the smallest synset names). ``pos`` is the synset's: n, v, a, s (satellite adj), r.
``hypernyms`` (concept, hypernym, concept_synset, hypernym_synset, depth, lexname)
    For every noun synset and each of its lemmas, every lemma of each synset reachable by 1..max_depth
    ``hypernyms()`` (and ``instance_hypernyms()`` unless switched off) steps; ``depth`` is the fewest
    steps; ``lexname`` is the concept synset's lexicographer file (``noun.food``, ``noun.animal``, ...).
    Rows whose concept and hypernym are the same string are left out (counted).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pandas as pd
from pydantic import field_validator

from probekit.errors import DataError, shown
from probekit.sources.loaders import Loaded, LoaderParams, register

SOURCE = "wordnet"
POS = ("n", "v", "a", "s", "r")
# What NLTK's WordNetCorpusReader opens when it is built (index.sense, cntlist.rev, LICENSE: only on demand).
REQUIRED = ("lexnames", *(f"{kind}.{pos}" for kind in ("index", "data") for pos in ("noun", "verb", "adj", "adv")),
            *(f"{pos}.exc" for pos in ("noun", "verb", "adj", "adv")))
LEMMA_PAIR_COLUMNS = ["relation", "word1", "word2", "pos", "synset1", "synset2"]
HYPERNYM_COLUMNS = ["concept", "hypernym", "concept_synset", "hypernym_synset", "depth", "lexname"]
HOW_TO_GET = ("get it with `probes sources fetch wordnet` (stores raw/wordnet/), or `python -m nltk.downloader "
              "wordnet`, or set NLTK_DATA=DIR to a folder holding corpora/wordnet/ or corpora/wordnet.zip")


class WordNetParams(LoaderParams):
    max_depth: int = 3  # hypernym steps up from a noun synset
    pos: list[str] = list(POS)  # parts of speech of lemma_pairs
    instance_hypernyms: bool = True  # also climb instance_hypernyms() (paris -> national capital)

    @field_validator("max_depth")
    @classmethod
    def _depth(cls, v: int) -> int:
        if v < 1:
            raise ValueError(f"must be at least 1, got {v}")
        return v

    @field_validator("pos")
    @classmethod
    def _pos(cls, v: list[str]) -> list[str]:
        bad = [p for p in v if p not in POS]
        if bad or not v:
            raise ValueError(f"must be a non-empty list of {list(POS)}, got {shown(v)}")
        return sorted(set(v), key=POS.index)


@register(SOURCE, params=WordNetParams)
def load(raw: Path, params: WordNetParams) -> Loaded:
    with open_wordnet(Path(raw) / SOURCE) as (wn, origin):
        synsets = list(wn.all_synsets())  # one pass over the data files (the slow part); NLTK caches them
        pairs, pair_report = lemma_pairs(synsets, params.pos)
        hyper, hyper_report = hypernyms([s for s in synsets if s.pos() == "n"], params.max_depth,
                                        params.instance_hypernyms)
        per_pos = Counter(s.pos() for s in synsets)
        report = {
            "origin": origin,
            "wordnet_version": wn.get_version(),
            "synsets": {p: per_pos[p] for p in POS},
            "lemma_pairs": pair_report,
            "hypernyms": hyper_report,
        }
    return Loaded(tables={"lemma_pairs": pairs, "hypernyms": hyper}, report=report)


# --- reading WordNet ---------------------------------------------------------------------------

def _reader_class():
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    class FolderWordNet(WordNetCorpusReader):
        """NLTK's reader on a plain folder. ``map_wn`` is skipped: NLTK 3.10 builds a sense map to its own
        installed ``wordnet`` corpus there (for OMW, unused here), which would need that corpus too."""

        def map_wn(self, version="wordnet"):
            return None

    return FolderWordNet


@contextmanager
def open_wordnet(folder: Path) -> Iterator[tuple[object, str]]:
    """``(reader, origin)``: WordNet from ``folder`` when it exists, else NLTK's installed corpus."""
    if not folder.is_dir():
        wn = _nltk_wordnet(folder)
        yield wn, f"nltk_data: {wn.root}"
        return
    missing = [name for name in REQUIRED if not (folder / name).is_file()]
    if missing:
        raise DataError(f"{folder}: WordNet file(s) missing: {', '.join(missing)}; "
                        f"run `probes sources fetch wordnet` to restore them")
    with _plain_folder(folder) as root, _nltk_allows(root):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "multilingual functions are not available": no OMW wanted
            try:
                wn = _reader_class()(str(root), None)
            except (OSError, ValueError, AssertionError) as e:
                raise DataError(f"{folder}: not a WordNet database NLTK can read: {e}") from e
        yield wn, str(folder)


@contextmanager
def _plain_folder(folder: Path) -> Iterator[Path]:
    """``folder`` itself, or, when some of its files are symlinks (e.g. a DVC cache linked in), a temporary
    copy of them: NLTK's path hardening refuses files whose real path lies outside the corpus folder."""
    if not any((folder / name).is_symlink() for name in REQUIRED):
        yield folder
        return
    with tempfile.TemporaryDirectory(prefix="probekit-wordnet-") as tmp:
        for name in REQUIRED:
            shutil.copyfile(folder / name, Path(tmp) / name)
        yield Path(tmp)


@contextmanager
def _nltk_allows(root: Path) -> Iterator[None]:
    """Put ``root`` on ``nltk.data.path`` while it is read (NLTK 3.10 refuses corpus roots elsewhere)."""
    import nltk.data

    entry = str(root.resolve())
    added = entry not in nltk.data.path
    if added:
        nltk.data.path.append(entry)
    try:
        yield
    finally:
        if added and entry in nltk.data.path:
            nltk.data.path.remove(entry)


def _nltk_wordnet(folder: Path):
    import nltk.corpus

    wn = nltk.corpus.wordnet
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            wn.root  # a LazyCorpusLoader loads on first attribute access
    except LookupError:
        where = os.environ.get("NLTK_DATA")
        raise DataError(f"WordNet not found: no folder {folder}, and NLTK finds no 'wordnet' corpus"
                        + (f" (NLTK_DATA={where})" if where else "") + f"; {HOW_TO_GET}") from None
    return wn


# --- tables ------------------------------------------------------------------------------------

def norm(name: str) -> str:
    """A lemma name as text: lowercase, ``_`` -> space."""
    return name.replace("_", " ").lower()


def lemma_pairs(synsets, pos: list[str]) -> tuple[pd.DataFrame, dict]:
    """The ``lemma_pairs`` table from ``synsets`` (e.g. ``wn.all_synsets()``) of the parts of speech ``pos``."""
    best: dict[tuple[str, str, str, str], tuple[str, str]] = {}  # (relation, w1, w2, pos) -> (synset1, synset2)
    skipped = Counter()

    def add(relation, p, a, sa, b, sb):
        if a == b:
            skipped[f"{relation}_same_text"] += 1
            return
        if b < a:
            a, sa, b, sb = b, sb, a, sa
        key = (relation, a, b, p)
        if key not in best or (sa, sb) < best[key]:
            best[key] = (sa, sb)

    for synset in synsets:
        p = synset.pos()
        if p not in pos:
            continue
        lemmas = synset.lemmas()
        for lemma in lemmas:
            for antonym in lemma.antonyms():
                add("antonym", p, norm(lemma.name()), synset.name(), norm(antonym.name()), antonym.synset().name())
        words = sorted({norm(lemma.name()) for lemma in lemmas})
        single = [w for w in words if " " not in w]
        skipped["synonym_multiword_lemmas"] += len(words) - len(single)
        for i, a in enumerate(single):
            for b in single[i + 1:]:
                add("synonym", p, a, synset.name(), b, synset.name())
    df = pd.DataFrame([(r, a, b, p, s1, s2) for (r, a, b, p), (s1, s2) in best.items()],
                      columns=LEMMA_PAIR_COLUMNS)
    df = _sorted(df)
    counts = df.groupby(["relation", "pos"]).size()
    report = {
        "rows": len(df),
        "by_relation": {r: int(n) for r, n in df["relation"].value_counts().sort_index().items()},
        "by_relation_pos": {f"{r}/{p}": int(n) for (r, p), n in counts.items()},
        "left_out": dict(sorted(skipped.items())),
    }
    return df, report


def hypernyms(nouns, max_depth: int, instances: bool = True) -> tuple[pd.DataFrame, dict]:
    """The ``hypernyms`` table from noun synsets ``nouns`` (e.g. ``wn.all_synsets("n")``)."""
    up_cache: dict[str, list] = {}
    names_cache: dict[str, list[str]] = {}

    def up(synset):
        if synset.name() not in up_cache:
            up_cache[synset.name()] = synset.hypernyms() + (synset.instance_hypernyms() if instances else [])
        return up_cache[synset.name()]

    def names(synset) -> list[str]:
        if synset.name() not in names_cache:
            names_cache[synset.name()] = sorted({norm(n) for n in synset.lemma_names()})
        return names_cache[synset.name()]

    rows, same_text = [], 0
    for synset in nouns:
        depth_of: dict[str, tuple[int, object]] = {}
        frontier = [synset]
        for depth in range(1, max_depth + 1):
            nxt = []
            for s in frontier:
                for h in up(s):
                    if h.name() not in depth_of:
                        depth_of[h.name()] = (depth, h)
                        nxt.append(h)
            frontier = nxt
        if not depth_of:
            continue
        concepts = names(synset)
        lexname = synset.lexname()
        for hname, (depth, h) in depth_of.items():
            for hyper in names(h):
                for concept in concepts:
                    if concept == hyper:
                        same_text += 1
                        continue
                    rows.append((concept, hyper, synset.name(), hname, depth, lexname))
    df = pd.DataFrame(rows, columns=HYPERNYM_COLUMNS).astype({"depth": "int64"})
    df = _sorted(df)
    report = {
        "rows": len(df),
        "concept_synsets": int(df["concept_synset"].nunique()),
        "concepts": int(df["concept"].nunique()),
        "by_depth": {str(d): int(n) for d, n in df["depth"].value_counts().sort_index().items()},
        "by_lexname": {k: int(n) for k, n in df["lexname"].value_counts().sort_index().items()},
        "left_out": {"same_text": same_text},
    }
    return df, report


def _sorted(df: pd.DataFrame) -> pd.DataFrame:
    out = df.drop_duplicates().sort_values(list(df.columns), kind="mergesort").reset_index(drop=True)
    if len(out) != len(df):
        raise AssertionError("duplicate rows built")  # the builders dedupe by key; a bug if reached
    return out
