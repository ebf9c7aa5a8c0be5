"""ParaRel's pattern graphs, read safely: from the original pickles through a restricted unpickler, or from
their plain-JSON dump; both give the same :class:`PatternGraph`.

The original ``.graph`` files are pickles of a ``networkx.DiGraph`` whose nodes are
``pararel.patterns.graph_types.PatternNode`` records and whose edges carry an ``EdgeType`` (two files use the
older module path ``lm_meaning.spike_patterns.graph_types``). Unpickling runs whatever a pickle names, so the
unpickler here resolves exactly those names, to inert local records (networkx is not even imported), and
refuses every other global with an error naming the file: a pickle that would run code fails before any of
it runs.
"""

from __future__ import annotations

import io
import json
import pickle
from dataclasses import dataclass
from pathlib import Path

from probekit.errors import DataError, shown

NODE_FIELDS = ("lm_pattern", "spike_pattern", "lemma", "extended_lemma", "tense", "example")
EDGE_FLAGS = ("syntactic_change", "lexical_change", "determiner_change")


class _Record:
    """A pickled record's state, kept as given (pickle's BUILD sets ``__dict__``)."""

    def __setstate__(self, state):
        if not isinstance(state, dict):
            raise pickle.UnpicklingError(f"{type(self).__name__}: unexpected state {type(state).__name__}")
        self.__dict__.update(state)


class _DiGraph(_Record):
    pass


class _PatternNode(_Record):
    pass


class _EdgeType(_Record):
    pass


_ALLOWED = {
    ("builtins", "dict"): dict,
    ("networkx.classes.digraph", "DiGraph"): _DiGraph,
    **{(module, "PatternNode"): _PatternNode
       for module in ("pararel.patterns.graph_types", "lm_meaning.spike_patterns.graph_types")},
    **{(module, "EdgeType"): _EdgeType
       for module in ("pararel.patterns.graph_types", "lm_meaning.spike_patterns.graph_types")},
}


class _RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        try:
            return _ALLOWED[module, name]
        except KeyError:
            raise pickle.UnpicklingError(f"refused global {module}.{name}: a ParaRel graph holds only a networkx "
                                         f"DiGraph, PatternNode and EdgeType records") from None


@dataclass(frozen=True)
class PatternGraph:
    """One relation's patterns (in file order) and its directed edges ``(source, target, flags)``."""

    relation: str
    patterns: tuple[dict, ...]                       # NODE_FIELDS of each pattern
    edges: tuple[tuple[int, int, dict], ...]          # pattern indices and EDGE_FLAGS, sorted


def read_pickle(path: Path, relation: str | None = None) -> PatternGraph:
    """A ``.graph`` pickle, through the restricted unpickler."""
    path = Path(path)
    try:
        graph = _RestrictedUnpickler(io.BytesIO(path.read_bytes())).load()
    except (pickle.UnpicklingError, EOFError, AttributeError, TypeError, ValueError) as exc:
        raise DataError(f"{path}: not a ParaRel pattern graph ({exc})") from None
    if not isinstance(graph, _DiGraph) or not isinstance(getattr(graph, "_node", None), dict):
        raise DataError(f"{path}: not a ParaRel pattern graph (no DiGraph at the top)")
    nodes = list(graph._node)
    index = {id(node): i for i, node in enumerate(nodes)}
    if any(not isinstance(node, _PatternNode) for node in nodes):
        raise DataError(f"{path}: a node is not a PatternNode")
    edges = []
    for source, targets in graph._adj.items():
        for target, attributes in targets.items():
            edge = attributes.get("edge_type")
            if not isinstance(edge, _EdgeType):
                raise DataError(f"{path}: edge {shown(source.lm_pattern)} -> {shown(target.lm_pattern)} "
                                "has no EdgeType")
            edges.append((index[id(source)], index[id(target)], {f: bool(getattr(edge, f)) for f in EDGE_FLAGS}))
    patterns = tuple({f: getattr(node, f, "") for f in NODE_FIELDS} for node in nodes)
    return PatternGraph(relation or path.stem, patterns, tuple(sorted(edges, key=lambda e: e[:2])))


def read_json(path: Path) -> PatternGraph:
    """The JSON dump of a graph (``nodes`` with their fields, ``edges`` with the three flags)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        patterns = tuple({f: node.get(f, "") for f in NODE_FIELDS} for node in data["nodes"])
        edges = tuple(sorted(((e["source"], e["target"], {f: bool(e[f]) for f in EDGE_FLAGS}) for e in data["edges"]),
                             key=lambda e: e[:2]))
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise DataError(f"{path}: not a ParaRel graph dump ({type(exc).__name__}: {exc})") from None
    return PatternGraph(data.get("relation", path.stem), patterns, edges)
