"""ParaRel's pattern graphs: the restricted unpickler reads every original pickle exactly as its JSON dump, and
refuses a pickle that would run code before any of it runs."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from probekit.errors import DataError
from probekit.sources.pattern_graphs import read_json, read_pickle

from helpers import MIRROR

GRAPHS = MIRROR / "pararel/yanaiela_pararel/data/pattern_data/graphs"
DUMPS = MIRROR / "pararel/derived/graphs_json_full"
EXCLUDED = {"P31", "P527", "P1001"}   # ParaRel's 38 relations leave these out


def test_every_pickle_reads_as_its_json_dump():
    files = sorted(GRAPHS.glob("*.graph"))
    assert len(files) == 41
    graphs = {f.stem: read_pickle(f) for f in files}
    for relation, graph in graphs.items():
        assert graph == read_json(DUMPS / f"{relation}.json"), relation
    kept = [g for r, g in graphs.items() if r not in EXCLUDED]
    assert len(kept) == 38 and sum(len(g.patterns) for g in kept) == 328
    p19 = graphs["P19"]
    assert p19.patterns[0]["lm_pattern"] == "[X] was born in [Y]."
    n = len(p19.patterns)
    assert len(p19.edges) == n * (n - 1)   # every ordered pair of patterns
    assert set(p19.edges[0][2]) == {"syntactic_change", "lexical_change", "determiner_change"}


class _RunsCode:
    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def test_a_pickle_that_would_run_code_is_refused_before_it_runs(tmp_path):
    evil = _RunsCode()
    evil.marker = tmp_path / "ran"
    path = tmp_path / "P19.graph"
    path.write_bytes(pickle.dumps(evil))
    with pytest.raises(DataError, match=r"P19.graph: .*refused global (posix|nt)\.system"):
        read_pickle(path)
    assert not (tmp_path / "ran").exists()


def test_other_globals_and_other_objects_are_refused(tmp_path):
    path = tmp_path / "P1.graph"
    path.write_bytes(pickle.dumps(eval))
    with pytest.raises(DataError, match="refused global builtins.eval"):
        read_pickle(path)
    path.write_bytes(pickle.dumps({"nodes": []}))
    with pytest.raises(DataError, match="no DiGraph"):
        read_pickle(path)
    bad = tmp_path / "P2.json"
    bad.write_text('{"nodes": [{"lm_pattern": "[X] a [Y] ."}]}')
    with pytest.raises(DataError, match=r"P2.json: not a ParaRel graph dump \(KeyError"):
        read_json(bad)
    Path(bad).write_text("{")
    with pytest.raises(DataError, match="P2.json"):
        read_json(bad)


def test_the_pararel_source_fetches_verified_from_the_mirror_and_reads_safely(tmp_path):
    from probekit.sources.fetch import fetch
    from probekit.sources.manifest import load_manifest

    from helpers import REPO

    source = load_manifest(REPO / "raw/sources.yaml")["pararel"]
    names = [f.path for f in source.files]
    assert sum(n.endswith(".graph") for n in names) == 41 and sum(n.endswith(".jsonl") for n in names) == 42
    fetch(source, tmp_path / "pararel", mirror=MIRROR)   # every sha256 checked
    assert read_pickle(tmp_path / "pararel" / "P36.graph") == read_json(DUMPS / "P36.json")
