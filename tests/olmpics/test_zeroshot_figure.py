"""results/zeroshot.png: the models side by side per probe and variant, each accuracy with its 95% interval, legible
with one model and with eight (one panel per probe, a row per variant, one dot and error bar per model)."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.container import ErrorbarContainer

from evaluators.shared import report
from evaluators.shared.zeroshot_figure import figure

from helpers import PAIRS, fake_result

VARIANTS = ("original", "nolang", "perturbed")


def results(tmp_path, models: int):
    """``models`` models on two probes' original, NO-LANG and PERTURBED: model i right on the pairs whose first age
    is below 15 + i % 5 (so their accuracies and intervals differ)."""
    root = tmp_path / "results"
    for i in range(models):
        for variant in VARIANTS:
            fake_result(root, tmp_path / "data", f"model-{i}", variant, i % 2 == 0, PAIRS,
                        lambda a, b, i=i: ("A" if a < b else "B") if a < 15 + i % 5 else "B")
            other = root / f"model-{i}" / "objects_comparison" / variant
            other.parent.mkdir(parents=True, exist_ok=True)
            (root / f"model-{i}" / "age_comparison" / variant).rename(other)
            fake_result(root, tmp_path / "data", f"model-{i}", variant, i % 2 == 0, PAIRS,
                        lambda a, b: "A" if a < b else "B")
    for path in root.rglob("metrics.json"):   # the moved copies name their own probe
        path.write_text(path.read_text().replace('"age_comparison"', f'"{path.parts[-3]}"'))
    return report.collect([root])


@pytest.mark.parametrize("models", [1, 8])
def test_models_side_by_side_with_their_intervals(tmp_path, models):
    df = results(tmp_path, models)
    fig = figure(df)
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title(loc="left") for ax in panels] == ["age_comparison", "objects_comparison"]
    for ax in panels:
        assert [t.get_text() for t in ax.get_yticklabels()] == ["original", "NO-LANG", "PERTURBED"]
        bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
        assert len(bars) == models * len(VARIANTS)   # one dot and interval per model and variant
        sub = df[df.probe == ax.get_title(loc="left")]
        for bar, r in zip(bars, sub.sort_values(["variant", "model"], key=lambda s: s.map(
                {v: k for k, v in enumerate(VARIANTS)}) if s.name == "variant" else s).itertuples()):
            (x,), (y,) = bar.lines[0].get_data()
            segment = bar.lines[2][0].get_segments()[0]
            assert x == pytest.approx(r.accuracy) and [p[0] for p in segment] == pytest.approx([r.low, r.high])
        # the models of one variant apart, in one row: no two dots at the same height
        heights = [bar.lines[0].get_data()[1][0] for bar in bars]
        assert len(set(np.round(heights, 6))) == len(heights)
    colors = {bar.lines[0].get_color() for ax in panels for bar in ax.containers}
    assert len(colors) == models   # one colour per model, the same in every panel
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels[:models] == [f"model-{i}" + ("" if i % 2 == 0 else " †") for i in range(models)]
    assert "chance" in labels
    # taller with more models: a variant's row keeps room for each model's dot
    assert fig.get_size_inches()[1] > 0.13 * models * len(VARIANTS) + 2


def test_a_not_zero_shot_model_is_hollow_and_named(tmp_path):
    fig = figure(results(tmp_path, 2))
    bars = [bar for ax in fig.axes for bar in ax.containers]
    faces = {bar.lines[0].get_color(): bar.lines[0].get_markerfacecolor() for bar in bars}
    hollow = [color for color, face in faces.items() if face == "white"]
    assert len(hollow) == 1   # model-1, the † one
    assert any("not a zero-shot result" in t.get_text() for t in fig.legends[0].get_texts())
