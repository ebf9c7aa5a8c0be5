"""GloVe loading, the MLM-BASELINE features and ESIM: tiny text files, a handful of real vectors, a toy task."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from evaluators.olmpics.esim import ESIM
from evaluators.olmpics.glove import embedding_matrix, encode_tokens, glove_tokens, mlm_baseline_features
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


def test_mlm_baseline_features(glove):
    long = " ".join(["word"] * 25)
    stems = ["The [MASK] is zzqxv .", long, ""]
    x = mlm_baseline_features(glove, stems)
    assert x.shape == (3, 1000) and x.dtype == np.float32
    t = x.reshape(3, 20, 50)
    np.testing.assert_array_equal(t[0, 0], glove.vectors[glove.index["the"]])
    np.testing.assert_array_equal(t[0, 2], glove.vectors[glove.index["is"]])
    assert not t[0, 1].any() and not t[0, 3].any()  # [mask] and the made-up word: OOV, zero
    assert t[0, 4].any() and not t[0, 5:].any()  # "." then padding past the 5 tokens
    np.testing.assert_array_equal(t[1], np.tile(glove.vectors[glove.index["word"]], (20, 1)))  # cut at 20
    assert not t[2].any()


def test_encode_tokens(glove):
    ids, mask = encode_tokens(glove, ["the king zzqxv", "", "the"], max_tokens=2)
    the, king = glove.index["the"] + 1, glove.index["king"] + 1
    assert ids.tolist() == [[the, king], [0, 0], [the, 0]] and ids.dtype == np.int64
    assert mask.tolist() == [[True, True], [True, False], [True, False]]
    emb = embedding_matrix(glove)
    assert emb.shape == (400_001, 50) and not emb[0].any()
    np.testing.assert_array_equal(emb[king], glove.vectors[king - 1])


def tensors(ids, mask):
    return torch.from_numpy(ids), torch.from_numpy(mask)


def test_esim_padding_invariance_and_gradients(tmp_path, one_thread):
    torch.manual_seed(0)
    g = small_glove(tmp_path)
    model = ESIM(embedding_matrix(g), hidden=8).eval()
    premises, hypotheses = ["the nan", "the null 1 nan \" the null zzz 1"], ["null", "1 \" the the nan"]
    batch = model(*tensors(*encode_tokens(g, premises)), *tensors(*encode_tokens(g, hypotheses)))
    alone = model(*tensors(*encode_tokens(g, premises[:1])), *tensors(*encode_tokens(g, hypotheses[:1])))
    assert batch.shape == (2,) and alone.shape == (1,)
    torch.testing.assert_close(batch[:1], alone, rtol=1e-5, atol=1e-6)

    model.train()
    model(*tensors(*encode_tokens(g, premises)), *tensors(*encode_tokens(g, hypotheses))).sum().backward()
    assert model.embed.weight.grad is None and not model.embed.weight.requires_grad
    for lstm in (model.encoder, model.composer):
        assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in lstm.parameters())

    emb = embedding_matrix(g)
    trainable = ESIM(emb, hidden=8, freeze_embeddings=False)
    trainable(*tensors(*encode_tokens(g, premises)), *tensors(*encode_tokens(g, hypotheses))).sum().backward()
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
