"""The random-init baseline: ``random:<model>`` (``random@<seed>:<model>``) is ``<model>``'s architecture and
tokenizer with every weight drawn afresh from a seed, for any model an alias names; its results say so."""

from __future__ import annotations

import json

import pytest
import torch

from evaluators.engine.models import load_lm
from evaluators.olmpics.zeroshot import run as run_zeroshot
from probekit.errors import UsageError
from probekit.outputs.atomic import write_jsonl
from probekit.tokens.refs import resolve_model


def test_an_alias_resolves_to_its_architecture_without_weights(tiny_bert):
    aliases = {"tiny": str(tiny_bert), "tiny-random": "random:tiny", "tiny-r7": "random@7:tiny"}
    ref = resolve_model("tiny-random", aliases, "params.yaml")
    assert ref.random_init and ref.location == str(tiny_bert) and ref.spec == f"random:{tiny_bert}"
    assert ref.init_seed is None and resolve_model("tiny-r7", aliases, "params.yaml").init_seed == 7
    assert resolve_model("random:tiny", aliases, "params.yaml").random_init   # typed, not an alias
    assert not resolve_model("tiny", aliases, "params.yaml").random_init


@pytest.mark.parametrize("spec, words", [("random:./nowhere", "no model folder"),
                                         ("random@x:tiny", "must be an integer"),
                                         ("random:again", "not a random-init one")])
def test_a_bad_random_reference_is_named(tiny_bert, spec, words):
    aliases = {"tiny": str(tiny_bert), "again": "random:tiny", "bad": spec}
    with pytest.raises(UsageError, match=words):
        resolve_model("bad", aliases, "params.yaml")


def test_its_weights_are_fresh_and_follow_the_seed(tiny_bert):
    aliases = {"tiny": str(tiny_bert), "r": "random:tiny", "r7": "random@7:tiny"}
    pretrained = load_lm(resolve_model("tiny", aliases, "p"))
    fresh = load_lm(resolve_model("r", aliases, "p"), seed=3)
    again = load_lm(resolve_model("r", aliases, "p"), seed=3)
    other = load_lm(resolve_model("r", aliases, "p"), seed=4)
    pinned = load_lm(resolve_model("r7", aliases, "p"), seed=3)

    def first(loaded):
        return loaded.model.bert.encoder.layer[0].attention.self.query.weight

    assert type(fresh.model) is type(pretrained.model)
    assert fresh.tokenizer.get_vocab() == pretrained.tokenizer.get_vocab()
    assert not torch.equal(first(fresh), first(pretrained))
    assert torch.equal(first(fresh), first(again)) and not torch.equal(first(fresh), first(other))
    assert not torch.equal(first(pinned), first(fresh))
    assert fresh.random_init == {"of": str(tiny_bert), "seed": 3} and pinned.random_init["seed"] == 7
    assert not fresh.head_pretrained and pretrained.random_init is None


def test_its_zero_shot_metrics_record_it(tiny_bert, tmp_path):
    rows = [{"id": f"q{i}", "question": {"stem": "a [MASK] b", "choices": [
        {"label": "A", "text": "larger"}, {"label": "B", "text": "smaller"}]}, "answerKey": "AB"[i % 2]}
        for i in range(6)]
    data = tmp_path / "dev.jsonl"
    write_jsonl(data, rows)
    loaded = load_lm(resolve_model("random:tiny", {"tiny": str(tiny_bert)}, "p"), seed=0)
    run_zeroshot(loaded, {"": (data, rows)}, tmp_path / "out", probe="objects_comparison", progress=False)
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["random_init"] == {"of": str(tiny_bert), "seed": 0}
    assert metrics["lm_head"] == "newly_initialised" and metrics["zero_shot"] is False
