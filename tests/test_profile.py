"""The params profile (``profile: smoke`` or ``paper``) and ``--device auto`` (the default): ``auto`` resolved once
in ``probes`` for every subcommand that takes ``--device``; the profile read from the params file, recorded in the metrics.json
of every protocol whose scale it sets, and said by every report (a banner under the title, a marker per row) when
a result is of the smoke scale."""

from __future__ import annotations

import argparse
import json
import random
import shutil
from pathlib import Path

import pytest
import torch

from evaluators.shared import smoke
from evaluators.calum import report as calum_report
from evaluators.calum import results as calum_results
from evaluators.olmpics import report as olmpics_report
from evaluators.pararel import report as pararel_report
from probekit.data.pairs import write_pair_dataset
from probekit.errors import ParamsError
from probekit.params import ParamsFile, read_params
from probes import calum as cli_calum
from probes import main as cli
from probes import olmpics as cli_curves
from probes import pararel as cli_pararel
from probes import zeroshot as cli_zeroshot
from probes.main import main

from helpers import write_toy_cloze_set

WORDS = ["dog", "cat", "horse", "cow", "bird", "fish", "red", "blue", "green", "black", "white", "brown"]


pytestmark = pytest.mark.usefixtures("one_thread")   # tests/conftest.py: tiny models, one intra-op thread


def _params(folder: Path, text: str) -> Path:
    path = folder / "params.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _metrics(folder: Path) -> dict:
    return json.loads((folder / "metrics.json").read_text(encoding="utf-8"))


def _strip_profile(src: Path, dst: Path) -> Path:
    """A copy of a results tree whose metrics.json files lack ``profile``: a run written before profiles."""
    shutil.copytree(src, dst)
    for path in dst.rglob("metrics.json"):
        m = json.loads(path.read_text(encoding="utf-8"))
        del m["profile"]
        path.write_text(json.dumps(m), encoding="utf-8")
    return dst


def _assert_smoke_said(text: str, marked_rows: list[str]) -> None:
    lines = text.splitlines()
    assert lines[0].startswith("# ") and lines[1] == "" and lines[2] == smoke.BANNER
    for row in marked_rows:
        assert any(line.startswith(row) for line in lines), row
    assert f"{smoke.MARK} " in text and smoke.LEGEND in text


def _assert_smoke_not_said(text: str) -> None:
    assert smoke.BANNER not in text and smoke.MARK not in text and "Smoke scale" not in text


# --- the params file's profile ------------------------------------------------------------------------------

def test_the_params_profile_is_a_string_or_none(tmp_path):
    assert ParamsFile(None).profile is None
    assert read_params(_params(tmp_path, "profile: smoke\ndevice: cpu\nowned_by: {dvc.yaml: [device]}\n")).profile \
        == "smoke"
    assert read_params(_params(tmp_path, "zeroshot: {split: dev}\n")).profile is None
    with pytest.raises(ParamsError, match=r"params\.yaml: profile: must be a string"):
        read_params(_params(tmp_path, "profile: [smoke]\n")).profile


# --- --device auto ------------------------------------------------------------------------------------------

def _device_actions(parser: argparse.ArgumentParser, path=()):
    """``(command path, action)`` of every ``--device`` option under ``parser``'s subcommands."""
    for action in parser._actions:
        if "--device" in action.option_strings:
            yield path, action
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _device_actions(sub, (*path, name))


def test_every_device_option_offers_auto_and_defaults_to_it():
    found = dict(_device_actions(cli.parser()))
    # `probes run --device` sets the params' `device` for the experiment, only when given (the params' default:
    # auto); every command that runs a model defaults to auto itself
    run_device = found.pop(("run",))
    assert "auto" in run_device.choices and run_device.default is None
    # `probes rehearse --device` sets the device of the rehearsal's copy: the CPU unless asked (its point: a paper
    # run tried on a CPU before the GPU hours), auto offered
    rehearse_device = found.pop(("rehearse",))
    assert "auto" in rehearse_device.choices and rehearse_device.default == "cpu"
    assert {" ".join(p) for p in found} == {"evaluate zeroshot", "evaluate features", "evaluate curve",
                                            "evaluate curve-lr", "evaluate mcqa", "evaluate pararel", "evaluate calum",
                                            "train consistency", "diff"}
    for path, action in found.items():
        assert action.default == "auto", path
        assert "auto (cuda when torch sees a GPU, else cpu)" in action.help, path


COMMANDS = {  # subcommand -> (module, handler name, its required arguments)
    "zeroshot": (cli_zeroshot, "_evaluate", ["evaluate", "zeroshot", "--model", "m", "--out", "o"]),
    "features": (cli_curves, "_features", ["evaluate", "features", "--model", "m", "--data", "d", "--out", "o"]),
    "curve": (cli_curves, "_curve", ["evaluate", "curve", "--model", "m", "--data", "d", "--out", "o",
                                     "--setting", "mlp"]),
    "mcqa": (cli_curves, "_mcqa", ["evaluate", "mcqa", "--model", "m", "--data", "d", "--out", "o"]),
    "pararel": (cli_pararel, "_evaluate", ["evaluate", "pararel", "--model", "m", "--data", "d", "--out", "o"]),
    "consistency": (cli_pararel, "_train", ["train", "consistency", "--model", "m", "--data", "d", "--out", "o"]),
    "calum": (cli_calum, "_evaluate", ["evaluate", "calum", "--model", "m", "--task", "rte", "--out", "o"]),
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("gpu", [True, False], ids=["gpu", "no-gpu"])
def test_device_auto_reaches_every_handler_resolved(command, gpu, monkeypatch, capsys):
    module, name, argv = COMMANDS[command]
    seen = []
    monkeypatch.setattr(module, name, lambda args: seen.append(args.device) or 0)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: gpu)
    assert main([*argv, "--device", "auto"]) == 0
    expected = "cuda" if gpu else "cpu"
    assert seen == [expected]
    assert f"probes: INFO: --device auto: {expected}" in capsys.readouterr().err
    # any other device reaches the handler as given, without starting CUDA (a GPU given is counted: checked
    # before any work; here a machine with two)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: pytest.fail("torch asked for a device given"))
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert main([*argv, "--device", "cuda:1"]) == 0 and main([*argv, "--device", "cpu"]) == 0
    assert seen[1:] == ["cuda:1", "cpu"]
    assert "--device auto" not in capsys.readouterr().err
    # no --device: auto, resolved the same
    monkeypatch.setattr(torch.cuda, "is_available", lambda: gpu)
    assert main(argv) == 0 and seen[3:] == [expected]
    assert f"probes: INFO: --device auto: {expected}" in capsys.readouterr().err


# --- the oLMpics protocols: MC-MLM curves, MLM-BASELINE, MC-QA, ESIM, and their report --------------------

def _rows(n: int, seed: int, split: str) -> list[dict]:
    """A learnable MC-MLM probe with single-token choices (yes/no: is the word an animal?)."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        word = rng.choice(WORDS)
        choices = ["yes", "no"] if rng.random() < 0.5 else ["no", "yes"]
        gold = "yes" if WORDS.index(word) < 6 else "no"
        rows.append({"id": f"{split}{i}", "question": {"stem": f"the {word} is [MASK] .", "choices": [
            {"label": "AB"[k], "text": c} for k, c in enumerate(choices)]}, "answerKey": "AB"[choices.index(gold)]})
    return rows


@pytest.fixture(scope="module")
def olmpics_inputs(tmp_path_factory, tiny_bert):
    """A probe folder (``toy/original``, 16 train and 8 dev rows), a GloVe text file of its words, and a smoke
    params file (model alias ``tiny``: a tiny BERT)."""
    root = tmp_path_factory.mktemp("olmpics")
    folder = root / "toy" / "original"
    folder.mkdir(parents=True)
    for split, rows in (("train", _rows(16, 1, "train")), ("dev", _rows(8, 2, "dev"))):
        (folder / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (folder / "meta.json").write_text(json.dumps({"probe": "toy", "variant": "original", "fingerprint": "fp"}))
    rng = random.Random(0)
    glove = root / "glove.txt"
    glove.write_text("".join(f"{w} " + " ".join(f"{rng.uniform(-1, 1):.3f}" for _ in range(8)) + "\n"
                             for w in WORDS + ["the", "is", "yes", "no", ".", "[MASK]", "mask"]), encoding="utf-8")
    params = _params(root, f"profile: smoke\nmodels: {{tiny: '{tiny_bert}'}}\ncurve: {{training: {{epochs: 1}}}}\n"
                           "mcqa: {training: {epochs: 1}, esim_training: {epochs: 1}}\n")
    return root / "toy", glove, params


@pytest.fixture(scope="module")
def olmpics_smoke(olmpics_inputs, tmp_path_factory):
    """Smoke-profile results of every oLMpics protocol: ``<root>/<model>/toy/<setting>/``."""
    data, glove, params = olmpics_inputs
    root = tmp_path_factory.mktemp("olmpics-results")
    common = ["--data", str(data), "--sizes", "4,8", "--seeds", "1", "--glove", str(glove), "--params", str(params)]
    for model, command in (("tiny", ["curve", "--setting", "linear"]), ("mlm-baseline", ["curve", "--setting", "mlp"]),
                           ("tiny", ["mcqa"]), ("esim", ["mcqa"])):
        setting = command[-1] if command[0] == "curve" else "mcqa"
        assert main(["evaluate", *command, "--model", model, "--out", str(root / model / "toy" / setting),
                     *common]) == 0
    return root


@pytest.mark.parametrize("run", ["tiny/toy/linear", "mlm-baseline/toy/mlp", "tiny/toy/mcqa", "esim/toy/mcqa"])
def test_the_olmpics_protocols_record_the_profile(olmpics_smoke, run):
    m = _metrics(olmpics_smoke / run)
    assert m["profile"] == "smoke" and m["protocol"] in ("MC-MLM", "MC-QA")


def test_zero_shot_records_the_profile(olmpics_inputs, tiny_bert, tmp_path):
    """docs/pipeline.md: a rehearsal's every metrics.json says `profile: rehearsal`; zero-shot's said nothing (its
    metrics, the release files' and the age grid's, had no `profile`)."""
    data = olmpics_inputs[0]
    for profile in ("rehearsal", "smoke"):
        (tmp_path / profile).mkdir()
        params = _params(tmp_path / profile, f"profile: {profile}\nmodels: {{tiny: '{tiny_bert}'}}\n")
        out = tmp_path / profile / "zs"
        assert main(["evaluate", "zeroshot", "--model", "tiny", "--data", str(data), "--out", str(out),
                     "--params", str(params), "--device", "cpu"]) == 0
        assert _metrics(out / "original")["profile"] == profile


def test_a_curve_without_a_profile_records_null(olmpics_inputs, tmp_path):
    data, glove, _ = olmpics_inputs
    params = _params(tmp_path, "curve: {training: {epochs: 1}}\n")
    assert main(["evaluate", "curve", "--model", "mlm-baseline", "--setting", "mlp", "--data", str(data), "--out",
                 str(tmp_path / "out"), "--sizes", "4", "--seeds", "1", "--glove", str(glove),
                 "--params", str(params)]) == 0
    assert _metrics(tmp_path / "out")["profile"] is None


def test_the_olmpics_report_says_smoke_scale(olmpics_smoke, tmp_path):
    md, js = tmp_path / "smoke.md", tmp_path / "smoke.json"
    olmpics_report.write_olmpics_report([olmpics_smoke], out_md=md, out_json=js, resamples=20)
    text = md.read_text(encoding="utf-8")
    _assert_smoke_said(text, [f"| tiny {smoke.MARK}", f"| MLM-BASELINE {smoke.MARK}", f"| ESIM {smoke.MARK}"])
    assert f"- **{smoke.MARK}**: {smoke.LEGEND}." in text   # the legend explains the marker
    summary = json.loads(js.read_text(encoding="utf-8"))
    probes = [p for p in summary.values()]
    assert probes and all(row["profile"] == "smoke" for p in probes for row in p.values())

    old = _strip_profile(olmpics_smoke, tmp_path / "old")
    olmpics_report.write_olmpics_report([old], out_md=tmp_path / "old.md", out_json=tmp_path / "old.json",
                                        resamples=20)
    _assert_smoke_not_said((tmp_path / "old.md").read_text(encoding="utf-8"))
    summary_old = json.loads((tmp_path / "old.json").read_text(encoding="utf-8"))
    assert all(row["profile"] is None for p in summary_old.values() for row in p.values())
    # existing keys unchanged: the same summary but for profile
    strip = {t: {r: {k: v for k, v in row.items() if k != "profile"} for r, row in p.items()}
             for t, p in summary.items()}
    assert strip == {t: {r: {k: v for k, v in row.items() if k != "profile"} for r, row in p.items()}
                     for t, p in summary_old.items()}


def test_only_the_smoke_rows_of_a_mixed_olmpics_report_are_marked(olmpics_smoke, tmp_path):
    mixed = tmp_path / "mixed"
    shutil.copytree(olmpics_smoke, mixed)
    _strip_profile(olmpics_smoke / "tiny", tmp_path / "tiny-old")
    shutil.rmtree(mixed / "tiny")
    shutil.copytree(tmp_path / "tiny-old", mixed / "tiny")
    olmpics_report.write_olmpics_report([mixed], out_md=tmp_path / "r.md", resamples=20)
    text = (tmp_path / "r.md").read_text(encoding="utf-8")
    _assert_smoke_said(text, [f"| MLM-BASELINE {smoke.MARK}", f"| ESIM {smoke.MARK}"])
    assert "| tiny " in text and f"| tiny {smoke.MARK}" not in text


# --- ParaRel, consistency training and their report -----------------------------------------------------------

RELATIONS = {  # relation: (patterns, (subject, object) tuples); every object one WordPiece token
    "P37": (["the official language of [X] is [Y] .", "in [X] , people speak [Y] ."],
            list(zip("quebec brazil mexico austria".split(), "french portuguese spanish german".split()))),
    "P17": (["[X] is located in [Y] .", "[X] lies in [Y] ."],
            list(zip("paris berlin rome madrid".split(), "france germany italy spain".split()))),
}


@pytest.fixture(scope="module")
def cloze(tmp_path_factory) -> Path:
    return write_toy_cloze_set(tmp_path_factory.mktemp("cloze") / "pararel", RELATIONS)


@pytest.fixture(scope="module")
def pararel_smoke(cloze, tiny_bert, tmp_path_factory):
    """``(results, consistency)`` folders of smoke-profile runs: ``<folder>/tiny/metrics.json`` each."""
    root = tmp_path_factory.mktemp("pararel-results")
    params = _params(root, "profile: smoke\n"
                           "consistency: {train_relations: [P37], limit: 4, epochs: 1, batch_size: 4, mlm_steps: 1, "
                           "mlm_batch_size: 2, block_size: 16}\n")
    common = ["--model", str(tiny_bert), "--data", str(cloze), "--params", str(params)]
    assert main(["evaluate", "pararel", *common, "--out", str(root / "res" / "tiny")]) == 0
    assert main(["train", "consistency", *common, "--out", str(root / "cons" / "tiny")]) == 0
    return root / "res", root / "cons"


def test_pararel_and_consistency_training_record_the_profile(pararel_smoke):
    results, consistency = pararel_smoke
    assert _metrics(results / "tiny")["profile"] == "smoke"
    assert _metrics(consistency / "tiny")["profile"] == "smoke"


def test_the_pararel_report_says_smoke_scale(pararel_smoke, tmp_path):
    results, consistency = pararel_smoke
    pararel_report.write(results, tmp_path / "smoke.md", consistency)
    text = (tmp_path / "smoke.md").read_text(encoding="utf-8")
    _assert_smoke_said(text, [f"| tiny {smoke.MARK} | `", f"| tiny {smoke.MARK} | train |"])
    assert json.loads((tmp_path / "smoke.json").read_text())["tiny"]["profile"] == "smoke"

    old_results, old_consistency = (_strip_profile(f, tmp_path / f"old-{f.name}") for f in pararel_smoke)
    pararel_report.write(old_results, tmp_path / "old.md", old_consistency)
    _assert_smoke_not_said((tmp_path / "old.md").read_text(encoding="utf-8"))
    assert json.loads((tmp_path / "old.json").read_text())["tiny"]["profile"] is None
    # smoke consistency training alone is enough for the banner, and marks only its own rows
    pararel_report.write(old_results, tmp_path / "mixed.md", consistency)
    mixed = (tmp_path / "mixed.md").read_text(encoding="utf-8")
    _assert_smoke_said(mixed, [f"| tiny {smoke.MARK} | train |"])
    assert f"| tiny {smoke.MARK} | `" not in mixed


# --- CALUM and its report -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def calum_data(tmp_path_factory) -> Path:
    """A tiny RTE-like pair dataset: 16 training and 8 validation pairs, REVERSE and SIGNAL variants."""
    rng = random.Random(0)
    labels = ["entailment", "not_entailment"]

    def pair(i: int, split: str) -> dict:
        a, b = rng.sample(WORDS, 2)
        return {"pair_id": f"{split}{i}", "sentence1": f"the {a} is here .", "sentence2": f"the {b} is here .",
                "label": labels[i % 2]}

    train = [{**pair(i, "train"), "variant": "original"} for i in range(16)]
    dev = [pair(i, "dev") for i in range(8)]
    variants = {"original": {"train": train, "dev": [{**r, "variant": "original"} for r in dev]},
                "reverse": {"dev": [{**r, "variant": "reverse", "sentence1": r["sentence2"],
                                     "sentence2": r["sentence1"]} for r in dev]},
                "signal": {"dev": [{**r, "variant": "signal", "sentence1": "[A] " + r["sentence1"]} for r in dev]}}
    meta = {"task": "rte", "labels": labels, "params": {}, "license": "other", "sources": {},
            "counts": {v: {s: len(rows) for s, rows in splits.items()} for v, splits in variants.items()}}
    return write_pair_dataset(tmp_path_factory.mktemp("calum") / "rte", variants, meta, lambda m: "card\n")


@pytest.fixture(scope="module")
def calum_smoke(calum_data, tiny_bert_no_head, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("calum-results")
    params = _params(root, "profile: smoke\ncalum_eval: {seeds: [1], max_steps: 1, batch_size: 8, "
                           "device_batch_size: 8, max_length: 32, save_models: none}\n")
    assert main(["evaluate", "calum", "--model", str(tiny_bert_no_head), "--task", "rte", "--data", str(calum_data),
                 "--out", str(root / "res" / "tiny-rte"), "--params", str(params)]) == 0
    return root / "res"


def test_calum_records_the_profile(calum_smoke):
    m = _metrics(calum_smoke / "tiny-rte")
    assert m["profile"] == "smoke" and m["protocol"] == "calum"


def test_the_calum_report_says_smoke_scale(calum_smoke, tmp_path):
    calum_report.write(calum_smoke, tmp_path / "smoke.md")
    text = (tmp_path / "smoke.md").read_text(encoding="utf-8")
    model = _metrics(calum_smoke / "tiny-rte")["model"]
    _assert_smoke_said(text, [f"| {model} {smoke.CAPPED} {smoke.MARK} | `", f"| tiny-rte {smoke.MARK} | "])
    assert json.loads((tmp_path / "smoke.json").read_text())["runs"]["tiny-rte"]["profile"] == "smoke"

    old = _strip_profile(calum_smoke, tmp_path / "old")
    calum_report.write(old, tmp_path / "old.md")
    _assert_smoke_not_said((tmp_path / "old.md").read_text(encoding="utf-8"))
    summary, summary_old = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("smoke", "old"))
    assert summary_old["runs"]["tiny-rte"]["profile"] is None
    summary["runs"]["tiny-rte"]["profile"] = None
    assert summary == summary_old   # every other key as before


def test_a_calum_profile_that_is_no_string_is_a_data_error(calum_smoke, tmp_path):
    from probekit.errors import DataError

    bad = tmp_path / "bad"
    shutil.copytree(calum_smoke, bad)
    m = _metrics(bad / "tiny-rte")
    (bad / "tiny-rte" / "metrics.json").write_text(json.dumps({**m, "profile": 1}))
    with pytest.raises(DataError, match="profile must be a string"):
        calum_results.read_results(bad)
