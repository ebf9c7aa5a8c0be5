"""The template engine: validation errors name file and template; filling is exact (hypothesis)."""

from __future__ import annotations

import string
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from probekit.probes.spec import load_probe_spec
from probekit.probes.templates import FORMATS, MASK, TemplateError, parse_template

GOOD = {"id": "t1", "text": "A {age1} year old is [MASK] than a {age2} year old.", "slots": ["age1", "age2"],
        "answers": {"less": "younger", "greater": "older"}, "perturb": ["than"]}


def write_spec(tmp_path: Path, templates: list[dict], **extra) -> Path:
    spec = {"probe": "age_comparison", "version": 1, "format": "mc_mlm", "templates": templates,
            "variants": {"original": {"template": templates[0]["id"], "values": "ages"}}, **extra}
    path = tmp_path / "probe.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


@pytest.mark.parametrize("change, message", [
    ({"text": "A {age1} year old is [MASK] than a {age3} year old."}, "unknown slot(s) ['age3']"),
    ({"text": "A {age1} year old is [MASK] than me."}, "declared slot(s) ['age2'] never appear"),
    ({"text": "A {age1} year old is older than a {age2} year old."}, "a mc_mlm text must contain exactly one [MASK], found 0"),
    ({"text": "A {age1} [MASK] is [MASK] than a {age2}."}, "exactly one [MASK], found 2"),
    ({"answers": {}}, "'answers' must be a non-empty mapping"),
    ({"answers": {"less": "older", "greater": "older"}}, "answer words must be distinct"),
    ({"perturb": ["age"]}, "perturb word 'age' does not occur"),
    ({"text": "A {age1} year old is [MASK] than a {age2 year old."}, "malformed slot"),
])
def test_invalid_template_names_file_and_template(tmp_path, change, message):
    path = write_spec(tmp_path, [{**GOOD, **change}])
    with pytest.raises(TemplateError) as err:
        load_probe_spec(path)
    assert str(path) in str(err.value)
    assert "template 't1'" in str(err.value)
    assert message in str(err.value)


def test_duplicate_template_id(tmp_path):
    path = write_spec(tmp_path, [GOOD, dict(GOOD)])
    with pytest.raises(TemplateError, match=r"template 't1': duplicate id"):
        load_probe_spec(path)


def test_variant_must_name_a_template(tmp_path):
    path = write_spec(tmp_path, [GOOD])
    raw = yaml.safe_load(path.read_text())
    raw["variants"]["odd"] = {"template": "nope", "values": "ages"}
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(TemplateError, match=r"variant 'odd'"):
        load_probe_spec(path)


def test_nolang_answers_must_cover_answer_words(tmp_path):
    path = write_spec(tmp_path, [GOOD], controls={"nolang_answers": {"older": "blah"}})
    with pytest.raises(TemplateError, match=r"nolang_answers must map exactly the closed answer words"):
        load_probe_spec(path)


def test_mc_qa_templates_have_no_mask_and_open_choices(tmp_path):
    question = {"id": "q", "text": "what is usually used for {use} and is located at {place}?", "slots": ["use", "place"]}
    spec = load_probe_spec(write_spec(tmp_path, [question], format="mc_qa"))
    assert spec.format == "mc_qa" and spec.templates["q"].answers == {}
    with pytest.raises(TemplateError, match=r"template 'q': a mc_qa text must contain no \[MASK\], found 1"):
        load_probe_spec(write_spec(tmp_path, [{**question, "text": question["text"] + " [MASK]"}], format="mc_qa"))
    with pytest.raises(TemplateError, match=r"format must be one of \['mc_mlm', 'mc_qa'\], got 'cloze'"):
        load_probe_spec(write_spec(tmp_path, [GOOD], format="cloze"))


def test_fill_refuses_missing_value():
    template = parse_template(GOOD, source="x.yaml")
    with pytest.raises(TemplateError, match=r"x.yaml: template 't1': unfilled slot\(s\) \['age2'\]"):
        template.fill({"age1": 3})


def test_shipped_probe_files_are_valid():
    from generators.shared import registry as generators

    for probe in generators.available():
        if generators.get(probe).format not in FORMATS:  # ParaRel, CALUM: their own specs and tests
            continue
        spec = load_probe_spec(generators.get(probe).template_path)
        assert spec.probe == probe
        assert "original" in spec.variants


names = st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=6)
words = st.text(alphabet=string.ascii_letters + " ,.'", min_size=0, max_size=12).filter(
    lambda w: MASK not in w)
values = st.one_of(st.integers(-10**6, 10**6), st.text(alphabet=string.printable, max_size=10))


@settings(max_examples=200, deadline=None)
@given(slots=st.lists(names, min_size=1, max_size=4, unique=True), glue=st.lists(words, min_size=6, max_size=6),
       mask_at=st.integers(0, 4), data=st.data())
def test_fill_substitutes_every_slot_once_and_keeps_one_mask(slots, glue, mask_at, data):
    pieces = [f"{{{s}}}" for s in slots]
    pieces.insert(min(mask_at, len(pieces)), MASK)
    text = "".join(g + p for g, p in zip(glue, pieces)) + glue[-1]
    template = parse_template({"id": "h", "text": text, "slots": slots, "answers": {"a": "x", "b": "y"}},
                              source="h.yaml")
    fills = {s: data.draw(values) for s in slots}
    filled = template.fill(fills)
    # Rebuild the expected string piece by piece: a value containing "{slot}" is never substituted again.
    expected = "".join(g + (MASK if p == MASK else str(fills[p[1:-1]])) for g, p in zip(glue, pieces)) + glue[-1]
    assert filled == expected
    assert filled.count(MASK) == 1 + sum(str(v).count(MASK) for v in fills.values())
    assert template.pieces() == [("mask", MASK) if p == MASK else ("slot", p[1:-1]) for p in pieces]


@settings(max_examples=100, deadline=None)
@given(n_masks=st.integers(0, 4), prefix=words, suffix=words)
def test_exactly_one_mask_is_accepted(n_masks, prefix, suffix):
    text = prefix + " ".join([MASK] * n_masks) + suffix
    raw = {"id": "m", "text": text, "slots": [], "answers": {"a": "x"}}
    if n_masks == 1 and text.strip():
        assert parse_template(raw, source="m.yaml").text == text
    else:
        with pytest.raises(TemplateError, match="m.yaml: template 'm'"):
            parse_template(raw, source="m.yaml")


@settings(max_examples=100, deadline=None)
@given(key=names, other=names, replacement=st.sampled_from(["blah", "ya", "foo"]))
def test_perturbation_replaces_whole_words_outside_slots(key, other, replacement):
    text = f"{key} {{{key}}} {key}{other} [MASK] {key}."
    template = parse_template({"id": "p", "text": text, "slots": [key], "answers": {"a": "x"}, "perturb": [key]},
                              source="p.yaml")
    assert template.perturbed_text(lambda _w: replacement) == f"{replacement} {{{key}}} {key}{other} [MASK] {replacement}."
