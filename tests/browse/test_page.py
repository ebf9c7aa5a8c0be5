"""The results browser's page in Debian's chromium (Playwright), over a fake site served on 127.0.0.1: every view
loads, the URL is the state, counts equal those computed here from the fake predictions, the table scrolls 100k rows
with a bounded DOM and is keyboard-usable. The `watched` fixture fails a test on any console error, page error or
request off 127.0.0.1."""

from __future__ import annotations

import re
import time
from urllib.parse import parse_qs, urlsplit

import numpy as np
import pytest
from fake_site import crosstab, mcnemar_p, write_fake_site

PROBE = "probe=age_comparison&variant=original&split=dev"
A, B, C = "alpha-mlm", "beta-mlm", "gamma-mlm"


@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    return write_fake_site(tmp_path_factory.mktemp("site"), runs=3, rows=500)


@pytest.fixture
def site(fake, serve):
    return serve(fake.dir)


def count(page) -> int:
    text = page.get_by_test_id("row-count").inner_text()
    assert re.fullmatch(r"\d+", text), text
    return int(text)


def wait_count(page, expected: int):
    page.wait_for_function("n => document.querySelector('[data-testid=row-count]')?.textContent === String(n)",
                           arg=expected, timeout=10_000)
    return count(page)


def hash_params(page) -> tuple[str, dict]:
    h = page.evaluate("location.hash")
    route, _, query = h.partition("?")
    return route, {k: v[0] for k, v in parse_qs(query).items()}


def expected(shard, right=(), wrong=(), template=None, answer=None, q=None) -> int:
    keep = np.ones(len(shard.rows), bool)
    for m in right:
        keep &= shard.correct[m] == 1
    for m in wrong:
        keep &= shard.correct[m] == 0
    for i, row in enumerate(shard.rows):
        text = "\n".join([row["stem"], *(row["choices"] or []), row["answer"]]).lower()
        if (template and row["template"] != template) or (answer and row["answer"] != answer) or (q and q not in text):
            keep[i] = False
    return int(keep.sum())


def test_overview_has_a_cell_per_run_and_shard_and_the_banner(fake, site, watched):
    page = watched.page
    page.goto(site.url)
    cells = page.get_by_test_id("overview-cell")
    cells.first.wait_for()
    assert cells.count() == sum(len(s.meta["runs"]) for s in fake.shards.values())
    assert page.get_by_test_id("banner").inner_text() == fake.site["banner"]
    cell = page.locator(f'[data-testid=overview-cell][data-run="{B}"][data-variant="perturbed"]')
    run = next(r for r in fake.shard("age_comparison", "perturbed").meta["runs"] if r["label"] == B)
    assert cell.inner_text().startswith(f"{100 * run['accuracy']:.1f}")
    assert "⚠" in page.locator(f'[data-testid=overview-cell][data-run="{C}"]').first.inner_text()   # run 2: constant
    cell.click()
    route, params = hash_params(page)
    assert route == "#/examples" and params["models"] == B and params["variant"] == "perturbed"
    assert wait_count(page, 500) == 500
    assert page.get_by_test_id("banner").is_visible()


@pytest.mark.parametrize("query, filters", [
    (f"models={A},{B}&right={A}&wrong={B}", {"right": [A], "wrong": [B]}),
    (f"models={A},{B},{C}&wrong={A},{C}&right={B}", {"right": [B], "wrong": [A, C]}),
    (f"models={A}&template=swap&q=than%20a%201", {"template": "swap", "q": "than a 1"}),
    (f"right={B}&answer=older", {"right": [B], "answer": "older"}),
])
def test_a_url_opens_its_filters_and_counts_match_the_predictions(fake, site, watched, query, filters):
    page = watched.page
    page.goto(f"{site.url}#/examples?{PROBE}&{query}")
    shard = fake.shard("age_comparison", "original")
    want = expected(shard, **filters)
    assert 0 < want < 500
    assert wait_count(page, want) == want
    shown = page.get_by_test_id("example")
    assert 0 < shown.count() <= want


def test_open_answers_count_too(fake, site, watched):
    page = watched.page
    page.goto(f"{site.url}#/examples?probe=pararel&variant=P17&split=test&models={A},{B}&right={A}&wrong={B}")
    shard = fake.shard("pararel", "P17", "test")
    want = expected(shard, right=[A], wrong=[B])
    assert wait_count(page, want) == want
    first = page.get_by_test_id("example").first
    i = int(first.get_attribute("data-index"))
    assert shard.vocab[shard.pred[A][i]] in first.inner_text()


def test_the_controls_write_the_hash_and_back_restores(fake, site, watched):
    page = watched.page
    shard = fake.shard("age_comparison", "original")
    page.goto(f"{site.url}#/examples?{PROBE}&models={A},{B}")
    wait_count(page, 500)
    page.get_by_label(f"{A} answers").select_option("right")
    assert wait_count(page, expected(shard, right=[A]))
    assert hash_params(page)[1]["right"] == A
    page.get_by_label(f"{B} answers").select_option("wrong")
    want = expected(shard, right=[A], wrong=[B])
    assert wait_count(page, want) == want
    assert hash_params(page)[1]["wrong"] == B
    page.get_by_label("Template").select_option("paper")
    want = expected(shard, right=[A], wrong=[B], template="paper")
    assert wait_count(page, want) == want
    page.get_by_label("Text").fill("YEAR OLD PERSON IS [mask] than a 2")
    want = expected(shard, right=[A], wrong=[B], template="paper", q="year old person is [mask] than a 2")
    assert wait_count(page, want) == want
    assert hash_params(page)[1]["q"] == "YEAR OLD PERSON IS [mask] than a 2"
    page.go_back()   # the text filter replaced its entry; back undoes the template
    want = expected(shard, right=[A], wrong=[B])
    assert wait_count(page, want) == want
    assert "template" not in hash_params(page)[1]
    page.reload()
    assert wait_count(page, want) == want


def test_models_picked_in_the_ui_are_fetched_by_range_alone(fake, serve, watched):
    site = serve(fake.dir)
    page = watched.page
    page.goto(f"{site.url}#/examples?{PROBE}&models={B}")
    wait_count(page, 500)
    page.locator("details.models summary").click()
    page.get_by_role("checkbox", name=C).check()
    assert hash_params(page)[1]["models"] == f"{B},{C}"
    page.get_by_label(f"{C} answers").select_option("wrong")
    want = expected(fake.shard("age_comparison", "original"), wrong=[C])
    assert wait_count(page, want) == want
    sid = fake.shard("age_comparison", "original").meta["id"]
    preds = [r for p, r in site.log if p.endswith(f"{sid}/preds.bin")]
    meta = fake.shard("age_comparison", "original").meta
    runs = {r["label"]: r for r in meta["runs"]}
    assert sorted(preds) == sorted(f"bytes={runs[m]['offset']}-{runs[m]['offset'] + meta['block'] - 1}" for m in (B, C))


def test_a_server_without_ranges_still_gives_the_same_counts(fake, serve, watched):
    site = serve(fake.dir, ranges=False)
    page = watched.page
    page.goto(f"{site.url}#/examples?{PROBE}&models={A},{B},{C}&right={C}&wrong={A}")
    want = expected(fake.shard("age_comparison", "original"), right=[C], wrong=[A])
    assert wait_count(page, want) == want


@pytest.mark.parametrize("direction", ["asc", "desc"])
def test_sort_by_margin(fake, site, watched, direction):
    page = watched.page
    shard = fake.shard("age_comparison", "original")
    page.goto(f"{site.url}#/examples?{PROBE}&models={A},{B}&right={A}")
    wait_count(page, expected(shard, right=[A]))
    page.get_by_label("Order").select_option(f"margin:{B}:{direction}")
    assert hash_params(page)[1]["sort"] == f"margin:{B}:{direction}"
    page.wait_for_function("() => document.querySelector('[data-testid=example]')?.dataset.pos === '0'")
    keep = np.flatnonzero(shard.correct[A] == 1)
    margin = shard.margin[B][keep].astype(float)
    key = np.where(np.isnan(margin), np.inf, margin if direction == "asc" else -margin)
    order = keep[np.lexsort((keep, key))]
    shown = [int(x) for x in page.get_by_test_id("example").evaluate_all("rs => rs.map(r => r.dataset.index)")]
    assert len(shown) > 5
    assert shown == list(order[:len(shown)])


def test_virtual_scroll_keeps_the_dom_small_at_100k_rows(tmp_path, serve, watched):
    big = write_fake_site(tmp_path, runs=2, rows=100_000, variants=("original",), pararel=False, versions=False)
    site = serve(big.dir)
    page = watched.page
    started = time.monotonic()
    page.goto(f"{site.url}#/examples?{PROBE}&models={A},{B}")
    assert wait_count(page, 100_000) == 100_000
    rows = page.get_by_test_id("example")
    assert 5 < rows.count() <= 60
    box = page.locator(".vt")
    box.evaluate("el => { el.scrollTop = el.scrollHeight; }")
    page.wait_for_function("() => [...document.querySelectorAll('[data-testid=example]')]"
                           ".some(r => r.dataset.index === '99999')")
    assert rows.count() <= 60
    box.evaluate("el => { el.scrollTop = el.scrollHeight / 2; }")
    page.wait_for_function("() => { const i = +document.querySelector('[data-testid=example]').dataset.index;"
                           " return i > 40000 && i < 60000; }")
    assert rows.count() <= 60
    want = expected(big.shard("age_comparison", "original"), right=[B], wrong=[A])
    page.get_by_label(f"{B} answers").select_option("right")
    page.get_by_label(f"{A} answers").select_option("wrong")
    assert wait_count(page, want) == want
    assert time.monotonic() - started < 30


def test_keyboard_moves_the_current_row_and_enter_opens_it(fake, site, watched):
    page = watched.page
    page.goto(f"{site.url}#/examples?{PROBE}&models={A},{B}")
    wait_count(page, 500)
    body = page.locator("tbody[tabindex='0']")
    body.focus()
    selected = page.locator("[data-testid=example][aria-selected=true]")
    assert selected.get_attribute("data-pos") == "0"
    for _ in range(40):   # past the first screen: the table scrolls with it
        page.keyboard.press("ArrowDown")
    assert selected.get_attribute("data-pos") == "40"
    assert selected.is_visible()
    page.keyboard.press("ArrowUp")
    assert selected.get_attribute("data-pos") == "39"
    assert page.locator("[aria-selected=true]").count() == 1
    index = int(selected.get_attribute("data-index"))
    page.keyboard.press("Enter")
    page.wait_for_function("() => location.hash.startsWith('#/example?')")
    assert hash_params(page)[1]["id"] == fake.shard("age_comparison", "original").rows[index]["id"]
    page.get_by_test_id("sibling").first.wait_for()


def test_one_example_shows_scores_siblings_and_version(fake, site, watched):
    page = watched.page
    shard = fake.shard("age_comparison", "perturbed")
    row = shard.rows[7]
    page.goto(f"{site.url}#/example?probe=age_comparison&variant=perturbed&split=dev&id={row['id']}")
    siblings = page.get_by_test_id("sibling")
    siblings.first.wait_for()
    assert siblings.count() == 2
    for sid, at in row["siblings"].items():
        other = fake.shards[sid]
        block = page.locator(f'[data-testid=sibling][data-variant="{other.meta["variant"]}"]')
        assert other.rows[at]["stem"] in block.inner_text()
        assert other.rows[at]["source_id"] in (None, row["source_id"])
    assert row["source_id"] == fake.shard("age_comparison", "original").rows[row["siblings"]["s0000"]]["id"]
    scores = page.locator("table.scores")
    for m in (A, B, C):   # every model's score on every choice
        for c in range(len(row["choices"])):
            assert f"{shard.scores[m][7, c]:.3f}" in scores.inner_text()
    text = page.locator("main").inner_text()
    assert shard.meta["fingerprint"] in text and row["template"] in text


def test_pararel_example_lists_its_group(fake, site, watched):
    page = watched.page
    shard = fake.shard("pararel", "P17", "test")
    row = shard.rows[5]
    page.goto(f"{site.url}#/example?probe=pararel&variant=P17&split=test&id={row['id']}")
    heading = page.get_by_role("heading", name=re.compile(f"Group {row['group']}"))
    members = sum(r["group"] == row["group"] for r in shard.rows) - 1
    assert f"{members} other rows" in heading.inner_text()


def test_compare_counts_and_p_equal_the_crosstab_of_the_predictions(fake, site, watched):
    page = watched.page
    shard = fake.shard("age_comparison", "original")
    page.goto(f"{site.url}#/compare?{PROBE}&a={B}&b={A}")
    want = crosstab(shard.correct[B], shard.correct[A])
    page.get_by_test_id("crosstab-cell").first.wait_for()
    for cell, n in want.items():
        assert page.locator(f'[data-testid=crosstab-cell][data-cell="{cell}"]').inner_text().split()[0] == str(n)
    p = mcnemar_p(want["RW"], want["WR"])
    assert float(page.get_by_test_id("mcnemar-p").inner_text()) == pytest.approx(p, rel=1e-2)
    page.locator('[data-testid=crosstab-cell][data-cell="WR"]').click()
    assert hash_params(page)[1]["cell"] == "WR"
    assert wait_count(page, want["WR"]) == want["WR"]
    first = int(page.get_by_test_id("example").first.get_attribute("data-index"))
    assert shard.correct[B][first] == 0 and shard.correct[A][first] == 1
    page.get_by_label("Model B").select_option(C)
    want = crosstab(shard.correct[B], shard.correct[C])
    assert wait_count(page, want["WR"]) == want["WR"]


def test_versions_view(fake, site, watched):
    page = watched.page
    page.goto(f"{site.url}#/versions")
    split = page.get_by_test_id("version-split")
    split.first.wait_for()
    assert split.count() == 1
    assert "1 added" in split.inner_text() and "4 changed" in split.inner_text()
    assert page.get_by_test_id("banner").is_visible()


def test_versions_show_old_and_new_text_collapse_unchanged_splits_and_link_examples(fake, site, watched):
    page = watched.page
    shard = fake.shard("age_comparison", "perturbed")
    page.goto(f"{site.url}#/versions")
    split = page.get_by_test_id("version-split")
    split.first.wait_for()
    assert split.count() == 1 and "age_comparison-perturbed · dev" in split.inner_text()
    # the diff names the field "stem"; the rows hold it under question.stem
    first = split.locator("tbody tr").first
    assert first.locator("td.old").inner_text() == shard.rows[0]["stem"].replace("person", "man")
    assert first.locator("td.new").inner_text() == shard.rows[0]["stem"]
    reordered = split.locator("tbody tr", has_text="choices reordered")
    r = shard.rows[4]
    assert reordered.locator("td.old").inner_text() == " | ".join(r["choices"][::-1])
    assert reordered.locator("td.new").inner_text() == " | ".join(r["choices"])
    answer = split.locator("tbody tr", has=page.locator("td", has_text=re.compile("^answer$")))
    assert answer.locator("td.old").inner_text() == answer.locator("td.new").inner_text() == r["answer"]
    added = split.locator("tbody tr.added")
    assert added.locator("td.new").inner_text() == shard.rows[3]["stem"]
    unchanged = page.get_by_test_id("versions-unchanged")
    assert "age_comparison · dev" in unchanged.inner_text() and "age_comparison-nolang · dev" in unchanged.inner_text()
    # a key opens its example (by the new row's id, not the diff's key)
    split.get_by_role("link", name="key001").click()
    page.wait_for_function("() => location.hash.startsWith('#/example?')")
    route, params = hash_params(page)
    assert params["id"] == shard.rows[1]["id"] and params["variant"] == "perturbed"
    assert page.locator("p.stem-big").inner_text() == shard.rows[1]["stem"]


@pytest.mark.parametrize("width", [1200, 760])
def test_each_sibling_cards_predictions_fit_inside_the_card(tmp_path, serve, chromium, width):
    long = write_fake_site(tmp_path, rows=20, pararel=False, versions=False,
                           labels=["minilm", "mlm-baseline MLP N=125 seed 1"])
    site = serve(long.dir)
    context = chromium.new_context(viewport={"width": width, "height": 800})
    try:
        page = context.new_page()
        row = long.shard("age_comparison", "original").rows[2]
        page.goto(f"{site.url}#/example?{PROBE}&id={row['id']}&models=minilm,mlm-baseline%20MLP%20N%3D125%20seed%201")
        page.get_by_test_id("sibling").first.wait_for()
        cards = page.locator(".side .card")
        assert cards.count() == 3
        for card in cards.all():
            box, table = card.bounding_box(), card.locator("table").bounding_box()
            assert box["x"] <= table["x"] and table["x"] + table["width"] <= box["x"] + box["width"] + 0.5, (box, table)
            name = card.locator("th", has_text="mlm-baseline")
            assert name.get_attribute("title") == "mlm-baseline MLP N=125 seed 1"
    finally:
        context.close()


@pytest.mark.parametrize("hash_, words", [
    ("#/examples?probe=nope&variant=original&split=dev", "nope"),
    (f"#/examples?{PROBE}&models={A},nobody", "nobody"),
    ("#/example?probe=age_comparison&variant=original&split=dev&id=missing", "missing"),
    ("#/elsewhere", "elsewhere"),
])
def test_a_bad_url_is_a_visible_message(site, watched, hash_, words):
    page = watched.page
    page.goto(site.url + hash_)
    error = page.get_by_test_id("error")
    error.wait_for()
    assert words in error.inner_text()


def test_a_missing_data_file_is_a_visible_message(tmp_path, serve, watched):
    broken = write_fake_site(tmp_path, runs=2, rows=20, pararel=False)
    (broken.dir / "data" / "shards" / "s0001" / "rows.json").write_text("{not json")
    site = serve(broken.dir)
    page = watched.page
    page.goto(f"{site.url}#/examples?probe=age_comparison&variant=perturbed&split=dev")
    page.wait_for_function("() => document.querySelector('[data-testid=error]')?.textContent.includes('rows.json')",
                           timeout=15_000)


def test_every_view_makes_only_local_requests(fake, site, watched):
    page = watched.page
    for h in ["#/", f"#/examples?{PROBE}", f"#/compare?{PROBE}&cell=RR", "#/versions",
              f"#/example?{PROBE}&id={fake.shard('age_comparison', 'original').rows[0]['id']}"]:
        page.goto(site.url + h)
        page.wait_for_function("() => !document.querySelector('main').hasAttribute('aria-busy')")
    assert watched.requests and all(urlsplit(u).hostname == "127.0.0.1" for u in watched.requests)
