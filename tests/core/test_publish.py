"""`probes publish` and `probes versions` on a small data root built by the real writers (an oLMpics probe by
its generator, CALUM pairs, a ParaRel cloze set, a probe whose columns mix shapes): the dry-run folder loads back
row for row with `datasets`, and the push runs the real `huggingface_hub` client against a fake Hub on loopback
(tests/hub_server.py): one commit per publish, none when nothing changed, only the changed config's files,
retries, licence refusals, and the token nowhere."""

from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from probekit.errors import DataError
from probekit.hub import export as hub_export
from probes.main import main

from helpers import REPO, small_age_comparison

TOKEN = "hf_SENTINELsentinel0123456789abcdefXYZ"
CONFIGS = ["age_comparison", "age_comparison-nolang", "calum-rte-original", "calum-rte-reverse", "calum-rte-signal",
           "mixed", "pararel-P19", "pararel-P37"]
RESTRICTED = {"calum-rte-original", "calum-rte-reverse", "calum-rte-signal", "pararel-P19", "pararel-P37"}


def _calum(out: Path, manifest) -> None:
    import generators.calum.generator as calum
    from probekit.data.pairs import write_pair_dataset
    from probekit.params import ParamsFile
    from probekit.sources.manifest import provenance

    pairs = pd.DataFrame([{"task": "rte", "split": split, "idx": str(i), "sentence1": f"{split} first {i}.",
                           "sentence2": f"{split} second {i}.", "line": i + 2,
                           "label": None if split == "test" else ["entailment", "not_entailment"][i % 2]}
                          for split in ("train", "dev", "test") for i in range(3)])
    variants, meta = calum.build(ParamsFile(None, {"calum": {"task": "rte"}}), {"glue": {"pairs": pairs}})
    meta |= {"license": "other", "sources": {"glue": provenance(manifest["glue"])}}
    write_pair_dataset(out, variants, meta, calum.card)


def _pararel(out: Path, manifest) -> None:
    from probekit.data.cloze import write_cloze_set
    from probekit.sources.manifest import provenance

    relations = {"P19": (["[X] was born in [Y].", "[X] is a native of [Y]."], [("Ada", "London"), ("Kurt", "Brno")]),
                 "P37": (["The official language of [X] is [Y]."], [("Peru", "Spanish"), ("Chad", "French"),
                                                                   ("Mali", "French")])}
    rows = {"relations": [], "patterns": [], "tuples": [], "edges": []}
    for rel, (patterns, tuples) in relations.items():
        rows["relations"].append({"relation": rel, "class": "N-1", "candidates": sorted({o for _, o in tuples})})
        rows["patterns"] += [{"relation": rel, "pattern_id": i, "pattern": p} for i, p in enumerate(patterns)]
        rows["tuples"] += [{"relation": rel, "tuple_id": f"{rel}-{i}", "subject": s, "object": o}
                           for i, (s, o) in enumerate(tuples)]
    meta = {"probe": "pararel", "format": "cloze_set", "definition_version": "1", "generator_version": "1",
            "params": {}, "license": "cc-by-nc-4.0", "sources": {"pararel": provenance(manifest["pararel"])},
            "relations": {r: {"class": "N-1", "patterns": len(p), "tuples": len(t), "candidates": len({o for _, o in t})}
                          for r, (p, t) in relations.items()}}
    write_cloze_set(out, rows, meta, lambda m: "---\nlanguage: [en]\nprobekit: {citation: pararel}\n---\n# ParaRel\n\nA query is a pattern with "
                                               "the subject at [X].\n\n| table |\n")


def _mixed(src: Path, out: Path) -> None:
    """A probe whose `args` keys and `facts` types differ from row to row (published as JSON columns)."""
    shutil.copytree(src, out)
    meta = json.loads((out / "meta.json").read_text())
    meta |= {"probe": "mixed", "format": "mc_qa", "definition_version": "2.1"}
    (out / "meta.json").write_text(json.dumps(meta))
    for split in ("train", "dev"):
        rows = [json.loads(line) for line in (out / f"{split}.jsonl").read_text().splitlines()]
        for i, row in enumerate(rows):
            row |= {"probe": "mixed", "args": {"person": "x"} if i % 2 else {"film": "y", "year": 1999},
                    "facts": [{"size": 1.5 if i % 3 else 2}, {"fixes": None}] if i % 2 else {"line": i}}
        (out / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture(scope="module")
def data_root(tmp_path_factory) -> Path:
    """A data folder like the pipeline's, small: probes/, calum/, pararel/ and a features folder to skip."""
    from probekit.sources.manifest import load_manifest

    root = tmp_path_factory.mktemp("publish") / "data"
    manifest = load_manifest(REPO / "raw/sources.yaml")
    small_age_comparison(root / "probes" / "age_comparison")
    _mixed(root / "probes" / "age_comparison" / "original", root / "probes" / "mixed" / "original")
    _calum(root / "calum" / "rte", manifest)
    _pararel(root / "pararel", manifest)
    (root / "features" / "minilm").mkdir(parents=True)
    (root / "features" / "minilm" / "meta.json").write_text('{"key": {}}')
    return root


@pytest.fixture
def data(data_root, tmp_path) -> Path:
    """A copy of the data root a test may edit."""
    return Path(shutil.copytree(data_root, tmp_path / "data"))



def _drop_row(data: Path, variant: str = "nolang", split: str = "dev") -> None:
    path = data / "probes" / "age_comparison" / variant / f"{split}.jsonl"
    path.write_text("".join(path.read_text().splitlines(keepends=True)[1:]))


def _card(text: str) -> dict:
    return yaml.safe_load(text.split("---\n")[1])


def test_the_dry_run_folder_loads_back_row_for_row(data_root, tmp_path, capsys):
    import datasets

    out = tmp_path / "upload"
    assert main(["publish", "--dry-run", str(out), "--data", str(data_root)]) == 0
    printed = capsys.readouterr().out
    assert "dry run: wrote 8 configs" in printed and "a push like this would be refused" in printed
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == sorted(
        [".probekit.json", "README.md"] + [f"{c}/{s}-00000-of-00001.parquet" for c in CONFIGS
                         for s in (("test",) if c.startswith("pararel") else ("train", "dev", "test")
                                   if c.startswith("calum") else ("train", "dev"))])
    header = _card((out / "README.md").read_text())
    assert [c["config_name"] for c in header["configs"]] == CONFIGS
    assert header["configs"][0]["data_files"] == [{"split": "train", "path": "age_comparison/train-*"},
                                                  {"split": "dev", "path": "age_comparison/dev-*"}]
    assert header["license"] == ["apache-2.0", "cc-by-nc-4.0", "other"]
    assert set(header["task_categories"]) == {"fill-mask", "multiple-choice", "question-answering",
                                              "text-classification"}
    assert header["language"] == ["en"] and header["size_categories"] == ["n<1K"]
    assert header["source_datasets"] == ["extended|glue", "extended|pararel", "original"]
    from probekit.hub.card import Card

    blocks = Card.parse((out / "README.md").read_text()).blocks   # a dataset's shared keys written once
    assert {n for n, b in blocks.items() if b["restricted"]} == RESTRICTED
    assert "MSR-SSLA" in blocks["calum-rte-reverse"]["restricted"] and "CC BY-NC" in blocks["pararel-P19"]["restricted"]
    assert blocks["mixed"]["version"].startswith("2.1.0+") and blocks["pararel-P19"]["template_ids"] == ["0", "1"]
    assert "template_file" not in blocks["age_comparison"]   # a path the card's reader cannot open
    assert blocks["age_comparison"]["templates_sha256"] == __import__("hashlib").sha256(
        (REPO / "generators" / "age_comparison" / "probe.yaml").read_bytes()).hexdigest()
    assert blocks["mixed"]["templates_sha256"] is None   # no generators/mixed/probe.yaml
    assert header["probekit"]["sources"]["glue"]   # file checksums, once per source
    body = (out / "README.md").read_text()
    assert "@article{jang-etal-2021-calum" in body and "@article{elazar-etal-2021-measuring" in body
    assert "Variant `nolang` (control: `nolang`, base: `original`)" in body

    infos = {i["config_name"]: i for i in header["dataset_info"]}
    assert list(infos) == CONFIGS and list(infos["mixed"]) == ["config_name", "features", "splits", "download_size",
                                                               "dataset_size"]
    assert {"name": "args", "dtype": "json"} in infos["mixed"]["features"]

    datasets.disable_progress_bars()
    for config in hub_export.discover(data_root):
        assert re.fullmatch(r"\d+\.\d+\.\d+\+[0-9a-f]{12}", blocks[config.name]["version"])
        exp = hub_export.export(config, data_root)
        loaded = datasets.load_dataset(str(out), config.name, cache_dir=str(tmp_path / "cache"))
        assert list(loaded) == list(exp.rows)
        assert [(s["name"], s["num_examples"]) for s in infos[config.name]["splits"]] == [
            (split, len(rows)) for split, rows in exp.rows.items()]
        for split, rows in exp.rows.items():
            assert loaded[split].to_list() == rows, (config.name, split)
            # the card's features (read by load_dataset) are those the Parquet file holds
            schema = pq.read_schema(out / config.name / f"{split}-00000-of-00001.parquet")
            assert loaded[split].features == datasets.Features.from_arrow_schema(schema), (config.name, split)
    mixed = datasets.load_dataset(str(out), "mixed", split="dev", cache_dir=str(tmp_path / "cache"))
    assert isinstance(mixed.features["args"], datasets.Json) and mixed[1]["facts"][0]["size"] == 1.5
    raw = [json.loads(line) for line in (data_root / "probes/age_comparison/original/dev.jsonl").read_text().splitlines()]
    original = datasets.load_dataset(str(out), "age_comparison", split="dev", cache_dir=str(tmp_path / "cache"))
    assert original.to_list() == raw   # the local rows, unchanged
    pararel = datasets.load_dataset(str(out), "pararel-P19", split="test", cache_dir=str(tmp_path / "cache"))
    assert pararel[0] == {"id": "P19-0/0", "relation": "P19", "pattern_id": 0, "tuple_id": "P19-0", "sub_label": "Ada",
                          "obj_label": "London", "pattern": "[X] was born in [Y].", "query": "Ada was born in [MASK].",
                          "candidates": ["Brno", "London"]}


def test_a_split_over_the_shard_size_is_written_in_shards_that_load_back_in_order(data_root, tmp_path):
    import datasets

    from probekit.hub.parquet import write_parquet

    exp = hub_export.export(next(c for c in hub_export.discover(data_root, ["mixed"])), data_root)
    info = write_parquet(exp, tmp_path / "up", max_shard_bytes=1000)
    folder = tmp_path / "up" / "mixed"
    sizes = {s["name"]: s["num_bytes"] for s in info["splits"]}
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        f"{s}-{i:05d}-of-{n:05d}.parquet" for s in exp.rows for n in [sizes[s] // 1000 + 1] for i in range(n))
    assert len(list(folder.iterdir())) > len(exp.rows)
    assert info["download_size"] == sum(p.stat().st_size for p in folder.iterdir())
    datasets.disable_progress_bars()
    loaded = datasets.load_dataset("parquet", data_files={s: str(folder / f"{s}-*.parquet") for s in exp.rows},
                                   cache_dir=str(tmp_path / "cache"))
    for split, rows in exp.rows.items():
        assert loaded[split].to_list() == rows, split


def test_the_card_keeps_a_foreign_config_and_writes_a_lone_default_info_without_its_name():
    from probekit.hub.card import Card, render

    info = {"features": [{"name": "x", "dtype": "int64"}], "splits": [{"name": "train", "num_examples": 1}]}
    text = "---\n" + yaml.safe_dump({"configs": [{"config_name": "default", "data_files": "data/*.csv"}],
                                     "dataset_info": info}) + "---\n# someone else's\n"
    card = Card.parse(text)
    assert card.extra_configs == {"default": {"data_files": "data/*.csv"}} and card.infos == {"default": info}
    header = _card(render(card))
    assert header["configs"] == [{"config_name": "default", "data_files": "data/*.csv"}]
    assert header["dataset_info"] == info   # one config: the entry alone, as push_to_hub writes it


def test_fingerprints_change_only_with_the_rows_and_versions_compare_with_a_dry_run(data, tmp_path, capsys):
    out = tmp_path / "upload"
    assert main(["publish", "--dry-run", str(out), "--data", str(data)]) == 0
    before = _card((out / "README.md").read_text())["probekit"]["configs"]
    capsys.readouterr()
    assert main(["versions", "--data", str(data), "--published", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"compared with {out}" and len(lines) == 1 + len(CONFIGS)
    assert all(line.endswith("  unchanged") for line in lines[1:])

    _drop_row(data)
    meta_path = data / "probes/age_comparison/nolang/meta.json"
    meta = json.loads(meta_path.read_text())
    meta["splits"]["dev"]["template_ids"] = ["paper", "extra"]
    meta_path.write_text(json.dumps(meta))
    assert main(["versions", "--data", str(data), "--published", str(out), "--probes", "age_*"]) == 0
    lines = dict(re.split(r"\s+", line, maxsplit=1) for line in capsys.readouterr().out.splitlines()[1:])
    assert set(lines) == {"age_comparison", "age_comparison-nolang"}
    old, new = before["age_comparison-nolang"]["fingerprint"][:12], None
    changed = lines["age_comparison-nolang"]
    new = changed.split()[0].split("+")[1]
    # the examples first (one dev row dropped: one removed), then the card's fields
    assert changed == f"1.0.0+{new}  changed: +0 -1 ~0, fingerprint {old} -> {new}, dev 6 -> 5, templates +extra"
    assert lines["age_comparison"].endswith("unchanged")

    after = {c.name: hub_export.export(c, data).block for c in hub_export.discover(data)}
    assert [n for n in CONFIGS if after[n]["fingerprint"] != before[n]["fingerprint"]] == ["age_comparison-nolang"]


def test_versions_must_be_semantic_and_the_error_names_the_file(data, tmp_path, capsys):
    assert [hub_export.semantic_version(v, "f") for v in (1, "2", "1.2", " 3.4.5 ")] == ["1.0.0", "2.0.0", "1.2.0",
                                                                                       "3.4.5"]
    for bad in ("v1", "1.2.3.4", "", True, None, 1.5):
        with pytest.raises(DataError, match="is not a semantic version MAJOR"):
            hub_export.semantic_version(bad, "f")
    meta_path = data / "probes/mixed/original/meta.json"
    meta_path.write_text(json.dumps(json.loads(meta_path.read_text()) | {"definition_version": "one"}))
    assert main(["publish", "--dry-run", str(tmp_path / "o"), "--data", str(data)]) == 1
    err = capsys.readouterr().err
    assert f"{meta_path} definition_version (the version of generators/mixed/probe.yaml): version 'one' is not a " \
           "semantic version" in err
    assert not (tmp_path / "o").exists()
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    assert main(["publish", "--dry-run", str(tmp_path / "mine"), "--data", str(data), "--probes", "calum"]) == 2
    assert "holds notes.txt, which probekit did not write" in capsys.readouterr().err
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


def test_publish_commits_once_then_nothing_then_only_the_changed_config(data, hub, tmp_path, capsys, caplog):
    caplog.set_level(logging.DEBUG)
    repo = "org/probes"
    args = ["publish", "--repo-id", repo, "--data", str(data), "--accept-restricted-licences"]
    assert main(args) == 0
    assert len(hub.commits(repo)) == 2   # the repo's first commit, then ours
    files = hub.files(repo)
    assert {p.split("/")[0] for p in files} == {".gitattributes", "README.md", *CONFIGS}
    assert main(["publish", "--dry-run", str(tmp_path / "dry"), "--data", str(data), "--repo-id", repo]) == 0
    assert files["README.md"].decode() == (tmp_path / "dry" / "README.md").read_text()   # the same folder
    assert all(files[p.relative_to(tmp_path / "dry").as_posix()] == p.read_bytes()
               for p in (tmp_path / "dry").rglob("*.parquet"))
    first = hub.last_commit(repo)

    assert main(args) == 0
    assert len(hub.commits(repo)) == 2
    assert "nothing changed (8 configs with the fingerprints of the Hub's card): no commit" in capsys.readouterr().out

    _drop_row(data)
    assert main(args) == 0
    commits = hub.commits(repo)
    assert len(commits) == 3
    touched = {p for p, sha in hub.last_commit(repo).items() if sha == commits[-1]}
    assert touched == {"README.md", "age_comparison-nolang/train-00000-of-00001.parquet",
                       "age_comparison-nolang/dev-00000-of-00001.parquet"}
    assert all(sha == first[p] for p, sha in hub.last_commit(repo).items() if p not in touched)
    out = capsys.readouterr().out
    assert "1 config uploaded (age_comparison-nolang), 7 unchanged" in out

    assert main(["versions", "--data", str(data), "--repo-id", repo]) == 0
    assert all(line.endswith("unchanged") for line in capsys.readouterr().out.splitlines()[1:])
    assert main(["publish", "--repo-id", repo, "--data", str(data), "--probes", "pararel"]) == 1   # public: refused
    captured = capsys.readouterr()
    for text in (captured.out, captured.err, caplog.text, *(p.read_bytes().decode("utf-8", "replace")
                                                            for p in tmp_path.rglob("*") if p.is_file()),
                 *(b.decode("utf-8", "replace") for b in hub.files(repo).values())):
        assert TOKEN not in text


def test_a_publish_of_part_keeps_the_rest_of_the_card(data, hub, capsys):
    repo = "org/part"
    assert main(["publish", "--repo-id", repo, "--data", str(data), "--probes", "age_comparison,mixed"]) == 0
    assert main(["publish", "--repo-id", repo, "--data", str(data), "--probes", "calum", "--private"]) == 1
    assert "exists and is public" in capsys.readouterr().err   # --private cannot hide an existing public repo
    _drop_row(data, "original", "train")
    assert main(["publish", "--repo-id", repo, "--data", str(data), "--probes", "age_comparison"]) == 0
    header = _card(hub.files(repo)["README.md"].decode())
    assert [c["config_name"] for c in header["configs"]] == ["age_comparison", "age_comparison-nolang", "mixed"]
    assert header["probekit"]["configs"]["age_comparison"]["counts"] == {"train": 11, "dev": 6}
    assert len(hub.commits(repo)) == 3


def test_restricted_configs_are_refused_in_public_and_allowed_in_private(data, hub, capsys):
    args = ["publish", "--data", str(data), "--probes", "calum,pararel"]
    assert main([*args, "--repo-id", "org/public"]) == 1
    err = capsys.readouterr().err
    assert "org/public would be public (no --private), and 5 configs are restricted" in err
    assert "MSR-SSLA" in err and "CC BY-NC" in err and "--accept-restricted-licences" in err
    assert hub.requests == []   # refused before any request
    assert main([*args, "--repo-id", "org/private", "--private"]) == 0
    assert hub.repos["org/private"].private and len(hub.commits("org/private")) == 2


def test_network_failures_are_retried_then_fail_with_one_clear_line(data, hub, capsys):
    repo = "org/flaky"
    args = ["publish", "--repo-id", repo, "--data", str(data), "--probes", "age_comparison"]
    hub.fail("commit", 2)
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "attempt 1 of 5 failed" in out and "attempt 2 of 5 failed" in out and "503" in out
    assert len(hub.commits(repo)) == 2

    _drop_row(data)
    before = hub.commits(repo), hub.files(repo)
    hub.fail("commit", -1)
    assert main(args) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"probes publish: error: {repo}: gave up after 5 attempts (last: ")
    assert f"HTTP 503 on POST {hub.url}/api/datasets/{repo}/commit/main: Service Unavailable (fake hub)" in err[0]
    assert "every commit attempt failed, and a Hub commit is all or nothing: the repo is as it was" in err[0]
    assert (hub.commits(repo), hub.files(repo)) == before   # unchanged

    hub.fail("info", -1)
    assert main(args) == 1
    assert "nothing was committed" in capsys.readouterr().err


def test_a_branch_and_a_missing_token(data, hub, monkeypatch, capsys):
    repo = "org/branchy"
    assert main(["publish", "--repo-id", repo, "--data", str(data), "--probes", "mixed", "--revision", "v2"]) == 0
    assert "README.md" in hub.files(repo, "v2") and "README.md" not in hub.files(repo, "main")
    assert "@v2: commit" in capsys.readouterr().out
    monkeypatch.setenv("HF_TOKEN", "hf_wrong")
    assert main(["publish", "--repo-id", "org/other", "--data", str(data), "--probes", "mixed"]) == 1
    captured = capsys.readouterr()
    assert f"HTTP 401 on POST {hub.url}/api/repos/create: Invalid credentials" in captured.err
    assert "allowed to write there?" in captured.err and "attempt" not in captured.out   # not retried
    monkeypatch.delenv("HF_TOKEN")
    monkeypatch.setattr("huggingface_hub.get_token", lambda: None)
    assert main(["publish", "--repo-id", repo, "--data", str(data), "--probes", "mixed"]) == 2
    assert "no Hugging Face token: set HF_TOKEN or log in" in capsys.readouterr().err
