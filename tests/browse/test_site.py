"""The results browser end to end: a project's prediction files built into a site by the real builder
(`probes browse build`), served by the real server (`probes browse serve`'s `serving`) and read in Chromium: counts
for chosen filters against the prediction files, an example beside its controls, two models compared, the overview's
numbers, keyboard use; no console error, no request off 127.0.0.1 (the `watched` fixture)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from scipy.stats import binomtest

from browse.toy_project import MODELS, write_project
from evaluators.browse.serve import serving
from probes.main import main


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("project")
    truth = write_project(root, n=60)
    import os

    here = os.getcwd()
    os.chdir(root)
    try:   # the command, as the pipeline's stage runs it
        assert main(["browse", "build", "--out", "results/browser"]) == 0
    finally:
        os.chdir(here)
    with serving(root / "results" / "browser", port=0) as url:
        yield root, truth, url.rstrip("/") + "/"


def right(truth, variant, model):
    return {i: a[1] for i, a in truth["zeroshot"][(variant, model)].items()}


def wait_count(page) -> int:
    page.wait_for_function("() => /^\\d+$/.test(document.querySelector('[data-testid=row-count]')?.textContent"
                           " ?? '')", timeout=15_000)
    return int(page.get_by_test_id("row-count").inner_text())


@pytest.mark.parametrize("variant,right_,wrong_", [("original", ["alpha"], ["beta"]),
                                                  ("perturbed", ["alpha", "beta"], []),
                                                  ("nolang", [], ["alpha", "beta"]),
                                                  ("original", [], [])])
def test_counts_of_the_filters_are_the_prediction_files(project, watched, variant, right_, wrong_):
    root, truth, url = project
    page = watched.page
    query = "&".join(f"{k}={','.join(v)}" for k, v in (("right", right_), ("wrong", wrong_)) if v)
    page.goto(f"{url}#/examples?probe=toy&variant={variant}&split=dev&models=alpha,beta&{query}")
    r = {m: right(truth, variant, m) for m in MODELS}
    ids = [row["id"] for row in truth["rows"][variant]]
    expected = sum(all(r[m][i] for m in right_) and not any(r[m][i] for m in wrong_) for i in ids)
    assert wait_count(page) == expected
    shown = page.get_by_test_id("example")
    shown.first.wait_for() if expected else None
    assert 0 < shown.count() <= expected if expected else shown.count() == 0


def test_a_template_and_text_filter_count_too(project, watched):
    root, truth, url = project
    page = watched.page
    page.goto(f"{url}#/examples?probe=toy&variant=original&split=dev&models=alpha&right=alpha&template=even")
    r = right(truth, "original", "alpha")
    rows = truth["rows"]["original"]
    assert wait_count(page) == sum(r[x["id"]] and x["template_id"] == "even" for x in rows)
    page.goto(f"{url}#/examples?probe=toy&variant=original&split=dev&models=alpha&q=25%20year")
    assert wait_count(page) == sum("25 year" in x["question"]["stem"] for x in rows)


def test_one_example_stands_beside_its_controls_with_each_models_answer(project, watched):
    root, truth, url = project
    page = watched.page
    base = truth["rows"]["original"][3]
    page.goto(f"{url}#/example?probe=toy&variant=original&split=dev&id={base['id']}&models=alpha,beta")
    siblings = page.get_by_test_id("sibling")
    siblings.first.wait_for()
    assert siblings.count() == 2
    text = page.locator("main").inner_text()
    for variant in ("perturbed", "nolang"):
        control = truth["rows"][variant][3]
        assert control["source_id"] == base["id"]
        assert control["question"]["stem"] in text
    for model in MODELS:   # the scores of every choice
        for s in truth["zeroshot"][("original", model)][base["id"]][2]:
            assert f"{s:.3f}" in text
    assert "fp-original" in text and "3" in text   # fingerprint and generator version


def test_two_models_compared_as_the_project_tests_them(project, watched):
    root, truth, url = project
    page = watched.page
    page.goto(f"{url}#/compare?probe=toy&variant=perturbed&split=dev&a=alpha&b=beta")
    a, b = right(truth, "perturbed", "alpha"), right(truth, "perturbed", "beta")
    ids = list(a)
    cells = {"RR": sum(a[i] and b[i] for i in ids), "RW": sum(a[i] and not b[i] for i in ids),
             "WR": sum(not a[i] and b[i] for i in ids), "WW": sum(not a[i] and not b[i] for i in ids)}
    page.get_by_test_id("crosstab-cell").first.wait_for()
    for cell, n in cells.items():
        text = page.locator(f"[data-testid=crosstab-cell][data-cell={cell}]").inner_text()
        assert int(re.match(r"\d+", text.strip()).group()) == n
    p = binomtest(cells["RW"], cells["RW"] + cells["WR"], 0.5).pvalue
    shown = page.get_by_test_id("mcnemar-p").inner_text()
    assert float(re.search(r"[0-9.]+(e-?\d+)?", shown).group()) == pytest.approx(p, rel=0.01, abs=5e-4)
    page.locator("[data-testid=crosstab-cell][data-cell=RW]").click()
    page.wait_for_function("() => location.hash.includes('cell=RW')")
    assert wait_count(page) == cells["RW"]


def test_the_overview_is_the_site_numbers_and_links_to_examples(project, watched):
    root, truth, url = project
    page = watched.page
    page.goto(url)
    cells = page.get_by_test_id("overview-cell")
    cells.first.wait_for()
    assert page.get_by_test_id("banner").is_visible()
    site = json.loads((root / "results" / "browser" / "data" / "site.json").read_text())
    shard = next(s for s in site["shards"] if s["probe"] == "toy" and s["variant"] == "nolang")
    beta = next(r for r in shard["runs"] if r["label"] == "beta")
    assert beta["constant"] and beta["accuracy"] == pytest.approx(np.mean(list(right(truth, "nolang", "beta")
                                                                                     .values())))
    cell = page.locator('[data-testid=overview-cell][data-run="beta"][data-probe="toy"][data-variant="nolang"]')
    assert f"{100 * beta['accuracy']:.1f}" in cell.inner_text() and "⚠" in cell.inner_text()
    cell.click()
    page.wait_for_function("() => location.hash.startsWith('#/examples')")
    assert wait_count(page) == len(truth["rows"]["nolang"])


def test_the_table_is_usable_from_the_keyboard(project, watched):
    root, truth, url = project
    page = watched.page
    page.goto(f"{url}#/examples?probe=toy&variant=original&split=dev&models=alpha,beta")
    wait_count(page)
    body = page.locator("[data-testid=example]").first
    body.wait_for()
    page.locator("tbody[tabindex='0']").focus()   # the first row becomes current
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowUp")
    selected = page.locator("[data-testid=example][aria-selected=true]")
    assert selected.count() == 1 and selected.get_attribute("data-pos") == "1"
    page.keyboard.press("Enter")
    page.wait_for_function("() => location.hash.startsWith('#/example?')")
    assert f"id={truth['rows']['original'][1]['id']}" in page.evaluate("location.hash")
