"""The `probes` command with a bad output path or a huge value: each fails at once, before any work, on one short
line in the user's terms (which option, what is wrong with it)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from probes.main import main

from helpers import alias_bomb

# {file}: an existing file, {dir}: an existing folder; each command line fails on its output path
FOLDER_IS_FILE = [
    ("generate age_comparison --out {file}", "--out {file}: is a file; give a folder (the probe's variants are "
                                             "written inside it)"),
    ("tables conceptnet --out {file}", "--out {file}: is a file; give a folder (the tables are written inside it)"),
    ("sources fetch olmpics --dest {file}", "--dest {file}: is a file; give a folder (the source's files are written "
                                            "inside it)"),
    ("evaluate zeroshot --model m --data {dir} --out {file}", "--out {file}: is a file; give a folder (the results "
                                                              "are written inside it)"),
    ("evaluate features --model m --data {dir} --out {file}", "--out {file}: is a file; give a folder (the features "
                                                              "are written inside it)"),
    ("evaluate curve --model m --setting mlp --data {dir} --out {file}", "--out {file}: is a file; give a folder"),
    ("evaluate curve --model m --setting mlp --data {dir} --out o --features {file}",
     "--features {file}: is a file; give a folder (the features are cached inside it)"),
    ("evaluate mcqa --model m --data {dir} --out {file}", "--out {file}: is a file; give a folder"),
    ("evaluate pararel --model m --data {dir} --out {file}", "--out {file}: is a file; give a folder "
                                                             "(predictions.jsonl and metrics.json are written "
                                                             "inside it)"),
    ("train consistency --model m --data {dir} --out {file}", "--out {file}: is a file; give a folder"),
    ("evaluate calum --model m --task rte --out {file}", "--out {file}: is a file; give a folder"),
    ("report {dir} --out r.md --heatmaps {file}", "--heatmaps {file}: is a file; give a folder"),
    ("olmpics-report {dir} --out r.md --plots {file}", "--plots {file}: is a file; give a folder"),
    ("grid --spec s.yaml --out {file}", "--out {file}: is a file; give a folder (the results store"),
    ("publish --dry-run {file}", "--dry-run {file}: is a file; give a folder"),
    ("generate age_comparison --out {file}/sub/g", "--out {file}/sub/g: {file} is a file, so no folder can be made "
                                                   "inside it"),
]
FILE_IS_FOLDER = [
    ("fidelity --probes {in} --out {dir}", "--out {dir}: is a folder; give a file name (the markdown report)"),
    ("fidelity --probes {in} --out {dir}/f.json", "--out {dir}/f.json: the markdown report; its JSON is written "
                                                   "beside it (f.json)"),
    ("audit --model m --data {in} --out {dir}/r.md", "--out {dir}/r.md: {dir}/r.json, written beside it, is a "
                                                      "folder; give a file name (the markdown report)"),
    ("report {in} --out {dir}", "--out {dir}: is a folder; give a file name (the markdown report)"),
    ("report {in} --out r.md --metrics {dir}", "--metrics {dir}: is a folder; give a file name"),
    ("report {in} --out r.md --plot {dir}", "--plot {dir}: is a folder; give a file name (the PNG plot)"),
    ("olmpics-report {in} --out {dir}", "--out {dir}: is a folder; give a file name"),
    ("pararel-report {in} --out {dir}/d.md", "--out {dir}/d.md: is a folder; give a file name"),
    ("pararel-report {in} --out p.md --plot {dir}", "--plot {dir}: is a folder; give a file name"),
    ("calum-report {in} --out p.md --plot {dir}", "--plot {dir}: is a folder; give a file name"),
    ("calum-report {in} --out {file}/r.md", "--out {file}/r.md: {file} is a file, so no folder can be made"),
    ("annotate export --out {dir}", "--out {dir}: is a folder; give a file name (the CSV of statements to annotate)"),
    ("annotate import a.csv --out {dir}", "--out {dir}: is a folder; give a file name (the gold CSV)"),
]


def layout(tmp_path):
    (tmp_path / "d" / "d.md").mkdir(parents=True)
    (tmp_path / "d" / "r.json").mkdir()
    (tmp_path / "f").write_text("x\n")
    (tmp_path / "in").mkdir()   # what a command reads, apart from its outputs (which the gate checks first)
    return {"file": str(tmp_path / "f"), "dir": str(tmp_path / "d"), "in": str(tmp_path / "in")}


@pytest.mark.parametrize("argv, message", FOLDER_IS_FILE + FILE_IS_FOLDER)
def test_output_paths_are_checked_before_any_work(argv, message, tmp_path, capsys):
    paths = layout(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    assert main(argv.format(**paths).split()) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message.format(**paths) in err
    assert sorted(tmp_path.rglob("*")) == before and (tmp_path / "f").read_text() == "x\n"


def test_output_path_errors_import_no_torch(tmp_path):
    """Every command above fails on its output path before torch/transformers/datasets are imported."""
    paths = layout(tmp_path)
    argvs = [argv.format(**paths).split() for argv, _ in FOLDER_IS_FILE + FILE_IS_FOLDER]
    code = f"""
import sys
from probes.main import main
codes = {{main(argv) for argv in {argvs!r}}}
print(sorted(codes), sorted(m for m in ("torch", "transformers", "datasets") if m in sys.modules))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert out.stdout.strip() == "[2] []", out.stderr


@pytest.mark.parametrize("where, command", [
    ("age_comparison:\n  seed: *a7\n", "generate age_comparison --out {out}"),
    ("age_comparison:\n  variants: [*a7, *a7, *a7, *a7, *a7, *a7]\n", "generate age_comparison --out {out}"),
    ("models:\n  m: *a7\n", "evaluate zeroshot --model m --data {data} --out {out}"),
    ("models:\n  m: *a7\n", "generate age_comparison --out {out}"),
    ("models:\n  m: {id: *a7}\n", "evaluate zeroshot --model m --data {data} --out {out}"),
    ("scoring:\n  seed: *a7\n", "grid --spec {spec} --out {out}"),
])
def test_an_alias_bomb_in_params_is_quoted_short(where, command, tmp_path, capsys):
    """Ten levels of nine aliases: 3.5 billion strings once expanded, which no machine holds. The error names the
    file and key and quotes a short form of the value: it comes at all only if nothing expands the value (not the
    message, not a key's hash, not a type's check). No clock: a command that expanded it would never answer."""
    params = tmp_path / "p.yaml"
    anchors = ", ".join(f"a{i}" for i in range(11))   # the bomb's top-level keys: sections nothing reads, declared so
    params.write_text(alias_bomb(levels=10) + f"owned_by: {{this test: [{anchors}]}}\n" + where.replace("*a7", "*a10"))
    example = {"id": "a", "answerKey": "A", "question": {"stem": "He is [MASK] .", "choices": [
        {"label": "A", "text": "older"}, {"label": "B", "text": "younger"}]}}
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "dev.jsonl").write_text(json.dumps(example) + "\n")
    (tmp_path / "spec.yaml").write_text(f"protocol: zeroshot\nmodels: [m]\ndata: [{tmp_path / 'd'}]\n")
    argv = command.format(out=tmp_path / "o", data=tmp_path / "d", spec=tmp_path / "spec.yaml").split()
    assert main([*argv, "--params", str(params)]) in (1, 2)
    err = capsys.readouterr().err
    key = where.split(":")[0] + "." + where.split("\n")[1].split(":")[0].strip()
    assert err.count("\n") == 1 and len(err.replace(str(params), "P")) < 600 and f"{params}: {key}" in err and "… (9 items)" in err
    assert not (tmp_path / "o").exists()
