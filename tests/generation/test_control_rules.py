"""The controls' rules (oLMpics §3): NO-LANG keeps the arguments of the task by one rule in every probe (the slot
fillers, a phrase filler reduced to the words that name it, the template words declared ``nolang``), and refuses
a build where it lost a token the answer depends on; PERTURBED-LANG's draws follow the example's key, so
rewording a template changes only the words it changes."""

from __future__ import annotations

import copy
import re
from collections import defaultdict
from pathlib import Path

import pandas as pd
import pytest
import yaml

from generators.shared import registry as generators
from generators.shared.build import build_probe
from probekit.data import keys
from probekit.data.examples import answer_text
from probekit.params import ParamsFile, probe_section
from probekit.probes import controls
from probekit.probes.dataset import write_probe
from probekit.probes.spec import load_probe_spec
from probekit.probes.templates import MASK, TemplateError

from helpers import MIRROR

RELEASE = {s: str(MIRROR / "olmpics" / f"coffee_cats_quantifiers_{s}.jsonl") for s in ("train", "dev")}
AGE = {"seed": 13, "mode": "sample", "size": {"train": 60, "dev": 200},
       "values": {"ages": {"train": [43, 120], "dev": [15, 38]}, "years": {"train": [1830, 1919], "dev": [1920, 2000]}}}


def always_never(path: Path | None = None):
    """ALWAYS-NEVER from the release (its original, nolang and perturbed variants), from the shipped YAML or the
    one at ``path``."""
    params = ParamsFile(Path("t.yaml"), {"always_never": {"seed": 13, "release": RELEASE}})
    if path is None:
        return build_probe("always_never", params)
    generator = generators.get("always_never")
    spec = load_probe_spec(path, outcomes=generator.outcomes, options=generator.options)
    section = probe_section(params, spec, generator.params, "always_never")
    base = generator.fn(spec, spec.variants["original"], section, {})
    variant = spec.variants["nolang"]
    rows = controls.apply(base, controls.no_lang(spec, variant, 13))
    controls.check_no_lang(spec, variant, base, rows)
    return rows


def yaml_copy(probe: str, tmp_path: Path, change) -> Path:
    raw = yaml.safe_load(generators.get(probe).template_path.read_text(encoding="utf-8"))
    change(raw)
    path = tmp_path / "probe.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


# --- NO-LANG: one rule ----------------------------------------------------------------------------------


def test_always_never_nolang_keeps_the_word_that_names_the_relation(tmp_path):
    """`original` mixes seven templates, and one (x, y) has different golds under two of them ("A calf is [MASK]
    larger / smaller than a dog ."): NO-LANG keeps the relation's word, so no two of its inputs stand for base rows
    with different answers (the NO-LANG that kept the slots alone had 17 such inputs). The card says so."""
    built = always_never()
    card = (write_probe(tmp_path / "an", built, generator_version="2") / "nolang" / "README.md").read_text()
    assert "the template's `larger` (its relation) are kept, `{x} [MASK] larger {y}`" in card
    base = {r["id"]: r for rows in built.variants["original"].values() for r in rows}
    answers = defaultdict(set)
    for rows in built.variants["nolang"].values():
        for r in rows:
            o = base[r["source_id"]]
            answers[r["question"]["stem"]].add((answer_text(o), o["question"]["stem"]))
            kept = {"has_part": "has", "dish": "contains", "dish_some": "contains some", "larger": "larger",
                    "smaller": "smaller", "diet": "diet", "placed": "placed"}[o["template_id"]]
            x, y = o["args"]["x"], o["args"]["y"]
            expected = f"{x} {MASK} {y} {kept}" if o["template_id"] == "diet" else f"{x} {MASK} {kept} {y}"
            assert r["question"]["stem"] == expected
    lost = {stem: found for stem, found in answers.items()
            if len({a for a, _ in found}) > 1 and len({s for _, s in found}) > 1}
    assert not lost, list(lost.items())[:3]


def test_nolang_that_drops_an_argument_is_refused(tmp_path):
    """Without the `nolang` words ("calf [MASK] dog" for both "larger" and "smaller") the build is refused,
    naming the file, an input and its two base rows."""
    def drop(raw):
        for t in raw["templates"]:
            t.pop("nolang", None)

    with pytest.raises(TemplateError) as err:
        always_never(yaml_copy("always_never", tmp_path, drop))
    message = str(err.value)
    assert str(tmp_path / "probe.yaml") in message and "variant 'nolang' (NO-LANG of 'original')" in message
    assert "17 NO-LANG input(s)" in message and "dropped a token necessary for computing the output" in message

    def drop_some(raw):   # "some" tells dish_some from dish: 3 (x, y) are answered apart with and without it
        next(t for t in raw["templates"] if t["id"] == "dish_some")["nolang"] = ["contains"]

    with pytest.raises(TemplateError, match=r"3 NO-LANG input\(s\).*'beef \[MASK\] contains fish'"):
        always_never(yaml_copy("always_never", tmp_path, drop_some))


def test_nolang_keeps_only_the_slot_fillers_where_the_templates_agree():
    """AGE-COMPARISON (one template) keeps the paper's "24 [MASK] 55": "than me in age" is dropped although the
    answer depends on it, as it is the same in every row."""
    generator = generators.get("age_comparison")
    spec = generator.probe_spec()
    assert all(not t.nolang for t in spec.templates.values())
    assert controls.nolang_text(spec.templates["paper"]) == "{age1} [MASK] {age2}"


def test_property_conjunction_nolang_keeps_the_predicates_word():
    """A {p} slot's question phrase is reduced to the words that name the predicate: "what is usually located at
    toy store and usually used for fun" reads "located toy store used fun" (it kept "is usually located at toy store
    usually used for fun", almost all of the question)."""
    edges = pd.DataFrame([("AtLocation", "toy", "toy store"), ("UsedFor", "toy", "fun"), ("AtLocation", "cashier",
                           "toy store"), ("UsedFor", "ball", "fun"), ("RelatedTo", "kite", "wind"), ("HasA", "kite",
                           "tail"), ("RelatedTo", "sail", "wind"), ("HasA", "dog", "tail")],
                         columns=["relation", "head", "tail"]).assign(weight=1.0, source="hand")
    section = {"seed": 1, "size": {"train": 50, "dev": 50}, "min_zipf": 0, "dev_share": 0.0,
               "variants": ["original", "nolang"]}
    built = build_probe("property_conjunction", ParamsFile(Path("t.yaml"), {"property_conjunction": section}),
                        tables={"conceptnet": {"edges": edges}})
    spec = built.spec
    words = spec.nolang_fillers["p1"]
    originals = {r["id"]: r for r in built.variants["original"]["train"]}
    nolang = built.variants["nolang"]["train"]
    assert nolang and len(nolang) == len(originals)
    for r in nolang:
        a = originals[r["source_id"]]["args"]
        assert r["question"]["stem"] == f"{words[a['p1']]} {a['o1']} {words[a['p2']]} {a['o2']}"
        assert r["question"]["choices"] == originals[r["source_id"]]["question"]["choices"]
    assert {r["question"]["stem"] for r in nolang} & {"located toy store used fun", "used fun located toy store"}
    assert {r["question"]["stem"] for r in nolang} & {"related wind has tail", "has tail related wind"}
    phrases = set(spec.params["phrases"].values())
    assert set(words) == phrases and spec.nolang_fillers["p2"] == words   # every phrase of the defaults


def test_nolang_fillers_are_checked(tmp_path):
    def words(change):
        def edit(raw):
            change(raw["controls"]["nolang_fillers"])
        return yaml_copy("property_conjunction", tmp_path, edit)

    with pytest.raises(TemplateError, match=r"nolang_fillers.p1: 'at located' is not words of the phrase "
                                            r"'is usually located at', in its order"):
        load_probe_spec(words(lambda f: f["p1"].update({"is usually located at": "at located"})))
    with pytest.raises(TemplateError, match=r"nolang_fillers.p1: two phrases keep 'related'"):
        load_probe_spec(words(lambda f: f["p1"].update({"is related to": "related", "is related to it": "related"})))
    with pytest.raises(TemplateError, match=r"nolang_fillers: 'p3' is no slot of a template"):
        load_probe_spec(words(lambda f: f.update({"p3": {"has": "has"}})))
    spec = load_probe_spec(words(lambda f: f["p1"].pop("is related to")))
    perturb = controls.no_lang(spec, spec.variants["nolang"], 1)
    row = {"template_id": "and", "args": {"p1": "is related to", "o1": "a", "p2": "has", "o2": "b"}}
    with pytest.raises(TemplateError, match=r"probe.yaml: controls.nolang_fillers.p1: no words for the filler "
                                            r"'is related to'"):
        perturb(row)


@pytest.mark.parametrize("words, message", [
    (["cheaper"], "nolang word 'cheaper' does not occur in text"),
    ("larger", "nolang must be a list of words of the text"),
    (["larger", "larger"], "nolang names a word twice"),
])
def test_nolang_words_are_words_of_the_template(tmp_path, words, message):
    def edit(raw):
        next(t for t in raw["templates"] if t["id"] == "larger")["nolang"] = words

    with pytest.raises(TemplateError, match=re.escape(f"template 'larger': {message}")):
        load_probe_spec(yaml_copy("always_never", tmp_path, edit))


# --- PERTURBED-LANG: draws follow the example's key ------------------------------------------------------


def perturbed_by_key(path: Path) -> dict[str, str]:
    """Each perturbed dev row's stem by its key (what ``probes diff`` matches examples on)."""
    generator = generators.get("age_comparison")
    spec = load_probe_spec(path, outcomes=generator.outcomes, options=generator.options)
    params = probe_section(ParamsFile(Path("t.yaml"), {"age_comparison": copy.deepcopy(AGE)}), spec,
                           generator.params, "age_comparison")
    base = generator.fn(spec, spec.variants["original"], params, {})
    rows = controls.apply(base, controls.CONTROLS["perturbed"].perturbation(spec, spec.variants["perturbed"], 13))
    frame = keys.frame(spec.format, rows["dev"])
    return dict(zip(frame["key"], frame["stem"]))


def test_rewording_a_template_keeps_the_perturbed_draws(tmp_path):
    """A reworded template ("person" -> "human") changes only the words it changes: each example's nonsense words
    stay (they were drawn with the row id, a hash of its text, so every row's words changed)."""
    for name in "abc":
        (tmp_path / name).mkdir()
    before = perturbed_by_key(yaml_copy("age_comparison", tmp_path / "a", lambda raw: None))

    def reword(raw):
        paper = next(t for t in raw["templates"] if t["id"] == "paper")
        paper["text"] = paper["text"].replace("person", "human")

    after = perturbed_by_key(yaml_copy("age_comparison", tmp_path / "b", reword))
    assert set(after) == set(before) and len(after) == 200
    assert after == {key: stem.replace("person", "human") for key, stem in before.items()}

    def add_word(raw):   # one more key word: the draws of the others stay
        next(t for t in raw["templates"] if t["id"] == "paper")["perturb"] = ["person", "age", "than"]

    more = perturbed_by_key(yaml_copy("age_comparison", tmp_path / "c", add_word))
    shape = re.compile(r"A \d+ year old \w+ is \[MASK\] (\w+) me in (\w+), If I am a \d+ year old \w+\.")
    assert {k: shape.fullmatch(s).groups() for k, s in more.items()} == \
        {k: shape.fullmatch(s).groups() for k, s in before.items()}
