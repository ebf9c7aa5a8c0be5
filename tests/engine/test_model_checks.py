"""Models checked before use (issue 30): a local model folder needs a config.json of an architecture transformers
has, its tokenizer files and whole weights, each failure one line naming the folder or the file; ``--device`` is
checked as soon as the command line is parsed, before anything loads."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from probekit.errors import UsageError
from probekit.tokens.refs import resolve_model
from probes.main import main

GOOD = {"id": "a", "answerKey": "A",
        "question": {"stem": "He is [MASK] .", "choices": [{"label": "A", "text": "older"},
                                                           {"label": "B", "text": "younger"}]}}


@pytest.fixture
def model(tmp_path, tiny_bert) -> Path:
    """A copy of the tiny BERT to break: config.json, model.safetensors, tokenizer.json, tokenizer_config.json."""
    return Path(shutil.copytree(tiny_bert, tmp_path / "model"))


def zeroshot(tmp_path, capsys, model, *extra: str) -> tuple[int, str]:
    """``probes evaluate zeroshot`` of ``model`` on one example: its exit code and its stderr."""
    data = tmp_path / "ok.jsonl"
    data.write_text(json.dumps(GOOD) + "\n")
    capsys.readouterr()   # what came before: a progress bar of a test's own load
    code = main(["evaluate", "zeroshot", "--model", str(model), "--data", str(data), "--out", str(tmp_path / "o"),
                 "--device", "cpu", *extra])
    return code, capsys.readouterr().err


def one_line(err: str) -> str:
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err.strip()


def edit_config(folder: Path, **changes) -> None:
    config = json.loads((folder / "config.json").read_text())
    for key, value in changes.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    (folder / "config.json").write_text(json.dumps(config))


# --- tokenizer files -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("rule", ["pll", "mask-logit"])
def test_a_folder_without_tokenizer_files_is_refused(rule, model, tmp_path, capsys):
    """Before: transformers built an empty tokenizer (every word [UNK]): pll tied every example and exited 0 with an
    accuracy, mask-logit blamed an [UNK] tie."""
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (model / name).unlink()
    code, err = zeroshot(tmp_path, capsys, model, "--rule", rule)
    assert code == 2 and one_line(err) == (
        f"probes evaluate: error: --model {model}: folder {model} has no tokenizer files (tokenizer.json, vocab.txt, "
        f"vocab.json with merges.txt, or a SentencePiece *.model): save the model's tokenizer into it "
        f"(tokenizer.save_pretrained)")
    assert not (tmp_path / "o").exists()


def test_tokenizer_uses_need_no_weights_and_model_uses_do(model, tmp_path, capsys):
    """The audit reads tokenizers only: a folder without weights passes, and without tokenizer files it does not;
    scoring needs the weights."""
    data = tmp_path / "ok.jsonl"
    data.write_text(json.dumps(GOOD) + "\n")
    (model / "model.safetensors").unlink()
    audit = ["audit", "--model", str(model), "--data", str(data)]
    assert main([*audit, "--out", str(tmp_path / "a.md")]) == 0
    code, err = zeroshot(tmp_path, capsys, model)
    assert code == 2 and one_line(err) == (
        f"probes evaluate: error: --model {model}: folder {model} has no weights (model.safetensors, "
        f"model.safetensors.index.json, pytorch_model.bin, pytorch_model.bin.index.json): save the model into it "
        f"(model.save_pretrained), or copy its weights there")
    (model / "tokenizer.json").unlink()
    (model / "tokenizer_config.json").unlink()
    assert main([*audit, "--out", str(tmp_path / "b.md")]) == 2
    assert f"folder {model} has no tokenizer files" in one_line(capsys.readouterr().err)
    assert not (tmp_path / "b.md").exists()


def test_legitimate_tokenizer_layouts_pass(model, tmp_path, minilm_vocab):
    """A WordPiece vocabulary alone, a BPE's vocab.json with merges.txt, a SentencePiece model, a byte-level
    tokenizer that needs no file (ByT5): none is refused."""
    from transformers import AutoTokenizer

    (model / "tokenizer.json").unlink()
    shutil.copy(minilm_vocab, model / "vocab.txt")   # tokenizer_config.json says BertTokenizer
    resolve_model(str(model), {}, "t")
    assert AutoTokenizer.from_pretrained(str(model)).tokenize("older") == ["older"]   # a real vocabulary, no [UNK]
    (model / "vocab.txt").unlink()
    for files in (["vocab.json", "merges.txt"], ["spiece.model"]):
        for name in files:
            (model / name).write_text("")
        resolve_model(str(model), {}, "t", needs="tokenizer")
        for name in files:
            (model / name).unlink()
    (model / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "ByT5Tokenizer"}))
    resolve_model(str(model), {}, "t")
    (model / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "BertTokenizer"}))
    with pytest.raises(UsageError, match="has no tokenizer files"):
        resolve_model(str(model), {}, "t")


# --- config.json ---------------------------------------------------------------------------------------------

def test_a_config_without_model_type_is_refused(model, tmp_path, capsys):
    edit_config(model, model_type=None)
    code, err = zeroshot(tmp_path, capsys, model)
    assert code == 2 and one_line(err) == (
        f"probes evaluate: error: --model {model}: {model / 'config.json'}: no model_type (transformers reads the "
        f"architecture from it): re-save the model with save_pretrained, or add its type, e.g. \"model_type\": "
        f"\"bert\"")


def test_an_unknown_model_type_is_one_short_line(model, tmp_path, capsys):
    """Before: transformers' 713 characters listing every model type, no folder named."""
    import transformers

    edit_config(model, model_type="banana-net")
    code, err = zeroshot(tmp_path, capsys, model)
    assert code == 2 and one_line(err) == (
        f"probes evaluate: error: --model {model}: {model / 'config.json'}: model_type 'banana-net' is not an "
        f"architecture transformers {transformers.__version__} has (a newer transformers may have it)")
    assert len(err.replace(str(model), "F")) < 300
    edit_config(model, model_type="banana-net", auto_map={"AutoConfig": "banana.BananaConfig"})
    assert "its auto_map names code of its own" in zeroshot(tmp_path, capsys, model)[1]


def test_a_config_that_is_not_json_is_named(model, tmp_path, capsys):
    (model / "config.json").write_text('{"model_type": "bert",')
    code, err = zeroshot(tmp_path, capsys, model)
    assert code == 2 and one_line(err).startswith(
        f"probes evaluate: error: --model {model}: {model / 'config.json'}: not readable JSON (")


# --- weights -------------------------------------------------------------------------------------------------

def test_a_truncated_safetensors_file_is_named(model, tmp_path, capsys):
    """Before: safetensors' "incomplete metadata, file not fully covered", no file named."""
    size = (model / "model.safetensors").stat().st_size
    os.truncate(model / "model.safetensors", 100_000)
    code, err = zeroshot(tmp_path, capsys, model)
    assert code == 2 and one_line(err) == (
        f"probes evaluate: error: --model {model}: {model / 'model.safetensors'} is truncated: 100,000 bytes of the "
        f"{size:,} its header describes (an interrupted download or copy): copy or download it again")


@pytest.mark.parametrize("damage, message", [
    (lambda b: b + b"tail", "is damaged: {n:,} bytes, 4 more than its header describes"),
    (lambda b: b[:5], "is truncated: 5 bytes, too short for a safetensors header"),
    (lambda b: b[:200], "is truncated: 200 bytes, shorter than its own header"),
    (lambda b: b"<html>not found</html>" * 3, "is not a safetensors file (its first 8 bytes are no header length)"),
    (lambda b: b[:8] + b"x" * (len(b) - 8), "is not a safetensors file (its header is not one)"),
    (lambda b: b"version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 9\n",
     "is a Git LFS pointer, not the weights: fetch them (git lfs pull)"),
])
def test_a_damaged_safetensors_file_is_named(damage, message, model):
    path = model / "model.safetensors"
    path.write_bytes(damage(path.read_bytes()))
    expected = f"--model m: {path} " + message.format(n=path.stat().st_size)
    with pytest.raises(UsageError) as caught:
        resolve_model("m", {"m": str(model)}, "t")
    assert str(caught.value).startswith(expected), caught.value
    resolve_model("m", {"m": str(model)}, "t", needs="tokenizer")   # the weights are not read for a tokenizer


def test_a_shard_index_naming_a_missing_shard(model, tmp_path, capsys):
    """A sharded checkpoint loads; with a shard gone, the index and the shard are named."""
    from transformers import AutoModelForMaskedLM

    from evaluators.engine.models import load_lm

    AutoModelForMaskedLM.from_pretrained(str(model)).save_pretrained(model, max_shard_size="1MB")
    (model / "model.safetensors").unlink()
    index = model / "model.safetensors.index.json"
    shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
    assert len(shards) > 1
    assert load_lm(resolve_model(str(model), {}, "t")).head_pretrained
    (model / shards[-1]).unlink()
    code, err = zeroshot(tmp_path, capsys, model)
    assert code == 2 and one_line(err) == (
        f"probes evaluate: error: --model {model}: {index} names 1 shard(s) not in the folder ({[shards[-1]]!r}): "
        f"copy them there, or download the model again")
    os.truncate(model / shards[0], 1000)
    (model / shards[-1]).write_bytes(b"")
    with pytest.raises(UsageError, match=re.escape(f"{model / shards[0]} is truncated: 1,000 bytes")):
        resolve_model(str(model), {}, "t")


def test_torch_checkpoints_load_and_a_truncated_one_is_named(model, tmp_path, capsys):
    """pytorch_model.bin, as torch.save writes it (a zip) and as it did before torch 1.6, passes; truncated, it
    is named."""
    import torch
    from transformers import AutoModelForMaskedLM

    from evaluators.engine.models import load_lm

    state = AutoModelForMaskedLM.from_pretrained(str(model)).state_dict()
    (model / "model.safetensors").unlink()
    path = model / "pytorch_model.bin"
    torch.save(state, path, _use_new_zipfile_serialization=False)
    resolve_model(str(model), {}, "t")
    torch.save(state, path)
    assert load_lm(resolve_model(str(model), {}, "t")).head_pretrained
    os.truncate(path, path.stat().st_size // 2)
    code, err = zeroshot(tmp_path, capsys, model)
    assert code == 2 and one_line(err).startswith(
        f"probes evaluate: error: --model {model}: {path} is truncated or damaged (its zip directory cannot be read: ")
    path.write_bytes(b"\x00" * 100)
    with pytest.raises(UsageError, match="is not a torch checkpoint"):
        resolve_model(str(model), {}, "t")


# --- a Hub model: its cached files ---------------------------------------------------------------------------

def cached_hub_model(folder: Path, repo_id: str) -> Path:
    """``folder`` as the Hub cache's snapshot of ``repo_id`` (the session's empty cache, tests/conftest.py)."""
    from huggingface_hub import constants

    repo = Path(constants.HF_HUB_CACHE) / ("models--" + repo_id.replace("/", "--"))
    commit = "0" * 40
    shutil.copytree(folder, repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    return repo / "snapshots" / commit


def test_a_damaged_cached_hub_file_is_named(model, tmp_path):
    """Before: safetensors' error, no file named."""
    from evaluators.engine.models import load_lm

    repo_id = f"probekit-tests/{tmp_path.name}"
    snapshot = cached_hub_model(model, repo_id)
    os.truncate(snapshot / "model.safetensors", 100_000)
    ref = resolve_model(repo_id, {}, "t")
    with pytest.raises(UsageError, match=re.escape(f"--model {repo_id}: {snapshot / 'model.safetensors'} is "
                                                   f"truncated: 100,000 bytes")) as caught:
        load_lm(ref)
    assert str(caught.value).endswith(f"(in the Hub cache: hf download --force-download {repo_id})")


def test_a_cached_hub_config_of_an_unknown_type_is_refused(model, tmp_path):
    edit_config(model, model_type="banana-net")
    repo_id = f"probekit-tests/{tmp_path.name}"
    snapshot = cached_hub_model(model, repo_id)
    with pytest.raises(UsageError, match=re.escape(f"--model {repo_id}: the config.json of '{repo_id}' (Hub cache): "
                                                   f"model_type 'banana-net' is not an architecture transformers")):
        resolve_model(repo_id, {}, "t")
    edit_config(snapshot, model_type=None)   # an old Hub model: transformers matches its type by name
    assert resolve_model(repo_id, {}, "t").location == repo_id


# --- --device ------------------------------------------------------------------------------------------------

DEVICE_COMMANDS = [
    "evaluate zeroshot --model M --out O",
    "evaluate features --model M --data D --out O",
    "evaluate curve --model M --data D --out O --setting mlp",
    "evaluate mcqa --model M --data D --out O",
    "evaluate pararel --model M --data D --out O",
    "train consistency --model M --data D --out O",
    "evaluate calum --model M --task rte --out O",
]


def test_a_device_of_no_known_form_is_a_usage_error_when_parsed(tmp_path):
    """Before: `--device banana` was taken, and failed after the model loaded. Now argparse refuses it, before
    anything heavy is imported."""
    argvs = [(command + " --device banana").split() for command in DEVICE_COMMANDS]
    code = f"""
import sys
from probes.main import main
codes = []
for argv in {argvs!r}:
    try:
        codes.append(main(argv))
    except SystemExit as exc:
        codes.append(exc.code)
print(codes, sorted(m for m in ("torch", "transformers", "datasets") if m in sys.modules))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert out.stdout.strip() == f"{[2] * len(argvs)} []", out.stderr
    refusal = "error: argument --device: expected auto, cpu, cuda, cuda:N (a GPU's index) or mps, got 'banana'"
    assert out.stderr.count(refusal) == len(argvs), out.stderr


@pytest.mark.parametrize("command", DEVICE_COMMANDS)
def test_cuda_that_torch_does_not_see_is_refused_before_any_load(command, tmp_path, capsys, monkeypatch):
    """Before: `--device cuda` without CUDA failed after the model loaded. The count is patched, so the test is
    the same on a machine with GPUs."""
    import torch

    def no_load(*_a, **_k):
        raise AssertionError("a model was resolved or loaded")

    # imported first: a module imported while the patches hold would keep no_load under its own name
    import evaluators.engine.kept_models
    import evaluators.engine.models
    import probekit.tokens.refs

    for target in ("probekit.tokens.refs.resolve_model", "evaluators.engine.models.load_lm",
                   "evaluators.engine.kept_models.scoring_lm"):
        monkeypatch.setattr(target, no_load)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    assert main([*command.split(), "--device", "cuda"]) == 2
    assert one_line(capsys.readouterr().err).endswith(
        f"error: argument --device: cuda: torch sees no CUDA device (torch {torch.__version__}, "
        f"{f'built for CUDA {torch.version.cuda}' if torch.version.cuda else 'a build without CUDA'}): use --device "
        f"cpu or auto")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert main([*command.split(), "--device", "cuda:2"]) == 2
    assert one_line(capsys.readouterr().err).endswith(
        "error: argument --device: cuda:2: torch sees 2 CUDA devices (cuda:0 to cuda:1)")
    assert not (tmp_path / "O").exists()
