"""The oLMpics report's published numbers: published.yaml checked against the paper's text (papers/001, whose
tables survive the translation as columns of numbers), and a model whose Hub id the paper evaluated gets the paper's
row beside ours, one without gets none."""

from __future__ import annotations

import json

import pytest

from evaluators.olmpics.report import load_published, write_olmpics_report

from helpers import MIRROR
from test_olmpics_report import BASE, GOOD, write_result

PAPER = MIRROR.parent / "papers" / "001_b1f53a5673822d0a.txt"


@pytest.fixture(scope="module")
def paper() -> str:
    assert PAPER.is_file(), f"the oLMpics paper's text is not at {PAPER}"
    return PAPER.read_text(encoding="utf-8")


def test_every_published_column_is_a_column_of_the_papers_table(paper):
    """Each column (baseline's empty LINEAR cells left out) is printed as a run of lines in the paper's text; the
    rows' order and their first column are the paper's: ``R0\\nv0\\nR1 v1\\nv2\\nR2\\nv3\\nR3\\nv4\\nR4\\nv5\\nBase``
    (how the text lays out a table's first column), or the rows' names then each column (Table 10)."""
    tables = load_published()["tables"]
    assert sorted(tables, key=lambda k: int(k[5:])) == [f"table{k}" for k in (2, 3, 5, 7, 8, 9, 10, 11)]
    for key, table in tables.items():
        names, rows = list(table["rows"]), table["rows"]
        assert len(names) == 6 and names[-1] == "Base" and all(len(v) == len(table["columns"]) for v in rows.values())
        for k, column in enumerate(table["columns"][1:], 1):
            block = "\n".join(str(rows[n][k]) for n in names if rows[n][k] is not None)
            assert f"\n{block}\n" in paper, f"{key} {column}: {block!r} is not a column of the paper"
        first = [rows[n][0] for n in names]
        if key == "table10":
            assert "\n".join(names[:5] + ["ESIM-Baseline", "", *map(str, first)]) in paper
        else:
            layout = (f"{names[0]}\n{first[0]}\n{names[1]} {first[1]}\n{first[2]}\n{names[2]}\n{first[3]}\n{names[3]}\n"
                      f"{first[4]}\n{names[4]}\n{first[5]}\nBase")
            assert layout in paper, f"{key}: rows or first column differ from the paper's"


def test_cells_the_papers_prose_quotes(paper):
    tables = load_published()["tables"]
    cell = {key: {name: dict(zip(t["columns"], v)) for name, v in t["rows"].items()} for key, t in tables.items()}
    assert "ROBERTA-L\ncompares numbers correctly (98% acc.)" in paper
    assert cell["table2"]["RoBERTa-L"]["Zero-shot"] == 98
    assert "de 84% acc. in the zero-shot setup and reaching\nMAX of 91%" in paper
    assert (cell["table3"]["RoBERTa-L"]["Zero-shot"], cell["table3"]["RoBERTa-L"]["MLP MAX"]) == (84, 91)
    assert "reach a comparable WS of 67 and MAX of 80%" in paper
    assert (cell["table7"]["Base"]["MLP WS"], cell["table7"]["Base"]["MLP MAX"]) == (67, 80)
    assert "(49% MAX and 39 WS)" in paper
    assert (cell["table8"]["Base"]["MC-QA MAX"], cell["table8"]["Base"]["MC-QA WS"]) == (49, 39)
    assert "baseline performs best with a MAX of 54%" in paper and cell["table10"]["Base"]["MC-QA MAX"] == 54
    assert "MAX of\n65% when approaching" in paper and cell["table11"]["BERT-WWM"]["MLP MAX"] == 65
    assert "than MLM-BASELINE (48%)" in paper and cell["table11"]["Base"]["MLP MAX"] == 48
    # the original code's checkpoints: uncased BERTs
    hub = load_published()["hub_ids"]
    assert hub["bert-base-uncased"] == "BERT-B" and hub["roberta-large"] == "RoBERTa-L"
    assert hub["bert-large-uncased-whole-word-masking"] == "BERT-WWM" and "bert-base-cased" not in hub


def _write_metrics_with_id(path, model_id):
    meta = json.loads(path.read_text(encoding="utf-8"))
    meta["model_id"] = model_id
    path.write_text(json.dumps(meta), encoding="utf-8")


def test_a_checkpoint_the_paper_evaluated_gets_its_row_and_another_none(tmp_path):
    """The user's layout: bert-base-uncased (as `bert`), roberta-large and a local MiniLM, with the MLM-BASELINE,
    on AGE-COMPARE (MC-MLM, Table 2) and PROPERTY CONJUNCTION (MC-QA, Table 8)."""
    root = tmp_path / "curve"
    for model, model_id in (("bert", "bert-base-uncased"), ("rl", "roberta-large"), ("minilm", "pkg:minilm")):
        _write_metrics_with_id(write_result(root, model, "age_comparison", "MLP", GOOD, zero=0.6), model_id)
        _write_metrics_with_id(write_result(root, model, "property_conjunction", "MC-QA", GOOD, chance=1 / 3),
                               model_id)
    write_result(root, "mlm-baseline", "age_comparison", "MLP", BASE, zero=0.5, baseline="MLM-BASELINE")
    write_olmpics_report([root], out_md=tmp_path / "o.md", out_json=tmp_path / "o.json", resamples=50)
    md = (tmp_path / "o.md").read_text(encoding="utf-8")
    lines = md.splitlines()
    age = lines[lines.index("## age_comparison"):lines.index("## property_conjunction")]
    conj = lines[lines.index("## property_conjunction"):]
    row = next(i for i, line in enumerate(age) if line.startswith("| bert "))
    # the paper's BERT-B row right under ours, in our columns: Zero-shot, MLP WS, MLP MAX, pert, nolang
    assert [c.strip() for c in age[row + 1].split("|")[1:-1]] == ["↳ paper: BERT-B", "49", "49", "50", "0", "0"]
    rl = next(i for i, line in enumerate(age) if line.startswith("| rl "))
    assert age[rl + 1].startswith("| ↳ paper: RoBERTa-L ") and "| 98 " in age[rl + 1]
    base = next(i for i, line in enumerate(age) if line.startswith("| MLM-BASELINE "))
    assert [c.strip() for c in age[base + 1].split("|")[1:-1]] == ["↳ paper: Base", "49", "58", "79", "0", "0"]
    mini = next(i for i, line in enumerate(age) if line.startswith("| minilm "))
    assert not age[mini + 1].startswith("| ↳ paper")
    assert sum("↳ paper: " in line and line.startswith("|") for line in age) == 3
    assert any("Table 2 (AGE-COMPARE)" in line for line in age)
    # MC-QA: Table 8's WS, MAX, pert, nolang under the MC-QA columns
    row = next(i for i, line in enumerate(conj) if line.startswith("| bert "))
    assert [c.strip() for c in conj[row + 1].split("|")[1:-1]] == ["↳ paper: BERT-B", "", "47", "71", "2", "1"]
    assert sum(line.startswith("| ↳ paper: ") for line in conj) == 2 and any("Table 8" in line for line in conj)
    summary = json.loads((tmp_path / "o.json").read_text(encoding="utf-8"))
    assert summary["age_comparison"]["bert"]["published_pct"]["values"]["MLP MAX"] == 50
    assert summary["age_comparison"]["bert"]["published_pct"]["table"] == "table2"
    assert "published_pct" not in summary["age_comparison"]["minilm"]
    assert summary["age_comparison"]["bert"]["MLP"]["n"] == 20 and summary["age_comparison"]["bert"]["MLP"][
        "chance"] == 0.5
