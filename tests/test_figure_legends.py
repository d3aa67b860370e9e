"""Issue 17: a method has one colour in every figure, its legend entry has that colour, and a
method named in a legend is drawn in it. Every figure kind that draws network methods is
drawn from the synthetic merged file of test_figures."""

from __future__ import annotations

import matplotlib
import numpy as np
import pytest
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from test_figures import make_merged

from bnnsweep.figures import FIGURES, method_palette

KINDS = ["occam_hill", "evidence_vs_error", "toy_regression"]


def _rgb(artist) -> tuple[float, float, float] | None:
    """The colour an artist is drawn in (line colour, else face colour, else edge colour)."""
    for getter in ("get_color", "get_facecolor", "get_edgecolor"):
        if not hasattr(artist, getter):
            continue
        value = getattr(artist, getter)()
        array = np.asarray(matplotlib.colors.to_rgba_array(value))
        if len(array) and array[0, 3] > 0:
            return tuple(float(v) for v in array[0, :3])
    return None


def _legend_entries(fig: Figure):
    legends = [ax.get_legend() for ax in fig.axes] + list(fig.legends)
    for legend in legends:
        if legend is None:
            continue
        for handle, text in zip(legend.legend_handles, legend.get_texts(), strict=True):
            yield text.get_text(), handle


def _drawn_colours(fig: Figure) -> set[tuple[float, float, float]]:
    colours = set()
    for ax in fig.axes:
        for artist in [*ax.lines, *ax.collections, *ax.patches]:
            for getter in ("get_color", "get_facecolor", "get_edgecolor"):
                if hasattr(artist, getter):
                    for rgba in matplotlib.colors.to_rgba_array(getattr(artist, getter)()):
                        if rgba[3] > 0:
                            colours.add(tuple(round(float(v), 6) for v in rgba[:3]))
    return colours


@pytest.fixture(scope="module")
def figures() -> dict[str, Figure]:
    ds = make_merged()
    return {kind: FIGURES[kind][0](ds) for kind in KINDS}


@pytest.mark.parametrize("kind", KINDS)
def test_a_method_in_a_legend_has_its_own_colour_and_is_drawn(kind, figures):
    ds = make_merged()
    methods = sorted(set(ds["method"].values.tolist()))
    palette = {m: tuple(to_rgb(c)) for m, c in method_palette(methods).items()}
    drawn = _drawn_colours(figures[kind])
    named = 0
    for label, handle in _legend_entries(figures[kind]):
        method = label.split(" (")[0]
        if method not in palette:
            continue
        named += 1
        assert _rgb(handle) == pytest.approx(palette[method]), (kind, label)
        assert tuple(round(v, 6) for v in palette[method]) in drawn, (kind, label)
    methods_drawn = [m for m in methods if tuple(round(v, 6) for v in palette[m]) in drawn]
    assert methods_drawn, kind  # every figure kind here draws methods in their colours
    if named == 0:  # no legend names methods: the panels must (e.g. one panel per method)
        titles = " ".join(ax.get_title() for ax in figures[kind].axes)
        assert all(m in titles for m in methods_drawn), kind


def test_the_same_method_has_the_same_colour_across_figure_kinds(figures):
    colour: dict[str, tuple] = {}
    for kind, fig in figures.items():
        for label, handle in _legend_entries(fig):
            method = label.split(" (")[0]
            if method in ("laplace", "map"):
                rgb = _rgb(handle)
                assert colour.setdefault(method, rgb) == pytest.approx(rgb), (kind, method)
    assert set(colour) == {"laplace", "map"}


@pytest.mark.parametrize("seeds, expected", [((0,), "mean (one seed: no s.e.)"),
                                             ((0, 1), "mean ± s.e. over seeds")])  # fmt: skip
def test_occam_hill_claims_a_standard_error_only_over_several_seeds(seeds, expected):
    from test_figures import RUNS

    runs = [r for r in RUNS if r[0] == "toy_sine" and r[3] in seeds]
    labels = [label for label, _ in _legend_entries(FIGURES["occam_hill"][0](make_merged(runs)))]
    assert expected in labels
    assert not any("s.e." in label for label in labels if label != expected)


def test_evidence_vs_error_zooms_into_a_crowded_top_cluster():
    """Issue 17: every H >= 8 robot-arm network in one blob; the blob gets a zoomed inset."""
    import pandas as pd

    from bnnsweep.figures.evidence_vs_error import crowded

    spread = pd.DataFrame({"log_evidence": np.linspace(-500, 500, 12), "test_nmse": 1.0})
    assert crowded(spread) is None
    blob = pd.DataFrame(
        {
            "log_evidence": np.r_[-500.0, -300.0, 0.0, 480 + np.arange(9.0)],
            "test_nmse": np.r_[0.3, 0.1, 0.02, np.full(9, 1e-3)],
        }
    )
    assert sorted(crowded(blob)["log_evidence"]) == list(480 + np.arange(9.0))
    runs = [("toy_sine", "laplace", h, s, "ok", 0.05, 1.0, ev, [ev, ev + 0.5, np.nan], [1, 1, 0])
            for h, s, ev in [(1, 0, -400.0), (1, 1, -380.0), (2, 0, 100.0), (2, 1, 101.0),
                             (3, 0, 102.0), (3, 1, 100.5)]]  # fmt: skip
    fig = FIGURES["evidence_vs_error"][0](make_merged(runs))
    insets = [child for ax in fig.axes for child in ax.child_axes]
    assert len(insets) == 1 and insets[0].collections
