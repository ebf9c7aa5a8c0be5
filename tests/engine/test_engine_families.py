"""The engine's causal and seq2seq rules against independent, one-example-at-a-time computations on tiny random
models (GPT-2, Llama, T5, BART): one plain full forward pass per statement, no key/value cache, no batching, no
engine helpers. Also family detection, loading, rule errors and an end-to-end zero-shot run."""

from __future__ import annotations

import json
import random
import warnings

import pytest
import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForMaskedLM, AutoModelForSeq2SeqLM, AutoTokenizer

from evaluators.engine.models import load_lm
from probekit.tokens.family import detect_family
from evaluators.engine.scorer import Engine
from evaluators.olmpics import zeroshot
from probekit.errors import DataError, UsageError
from probekit.tokens.refs import ModelRef

transformers.logging.set_verbosity_error()

MASK = "[MASK]"
SPACE_PIECES = ("Ġ", "▁")  # a byte-level BPE's and a Metaspace tokenizer's space marker, alone as a piece
TOL = {"rel": 1e-6, "abs": 1e-5}  # float32 sums of ~20 log-probabilities of -5 to -15 each

# (stem, choices): varied lengths; multi-token and multi-word choices next to one-token ones in one example;
# choices at the very start and at the very end of the stem; two stems that share the words before the mask
# ("the [MASK] ..."), so that a causal model shares that context across examples. Every character occurs in
# the tokenizers' training corpus (no unknown token).
EXAMPLES = [
    ("[MASK] than me in age .", ["older", "younger"]),
    ("A 24 year old person is [MASK] than me in age , If I am a 55 year old person .",
     ["older", "younger", "oldyoung"]),
    ("the [MASK] is oldest", ["first", "second", "third", "blahfoo", "ya"]),
    ("When comparing a 23 year old , a 38 year old and a 31 year old , the [MASK] is oldest .",
     ["first", "second", "third"]),
    ("I am [MASK]", ["older", "younger", "oldest one", "ya", "undone"]),
    ("[MASK] is the first .", ["third", "thirdly", "blah"]),
    ("When comparing a 23 year old , a 38 year old and a 31 year old , and then again a 23 year old , "
     "a 38 year old and a 31 year old and one more 44 year old person , the [MASK] is oldest .",
     ["first", "second", "third", "foo"]),
    ("A 19 year old person is [MASK] than me in age , If I am a 31 year old person , they say .",
     ["younger", "older", "foo", "yayaya"]),
    ("the [MASK] one", ["first", "second", "bar"]),
    ("If I am a 55 year old person , then a 24 year old person is [MASK] than me in age .",
     ["older", "younger", "oldestly", "first", "ya"]),
]
SYLLABLES = ["ol", "de", "yo", "un", "ger", "th", "ir", "se", "co", "nd", "fi", "rst", "ba", "la", "fo", "ya",
             "pe", "rs", "on", "ag"]
# (model, rule): every rule the engine has for causal and seq2seq models
CASES = [("gpt2", "statement"), ("gpt2", "choice"), ("llama", "statement"), ("llama", "choice"),
         ("t5", "sentinel"), ("bart", "statement")]
FAMILY = {"gpt2": "causal", "llama": "causal", "t5": "seq2seq", "bart": "seq2seq"}
AUTO_CLASS = {"causal": AutoModelForCausalLM, "seq2seq": AutoModelForSeq2SeqLM}


def load(path, family):
    tok = AutoTokenizer.from_pretrained(str(path))
    model = AUTO_CLASS[family].from_pretrained(str(path), dtype=torch.float32).eval()
    return model, tok


@pytest.fixture(scope="module")
def lms(request):
    """``get(name) -> (model, tokenizer)``, each loaded once per module."""
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = load(request.getfixturevalue(f"tiny_{name}"), FAMILY[name])
        return cache[name]

    return get


def many_words(n: int, seed: int = 0) -> list[str]:
    pairs = [a + b for a in SYLLABLES for b in SYLLABLES if a != b]
    return random.Random(seed).sample(pairs, n)


# --- the independent computation -------------------------------------------------------------------------


def word_tokens(tok, stem: str, word: str) -> tuple[list[int], int, int]:
    """The statement with ``word`` in place of the mask, tokenized alone, and ``[first, stop)`` of the word's
    tokens: those whose characters overlap the word's, plus a lone space piece right before them."""
    prefix, suffix = stem.split(MASK)
    text, begin, end = prefix + word + suffix, len(prefix), len(prefix) + len(word)
    enc = tok(text, return_offsets_mapping=True)
    ids, offsets = enc["input_ids"], enc["offset_mapping"]
    special = set(tok.all_special_ids)
    inside = [i for i, (t, (s, e)) in enumerate(zip(ids, offsets)) if t not in special and s < end and e > begin]
    first, stop = inside[0], inside[-1] + 1
    assert inside == list(range(first, stop)), (text, inside)
    if first > 0 and tok.convert_ids_to_tokens(ids[first - 1]) in SPACE_PIECES:
        first -= 1
    return ids, first, stop


@torch.no_grad()
def causal_reference(model, tok, stem: str, word: str, rule: str) -> float:
    ids, s, e = word_tokens(tok, stem, word)
    if ids[0] not in tok.all_special_ids:
        start = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
        ids, s, e = [start] + ids, s + 1, e + 1
    x = torch.tensor([ids])
    log_probs = model(input_ids=x).logits[0].double().log_softmax(-1)
    scored = range(1, len(ids)) if rule == "statement" else range(s, e)
    return sum(log_probs[i - 1, ids[i]].item() for i in scored)  # position i-1 predicts token i


@torch.no_grad()
def seq2seq_reference(model, tok, stem: str, word: str, rule: str) -> float:
    ids, s, e = word_tokens(tok, stem, word)
    if rule == "sentinel":
        opening, closing = tok.convert_tokens_to_ids(["<extra_id_0>", "<extra_id_1>"])
        source, labels = ids[:s] + [opening] + ids[e:], [opening] + ids[s:e] + [closing]
        scored = range(1, len(labels))  # not the opening sentinel
    else:
        source, labels = ids[:s] + [tok.mask_token_id] + ids[e:], ids
        scored = range(len(labels))
    logits = model(input_ids=torch.tensor([source]), labels=torch.tensor([labels])).logits[0]
    log_probs = logits.double().log_softmax(-1)
    return sum(log_probs[i, labels[i]].item() for i in scored)


def reference(lm, family: str, rule: str, stem: str, words) -> list[float]:
    fn = causal_reference if family == "causal" else seq2seq_reference
    return [fn(*lm, stem, word, rule) for word in words]


def engine_scores(lm, family: str, rule: str, examples, batch_size) -> list[list[float]]:
    model, tok = lm
    engine = Engine(model, tok, family, rule=rule, batch_size=batch_size)
    return engine.score([stem for stem, _ in examples], [words for _, words in examples],
                        [f"ex{i}" for i in range(len(examples))])


def argmax(row) -> int:
    return max(range(len(row)), key=row.__getitem__)


@pytest.fixture(scope="module")
def references(lms):
    """``get(name, rule) -> scores`` of ``EXAMPLES``, computed once per module."""
    cache = {}

    def get(name, rule):
        if (name, rule) not in cache:
            cache[name, rule] = [reference(lms(name), FAMILY[name], rule, stem, words) for stem, words in EXAMPLES]
        return cache[name, rule]

    return get


# --- the tiny models are what the tests assume ---------------------------------------------------------


def test_tiny_tokenizers_special_tokens(lms):
    _, gpt2 = lms("gpt2")
    assert gpt2("older than me").input_ids[0] not in gpt2.all_special_ids  # no BOS: the engine adds one
    assert gpt2.bos_token == gpt2.eos_token == gpt2.unk_token == "<|endoftext|>"
    _, llama = lms("llama")
    assert llama("older than me").input_ids[0] == llama.bos_token_id  # its own BOS
    assert llama.tokenize(" older") == ["▁older"]
    _, t5 = lms("t5")
    assert t5("older than me").input_ids[-1] == t5.eos_token_id and t5.pad_token_id == 0
    sentinels = t5.convert_tokens_to_ids([f"<extra_id_{i}>" for i in range(10)])
    assert t5.unk_token_id not in sentinels and set(sentinels) <= set(t5.all_special_ids)
    assert t5.tokenize("I am older") == ["▁I", "▁am", "▁older"]
    _, bart = lms("bart")
    assert bart.mask_token == "<mask>" and bart.convert_tokens_to_ids("<extra_id_0>") == bart.unk_token_id


def test_examples_cover_multi_token_choices_and_lone_space_pieces(lms):
    """Every tokenizer splits some choices into several tokens, and some into a lone space piece first."""
    for name in FAMILY:
        _, tok = lms(name)
        lengths, lone = set(), 0
        for stem, words in EXAMPLES:
            for word in words:
                ids, s, e = word_tokens(tok, stem, word)
                lengths.add(e - s)
                lone += tok.convert_ids_to_tokens(ids[s]) in SPACE_PIECES
                assert tok.unk_token_id not in ids, (name, word)
        assert 1 in lengths and max(lengths) >= 3, (name, lengths)
        assert lone, name


@torch.no_grad()
def test_tiny_causal_models_depend_on_positions_and_context(lms):
    """The references can tell a position or context bug: scores move by far more than the tolerance."""
    for name in ("gpt2", "llama"):
        model, tok = lms(name)
        ids = tok("A 24 year old person is older than me in age").input_ids
        ids = ids if ids[0] in tok.all_special_ids else [tok.eos_token_id] + ids
        x = torch.tensor([ids])

        def score(x=x, model=model, **kwargs):
            lp = model(input_ids=x, **kwargs).logits[0].log_softmax(-1)
            return lp[:-1].gather(1, x[0, 1:, None]).sum().item()

        n = len(ids)
        gap = torch.cat([torch.arange(n // 2), torch.arange(n // 2, n) + 3])[None]  # positions skip 3
        assert abs(score() - score(position_ids=gap)) > 1e-2, name
        assert abs(score() - score(attention_mask=torch.tensor([[0] * 3 + [1] * (n - 3)]))) > 1e-2, name


@torch.no_grad()
def test_tiny_seq2seq_models_depend_on_the_encoder_input(lms):
    for name in ("t5", "bart"):
        model, tok = lms(name)
        labels = torch.tensor([tok("the first is oldest").input_ids])
        a = model(input_ids=torch.tensor([tok("the second is oldest").input_ids]), labels=labels).loss.item()
        b = model(input_ids=torch.tensor([tok("the third one").input_ids]), labels=labels).loss.item()
        assert abs(a - b) > 1e-2, name


# --- scores against the reference ----------------------------------------------------------------------


@pytest.mark.parametrize("name,rule", CASES)
def test_scores_match_reference(lms, references, name, rule):
    scores = engine_scores(lms(name), FAMILY[name], rule, EXAMPLES, batch_size=64)
    expected = references(name, rule)
    assert [len(row) for row in scores] == [len(words) for _, words in EXAMPLES]
    for (stem, _), row, ref in zip(EXAMPLES, scores, expected):
        assert all(isinstance(v, float) for v in row)
        assert row == pytest.approx(ref, **TOL), stem


@pytest.mark.parametrize("name,rule", CASES)
def test_batch_size_does_not_change_scores(lms, references, name, rule):
    runs = {b: engine_scores(lms(name), FAMILY[name], rule, EXAMPLES, batch_size=b) for b in (1, 7, 64)}
    expected = references(name, rule)
    for b, scores in runs.items():
        for i, (row, base, ref) in enumerate(zip(scores, runs[64], expected)):
            assert row == pytest.approx(base, **TOL), (b, EXAMPLES[i][0])
            assert row == pytest.approx(ref, **TOL), (b, EXAMPLES[i][0])
            assert argmax(row) == argmax(base) == argmax(ref), (b, EXAMPLES[i][0])


@pytest.mark.parametrize("name,rule", CASES)
def test_more_choices_than_the_batch_size(lms, name, rule):
    """20 choices with batch size 7: the example's choices (a context group) are split over batches."""
    lm, family = lms(name), FAMILY[name]
    examples = [("I am [MASK] than a 24 year old person .", many_words(20, seed=1) + ["older"]),
                ("the [MASK] one", ["first", "second", "third"]),
                ("I am [MASK]", many_words(9, seed=2))]
    scores = engine_scores(lm, family, rule, examples, batch_size=7)
    for (stem, words), row in zip(examples, scores):
        assert row == pytest.approx(reference(lm, family, rule, stem, words), **TOL), stem


@pytest.mark.parametrize("name,rule", CASES)
def test_large_candidate_set(lms, name, rule):
    """300 candidates for one stem (ParaRel's object sets); a sample checked against the reference."""
    lm, family = lms(name), FAMILY[name]
    words = many_words(300)
    stem = "A 24 year old person is [MASK] than me in age ."
    (scores,) = engine_scores(lm, family, rule, [(stem, words)], batch_size=64)
    assert len(scores) == 300
    sample = random.Random(3).sample(range(300), 12) + [0, 299]
    expected = reference(lm, family, rule, stem, [words[i] for i in sample])
    assert [scores[i] for i in sample] == pytest.approx(expected, **TOL)


def test_choice_rule_differs_from_statement_rule(lms, references):
    """``choice`` leaves out the words around the choice: it is not the statement's score."""
    for name in ("gpt2", "llama"):
        statement, choice = references(name, "statement"), references(name, "choice")
        for row_s, row_c in zip(statement, choice):
            assert all(c > s + 1e-3 for s, c in zip(row_s, row_c)), name


@pytest.mark.parametrize("bos", ["<s>", None])
def test_causal_start_token_is_bos_else_eos(tiny_llama, lms, references, bos):
    """A tokenizer that adds no special token gets its BOS put first, or its EOS when it has no BOS."""
    from tokenizers import processors

    model, _ = lms("llama")
    tok = AutoTokenizer.from_pretrained(str(tiny_llama), bos_token=bos)
    tok.backend_tokenizer.post_processor = processors.TemplateProcessing(single="$A", pair="$A $B")
    stem, words = EXAMPLES[1]
    assert tok(stem.replace(MASK, words[0])).input_ids[0] not in tok.all_special_ids
    start = tok.convert_tokens_to_ids(bos or "</s>")
    (row,) = Engine(model, tok, "causal", batch_size=2).score([stem], [words], ["ex"])
    expected = []
    with torch.no_grad():
        for word in words:
            ids = [start] + tok(stem.replace(MASK, word)).input_ids
            log_probs = model(input_ids=torch.tensor([ids])).logits[0].double().log_softmax(-1)
            expected.append(sum(log_probs[i - 1, ids[i]].item() for i in range(1, len(ids))))
    assert row == pytest.approx(expected, **TOL)
    own_bos = references("llama", "statement")[1]  # the tokenizer's own <s> first: the same ids
    if bos:
        assert row == pytest.approx(own_bos, **TOL)
    else:
        assert all(abs(a - b) > 1e-3 for a, b in zip(row, own_bos))


def test_no_examples_no_scores(lms):
    """``score`` of nothing is nothing (``zeroshot.evaluate`` reports n = 0 for it), for every family."""
    for name in FAMILY:
        model, tok = lms(name)
        assert Engine(model, tok, FAMILY[name]).score([], [], []) == [], name


def test_scores_follow_input_order(lms, references):
    """Reversed examples (and so a different length sort) give the same per-example scores, reversed."""
    scores = engine_scores(lms("gpt2"), "causal", "statement", EXAMPLES[::-1], batch_size=3)
    for row, ref in zip(scores, references("gpt2", "statement")[::-1]):
        assert row == pytest.approx(ref, **TOL)


# --- rules, families and errors ------------------------------------------------------------------------


def test_default_rules(lms):
    for name, rule in (("gpt2", "statement"), ("llama", "statement"), ("t5", "sentinel"), ("bart", "statement")):
        model, tok = lms(name)
        engine = Engine(model, tok, FAMILY[name])
        assert engine.scoring.rule == rule, name
        assert engine.scoring.record() == {"scoring": FAMILY[name], "rule": rule}


@pytest.mark.parametrize("name,family,rule", [("gpt2", "causal", "sentinel"), ("gpt2", "causal", "mask-logit"),
                                              ("llama", "causal", "pll"), ("t5", "seq2seq", "choice"),
                                              ("bart", "seq2seq", "mask-logit")])
def test_rule_of_another_family_is_a_usage_error(lms, name, family, rule):
    model, tok = lms(name)
    with pytest.raises(UsageError, match=f"--rule {rule}"):
        Engine(model, tok, family, rule=rule)


def test_unknown_family_is_a_usage_error(lms):
    model, tok = lms("gpt2")
    with pytest.raises(UsageError, match="--scoring"):
        Engine(model, tok, "encoder")


def test_sentinel_rule_needs_sentinels(lms):
    model, tok = lms("bart")
    engine = Engine(model, tok, "seq2seq", rule="sentinel")
    with pytest.raises(UsageError, match="extra_id_0"):
        engine.score(["the [MASK] one"], [["first", "second"]], ["ex0"])


def test_seq2seq_statement_rule_needs_a_mask_token(lms):
    model, tok = lms("t5")
    engine = Engine(model, tok, "seq2seq", rule="statement")
    with pytest.raises(UsageError, match="mask token"):
        engine.score(["the [MASK] one"], [["first", "second"]], ["ex0"])


@pytest.mark.parametrize("name", ["gpt2", "llama", "bart"])
def test_statement_longer_than_the_positions_is_a_data_error(lms, name):
    model, tok = lms(name)
    stem = "the [MASK] one" + " ya" * 200
    engine = Engine(model, tok, FAMILY[name], batch_size=4)
    with pytest.raises(DataError, match="example long-one"):
        engine.score(["the [MASK] one", stem], [["first", "second"], ["first", "second"]], ["short", "long-one"])


def test_causal_statement_that_fits_only_without_the_start_token_is_a_data_error(lms):
    """GPT-2 reads 128 positions; a 128-token statement needs 129 with the start token the engine puts first,
    so it cannot be scored: a DataError naming the example, not an index error inside the model."""
    model, tok = lms("gpt2")
    stem = "[MASK]" + " ya" * 127
    assert {len(tok(stem.replace(MASK, w)).input_ids) for w in ("older", "the")} == {128}  # one token each
    engine = Engine(model, tok, "causal", batch_size=4)
    with pytest.raises(DataError, match="example edge"):
        engine.score([stem], [["older", "the"]], ["edge"])


def test_causal_statement_of_exactly_the_positions_with_own_bos_is_scored(lms):
    """Llama's tokenizer puts BOS first itself: a statement of exactly 128 tokens (BOS included) fits."""
    model, tok = lms("llama")
    stem = "[MASK]" + " ya" * 126
    assert {len(tok(stem.replace(MASK, w)).input_ids) for w in ("older", "younger")} == {128}
    (row,) = Engine(model, tok, "causal", batch_size=4).score([stem], [["older", "younger"]], ["edge"])
    assert row == pytest.approx(reference((model, tok), "causal", "statement", stem, ["older", "younger"]), **TOL)


@pytest.mark.parametrize("model_type,mask,family", [("bert", MASK, "mlm"), ("roberta", "<mask>", "mlm"),
                                                   ("bert", None, "causal"), ("gpt2", None, "causal"),
                                                   ("llama", None, "causal"), ("t5", None, "seq2seq"),
                                                   ("vit", None, None), ("clip", "<mask>", None)])
def test_detect_family_without_architectures_by_the_config_class(model_type, mask, family):
    """A config that names no architecture: its family from transformers' public auto mappings (a BERT config
    is a masked LM only with a mask token, else BertLMHeadModel's causal LM; a vision config is none)."""
    from types import SimpleNamespace

    config = AutoConfig.for_model(model_type)
    assert not config.architectures
    tokenizer = SimpleNamespace(mask_token=mask)
    if family is None:
        with pytest.raises(UsageError, match="none of the families"):
            detect_family(config, tokenizer)
    else:
        assert detect_family(config, tokenizer) == family


@pytest.mark.parametrize("name,family", [("gpt2", "causal"), ("llama", "causal"), ("t5", "seq2seq"),
                                         ("bart", "seq2seq"), ("bert", "mlm")])
def test_detect_family_and_load_lm(request, name, family):
    path = str(request.getfixturevalue(f"tiny_{name}"))
    assert detect_family(AutoConfig.from_pretrained(path), AutoTokenizer.from_pretrained(path)) == family
    loaded = load_lm(ModelRef(name, path, path))
    assert loaded.family == family
    assert loaded.head_pretrained is True
    assert loaded.dtype == "float32"
    expected = {"causal": AutoModelForCausalLM, "seq2seq": AutoModelForSeq2SeqLM, "mlm": AutoModelForMaskedLM}
    reloaded = expected[family].from_pretrained(path).eval()
    assert type(loaded.model) is type(reloaded)
    for (key, value), (key2, value2) in zip(loaded.model.state_dict().items(), reloaded.state_dict().items()):
        assert key == key2 and torch.equal(value, value2), key  # the saved weights, head included


def test_zeroshot_run_with_a_causal_model(tiny_gpt2, tmp_path):
    path = str(tiny_gpt2)
    loaded = load_lm(ModelRef("tiny-gpt2", path, path))
    labels = "ABCDE"
    examples = [{"id": f"q{i}", "question": {"stem": stem, "choices": [
        {"label": labels[j], "text": w} for j, w in enumerate(words)]}, "answerKey": "A"}
        for i, (stem, words) in enumerate(EXAMPLES)]
    data = tmp_path / "dev.jsonl"
    data.write_text("".join(json.dumps(e) + "\n" for e in examples), encoding="utf-8")
    out = tmp_path / "out"
    results = zeroshot.run(loaded, {"": (data, examples)}, out, batch_size=4, progress=False)
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert results[""] == metrics
    assert [r["id"] for r in rows] == [e["id"] for e in examples]
    for row, (stem, words) in zip(rows, EXAMPLES):
        assert row["rule"] == "statement"
        ref = reference((loaded.model, loaded.tokenizer), "causal", "statement", stem, words)
        assert row["scores"] == pytest.approx(ref, **TOL)
        assert row["prediction"] == labels[argmax(ref)]
        assert row["correct"] == (row["prediction"] == "A")
    assert metrics["scoring"] == "causal" and metrics["rule"] == "statement"
    assert "multi_token" not in metrics
    assert metrics["n"] == len(examples)
    assert metrics["accuracy"] == pytest.approx(sum(r["correct"] for r in rows) / len(rows))
    assert metrics["lm_head"] == "pretrained" and metrics["zero_shot"] is True
    assert metrics["model"] == "tiny-gpt2" and metrics["probe"] == "dev" and metrics["variant"] == "release"


# --- models whose cache cannot be shared, the logits read, the cache API, reduced precision ---------------


class GPT2WithoutPositions(transformers.GPT2LMHeadModel):
    """A causal LM whose forward takes no ``position_ids`` and no cache (a stand-in for custom models)."""

    def forward(self, input_ids=None, attention_mask=None, use_cache=None, **kwargs):
        assert not kwargs.keys() & {"position_ids", "cache", "past_key_values"}, kwargs.keys()
        return super().forward(input_ids=input_ids, attention_mask=attention_mask, use_cache=False, **kwargs)


def stand_in(name: str, tiny_gpt2, tiny_llama):
    """(model, tokenizer): a GPT-2 without ``position_ids``, a Gemma 2 with a 4-token sliding window on every
    other layer (its cache mixes sliding and full layers), a Mamba (a recurrent state, no positions)."""
    if name == "no-positions":
        return GPT2WithoutPositions.from_pretrained(str(tiny_gpt2)).eval(), AutoTokenizer.from_pretrained(tiny_gpt2)
    tok = AutoTokenizer.from_pretrained(str(tiny_llama))
    torch.manual_seed(0)
    if name == "gemma2":
        config = transformers.Gemma2Config(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                                           num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                                           head_dim=16, sliding_window=4, max_position_embeddings=128,
                                           initializer_range=0.3)
        return transformers.Gemma2ForCausalLM(config).eval(), tok
    config = transformers.MambaConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, state_size=4,
                                      expand=2, conv_kernel=2, initializer_range=0.3)
    return transformers.MambaForCausalLM(config).eval(), tok


@pytest.mark.parametrize("name", ["no-positions", "gemma2", "mamba"])
@pytest.mark.parametrize("rule", ["statement", "choice"])
def test_causal_model_whose_cache_cannot_be_shared_is_scored_one_forward_per_statement(
        tiny_gpt2, tiny_llama, name, rule):
    lm = stand_in(name, tiny_gpt2, tiny_llama)
    expected = [reference(lm, "causal", rule, stem, words) for stem, words in EXAMPLES]
    for batch_size in (1, 7, 64):
        scores = engine_scores(lm, "causal", rule, EXAMPLES, batch_size=batch_size)
        for (stem, _), row, ref in zip(EXAMPLES, scores, expected):
            assert row == pytest.approx(ref, **TOL), (name, batch_size, stem)


@pytest.mark.parametrize("name", ["gpt2", "llama"])
def test_causal_choice_rule_projects_only_the_positions_it_reads(lms, references, name):
    """With ``logits_to_keep`` the vocabulary-wide logits of the choice rule cover fewer positions than the
    inputs: the context's last position, the continuation's all but last."""
    model, tok = lms(name)
    widths, projected = [], []
    hooks = [model.register_forward_pre_hook(lambda m, a, kw: widths.append(kw["input_ids"].shape[1]),
                                             with_kwargs=True),
             model.get_output_embeddings().register_forward_hook(
                 lambda m, a, out: projected.append(out.shape[1]))]
    try:
        scores = engine_scores((model, tok), "causal", "choice", EXAMPLES, batch_size=64)
    finally:
        for hook in hooks:
            hook.remove()
    assert len(widths) == len(projected) > 0
    assert all(p < w for p, w in zip(projected, widths)), (projected, widths)
    for row, ref in zip(scores, references(name, "choice")):
        assert row == pytest.approx(ref, **TOL)


@pytest.mark.parametrize("name,rule", [(name, rule) for name, rule in CASES if FAMILY[name] == "causal"])
def test_no_deprecated_cache_argument(lms, monkeypatch, name, rule):
    """The key/value cache goes by the name the installed transformers expects: no deprecation warning."""
    logged = []
    from transformers.utils import generic

    monkeypatch.setattr(generic.logger, "warning_once", lambda msg, *a, **k: logged.append(msg))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        engine_scores(lms(name), FAMILY[name], rule, EXAMPLES, batch_size=7)
    messages = [str(w.message) for w in caught] + logged
    assert not [m for m in messages if "deprecated" in m or "past_key_values" in m], messages


class Bigram(torch.nn.Module):
    """A causal LM whose logits at a position depend on that token only: an embedding and an output layer. Its
    last hidden state is an embedding row, exact in bf16, so bf16 and fp32 differ only in how the logits are
    computed and read: what the engine controls."""

    def __init__(self, vocab: int, width: int = 64):
        super().__init__()
        self.config = transformers.GPT2Config(vocab_size=vocab, n_positions=128)
        self.embed, self.lm_head = torch.nn.Embedding(vocab, width), torch.nn.Linear(width, vocab, bias=False)
        torch.nn.init.normal_(self.embed.weight, std=1.0)
        torch.nn.init.normal_(self.lm_head.weight, std=1.0)  # logits of a few units: bf16 rounds them by ~1e-2

    def get_output_embeddings(self):
        return self.lm_head

    def forward(self, input_ids, attention_mask=None, position_ids=None, cache=None, past_key_values=None,
                use_cache=None, logits_to_keep=0):
        hidden = self.embed(input_ids)
        hidden = hidden[:, -logits_to_keep:] if isinstance(logits_to_keep, int) else hidden[:, logits_to_keep]
        return transformers.modeling_outputs.CausalLMOutputWithPast(
            logits=self.lm_head(hidden), past_key_values=transformers.DynamicCache() if use_cache else None)


class Seq2SeqBigram(Bigram):
    """The decoder's logits at a position depend on that decoder token only (the encoder is read, not used)."""

    def __init__(self, vocab: int, start: int):
        super().__init__(vocab)
        self.config = transformers.BartConfig(vocab_size=vocab, decoder_start_token_id=start)

    def get_encoder(self):
        return lambda input_ids, attention_mask: transformers.modeling_outputs.BaseModelOutput(
            last_hidden_state=self.embed(input_ids))

    def forward(self, encoder_outputs=None, attention_mask=None, decoder_input_ids=None,
                decoder_attention_mask=None, use_cache=None):
        return transformers.modeling_outputs.Seq2SeqLMOutput(logits=self.lm_head(self.embed(decoder_input_ids)))


@pytest.mark.parametrize("name,rule", [("gpt2", "statement"), ("gpt2", "choice"), ("bart", "statement")])
def test_bf16_margins_match_fp32(lms, name, rule):
    """A bf16 model's choice margins are within 1e-2 of the same weights' in fp32, no ties, no flipped answer:
    log-probabilities are read off float32 logits, not bf16 ones."""
    _, tok = lms(name)

    def build():
        torch.manual_seed(0)
        return Bigram(len(tok)) if FAMILY[name] == "causal" else Seq2SeqBigram(len(tok), tok.eos_token_id)

    fp32, bf16 = build().to(torch.bfloat16).float().eval(), build().to(torch.bfloat16).eval()  # same weights
    exact, reduced = (engine_scores((m, tok), FAMILY[name], rule, EXAMPLES, batch_size=7) for m in (fp32, bf16))
    for (stem, _), a, b in zip(EXAMPLES, exact, reduced):
        assert len(set(b)) == len(b), stem  # no ties
        assert argmax(a) == argmax(b), stem
        assert [x - a[0] for x in a] == pytest.approx([y - b[0] for y in b], abs=1e-2), stem


def test_token_log_probs_upcasts_a_reduced_precision_tensor_piecewise():
    """bf16 logits read a few rows at a time give what the whole tensor upcast at once gives."""
    from evaluators.engine.runner import token_log_probs

    torch.manual_seed(0)
    logits = (torch.randn(3, 5, 50) * 8).to(torch.bfloat16)
    targets = torch.randint(0, 50, (3, 5))
    whole = logits.float().log_softmax(-1).gather(-1, targets[..., None])[..., 0]
    for chunk in (1, 120, 1 << 24):
        got = token_log_probs(logits[:, 1:], targets[:, 1:], chunk=chunk)
        assert got.dtype == torch.float32
        assert torch.allclose(got, whole[:, 1:], atol=1e-5)


# --- XLM (one LM-head class for masked and causal checkpoints) and XLNet (a permutation LM) ----------------


def save_tiny(path, model_class, config_class, mask: str, **config):
    """A random ``model_class`` with a byte-level BPE trained here (``<s> $A </s>``; ``mask`` as its mask
    token, swallowing the space before it), saved as a fast tokenizer beside the model."""
    from tokenizers import AddedToken, ByteLevelBPETokenizer, processors
    from transformers import PreTrainedTokenizerFast

    from helpers import _CORPUS

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(_CORPUS, vocab_size=400, min_frequency=2, special_tokens=[
        "<s>", "</s>", "<pad>", "<unk>", AddedToken(mask, lstrip=True, special=True)])
    bpe._tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 1)])
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, bos_token="<s>", eos_token="</s>",
                                  pad_token="<pad>", unk_token="<unk>", mask_token=mask)
    torch.manual_seed(0)
    model_class(config_class(vocab_size=len(tok), **config)).save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)


@pytest.fixture(scope="module")
def tiny_xlm(tmp_path_factory):
    """A random XLMWithLMHeadModel as the xlm-mlm-* checkpoints are (``causal: false``, ``<special1>`` its mask
    token), one language."""
    from transformers import XLMConfig, XLMWithLMHeadModel

    return save_tiny(tmp_path_factory.mktemp("tiny-xlm"), XLMWithLMHeadModel, XLMConfig, "<special1>",
                     emb_dim=32, n_layers=2, n_heads=2, max_position_embeddings=128, causal=False, n_langs=1,
                     use_lang_emb=False, bos_index=0, eos_index=1, pad_index=2, unk_index=3, mask_index=4,
                     init_std=0.3, embed_init_std=0.3)


@pytest.fixture(scope="module")
def tiny_xlnet(tmp_path_factory):
    from transformers import XLNetConfig, XLNetLMHeadModel

    return save_tiny(tmp_path_factory.mktemp("tiny-xlnet"), XLNetLMHeadModel, XLNetConfig, "<mask>",
                     d_model=32, n_layer=2, n_head=2, d_inner=64)


@pytest.mark.parametrize("causal,mask,family", [(False, "<special1>", "mlm"), (True, "<special1>", None),
                                                (False, None, None)])
@pytest.mark.parametrize("architectures", [["XLMWithLMHeadModel"], None])
def test_detect_family_of_xlm_by_its_causal_flag(architectures, causal, mask, family):
    """XLMWithLMHeadModel is transformers' masked-LM and causal-LM class of XLM: ``causal: false`` with a mask
    token is a masked LM; a causal XLM is refused (the causal rules cannot reuse its cache)."""
    from types import SimpleNamespace

    from transformers import XLMConfig

    config = XLMConfig(causal=causal, architectures=architectures)
    tokenizer = SimpleNamespace(mask_token=mask)
    if family is not None:
        assert detect_family(config, tokenizer) == family
    else:
        with pytest.raises(UsageError, match="XLM" if causal else "needs a mask token"):
            detect_family(config, tokenizer)


def test_xlm_masked_lm_is_loaded_and_scored_by_the_mask_logit_rule(tiny_xlm):
    """A tiny random XLMWithLMHeadModel (``causal: false``), end to end: ``--scoring auto`` loads it as a masked
    LM, and the mask-logit rule's scores are its head's logits at the mask, one full forward pass per stem."""
    from transformers import XLMWithLMHeadModel

    loaded = load_lm(ModelRef("tiny-xlm", tiny_xlm, tiny_xlm))
    model, tok = loaded.model, loaded.tokenizer
    assert loaded.family == "mlm" and type(model) is XLMWithLMHeadModel and loaded.head_pretrained
    stems = ["A 24 year old person is [MASK] than me in age .", "the [MASK] is oldest",
             "When comparing a 23 year old and a 38 year old , the [MASK] one is oldest ."]
    choices = [["older", "younger"], ["first", "second", "third"], ["first", "second"]]
    scores = Engine(model, tok, "mlm", batch_size=2).score(stems, choices, ["a", "b", "c"])
    for stem, words, row in zip(stems, choices, scores):
        ids = tok(stem.replace(MASK, tok.mask_token), return_tensors="pt").input_ids
        with torch.no_grad():
            logits = model(input_ids=ids).logits[0, ids[0].tolist().index(tok.mask_token_id)]
        tokens = [tok(" " + w, add_special_tokens=False).input_ids for w in words]
        assert all(len(t) == 1 for t in tokens)
        assert row == pytest.approx([logits[t].item() for (t,) in tokens], **TOL)


@pytest.mark.parametrize("scoring", ["auto", "causal", "mlm"])
def test_xlnet_is_refused_with_what_to_do(tiny_xlnet, scoring):
    """XLNet is a permutation LM: no masked-LM head, and without a permutation mask every position attends to
    the whole sequence, so no rule scores it; a UsageError names it and the models to use instead."""
    config = AutoConfig.from_pretrained(tiny_xlnet)
    with pytest.raises(UsageError, match="XLNet.*permutation language model.*evaluate a masked LM"):
        detect_family(config, AutoTokenizer.from_pretrained(tiny_xlnet))
    with pytest.raises(UsageError, match="--model tiny-xlnet: .*permutation"):
        load_lm(ModelRef("tiny-xlnet", tiny_xlnet, tiny_xlnet), scoring=scoring)
