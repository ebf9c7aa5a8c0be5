"""The tokenization audit: answer words as each tokenizer reads them in context, the examples the
single-token rule excludes and why, and the examples every model can score."""

from __future__ import annotations

import json

import pytest

from evaluators.engine.audit import audit, audit_examples, markdown
from probes.main import main

from helpers import listed


def example(id_: str, stem: str, *choices: str) -> dict:
    return {"id": id_, "answerKey": "A",
            "question": {"stem": stem, "choices": [{"label": "ABCDE"[i], "text": t} for i, t in enumerate(choices)]}}


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def bert(tiny_bert):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_bert)


@pytest.fixture(scope="module")
def roberta(tiny_roberta):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_roberta)


def encodings(result, word):
    return {(tuple(e["pieces"]), e["leading_space"], e["single"]) for e in result["words"][word]["encodings"]}


def test_roberta_reads_older_with_a_space_mid_sentence_and_without_at_the_start(bert, roberta):
    rows = [example("mid", "A 24 year old person is [MASK] than me .", "older", "younger"),
            example("start", "[MASK] than me .", "older", "younger")]
    r = audit_examples(roberta, rows)
    assert encodings(r, "older") == {(("Ġolder",), True, True), (("older",), False, True)}
    assert r["words"]["older"]["examples"] == 2 and r["words"]["older"]["case"] == "lower"
    assert not r["lowercases"]
    # "younger" without its space is three pieces: the example at the start is excluded, with them
    assert r["excluded"] == [{"row": 1, "id": "start", "kind": "multi-token",
                              "reasons": ["multi-token: younger -> [y, ou, nger]"]}]
    assert r["eligible"] == {"rows": [0], "ids": ["mid"]}
    b = audit_examples(bert, rows)
    assert encodings(b, "older") == {(("older",), False, True)} and b["lowercases"]
    assert b["counts"] == {"examples": 2, "multi_token": 0, "ties": 0, "eligible": 2}
    report = markdown(audit({"roberta": roberta}, {"d.jsonl": rows}), "dev")
    assert "| older | `Ġolder` ×1; `older` ×1 | 1 " in " ".join(report.split())


def test_a_multi_token_word_is_excluded_with_its_pieces(bert):
    rows = [example("a", "She is a [MASK] .", "xylophonist", "teacher"),
            example("b", "She is a [MASK] .", "doctor", "teacher")]
    r = audit_examples(bert, rows)
    assert r["excluded"] == [{"row": 0, "id": "a", "kind": "multi-token",
                              "reasons": ["multi-token: xylophonist -> [x, ##yl, ##op, ##hon, ##ist]"]}]
    assert r["words"]["xylophonist"]["encodings"][0]["n_pieces"] == 5
    assert r["eligible"] == {"rows": [1], "ids": ["b"]}
    assert r["counts"] == {"examples": 2, "multi_token": 1, "ties": 0, "eligible": 1}


def test_words_sharing_their_first_token_are_excluded_as_a_tie(bert, roberta):
    rows = [example("t", "He is [MASK] than me .", "Older", "older", "younger")]
    r = audit_examples(bert, rows)  # uncased: "Older" is read as "older"
    assert r["excluded"] == [{"row": 0, "id": "t", "kind": "tie", "reasons": ["tied first token: Older, older -> older"]}]
    assert r["counts"]["ties"] == 1 and r["counts"]["eligible"] == 0
    assert r["words"]["Older"]["case"] == "title"
    assert "title (lowercased)" in markdown(audit({"bert": bert}, {"d": rows}), "dev")
    assert audit_examples(roberta, rows)["excluded"][0]["kind"] == "multi-token"  # cased: "ĠO ld er"


def test_the_eligible_set_across_models_is_what_every_model_allows(bert, roberta):
    rows = [example("both", "A 24 year old person is [MASK] than me .", "older", "younger"),
            example("roberta-only", "He said [MASK] am old .", "I", "i"),  # uncased BERT: both are "i"
            example("bert-only", "The [MASK] is old .", "cat", "dog")]  # the tiny BPE spells them out
    result = audit({"bert": bert, "roberta": roberta}, {"d.jsonl": rows})["d.jsonl"]
    assert result["models"]["bert"]["eligible"]["rows"] == [0, 2]
    assert result["models"]["roberta"]["eligible"]["rows"] == [0, 1]
    assert result["eligible_all"] == {"n": 1, "rows": [0], "ids": ["both"]}


def test_duplicate_ids_do_not_collapse(bert):
    rows = [example("dup", "He is [MASK] than me .", "older", "younger"),
            example("dup", "She is a [MASK] .", "xylophonist", "teacher"),
            example("dup", "He is [MASK] than me .", "older", "younger")]
    result = audit({"bert": bert}, {"d": rows})["d"]
    m = result["models"]["bert"]
    assert [x["row"] for x in m["excluded"]] == [1]
    assert m["eligible"] == {"rows": [0, 2], "ids": ["dup", "dup"]}
    assert result["eligible_all"] == {"n": 2, "rows": [0, 2], "ids": ["dup", "dup"]}
    assert m["words"]["older"]["examples"] == 2


def test_cli_writes_exactly_out_and_its_json_and_says_where(tmp_path, tiny_bert, tiny_roberta, capsys):
    (tmp_path / "data").mkdir()
    data = write_jsonl(tmp_path / "data" / "dev.jsonl",
                       [example("x", "A 24 year old person is [MASK] than me .", "older", "younger"),
                        example("y", "The [MASK] is old .", "cat", "dog")])
    out = tmp_path / "out"
    code = main(["audit", "--model", str(tiny_bert), "--model", str(tiny_roberta), "--data", str(data),
                 "--out", str(out / "audit.md")])
    assert code == 0
    assert set(listed(out)) == {"audit.md", "audit.json"}
    assert [p.name for p in (tmp_path / "data").iterdir()] == ["dev.jsonl"]
    printed = capsys.readouterr().out
    assert f"wrote {out / 'audit.md'} and {out / 'audit.json'}" in printed
    saved = json.loads((out / "audit.json").read_text())
    assert saved["split"] == "dev" and list(saved["models"]) == [str(tiny_bert), str(tiny_roberta)]
    assert saved["datasets"][str(data)]["eligible_all"] == {"n": 1, "rows": [0], "ids": ["x"]}
    md = (out / "audit.md").read_text()
    assert f"## {data}" in md and "excluded examples (1 of 2)" in md and "multi-token: cat -> [Ġ, c, a, t]" in md


def test_mc_qa_data_is_a_one_line_error(tmp_path, tiny_bert, capsys):
    data = write_jsonl(tmp_path / "qa.jsonl", [example("q1", "What do people write with?", "pen", "cup")])
    code = main(["audit", "--model", str(tiny_bert), "--data", str(data), "--out", str(tmp_path / "o" / "a.md")])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1
    assert err.startswith("probes audit: error: ") and "q1" in err and "MC-MLM" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("args, message", [
    (["--release-of", "nosuch:age_comparison"], "no source 'nosuch'"),
    (["--data", "no/such/folder"], "no/such/folder: no such file or folder"),
    (["--out", "a.json"], "its JSON is written beside it"),
])
def test_argument_errors_are_one_line_usage_errors(args, message, tmp_path, tiny_bert, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_jsonl(tmp_path / "dev.jsonl", [example("x", "He is [MASK] .", "older", "younger")])
    base = {"--data": "dev.jsonl", "--out": "a.md"}
    base.update(dict(zip(args[::2], args[1::2])))
    code = main(["audit", "--model", str(tiny_bert)] + [x for kv in base.items() for x in kv])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and message in err
    assert listed(tmp_path) == ["dev.jsonl"]
