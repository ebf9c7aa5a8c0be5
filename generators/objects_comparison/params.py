"""The settings of OBJECTS COMPARISON: the probe's name, the ``object_sizes.sizes`` sources of an absolute
and of a fitted size, and the typed params (WordNet domains, size buckets, minimum bucket gaps, fitted sizes)
with their checks; the defaults are in ``objects_comparison.yaml``.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, SerializerFunctionWrapHandler, field_validator, model_serializer, model_validator

from probekit.errors import shown
from probekit.params import ProbeParams, SplitSizes

PROBE = "objects_comparison"
ABSOLUTE = ("breds", "size_comparisons", "breds+size_comparisons", "doq")  # sizes.source of a measured size
FITTED = "fit"
PAIRINGS = ("ours", "paper_literal")
"""``pairing``: which two objects make a pair. §4.1: "We automatically instantiate object slots using objects that
are in the same bucket." ``paper_literal`` reads it as written: both objects in one size bucket (sizes not
equal, the gold from the sizes). ``ours`` (default) departs from it: two objects at least ``min_gap`` buckets
apart (``min_gap_fitted`` with a fitted size), so that "much larger" holds, as in the release (whose pairs with
two measured sizes here are all buckets apart)."""
MATRIX = ("nail", "pen", "laptop", "table", "house", "airplane", "city", "sun")
"""oLMpics Table 4's objects, from small to large (§4.1, "Analysis": "we sampled a single object from each bucket.
Objects are ordered by their size from small to large"): ``matrix`` in conf/config.yaml's
``objects_comparison_grid`` section. With ``matrix`` set, the probe is every ordered pair of its objects on the dev
split (none in train), the gold from the list's order; unset (default), the sampled probe above."""


class ObjectsParams(ProbeParams):
    """See the docstring of :mod:`generators.objects_comparison`; the defaults are in ``objects_comparison.yaml``."""

    size: SplitSizes
    animal_sense: Literal["first", "any"] = "first"
    object_lexnames: list[str] = Field(min_length=1)
    bucket_decades: float = Field(0.5, gt=0)
    bucket_edges_m: list[float] | None = None
    min_gap: int = Field(2, ge=1)
    min_gap_fitted: int | None = Field(4, ge=1)
    min_pairs_fitted: int = Field(5, ge=0)
    prefer_absolute: bool = True
    pairing: Literal["ours", "paper_literal"] = "ours"   # see PAIRINGS
    mode: Literal["sample", "grid"] = "sample"         # see MATRIX
    matrix: list[str] | None = None                    # see MATRIX

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler):
        """``pairing: ours`` is left out of a dump (meta.json, the card): a dataset built before the switch existed
        keeps its bytes and fingerprint; ``paper_literal`` is recorded."""
        data = handler(self)
        if data.get("pairing") == "ours":
            del data["pairing"]
        if data.get("mode") == "sample" and data.get("matrix", ...) is None:   # likewise: the sampled probe keeps
            del data["mode"], data["matrix"]                                 # its bytes
        return data

    @field_validator("object_lexnames")
    @classmethod
    def _lexnames(cls, names):
        bad = [n for n in names if not n.startswith("noun.")]
        if bad:
            raise ValueError(f"not noun lexicographer files (noun.artifact, ...): {bad}")
        if "noun.animal" in names:
            raise ValueError("noun.animal is the train domain; dev objects must not be animals")
        return names

    @field_validator("matrix")
    @classmethod
    def _matrix(cls, objects):
        if objects is not None:
            if len(objects) < 2 or len(set(objects)) != len(objects) or not all(o.strip() == o and o for o in objects):
                raise ValueError(f"must list two or more distinct object names, from small to large, got "
                                 f"{shown(objects)}")
        return objects

    @field_validator("bucket_edges_m")
    @classmethod
    def _edges(cls, edges):
        if edges is not None:
            if not edges or any(not (e > 0 and math.isfinite(e)) for e in edges):
                raise ValueError(f"must be positive sizes in metres, got {shown(edges)}")
            if any(b <= a for a, b in zip(edges, edges[1:])):
                raise ValueError(f"must be strictly ascending, got {shown(edges)}")
        return edges

    @model_validator(mode="after")
    def _grid(self):
        if (self.mode == "grid") != (self.matrix is not None):
            raise ValueError("mode grid builds the pairs of `matrix` (objects from small to large): give both, or "
                             f"neither (mode {self.mode}, matrix {shown(self.matrix)})")
        return self

    @model_validator(mode="after")
    def _gaps(self):
        if self.min_gap_fitted is not None and self.min_gap_fitted < self.min_gap:
            raise ValueError(f"min_gap_fitted ({self.min_gap_fitted}) is below min_gap ({self.min_gap}): fitted "
                             f"sizes are an ordering only, they need at least the gap of absolute ones")
        return self
