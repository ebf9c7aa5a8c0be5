"""The params of the object_sizes table set (section ``tables.object_sizes``) and the raw files they choose from.

:class:`ObjectSizeParams` says where absolute sizes come from (the mirror sets or DoQ), which pairwise label
sets are read and how the sizes are fitted; :data:`FILES` names the flat files of each set in
``raw/object_sizes/`` (see ``raw/sources.yaml``). What each param does: :mod:`probekit.sources.loaders.object_sizes`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from probekit.errors import shown
from probekit.sources.capped import Policy
from probekit.sources.loaders import LoaderParams

SOURCE = "object_sizes"
DOQ_SOURCE = "doq"
# set -> flat file names in raw/object_sizes/ (see raw/sources.yaml)
FILES: dict[str, tuple[str, ...]] = {
    "breds": ("breds_dev_annotated.csv", "breds_test_annotated_combined.csv"),
    "size_comparisons": ("size_comparisons_manually_selected.csv",),
    "verbphysics": ("verbphysics_train5_train.csv", "verbphysics_train5_dev.csv", "verbphysics_train5_test.csv"),
    "viphy": ("viphy_size_train.csv", "viphy_size_val.csv", "viphy_size_test.csv"),
}


class ObjectSizeParams(LoaderParams):
    source: Literal["mirror_sets", "doq"] = "mirror_sets"  # where absolute sizes come from
    capped: Policy = None  # mirror_sets caps OBJECTS COMPARISON: refuse it, or accept it (probekit/sources/capped.py)
    size_sets: list[Literal["breds", "size_comparisons"]] = ["breds", "size_comparisons"]  # mirror_sets only
    pair_sets: list[Literal["verbphysics", "viphy"]] = ["verbphysics", "viphy"]
    doq_file: str = "doq_nouns.tsv"  # in raw/doq/
    doq_errors: Literal["raise", "count"] = "raise"
    min_pairs: int = Field(1, ge=1)  # labels an object without an absolute size needs to get a fitted one
    viphy_min_margin: float = Field(0.0, ge=0.0, lt=1.0)
    fit: Literal["bradley_terry", "least_squares"] = "bradley_terry"
    ls_gap: float = Field(1.0, gt=0.0)  # least-squares target of log(size_a / size_b) for "a larger than b"
    bt_scale: float = Field(0.5, gt=0.0)  # Bradley-Terry scale s, natural-log units
    bt_ridge: float = Field(0.2, gt=0.0)  # pull of each fitted log size towards its least-squares start

    @model_validator(mode="after")
    def _check(self):
        for key in ("size_sets", "pair_sets"):
            values = getattr(self, key)
            if len(set(values)) != len(values):
                raise ValueError(f"{key}: duplicate entries {values}")
        if self.source == "mirror_sets" and not self.size_sets:
            raise ValueError("size_sets: source mirror_sets needs at least one set of absolute sizes")
        if Path(self.doq_file).name != self.doq_file:
            raise ValueError(f"doq_file: must be a plain file name in raw/doq/, got {shown(self.doq_file)}")
        return self

