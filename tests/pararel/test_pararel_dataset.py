"""ParaRel's cloze set on the mirror: the mixed objects footnote 11 removes (the original ``filter_mixed_objects``),
the tuples counted filter by filter in meta.json, and whose tokenizers the one-token filter reads (the masked LMs
that run ParaRel)."""

from __future__ import annotations

import pytest

import generators.pararel.generator as gen
from probekit.data.cloze import read_cloze_set, write_cloze_set
from probekit.params import ParamsFile

from helpers import MIRROR

MIXED = {"P136": {"satire", "sitcom", "thriller", "fantasy"}, "P101": {"folklore", "Judaism", "diplomat", "Hebrew",
                                                                         "cave"}}


def _build(source_tables, models=None, runs=None, **params):
    data = {"pararel": {"tokenizers": [], **params}, "models": models, "runs": runs}
    return gen.build(ParamsFile(None, data), {"pararel": source_tables("pararel")})


def _mirror_objects(relation: str) -> list[str]:
    """The objects of a relation's tuples in the mirror's own file, read without the loader."""
    import json

    path = MIRROR / "pararel" / "yanaiela_pararel" / "data" / "trex_lms_vocab" / f"{relation}.jsonl"
    return [json.loads(line)["obj_label"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def no_jazz_bert(tmp_path_factory, minilm_vocab):
    """A tiny BERT whose vocabulary spells ``jazz`` and ``fantasy`` in pieces (so they are not one token)."""
    from transformers import BertForMaskedLM

    from helpers import save_tiny_bert

    folder = tmp_path_factory.mktemp("no-jazz-bert")
    lines = minilm_vocab.read_text(encoding="utf-8").splitlines()
    (folder / "vocab.txt").write_text("\n".join(f"[gone-{w}]" if w in ("jazz", "fantasy") else w for w in lines)
                                      + "\n")
    return save_tiny_bert(folder / "model", folder / "vocab.txt", BertForMaskedLM)


def test_the_whole_cloze_set_has_the_papers_26813_tuples(source_tables, tmp_path):
    """§5.1: "26,813 tuples remain" (after footnote 11's filter): the mirror's 26,946 tuples of the 38 relations
    less P136's non-music genres (127 tuples) and P101's stray objects (6), counted step by step in meta.json and
    on the card."""
    rows, meta = _build(source_tables)
    assert len(rows["tuples"]) == meta["counts"]["tuples"] == 26_813
    assert meta["filter_steps"] == [
        {"step": gen.READ, "removed": 0, "tuples": 26_946},
        {"step": gen.MIXED, "removed": 133, "tuples": 26_813}]
    assert meta["params"]["filter_mixed_objects"] is True
    assert meta["relations"]["P136"]["mixed_object_tuples"] == 127 and meta["relations"]["P101"]["mixed_object_tuples"] == 6
    assert sum(v["mixed_object_tuples"] for v in meta["relations"].values()) == 133
    meta |= {"license": "cc-by-nc-4.0", "sources": {}}
    card = (write_cloze_set(tmp_path / "pararel", rows, meta, gen.card) / "README.md").read_text()
    assert f"| {gen.MIXED} | 133 | 26813 |" in card


def test_mixed_objects_are_removed_with_their_tuples_and_a_switch_keeps_them(source_tables):
    rows, meta = _build(source_tables, relations=["P19", "P101", "P136"])
    rels = {r["relation"]: r for r in rows["relations"]}
    for rel, objects in MIXED.items():
        in_mirror = [o for o in _mirror_objects(rel) if o in objects]
        assert in_mirror   # the mirror has them: the filter is not vacuous
        kept = [t for t in rows["tuples"] if t["relation"] == rel]
        assert not {t["object"] for t in kept} & objects and not set(rels[rel]["candidates"]) & objects
        assert len(kept) == len(_mirror_objects(rel)) - len(in_mirror) == meta["relations"][rel]["tuples"]
        assert set(rels[rel]["mixed_objects"]) == set(in_mirror)
    assert rels["P19"]["mixed_objects"] == [] and meta["relations"]["P19"]["mixed_object_tuples"] == 0
    assert {t["object"] for t in rows["tuples"] if t["relation"] == "P136"} >= {"jazz", "opera"}  # music stays

    kept_rows, kept_meta = _build(source_tables, relations=["P19", "P101", "P136"], filter_mixed_objects=False)
    p136 = [t for t in kept_rows["tuples"] if t["relation"] == "P136"]
    assert len(p136) == len(_mirror_objects("P136")) == 859 and {"satire", "sitcom"} <= {t["object"] for t in p136}
    assert all(r["mixed_objects"] == [] for r in kept_rows["relations"])
    assert [s["step"] for s in kept_meta["filter_steps"]] == [gen.READ]
    assert kept_meta["counts"]["tuples"] - meta["counts"]["tuples"] == 127 + 6


def test_filter_steps_count_in_order_tokenizers_then_mixed_objects(source_tables, no_jazz_bert):
    """As the original's filter_data.py: the one-token filter per tokenizer, then the mixed objects; a mixed object
    a tokenizer already dropped (``fantasy``) is counted there, not twice; ParaRel* comes first."""
    rows, meta = _build(source_tables, relations=["P136"], tokenizers=[str(no_jazz_bert)], dedupe_subjects=True)
    objects = {}
    for t in rows["tuples"]:
        objects[t["object"]] = objects.get(t["object"], 0) + 1
    steps = {s["step"]: s for s in meta["filter_steps"]}
    assert list(steps) == [gen.READ, gen.DEDUPE, f"{gen.ONE_TOKEN} {no_jazz_bert}", gen.MIXED]
    assert steps[gen.READ]["tuples"] == 859 and steps[gen.DEDUPE]["removed"] == 1   # one subject repeats
    p136 = _build(source_tables, relations=["P136"], dedupe_subjects=True, filter_mixed_objects=False)[0]["tuples"]
    count = {o: sum(t["object"] == o for t in p136) for o in ("jazz", "fantasy", "satire", "sitcom", "thriller")}
    assert steps[f"{gen.ONE_TOKEN} {no_jazz_bert}"]["removed"] == count["jazz"] + count["fantasy"] > 0
    assert steps[gen.MIXED]["removed"] == count["satire"] + count["sitcom"] + count["thriller"]
    assert steps[gen.MIXED]["tuples"] == len(rows["tuples"]) == meta["relations"]["P136"]["tuples"]
    assert not {"jazz", "fantasy", "satire"} & set(objects)


def test_the_one_token_filter_reads_the_masked_lms_that_run_pararel(source_tables, no_jazz_bert, tmp_path):
    """``tokenizers`` null: every masked LM of ``models`` whose entry runs ParaRel; a model kept for oLMpics only
    (``runs.olmpics`` only, e.g. the paper profile's uncased BERTs) does not narrow ParaRel's objects."""
    models = {"bert": str(no_jazz_bert)}
    rows, meta = _build(source_tables, models=models, runs={"olmpics": ["bert"], "pararel": []}, relations=["P136"],
                        tokenizers=None)
    assert "jazz" in rows["relations"][0]["candidates"] and rows["relations"][0]["dropped_objects"] == {}
    rows, meta = _build(source_tables, models=models, runs={"olmpics": ["bert"], "pararel": ["bert"]},
                        relations=["P136"], tokenizers=None)
    assert "jazz" not in rows["relations"][0]["candidates"]
    assert rows["relations"][0]["dropped_objects"] == {"bert": ["fantasy", "jazz"]}
    data = read_cloze_set(write_cloze_set(tmp_path / "p", rows, meta | {"license": "x", "sources": {}}, gen.card))
    # the footnote's objects the relation has (fantasy too: its tuples count under the tokenizer's step)
    assert data.relation("P136")["mixed_objects"] == ["fantasy", "satire", "sitcom", "thriller"]
