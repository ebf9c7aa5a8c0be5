"""The oLMpics report cannot mislead: a constant predictor is flagged (⚠, as CALUM's report flags one), a language
sensitivity measured against a control below chance is flagged (↓), and a deviation over one seed reads "—", not
"± 0.0". Results folders made by hand in the evaluators' format (and once by their own writer)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from evaluators.grid import reports as grid_reports
from evaluators.olmpics import learning_curve as lc
from evaluators.olmpics.metrics import max_summary, summary as seed_summary, ws_summary
from evaluators.olmpics.report import write_olmpics_report
from probekit.outputs.atomic import write_json, write_jsonl

SIZES = [62, 125]
WORDS = ("younger", "older")


def dev_rows(n: int) -> list[dict]:
    """``n`` age rows whose choice order alternates (as the generator shuffles it); gold younger, older, ..."""
    rows = []
    for i in range(n):
        order = list(WORDS) if i % 2 == 0 else list(reversed(WORDS))
        gold = WORDS[(i // 2) % 2]
        rows.append({"id": f"q{i}", "question": {"stem": "x [MASK] y", "choices": [
            {"label": label, "text": word} for label, word in zip("AB", order)]},
            "answerKey": "AB"[order.index(gold)]})
    return rows


def choose(rows: list[dict], pick) -> np.ndarray:
    """Each row's chosen position, ``pick(i, row) -> word``."""
    return np.array([[c["text"] for c in r["question"]["choices"]].index(pick(i, r)) for i, r in enumerate(rows)])


def gold_word(r: dict) -> str:
    return next(c["text"] for c in r["question"]["choices"] if c["label"] == r["answerKey"])


def write_curve(root: Path, model: str, rows: list[dict], runs: dict[str, np.ndarray], *, zero=None,
                setting: str = "MLP", zeros: dict | None = None, **extra) -> None:
    """A curve's metrics.json and predictions as the evaluators write them: ``runs[variant]`` holds the chosen
    positions ``[seeds, sizes, n]`` of ``original`` and its controls (a control row ``c<i>`` of ``q<i>``);
    ``zero``: the original's zero-shot choices, ``zeros``: a control's (by name); ``extra``: more metrics fields."""
    zeros = {"original": zero, **(zeros or {})}
    folder = root / model / "age" / setting.lower()
    seeds = list(range(1, len(runs["original"]) + 1))
    gold = np.array([[c["label"] for c in r["question"]["choices"]].index(r["answerKey"]) for r in rows])
    meta = {"protocol": "MC-MLM", "setting": setting, "model": model, "baseline": None, "lm_head": "pretrained",
            "probe": "age", "variant": "original", "data_fingerprint": "f", "split": "dev", "n": len(rows),
            "chance": 0.5, "sizes": SIZES, "sizes_dropped": [], "seeds": seeds, "ws_weights": [0.5349, 0.4651],
            "zero_shot": None if zero is None else {"accuracy": float(np.mean(zero == gold))},
            "controls": {}, "sensitivity": {}, **extra}
    for variant, predicted in runs.items():
        correct = predicted == gold
        acc = correct.mean(axis=-1)
        stats = {"curve": {str(n): seed_summary(acc[:, k]) for k, n in enumerate(SIZES)}, "WS": ws_summary(acc),
                 "MAX": max_summary(acc, SIZES)}
        lines = [{"id": f"q{i}" if variant == "original" else f"c{i}",
                  **({} if variant == "original" else {"source_id": f"q{i}"}), "gold": r["answerKey"],
                  "choices": [c["text"] for c in r["question"]["choices"]],
                  "zero_shot": None if zeros.get(variant) is None else bool(zeros[variant][i] == gold[i]),
                  "zero_shot_predicted": None if zeros.get(variant) is None else int(zeros[variant][i]),
                  "correct": {str(n): correct[:, k, i].tolist() for k, n in enumerate(SIZES)},
                  "predicted": {str(n): predicted[:, k, i].tolist() for k, n in enumerate(SIZES)}}
                 for i, r in enumerate(rows)]
        write_jsonl(folder / variant / "predictions.jsonl", lines)
        if variant == "original":
            meta.update(stats)
        else:
            meta["controls"][variant] = {"variant": variant, "zero_shot": None, **stats}
    write_json(folder / "metrics.json", meta)


def report(root: Path, out: Path) -> tuple[str, dict]:
    write_olmpics_report([root], out_md=out / "r.md", out_json=out / "r.json")
    return (out / "r.md").read_text(), json.loads((out / "r.json").read_text())


def row_of(md: str, label: str) -> str:
    return next(line for line in md.splitlines() if line.startswith(f"| {label} "))


def test_a_constant_predictor_is_flagged(tmp_path):
    """MiniLM's failure: `younger` on every age example at zero-shot and after training, 50.0 like a guess."""
    rows = dev_rows(40)
    younger = choose(rows, lambda i, r: "younger")
    varied = choose(rows, lambda i, r: gold_word(r) if i % 4 else "younger")
    write_curve(tmp_path / "res", "minilm", rows, {"original": np.stack([np.stack([younger, younger])])},
                zero=younger)
    write_curve(tmp_path / "res", "fine", rows, {"original": np.stack([np.stack([varied, younger])] * 2)},
                zero=varied)
    md, js = report(tmp_path / "res", tmp_path / "out")
    minilm = row_of(md, "minilm")
    assert minilm.startswith("| minilm  | 50.0 [") and minilm.split("|")[2].strip().endswith("] ⚠")   # zero-shot
    assert minilm.split("|")[3].strip().endswith("⚠") and minilm.split("|")[4].strip().endswith("⚠")  # WS, MAX
    assert "⚠ constant predictor, one answer to every dev example (those accuracies measure no knowledge):" in md
    assert ("\n- minilm MLP: original: zero-shot (`younger`); 2 of 2 runs (N = 62 seed 1: `younger`, N = 125 seed 1: "
            "`younger`)\n") in md
    fine = row_of(md, "fine")
    assert "⚠" not in fine.split("|")[2] and "⚠" in fine.split("|")[3]   # its N = 125 runs answered `younger`
    assert "\n- fine MLP: original: 2 of 4 runs (N = 125 seed 1: `younger`, N = 125 seed 2: `younger`)\n" in md
    assert js["age"]["minilm"]["MLP"]["constant_predictor"] == {"original": {
        "zero_shot": "`younger`", "runs": [[62, 1, "`younger`"], [125, 1, "`younger`"]], "of": 2}}


def test_a_constant_position_is_a_constant_predictor_too(tmp_path):
    """Always the first choice (as ties give): the word varies with the shuffled order, the position does not."""
    rows = dev_rows(40)
    first = np.zeros(len(rows), int)
    write_curve(tmp_path / "res", "tied", rows, {"original": np.stack([np.stack([first, first])] * 2)})
    md, _ = report(tmp_path / "res", tmp_path / "out")
    assert "\n- tied MLP: original: 4 of 4 runs (N = 62 seed 1: choice A," in md


def test_a_sensitivity_against_a_control_below_chance_is_flagged(tmp_path):
    """NO-LANG at 30% of a 50% task: max(0, 50 − 30) would read as 20 points of language sensitivity."""
    rows = dev_rows(200)
    def right_in(tenths: int):   # right on that many of every ten examples, neither one word nor one position
        return choose(rows, lambda i, r: gold_word(r) if (7 * i) % 10 < tenths else
                      ("older" if gold_word(r) == "younger" else "younger"))

    half, wrong = right_in(5), right_in(3)
    runs = {"original": np.stack([np.stack([half, half])] * 2), "nolang": np.stack([np.stack([wrong, wrong])] * 2),
            "perturbed": np.stack([np.stack([half, half])] * 2)}
    write_curve(tmp_path / "res", "random", rows, runs)
    md, js = report(tmp_path / "res", tmp_path / "out")
    row = row_of(md, "random").split("|")
    assert row[-2].strip().startswith("20.0 [") and row[-2].strip().endswith("] ↓")   # nolang
    assert "↓" not in row[-3]   # perturbed: at chance, no flag
    assert "\n- random MLP nolang: the nolang curve's own WS 30.0 [" in md and "lies below chance (50.0%)" in md
    entry = js["age"]["random"]["MLP"]
    assert entry["nolang_below_chance"] is True and entry["nolang_control_WS"] == 0.3
    assert entry["perturbed_below_chance"] is False


def test_a_deviation_over_one_seed_reads_a_dash(tmp_path):
    rows = dev_rows(40)
    varied = choose(rows, lambda i, r: gold_word(r) if i % 4 else "older")
    other = choose(rows, lambda i, r: gold_word(r) if i % 5 else "older")
    write_curve(tmp_path / "res", "one", rows, {"original": np.stack([np.stack([varied, other])])})
    write_curve(tmp_path / "res", "two", rows, {"original": np.stack([np.stack([varied, other]),
                                                                      np.stack([other, varied])])})
    md, js = report(tmp_path / "res", tmp_path / "out")
    assert " ± — [" in row_of(md, "one").split("|")[3] and "± 0.0" not in md
    assert " ± 0.0 [" not in row_of(md, "two") and " ± " in row_of(md, "two").split("|")[3]
    assert "WS_std" not in js["age"]["one"]["MLP"] and js["age"]["two"]["MLP"]["WS_std"] > 0


def test_the_curve_writer_records_what_was_chosen_and_the_grid_report_flags_it(tmp_path):
    """``learning_curve.write_results`` records each run's choices, so the report (and the grid's, which is the same
    report) can tell a constant predictor."""
    rows = dev_rows(20)
    younger = choose(rows, lambda i, r: "younger")
    data = tmp_path / "data" / "age" / "original"
    write_jsonl(data / "dev.jsonl", rows)
    write_json(data / "meta.json", {"probe": "age", "variant": "original", "fingerprint": "f"})
    out = tmp_path / "cell" / "mlp"
    lc.write_results(out, variants={"original": {"train": [], "dev": rows, "path": data / "dev.jsonl"}},
                     predicted={"original": np.stack([younger, younger])[:, None, :]},
                     zero_shot={"original": younger}, sizes=SIZES, dropped=[], seeds=[1], subsets={},
                     header={"protocol": "MC-MLM", "setting": "MLP", "model": "minilm", "baseline": None,
                             "lm_head": "newly_initialised"})
    line = json.loads((out / "original" / "predictions.jsonl").read_text().splitlines()[1])
    assert line["choices"] == ["older", "younger"] and line["predicted"] == {"62": [1], "125": [1]}
    assert line["zero_shot_predicted"] == 1 and line["correct"] == {"62": [True], "125": [True]}   # gold: younger
    line = json.loads((out / "original" / "predictions.jsonl").read_text().splitlines()[2])
    assert line["predicted"] == {"62": [0], "125": [0]} and line["correct"] == {"62": [False], "125": [False]}
    metrics = json.loads((out / "metrics.json").read_text())
    grid_reports.curves([(out / "metrics.json", metrics, " · limit=20", "k")], tmp_path / "grid" / "report.md")
    md = (tmp_path / "grid" / "report.md").read_text()
    assert "\n- minilm · limit=20 MLP: original: zero-shot (`younger`); 2 of 2 runs" in md


def test_a_medal_no_better_than_perturbed_or_random_init_is_flagged(tmp_path):
    """The trial's random 2-layer BERT on OBJECTS COMPARISON: zero-shot above chance (↑) and a WS 20 points over
    the baseline (the paper's rule gives ✓), the same on PERTURBED-LANG (sensitivity 0: it reads no template) and no better than its random-init row:
    ⚑ beside the ↑ and the medal, the reasons under the table and in the metrics; a model that reads the template
    and beats its random-init row keeps its ↑ and medal unflagged."""
    rows = dev_rows(200)
    flip = {"younger": "older", "older": "younger"}

    def right_in(tenths: int):
        return choose(rows, lambda i, r: gold_word(r) if (3 * i) % 10 < tenths else flip[gold_word(r)])

    seventy, half = right_in(7), right_in(5)
    same = {"original": np.stack([np.stack([seventy, seventy])]), "perturbed": np.stack([np.stack([seventy,
                                                                                                     seventy])])}
    res = tmp_path / "res"
    write_curve(res, "tiny", rows, same, zero=seventy, zeros={"perturbed": seventy}, model_id="bert-tiny")
    write_curve(res, "tiny-random", rows, same, zero=seventy, zeros={"perturbed": seventy},
                model_id="random:bert-tiny", random_init={"of": "bert-tiny", "seed": 0}, lm_head="newly_initialised")
    reader = {"original": np.stack([np.stack([right_in(9), right_in(9)])]),
              "perturbed": np.stack([np.stack([half, half])])}
    write_curve(res, "reader", rows, reader, zero=right_in(9), zeros={"perturbed": half}, model_id="bert-reader")
    write_curve(res, "reader-random", rows, {k: np.stack([np.stack([half, half])]) for k in ("original", "perturbed")},
                zero=half, zeros={"perturbed": half}, model_id="random:bert-reader",
                random_init={"of": "bert-reader", "seed": 0}, lm_head="newly_initialised")
    write_curve(res, "MLM-BASELINE", rows, {k: np.stack([np.stack([half, half])]) for k in ("original", "perturbed")},
                baseline="MLM-BASELINE", model_id="glove", lm_head=None)
    md, js = report(res, tmp_path / "out")
    zero_cell = row_of(md, "tiny").split("|")[2].strip()
    assert zero_cell.startswith("70.0 [") and zero_cell.endswith("] ↑ ⚑")
    assert row_of(md, "reader").split("|")[2].strip().endswith("] ↑")
    medals = next(line for line in md.splitlines() if line.startswith("| age "))
    header = next(line for line in md.splitlines() if line.startswith("| probe "))
    cells = dict(zip([h.strip() for h in header.split("|")], [c.strip() for c in medals.split("|")]))
    assert cells["tiny"] == "✓ ⚑" and cells["reader"] in ("✓", "✓–")
    assert "- tiny ↑: zero-shot no better than its PERTURBED-LANG zero-shot (+0.0 [+0.0, +0.0] points on 200 " \
        "paired examples): it reads no template" in md
    assert "- tiny ↑: zero-shot no better than its random-init row tiny-random (+0.0 [" in md
    assert "- tiny medal: MLP sensitivity to PERTURBED-LANG 0.0 [0.0, 0.0]: no better on the original than on " \
        "PERTURBED" in md
    assert "- tiny medal: MLP WS no better than its random-init row tiny-random" in md
    assert "- reader" not in md
    assert {f["on"] for f in js["age"]["tiny"]["flags"]} == {"↑", "medal"} and "flags" not in js["age"]["reader"]
    assert js["age"]["tiny"]["random_init_row"] == "tiny-random" and js["age"]["tiny"]["medal"] == "success"
