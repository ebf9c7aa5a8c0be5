"""``calum_eval.multitask_heads: own``: the original's multitask model (DSincerity/CALM,
``multitask-transformers/model.py`` lines 27-43) gives each task the checkpoint's own sequence classifier
(``AutoModelForSequenceClassification``) and shares one encoder between them: GPT-2's head is its bias-free
``score`` on the last token, not a new dense-tanh layer."""

from __future__ import annotations

import json

import pytest
import torch

from evaluators.calum.classifiers import load_own_heads, load_tokenizer
from evaluators.calum.multitask import MASKED_LOGIT
from evaluators.calum.params import CalumEvalParams
from probekit.tokens.refs import ModelRef



def test_each_task_keeps_the_checkpoints_own_head_on_one_encoder(tiny_gpt2):
    ref = ModelRef("tiny", str(tiny_gpt2), str(tiny_gpt2))
    tokenizer = load_tokenizer(ref)
    model = load_own_heads(ref, tokenizer, {"rte": ["entailment", "not_entailment"], "mnli": ["e", "n", "c"]},
                           seed=1).eval()
    rte, mnli = model.classifiers
    assert type(rte).__name__ == "GPT2ForSequenceClassification" and rte.transformer is mnli.transformer
    assert rte.transformer is model.encoder and rte.score.bias is None          # GPT-2's own head: one projection
    assert [rte.score.out_features, mnli.score.out_features] == [2, 3]
    # the encoder is counted once among the parameters and in the state dict
    names = [n for n, _ in model.named_parameters()]
    assert sum(n.startswith("encoder.") for n in names) == len(list(model.encoder.parameters()))
    assert not any(".transformer." in n for n in model.state_dict())
    pad = tokenizer.pad_token_id
    ids = torch.tensor([[5, 6, 7, pad], [8, 9, 10, 11], [5, 6, 7, pad]])
    mask = (ids != pad).long()
    mask[:, :3] = 1
    with torch.no_grad():
        out = model(ids, mask, task_id=torch.tensor([1, 0, 0])).logits
        alone = mnli(input_ids=ids[:1], attention_mask=mask[:1]).logits
    assert out[0].tolist() == pytest.approx(alone[0].tolist(), abs=1e-5)
    assert out[1, 2].item() == out[2, 2].item() == MASKED_LOGIT                 # RTE has two classes


def test_a_multitask_run_with_own_heads(tmp_path, tiny_gpt2, source_tables):
    import generators.calum.generator as calum_generator
    from evaluators.calum import finetune as calum
    from probekit.data.pairs import write_pair_dataset
    from probekit.params import ParamsFile

    root = tmp_path / "calum"
    for task in ("rte", "mrpc"):
        variants, meta = calum_generator.build(ParamsFile(None, {"calum": {"task": task, "limit": 16}}),
                                               {"glue": source_tables("glue")})
        write_pair_dataset(root / task, variants, meta | {"license": "other", "sources": {}}, calum_generator.card)
    cp = CalumEvalParams(seeds=[1], batch_size=8, device_batch_size=8, max_steps=1, eval_limit=4, limit=8,
                         save_models="first", multitask={"Para-MRPC": ["mrpc"]}, multitask_heads="own",
                         checkpoint="best")   # the Trainer saves and restores its state dict: the encoder once
    m = calum.run(ModelRef("tiny", str(tiny_gpt2), str(tiny_gpt2)), root, "rte", tmp_path / "mt", cp,
                  group="Para-MRPC", progress=False)
    assert m["tasks_trained"] == ["rte", "mrpc"] and m["per_seed"][0]["steps"] == 1
    assert json.loads((tmp_path / "mt/model/tasks.json").read_text())[1]["task"] == "mrpc"


def test_the_paper_profile_takes_the_originals_heads(tmp_path):
    from helpers import profile_section

    got = {profile: profile_section(tmp_path, profile, "calum_eval", CalumEvalParams).multitask_heads
           for profile in ("smoke", "paper")}
    assert got == {"smoke": "mtdnn", "paper": "own"}
