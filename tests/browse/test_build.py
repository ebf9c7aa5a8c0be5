"""The site the builder writes (evaluators.browse.build): its data read back as the page reads it, against the
prediction files it was built from and the project's statistics."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from scipy.stats import binomtest

from browse.toy_project import MODELS, VARIANTS, write_project
from evaluators.browse.build import build_site
from evaluators.shared.bootstrap import accuracy_statistic, bootstrap, paired_bootstrap
from probekit.errors import UsageError


def read_block(site, shard, r):
    """Run ``r``'s block of a shard's preds.bin, decoded as the page decodes it."""
    n, k = shard["n"], shard["k"]
    raw = (site / "data" / "shards" / shard["id"] / "preds.bin").read_bytes()
    block = raw[shard["runs"][r]["offset"]:shard["runs"][r]["offset"] + shard["block"]]
    pad = (n + 3) // 4 * 4
    pred = np.frombuffer(block, "<i4", n)
    margin = np.frombuffer(block, "<f4", n, 4 * n)
    correct = np.frombuffer(block, "u1", n, 8 * n)
    scores = np.frombuffer(block, "<f4", n * k, 8 * n + pad).reshape(n, k)
    return pred, margin, correct, scores


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("project")
    truth = write_project(root)
    site = root / "site"
    meta = build_site(site, data=root / "data", results=root / "results", resamples=200, seed=0)
    return root, truth, site, meta


def shard_of(meta, probe, variant, collection=None):
    found = [s for s in meta["shards"] if s["probe"] == probe and s["variant"] == variant
             and (collection is None or s["collection"] == collection)]
    assert len(found) == 1, found
    return found[0]


def test_site_json_is_what_was_returned_and_names_every_shard(built):
    root, truth, site, meta = built
    assert json.loads((site / "data" / "site.json").read_text()) == json.loads(json.dumps(meta))
    assert (site / "index.html").is_file()
    assert meta["profile"] == "smoke" and "Smoke scale" in meta["banner"]
    keys = {(s["collection"], s["probe"], s["variant"]) for s in meta["shards"]}
    assert keys == {("probes", "toy", v) for v in VARIANTS} | {("pararel", "pararel", "P17")} | \
        {("calum", "rte", "original"), ("calum", "rte", "reverse")}
    for s in meta["shards"]:
        assert (site / "data" / "shards" / s["id"] / "rows.json").is_file()


def test_every_answer_decodes_to_the_prediction_file(built):
    root, truth, site, meta = built
    for variant in VARIANTS:
        shard = shard_of(meta, "toy", variant)
        rows = json.loads((site / "data" / "shards" / shard["id"] / "rows.json").read_text())["rows"]
        labels = [r["label"] for r in shard["runs"]]
        assert [r["id"] for r in rows] == [r["id"] for r in truth["rows"][variant]]
        for model in MODELS:
            pred, margin, correct, scores = read_block(site, shard, labels.index(model))
            for i, row in enumerate(rows):
                pick, ok, sc = truth["zeroshot"][(variant, model)][row["id"]]
                assert pred[i] == pick and correct[i] == ok
                assert np.allclose(scores[i, :len(sc)], sc) and np.isnan(scores[i, len(sc):]).all()
                assert margin[i] == pytest.approx(sc[row["gold"]] - max(s for j, s in enumerate(sc) if j != row["gold"]),
                                                  abs=1e-5)
        for label, answers in ((lb, a) for (v, lb), a in truth["curve"].items() if v == variant):
            pred, margin, correct, _ = read_block(site, shard, labels.index(label))
            assert [int(p) for p in pred] == [answers[r["id"]] for r in rows]
            assert np.isnan(margin).all()


def test_accuracy_and_interval_are_the_reports_bootstrap(built):
    root, truth, site, meta = built
    shard = shard_of(meta, "toy", "original")
    for run in shard["runs"]:
        if run["label"] not in MODELS:
            continue
        c = np.array([truth["zeroshot"][("original", run["label"])][r["id"]][1] for r in truth["rows"]["original"]])
        b = bootstrap(accuracy_statistic(c), len(c), resamples=200, seed=0)
        assert run["accuracy"] == pytest.approx(c.mean()) and run["correct"] == c.sum() and run["n"] == len(c)
        assert (run["low"], run["high"]) == pytest.approx((b["low"], b["high"]))


def test_a_constant_answer_text_is_flagged_though_its_label_varies(built):
    root, truth, site, meta = built
    runs = {r["label"]: r for r in shard_of(meta, "toy", "nolang")["runs"]}
    assert runs["beta"]["constant"] is True     # always "younger", at label A or B as the choices were shuffled
    assert runs["alpha"]["constant"] is False
    assert not any(r["constant"] for r in shard_of(meta, "toy", "original")["runs"])


def test_pairs_are_the_projects_mcnemar_and_paired_bootstrap(built):
    root, truth, site, meta = built
    shard = shard_of(meta, "toy", "perturbed")
    m = len(shard["runs"])
    table = np.frombuffer((site / "data" / "shards" / shard["id"] / "pairs.bin").read_bytes(), "<f4").reshape(m, m, 8)
    labels = [r["label"] for r in shard["runs"]]
    correct = {lb: np.array([read_block(site, shard, i)[2][j] == 1 for j in range(shard["n"])])
               for i, lb in enumerate(labels)}
    for a, b in (("alpha", "beta"), ("beta", "alpha"), ("alpha", "alpha MLP N=8 seed 2")):
        i, j = labels.index(a), labels.index(b)
        x, y = correct[a], correct[b]
        counts = [(x & y).sum(), (x & ~y).sum(), (~x & y).sum(), (~x & ~y).sum()]
        assert list(table[i, j, :4]) == counts
        boot = paired_bootstrap(accuracy_statistic(x), accuracy_statistic(y), len(x), resamples=200, seed=0)
        assert table[i, j, 4:7] == pytest.approx([boot["diff"], boot["low"], boot["high"]], abs=1e-6)
        disc = counts[1] + counts[2]
        assert table[i, j, 7] == pytest.approx(binomtest(counts[1], disc, 0.5).pvalue if disc else 1.0, rel=1e-5)


def test_controls_link_to_their_base_and_calum_variants_to_each_other(built):
    root, truth, site, meta = built
    ids = {(s["probe"], s["variant"]): s["id"] for s in meta["shards"]}
    rows = {k: json.loads((site / "data" / "shards" / v / "rows.json").read_text())["rows"] for k, v in ids.items()}
    for i, row in enumerate(rows[("toy", "original")]):
        assert row["siblings"] == {ids[("toy", "perturbed")]: i, ids[("toy", "nolang")]: i}
        assert rows[("toy", "perturbed")][i]["source_id"] == row["id"]
    assert rows[("rte", "reverse")][2]["siblings"] == {ids[("rte", "original")]: 2}
    assert rows[("pararel", "P17")][0]["siblings"] == {}
    assert sorted(shard_of(meta, "toy", "original")["siblings"]) == sorted([ids[("toy", "nolang")],
                                                                           ids[("toy", "perturbed")]])


def test_open_answers_index_the_shards_vocabulary(built):
    root, truth, site, meta = built
    shard = shard_of(meta, "pararel", "P17")
    data = json.loads((site / "data" / "shards" / shard["id"] / "rows.json").read_text())
    pred, _, correct, _ = read_block(site, shard, 0)
    got = {r["id"]: (data["vocab"][p], bool(c)) for r, p, c in zip(data["rows"], pred, correct)}
    assert got == truth["pararel"]
    assert shard["baselines"] == [{"label": "majority", "value": 0.5}]


def test_the_same_inputs_give_the_same_bytes(built, tmp_path):
    root, truth, site, meta = built
    again = tmp_path / "again"
    build_site(again, data=root / "data", results=root / "results", resamples=200, seed=0)

    def digest(folder):
        return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(folder.rglob("*")) if p.is_file()}
    assert digest(again) == digest(site)


def test_a_users_folder_is_not_replaced_and_inputs_are_not_overwritten(built, tmp_path):
    root, truth, site, meta = built
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("my notes")
    with pytest.raises(UsageError, match="notes.txt"):
        build_site(mine, data=root / "data", results=root / "results")
    assert (mine / "notes.txt").read_text() == "my notes"
    with pytest.raises(UsageError, match="--results"):
        build_site(root / "results" / "zeroshot" / "site", data=root / "data", results=root / "results")
    # beside the results (the pipeline's results/browser) is fine
    build_site(root / "results" / "browser", data=root / "data", results=root / "results", resamples=50)
    assert (root / "results" / "browser" / "data" / "site.json").is_file()


def test_no_prediction_file_is_a_clear_error(tmp_path):
    (tmp_path / "results").mkdir()
    with pytest.raises(UsageError, match="no prediction file"):
        build_site(tmp_path / "site", data=tmp_path / "data", results=tmp_path / "results")


def test_versions_come_from_a_diff_json_or_its_examples(built, tmp_path):
    root, truth, site, meta = built
    diff = tmp_path / "diff.json"
    diff.write_text(json.dumps({"old": "HEAD", "new": "workspace", "totals": {},
                                "datasets": [{"config": "toy/original", "split": "dev", "added": 1, "removed": 0,
                                              "changed": 2, "unchanged": 37}],
                                "effects": [{"config": "toy/original", "split": "dev", "model": "alpha",
                                             "flips": {"right_to_wrong": 1, "wrong_to_right": 0},
                                             "flipped": [{"key": "k1", "flip": "right->wrong"}]}]}))
    out = build_site(tmp_path / "s1", data=root / "data", results=root / "results", diff=diff, resamples=20)
    v = json.loads((tmp_path / "s1" / "data" / "versions.json").read_text())
    assert out["versions"] is True and v["old"] == "HEAD"
    assert v["splits"][0]["changed"] == 2 and v["splits"][0]["effects"][0]["right_to_wrong"] == 1
    examples = tmp_path / "examples.jsonl"
    examples.write_text(json.dumps({"config": "toy/original", "split": "dev", "status": "changed", "key": "k1",
                                    "fields": ["question.stem"], "old": {}, "new": {}}) + "\n")
    build_site(tmp_path / "s2", data=root / "data", results=root / "results", diff=examples, resamples=20)
    v = json.loads((tmp_path / "s2" / "data" / "versions.json").read_text())
    assert v["splits"][0]["changed"] == 1 and v["splits"][0]["examples"][0]["key"] == "k1"
    examples.write_text("{\"config\": 1}\n")
    with pytest.raises(UsageError, match=r"examples.jsonl:1: not an example"):
        build_site(tmp_path / "s3", data=root / "data", results=root / "results", diff=examples)


def test_each_shard_says_whether_its_rows_may_be_shown_publicly(built, tmp_path):
    root, truth, site, meta = built
    assert shard_of(meta, "toy", "original")["restricted"] is None   # no source: the generator's own rows
    assert shard_of(meta, "pararel", "P17")["restricted"].startswith("no meta.json")
    assert any(r.startswith("no meta.json") for r in meta["restricted"])
    (root / "data" / "pararel" / "meta.json").write_text(json.dumps({"sources": {"pararel": {}},
                                                                     "license": "cc-by-nc-4.0"}))
    again = build_site(tmp_path / "s", data=root / "data", results=root / "results", resamples=20)
    assert "pararel" in shard_of(again, "pararel", "P17")["restricted"]
    assert shard_of(again, "pararel", "P17")["license"] == "cc-by-nc-4.0"


def test_a_diffs_json_and_examples_make_one_versions_view(built, tmp_path):
    root, truth, site, meta = built
    diff = tmp_path / "diff.json"
    diff.write_text(json.dumps({"old": "v1", "new": "v2", "datasets": [
        {"config": "toy/original", "split": "dev", "added": 0, "removed": 0, "changed": 2}]}))
    examples = tmp_path / "examples.jsonl"
    examples.write_text("".join(json.dumps({"config": "toy/original", "split": "dev", "status": "changed", "key": k,
                                            "fields": ["question.stem"], "old": {}, "new": {}}) + "\n"
                                for k in ("k1", "k2")))
    build_site(tmp_path / "s", data=root / "data", results=root / "results", diff=[diff, examples], resamples=20)
    v = json.loads((tmp_path / "s" / "data" / "versions.json").read_text())
    assert (v["old"], v["new"], len(v["splits"])) == ("v1", "v2", 1)
    assert v["splits"][0]["changed"] == 2 and [e["key"] for e in v["splits"][0]["examples"]] == ["k1", "k2"]
