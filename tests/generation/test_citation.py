"""A probe's card cites what its YAML says: a user's new probe that names no paper is not presented as oLMpics, on
its dataset card nor on the Hub card."""

from __future__ import annotations

import re

from generators.shared import registry as generators
from probekit.hub import card as hub_card
from probekit.hub import export as hub_export
from probekit.probes.dataset import write_probe

from helpers import build_section

SMALL = {"seed": 13, "size": {"train": 8, "dev": 8}, "variants": ["original"]}


def _without_citation(tmp_path, monkeypatch):
    """age_comparison as a user's copy of it would be: the same YAML with no `citation`."""
    text = generators.get("age_comparison").template_path.read_text(encoding="utf-8")
    path = tmp_path / "probe.yaml"
    path.write_text(re.sub(r"(?m)^citation:.*\n", "", text), encoding="utf-8")
    monkeypatch.setattr(type(generators.get("age_comparison")), "template_path", property(lambda self: path))


def _cards(out):
    readme = (out / "original/README.md").read_text(encoding="utf-8")
    exports = [hub_export.export(c, out.parent) for c in hub_export.discover(out.parent)]
    card = hub_card.Card.empty()
    for exp in exports:
        card = card.update(hub_card.Card.of(exp))
    return readme, hub_card.render(card, "me/probes")


def test_a_probe_without_a_citation_gets_none(tmp_path, monkeypatch):
    _without_citation(tmp_path, monkeypatch)
    out = write_probe(tmp_path / "data/age_comparison", build_section("age_comparison", SMALL), generator_version="1")
    readme, hub = _cards(out)
    for text in (readme, hub):
        assert "Talmor" not in text and "olmpics" not in text.lower().replace("olmpics_", "")
        assert "```bibtex" not in text


def test_an_olmpics_probe_cites_olmpics(tmp_path):
    out = write_probe(tmp_path / "data/age_comparison", build_section("age_comparison", SMALL), generator_version="1")
    readme, hub = _cards(out)
    assert "talmor-etal-2020-olmpics" in readme
    assert "It reproduces oLMpics" in hub and "talmor-etal-2020-olmpics" in hub
