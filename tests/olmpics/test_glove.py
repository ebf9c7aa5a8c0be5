"""GloVe loading, the MLM-BASELINE features and ESIM: tiny text files, a handful of real vectors, a toy task."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from evaluators.olmpics.esim import ESIM
from evaluators.olmpics import glove as glove_inputs
from evaluators.olmpics.glove import glove_tokens
from probekit.errors import DataError, UsageError
from probekit.sources.vectors import DEFAULT, Glove, load_glove

# Words pandas would read as NaN or as a quote, and a number.
SMALL = {"the": [0.5, -1.0, 2.0, 0.25], "nan": [1, 2, 3, 4], "null": [5, 6, 7, 8], '"': [-1, -2, -3, -4],
         "1": [0.125, 0, 0, 1]}


def write_glove(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def small_glove(tmp_path) -> Glove:
    lines = [w + " " + " ".join(map(str, v)) for w, v in SMALL.items()]
    return load_glove(str(write_glove(tmp_path / "small.txt", lines)))


@pytest.fixture(scope="module")
def glove() -> Glove:
    return load_glove(DEFAULT)


def test_text_file(tmp_path):
    g = small_glove(tmp_path)
    assert g.words == list(SMALL) and g.vectors.dtype == np.float32 and g.dim == 4
    np.testing.assert_array_equal(g.vectors, np.array(list(SMALL.values()), np.float32))
    assert g.vector_ids(["null", "the", "unknown", '"']) == [2, 0, -1, 3]
    assert load_glove(str(tmp_path / "small.txt")) is g  # memoised
    with pytest.raises(ValueError):
        g.vectors[0, 0] = 1  # shared by every user of the load: read-only


@pytest.mark.parametrize("bad, problem", [("x 1 2 3", "3 numbers, not 4"), ("x 1 2 3 4 5", "5 numbers, not 4"),
                                          ("x 1 two 3 4", "'two'"), (" 1 2 3 4", "no word"),
                                          ("x 1 nan 3 4", "a NaN value")])
def test_text_file_malformed_line(tmp_path, bad, problem):
    lines = ["the 1 2 3 4", "of 1 2 3 4", "", bad, "and 1 2 3 4"]
    path = write_glove(tmp_path / "bad.txt", lines)
    with pytest.raises(DataError, match=rf"bad\.txt, line 4: .*{problem}"):
        load_glove(str(path))


def test_text_file_not_utf8_or_missing(tmp_path):
    (tmp_path / "latin1.txt").write_bytes(b"the 1 2\ncaf\xe9 3 4\n")
    with pytest.raises(DataError, match=r"latin1\.txt, line 2: .*utf-8"):
        load_glove(str(tmp_path / "latin1.txt"))
    with pytest.raises(UsageError, match="no such file"):
        load_glove(str(tmp_path / "missing.txt"))
    with pytest.raises(UsageError, match="pip install no-such-glove"):
        load_glove("pkg:no_such_glove")


def test_package_real_vectors(glove, tmp_path):
    """The GloVe baseline on a handful of real vectors: 6B 50-d, as in Stanford's glove.6B.50d.txt."""
    assert glove.vectors.shape == (400_000, 50) and glove.words[:3] == ["the", ",", "."]
    the, king = glove.vectors[glove.vector_ids(["the", "king"])]
    np.testing.assert_allclose(the[:5], [0.418, 0.24968, -0.41242, 0.1217, 0.34527], atol=1e-6)
    np.testing.assert_allclose(king[:3], [0.50451, 0.68607, -0.59517], atol=1e-6)
    # the same vectors written as Stanford's text format read back identically
    words = ["the", "king", "nan", "null", "n't", '"', "1988"]
    rows = glove.vectors[glove.vector_ids(words)]
    path = write_glove(tmp_path / "glove.6B.50d.txt", [w + " " + " ".join(map(str, v)) for w, v in zip(words, rows)])
    np.testing.assert_array_equal(load_glove(str(path)).vectors, rows)


def test_tokens():
    assert glove_tokens("A 24 year old person is [MASK] than me, isn't it?") == [
        "a", "24", "year", "old", "person", "is", "[mask]", "than", "me", ",", "is", "n't", "it", "?"]
    assert glove_tokens("It's John's.") == ["it", "'s", "john", "'s", "."]


def test_mlm_baseline_features_lowercase(glove):
    long = " ".join(["word"] * 25)
    stems = ["The [MASK] is zzqxv .", long, ""]
    x = glove_inputs.mlm_baseline_features(glove_inputs.Lexicon(glove, "lowercase"), stems)
    assert x.shape == (3, 1000) and x.dtype == np.float32
    t = x.reshape(3, 20, 50)
    np.testing.assert_array_equal(t[0, 0], glove.vectors[glove.index["the"]])
    np.testing.assert_array_equal(t[0, 2], glove.vectors[glove.index["is"]])
    assert not t[0, 1].any() and not t[0, 3].any()  # [mask] and the made-up word: OOV, zero
    assert t[0, 4].any() and not t[0, 5:].any()  # "." then padding past the 5 tokens
    np.testing.assert_array_equal(t[1], np.tile(glove.vectors[glove.index["word"]], (20, 1)))  # cut at 20
    assert not t[2].any()


def test_encode_tokens_lowercase(glove):
    lexicon = glove_inputs.Lexicon(glove, "lowercase")
    ids, mask = lexicon.encode(["the king zzqxv", "", "the"], max_tokens=2)
    the, king = lexicon.ids["the"], lexicon.ids["king"]
    assert ids.tolist() == [[the, king], [0, 0], [the, 0]] and ids.dtype == np.int64 and 0 not in (the, king)
    assert mask.tolist() == [[True, True], [True, False], [True, False]]
    emb = lexicon.matrix()
    assert emb.shape == (3, 50) and not emb[0].any() and "zzqxv" not in lexicon.ids
    np.testing.assert_array_equal(emb[king], glove.vectors[glove.index["king"]])


def tensors(ids, mask):
    return torch.from_numpy(ids), torch.from_numpy(mask)


def test_esim_padding_invariance_and_gradients(tmp_path, one_thread):
    torch.manual_seed(0)
    g = small_glove(tmp_path)
    lexicon = glove_inputs.Lexicon(g, "lowercase")
    encode = lexicon.encode
    premises, hypotheses = ["the nan", "the null 1 nan \" the null zzz 1"], ["null", "1 \" the the nan"]
    lexicon.add(premises + hypotheses)
    model = ESIM(lexicon.matrix(), hidden=8, freeze_embeddings=True).eval()
    batch = model(*tensors(*encode(premises)), *tensors(*encode(hypotheses)))
    alone = model(*tensors(*encode(premises[:1])), *tensors(*encode(hypotheses[:1])))
    assert batch.shape == (2,) and alone.shape == (1,)
    torch.testing.assert_close(batch[:1], alone, rtol=1e-5, atol=1e-6)

    model.train()
    model(*tensors(*encode(premises)), *tensors(*encode(hypotheses))).sum().backward()
    assert model.embed.weight.grad is None and not model.embed.weight.requires_grad
    for lstm in (model.encoder, model.composer):
        assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in lstm.parameters())

    emb = lexicon.matrix()
    trainable = ESIM(emb, hidden=8)   # the original config's: trainable
    trainable(*tensors(*encode(premises)), *tensors(*encode(hypotheses))).sum().backward()
    grad = trainable.embed.weight.grad
    assert grad[1:].abs().sum() > 0 and not grad[0].any()  # the padding / OOV row stays zero
    assert trainable.embed.weight.data_ptr() != emb.ctypes.data  # training does not write the caller's array


def test_esim_learns_a_toy_task(one_thread):
    """Two one-word choices; the right one repeats a word of the premise. Well above chance after 100 Adam
    steps (0.89-0.96 over seeds 0-9)."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    vocab, n, n_train = 30, 320, 192
    emb = np.concatenate([np.zeros((1, 8), np.float32), rng.normal(size=(vocab, 8)).astype(np.float32)])
    premise = np.stack([rng.choice(np.arange(1, vocab + 1), 6, replace=False) for _ in range(n)])
    right = premise[np.arange(n), rng.integers(0, 6, n)]
    wrong = np.array([rng.choice(np.setdiff1d(np.arange(1, vocab + 1), p)) for p in premise])
    label = rng.integers(0, 2, n)
    choices = np.where(label[:, None] == 0, np.stack([right, wrong], 1), np.stack([wrong, right], 1))
    p_ids = torch.from_numpy(np.repeat(premise, 2, 0))  # [2n, 6], each premise once per choice
    h_ids = torch.from_numpy(choices.reshape(-1, 1))
    p_mask, h_mask = torch.ones_like(p_ids, dtype=torch.bool), torch.ones_like(h_ids, dtype=torch.bool)
    y = torch.from_numpy(label)
    train, test = slice(0, 2 * n_train), slice(2 * n_train, 2 * n)

    model = ESIM(emb, hidden=16, dropout=0.1)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(100):
        logits = model(p_ids[train], p_mask[train], h_ids[train], h_mask[train]).view(-1, 2)
        loss = torch.nn.functional.cross_entropy(logits, y[:n_train])
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        accuracy = (model(p_ids[test], p_mask[test], h_ids[test], h_mask[test]).view(-1, 2).argmax(1)
                    == y[n_train:]).float().mean().item()
    assert accuracy >= 0.75  # 128 test questions: chance is 0.5 +- 0.045


# --- the original's reading of GloVe (alontalmor/oLMpics dataset readers, AllenNLP's embedding file reader) --------

KNOWN = ("the", "cat", "is", ".", "big", "small", "[", "]")
"""The lowercased words of a tiny GloVe file: "The", "dog", "Small", "MASK" and "@@" are not in it."""


def tiny_glove(tmp_path, dim: int = 400) -> tuple[str, dict[str, np.ndarray]]:
    """A GloVe text file of :data:`KNOWN`, its values drawn from N(1.5, 0.25) (far from 0 and 1)."""
    rng = np.random.default_rng(7)
    vectors = {w: rng.normal(1.5, 0.25, dim).astype(np.float32) for w in KNOWN}
    path = write_glove(tmp_path / "tiny.txt", [w + " " + " ".join(f"{x:.6f}" for x in v) for w, v in vectors.items()])
    return str(path), {w: load_glove(str(path)).vectors[i] for i, w in enumerate(KNOWN)}


def test_the_original_reading_keeps_case_and_reads_mask_as_each_original_reader():
    """spaCy's tokens, case kept; MLM-BASELINE's reader puts "@@" (one token) for [MASK], ESIM's leaves it."""
    lexicon = glove_inputs.Lexicon
    assert lexicon(None).tokens(["The [MASK] isn't  Big."]) == [["The", "@@", "is", "n't", "Big", "."]]
    assert lexicon(None, mask=None).tokens(["The [MASK] ."]) == [["The", "[", "MASK", "]", "."]]
    assert lexicon(None, "lowercase").tokens(["The [MASK] ."]) == [["the", "[mask]", "."]]
    with pytest.raises(UsageError, match="glove_tokens must be one of original, lowercase, got 'upper'"):
        lexicon(None, "upper")


def _probe(folder, stems: list[str]):
    import json

    (folder / "original").mkdir(parents=True)
    for split in ("train", "dev"):
        rows = [{"id": f"{split}{i}", "question": {"stem": stem, "choices": [
            {"label": "A", "text": "big"}, {"label": "B", "text": "Small"}]}, "answerKey": "A"}
            for i, stem in enumerate(stems)]
        (folder / "original" / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "original" / "meta.json").write_text(json.dumps({"probe": "toy", "variant": "original",
                                                               "fingerprint": "fp"}))
    return folder


def _features(tmp_path, glove: str, reading: str | None) -> np.ndarray:
    """MLM-BASELINE's features of the dev split, as ``probes evaluate features`` caches them."""
    import yaml

    from probes.main import main

    data = _probe(tmp_path / f"toy-{reading}", ["The cat is [MASK] .", "the dog is [MASK] ."])
    params = tmp_path / f"params-{reading}.yaml"
    params.write_text(yaml.safe_dump({"curve": {} if reading is None else {"glove_tokens": reading}}))
    out = tmp_path / f"features-{reading}"
    assert main(["evaluate", "features", "--model", "mlm-baseline", "--data", str(data), "--glove", glove,
                 "--params", str(params), "--out", str(out)]) == 0
    return np.load(out / "original" / "dev.npy").reshape(2, 20, -1)


def test_mlm_baseline_features_read_glove_as_the_original(tmp_path):
    """By default: "The" is not "the" (a random vector), every [MASK] is the one random vector of "@@", a word
    GloVe lacks is random too, each drawn from N(mean, std) of the known words' values (AllenNLP's
    ``normal_(embeddings_mean, embeddings_std)``); ``curve.glove_tokens: lowercase`` gives the zero vectors."""
    glove, vectors = tiny_glove(tmp_path)
    x = _features(tmp_path, glove, None)
    np.testing.assert_array_equal(x[1, 0], vectors["the"])
    np.testing.assert_array_equal(x[0, 1], vectors["cat"])
    the_capital, dog, mask = x[0, 0], x[1, 1], x[0, 3]
    np.testing.assert_array_equal(x[1, 3], mask)               # one vector for every [MASK]
    assert not x[:, 5:].any()                                   # zero-padded past the 5 tokens
    unknown = np.stack([the_capital, dog, mask])
    assert len({v.tobytes() for v in unknown}) == 3 and np.all(np.abs(unknown) > 0)
    known = np.stack([vectors[w] for w in ("the", "cat", "is", ".", "big")]).astype(np.float64)  # the vocabulary's
    # known words: the stems' and the choices' ("Small" is not known; "small", "[" and "]" are not in the texts)
    assert abs(unknown.mean() - known.mean()) < 0.03 and abs(unknown.std() - known.std()) < 0.03

    lower = _features(tmp_path, glove, "lowercase")
    np.testing.assert_array_equal(lower[0, 0], vectors["the"])
    assert not lower[0, 3].any() and not lower[1, 1].any()    # [mask] and "dog": zero


def test_esim_reads_glove_as_the_original(tmp_path):
    """ESIM's reader keeps [MASK] as text: "[", "MASK", "]"; "The" and "Small" get random vectors, trainable."""
    from evaluators.olmpics.mcqa_esim import EsimBackend

    glove, vectors = tiny_glove(tmp_path, dim=50)
    rows = [{"id": "a", "question": {"stem": "The cat is [MASK] .", "choices": [
        {"label": "A", "text": "big"}, {"label": "B", "text": "Small"}]}, "answerKey": "A"}]
    backend = EsimBackend(glove, "cpu")
    enc = backend.encode(rows)
    premise_ids, premise_mask, choice_ids, _ = enc.pairs
    assert premise_mask.sum(1).tolist() == [7, 7]               # The cat is [ MASK ] .
    model = backend.fresh(1)
    emb = model.embed.weight.detach().numpy()
    premise = emb[premise_ids[0]]
    for k, word in ((1, "cat"), (3, "["), (5, "]")):
        np.testing.assert_array_equal(premise[k], vectors[word])
    assert np.all(np.abs(premise[[0, 4]]) > 0) and not np.array_equal(premise[0], vectors["the"])
    assert np.all(np.abs(emb[choice_ids[1, 0]]) > 0)           # "Small"
    assert model.embed.weight.requires_grad                      # the config's "trainable": true
    assert backend.record()["glove_tokens"] == "original"


def test_esim_random_embeddings_are_the_original_config_as_released(tmp_path):
    """``mcqa.esim_embeddings: random``: no GloVe (the config's pretrained_file is commented out), 50-d
    Xavier-uniform rows for the run's vocabulary (its tokens, padding and unknown), every token its own row."""
    from evaluators.olmpics.mcqa_esim import EsimBackend

    backend = EsimBackend("pkg:no_such_glove_needed", "cpu", embeddings="random")
    backend.encode([{"id": "a", "question": {"stem": "The zzqxv is [MASK] .", "choices": [
        {"label": "A", "text": "big"}, {"label": "B", "text": "small"}]}, "answerKey": "A"}])
    tokens = len(backend.lexicon.ids)
    assert tokens == 9   # The zzqxv is [ MASK ] . big small
    emb = backend.fresh(1).embed.weight.detach().numpy()
    bound = np.sqrt(6 / (tokens + 2 + 50))
    assert emb.shape == (tokens + 1, 50) and not emb[0].any() and np.all(np.abs(emb[1:]) <= bound)
    assert np.abs(emb[1:]).max() > 0.9 * bound and backend.record()["glove"] is None
    with pytest.raises(UsageError, match="esim_embeddings must be one of glove, random"):
        EsimBackend(DEFAULT, "cpu", embeddings="word2vec")


def test_esim_layers_are_the_original_configs():
    """ReLU in the output layer, Xavier-uniform linear weights with zero biases, and variational dropout (one
    mask per sequence) on the LSTMs' inputs, as ``models/esim_baseline.py`` with ``esim_baseline.jsonnet``."""
    torch.manual_seed(0)
    model = ESIM(np.zeros((3, 8), np.float32), hidden=16)
    assert isinstance(model.classify[2], torch.nn.ReLU) and isinstance(model.project[1], torch.nn.ReLU)
    for layer in (model.project[0], model.classify[1], model.classify[4]):
        bound = np.sqrt(6 / sum(layer.weight.shape))
        assert not layer.bias.any() and layer.weight.abs().max() <= bound
        assert layer.weight.abs().max() > 0.9 * bound
    model.train()
    dropped = model.drop(torch.ones(4, 6, 16))
    assert torch.equal(dropped, dropped[:, :1].expand_as(dropped)) and (dropped == 0).any()
