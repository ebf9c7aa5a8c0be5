"""The effect of a dataset change on scores (issue 33, item 3): flips, accuracies, the paired interval and
McNemar's test from two prediction files, checked against hand counts; with a tiny masked LM, only the changed
and added rows scored and the unchanged keys' predictions reused; each bad input one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scipy.stats import binomtest

from evaluators.olmpics import rescore, zeroshot
from evaluators.shared import flips
from probekit.data.examples import make_example
from probekit.errors import UsageError
from probekit.versions.diff import diff
from probekit.versions.sides import folder_side

# Old: keys 0..19. New: keys 0..11 reworded (changed), 12..18 unchanged, 19 removed, 20 added.
CHANGED, UNCHANGED, REMOVED, ADDED = range(12), range(12, 19), 19, 20


def row(i: int, reworded: bool) -> dict:
    stem = f"the person number {i} is [MASK] ." if reworded else f"person {i} is [MASK] than the other ."
    return make_example(probe="toy", variant="original", template_id="t2" if reworded else "t1", stem=stem,
                        choices=["older", "younger"], answer="older" if i % 2 == 0 else "younger", args={"i": i})


def folder(path: Path, rows: list[dict], fmt: str = "mc_mlm") -> Path:
    path.mkdir(parents=True)
    (path / "meta.json").write_text(json.dumps({"format": fmt, "probe": "toy", "variant": "original",
                                                "splits": {"dev": {}}, "license": "apache-2.0",
                                                "definition_version": "1"}))
    (path / "dev.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def versions(tmp_path):
    """The old and new rows, and the diff of their folders."""
    old = [row(i, False) for i in range(20)]
    new = [row(i, i in CHANGED) for i in range(19)] + [row(ADDED, False)]
    a, b = folder(tmp_path / "old" / "toy", old), folder(tmp_path / "new" / "toy", new)
    result = diff(folder_side(a.parent), folder_side(b.parent))
    return old, new, result


def gold(r: dict) -> str:
    return r["answerKey"]


def other(label: str) -> str:
    return "B" if label == "A" else "A"


def write(path: Path, rows: list[dict], predicted: dict[int, str], meta: dict | None = None) -> Path:
    """A predictions.jsonl of ``rows`` (``predicted``: key i -> label) and its metrics.json."""
    path.mkdir(parents=True, exist_ok=True)
    lines = [{"id": r["id"], "scores": [0.0, 0.0], "prediction": predicted[r["args"]["i"]], "gold": gold(r),
              "correct": predicted[r["args"]["i"]] == gold(r), "rule": "mask-logit"} for r in rows]
    (path / "predictions.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (path / "metrics.json").write_text(json.dumps({"model": "m", "model_id": "org/m", "probe": "toy",
                                                   "variant": "original", "split": "dev", **(meta or {})}))
    return path / "predictions.jsonl"


def hand_predictions(old: list[dict], new: list[dict]) -> tuple[dict, dict]:
    """Old: right on keys 0..10, wrong on 11, "A" on 12..19. New: wrong on 0..7, right on 8..11, "A" on the
    unchanged 12..18 and on the added 20. By hand, on the 19 common keys: right->wrong 8 (0..7), wrong->right 1
    (11); old right 11 + 4 unchanged (12, 14, 16, 18) = 15, new right 4 + 4 = 8; removed 19 (gold B): wrong;
    added 20 (gold A): right."""
    g_old = {r["args"]["i"]: gold(r) for r in old}
    g_new = {r["args"]["i"]: gold(r) for r in new}
    p_old = {i: g_old[i] if i <= 10 else other(g_old[i]) for i in CHANGED} | {i: "A" for i in [*UNCHANGED, REMOVED]}
    p_new = {i: other(g_new[i]) if i <= 7 else g_new[i] for i in CHANGED} | {i: "A" for i in [*UNCHANGED, ADDED]}
    return p_old, p_new


def test_the_statistics_from_two_prediction_files_are_the_hand_counts(versions, tmp_path):
    old, new, result = versions
    p_old, p_new = hand_predictions(old, new)
    a, b = write(tmp_path / "p" / "old", old, p_old), write(tmp_path / "p" / "new", new, p_new)
    [r] = flips.effect_of(result, old_predictions=a, new_predictions=b)
    assert (r["config"], r["split"], r["model"], r["n_common"]) == ("toy", "dev", "m", 19)
    assert r["flips"] == {"right_to_wrong": 8, "wrong_to_right": 1, "prediction_changed": 9}
    assert r["accuracy"] == {"common_old": 15 / 19, "common_new": 8 / 19, "added": 1.0, "removed": 0.0}
    assert r["mcnemar"] == {"b": 8, "c": 1, "p_value": pytest.approx(binomtest(8, 9, 0.5).pvalue)}
    assert r["mcnemar"]["p_value"] == pytest.approx(2 * (1 + 9) / 2 ** 9)
    change = r["change"]
    assert change["diff"] == pytest.approx(-7 / 19) and change["low"] < change["diff"] < change["high"] < 0
    assert r["unchanged_identical"] == {"n": 7, "differing": 0, "differing_keys": []}
    flipped = {f["what"]: f for f in r["flipped"]}
    assert sorted(json.loads(w)["i"] for w in flipped) == [0, 1, 2, 3, 4, 5, 6, 7, 11]
    assert flipped['{"i":0}'] | {"key": None} == {
        "key": None, "what": '{"i":0}', "status": "changed", "flip": "right->wrong", "old_prediction": "older",
        "new_prediction": "younger", "gold_old": "older", "gold_new": "older"}
    assert flipped['{"i":11}']["flip"] == "wrong->right"
    assert len(r["flipped_keys"]) == 9


def test_an_unchanged_key_predicted_otherwise_is_counted(versions, tmp_path):
    old, new, result = versions
    p_old, p_new = hand_predictions(old, new)
    p_new[12] = "B"
    a, b = write(tmp_path / "p" / "old", old, p_old), write(tmp_path / "p" / "new", new, p_new)
    [r] = flips.effect_of(result, old_predictions=a, new_predictions=b)
    assert r["unchanged_identical"]["differing"] == 1
    assert r["flips"]["right_to_wrong"] == 9


# --- with a model --------------------------------------------------------------------------------------------------

@pytest.fixture
def counted(monkeypatch):
    """The ids of the rows every zero-shot scoring call receives."""
    seen: list[str] = []
    real = zeroshot.evaluate

    def evaluate(engine, examples):
        examples = list(examples)
        seen.extend(e["id"] for e in examples)
        return real(engine, examples)
    monkeypatch.setattr(zeroshot, "evaluate", evaluate)
    return seen


def on_disk(side, preds: list[dict], meta: dict):
    """``side`` with the zero-shot predictions of the model alias ``tiny`` as project files."""
    files = {"results/zeroshot/tiny/toy/original/predictions.jsonl": "".join(json.dumps(p) + "\n" for p in preds),
             "results/zeroshot/tiny/toy/original/metrics.json": json.dumps(meta)}
    side.project_file = files.get
    return side


def tiny_params(tmp_path, tiny_bert) -> Path:
    path = tmp_path / "params.yaml"
    path.write_text(f"models:\n  tiny: {tiny_bert}\n")
    return path


def test_a_model_scores_only_the_changed_and_added_rows(versions, tmp_path, tiny_bert, counted):
    old, new, result = versions
    params = tiny_params(tmp_path, tiny_bert)
    scorer = rescore.load("tiny", params=params, device="cpu")
    old_preds = scorer.score(old)
    fresh = {p["id"]: p for p in scorer.score(new)}   # every new row scored: what reuse must equal
    counted.clear()
    side = on_disk(folder_side(tmp_path / "old"), old_preds, {"model": "tiny", **scorer.settings})
    lines = []
    [r] = rescore.effect_of(result, model="tiny", params=params, device="cpu", old_side=side, log=lines.append)
    anew = {r_["id"] for i, r_ in enumerate(new) if i in CHANGED or r_["args"]["i"] == ADDED}
    assert sorted(counted) == sorted(anew) and len(counted) == 13
    assert r["scored"]["changed"] == 12 and r["scored"]["added"] == 1 and r["scored"]["reused"] == 7
    assert r["scored"]["old"] == 0 and r["scored"]["old_predictions"].startswith(
        "results/zeroshot/tiny/toy/original/predictions.jsonl (")
    assert "toy dev: scored 13 of 20: 12 changed, 1 added; reused 7" in lines
    # the reused predictions of the unchanged keys are what scoring them anew gives
    by_id = {p["id"]: p for p in old_preds}
    for i in UNCHANGED:
        assert by_id[new[i]["id"]]["prediction"] == fresh[new[i]["id"]]["prediction"]
        assert by_id[new[i]["id"]]["scores"] == pytest.approx(fresh[new[i]["id"]]["scores"], abs=1e-5)
    # the flips are those of the two sides scored in full
    right_old = {o["args"]["i"]: by_id[o["id"]]["correct"] for o in old}
    right_new = {n["args"]["i"]: fresh[n["id"]]["correct"] for n in new}
    common = [i for i in range(19)]
    b = sum(right_old[i] and not right_new[i] for i in common)
    c = sum(right_new[i] and not right_old[i] for i in common)
    assert (r["mcnemar"]["b"], r["mcnemar"]["c"]) == (b, c)
    assert r["accuracy"]["common_new"] == pytest.approx(sum(right_new[i] for i in common) / 19)
    assert r["accuracy"]["added"] == float(right_new[ADDED])
    assert r["unchanged_identical"]["differing"] == 0


def test_the_unchanged_check_scores_them_anew(versions, tmp_path, tiny_bert, counted):
    old, new, result = versions
    params = tiny_params(tmp_path, tiny_bert)
    scorer = rescore.load("tiny", params=params, device="cpu")
    side = on_disk(folder_side(tmp_path / "old"), scorer.score(old), {"model": "tiny", **scorer.settings})
    counted.clear()
    [r] = rescore.effect_of(result, model="tiny", params=params, device="cpu", old_side=side, log=lambda s: None,
                            check_unchanged=7)
    assert len(counted) == 13 + 7
    assert r["unchanged_identical"]["checked"] == 7 and r["unchanged_identical"]["differing_anew"] == 0


@pytest.mark.parametrize("where", ["none on disk", "scored otherwise"])
def test_old_predictions_that_do_not_fit_are_scored_anew(where, versions, tmp_path, tiny_bert, counted):
    old, new, result = versions
    params = tiny_params(tmp_path, tiny_bert)
    side = folder_side(tmp_path / "old")
    if where == "scored otherwise":
        scorer = rescore.load("tiny", params=params, device="cpu")
        side = on_disk(side, scorer.score(old), {"model": "tiny", **scorer.settings, "rule": "pll"})
        counted.clear()
    lines = []
    [r] = rescore.effect_of(result, model="tiny", params=params, device="cpu", old_side=side, log=lines.append)
    assert len(counted) == 20 + 13 and r["scored"]["old"] == 20 and r["scored"]["old_predictions"] is None
    assert any(("rule pll there" if where == "scored otherwise" else "scoring its 20 rows") in x for x in lines)


# --- bad input -----------------------------------------------------------------------------------------------------

def one_line(exc) -> str:
    text = str(exc.value)
    assert "\n" not in text
    return text


def test_prediction_files_of_different_models_or_datasets_are_refused(versions, tmp_path):
    old, new, result = versions
    p_old, p_new = hand_predictions(old, new)
    a = write(tmp_path / "a", old, p_old)
    b = write(tmp_path / "b", new, p_new, {"model": "other", "model_id": "org/other"})
    with pytest.raises(UsageError) as exc:
        flips.effect_of(result, old_predictions=a, new_predictions=b)
    assert one_line(exc).startswith("prediction files of different models: m/org/m (")
    b = write(tmp_path / "c", new, p_new, {"probe": "other"})
    with pytest.raises(UsageError) as exc:
        flips.effect_of(result, old_predictions=a, new_predictions=b)
    assert one_line(exc).startswith("prediction files of different datasets: toy/original/dev (")


def test_ids_that_are_not_rows_of_the_side_are_counted(versions, tmp_path):
    old, new, result = versions
    p_old, p_new = hand_predictions(old, new)
    a = write(tmp_path / "a", old, p_old)
    b = write(tmp_path / "b", new, p_new)
    text = b.read_text().replace(new[0]["id"], "x" * 32).replace(new[1]["id"], "y" * 32)
    b.write_text(text)
    with pytest.raises(UsageError) as exc:
        flips.effect_of(result, old_predictions=a, new_predictions=b)
    assert one_line(exc) == (f"{b}: 2 of 20 prediction ids are not rows of toy dev (new side, {result.new}), the "
                             f"config holding most of them")
    with pytest.raises(UsageError) as exc:   # the new file given as the old one: 12 changed + 1 added ids
        flips.effect_of(result, old_predictions=write(tmp_path / "d", new, p_new), new_predictions=a)
    assert "13 of 20 prediction ids are not rows of toy dev (old side" in one_line(exc)


def test_an_unreadable_predictions_file_names_file_and_line(versions, tmp_path):
    old, new, result = versions
    p_old, p_new = hand_predictions(old, new)
    a, b = write(tmp_path / "a", old, p_old), write(tmp_path / "b", new, p_new)
    lines = b.read_text().splitlines()
    b.write_text("\n".join([lines[0], "{not json", *lines[2:]]) + "\n")
    with pytest.raises(UsageError) as exc:
        flips.effect_of(result, old_predictions=a, new_predictions=b)
    assert one_line(exc) == f"{b}:2: not JSON (a predictions file has one JSON object per line)"
    b.write_text(json.dumps({"id": "q", "gold": "A"}) + "\n")
    with pytest.raises(UsageError) as exc:
        flips.effect_of(result, old_predictions=a, new_predictions=b)
    assert one_line(exc) == f"{b}:1: not a prediction (a JSON object with 'id' and 'prediction')"
    with pytest.raises(UsageError) as exc:
        flips.effect_of(result, old_predictions=tmp_path / "nothing.jsonl", new_predictions=b)
    assert one_line(exc).startswith(f"{tmp_path / 'nothing.jsonl'}: cannot be read (")


def test_a_model_on_a_dataset_that_is_not_mc_mlm_is_refused(tmp_path, tiny_bert):
    rows = [row(i, False) for i in range(4)]
    a = folder(tmp_path / "old" / "toy", rows, "mc_qa")
    b = folder(tmp_path / "new" / "toy", rows[:3], "mc_qa")
    result = diff(folder_side(a.parent), folder_side(b.parent))
    with pytest.raises(UsageError) as exc:
        rescore.effect_of(result, model=str(tiny_bert), device="cpu")
    assert one_line(exc) == f"--model {tiny_bert}: scores MC-MLM datasets only, and this diff holds mc_qa"
