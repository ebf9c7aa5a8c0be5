"""`probes diff`'s messages (issue 39): a bad --model refused before any diff work, an lm-eval export in the data
tree not taken for a dataset missing from the DVC cache, a PATH outside the project refused for a git revision, and
a byte that is not UTF-8 named by its line and its offset in the file; and the other inputs of the same kinds (the
prediction files and the formats checked first, a file at a revision named there, not by a temporary copy)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from probes.main import main

from test_diff import _fails, _generate, _git_dvc

CHUNK = 8192
"""The bytes a text file's decoder is given at a time (``io.TextIOWrapper._CHUNK_SIZE``): a bad byte past them."""


@pytest.fixture(scope="module")
def two(tmp_path_factory) -> Path:
    """AGE COMPARISON (original and its NO-LANG control) generated, as `old/age_comparison` and `new/age_comparison`
    (one stem reworded)."""
    root = tmp_path_factory.mktemp("messages")
    old = _generate(root / "old" / "age_comparison", root, variants=["original", "nolang"])
    new = root / "new" / "age_comparison"
    shutil.copytree(old, new)
    dev = new / "original" / "dev.jsonl"
    rows = [json.loads(line) for line in dev.read_text().splitlines()]
    rows[0]["question"]["stem"] += " ."
    dev.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def _project(root: Path, folders: dict[str, Path]) -> Path:
    """A git + DVC project at ``root`` whose last commit tracks each of ``folders`` (its path in the project ->
    the folder copied there) with `dvc add`."""
    for rel, source in folders.items():
        shutil.copytree(source, root / rel)
    _git_dvc(root, "git", "init", "-q")
    _git_dvc(root, "dvc", "init", "-q")
    _git_dvc(root, "dvc", "add", "-q", *folders)
    _git_dvc(root, "git", "add", "-A")
    _git_dvc(root, "git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "v1")
    return root


def _uncache(project: Path, rel: str) -> None:
    """Drop the DVC-tracked folder ``rel`` from the project's cache: its manifest and its files."""
    cached = lambda md5: project / ".dvc" / "cache" / "files" / "md5" / md5[:2] / md5[2:]   # noqa: E731
    manifest = cached(yaml.safe_load((project / f"{rel}.dvc").read_text())["outs"][0]["md5"])
    for entry in json.loads(manifest.read_text()):
        cached(entry["md5"]).unlink(missing_ok=True)
    manifest.unlink()


def _bad_byte(path: Path) -> tuple[int, int]:
    """An invalid UTF-8 byte put in the first line of ``path`` that starts past :data:`CHUNK`: (its offset, its
    line)."""
    data = path.read_bytes()
    start = data.index(b"\n", CHUNK) + 1
    offset = data.index(b'"stem": "', start) + len(b'"stem": "')
    path.write_bytes(data[:offset] + b"\xff" + data[offset:])
    return offset, data.count(b"\n", 0, offset) + 1


def _no_side(*args, **kwargs):
    raise AssertionError("a side was read before the model was checked")


# --- 1. --model: checked before any diff work -------------------------------------------------------------------

def test_a_model_is_checked_before_any_diff_work(two, tiny_bert, tmp_path, monkeypatch, capsys):
    import probekit.versions.sides
    from transformers import XLNetConfig

    monkeypatch.setattr(probekit.versions.sides, "open_side", _no_side)
    args = ["diff", str(two / "new/age_comparison"), "--old", str(two / "old/age_comparison"), "--device", "cpu"]
    missing = tmp_path / "no-model"
    err = _fails([*args, "--model", str(missing)], capsys, tmp_path)
    assert err.startswith(f"probes diff: error: --model {missing}: no model folder {missing}")
    cut = Path(shutil.copytree(tiny_bert, tmp_path / "cut"))   # weights that do not load: cut short
    weights = next(cut.glob("model.safetensors"))
    weights.write_bytes(weights.read_bytes()[:-100])
    err = _fails([*args, "--model", str(cut)], capsys, tmp_path)
    assert err.startswith(f"probes diff: error: --model {cut}: {weights}")
    xlnet = Path(shutil.copytree(tiny_bert, tmp_path / "xlnet"))   # no probekit rule scores a permutation LM
    XLNetConfig(d_model=32, n_layer=1, n_head=2, d_inner=64, architectures=["XLNetLMHeadModel"]).to_json_file(
        xlnet / "config.json")
    err = _fails([*args, "--model", str(xlnet)], capsys, tmp_path)
    assert err.startswith(f"probes diff: error: --model {xlnet}: a XLNetConfig model (XLNet) is a permutation "
                          f"language model, which no probekit rule scores")


def test_prediction_files_and_formats_are_checked_before_any_diff_work(two, tiny_bert, tmp_path, monkeypatch,
                                                                        capsys):
    import probekit.versions.diff
    import probekit.versions.sides

    new, old = str(two / "new/age_comparison"), str(two / "old/age_comparison")
    with monkeypatch.context() as m:
        m.setattr(probekit.versions.sides, "open_side", _no_side)
        missing = tmp_path / "predictions.jsonl"
        err = _fails(["diff", new, "--old", old, "--old-predictions", str(missing), "--new-predictions",
                      str(missing)], capsys, tmp_path)
        assert err == f"probes diff: error: {missing}: cannot be read (No such file or directory)"
    # an MC-QA dataset: refused from its meta.json, before its rows are read and diffed
    qa = tmp_path / "qa" / "age_comparison"
    shutil.copytree(two / "old/age_comparison", qa)
    for meta in qa.glob("*/meta.json"):
        meta.write_text(json.dumps({**json.loads(meta.read_text()), "format": "mc_qa"}))
    monkeypatch.setattr(probekit.versions.diff, "diff", _no_side)
    err = _fails(["diff", str(qa), "--old", str(qa), "--model", str(tiny_bert), "--device", "cpu"], capsys, tmp_path)
    assert err == f"probes diff: error: --model {tiny_bert}: scores MC-MLM datasets only, and this diff holds mc_qa"


# --- 2. an lm-eval export is not a dataset -------------------------------------------------------------------------

def test_an_lm_eval_export_in_the_data_tree_is_not_a_dataset_missing_from_the_cache(two, tmp_path, monkeypatch,
                                                                                   capsys):
    data = tmp_path / "data"
    shutil.copytree(two / "old/age_comparison", data / "probes/age_comparison")
    assert main(["export", "lm-eval", "--data", str(data), "--out", str(data / "lm_eval")]) == 0
    project = _project(tmp_path / "project", {"data/probes/age_comparison": data / "probes/age_comparison",
                                              "data/lm_eval": data / "lm_eval"})
    monkeypatch.chdir(project)
    _uncache(project, "data/lm_eval")   # the export's files are not in the cache; the dataset's are
    out = tmp_path / "d.json"
    capsys.readouterr()
    assert main(["diff", "data", "--json", str(out)]) == 0
    configs = {r["config"] for r in json.loads(out.read_text())["datasets"]}
    assert configs == {"age_comparison", "age_comparison-nolang"}
    assert "lm_eval" not in capsys.readouterr().err   # the working tree's export holds no dataset: not compared
    err = _fails(["diff", "data/lm_eval"], capsys, tmp_path)
    assert err == ("probes diff: error: data/lm_eval: no dataset folders in it (a meta.json with format mc_mlm, "
                   "mc_qa, pair_cls, cloze_set)")
    # nor in the working tree: not known to hold datasets, so not compared, and said
    shutil.rmtree(project / "data/lm_eval")
    assert main(["diff", "data", "--json", str(out)]) == 0
    assert ("data/lm_eval at HEAD is not in this project's DVC cache, nor in the working tree: whether it holds "
            "dataset folders is not known, so it is not compared") in capsys.readouterr().err
    # a dataset missing from the cache too: the message names it, not the export
    shutil.copytree(data / "lm_eval", project / "data/lm_eval")
    _uncache(project, "data/probes/age_comparison")
    err = _fails(["diff", "data"], capsys, tmp_path)
    assert err.startswith("probes diff: error: data/probes/age_comparison") and "lm_eval" not in err
    assert " at HEAD is not in this project's DVC cache: no DVC remote is configured" in err


# --- 3. a PATH outside the project ---------------------------------------------------------------------------------

def test_a_path_outside_the_project_is_refused_for_a_revision_and_read_as_a_folder_otherwise(two, tmp_path,
                                                                                             tmp_path_factory,
                                                                                             monkeypatch, capsys):
    project = _project(tmp_path / "project", {"data/probes/age_comparison": two / "old/age_comparison"})
    monkeypatch.chdir(project)
    outside = tmp_path.resolve()
    for path in ("..", str(outside)):   # the project's parent, as given and resolved
        err = _fails(["diff", path], capsys, tmp_path_factory.mktemp("never"))   # its --json outside what it reads
        where = path if path == str(outside) else f"{path} ({outside})"
        assert err == (f"probes diff: error: {where}: outside the git project at {project.resolve()}, so a revision "
                       f"cannot be read there (give --old and --new as folders to compare plain folders)")
    out = tmp_path_factory.mktemp("out") / "d.json"   # two folders: PATH is read as a plain folder (and the
    # output lies outside it: it is no input)
    assert main(["diff", "..", "--old", str(two / "new"), "--json", str(out)]) == 0
    changed = {(r["config"], r["split"]): r["changed"] for r in json.loads(out.read_text())["datasets"]}
    assert changed[("age_comparison", "dev")] == 1


# --- 4. a byte that is not UTF-8 --------------------------------------------------------------------------------

def test_a_bad_byte_is_named_by_its_line_and_its_offset_in_the_file(two, tmp_path, capsys):
    new = tmp_path / "age_comparison"
    shutil.copytree(two / "new/age_comparison", new)
    train = new / "original" / "train.jsonl"
    offset, line = _bad_byte(train)
    assert offset > CHUNK
    err = _fails(["diff", str(new), "--old", str(two / "old/age_comparison")], capsys, tmp_path)
    assert err == f"probes diff: error: {train}:{line}: not UTF-8 text (invalid start byte at byte {offset} of the file)"


def test_bad_bytes_in_a_meta_json_and_a_predictions_file_are_named_alike(two, tmp_path, capsys):
    new = tmp_path / "age_comparison"
    shutil.copytree(two / "new/age_comparison", new)
    meta = new / "nolang" / "meta.json"
    meta.write_bytes(meta.read_bytes().replace(b'"probe"', b'"pr\xe9be"', 1))
    offset = meta.read_bytes().index(b"\xe9")
    line = meta.read_bytes().count(b"\n", 0, offset) + 1
    err = _fails(["diff", str(new), "--old", str(two / "old/age_comparison")], capsys, tmp_path)
    assert err == (f"probes diff: error: {meta}:{line}: not UTF-8 text (invalid continuation byte at byte {offset} "
                   f"of the file)")
    predictions = tmp_path / "predictions.jsonl"
    first = b'{"id": "a", "prediction": "A", "correct": true}\n'
    predictions.write_bytes(first + b'{"id": "\xff"}\n')
    err = _fails(["diff", str(two / "new/age_comparison"), "--old", str(two / "old/age_comparison"),
                  "--old-predictions", str(predictions), "--new-predictions", str(predictions)], capsys, tmp_path)
    assert err == (f"probes diff: error: {predictions}:2: not UTF-8 text (invalid start byte at byte {len(first) + 8} "
                   f"of the file)")


def test_a_file_at_a_revision_is_named_there_not_by_a_temporary_copy(two, tmp_path, monkeypatch, capsys):
    bad = tmp_path / "bad" / "age_comparison"
    shutil.copytree(two / "old/age_comparison", bad)
    offset, line = _bad_byte(bad / "original" / "train.jsonl")
    project = _project(tmp_path / "project", {"data/probes/age_comparison": bad})
    shutil.rmtree(project / "data/probes/age_comparison")
    shutil.copytree(two / "new/age_comparison", project / "data/probes/age_comparison")
    monkeypatch.chdir(project)
    err = _fails(["diff", "data/probes/age_comparison"], capsys, tmp_path)
    assert err == (f"probes diff: error: HEAD:data/probes/age_comparison/original/train.jsonl:{line}: not UTF-8 text "
                   f"(invalid start byte at byte {offset} of the file)")
