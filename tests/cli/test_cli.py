"""The `probes` command, one section per class of defect a new user met: surprise writes, errors instead of
tracebacks (before the slow part), one place to declare a variant, honest reports, CLI manners."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from generators.shared import registry as generators
from probekit.outputs import LEDGER
from probes.main import main, parser

from helpers import MIRROR, PAIRS, REPO, fake_result

GOOD = {"id": "a", "answerKey": "A",
        "question": {"stem": "He is [MASK] .", "choices": [{"label": "A", "text": "older"},
                                                           {"label": "B", "text": "younger"}]}}


def files_under(*roots: Path) -> set[Path]:
    return {p for root in roots for p in root.rglob("*") if p.is_file()}


def write_params(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data))
    return path


# --- nothing is written where the user did not ask ----------------------------------------------------


def test_report_writes_only_the_paths_it_is_given(tmp_path, monkeypatch):
    project = tmp_path / "project"
    fake_result(project / "results/zeroshot", project / "data", "m", "original", True, PAIRS, lambda a, b: "A")
    tracked = {"results/metrics.json": b"{}", "results/zeroshot.png": b"png"}
    for name, body in tracked.items():
        (project / name).write_bytes(body)
    before = {p: p.read_bytes() for p in files_under(project)}
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(project)  # the tracked defaults of old were relative to the current folder
    assert main(["report", "results/zeroshot", "--out", str(elsewhere / "only_zs.md")]) == 0
    assert {p: p.read_bytes() for p in files_under(project)} == before
    # and, beside it, the ledger that proves its bytes probekit's (probekit.outputs: replaced only while unchanged)
    assert files_under(elsewhere) == {elsewhere / "only_zs.md", elsewhere / LEDGER}
    monkeypatch.chdir(elsewhere)  # and from another folder, nothing appears there either
    assert main(["report", str(project / "results/zeroshot"), "--out", str(tmp_path / "b.md")]) == 0
    assert files_under(elsewhere) == {elsewhere / "only_zs.md", elsewhere / LEDGER}


def test_dvc_plots_output_is_ignored():
    ignored = subprocess.run(["git", "check-ignore", "dvc_plots/index.html", "raw/sources.local.yaml"], cwd=REPO,
                             capture_output=True, text=True).stdout.split()
    assert ignored == ["dvc_plots/index.html", "raw/sources.local.yaml"]


# --- errors, not tracebacks, and before the slow part --------------------------------------------------


@pytest.mark.parametrize("flag, value, message", [
    ("--limit", "-1", "argument --limit: Input should be greater than 0; got '-1'"),
    ("--limit", "0", "argument --limit: Input should be greater than 0; got '0'"),
    ("--limit", "1.5", "argument --limit: Input should be a valid integer, unable to parse string as an integer; got "
                       "'1.5'"),
    ("--batch-size", "0", "argument --batch-size: Input should be greater than 0 (or one of: auto); got '0'"),
    ("--batch-size", "x", "argument --batch-size: Input should be a valid integer, unable to parse string as an "
                          "integer (or one of: auto); got 'x'"),
    ("--dtype", "fp8", "argument --dtype: Input should be 'auto', 'float32', 'bfloat16' or 'float16'; got 'fp8'"),
])
def test_bad_numbers_are_argument_errors(flag, value, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["evaluate", "zeroshot", "--model", "m", "--data", "d", "--out", str(tmp_path), flag, value])
    assert exit_.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize("content, message", [
    ("", "{path}: no examples in the file"),
    (json.dumps(GOOD) + "\n" + json.dumps({k: v for k, v in GOOD.items() if k != "answerKey"}) + "\n",
     "{path}:2: missing field 'answerKey'"),
    ('{"id": "a\x01"}\n', "{path}:1: not valid JSON: Invalid control character at: line 1 column 10 (char 9)"),
    (json.dumps({**GOOD, "answerKey": "C"}) + "\n", "{path}:1: answerKey 'C' is not one of the choice labels"),
])
def test_bad_data_names_file_and_line_before_any_model_is_loaded(content, message, tmp_path, capsys):
    path = tmp_path / "d.jsonl"
    path.write_text(content, encoding="utf-8")
    # the model does not exist either: the data is checked first, and nothing is loaded
    code = main(["evaluate", "zeroshot", "--model", str(tmp_path / "no-model"), "--data", str(path),
                 "--out", str(tmp_path / "o")])
    err, message = capsys.readouterr().err, message.format(path=path)
    assert code == 1, err
    assert err == f"probes evaluate: error: {message}\n" or (message in err and err.count("\n") == 1), err
    assert not (tmp_path / "o").exists()


def model_error(tmp_path, capsys, model: str, params: Path | None = None) -> str:
    data = tmp_path / "ok.jsonl"
    data.write_text(json.dumps(GOOD) + "\n")
    argv = ["evaluate", "zeroshot", "--model", model, "--data", str(data), "--out", str(tmp_path / "o")]
    assert main(argv + (["--params", str(params)] if params else [])) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


def test_model_specs_say_what_was_tried(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)  # fail fast, deterministically
    params = write_params(tmp_path / "p.yaml", {"models": {"tiny": "org/tiny-model"}})
    err = model_error(tmp_path, capsys, "minlm", params)
    assert "Hub id 'minlm' is not in the local cache and HF_HUB_OFFLINE is set" in err
    assert f"not an alias either (known aliases in {params} `models`: minilm, tiny) nor a folder" in err
    err = model_error(tmp_path, capsys, str(tmp_path / "missing-folder"))
    assert f"no model folder {tmp_path / 'missing-folder'}" in err and "known aliases in built-in defaults" in err
    (tmp_path / "not-a-model").mkdir()
    assert "has no config.json" in model_error(tmp_path, capsys, "not-a-model")
    assert "no installed Python package 'nosuchpkg'" in model_error(tmp_path, capsys, "pkg:nosuchpkg")


def test_unreachable_hub_fails_at_once(tmp_path, capsys, monkeypatch):
    def offline(*_a, **_k):
        raise ConnectionError("[Errno -2] Name or service not known")

    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", False)   # online, whatever the shell set
    monkeypatch.setattr("huggingface_hub.model_info", offline)
    err = model_error(tmp_path, capsys, "org/absent-model")
    assert "the Hub cannot be reached (ConnectionError: [Errno -2] Name or service not known)" in err


def test_argument_and_data_errors_import_no_torch(tmp_path):
    """Argument and input errors come back before torch/transformers/datasets are imported."""
    data = tmp_path / "bad.jsonl"
    data.write_text("{}\n")
    code = f"""
import sys
from probes.main import main
codes = [main(["evaluate", "zeroshot", "--model", "minlm", "--data", {str(data)!r}, "--out", "o"]),
         main(["generate", "age_comparison", "--out", {str(tmp_path / 'g')!r}, "--params", {str(tmp_path / 'no.yaml')!r}])]
heavy = sorted(m for m in ("torch", "transformers", "datasets") if m in sys.modules)
print(codes, heavy)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert out.stdout.strip() == "[1, 1] []", out.stderr


@pytest.mark.parametrize("section, message", [
    ({"seed": None}, "{p}: age_comparison.seed: Input should be a valid integer, got None"),
    ({"values": {"ages": {"train": [38]}}}, "{p}: age_comparison.values.ages.train: too few items, got [38]"),
    ({"values": {"agez": {"train": [1, 2], "dev": [3, 4]}}},
     "{p}: age_comparison.values: unknown key(s) ['agez']: no variant of {yaml} uses them (variants use: ages, years)"),
    ({"sise": 3}, "{p}: age_comparison.sise: unknown key (known: seed, variants, mode, size, values)"),
    ({"size": {"dev": 0}}, "{p}: age_comparison.size.dev: Input should be greater than 0, got 0"),
    ({"variants": "original"}, "{p}: age_comparison.variants: Input should be a valid list, got 'original'"),
])
def test_params_errors_name_file_and_full_key(section, message, tmp_path, capsys):
    params = write_params(tmp_path / "p.yaml", {"age_comparison": section})
    assert main(["generate", "age_comparison", "--params", str(params), "--out", str(tmp_path / "o")]) == 1
    yaml_path = generators.get("age_comparison").template_path
    assert capsys.readouterr().err == f"probes generate: error: {message.format(p=params, yaml=yaml_path)}\n"
    assert not (tmp_path / "o").exists()


def test_ctrl_c_and_internal_errors_are_one_line_unless_debug(monkeypatch, tmp_path, capsys):
    import generators.shared.build

    def interrupted(*_a, **_k):
        raise KeyboardInterrupt

    monkeypatch.setattr(generators.shared.build, "build_probe", interrupted)
    assert main(["generate", "age_comparison", "--out", str(tmp_path / "o")]) == 130
    assert capsys.readouterr().err == "probes generate: interrupted\n"

    def bug(*_a, **_k):
        raise AttributeError("'NoneType' object has no attribute 'x'")

    monkeypatch.setattr(generators.shared.build, "build_probe", bug)
    assert main(["generate", "age_comparison", "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error: AttributeError" in err and "--debug" in err
    with pytest.raises(AttributeError):
        main(["--debug", "generate", "age_comparison", "--out", str(tmp_path / "o")])


# --- one place to declare a variant ----------------------------------------------------------------------


def probe_copy(tmp_path: Path, monkeypatch, edit) -> Path:
    """A copy of the age probe's YAML, edited, that the registry uses instead of the real one."""
    path = tmp_path / "age_comparison.yaml"
    path.write_text(edit(generators.get("age_comparison").template_path.read_text()))
    monkeypatch.setattr(type(generators.get("age_comparison")), "template_path", property(lambda self: path))
    return path


def test_a_variant_declared_in_the_yaml_is_built_without_touching_params(tmp_path, monkeypatch, capsys):
    probe_copy(tmp_path, monkeypatch, lambda text: text.replace("variants:", """\
  - id: lowercase
    text: "a {age1} year old person is [MASK] than me in age, if i am a {age2} year old person."
    slots: [age1, age2]
    answers: {less: younger, greater: older}
variants:
  lowercase: {template: lowercase, values: ages}
  lowercase_nolang: {control: nolang, base: lowercase}""", 1))
    params = write_params(tmp_path / "p.yaml", {"age_comparison": {"size": {"train": 4, "dev": 2}}})
    out = tmp_path / "o"
    assert main(["generate", "age_comparison", "--params", str(params), "--out", str(out)]) == 0
    assert {"lowercase", "lowercase_nolang", "original", "nolang"} <= {p.name for p in out.iterdir()}
    row = json.loads((out / "lowercase_nolang/dev.jsonl").read_text().splitlines()[0])
    assert row["variant"] == "lowercase_nolang" and row["question"]["stem"].count(" ") == 2

    write_params(params, {"age_comparison": {"size": {"train": 4, "dev": 2}, "variants": ["original"]}})
    capsys.readouterr()
    assert main(["generate", "age_comparison", "--params", str(params), "--out", str(out)]) == 0
    assert (f"but not selected by {params} age_comparison.variants, so not built: lowercase, lowercase_nolang, "
            "nolang, perturbed") in capsys.readouterr().out


@pytest.mark.parametrize("definition, message", [
    ("{template: [paper, other], values: ages}", "template must be one template id of"),
    ("{templates: [paper, other], values: ages}", "templates must be all or a list of template ids of"),
    ("{control: nolang}", "base must name a declared base (template) variant, got None"),
    ("{control: shuffle, base: original}", "control must be one of ['nolang', 'perturbed'], got 'shuffle'"),
    ("{template: paper, control: nolang}", "give exactly one of 'template' / 'templates' (a base variant) or"),
])
def test_bad_variant_definitions_name_file_and_variant(definition, message, tmp_path, monkeypatch, capsys):
    path = probe_copy(tmp_path, monkeypatch, lambda text: text.replace(
        "variants:", f"variants:\n  broken: {definition}", 1))
    assert main(["generate", "age_comparison", "--out", str(tmp_path / "o")]) == 1
    assert f"probes generate: error: {path}: variant 'broken': {message}" in capsys.readouterr().err


def test_unknown_variant_in_params_lists_the_declared_ones(tmp_path, capsys):
    params = write_params(tmp_path / "p.yaml", {"age_comparison": {"variants": ["original", "nope"]}})
    assert main(["generate", "age_comparison", "--params", str(params), "--out", str(tmp_path / "o")]) == 1
    assert (f"{params}: age_comparison.variants: unknown variant(s) ['nope']; "
            f"{generators.get('age_comparison').template_path} declares original, nolang, perturbed,"
            in capsys.readouterr().err)


# --- CLI manners -----------------------------------------------------------------------------------------------


def test_version_help_and_probe_choices(capsys):
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.startswith("probes (probekit) ")
    with pytest.raises(SystemExit) as exit_:
        main(["generate", "nope", "--out", "x"])
    assert exit_.value.code == 2
    choices = ", ".join(f"'{p}'" for p in generators.available())
    assert f"argument PROBE: invalid choice: 'nope' (choose from {choices})" in capsys.readouterr().err

    def walk(p):
        for action in p._actions:
            if action.option_strings and action.dest != "help":
                assert action.help, f"{p.prog} {action.option_strings}: no help"
            for sub in (action.choices or {}).values() if hasattr(action, "_name_parser_map") else ():
                yield sub
                yield from walk(sub)

    subparsers = list(walk(parser()))
    assert len(subparsers) >= 8
    help_text = parser()._subparsers._group_actions[0].choices["sources"].format_help()
    assert "mirror   set (or show, or --unset) a mirror folder for this checkout" in help_text
    zeroshot = parser()._subparsers._group_actions[0].choices["evaluate"]._subparsers._group_actions[0] \
        .choices["zeroshot"].format_help()
    zeroshot = " ".join(zeroshot.split())
    assert "zeroshot.split; built in: dev" in zeroshot and "scoring.seed" in zeroshot \
        and "scoring.batch_size; built in: auto" in zeroshot


@pytest.mark.slow   # three `probes` processes end to end, one of them scoring a model
def test_commands_work_outside_the_project_root(tmp_path, tiny_bert):
    """From an empty folder: built-in params, the checkout's manifest, nothing written but --out."""
    env = dict(os.environ, PROBES_MIRROR=str(MIRROR), PATH=f"{Path(sys.executable).parent}{os.pathsep}"
                                                            f"{os.environ['PATH']}")
    run = lambda *args: subprocess.run(["probes", *args], cwd=tmp_path, env=env, capture_output=True, text=True)
    done = run("generate", "multihop_comparison", "--out", "g")
    assert done.returncode == 0, done.stderr
    assert "multihop_comparison/original: train 5000, dev 500" in done.stdout  # the paper's sizes, built in
    meta = json.loads((tmp_path / "g/original/meta.json").read_text())
    assert meta["params"]["values"] == {"ages": {"train": [43, 120], "dev": [15, 38]}}
    manifest = tmp_path / "raw/sources.yaml"
    manifest.parent.mkdir()
    shutil.copy(REPO / "raw/sources.yaml", manifest)
    assert run("sources", "fetch", "olmpics").returncode == 0
    done = run("evaluate", "zeroshot", "--model", str(tiny_bert), "--release-of", "age_comparison", "--limit", "4",
               "--out", "r")
    assert done.returncode == 0, done.stderr
    assert {p.relative_to(tmp_path).parts[0] for p in files_under(tmp_path)} == {"g", "raw", "r"}


def test_generate_reads_another_section_for_a_second_dataset_of_the_probe(tmp_path, capsys):
    params = write_params(tmp_path / "params.yaml", {"age_comparison_grid": {
        "mode": "grid", "variants": ["original"], "values": {"ages": {"train": [40, 43], "dev": [15, 17]}}}})
    out = tmp_path / "grid"
    assert main(["generate", "age_comparison", "--section", "age_comparison_grid", "--params", str(params),
                 "--out", str(out)]) == 0
    dev = [json.loads(line) for line in (out / "original" / "dev.jsonl").read_text().splitlines()]
    assert sorted((r["args"]["age1"], r["args"]["age2"]) for r in dev) == [
        (a, b) for a in range(15, 18) for b in range(15, 18) if a != b]   # every ordered pair
    assert main(["generate", "age_comparison", "--section", "nope", "--params", str(params),
                 "--out", str(tmp_path / "x")]) == 2
    assert "--section nope: no such section" in capsys.readouterr().err


def test_a_command_that_succeeds_logs_its_time_and_one_that_fails_does_not(tmp_path, capsys):
    """Each stage's duration is in `dvc repro`'s output (the durations the docs quote come from it)."""
    import re

    assert main(["sources", "list", "--manifest", str(REPO / "raw" / "sources.yaml")]) == 0
    assert re.search(r"^probes: INFO: probes sources: done in \d+\.\d s$", capsys.readouterr().err, re.M)
    assert main(["sources", "list", "--manifest", str(tmp_path / "none.yaml")]) != 0
    assert "done in" not in capsys.readouterr().err
