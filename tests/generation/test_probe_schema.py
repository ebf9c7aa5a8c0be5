"""A probe YAML has a schema (probekit.probes.schema): an unknown key at any level is one line naming the file, the
place and the closest known key; `answers` maps exactly the outcomes the generator declares; and an answer word the
zero-shot mask-logit rule cannot score (several tokens for a masked LM of params `models`) is refused by `probes
generate`, unless the YAML's `multi_token` lists it. Each test edits a copy of a shipped probe's YAML."""

from __future__ import annotations

import re

import pytest

from probekit.errors import DataError, ParamsError
from probekit.params import ParamsFile
from probekit.probes.templates import TemplateError
from probes.main import main

from helpers import build_section, edited_probe

SMALL = {"size": {"train": 4, "dev": 2}, "variants": ["original", "nolang"]}
MULTI = "youngsterish"   # several word pieces for MiniLM's (uncased BERT) tokenizer: young ##ster ##ish


def _generate(tmp_path, capsys, *extra: str) -> tuple[int, str]:
    """`probes generate age_comparison`, small; its exit code and what it printed to stderr."""
    params = tmp_path / "p.yaml"
    params.write_text("age_comparison:\n  size: {train: 4, dev: 2}\n  variants: [original, nolang]\n")
    code = main(["generate", "age_comparison", "--params", str(params), "--out", str(tmp_path / "o"), *extra])
    err = capsys.readouterr().err
    assert err.count("\n") <= 1 and len(err) < 600, err
    return code, err


def _refused(tmp_path, capsys, line: str) -> None:
    code, err = _generate(tmp_path, capsys)
    assert code == 1 and err.startswith(f"probes generate: error: {line}"), err
    assert not (tmp_path / "o").exists()


def test_a_misspelt_top_level_key_is_refused_not_dropped_from_the_card(tmp_path, monkeypatch, capsys):
    """Finding: `citaton: olmpics` was read by nothing, and the dataset card lost its paper."""
    path = edited_probe(tmp_path, monkeypatch, lambda t: t.replace("\ncitation: olmpics", "\ncitaton: olmpics"))
    _refused(tmp_path, capsys, f"{path}: citaton: unknown key (did you mean citation?); known: probe, version, ")


def test_answer_for_answers_is_an_unknown_key_not_an_internal_error(tmp_path, monkeypatch, capsys):
    """Finding: a template's `answer:` (for `answers:`) gave `internal error: KeyError: 'less'`."""
    path = edited_probe(tmp_path, monkeypatch, lambda t: t.replace(
        "    answers: {less: younger, greater: older}", "    answer: {less: younger, greater: older}", 1))
    _refused(tmp_path, capsys, f"{path}: template 'paper': answer: unknown key (did you mean answers?); known: id, "
                               f"text, slots, answers, perturb")


def test_answers_must_map_exactly_the_generators_outcomes(tmp_path, monkeypatch, capsys):
    """Finding: `answers: {less: younger}` (one outcome) gave `internal error: KeyError: 'greater'`."""
    path = edited_probe(tmp_path, monkeypatch, lambda t: t.replace(
        "    answers: {less: younger, greater: older}", "    answers: {less: younger}", 1))
    _refused(tmp_path, capsys, f"{path}: template 'paper': answers: must map exactly the generator's outcomes less, "
                               f"greater to their words; missing: greater")
    path.write_text(path.read_text().replace("{less: younger}", "{less: younger, greater: older, same: equal}"))
    _refused(tmp_path, capsys, f"{path}: template 'paper': answers: must map exactly the generator's outcomes less, "
                               f"greater to their words; not an outcome: same")


def test_a_probe_whose_choices_come_from_the_data_takes_no_answers(tmp_path, monkeypatch):
    from generators.shared import registry

    path = edited_probe(tmp_path, monkeypatch, lambda t: t.replace(
        "    slots: [x, y]\n", "    slots: [x, y]\n    answers: {yes: animal}\n", 1), probe="taxonomy_conjunction")
    with pytest.raises(TemplateError, match=rf"^{re.escape(str(path))}: template 'a_a': answers: this probe's "
                                            rf"generator takes its choices from the data"):
        registry.get("taxonomy_conjunction").probe_spec()


@pytest.mark.parametrize("edit, line", [
    (("{template: paper, values: ages}", "{template: paper, value: ages}"),
     "variant 'original': value: unknown key (did you mean values?); known: template, templates, role, values"),
    (("{control: nolang, base: original}", "{control: nolang, bsae: original}"),
     "variant 'nolang': bsae: unknown key (did you mean base?); known: control, base, role"),
    (("  nolang_answers: {older", "  nolang_answer: {older"),
     "controls: nolang_answer: unknown key (did you mean nolang_answers?); known: nolang_answers, nolang_fillers, nonsense_words"),
])
def test_a_misspelt_variant_or_controls_key_names_the_file_and_the_key(tmp_path, monkeypatch, capsys, edit, line):
    """Finding: a variant's `value: ages` (for `values:`) said `age_comparison.values: no key [None], used by
    variant(s) ['original']`."""
    path = edited_probe(tmp_path, monkeypatch, lambda t: t.replace(*edit, 1))
    _refused(tmp_path, capsys, f"{path}: {line}")


def test_a_variant_without_its_values_says_so(tmp_path, monkeypatch):
    path = edited_probe(tmp_path, monkeypatch, lambda t: t.replace("{template: paper, values: ages}",
                                                                  "{template: paper}", 1))
    with pytest.raises(ParamsError) as caught:
        build_section("age_comparison", SMALL)
    assert "no key [None]" not in str(caught.value)
    assert f"{path}: variant(s) ['original'] set no `values` (the key of these values their template is filled " \
           f"with: ages, years)" in str(caught.value)


def test_unknown_params_defaults_are_refused_naming_the_yaml(tmp_path, monkeypatch, capsys):
    """`params:` is the generator's typed params model's: a key it does not declare is refused when the params are
    read, naming the YAML and the key."""
    path = edited_probe(tmp_path, monkeypatch, lambda t: t.replace("  mode: sample ", "  mdoe: sample ", 1))
    _refused(tmp_path, capsys, f"{path} (params): age_comparison.mdoe: unknown key (known: seed, variants, mode, ")


def test_a_misspelt_key_of_a_dataset_generators_yaml_is_one_line(tmp_path):
    """ParaRel's and CALUM's YAMLs: a pydantic `ValidationError` came out as an internal error."""
    from generators.calum import generator as calum
    from generators.pararel import generator as pararel

    spec = tmp_path / "pararel.yaml"
    spec.write_text((pararel.HERE / "probe.yaml").read_text(encoding="utf-8").replace("\ncitation:", "\ncitaton:"))
    with pytest.raises(DataError, match=rf"^{re.escape(str(spec))}: citaton: unknown key \(did you mean citation\?\)"):
        pararel.load_spec(spec)
    (tmp_path / "calum").mkdir()
    for name in ("probe.yaml", "en.yaml"):
        (tmp_path / "calum" / name).write_text((calum.HERE / name).read_text(encoding="utf-8"), encoding="utf-8")
    probe = tmp_path / "calum/probe.yaml"
    probe.write_text(probe.read_text(encoding="utf-8").replace("{control: signal, base: original, style: brackets}",
                                                               "{control: signal, base: original, styl: brackets}"))
    with pytest.raises(DataError, match=rf"^{re.escape(str(probe))}: variants.signal: styl: unknown key \(did you "
                                        rf"mean style\?\); known: style, control, base$"):
        calum.load_spec(probe)


# --- answer words the zero-shot rule can score ----------------------------------------------------------------


def test_a_multi_token_answer_word_is_refused_by_generate(tmp_path, monkeypatch, capsys):
    """Finding: an answer word of several tokens passed `probes generate` and failed only in the zero-shot stage
    ("candidate ... is not a single token for this tokenizer in context")."""
    path = edited_probe(tmp_path, monkeypatch, lambda t: t.replace(
        "    answers: {less: younger, greater: older}", f"    answers: {{less: {MULTI}, greater: older}}", 1)
        .replace("{older: blah, younger: ya}", f"{{older: blah, younger: ya, {MULTI}: foo}}"))
    _refused(tmp_path, capsys, f"{path}: template 'paper': answers: '{MULTI}' is not one token at the mask for the "
                               f"tokenizer of minilm, a masked LM of params models (variant 'original': ['young', "
                               f"'##ster', '##ish']), so zero-shot's mask-logit rule cannot score it")


def test_a_multi_token_nolang_word_names_its_key(tmp_path, monkeypatch, capsys):
    path = edited_probe(tmp_path, monkeypatch, lambda t: t.replace("{older: blah, younger: ya}",
                                                                  f"{{older: blah, younger: {MULTI}}}"))
    _refused(tmp_path, capsys, f"{path}: controls.nolang_answers: '{MULTI}' is not one token at the mask for the "
                               f"tokenizer of minilm")


def test_a_word_declared_multi_token_is_generated(tmp_path, monkeypatch, capsys):
    edited_probe(tmp_path, monkeypatch, lambda t: t.replace(
        "    answers: {less: younger, greater: older}", f"    answers: {{less: {MULTI}, greater: older}}", 1)
        .replace("{older: blah, younger: ya}", f"{{older: blah, younger: ya, {MULTI}: foo}}")
        .replace("\ncontrols:", f"\nmulti_token: [{MULTI}]\ncontrols:"))
    code, err = _generate(tmp_path, capsys)
    assert code == 0, err
    assert MULTI in (tmp_path / "o/original/dev.jsonl").read_text()


def test_multi_token_lists_answer_words_only(tmp_path, monkeypatch):
    from generators.shared import registry

    path = edited_probe(tmp_path, monkeypatch, lambda t: t.replace("\ncontrols:", "\nmulti_token: [elderly]\ncontrols:"))
    with pytest.raises(TemplateError, match=rf"^{re.escape(str(path))}: multi_token: 'elderly' is no answer word of "
                                            rf"this probe"):
        registry.get("age_comparison").probe_spec()


def test_answer_words_are_read_by_the_masked_lms_of_models_and_an_unreadable_one_is_named(tmp_path, capsys,
                                                                                        monkeypatch):
    """The tokenizers are those of every masked LM of params `models` that runs oLMpics (a causal LM, or one that
    does not run oLMpics, narrows nothing); one that cannot be read (offline, not cached) is an error naming it, as
    ParaRel's one-token filter's."""
    from generators.shared.single_token import check_answer_words

    built = build_section("age_comparison", {**SMALL, "seed": 1})
    check_answer_words(built, ParamsFile(None))   # minilm: younger, older, blah, ya are one token each
    skipped = ParamsFile(tmp_path / "p.yaml", {"models": {"other": "no-org/no-model"}, "runs": {"olmpics": []}})
    check_answer_words(built, skipped)
    offline = ParamsFile(tmp_path / "p.yaml", {"models": {"bert": "no-org/no-model"}})
    with pytest.raises(ParamsError, match=rf"^{re.escape(str(tmp_path / 'p.yaml'))}: models.bert \(age_comparison's "
                                          rf"answer words are read by every masked LM of models that runs olmpics\): "
                                          rf"--model bert: Hub id 'no-org/no-model' is not in the local cache"):
        check_answer_words(built, offline)
