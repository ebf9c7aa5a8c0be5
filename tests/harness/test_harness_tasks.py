"""``probes export lm-eval``: the task configs, and the real lm-evaluation-harness scoring them exactly as probekit's
causal ``statement`` and ``harness`` rules do (per choice, within 1e-4, and the same accuracy)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
import yaml

from probekit.errors import DataError, UsageError
from probes.main import main

from helpers import write_toy_cloze_set

TOL = 1e-4

# Stems like age_comparison's: a blank at the start, one glued to the next word ("[MASK]er"), three choices.
TOY = [
    ("A 24 year old person is [MASK] than me in age, If I am a 55 year old person.", ["younger", "older"], "A"),
    ("A 31 year old person is [MASK] than me in age, If I am a 19 year old person.", ["younger", "older"], "B"),
    ("[MASK] is older than me in age, If I am a 55 year old person.", ["A 24 year old person", "blah"], "B"),
    ("A 31 year old person is [MASK]er than me.", ["old", "young"], "A"),
    ("When comparing a 23 year old, a 38 year old and a 31 year old, the [MASK] is oldest .",
     ["first", "second", "third"], "B"),
    ("the second is oldest . the [MASK] is oldest .", ["third", "first", "ya foo"], "A"),
]
PARAREL = {"P19": (["[X] was born in [Y].", "[Y] is where [X] was born ."], [("Ada", "London"), ("Kurt", "Brno"),
                                                                            ("Olga", "Kyiv")])}


def _mc_rows(probe: str, variant: str) -> list[dict]:
    return [{"id": f"{variant}-{i}", "question": {"stem": stem, "choices": [{"label": "ABC"[j], "text": c}
                                                                          for j, c in enumerate(choices)]},
             "answerKey": key, "probe": probe, "variant": variant, "template_id": "t"}
            for i, (stem, choices, key) in enumerate(TOY)]


def write_mc(folder: Path, probe: str = "toy_age", variant: str = "original", fmt: str = "mc_mlm",
             citation: str | None = "olmpics") -> Path:
    """A probe variant folder as ``probes generate`` writes it (the fields the Hub export reads), its card citing
    ``citation`` (a key of probekit/data/papers.yaml; None: none)."""
    folder.mkdir(parents=True)
    (folder / "README.md").write_text(f"---\nprobekit:\n  citation: {json.dumps(citation)}\n---\n# {probe}\n",
                                      encoding="utf-8")
    rows = _mc_rows(probe, variant)
    if fmt == "mc_qa":
        for r in rows:
            r["question"]["stem"] = r["question"]["stem"].replace("[MASK]", "what")
    for split, part in (("train", rows[:2]), ("dev", rows)):
        (folder / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in part), encoding="utf-8")
    meta = {"probe": probe, "variant": variant, "format": fmt, "license": "apache-2.0", "definition_version": "1",
            "fingerprint": f"fp-{probe}-{variant}",
            "generator_version": "1", "splits": {"train": {"template_ids": ["t"]}, "dev": {"template_ids": ["t"]}}}
    (folder / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    return folder


def write_pararel(folder: Path) -> Path:
    meta = {"probe": "pararel", "format": "cloze_set", "definition_version": "1", "generator_version": "1",
            "params": {}, "license": "cc-by-nc-4.0",
            "relations": {r: {"class": "N-1", "patterns": len(p), "tuples": len(t), "candidates": len(t)}
                          for r, (p, t) in PARAREL.items()}}
    return write_toy_cloze_set(folder, PARAREL, meta, "# ParaRel\n")


def write_pairs(folder: Path, labels=("entailment", "not_entailment")) -> Path:
    folder.mkdir(parents=True)
    for variant in ("original", "reverse"):
        (folder / variant).mkdir()
        rows = [{"pair_id": f"rte-dev-{i}", "variant": variant, "sentence1": f"Sentence1: first {i}.",
                 "sentence2": f"Sentence2: second {i}.", "label": labels[i % 2]} for i in range(4)]
        (folder / variant / "dev.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    meta = {"probe": "calum", "task": "rte", "format": "pair_cls", "license": "other", "definition_version": "1",
            "generator_version": "1", "labels": list(labels), "counts": {"original": {"dev": 4}, "reverse": {"dev": 4}}}
    (folder / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    return folder


@pytest.fixture
def data(tmp_path, monkeypatch) -> Path:
    """``data/`` under the working directory (tmp_path): two variants, a ParaRel relation and CALUM pairs."""
    monkeypatch.chdir(tmp_path)
    write_mc(Path("data/probes/toy_age/original"))
    write_mc(Path("data/probes/toy_age/nolang"), variant="nolang")
    write_mc(Path("data/probes/toy_qa/original"), probe="toy_qa", fmt="mc_qa")
    write_pararel(Path("data/pararel"))
    write_pairs(Path("data/calum/rte"))
    return Path("data")


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_export_writes_tasks_groups_and_readme_deterministically(data, capsys):
    assert main(["export", "lm-eval", "--data", "data", "--out", "out/lm"]) == 0
    assert "wrote" in capsys.readouterr().out
    first = _tree(Path("out/lm"))
    assert set(first) == {
        ".probekit.json", "README.md", "_probekit.yaml", "calum/_calum.yaml", "calum/calum_rte_original.yaml",
        "calum/calum_rte_reverse.yaml", "olmpics/_olmpics.yaml", "olmpics/_olmpics_choice.yaml",
        "olmpics/olmpics_toy_age.yaml", "olmpics/olmpics_toy_age_choice.yaml", "olmpics/olmpics_toy_age_nolang.yaml",
        "olmpics/olmpics_toy_age_nolang_choice.yaml", "olmpics/olmpics_toy_qa.yaml", "pararel/_pararel.yaml",
        "pararel/pararel_p19.yaml", "pararel/P19.jsonl"}
    assert main(["export", "lm-eval", "--data", "data", "--out", "out/lm"]) == 0
    assert _tree(Path("out/lm")) == first
    load = lambda rel: yaml.safe_load(first[rel])  # noqa: E731
    assert load("_probekit.yaml")["task"] == ["olmpics", "olmpics_choice", "pararel", "calum"]
    assert load("olmpics/_olmpics.yaml")["task"] == ["olmpics_toy_age", "olmpics_toy_age_nolang", "olmpics_toy_qa"]
    statement = load("olmpics/olmpics_toy_age.yaml")
    assert statement["dataset_kwargs"] == {"data_files": {"dev": "data/probes/toy_age/original/dev.jsonl"}}
    assert statement["test_split"] == "dev" and statement["doc_to_text"] == "" and statement["target_delimiter"] == ""
    meta = statement["metadata"]
    assert meta["version"] == 1.0 and meta["probekit_rule"] == "statement"
    assert meta["dataset"] == "probes/toy_age/original"
    assert meta["dataset_version"].startswith("1.0.0+") and meta["dataset_version"][6:] == meta["fingerprint"][:12]
    assert load("olmpics/olmpics_toy_age_choice.yaml")["metadata"]["probekit_rule"] == "harness"
    assert load("olmpics/olmpics_toy_qa.yaml")["target_delimiter"] == " "
    assert load("olmpics/olmpics_toy_qa.yaml")["metadata"]["probekit_rule"] is None
    assert load("pararel/pararel_p19.yaml")["dataset_kwargs"] == {"data_files": {"test": "out/lm/pararel/P19.jsonl"}}
    assert load("calum/calum_rte_reverse.yaml")["doc_to_choice"] == ["True", "False"]
    assert b"/tmp" not in b"".join(first.values()) and str(Path.cwd()).encode() not in b"".join(first.values())
    assert b"`olmpics_toy_age_choice` | `olmpics_choice` | harness" in first["README.md"]


def test_hub_mode_names_the_repo_and_config(data):
    assert main(["export", "lm-eval", "--data", "data", "--out", "hub", "--hub", "org/probes",
                 "--hub-revision", "v1", "--probes", "toy_age,pararel"]) == 0
    config = yaml.safe_load(Path("hub/olmpics/olmpics_toy_age_nolang.yaml").read_text())
    assert config["dataset_path"] == "org/probes" and config["dataset_name"] == "toy_age-nolang"
    assert config["dataset_kwargs"] == {"revision": "v1"} and config["test_split"] == "dev"
    pararel = yaml.safe_load(Path("hub/pararel/pararel_p19.yaml").read_text())
    assert pararel["dataset_name"] == "pararel-P19" and pararel["test_split"] == "test"
    assert not Path("hub/pararel/P19.jsonl").exists() and not Path("hub/calum").exists()


def test_bad_arguments_are_usage_errors(data, tmp_path):
    from evaluators.harness import write

    with pytest.raises(UsageError, match="--data nowhere: no such folder"):
        write.write("nowhere", "out")
    with pytest.raises(UsageError, match="--probes nothing"):
        write.write("data", "out", ["nothing"])
    Path("file").write_text("x")
    assert main(["export", "lm-eval", "--data", "data", "--out", "file"]) != 0
    assert main(["export", "lm-eval", "--data", "data", "--out", "o", "--hub-revision", "v1"]) != 0


def test_a_task_named_like_a_group_fails_the_export(tmp_path, monkeypatch):
    from evaluators.harness import write

    monkeypatch.chdir(tmp_path)
    write_mc(Path("d/probes/mc/original"), probe="mc", citation=None)   # the task probekit_mc
    with pytest.raises(DataError, match=r"lm-eval task probekit_mc of the dataset probes/mc/original has the name "
                                        r"of the group probekit_mc; rename the probe"):
        write.write("d", "o")
    assert not Path("o").exists()


def test_unknown_pair_labels_are_skipped_and_a_drifting_template_fails_the_export(tmp_path, monkeypatch):
    from evaluators.harness import tasks as tasks_module
    from evaluators.harness import write

    monkeypatch.chdir(tmp_path)
    write_pairs(Path("d/calum/odd"), labels=("yes", "no"))
    write_mc(Path("d/probes/toy_age/original"))
    tasks = write.collect("d", "o")
    assert [t.name for t in tasks] == ["olmpics_toy_age", "olmpics_toy_age_choice"]
    # A template that renders other choices than probekit scores fails the export, naming task and example.
    monkeypatch.setattr(tasks_module, "_FILLED", "{{ [question.stem] }}")
    with pytest.raises(DataError, match=r"lm-eval task olmpics_toy_age, example original-0: the harness would read "
                                        r"choices \['A 24"):
        write.collect("d", "o")


# --- the real harness against probekit's Engine -----------------------------------------------------------------

@pytest.fixture
def offline(tmp_path, monkeypatch):
    """No network, and the datasets cache in tmp (the json loader caches what it reads)."""
    import datasets

    for var in ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.setenv(var, "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf" / "datasets"))
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf" / "datasets")
    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True, raising=False)


def _harness(model: Path, tasks: list[str], include: str) -> dict:
    import lm_eval
    from lm_eval.tasks import TaskManager

    out = lm_eval.simple_evaluate(model="hf", model_args=f"pretrained={model},dtype=float32", tasks=tasks,
                                  task_manager=TaskManager(include_path=include), log_samples=True, batch_size=1,
                                  device="cpu", bootstrap_iters=0)
    return out


def _logliks(sample: dict) -> list[float]:
    """Each choice's log-likelihood in a logged sample (``[loglik, is_greedy]`` pairs, maybe as strings)."""
    resps = sample["filtered_resps"]
    return [float((ast.literal_eval(r) if isinstance(r, str) else r)[0]) for r in resps]


def _engine(model: Path, rule: str):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from evaluators.engine.scorer import Engine

    tok = AutoTokenizer.from_pretrained(str(model))
    lm = AutoModelForCausalLM.from_pretrained(str(model), dtype=torch.float32).eval()
    return Engine(lm, tok, "causal", rule=rule, batch_size=4)


def _compare(out: dict, task: str, stems, choices, gold, engine) -> float:
    samples = sorted(out["samples"][task], key=lambda s: s["doc_id"])
    assert len(samples) == len(stems)
    ours = engine.score(stems, choices, [f"ex{i}" for i in range(len(stems))])
    worst = 0.0
    for sample, scores in zip(samples, ours):
        theirs = _logliks(sample)
        assert theirs == pytest.approx(scores, abs=TOL), task
        worst = max(worst, max(abs(a - b) for a, b in zip(theirs, scores)))
    ours_acc = sum(max(range(len(s)), key=s.__getitem__) == g for s, g in zip(ours, gold)) / len(gold)
    assert out["results"][task]["acc,none"] == pytest.approx(ours_acc), task
    return worst


@pytest.mark.slow   # the real harness
def test_harness_scores_equal_probekit_rules(data, offline, tiny_gpt2, capsys):
    assert main(["export", "lm-eval", "--data", "data", "--out", "lm", "--probes", "toy_age,pararel"]) == 0
    tasks = ["olmpics_toy_age", "olmpics_toy_age_choice", "pararel_p19"]
    out = _harness(tiny_gpt2, tasks, "lm")
    stems = [s for s, _, _ in TOY]
    choices = [c for _, c, _ in TOY]
    gold = ["ABC".index(k) for _, _, k in TOY]
    worst = _compare(out, "olmpics_toy_age", stems, choices, gold, _engine(tiny_gpt2, "statement"))
    worst = max(worst, _compare(out, "olmpics_toy_age_choice", stems, choices, gold, _engine(tiny_gpt2, "harness")))
    written = [json.loads(line) for line in Path("lm/pararel/P19.jsonl").read_text().splitlines()]
    assert all(set(r) == {"id", "query", "obj_label"} for r in written)   # the candidates are in the YAML, once
    from probekit.hub import export as hub_export

    config, = hub_export.discover(Path("data"), ["pararel-P19"])
    rows = hub_export.export(config, Path("data")).rows["test"]
    assert [r["id"] for r in rows] == [r["id"] for r in written]
    worst = max(worst, _compare(out, "pararel_p19", [r["query"] for r in rows], [r["candidates"] for r in rows],
                                [r["candidates"].index(r["obj_label"]) for r in rows], _engine(tiny_gpt2, "statement")))
    # `probes evaluate zeroshot --rule harness` writes those scores; probekit's `choice` rule is another number.
    assert main(["evaluate", "zeroshot", "--model", str(tiny_gpt2), "--data", "data/probes/toy_age/original",
                 "--rule", "harness", "--batch-size", "2", "--out", "zs"]) == 0
    predictions = [json.loads(line) for line in Path("zs/predictions.jsonl").read_text().splitlines()]
    samples = sorted(out["samples"]["olmpics_toy_age_choice"], key=lambda s: s["doc_id"])
    for p, sample in zip(predictions, samples, strict=True):
        assert p["scores"] == pytest.approx(_logliks(sample), abs=TOL) and p["rule"] == "harness"
    choice = _engine(tiny_gpt2, "choice").score(stems, choices, [f"ex{i}" for i in range(len(stems))])
    assert max(abs(a - b) for s, c in zip(samples, choice) for a, b in zip(_logliks(s), c)) > 0.1
    with capsys.disabled():
        print(f"\nharness vs probekit (tiny-gpt2): max |log-likelihood difference| {worst:.2e}")


@pytest.mark.slow   # the real harness
def test_harness_statement_and_choice_with_a_bos_tokenizer(data, offline, tiny_llama, capsys):
    """Llama's tokenizer puts ``<s>`` first itself: the harness's empty context is that BOS (probekit's statement
    rule adds no second one), and a non-empty context keeps the BOS the tokenizer adds (the harness rule too)."""
    assert main(["export", "lm-eval", "--data", "data", "--out", "lm", "--probes", "toy_age"]) == 0
    out = _harness(tiny_llama, ["olmpics_toy_age", "olmpics_toy_age_choice"], "lm")
    stems, choices = [s for s, _, _ in TOY], [c for _, c, _ in TOY]
    gold = ["ABC".index(k) for _, _, k in TOY]
    worst = _compare(out, "olmpics_toy_age", stems, choices, gold, _engine(tiny_llama, "statement"))
    worst = max(worst, _compare(out, "olmpics_toy_age_choice", stems, choices, gold, _engine(tiny_llama, "harness")))
    with capsys.disabled():
        print(f"\nharness vs probekit (tiny-llama): max |log-likelihood difference| {worst:.2e}")


@pytest.mark.slow   # the real harness: the `lm_eval` command in a subprocess
def test_the_lm_eval_command_runs_our_group_offline_from_the_exported_folder(data, offline, tiny_gpt2):
    """The harness's own command, as a user types it: ``lm_eval --model hf --model_args pretrained=<tiny gpt2>
    --tasks probekit --include_path <exported folder> --log_samples``, offline; every group and task is there and
    the logged scores are probekit's."""
    import subprocess
    import sys

    assert main(["export", "lm-eval", "--data", "data", "--out", "lm"]) == 0
    lm_eval = Path(sys.executable).parent / "lm_eval"
    done = subprocess.run([str(lm_eval), "--model", "hf", "--model_args", f"pretrained={tiny_gpt2},dtype=float32",
                           "--tasks", "probekit", "--include_path", "lm", "--device", "cpu", "--batch_size", "4",
                           "--log_samples", "--output_path", "out"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(next(Path("out").rglob("results_*.json")).read_text())
    assert {"probekit", "olmpics", "olmpics_choice", "pararel", "calum"} <= set(results["groups"])
    assert {"olmpics_toy_age", "olmpics_toy_age_nolang_choice", "olmpics_toy_qa", "pararel_p19",
            "calum_rte_original"} <= set(results["results"])
    samples = [json.loads(line) for line in next(Path("out").rglob("samples_olmpics_toy_age_2*.jsonl"))
               .read_text().splitlines()]
    stems = [s for s, _, _ in TOY]
    ours = _engine(tiny_gpt2, "statement").score(stems, [c for _, c, _ in TOY], [f"ex{i}" for i in range(len(TOY))])
    for sample in samples:
        assert _logliks(sample) == pytest.approx(ours[sample["doc_id"]], abs=TOL)
