"""Full sources or a refusal (issue 52 item 2): the paper profile reads DoQ and Wikidata through SPARQL, DoQ is
fetched (checksummed) like every source and read from a mirror folder in its own format, and a paper run that could
only have the mirror's capped sources stops before any work in one line naming the source, its cap and the override;
a run that accepts the cap records it where the table set is made."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
import yaml

from probekit.errors import UsageError
from probekit.params import compose
from probekit.sources import capped, capped_check
from probekit.sources import loaders
from probekit.sources.loaders import read_report, read_tables
from probes.main import main
from probes.rehearse import rehearsal_params

from helpers import REPO
from test_loader_object_sizes import DOQ_ROWS, _doq_text, _tiny_raw, write

DOQ_OVERRIDE = "-S tables.object_sizes.source=mirror_sets -S tables.object_sizes.capped=accept"
WIKIDATA_OVERRIDE = "-S tables.wikidata.source=mirror -S tables.wikidata.capped=accept"
DOQ_FILE = "".join("\t".join(map(str, r)) + "\n" for r in DOQ_ROWS + [
    ("dog", "dog", "LENGTH", 0.8, 0.3, 0.5, 0.7, 1.0, 1.5, 0.3),
    ("cat", "cat", "LENGTH", 0.5, 0.2, 0.4, 0.5, 0.6, 0.8, 0.2)])   # DoQ's released nouns file: TSV, no header


@pytest.fixture(scope="module")
def paper() -> dict:
    return compose(REPO / "conf", ["profile=paper"])


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A raw root with the manifest and tiny object-size files; no mirror configured."""
    monkeypatch.delenv("PROBES_MIRROR", raising=False)
    raw = tmp_path / "raw"
    raw.mkdir()
    shutil.copyfile(REPO / "raw" / "sources.yaml", raw / "sources.yaml")
    _tiny_raw(raw)
    return raw


def params_file(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def test_the_paper_profile_selects_the_full_sources_and_fetches_doq(paper):
    smoke = compose(REPO / "conf")
    assert paper["tables"]["object_sizes"] == {"source": "doq", "capped": "refuse"}
    assert paper["tables"]["wikidata"] == {"source": "sparql", "capped": "refuse"}
    assert "doq" in paper["sources"]["fetch"] and "doq" not in smoke["sources"]["fetch"]
    assert smoke["tables"]["object_sizes"] == {"source": "mirror_sets"} and smoke["tables"]["wikidata"] == {
        "source": "mirror"}
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    assert stages["fetch"]["foreach"] == "${sources.fetch}" and stages["tables"]["foreach"] == "${sources.tables}"
    from probekit.params import ParamsFile, section
    from probekit.sources.manifest import load_manifest

    manifest = load_manifest(REPO / "raw" / "sources.yaml")
    for params in (smoke, paper):   # every fetched name is a source; each table stage depends on what it reads
        assert set(params["sources"]["fetch"]) <= set(manifest)
        for name, deps in params["sources"]["tables"].items():
            loader = loaders.get(name)
            reads = loader.sources(section(ParamsFile(None, params), f"tables.{name}", loader.params))
            assert set(reads) <= set(deps.values()) <= set(params["sources"]["fetch"]), (name, reads, deps)


def test_an_offline_paper_run_with_only_capped_sources_is_refused_in_one_line(paper, project, tmp_path, capsys,
                                                                              monkeypatch):
    mirror = tmp_path / "mirror"   # the mirror has no DoQ (as /work/shared/raw) and no SPARQL answers
    (mirror / "object_size").mkdir(parents=True)
    monkeypatch.setenv("PROBES_MIRROR", str(mirror))
    manifest, out = project / "sources.yaml", tmp_path / "tables"
    args = ["tables", "object_sizes", "--out", str(out), "--manifest", str(manifest), "--params"]
    assert main([*args, str(params_file(tmp_path / "paper.yaml", paper))]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert "tables.object_sizes: source doq" in err and "DoQ" in err and str(mirror) in err
    assert "674 train rows (the released probe's 5,000)" in err and DOQ_OVERRIDE in err
    assert not out.exists()   # before any work

    # the same line wherever the run starts (probes run, probes rehearse: before dvc), the next capped set after
    with pytest.raises(UsageError) as refused:
        capped_check.check(paper, manifest, mirror)
    assert DOQ_OVERRIDE in str(refused.value) and "\n" not in str(refused.value)
    accepted = {**paper, "tables": {**paper["tables"], "object_sizes": {"source": "mirror_sets", "capped": "accept"}}}
    with pytest.raises(UsageError) as refused:
        capped_check.check(accepted, manifest, mirror)
    why = str(refused.value)
    assert "tables.wikidata: source sparql" in why and "no SPARQL cache" in why
    assert "517 train / 49 dev rows (the released probe's 5,317 / 500)" in why and WIKIDATA_OVERRIDE in why
    both = {**accepted, "tables": {**accepted["tables"], "wikidata": {"source": "mirror", "capped": "accept"}}}
    capped_check.check(both, manifest, mirror)   # both caps accepted: the run goes on

    from probes.run import _sources_ready   # probes run: before params.yaml is written and dvc starts

    with pytest.raises(UsageError, match="profile paper: tables.object_sizes: source doq .*674 train rows"):
        _sources_ready(project.parent, paper)

    # the capped source chosen without accepting it: refused too, even with DoQ at hand
    only_source = {**paper, "tables": {**paper["tables"], "object_sizes": {"source": "mirror_sets",
                                                                           "capped": "refuse"}}}
    assert main([*args, str(params_file(tmp_path / "p2.yaml", only_source))]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "source mirror_sets under capped: refuse" in err and DOQ_OVERRIDE in err


def test_the_rehearsal_accepts_the_caps_explicitly(paper, project, tmp_path):
    p = rehearsal_params(paper, {"tiny": "/models/tiny"}, 5, "cpu")
    assert p["tables"]["object_sizes"]["source"] == "mirror_sets" and p["tables"]["object_sizes"]["capped"] == "accept"
    assert p["tables"]["wikidata"] == {"source": "mirror", "capped": "accept"}
    assert "doq" not in p["sources"]["fetch"] and p["sources"]["tables"]["object_sizes"]["more"] == "object_sizes"
    capped_check.check(p, project / "sources.yaml", tmp_path)   # offline, no DoQ: accepted, not refused


def test_doq_is_fetched_from_a_mirror_folder_in_its_own_format(project, tmp_path, capsys):
    mirror = tmp_path / "mirror"
    write(mirror / "doq" / "noun_obj.csv", DOQ_FILE)   # the bucket's file as served, under the mirror's doq/
    manifest = project / "sources.yaml"
    fetch = ["sources", "fetch", "doq", "--manifest", str(manifest), "--mirror", str(mirror)]
    assert main(fetch) == 1   # unconfirmed: no sha256 to verify against yet (dvc's fetch@doq: the cap and override)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--record-checksums" in err and "674 train rows" in err and DOQ_OVERRIDE in err
    assert main([*fetch, "--record-checksums"]) == 0
    stored = project / "doq" / "doq_nouns.tsv"
    assert stored.read_text(encoding="utf-8") == DOQ_FILE
    digest = hashlib.sha256(DOQ_FILE.encode()).hexdigest()
    local = yaml.safe_load((project / "sources.local.yaml").read_text(encoding="utf-8"))
    assert local["checksums"]["doq"] == {"doq_nouns.tsv": digest}
    stored.unlink()   # from now on verified like every source: another file in the mirror is refused
    write(mirror / "doq" / "noun_obj.csv", DOQ_FILE.replace("1.9", "9.1"))
    assert main(fetch) == 1 and "sha256 mismatch" in capsys.readouterr().err and not stored.exists()
    write(mirror / "doq" / "noun_obj.csv", DOQ_FILE)
    assert main(fetch) == 0

    # the paper profile's object sizes read it (the pairs from the object_sizes source), with DoQ's provenance
    params = params_file(tmp_path / "p.yaml", {"tables": {"object_sizes": {"source": "doq", "capped": "refuse"}}})
    out = tmp_path / "tables"
    assert main(["tables", "object_sizes", "--out", str(out), "--manifest", str(manifest), "--params",
                 str(params)]) == 0
    sizes = read_tables(out)["sizes"].set_index("object")
    assert sizes.loc["lion", "size_m"] == 1.9 and sizes.loc["lion", "source"] == "doq"
    report = read_report(out)
    assert report["sources"]["doq"]["files"] == {"doq_nouns.tsv": digest}
    assert "capped" not in report["sources"]["doq"] and "capped" not in report["sources"]["object_sizes"]
    capped_check.check({"tables": {"object_sizes": {"source": "doq", "capped": "refuse"}}}, manifest, mirror)


def test_an_accepted_cap_is_recorded_where_the_tables_are_made_and_nothing_else_is(project, tmp_path):
    manifest = project / "sources.yaml"
    runs = {"smoke": {"source": "mirror_sets"}, "accepted": {"source": "mirror_sets", "capped": "accept"}}
    reports = {}
    for name, section in runs.items():
        out = tmp_path / name
        params = params_file(tmp_path / f"{name}.yaml", {"tables": {"object_sizes": section}})
        assert main(["tables", "object_sizes", "--out", str(out), "--manifest", str(manifest), "--params",
                     str(params)]) == 0
        reports[name] = read_report(out)
    assert "capped" not in str(reports["smoke"])   # the default profile's tables: as before, byte for byte
    assert reports["smoke"]["params"] == {k: v for k, v in reports["accepted"]["params"].items() if k != "capped"}
    assert reports["accepted"]["sources"]["object_sizes"]["capped"] == {
        "table_set": "object_sizes", "source": "mirror_sets", "accepted_by": "tables.object_sizes.capped: accept",
        "cap": "the mirror's size sets cap OBJECTS COMPARISON at 674 train rows (the released probe's 5,000)"}
    assert capped.capped_of(reports["accepted"]["sources"]) == [
        "object_sizes: the mirror's size sets cap OBJECTS COMPARISON at 674 train rows (the released probe's 5,000)"]
    assert capped.capped_of(reports["smoke"]["sources"]) == []
    from probekit.sources.loaders.wikidata import SOURCE_NAMES

    assert SOURCE_NAMES["sparql"] == capped.SPARQL_CACHE == "wikidata_sparql"
