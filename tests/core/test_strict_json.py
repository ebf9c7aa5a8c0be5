"""Every JSON and JSONL file probekit reads goes through one reader (``probekit.data.jsonl``, issue #51 items 7-8):
NaN, Infinity and a key given twice are refused in one line naming the file and the line (Python's json took them:
a NaN score made a NaN accuracy, a key twice kept its last value); a row longer than the bound is refused with its
line before it is parsed; and ``--limit N`` reads the first N rows only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from probekit.data import jsonl
from probekit.data.jsonl import LONGEST_LINE, read_json, read_jsonl
from probekit.errors import DataError, UsageError
from probes.main import main

ROW = {"id": "a", "answerKey": "A", "question": {"stem": "He is [MASK] .", "choices": [
    {"label": "A", "text": "older"}, {"label": "B", "text": "younger"}]}}


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


@pytest.mark.parametrize("value, why", [("NaN", "NaN is not a number JSON has"),
                                        ("Infinity", "Infinity is not a number JSON has"),
                                        ("-Infinity", "-Infinity is not a number JSON has"),
                                        ("1e999", "1e999 is too large for a number")])
def test_a_number_json_does_not_have_is_refused_with_its_line(tmp_path, value, why):
    path = write(tmp_path / "dev.jsonl", '{"id": "a", "score": 1.5}\n\n{"id": "b", "score": %s}\n' % value)
    with pytest.raises(DataError) as caught:
        read_jsonl(path)
    assert str(caught.value).startswith(f"{path}:3: {why}")


def test_a_key_given_twice_in_a_row_is_refused_naming_it(tmp_path):
    """Python's json kept the last ``answerKey``: the row's gold changed in silence."""
    path = write(tmp_path / "dev.jsonl", '{"id": "a"}\n{"id": "b", "answerKey": "A", "x": {"answerKey": 1}, '
                                         '"answerKey": "B"}\n')
    with pytest.raises(DataError, match=rf"^{path}:2: key 'answerKey' is given twice in one object"):
        read_jsonl(path)
    nested = write(tmp_path / "n.jsonl", '{"id": "a", "args": {"age": 3, "age": 4}}\n')
    with pytest.raises(DataError, match=rf"^{nested}:1: key 'age' is given twice"):
        read_jsonl(nested)


def test_a_row_longer_than_the_bound_is_refused_with_its_line_unparsed(tmp_path, monkeypatch):
    """A 200 MB row was parsed whole (and then tokenized); now it is refused after one read of the bound."""
    parsed = []
    monkeypatch.setattr(jsonl, "_DECODER", type("Spy", (), {"decode": lambda self, text: parsed.append(len(text))
                                                            or json.loads(text)})())
    huge = '{"id": "b", "stem": "' + "x" * (3 * LONGEST_LINE) + '"}\n'
    path = write(tmp_path / "dev.jsonl", json.dumps(ROW) + "\n" + huge + json.dumps(ROW) + "\n")
    with pytest.raises(DataError, match=rf"^{path}:2: a line longer than 1,048,576 bytes"):
        read_jsonl(path)
    assert parsed == [len(json.dumps(ROW)) + 1]   # row 1 only: row 2 was never handed to the parser
    ok = write(tmp_path / "ok.jsonl", '{"s": "' + "x" * (LONGEST_LINE - 9) + '"}\n')   # exactly the bound
    assert len(read_jsonl(ok)[0]["s"]) == LONGEST_LINE - 9


def test_the_rows_past_a_limit_are_never_read(tmp_path):
    path = write(tmp_path / "dev.jsonl", "".join(json.dumps({**ROW, "id": str(i)}) + "\n" for i in range(5))
                 + "{broken\n" + '{"s": "' + "x" * (2 * LONGEST_LINE) + '"}\n')
    assert [r["id"] for r in read_jsonl(path, limit=5)] == ["0", "1", "2", "3", "4"]
    with pytest.raises(DataError, match=rf"^{path}:6: not valid JSON"):
        read_jsonl(path)


def test_a_nan_in_a_metrics_file_is_refused(tmp_path):
    path = write(tmp_path / "metrics.json", '{\n  "accuracy": NaN,\n  "n": 4\n}\n')
    with pytest.raises(DataError, match=rf"^{path}: NaN is not a number JSON has"):
        read_json(path)
    twice = write(tmp_path / "m2.json", '{"accuracy": 0.5, "accuracy": 0.9}')
    with pytest.raises(DataError, match="key 'accuracy' is given twice"):
        read_json(twice)


def test_a_nan_score_in_a_prediction_file_stops_the_browser_and_diff(tmp_path):
    """The user's layout (results/zeroshot/<model>/<probe>/<variant>/predictions.jsonl): a NaN score was taken, and
    the accuracy reported as ``nan [0.450, 0.775]``."""
    from browse.toy_project import write_project
    from evaluators.predictions import load_predictions
    from evaluators.shared.flips import read_predictions

    write_project(tmp_path, n=4)
    bad = tmp_path / "results" / "zeroshot" / "alpha" / "toy" / "original" / "predictions.jsonl"
    lines = bad.read_text().splitlines()
    row = json.loads(lines[1])
    assert "scores" in row
    row["scores"][0] = float("nan")
    bad.write_text("\n".join([lines[0], json.dumps(row), *lines[2:]]) + "\n")   # json.dumps writes NaN
    with pytest.raises(UsageError) as caught:
        load_predictions(tmp_path / "results", data=tmp_path / "data", probe="toy")
    assert str(caught.value) == f"{bad}:2: NaN is not a number JSON has (write null, or a finite number)"
    with pytest.raises(UsageError, match=rf"^{bad}:2: NaN is not a number JSON has"):
        read_predictions(bad)


def test_a_key_twice_in_a_prediction_row_stops_probes_diff(tmp_path):
    """Two prediction files compared (:func:`read_pair`, what ``probes diff --old-predictions --new-predictions``
    reads first): ``correct`` twice in one row kept the last, which flipped the row."""
    from evaluators.shared.flips import read_pair

    old = write(tmp_path / "old" / "predictions.jsonl",
                '{"id": "a", "prediction": "x", "correct": true}\n{"id": "b", "prediction": "y", "correct": false}\n')
    new = write(tmp_path / "new" / "predictions.jsonl",
                '{"id": "a", "prediction": "x", "correct": true}\n'
                '{"id": "b", "prediction": "y", "correct": false, "correct": true}\n')
    with pytest.raises(UsageError, match=rf"^{new}:2: key 'correct' is given twice in one object"):
        read_pair(old, new)


def test_zeroshot_under_a_limit_never_reads_the_rows_past_it(tmp_path, tiny_bert, capsys):
    """Row 6 broken, row 7 of 2 MiB: ``--limit 5`` scores the first five and reads no further (a 200 MB row kept
    the tokenizer busy for minutes)."""
    data = write(tmp_path / "dev.jsonl", "".join(json.dumps({**ROW, "id": f"r{i}"}) + "\n" for i in range(5))
                 + "{row 6 is broken\n" + json.dumps({**ROW, "id": "r7", "pad": "x" * (2 * LONGEST_LINE)}) + "\n")
    out = tmp_path / "o"
    assert main(["evaluate", "zeroshot", "--model", str(tiny_bert), "--data", str(data), "--out", str(out),
                 "--device", "cpu", "--limit", "5"]) == 0, capsys.readouterr().err
    predictions = (out / "predictions.jsonl").read_text().splitlines()
    assert [json.loads(p)["id"] for p in predictions] == [f"r{i}" for i in range(5)]
    assert main(["evaluate", "zeroshot", "--model", str(tiny_bert), "--data", str(data), "--out",
                 str(tmp_path / "o2"), "--device", "cpu"]) != 0
    assert f"{data}:6: not valid JSON" in capsys.readouterr().err


def test_calum_pairs_under_a_limit_never_read_the_rows_past_it(tmp_path):
    """``calum_eval.limit`` / ``eval_limit``: the first N pair rows, read before any tokenizer sees them."""
    from probekit.data.pairs import ROW_FIELDS, read_pairs

    row = {field: "x" for field in ROW_FIELDS}
    write(tmp_path / "original" / "dev.jsonl", "".join(json.dumps({**row, "id": f"p{i}"}) + "\n" for i in range(3))
          + '{"id": "p3", "label": NaN}\n')
    assert [r["id"] for r in read_pairs(tmp_path, "original", "dev", 3)] == ["p0", "p1", "p2"]
    with pytest.raises(DataError, match=r"dev\.jsonl:4: NaN is not a number JSON has"):
        read_pairs(tmp_path, "original", "dev")
