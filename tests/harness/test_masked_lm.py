"""The harness model type ``probekit-mlm`` run by the real lm-evaluation-harness on hand-written tasks: a task of
filled statements gets probekit's ``pll-statement`` scores and accuracy; a context+choice task gets the PLL of
the choice's tokens given the context, checked against a recomputation from the model itself; ``is_greedy``
where it can be predicted; the harness's CLI with the model registered; a causal or headless model refused."""

from __future__ import annotations

import json

import lm_eval
import numpy as np
import pytest
import torch
from lm_eval.api.instance import Instance
from lm_eval.tasks import TaskManager
from transformers import AutoModelForMaskedLM, AutoTokenizer

from evaluators.engine.scorer import Engine
from evaluators.harness.cli import run_harness
from evaluators.harness.masked_lm import ProbekitMaskedLM
from probekit.errors import DataError, UsageError

DOCS = [
    ("A 32 year old person is [MASK] than me in age, If I am a 19 year old person.", ["younger", "older"], 1),
    ("A 24 year old person is [MASK] than me in age, If I am a 55 year old person.", ["younger", "older"], 0),
    ("When comparing a 23 year old and a 38 year old, the [MASK] is oldest.", ["first", "second"], 1),
    ("He was [MASK] when the phone rang.", ["taking bath", "sleeping"], 0),
    ("the [MASK] is oldest.", ["first", "second", "third"], 2),
    ("[MASK], said the third.", ["first", "taking bath"], 0),
    ("It is [MASK] than that, they say.", ["older", "younger"], 0),
    ("We met the [MASK] yesterday.", ["third", "oldest person"], 1),
    ("A 31 year old person is [MASK] than me.", ["younger", "older", "blah ya foo"], 0),
    ("Nobody thought it was [MASK] at all.", ["older", "taking bath"], 1),
    ("the second is [MASK].", ["oldest", "younger than"], 0),
    ("If I am a 55 year old person, I am [MASK].", ["older", "younger"], 0),
]
STATEMENT_TASK = "probekit_mlm_statements"
CONTEXT_TASK = "probekit_mlm_context"


@pytest.fixture(autouse=True)
def hermetic(tmp_path, monkeypatch):
    """No network, caches in this test's folder."""
    for name, value in {"HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "HF_HOME": tmp_path / "hf",
                        "HF_DATASETS_CACHE": tmp_path / "hf" / "datasets"}.items():
        monkeypatch.setenv(name, str(value))
    monkeypatch.setattr("datasets.config.HF_DATASETS_OFFLINE", True, raising=False)
    monkeypatch.setattr("datasets.config.HF_DATASETS_CACHE", tmp_path / "hf" / "datasets", raising=False)


def peaked(tmp_path_factory, source, name):
    """The tiny model with its output bias drawn wide (peaked predictions: choices far apart), saved."""
    model = AutoModelForMaskedLM.from_pretrained(str(source))
    torch.manual_seed(1)
    with torch.no_grad():
        model.get_output_embeddings().bias.normal_(0, 2)
    path = tmp_path_factory.mktemp(name)
    model.save_pretrained(path)
    AutoTokenizer.from_pretrained(str(source)).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def bert(tmp_path_factory, tiny_bert):
    return peaked(tmp_path_factory, tiny_bert, "peaked-bert")


@pytest.fixture(scope="module")
def roberta(tmp_path_factory, tiny_roberta):
    return peaked(tmp_path_factory, tiny_roberta, "peaked-roberta")


@pytest.fixture(params=["bert", "roberta"])
def model_path(request):
    return request.getfixturevalue(request.param)


@pytest.fixture
def tasks(tmp_path):
    """Two harness tasks over the same docs: filled statements with an empty context, and the text before the
    blank as context with the choices as continuations."""
    folder = tmp_path / "tasks"
    folder.mkdir()
    data = folder / "docs.jsonl"
    data.write_text("".join(json.dumps({"stem": s, "choices": c, "gold": g}) + "\n" for s, c, g in DOCS))
    filled = ("{% set ns = namespace(x=[]) %}{% for c in choices %}{% set ns.x = ns.x + [stem.replace('[MASK]', c)]"
              " %}{% endfor %}{{ ns.x }}")
    common = {"dataset_path": "json", "dataset_kwargs": {"data_files": {"test": str(data)}}, "test_split": "test",
              "output_type": "multiple_choice", "doc_to_target": "gold", "metric_list": [{"metric": "acc"}]}
    tasks = {STATEMENT_TASK: {"doc_to_text": "", "target_delimiter": "", "doc_to_choice": filled},
             CONTEXT_TASK: {"doc_to_text": "{{ stem.split('[MASK]')[0].rstrip() }}", "target_delimiter": " ",
                            "doc_to_choice": "{{ choices }}"}}
    for name, config in tasks.items():
        (folder / f"{name}.yaml").write_text(json.dumps({"task": name, **common, **config}, indent=1))
    return folder


def harness(path, task, folder, **options):
    return lm_eval.simple_evaluate(model="probekit-mlm", model_args=f"pretrained={path}", tasks=[task],
                                   task_manager=TaskManager(include_path=str(folder)), log_samples=True,
                                   batch_size=4, **options)


def choice_scores(sample) -> list[tuple[float, bool]]:
    """Each choice's (log-likelihood, is_greedy) as the harness logged them (numbers may be strings)."""
    out = []
    for resp in sample["filtered_resps"]:
        ll, greedy = resp
        out.append((float(ll), greedy in (True, "True", "true", 1)))
    return out


def by_doc(results, task):
    return sorted(results["samples"][task], key=lambda s: s["doc_id"])


@pytest.mark.slow   # the real harness (lm_eval.simple_evaluate)
def test_statement_task_is_pll_statement(model_path, tasks):
    results = harness(model_path, STATEMENT_TASK, tasks)
    samples = by_doc(results, STATEMENT_TASK)
    assert len(samples) == len(DOCS)
    tok = AutoTokenizer.from_pretrained(str(model_path))
    model = AutoModelForMaskedLM.from_pretrained(str(model_path)).eval()
    stems, choices = [d[0] for d in DOCS], [d[1] for d in DOCS]
    ids = [str(i) for i in range(len(DOCS))]
    expected = Engine(model, tok, "mlm", rule="pll-statement").score(stems, choices, ids)
    got = [[ll for ll, _ in choice_scores(s)] for s in samples]
    diff = max(abs(g - e) for gs, es in zip(got, expected) for g, e in zip(gs, es))
    print(f"max |harness - pll-statement| = {diff:.3g}")
    assert diff < 1e-4
    accuracy = np.mean([int(np.argmax(e)) == d[2] for e, d in zip(expected, DOCS)])
    assert results["results"][STATEMENT_TASK]["acc,none"] == pytest.approx(accuracy, abs=1e-12)
    # not the choice-only rule: the statement's other tokens count
    pll = Engine(model, tok, "mlm", rule="pll").score(stems, choices, ids)
    assert all(e < p for es, ps in zip(expected, pll) for e, p in zip(es, ps))


def direct_pll(model, tok, context: str, continuation: str) -> tuple[float, bool]:
    """PLL-word-l2r of ``continuation`` after ``context``, from the model's full output: each continuation token
    masked with the later tokens of its word, log-softmax summed; greedy when each is the argmax."""
    text = context + continuation
    begin = len(context) + len(continuation) - len(continuation.lstrip())
    enc = tok(text, return_offsets_mapping=True)
    ids, words = enc["input_ids"], enc.word_ids()
    special = tok.get_special_tokens_mask(ids, already_has_special_tokens=True)
    # the continuation's tokens: those reaching past its start, and a lone space piece at it (``Ġ`` of a
    # byte-level BPE that has no ``Ġt``: offsets (begin, begin), the next word's word id)
    targets = [t for t, (s, e) in enumerate(enc["offset_mapping"]) if not special[t] and (e > begin or s >= begin)]
    total, greedy = 0.0, True
    for t in targets:
        masked = list(ids)
        u = t
        while u < len(ids) and u in targets and words[u] == words[t]:
            masked[u] = tok.mask_token_id
            u += 1
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([masked])).logits[0, t]
        total += float(torch.log_softmax(logits, -1)[ids[t]])
        greedy &= int(logits.argmax()) == ids[t]
    return total, greedy


@pytest.mark.slow   # the real harness (lm_eval.simple_evaluate)
def test_context_task_scores_the_choice_given_the_context(model_path, tasks):
    results = harness(model_path, CONTEXT_TASK, tasks)
    samples = by_doc(results, CONTEXT_TASK)
    tok = AutoTokenizer.from_pretrained(str(model_path))
    model = AutoModelForMaskedLM.from_pretrained(str(model_path)).eval()
    diffs = []
    for i in (0, 3, 7, 10):
        stem, choices, _ = DOCS[i]
        context = stem.split("[MASK]")[0].rstrip()
        for (ll, greedy), choice in zip(choice_scores(samples[i]), choices):
            expected, expected_greedy = direct_pll(model, tok, context, " " + choice)
            diffs.append(abs(ll - expected))
            assert greedy == expected_greedy
    print(f"max |harness - direct PLL| = {max(diffs):.3g}")
    assert max(diffs) < 1e-4


def requests(*pairs):
    return [Instance("loglikelihood", {}, pair, i) for i, pair in enumerate(pairs)]


def test_is_greedy_when_the_continuation_is_the_argmax(tmp_path, tiny_bert):
    """With one token's output bias far above the others it is the argmax at every mask: a continuation of it
    alone is greedy, any other is not, and its PLL is near 0."""
    model = AutoModelForMaskedLM.from_pretrained(str(tiny_bert))
    tok = AutoTokenizer.from_pretrained(str(tiny_bert))
    older = tok.convert_tokens_to_ids("older")
    with torch.no_grad():
        model.get_output_embeddings().bias[older] = 100.0
    model.save_pretrained(tmp_path / "biased")
    tok.save_pretrained(tmp_path / "biased")
    lm = ProbekitMaskedLM(pretrained=str(tmp_path / "biased"), batch_size="2")
    out = lm.loglikelihood(requests(("He is", " older"), ("He is", " younger"), ("", "older older"),
                                    ("He is", " older than me")))
    assert [greedy for _, greedy in out] == [True, False, True, False]
    assert out[0][0] == pytest.approx(0, abs=1e-3) and out[2][0] == pytest.approx(0, abs=1e-3)
    assert out[1][0] < -50
    assert lm.loglikelihood(requests(("He is", " older")))[0] == out[0]  # alone as in a batch


def test_rolling_is_the_whole_text_and_generation_is_refused(bert):
    lm = ProbekitMaskedLM(pretrained=str(bert), batch_size=3)
    texts = ["A 24 year old person is older than me.", "the second is oldest."]
    rolling = lm.loglikelihood_rolling([Instance("loglikelihood_rolling", {}, (t,), i) for i, t in enumerate(texts)])
    assert rolling == [ll for ll, _ in lm.loglikelihood(requests(*(("", t) for t in texts)))]
    assert all(isinstance(r, float) and r < 0 for r in rolling)
    with pytest.raises(NotImplementedError, match="probekit-mlm scores; it does not generate"):
        lm.generate_until([])
    with pytest.raises(DataError, match="empty continuation"):
        lm.loglikelihood(requests(("He is", " ")))


@pytest.mark.slow   # the real harness, through `probes harness`
def test_run_harness_cli(bert, tasks, tmp_path, capsys):
    argv = ["--model", "probekit-mlm", "--model_args", f"pretrained={bert}", "--tasks", STATEMENT_TASK,
            "--include_path", str(tasks), "--limit", "3"]
    assert run_harness(argv) == 0
    # `probes lm-eval` hands every argument to the harness, its own options included
    from probes.main import main

    assert main(["lm-eval", *argv, "--output_path", str(tmp_path / "out"), "--device", "cpu"]) == 0
    assert STATEMENT_TASK in capsys.readouterr().out
    assert list((tmp_path / "out").rglob("results_*.json"))
    assert main(["lm-eval", "--model", "probekit-mlm", "--model_args", "pretrained=no/such-folder-here",
                 "--tasks", STATEMENT_TASK, "--include_path", str(tasks)]) != 0


def test_causal_and_headless_models_are_refused(tiny_gpt2, tiny_bert_no_head):
    with pytest.raises(UsageError, match="probekit-mlm scores masked LMs only"):
        ProbekitMaskedLM(pretrained=str(tiny_gpt2))
    with pytest.raises(UsageError, match="no trained masked-LM head"):
        ProbekitMaskedLM(pretrained=str(tiny_bert_no_head))


def test_a_revision_is_pinned_as_a_params_entry_pins_it(monkeypatch, tiny_bert):
    """``revision=`` reaches the model's, config's and tokenizer's ``from_pretrained``; a folder has none."""
    with pytest.raises(UsageError, match=r"models\..*\.revision: 'v1' pins a Hub revision, but .* is a local model"):
        ProbekitMaskedLM(pretrained=str(tiny_bert), revision="v1")
    import probekit.tokens.refs as refs

    seen = {}
    monkeypatch.setattr(refs, "_check_hub", lambda *a: None)   # no Hub here

    def stop(ref, **kwargs):
        seen.update(location=ref.location, pinned=ref.pinned)
        raise UsageError("stop here")

    monkeypatch.setattr("evaluators.harness.masked_lm.load_lm", stop)
    with pytest.raises(UsageError, match="stop here"):
        ProbekitMaskedLM(pretrained="org/some-bert", revision="abc123")
    assert seen == {"location": "org/some-bert", "pinned": {"revision": "abc123"}}


def test_batch_size_and_arguments():
    from evaluators.harness.masked_lm import harness_batch_size

    assert [harness_batch_size(v) for v in (None, "auto", "auto:4", 8, "16")] == ["auto", "auto", "auto", 8, 16]
    with pytest.raises(UsageError, match="batch_size"):
        harness_batch_size("0")
    with pytest.raises(UsageError, match="unknown model_args"):
        ProbekitMaskedLM(pretrained="x", trust_remote=True)


def test_pll_statement_is_a_rule_of_the_command_line_and_the_params():
    from evaluators.shared.params import Rules
    from probes.main import parser

    assert Rules(mlm="pll-statement").mlm == "pll-statement"
    args = parser().parse_args(["evaluate", "zeroshot", "--model", "m", "--data", "d", "--out", "o",
                                "--rule", "pll-statement"])
    assert args.rule == "pll-statement"
