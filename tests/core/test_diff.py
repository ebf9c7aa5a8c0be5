"""`probes diff`: example keys that survive a reworded template, the diff of two versions of a probe built by its
generator (a reworded stem, a narrowed age range counted by hand), ParaRel and pair-set keys, the JSON and JSONL
outputs, a git revision read through DVC, and one short line for each bad input, with nothing written."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from probekit.data.examples import example_id
from probekit.data.compare import compare_split
from probekit.data.keys import frame
from probekit.versions.diff import diff
from probekit.versions.sides import folder_side
from probes.main import main

from helpers import dvc_env, write_toy_cloze_set

BIN = Path(sys.executable).parent
OLD_WORDS, NEW_WORDS = "than me in age, If I am", "than I am, given that I am"


def _generate(out: Path, tmp: Path, **section) -> Path:
    params = tmp / f"params-{out.name}.yaml"
    params.write_text(yaml.safe_dump({"age_comparison": {"size": {"train": 40, "dev": 30},
                                                         "variants": ["original", "nolang", "perturbed",
                                                                      "release_phrasing"], **section}}))
    assert main(["generate", "age_comparison", "--params", str(params), "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def versions(tmp_path_factory) -> Path:
    """Version 1 of AGE COMPARISON (4 variants, generated), and the same facts with the `original` template
    reworded as a regeneration writes it: new stems and ids, the perturbed control's stems from the new text,
    and every control row pointing at its source row's new id."""
    root = tmp_path_factory.mktemp("diff")
    old = _generate(root / "old" / "age_comparison", root)
    new = root / "reworded" / "age_comparison"
    shutil.copytree(old, new)
    ids = {}
    for split in ("train", "dev"):
        path = new / "original" / f"{split}.jsonl"
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        for r in rows:
            q = r["question"]
            q["stem"] = q["stem"].replace(OLD_WORDS, NEW_WORDS)
            answer = next(c["text"] for c in q["choices"] if c["label"] == r["answerKey"])
            new_id = example_id("age_comparison", "original", r["template_id"], q["stem"],
                                [c["text"] for c in q["choices"]], answer)
            ids[r["id"]], r["id"] = new_id, new_id
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        for control in ("nolang", "perturbed"):
            path = new / control / f"{split}.jsonl"
            rows = [json.loads(line) for line in path.read_text().splitlines()]
            for r in rows:
                r["source_id"] = ids[r["source_id"]]
                if control == "perturbed":
                    r["question"]["stem"] = r["question"]["stem"] + " (reworded)"
            path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    _generate(root / "narrowed" / "age_comparison", root, values={"ages": {"train": [50, 80], "dev": [15, 38]},
                                                                   "years": {"train": [1830, 1919],
                                                                             "dev": [1920, 2000]}})
    return root


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _by(result, variant: str, split: str) -> dict:
    return next(r for r in result.records if r["variant"] == variant and r["split"] == split)


def test_a_reworded_template_changes_every_stem_and_keeps_every_key(versions):
    result = diff(folder_side(versions / "old/age_comparison"), folder_side(versions / "reworded/age_comparison"))
    for split, n in (("train", 40), ("dev", 30)):
        r = _by(result, "original", split)
        assert (r["added"], r["removed"], r["changed"], r["unchanged"]) == (0, 0, n, 0)
        assert r["fields"] == {"stem": n}   # the answers, choices and template ids are the same
        assert r["balance"]["old"] == r["balance"]["new"] and r["balance"]["moved"] is False
        assert r["templates"]["added"] == r["templates"]["removed"] == []
        ex = r["examples"]["changed"][0]
        assert OLD_WORDS in ex["old"]["stem"] and NEW_WORDS in ex["new"]["stem"] and ex["fields"] == ["stem"]
        # the controls derive from it: each is named, with what changed
        assert _by(result, "nolang", split)["fields"] == {"source": n}
        assert _by(result, "perturbed", split)["fields"] == {"stem": n, "source": n}
        assert _by(result, "release_phrasing", split)["changed"] == 0
    out = subprocess.run([str(BIN / "probes"), "diff", str(versions / "reworded/age_comparison"), "--old",
                          str(versions / "old/age_comparison")], capture_output=True, text=True, check=True).stdout
    assert "| age_comparison | original | dev | main | 0 | 0 | 30 (stem 30) | 0 |" in out
    assert "`age_comparison` / `nolang` (control of `original`), dev: +0 −0 ~30 (source 30): its rows' own text" in out
    assert "Untouched (1): age_comparison/release_phrasing." in out


def test_a_narrowed_age_range_adds_and_removes_what_a_hand_count_gives(versions, tmp_path):
    out = tmp_path / "diff.json"
    examples = tmp_path / "changes.jsonl"
    assert main(["diff", str(versions / "narrowed/age_comparison"), "--old", str(versions / "old/age_comparison"),
                 "--json", str(out), "--examples", str(examples)]) == 0
    records = json.loads(out.read_text())["datasets"]
    r = next(x for x in records if x["variant"] == "original" and x["split"] == "train")
    old = _rows(versions / "old/age_comparison/original/train.jsonl")
    new = _rows(versions / "narrowed/age_comparison/original/train.jsonl")
    a, b = ({(x["args"]["age1"], x["args"]["age2"]) for x in rows} for rows in (old, new))
    assert (r["added"], r["removed"], r["unchanged"]) == (len(b - a), len(a - b), len(a & b)) and r["added"] > 30
    answers = lambda rows: {w: sum(1 for x in rows if x["question"]["choices"][ord(x["answerKey"]) - 65]["text"]
                                   == w) for w in ("older", "younger")}   # noqa: E731
    assert r["balance"]["old"] == answers(old) and r["balance"]["new"] == answers(new)
    assert isinstance(r["balance"]["p_value"], float) and r["balance"]["tvd"] is not None
    dev = next(x for x in records if x["variant"] == "original" and x["split"] == "dev")
    assert dev["unchanged"] == 30   # the dev range is the same: every dev example kept
    for field in ("dataset", "variant", "split", "added", "removed", "changed", "unchanged"):
        assert field in r
    lines = [json.loads(line) for line in examples.read_text().splitlines()]
    assert len(lines) == sum(x["added"] + x["removed"] + x["changed"] for x in records)
    added = next(x for x in lines if x["status"] == "added" and x["variant"] == "original")
    assert added["old"] is None and added["new"]["args"]["age1"] >= 50


def _cloze(folder: Path, relations: dict) -> Path:
    meta = {"probe": "pararel", "format": "cloze_set", "definition_version": "1", "generator_version": "1",
            "params": {}, "license": "cc-by-nc-4.0",
            "relations": {r: {"class": "N-1", "patterns": len(p), "tuples": len(t)} for r, (p, t) in relations.items()}}
    return write_toy_cloze_set(folder, relations, meta)


def test_keys_of_pararel_queries_are_their_facts_and_patterns(tmp_path):
    old = _cloze(tmp_path / "old", {"P19": (["[X] was born in [Y].", "[X] is from [Y]."],
                                            [("Ada", "London"), ("Kurt", "Brno")])})
    new = _cloze(tmp_path / "new", {"P19": (["[X] was born in [Y] .", "[X] is from [Y]."],
                                            [("Ada", "London"), ("Emmy", "Erlangen")])})
    r = diff(folder_side(old), folder_side(new)).records[0]
    # Kurt's two queries removed, Emmy's added (a tuple id reused: the fact decides); Ada's first pattern reworded,
    # and both her queries answered from other candidates (Erlangen for Brno)
    assert (r["added"], r["removed"], r["changed"], r["unchanged"]) == (2, 2, 2, 0)
    assert r["fields"] == {"stem": 1, "choices": 2, "template": 1}
    assert r["variant"] == "P19" and r["dataset"] == "pararel"


def test_pair_keys_are_the_pair_and_a_label_change_is_an_answer_change():
    old = [{"pair_id": f"rte-dev-{i}", "task": "rte", "split": "dev", "idx": str(i), "label": "entailment",
            "variant": "original", "sentence1": f"s{i}", "sentence2": "t"} for i in range(4)]
    new = [dict(r) for r in old[1:]]
    new[0] = {**new[0], "label": "not_entailment"}
    record, merged = compare_split("pair_cls", old, new)
    assert (record["added"], record["removed"], record["changed"], record["unchanged"]) == (0, 1, 1, 2)
    assert record["fields"] == {"answer": 1}
    assert set(merged.loc[merged["status"] == "removed", "key"]) == {"rte-dev-0"}


def test_two_rows_with_one_key_are_told_apart_by_their_order():
    rows = [{"question": {"stem": f"x{i} [MASK]", "choices": [{"label": "A", "text": "a"}]}, "answerKey": "A",
             "args": {"x": 1}} for i in range(3)]
    keys = list(frame("mc_mlm", rows)["key"])
    assert keys[1] == keys[0] + "#2" and keys[2] == keys[0] + "#3"


def test_a_moved_answer_balance_is_flagged():
    def rows(n_older, n_younger):
        return [{"question": {"stem": "s", "choices": [{"label": "A", "text": w}, {"label": "B", "text": "x"}]},
                 "answerKey": "A", "args": {"i": i, "w": w}}
                for i, w in enumerate(["older"] * n_older + ["younger"] * n_younger)]
    from scipy.stats import chi2_contingency

    record, _ = compare_split("mc_mlm", rows(50, 50), rows(80, 20))
    assert record["balance"]["moved"] is True
    assert record["balance"]["p_value"] == pytest.approx(chi2_contingency([[50, 50], [80, 20]]).pvalue)
    assert record["balance"]["tvd"] == pytest.approx(0.3)


# --- bad input: one line, nothing written ------------------------------------------------------------------------

def _fails(argv, capsys, tmp_path) -> str:
    out = tmp_path / "never.json"
    assert main([*argv, "--json", str(out)]) != 0
    err = capsys.readouterr().err.strip()
    assert not out.exists()
    assert len(err.splitlines()) == 1, err
    return err


def test_two_different_probes_are_refused(versions, tmp_path, capsys):
    other = _cloze(tmp_path / "pararel", {"P19": (["[X] was born in [Y]."], [("Ada", "London")])})
    err = _fails(["diff", str(versions / "old/age_comparison"), "--old", str(other)], capsys, tmp_path)
    assert "two different probes: pararel" in err and "age_comparison" in err


def test_two_different_formats_are_refused(versions, tmp_path, capsys):
    other = tmp_path / "age_comparison"
    shutil.copytree(versions / "old/age_comparison", other)
    meta = json.loads((other / "original/meta.json").read_text())
    (other / "original/meta.json").write_text(json.dumps({**meta, "format": "mc_qa"}))
    err = _fails(["diff", str(other), "--old", str(versions / "old/age_comparison")], capsys, tmp_path)
    assert "config age_comparison: two different formats (mc_mlm in the old side, mc_qa in the new)" in err


def test_a_hub_that_cannot_be_reached_is_one_line(versions, tmp_path, capsys, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")   # nothing listens on the discard port
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    err = _fails(["diff", str(versions / "old/age_comparison"), "--old", "hf://datasets/org/probes@v1"], capsys,
                 tmp_path)
    assert err.startswith("probes diff: error: hf://datasets/org/probes@v1: the Hub (http://127.0.0.1:9) cannot be reached")


# --- a git revision, through DVC ---------------------------------------------------------------------------------

def _git_dvc(project: Path, *cmd: str) -> str:
    env = dvc_env({**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"})
    done = subprocess.run(list(cmd), cwd=project, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def project(versions, tmp_path) -> Path:
    """A git + DVC project whose last commit tracks version 1 with `dvc add`; the working tree holds the
    reworded version."""
    project = tmp_path / "project"
    data = project / "data" / "probes" / "age_comparison"
    shutil.copytree(versions / "old/age_comparison", data)
    _git_dvc(project, "git", "init", "-q")
    _git_dvc(project, "dvc", "init", "-q")
    _git_dvc(project, "dvc", "add", "-q", "data/probes/age_comparison")
    _git_dvc(project, "git", "add", "-A")
    _git_dvc(project, "git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "v1")
    shutil.rmtree(data)
    shutil.copytree(versions / "reworded/age_comparison", data)
    return project


def test_head_against_the_working_tree_reads_the_dvc_cache(project, monkeypatch, tmp_path):
    monkeypatch.chdir(project)
    out = tmp_path / "d.json"
    assert main(["diff", "data/probes/age_comparison", "--json", str(out)]) == 0   # --old HEAD, --new the tree
    d = json.loads(out.read_text())
    assert d["old"] == "data/probes/age_comparison at HEAD"
    r = next(x for x in d["datasets"] if x["variant"] == "original" and x["split"] == "dev")
    assert (r["changed"], r["added"], r["removed"], r["fields"]) == (30, 0, 0, {"stem": 30})


def test_a_revision_that_does_not_exist_is_one_line(project, monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(project)
    err = _fails(["diff", "data/probes/age_comparison", "--old", "v9"], capsys, tmp_path)
    assert err == f"probes diff: error: --old/--new v9: no such revision in the git project at {project}"


def test_data_missing_from_the_cache_names_dvc_fetch_and_the_remote(project, monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(project)
    shutil.rmtree(project / ".dvc" / "cache")
    err = _fails(["diff", "data/probes/age_comparison"], capsys, tmp_path)
    assert err.startswith("probes diff: error: data/probes/age_comparison at HEAD is not in this project's DVC cache: no DVC "
                          "remote is configured")
    _git_dvc(project, "dvc", "remote", "add", "-d", "store", str(tmp_path / "store"))
    err = _fails(["diff", "data/probes/age_comparison"], capsys, tmp_path)
    assert "`dvc fetch -r store` (or `dvc pull -r store`) gets it from the remote 'store'" in err


# --- a published Hub revision ------------------------------------------------------------------------------------


def test_a_published_hub_revision_is_a_side(versions, hub, tmp_path, capsys):
    assert main(["publish", "--repo-id", "org/probes", "--data", str(versions / "old")]) == 0
    out = tmp_path / "d.json"
    assert main(["diff", str(versions / "reworded/age_comparison"), "--old", "hf://datasets/org/probes@main",
                 "--json", str(out)]) == 0
    from_hub = json.loads(out.read_text())["datasets"]
    local = diff(folder_side(versions / "old/age_comparison"), folder_side(versions / "reworded/age_comparison"))
    key = ("config", "split", "added", "removed", "changed", "unchanged", "fields", "balance", "templates")
    assert [{k: r[k] for k in key} for r in from_hub] == [{k: r[k] for k in key} for r in local.records]
    capsys.readouterr()
    err = _fails(["diff", str(versions / "reworded/age_comparison"), "--old", "hf://datasets/org/probes@v7"],
                 capsys, tmp_path)
    assert err == "probes diff: error: hf://datasets/org/probes@v7: no such revision on the Hub"
    err = _fails(["diff", str(versions / "reworded/age_comparison"), "--old", "hf://datasets/org/nothing"],
                 capsys, tmp_path)
    assert "hf://datasets/org/nothing: no such Hub dataset repo" in err


def _predictions(folder: Path, rows: list[dict], predict, model: str = "m") -> Path:
    folder.mkdir(parents=True)
    (folder / "predictions.jsonl").write_text("".join(json.dumps(
        {"id": r["id"], "prediction": predict(r), "gold": r["answerKey"], "correct": predict(r) == r["answerKey"]})
        + "\n" for r in rows))
    (folder / "metrics.json").write_text(json.dumps({"model": model, "probe": "age_comparison", "variant": "original",
                                                     "split": "dev"}))
    return folder / "predictions.jsonl"


def test_two_prediction_files_give_the_flips_accuracies_and_a_paired_interval(versions, tmp_path, capsys):
    old_rows = _rows(versions / "old/age_comparison/original/dev.jsonl")
    new_rows = _rows(versions / "reworded/age_comparison/original/dev.jsonl")
    old = _predictions(tmp_path / "old", old_rows, lambda r: "A")
    new = _predictions(tmp_path / "new", new_rows, lambda r: r["answerKey"])   # the reworded stems: all right
    out, examples = tmp_path / "d.json", tmp_path / "e.jsonl"
    assert main(["diff", str(versions / "reworded/age_comparison"), "--old", str(versions / "old/age_comparison"),
                 "--old-predictions", str(old), "--new-predictions", str(new), "--json", str(out),
                 "--examples", str(examples)]) == 0
    effect = json.loads(out.read_text())["effects"][0]
    wrong_before = sum(r["answerKey"] != "A" for r in old_rows)
    assert (effect["config"], effect["split"]) == ("age_comparison", "dev")
    assert effect["flips"]["wrong_to_right"] == wrong_before and effect["flips"]["right_to_wrong"] == 0
    assert effect["accuracy"]["common_old"] == pytest.approx(1 - wrong_before / 30)
    assert effect["accuracy"]["common_new"] == 1.0
    assert effect["change"]["low"] > 0 and "flipped" not in effect   # the flips themselves are in the JSONL
    flips = [json.loads(line) for line in examples.read_text().splitlines() if '"flip"' in line]
    assert len(flips) == wrong_before and all(f["flip"]["flip"] == "wrong->right" for f in flips)
    assert "## Effect on the model's answers" in capsys.readouterr().out
    other = _predictions(tmp_path / "other", new_rows, lambda r: "A", model="another")
    err = _fails(["diff", str(versions / "reworded/age_comparison"), "--old", str(versions / "old/age_comparison"),
                  "--old-predictions", str(old), "--new-predictions", str(other)], capsys, tmp_path)
    assert "prediction files of different models" in err


def test_a_model_scores_only_the_changed_and_added_examples(versions, tiny_bert, tmp_path, capsys):
    out, examples = tmp_path / "d.json", tmp_path / "e.jsonl"
    assert main(["diff", str(versions / "reworded/age_comparison"), "--old", str(versions / "old/age_comparison"),
                 "--model", str(tiny_bert), "--device", "cpu", "--json", str(out), "--check-unchanged", "30",
                 "--examples", str(examples)]) == 0
    effects = {e["config"]: e for e in json.loads(out.read_text())["effects"]}
    assert set(effects) == {"age_comparison", "age_comparison-nolang", "age_comparison-perturbed",
                            "age_comparison-release_phrasing"}
    original, release = effects["age_comparison"], effects["age_comparison-release_phrasing"]
    # no predictions on disk for a folder side: the old rows are scored; of the new, only what changed
    assert (original["scored"]["changed"], original["scored"]["added"], original["scored"]["reused"]) == (30, 0, 0)
    assert (release["scored"]["changed"], release["scored"]["added"], release["scored"]["reused"]) == (0, 0, 30)
    assert release["unchanged_identical"]["n"] == 30 and release["unchanged_identical"]["differing"] == 0
    # the 30 reused predictions are what scoring those examples anew gives
    assert release["unchanged_identical"]["checked"] == 30 and release["unchanged_identical"]["differing_anew"] == 0
    assert original["n"]["common"] == 30 and original["change"]["low"] <= original["change"]["diff"]
    printed = capsys.readouterr()
    assert "Scored anew: age_comparison dev: 30 changed + 0 added (reused 0)" in printed.out
    assert "age_comparison dev: scored 30 of 30: 30 changed, 0 added; reused 0" in printed.err
    # every scored example's predictions are kept, both sides, flipped or not (issue 43)
    rows = [json.loads(line) for line in examples.read_text().splitlines()]
    dev = [r for r in rows if r["split"] == "dev" and r["config"] == "age_comparison"]
    assert len(dev) == 30 and all(r["predictions"]["model"] == str(tiny_bert) for r in dev)
    assert sum("flip" in r for r in dev) < 30   # a random model flips some: the others are kept all the same
    for r in dev:
        for side in ("old", "new"):
            p = r["predictions"][side]
            assert p["scored"] is True and len(p["scores"]) == 2 and p["gold"] == r[side]["answerKey"]
            gold = ["A", "B"].index(p["gold"])
            assert p["margin"] == pytest.approx(p["scores"][gold] - p["scores"][1 - gold])
            assert p["correct"] is (p["prediction"] == p["gold"]) is (p["margin"] > 0)
            assert p["text"] == next(c["text"] for c in r[side]["question"]["choices"] if c["label"] == p["prediction"])
    # a control whose rows only point at new ids: its examples carry predictions too; none on train (not scored)
    assert all("predictions" in r for r in rows if r["split"] == "dev" and r["config"] == "age_comparison-nolang")
    assert not any("predictions" in r for r in rows if r["split"] == "train")


def test_a_config_with_the_same_bytes_on_both_sides_is_read_once_and_reported_alike(versions, tmp_path):
    copy = Path(shutil.copytree(versions / "reworded/age_comparison", tmp_path / "age_comparison"))
    old, new = folder_side(versions / "reworded/age_comparison"), folder_side(copy)
    loads = []
    for name, e in old.entries.items():
        e.load = (lambda f, n: lambda: loads.append(n) or f())(e.load, name)
    fast = diff(old, new)
    assert loads == []   # every config's files have the same bytes: the old side is not read
    slow_old, slow_new = folder_side(versions / "reworded/age_comparison"), folder_side(copy)
    for side in (slow_old, slow_new):
        for e in side.entries.values():
            e.digest = None
    slow = diff(slow_old, slow_new)
    assert fast.records == slow.records and all(r["unchanged"] == r["rows"]["new"] > 0 for r in fast.records)
    for a, b in zip(fast.splits, slow.splits):
        columns = sorted(c for c in b.merged.columns if c != "_merge")
        assert a.merged[columns].sort_values("key").reset_index(drop=True).equals(
            b.merged[columns].sort_values("key").reset_index(drop=True))
    # one row changed in the copy: its config is compared row by row again, the others still read once
    rows = _rows(copy / "nolang/dev.jsonl")
    rows[0]["question"]["stem"] += " ."
    (copy / "nolang/dev.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    loads.clear()
    changed = diff(old, folder_side(copy))
    assert loads == ["age_comparison-nolang"]
    assert _by(changed, "nolang", "dev")["fields"] == {"stem": 1}
