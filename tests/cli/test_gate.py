"""Issue 51's findings on paths the old checks did not see, each in the user's own layout: an output over a file the
params name, over a model alias's weights, over another output of the same command, inside a dataset a searching
command reads; a FIFO or a device where a command reads or writes; a name too long for the disk. Each is refused
before any work, in one line naming both paths, and every byte of the user's is where it was."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from probes.main import main

from helpers import PAIRS, fake_result, small_age_comparison
from test_outputs_ours import tree_digest


def one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


def test_an_output_over_a_gold_table_the_params_name_is_refused(tmp_path, capsys):
    """`probes annotate export --out g.csv` overwrote the gold table params name as always_never.annotations:
    the probe no longer generated."""
    (tmp_path / "g.csv").write_text("template_id,x,y,gold,n_workers,agreement\ndish,pasta,pork,never,1,1.0\n")
    (tmp_path / "cand.csv").write_text("template_id,x,y\ndish,rice,beef\n")
    (tmp_path / "p.yaml").write_text("always_never:\n  release: {}\n  annotations: [g.csv]\n")
    before = tree_digest(tmp_path)
    for more in ([], ["--force"]):
        assert main(["annotate", "export", "--candidates", "cand.csv", "--out", "g.csv", "--params", "p.yaml",
                     *more]) == 2
        err = one_line(capsys)
        assert "--out g.csv: is the same file or folder as p.yaml always_never.annotations[0] g.csv" in err, err
    assert tree_digest(tmp_path) == before


def test_an_output_over_a_model_aliases_folder_is_refused_even_with_force(tmp_path, tiny_bert, capsys):
    """`probes evaluate zeroshot --model ALIAS --out <the alias's folder> --force` deleted the model's weights (the
    same folder typed as a path was refused)."""
    import shutil

    model = tmp_path / "models" / "my-model"
    shutil.copytree(tiny_bert, model)
    (tmp_path / "p.yaml").write_text(f"models:\n  mine: {model}\n")
    small_age_comparison(tmp_path / "data" / "age_comparison")
    capsys.readouterr()
    before = tree_digest(model)
    for out in (model, model / "inside", tmp_path / "models"):
        assert main(["evaluate", "zeroshot", "--model", "mine", "--params", "p.yaml", "--data",
                     "data/age_comparison", "--out", str(out), "--force"]) == 2
        err = one_line(capsys)
        assert "--model mine (params models.mine)" in err and "which the command reads" in err, err
    assert tree_digest(model) == before


def test_two_outputs_of_one_command_never_overlap(tmp_path, capsys):
    """`probes report --out r.md --metrics r.md` left JSON in the report, exit 0."""
    fake_result(tmp_path / "results", tmp_path / "d", "m", "original", True, PAIRS[:3], lambda a, b: "A")
    for argv in (["--out", "r.md", "--metrics", "r.md"], ["--out", "r.md", "--plot", "r.md"],
                 ["--out", "r.md", "--heatmaps", "r.md"], ["--out", "x/r.md", "--heatmaps", "x"]):
        assert main(["report", "results", *argv]) == 2
        assert "which the command also writes" in one_line(capsys)
    assert not (tmp_path / "r.md").exists() and not (tmp_path / "x").exists()
    assert main(["pararel-report", "results", "--out", "p.md", "--plot", "p.json"]) == 2
    err = one_line(capsys)
    assert "--out (its JSON beside it) p.json: is the same file or folder as --plot p.json" in err, err


@pytest.mark.parametrize("argv", [["export", "lm-eval", "--data", "data", "--out", "data/probes/age_comparison/x"],
                                  ["publish", "--data", "data", "--dry-run", "data/probes/age_comparison/pub"]])
def test_a_searching_command_never_writes_inside_a_dataset_it_reads(argv, tmp_path, capsys):
    small_age_comparison(tmp_path / "data" / "probes" / "age_comparison")
    capsys.readouterr()
    before = tree_digest(tmp_path / "data")
    for more in ([], ["--force"]):
        assert main([*argv, *more]) == 2
        err = one_line(capsys)
        assert "is inside --data data: the dataset data/probes/age_comparison" in err, err
    assert tree_digest(tmp_path / "data") == before


def test_a_searching_command_writes_beside_the_datasets_it_reads(tmp_path, capsys):
    """What the pipeline does: `probes export lm-eval --data data --out data/lm_eval`."""
    small_age_comparison(tmp_path / "data" / "probes" / "age_comparison")
    assert main(["export", "lm-eval", "--data", "data", "--out", "data/lm_eval"]) == 0


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_fifo_or_a_device_is_never_read_or_written(kind, tmp_path, capsys):
    """A FIFO where an output file goes blocked the command forever; `--json null.json` (a link to /dev/null)
    replaced a device node's link."""
    special = tmp_path / "special"
    if kind == "fifo":
        os.mkfifo(special)
        said = "is a FIFO (named pipe)"
    else:
        special.symlink_to("/dev/null")
        said = "is a link to a character device (/dev/null)"
    small_age_comparison(tmp_path / "data" / "age_comparison")
    capsys.readouterr()
    cases = [(["generate", "age_comparison", "--out", "g", "--params", str(special)], "--params"),
             (["diff", "data/age_comparison", "--old", "data/age_comparison", "--examples", str(special)],
              "--examples")]
    if kind == "fifo":
        cases.append((["tokenizers", "--out", str(special)], "--out"))
    for argv, flag in cases:
        assert main(argv) == 2
        err = one_line(capsys)
        assert f"{flag} {special}: {said}" in err, err


def test_a_command_on_a_fifo_ends_at_once(tmp_path):
    """In a process of its own: the refusal comes without opening the FIFO (which would block for ever)."""
    os.mkfifo(tmp_path / "pipe.json")
    done = subprocess.run([sys.executable, "-m", "probes", "tokenizers", "--out", "pipe.json"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "is a FIFO" in done.stderr


@pytest.mark.parametrize("size", [256, 300])
def test_a_name_too_long_for_the_disk_is_refused_before_any_work(size, tmp_path, capsys):
    """A 230-255-byte --out name failed after the work with a raw [Errno 36] (its temporary name was longer); now
    it is written, and a longer one is refused first."""
    assert main(["tokenizers", "--out", "n" * 250]) == 0 and (tmp_path / ("n" * 250)).is_file()
    (tmp_path / ("n" * 250)).unlink()
    capsys.readouterr()
    name = "n" * size
    assert main(["tokenizers", "--out", name]) == 2
    err = one_line(capsys)
    assert f"is {size} bytes long, and the file system allows 255 bytes in a name" in err, err
    assert [p.name for p in tmp_path.iterdir()] == [".probekit-files.json"] or list(tmp_path.iterdir()) == []


def test_the_default_params_file_is_an_input_too(tmp_path, capsys):
    """`--params` left out reads ./params.yaml: no output may be over it, --force or not."""
    (tmp_path / "params.yaml").write_text("age_comparison:\n  size: {train: 4, dev: 2}\n")
    before = (tmp_path / "params.yaml").read_text()
    assert main(["tokenizers", "--out", "params.yaml", "--force"]) == 2
    assert "params.yaml (--params left out)" in one_line(capsys)
    assert (tmp_path / "params.yaml").read_text() == before


def test_a_grid_store_over_the_data_its_spec_names_is_refused(tmp_path, capsys):
    small_age_comparison(tmp_path / "data" / "age_comparison")
    (tmp_path / "spec.yaml").write_text("protocol: zeroshot\nmodels: [m]\ndata: [data/age_comparison]\n")
    capsys.readouterr()
    before = tree_digest(tmp_path / "data")
    assert main(["grid", "--spec", "spec.yaml", "--out", "data"]) == 2
    assert "--out data: holds --spec spec.yaml data data/age_comparison" in one_line(capsys)
    assert tree_digest(tmp_path / "data") == before


def test_a_read_inside_an_output_being_replaced_is_refused_where_it_happens(tmp_path, capsys, monkeypatch):
    """The watch's second rule, for a path nobody declared: a generator that reads a file inside the folder it is
    about to replace stops before the folder goes."""
    from generators.shared import registry

    assert main(["generate", "age_comparison", "--out", "gen"]) == 0
    (tmp_path / "gen" / "original" / "dev.jsonl").read_text()
    real = registry.Generator.generate

    def reads_its_output(self, request):
        Path("gen/original/dev.jsonl").read_text()
        return real(self, request)

    monkeypatch.setattr(registry.Generator, "generate", reads_its_output)
    before = tree_digest(tmp_path / "gen")
    capsys.readouterr()
    assert main(["generate", "age_comparison", "--out", "gen"]) == 1
    assert "reads, from inside an output it replaces," in one_line(capsys)
    assert tree_digest(tmp_path / "gen") == before


def test_a_site_over_the_results_it_is_built_from_is_refused_before_any_work(tmp_path, capsys):
    """`probes browse build --out results --results results` read the predictions inside the folder it was about
    to replace (the watch stopped it); the gate refuses it first, and a site beside them is built."""
    fake_result(tmp_path / "results" / "zeroshot", tmp_path / "data", "m", "original", True, PAIRS[:3],
                lambda a, b: "A")
    before = tree_digest(tmp_path / "results")
    for out in ("results", "results/zeroshot", "results/zeroshot/m"):
        assert main(["browse", "build", "--out", out, "--data", "data", "--results", "results", "--force"]) == 2
        assert "--results results: the results results/zeroshot" in one_line(capsys)
    assert tree_digest(tmp_path / "results") == before
    assert main(["browse", "build", "--out", "results/browser", "--data", "data", "--results", "results"]) == 0
