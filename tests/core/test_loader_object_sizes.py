"""The object_sizes loader: each reader on small files in the real formats, the fit on a tiny graph, DoQ mode,
and the real mirror (sanity facts, schema, order, contradiction counts, deterministic Parquet)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from probekit.errors import DataError
from probekit.sources.loaders import get
from probekit.sources.loaders import object_sizes as osz
from probekit.sources.loaders import read_report, read_tables, write_tables
from probekit.sources.loaders._object_size_fit import fit_log_sizes
from probekit.sources.loaders._object_size_params import ObjectSizeParams
from probekit.sources.loaders._object_size_readers import (
    DOQ_COLUMNS,
    read_breds,
    read_doq,
    read_size_comparisons,
    read_verbphysics,
    read_viphy,
)

from helpers import MIRROR

# flat name in raw/object_sizes/ -> file under the mirror root (as in raw/sources.yaml)
MIRROR_FILES = {
    "breds_dev_annotated.csv": "object_size/alkemade_breds/VG_YOLO_intersection_dev_annotated.csv",
    "breds_test_annotated_combined.csv": "object_size/alkemade_breds/VG_YOLO_intersection_test_annotated_combined.csv",
    "size_comparisons_manually_selected.csv": "object_size/alkemade_size_comparisons/manually_selected.csv",
    "verbphysics_train5_train.csv": "object_size/verbphysics/objects/train-5/train.csv",
    "verbphysics_train5_dev.csv": "object_size/verbphysics/objects/train-5/dev.csv",
    "verbphysics_train5_test.csv": "object_size/verbphysics/objects/train-5/test.csv",
    "viphy_size_train.csv": "object_size/viphy/size/train.csv",
    "viphy_size_val.csv": "object_size/viphy/size/val.csv",
    "viphy_size_test.csv": "object_size/viphy/size/test.csv",
}
VP_HEADER = (",obj1,obj2,size-agree,size-maj,weight-agree,weight-maj,strength-agree,strength-maj,"
             "rigidness-agree,rigidness-maj,speed-agree,speed-maj\n")
VIPHY_HEADER = ",o1,o2,>,<,typical\n"


def _vp_row(k, a, b, size):
    return f"{k},{a},{b},3,{size},3,1,3,1,3,1,3,1\n"


def write(path: Path, text: str, encoding="utf-8") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding=encoding)
    return path


# ------------------------------------------------------------------------------------------------ readers

def test_read_verbphysics(tmp_path):
    f = write(tmp_path / "vp.csv", VP_HEADER + _vp_row(0, "house", "mouth", 1) + _vp_row(1, "stone", "Direction", -42)
              + _vp_row(2, "ant", "dog", -1) + _vp_row(3, "abode", "house", 0))
    df = read_verbphysics(f)
    assert list(df.columns) == ["line", "obj1", "obj2", "size_maj"]
    assert df["size_maj"].tolist() == [1, -42, -1, 0]
    assert df["obj2"].tolist()[1] == "direction"  # lowercased
    assert df["line"].tolist() == [2, 3, 4, 5]


@pytest.mark.parametrize("row, problem", [
    ("1,ant,dog,3,-1,3,1\n", "expected 13 fields"),
    (_vp_row(1, "ant", "dog", 2), "size-maj 2"),
    (_vp_row(1, "ant", "dog", "x"), "not an integer"),
])
def test_read_verbphysics_malformed_row_names_file_and_line(tmp_path, row, problem):
    f = write(tmp_path / "vp.csv", VP_HEADER + _vp_row(0, "house", "mouth", 1) + row)
    with pytest.raises(DataError, match=rf"vp\.csv: line 3: .*{problem}"):
        read_verbphysics(f)


def test_read_viphy(tmp_path):
    f = write(tmp_path / "v.csv", VIPHY_HEADER + "0,couch,fixture,270,29,>\n1,streetlight,bench,23,80,<\n")
    df = read_viphy(f)
    assert df[["obj1", "obj2", "n_larger", "n_smaller", "typical"]].values.tolist() == [
        ["couch", "fixture", 270, 29, ">"], ["streetlight", "bench", 23, 80, "<"]]
    bad = write(tmp_path / "bad.csv", VIPHY_HEADER + "0,couch,fixture,270,29,>\n1,a,b,many,3,<\n")
    with pytest.raises(DataError, match=r"bad\.csv: line 3: > 'many' is not an integer"):
        read_viphy(bad)
    nohead = write(tmp_path / "nohead.csv", "0,couch,fixture,270,29,>\n")
    with pytest.raises(DataError, match=r"nohead\.csv: line 1: header .* lacks column"):
        read_viphy(nohead)


def test_read_breds_keeps_the_object_named_nan_and_strips_a_bom(tmp_path):
    f = write(tmp_path / "b.csv",
              "\ufeffobject,min,max\npadding,0,2.0\nnan,1.5,2.1\ncentral processing unit,0.002,0.03\n")
    df = read_breds(f)
    assert df["object"].tolist() == ["padding", "nan", "central processing unit"]
    assert df["min_m"].tolist() == [0.0, 1.5, 0.002]
    bad = write(tmp_path / "bad.csv", "object,min,max\nleaf,0.01,big\n")
    with pytest.raises(DataError, match=r"bad\.csv: line 2: max 'big'"):
        read_breds(bad)


def test_read_size_comparisons_todo_is_missing(tmp_path):
    f = write(tmp_path / "m.csv", "object,length\nquark,0.43E-18\napple,TODO\ntree, TODO\ncat,0.46\n\n")
    df = read_size_comparisons(f)
    assert df["object"].tolist() == ["quark", "apple", "tree", "cat"]
    assert df["length_m"].iloc[0] == pytest.approx(0.43e-18)
    assert df["length_m"].isna().tolist() == [False, True, True, False]


DOQ_ROWS = [
    # obj, head, dim, mean, perc_5, perc_25, median, perc_75, perc_95, std (DoQ's released TSV, no header)
    ("lion", "lion", "LENGTH", 2.1, 0.9, 1.5, 1.9, 2.5, 3.3, 0.8),
    ("lion", "lion", "MASS", 190000.0, 120000.0, 150000.0, 180000.0, 220000.0, 250000.0, 40000.0),
    ("house cat", "cat", "LENGTH", 0.5, 0.2, 0.4, 0.46, 0.6, 0.8, 0.2),
    ("ant", "ant", "LENGTH", 0.004, 0.001, 0.002, 0.003, 0.005, 0.01, 0.002),
]


def _doq_text(rows, sep="\t"):
    return "".join(sep.join(str(v) for v in r) + "\n" for r in rows)


def test_read_doq_real_format_and_malformed_row(tmp_path):
    good = write(tmp_path / "doq.tsv", _doq_text(DOQ_ROWS))
    df = read_doq(good)
    assert list(df.columns) == ["line", *DOQ_COLUMNS]
    assert df["obj"].tolist() == ["lion", "lion", "house cat", "ant"]
    assert df.loc[df["dim"] == "LENGTH", "median"].tolist() == [1.9, 0.46, 0.003]
    assert df.attrs["malformed_lines"] == []

    text = _doq_text(DOQ_ROWS[:2]) + "broken\tbroken\tLENGTH\t1.0\n" + _doq_text(DOQ_ROWS[2:3]) + \
        "elk\telk\tLENGTH\t2\t1\t1.5\tabout two\t2.5\t3\t0.5\n" + _doq_text(DOQ_ROWS[3:])
    bad = write(tmp_path / "bad.tsv", text)
    with pytest.raises(DataError, match=r"bad\.tsv: line 3: expected 10 fields, got 4"):
        read_doq(bad)
    counted = read_doq(bad, errors="count")
    assert counted.attrs["malformed_lines"] == [3, 5]
    assert counted["obj"].tolist() == ["lion", "lion", "house cat", "ant"]
    latin1 = tmp_path / "latin1.tsv"
    cafe = "caf\xe9\tcaf\xe9\tLENGTH\t1\t1\t1\t1\t1\t1\t1\n"
    latin1.write_bytes(_doq_text(DOQ_ROWS[:1]).encode() + cafe.encode("latin-1"))
    with pytest.raises(DataError, match=r"latin1\.tsv: line 2: not UTF-8"):
        read_doq(latin1)


def test_read_doq_accepts_a_header_and_commas(tmp_path):
    header = ",".join(DOQ_COLUMNS) + "\n"
    f = write(tmp_path / "doq.csv", header + _doq_text(DOQ_ROWS, sep=","))
    df = read_doq(f)
    assert len(df) == 4 and df["line"].tolist() == [2, 3, 4, 5]


# ------------------------------------------------------------------------------------- loader, tiny data

def _tiny_raw(root: Path) -> Path:
    d = root / "object_sizes"
    write(d / "breds_dev_annotated.csv", "object,min,max\ncup,0.05,0.2\npadding,0,2.0\nnan,1.5,2.1\n")
    write(d / "breds_test_annotated_combined.csv", "object,min,max\nhouse,8,20\n")
    write(d / "size_comparisons_manually_selected.csv", "object,length\ncat,0.46\ntree, TODO\nhouse,14.0\n")
    # truth: ant < cup < cat < dog < horse < house; verbphysics has (dog, horse) twice, (cat, dog) both ways
    write(d / "verbphysics_train5_train.csv", VP_HEADER + _vp_row(0, "cup", "ant", 1) + _vp_row(1, "dog", "cat", 1)
          + _vp_row(2, "horse", "dog", 1) + _vp_row(3, "energy", "idea", -42) + _vp_row(4, "sky", "air", 0))
    write(d / "verbphysics_train5_dev.csv", VP_HEADER + _vp_row(0, "dog", "horse", -1) + _vp_row(1, "cat", "dog", 1))
    write(d / "verbphysics_train5_test.csv", VP_HEADER + _vp_row(0, "house", "horse", 1))
    # island: (sun, moon) has no anchor; mirrored rows and a tie
    viphy = (VIPHY_HEADER + "0,dog,cat,30,10,>\n1,cat,dog,10,30,<\n2,horse,cup,50,1,>\n3,sun,moon,9,1,>\n"
             "4,cup,ant,5,5,<\n5,cup,cat,2,40,<\n")
    write(d / "viphy_size_train.csv", viphy)
    write(d / "viphy_size_val.csv", VIPHY_HEADER + "0,cup,horse,1,50,<\n")
    write(d / "viphy_size_test.csv", VIPHY_HEADER)
    return root


def test_loader_on_tiny_sources(tmp_path):
    loaded = osz.load(_tiny_raw(tmp_path), ObjectSizeParams())
    sizes, pairs, report = loaded.tables["sizes"], loaded.tables["pairs"], loaded.report
    assert list(sizes.columns) == list(osz.SIZE_COLUMNS) and list(pairs.columns) == list(osz.PAIR_COLUMNS)
    size = dict(zip(sizes["object"], sizes["size_m"]))
    src = dict(zip(sizes["object"], sizes["source"]))
    assert src["cup"] == "breds" and src["cat"] == "size_comparisons" and src["house"] == "breds+size_comparisons"
    assert size["cup"] == pytest.approx(0.1)
    assert size["house"] == pytest.approx(math.sqrt(math.sqrt(8 * 20) * 14), rel=1e-5)
    assert src["dog"] == src["horse"] == src["ant"] == "fit"
    assert size["ant"] < size["cup"] < size["cat"] < size["dog"] < size["horse"] < size["house"]
    assert "sun" not in size and "moon" not in size and "padding" not in size and "tree" not in size
    assert "nan" in size
    # pairs: canonical orientation, (cat, dog) dropped (labelled both ways), viphy mirror rows merged, tie dropped
    assert (pairs["obj1"] < pairs["obj2"]).all()
    vp = pairs[pairs["source"] == "verbphysics"]
    assert vp[["obj1", "obj2", "label"]].values.tolist() == [
        ["ant", "cup", "smaller"], ["dog", "horse", "smaller"], ["horse", "house", "smaller"]]
    vi = pairs[pairs["source"] == "viphy"]
    assert vi[["obj1", "obj2", "label"]].values.tolist() == [
        ["cat", "cup", "larger"], ["cat", "dog", "smaller"], ["cup", "horse", "smaller"], ["moon", "sun", "smaller"]]
    dropped = report["dropped"]
    assert dropped["verbphysics: pair labelled both ways (all its rows dropped)"] == 1
    assert dropped["verbphysics: row repeating a pair with the same label (merged)"] == 1
    assert dropped["viphy: tie"] == 1
    assert dropped["viphy: row repeating a pair in the other order or another split (counts taken once)"] == 2
    assert dropped["sizes: object not connected to any object of known size"] == 2
    assert report["files"]["object_sizes/verbphysics_train5_train.csv"]["dropped"] == {
        "no majority (-42)": 1, "similar (0)": 1}
    assert report["files"]["object_sizes/breds_dev_annotated.csv"]["dropped"] == {
        "min <= 0, max < min or missing bound": 1}
    assert report["files"]["object_sizes/size_comparisons_manually_selected.csv"]["dropped"] == {
        "no length (TODO) or length <= 0": 1}
    assert report["contradicted"]["overall"] == 0
    assert report["contradicted"]["ranked"] == len(pairs) - 1  # (moon, sun) is not ranked
    assert sizes["rank"].tolist() == list(range(1, len(sizes) + 1))
    assert sizes.set_index("object").loc["dog", "n_pairs"] == 2  # (dog, horse) verbphysics, (cat, dog) viphy


def test_min_pairs_and_least_squares(tmp_path):
    raw = _tiny_raw(tmp_path)
    loaded = osz.load(raw, ObjectSizeParams(min_pairs=2, fit="least_squares"))
    size = dict(zip(loaded.tables["sizes"]["object"], loaded.tables["sizes"]["source"]))
    assert "ant" not in size and "horse" in size  # ant has one label (the tie is dropped)
    assert loaded.report["dropped"]["sizes: object with fewer than min_pairs labels and no absolute size"] == 3
    assert loaded.report["fit"]["method"] == "least_squares"


def test_fit_recovers_a_chain():
    # 0 < 1 < 2 < 3 < 4, anchors 0 (1 m) and 4 (100 m)
    i, j = np.array([1, 2, 3, 4, 2]), np.array([0, 1, 2, 3, 0])
    y = np.ones(5, dtype=int)
    for fit in ("least_squares", "bradley_terry"):
        x, info = fit_log_sizes(5, i, j, y, {0: 0.0, 4: math.log(100)}, ObjectSizeParams(fit=fit))
        assert np.all(np.diff(x) > 0), (fit, x)
        assert info["free_objects"] == 3


def test_doq_mode(tmp_path):
    raw = _tiny_raw(tmp_path)
    rows = DOQ_ROWS + [("dog", "dog", "LENGTH", 0.8, 0.3, 0.5, 0.7, 1.0, 1.5, 0.3),
                       ("cat", "cat", "LENGTH", 0.5, 0.2, 0.4, 0.5, 0.6, 0.8, 0.2),
                       ("cat", "cat", "LENGTH", 0.5, 0.2, 0.4, 0.4, 0.6, 0.8, 0.2),
                       ("ghost", "ghost", "LENGTH", 0, 0, 0, 0, 0, 0, 0)]
    write(raw / "doq" / "doq_nouns.tsv", _doq_text(rows) + "broken\tline\n")
    with pytest.raises(DataError, match=r"doq_nouns\.tsv: line 9"):
        osz.load(raw, ObjectSizeParams(source="doq"))
    loaded = osz.load(raw, ObjectSizeParams(source="doq", doq_errors="count"))
    sizes = loaded.tables["sizes"].set_index("object")
    assert sizes.loc["lion", "size_m"] == 1.9 and sizes.loc["lion", "source"] == "doq"
    assert sizes.loc["cat", "size_m"] == pytest.approx(math.sqrt(0.5 * 0.4))
    assert "cup" in sizes.index and sizes.loc["cup", "source"] == "fit"  # BREDS is not read in doq mode
    f = loaded.report["files"]["doq/doq_nouns.tsv"]
    assert f["dropped"] == {"malformed (doq_errors: count)": 1, "dimension other than LENGTH": 1,
                            "LENGTH median <= 0 or not finite": 1, "LENGTH row repeating an object (log-mean taken)": 1}
    assert f["malformed_lines_first"] == [9]
    with pytest.raises(DataError, match=r"doq/other\.tsv: missing"):
        osz.load(raw, ObjectSizeParams(source="doq", doq_file="other.tsv"))


def test_params_are_checked(tmp_path):
    with pytest.raises(ValidationError):
        ObjectSizeParams(sources="doq")
    with pytest.raises(ValidationError):
        ObjectSizeParams(pair_sets=["viphy", "viphy"])
    with pytest.raises(ValidationError):
        ObjectSizeParams(size_sets=[])
    with pytest.raises(ValidationError):
        ObjectSizeParams(doq_file="../doq.tsv")
    assert get("object_sizes").params is ObjectSizeParams
    assert get("object_sizes").sources(ObjectSizeParams()) == ["object_sizes"]
    assert get("object_sizes").sources(ObjectSizeParams(source="doq")) == ["object_sizes", "doq"]
    assert get("object_sizes").sources(ObjectSizeParams(source="doq", pair_sets=[])) == ["doq"]
    with pytest.raises(DataError, match=r"object_sizes/breds_dev_annotated\.csv: missing"):
        osz.load(tmp_path, ObjectSizeParams())


def test_no_pair_sets_gives_the_anchors_only(tmp_path):
    loaded = osz.load(_tiny_raw(tmp_path), ObjectSizeParams(pair_sets=[]))
    assert set(loaded.tables["sizes"]["source"]) <= {"breds", "size_comparisons", "breds+size_comparisons"}
    assert loaded.tables["pairs"].empty and loaded.report["contradicted"]["overall"] == 0


# ------------------------------------------------------------------------------------------- real mirror

@pytest.fixture(scope="module")
def mirror_raw(mirror_sources) -> Path:
    """A raw root with the mirror's object_sizes/ (the session's)."""
    raw = mirror_sources.fetch("object_sizes")
    assert set(MIRROR_FILES) <= {p.name for p in (raw / "object_sizes").iterdir()}
    return raw


@pytest.fixture(scope="module")
def real(mirror_sources):
    """``osz.load(mirror_raw, ObjectSizeParams())``, the session's."""
    assert mirror_sources.params("object_sizes") == ObjectSizeParams() and get("object_sizes").fn is osz.load
    return mirror_sources.loaded("object_sizes")


def test_real_schema_order_and_uniqueness(real):
    sizes, pairs = real.tables["sizes"], real.tables["pairs"]
    assert list(sizes.columns) == list(osz.SIZE_COLUMNS)
    assert [str(t) for t in sizes.dtypes] == ["str", "float64", "int64", "str", "int64", "int64"] or \
        sizes.dtypes.apply(lambda t: t.kind).tolist() == ["O", "f", "i", "O", "i", "i"]
    assert sizes["object"].is_unique and (sizes["size_m"] > 0).all()
    assert sizes.equals(sizes.sort_values(["size_m", "object"]).reset_index(drop=True))
    assert sizes["rank"].tolist() == list(range(1, len(sizes) + 1))
    assert (sizes["object"] == sizes["object"].str.lower()).all()
    assert list(pairs.columns) == list(osz.PAIR_COLUMNS)
    assert not pairs.duplicated(["source", "obj1", "obj2"]).any() and (pairs["obj1"] < pairs["obj2"]).all()
    assert set(pairs["label"]) == {"larger", "smaller"}
    assert pairs.equals(pairs.sort_values(["source", "obj1", "obj2"]).reset_index(drop=True))


def test_real_counts(real):
    r = real.report
    assert r["pairs"]["by_source"] == {"verbphysics": 2409, "viphy": 21548}
    assert r["objects_per_source"] == {"breds": 216, "size_comparisons": 35, "verbphysics": 207, "viphy": 1682,
                                       "fit": 1708}
    assert r["sizes"]["objects"] == 1957
    vp_files = [f for k, f in r["files"].items() if "verbphysics" in k]
    assert sum(f["rows"] for f in vp_files) == 3656
    assert sum(f["dropped"].get("no majority (-42)", 0) for f in vp_files) == 1104
    assert sum(f["dropped"].get("similar (0)", 0) for f in vp_files) == 120
    assert sum(f["rows"] for k, f in r["files"].items() if "viphy" in k) == 43095


def test_real_sanity_facts(real):
    size = dict(zip(real.tables["sizes"]["object"], real.tables["sizes"]["size_m"]))
    assert size["elephant"] > size["cat"]
    assert size["dog"] > size["ant"] if "ant" in size else True
    assert size["mouse"] < size["cat"] < size["horse"] < size["house"]
    assert size["cup"] < size["car"] < size["building"]
    assert size["nan"] == pytest.approx(math.sqrt(1.5 * 2.1), rel=1e-5)  # BREDS object literally named "nan"


def test_real_contradictions_reported_and_bounded(real):
    sizes, pairs, c = real.tables["sizes"], real.tables["pairs"], real.report["contradicted"]
    size = dict(zip(sizes["object"], sizes["size_m"]))
    s1, s2 = pairs["obj1"].map(size), pairs["obj2"].map(size)
    bad = np.where(pairs["label"] == "larger", ~(s1 > s2), ~(s1 < s2))
    assert c["ranked"] == len(pairs) and c["overall"] == int(bad.sum())
    assert sizes["n_contradicted"].sum() == 2 * c["overall"] and sizes["n_pairs"].sum() == 2 * c["ranked"]
    for name in ("verbphysics", "viphy"):
        m = (pairs["source"] == name).to_numpy()
        assert c["per_source"][name]["contradicted"] == int(bad[m].sum())
    # measured with the defaults: 762 of 23,957 (3.2%): verbphysics 110 / 2,409, viphy 652 / 21,548
    assert c["rate"] < 0.04
    assert c["per_source"]["verbphysics"]["rate"] < 0.06 and c["per_source"]["viphy"]["rate"] < 0.04


def test_real_parquet_is_deterministic(real, mirror_raw, tmp_path):
    a = write_tables(real, tmp_path / "a")
    b = write_tables(osz.load(mirror_raw, ObjectSizeParams()), tmp_path / "b")
    for name in ("sizes.parquet", "pairs.parquet", "report.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    back = read_tables(a)
    pd.testing.assert_frame_equal(back["sizes"], real.tables["sizes"], check_dtype=False)
    assert read_report(a)["contradicted"] == real.report["contradicted"]


def test_cli_fetch_and_tables(mirror_raw, tmp_path):
    """``probes sources fetch`` from the mirror with this loader's manifest entry, then ``probes tables``."""
    import yaml

    from probekit.sources.fetch import sha256_file
    from probes.main import main

    files = [{"path": name, "url": f"https://example.invalid/{name}", "sha256": sha256_file(MIRROR / mirror),
              "mirror": mirror} for name, mirror in MIRROR_FILES.items()]
    entry = {"description": "d", "homepage": "h", "license": "l", "license_id": "other", "citation": "c",
             "files": files}
    manifest = write(tmp_path / "raw" / "sources.yaml", yaml.safe_dump({"object_sizes": entry}))
    assert main(["sources", "fetch", "object_sizes", "--manifest", str(manifest), "--mirror", str(MIRROR)]) == 0
    params = write(tmp_path / "params.yaml", "tables:\n  object_sizes:\n    pair_sets: [verbphysics]\n")
    out = tmp_path / "tables"
    assert main(["tables", "object_sizes", "--manifest", str(manifest), "--params", str(params),
                 "--out", str(out)]) == 0
    report = read_report(out)
    assert report["params"]["pair_sets"] == ["verbphysics"] and list(report["sources"]) == ["object_sizes"]
    assert set(read_tables(out)["pairs"]["source"]) == {"verbphysics"}
