"""The engine's masked-LM rules beyond MC-MLM (PLL, features, large candidate sets), sentence pairs, the
collator and the batch-size search, each against a one-example-at-a-time computation on tiny models; and the
runner's batch loop with device stand-ins: at most ``in_flight`` batches on the device at once however many a
call has, and the out-of-memory retry landing on a size that fits, with the scores of a run at that size."""

from __future__ import annotations

import weakref

import numpy as np
import pytest
import torch
from transformers import AutoModelForMaskedLM, AutoTokenizer

from evaluators.engine.collator import Collator, grouped_batches, pad_right
from evaluators.engine.pairs import pair_logits
from evaluators.engine.runner import Runner
from evaluators.engine.scorer import Engine
from probekit.errors import DataError, UsageError

STEMS = ["He is [MASK] .", "A 24 year old person is [MASK] than me in age , If I am a 55 year old person .",
         "the [MASK] is oldest", "[MASK] , said the third .", "It is [MASK] than that , they say , again and again ."]
CHOICES = [["older", "xylophonist"], ["younger", "older", "notwithstanding"], ["first", "second", "third"],
           ["first", "xylophonist"], ["older", "younger"]]
IDS = [f"q{i}" for i in range(len(STEMS))]
PLL_WIDTH = 4  # arrays per PLL batch: ids, mask, positions, targets


@pytest.fixture(scope="module")
def bert(tiny_bert):
    tok = AutoTokenizer.from_pretrained(str(tiny_bert))
    model = AutoModelForMaskedLM.from_pretrained(str(tiny_bert)).eval()
    torch.manual_seed(1)
    with torch.no_grad():
        model.get_output_embeddings().bias.normal_()
    return model, tok


def word_positions(tok, text: str, begin: int, end: int) -> list[int]:
    enc = tok(text, return_offsets_mapping=True)
    return [i for i, (s, e) in enumerate(enc["offset_mapping"]) if e > s and s < end and e > begin]


def reference_pll(model, tok, stem: str, word: str) -> float:
    """PLL-word-l2r of ``word``'s tokens, one masked copy of the statement per token (it and the later tokens
    of its word masked), each scored alone."""
    prefix, suffix = stem.split("[MASK]")
    text = prefix + word + suffix
    enc = tok(text)
    ids, word_of = enc["input_ids"], enc.word_ids()
    positions = word_positions(tok, text, len(prefix), len(prefix) + len(word))
    total = 0.0
    for k, position in enumerate(positions):
        masked = list(ids)
        for p in positions[k:]:
            if word_of[p] == word_of[position]:
                masked[p] = tok.mask_token_id
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([masked])).logits[0, position]
        total += logits.log_softmax(-1)[ids[position]].item()
    return total


def test_pll_equals_the_reference_and_needs_no_single_tokens(bert):
    model, tok = bert
    assert len(tok.tokenize("xylophonist")) > 1 and len(tok.tokenize("notwithstanding")) >= 1
    scores = Engine(model, tok, "mlm", rule="pll", batch_size=3).score(STEMS, CHOICES, IDS)
    for stem, words, row in zip(STEMS, CHOICES, scores):
        assert row == pytest.approx([reference_pll(model, tok, stem, w) for w in words], abs=1e-5)
    with pytest.raises(UsageError, match="mlm model is scored by mask-logit or pll"):
        Engine(model, tok, "mlm", rule="statement")


def test_pll_of_a_one_token_choice_is_the_log_softmax_at_the_mask(bert):
    model, tok = bert
    stems, choices = STEMS[1:3], CHOICES[1:3]
    logits = Engine(model, tok, "mlm").score(stems, choices, IDS[:2])
    plls = Engine(model, tok, "mlm", rule="pll").score(stems, choices, IDS[:2])
    for stem, words, lg, pl in zip(stems, choices, logits, plls):
        enc = tok(stem.replace("[MASK]", tok.mask_token), return_tensors="pt")
        at = (enc["input_ids"][0] == tok.mask_token_id).nonzero().item()
        with torch.no_grad():
            norm = model(**enc).logits[0, at].logsumexp(-1).item()
        singles = [i for i, w in enumerate(words) if len(tok.tokenize(w)) == 1]
        assert singles and [pl[i] for i in singles] == pytest.approx([lg[i] - norm for i in singles], abs=1e-5)


@pytest.mark.parametrize("rule", ["mask-logit", "pll"])
def test_batch_size_does_not_change_scores(bert, rule):
    model, tok = bert
    choices = [[w for w in row if len(tok.tokenize(w)) == 1] for row in CHOICES] if rule == "mask-logit" else CHOICES
    runs = [Engine(model, tok, "mlm", rule=rule, batch_size=b).score(STEMS, choices, IDS) for b in (1, 7, 64)]
    for other in runs[1:]:
        for a, b in zip(runs[0], other):
            assert b == pytest.approx(a, abs=1e-5) and int(np.argmax(a)) == int(np.argmax(b))


def test_features_are_the_hidden_state_at_the_mask(bert):
    model, tok = bert
    singles = [["older", "younger"]] * len(STEMS)
    for batch_size in (1, 7, 64):
        features = Engine(model, tok, "mlm", batch_size=batch_size).features(STEMS, singles, IDS)
        assert features.shape == (len(STEMS), model.config.hidden_size) and features.dtype == np.float32
        for stem, row in zip(STEMS, features):
            enc = tok(stem.replace("[MASK]", tok.mask_token), return_tensors="pt")
            at = (enc["input_ids"][0] == tok.mask_token_id).nonzero().item()
            with torch.no_grad():
                expected = model.base_model(**enc).last_hidden_state[0, at].numpy()
            assert np.allclose(row, expected, atol=1e-5)
    assert np.abs(features[0] - features[1]).max() > 1e-3  # the stems' contexts differ


def test_three_hundred_candidates_per_example(bert):
    """ParaRel scores up to hundreds of objects per query: no limit from the ten labels A-J."""
    model, tok = bert
    words = [w for w in list(tok.get_vocab())[2000:4000] if w.isalpha() and len(tok.tokenize(w)) == 1][:300]
    assert len(words) == 300
    stems = ["He was born in [MASK] .", "The capital of France is [MASK] , they said ."]
    scores = Engine(model, tok, "mlm", batch_size=1).score(stems, [words, words[::-1]], ["p0", "p1"])
    for stem, row, order in zip(stems, scores, (words, words[::-1])):
        enc = tok(stem.replace("[MASK]", tok.mask_token), return_tensors="pt")
        at = (enc["input_ids"][0] == tok.mask_token_id).nonzero().item()
        with torch.no_grad():
            logits = model(**enc).logits[0, at]
        assert row == pytest.approx(logits[tok.convert_tokens_to_ids(order)].tolist(), abs=1e-5)


def test_pair_logits_match_one_pair_at_a_time(tiny_bert):
    from transformers import AutoModelForSequenceClassification

    tok = AutoTokenizer.from_pretrained(str(tiny_bert))
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_pretrained(str(tiny_bert), num_labels=3).eval()
    with torch.no_grad():  # logits of order 1, so that a tolerance of 1e-5 means something
        model.classifier.weight.normal_()
    first = ["A man is playing .", "Where was he born ?", "It rains a lot in Bergen , they say ."] * 3
    second = ["Someone plays .", "In Paris , a long time ago .", "Bergen is dry ."] * 3
    ids = [f"pair{i}" for i in range(len(first))]
    expected = []
    for a, b in zip(first, second):
        with torch.no_grad():
            expected.append(model(**tok(a, b, return_tensors="pt")).logits[0].numpy())
        with torch.no_grad():  # the segment ids are passed: without them the logits differ
            alone = tok(a, b, return_tensors="pt")
            alone["token_type_ids"].zero_()
            assert np.abs(model(**alone).logits[0].numpy() - expected[-1]).max() > 1e-3
    for batch_size in (1, 7, 64):
        got = pair_logits(Runner(model, tok, batch_size=batch_size), first, second, ids)
        assert np.allclose(got, np.stack(expected), atol=1e-5)
    with pytest.raises(DataError, match="example long: the pair is"):
        pair_logits(Runner(model, tok), ["word " * 200], ["x"], ["long"])


def test_collator_sorts_packs_by_rows_and_restores_order():
    lengths = np.array([3, 9, 9, 1, 5])
    collator = Collator(lengths, batch_size=4, rows=np.array([1, 2, 2, 3, 1]))
    batches = [b.tolist() for b in collator]
    assert batches == [[1, 2], [4, 0], [3]]  # longest first, ties in input order, at most 4 rows
    order = np.concatenate(list(collator))
    assert collator.restore(lengths[order] * 10).tolist() == (lengths * 10).tolist()
    ids, lens = pad_right([[5, 6], [], [7, 8, 9]], pad=0)
    assert ids.tolist() == [[5, 6, 0], [0, 0, 0], [7, 8, 9]] and lens.tolist() == [2, 0, 3]
    groups = grouped_batches(np.array([1, 0, 1, 2, 1]), np.array([4, 8, 2]), batch_size=3)
    assert [(g.tolist(), r.tolist(), loc.tolist()) for g, r, loc in groups] == [
        ([1], [0, 2, 4], [0, 0, 0]), ([0, 2], [1, 3], [0, 1])]


def test_batch_size_auto_halves_on_out_of_memory(bert):
    model, tok = bert
    runner = Runner(model, tok, batch_size="auto")
    assert runner.batch_size == 64 and not runner.retry_oom  # on a CPU
    runner.retry_oom = True  # as on a GPU
    tried = []

    def work():
        tried.append(runner.batch_size)
        if runner.batch_size > 16:  # accelerate knows the error by its message, as torch words it
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (simulated)")
        return "done"

    assert runner.fitting(work) == "done" and tried == [64, 32, 16]
    fixed = Runner(model, tok, batch_size=64)
    tried.clear()
    runner = fixed
    with pytest.raises(torch.OutOfMemoryError):
        fixed.fitting(work)
    assert tried == [64]  # an explicit batch size is never changed behind the user's back


class CountingDevice:
    """A ``Device`` stand-in on the CPU that counts the arrays moved and not yet released (their tensor freed)."""

    def __init__(self):
        self.resident = self.most = self.moved = 0

    def __call__(self, array: np.ndarray) -> torch.Tensor:
        tensor = torch.from_numpy(np.ascontiguousarray(array)).clone()  # a copy, as on a real device
        self.moved += 1
        self.resident += 1
        self.most = max(self.most, self.resident)
        weakref.finalize(tensor, self.release)
        return tensor

    def release(self) -> None:
        self.resident -= 1


class OutOfMemoryDevice(CountingDevice):
    """Raises CUDA's out-of-memory error for an array of more than ``limit`` rows."""

    def __init__(self, limit: int):
        super().__init__()
        self.limit, self.failed = limit, []

    def __call__(self, array: np.ndarray) -> torch.Tensor:
        if len(array) > self.limit:
            self.failed.append(len(array))
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (simulated)")
        return super().__call__(array)


def data(times: int) -> tuple[list[str], list[list[str]], list[str]]:
    stems, choices = STEMS * times, CHOICES * times
    return stems, choices, [f"q{i}" for i in range(len(stems))]


@pytest.mark.parametrize("in_flight", [1, 2, 3])
def test_at_most_in_flight_batches_on_the_device(bert, in_flight):
    model, tok = bert
    stems, choices, ids = data(2)
    expected = Engine(model, tok, "mlm", rule="pll", batch_size=3).scores(stems, choices, ids)
    engine = Engine(model, tok, "mlm", rule="pll", batch_size=3)
    engine.runner.to_device = device = CountingDevice()
    engine.runner.in_flight = in_flight
    got = engine.scores(stems, choices, ids)
    assert device.moved >= 10 * PLL_WIDTH  # many batches in the call
    assert device.most <= in_flight * PLL_WIDTH and device.resident == 0
    assert np.array_equal(got, expected, equal_nan=True)  # same order, same values


def test_out_of_memory_retry_lands_on_a_size_that_fits(bert):
    model, tok = bert
    stems, choices, ids = data(4)
    engine = Engine(model, tok, "mlm", rule="pll", batch_size="auto")
    runner = engine.runner
    assert runner.batch_size == 64 and not runner.retry_oom  # a CPU: 64, no retry
    runner.retry_oom = True  # as on a GPU
    runner.to_device = device = OutOfMemoryDevice(limit=20)
    got = engine.scores(stems, choices, ids)
    assert device.failed == [64, 32] and runner.batch_size == 16
    assert device.most <= runner.in_flight * PLL_WIDTH and device.resident == 0
    expected = Engine(model, tok, "mlm", rule="pll", batch_size=16).scores(stems, choices, ids)
    assert np.array_equal(got, expected, equal_nan=True)
    device.failed.clear()  # the size that fit is kept: the next call starts there
    engine.scores(stems, choices, ids)
    assert device.failed == [] and runner.batch_size == 16


def test_out_of_memory_at_batch_size_one_is_raised(bert):
    model, tok = bert
    engine = Engine(model, tok, "mlm", rule="pll", batch_size="auto")
    engine.runner.retry_oom = True
    engine.runner.to_device = OutOfMemoryDevice(limit=0)
    with pytest.raises(torch.OutOfMemoryError, match="simulated"):
        engine.scores(*data(1))
    assert engine.runner.batch_size == 1
