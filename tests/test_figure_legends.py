"""Issue 17: a method has one colour in every figure, its legend entry has that colour, and a
method named in a legend is drawn in it. Every figure kind is drawn from the small merged file
its own tests use: the synthetic files of test_figures, test_figures_chaining,
test_seed_figures and test_figures_variational, and the fitted ones of ``merged_fixtures``
(session fixtures shared with the figures' own tests)."""

from __future__ import annotations

import re

import matplotlib
import numpy as np
import pytest
import xarray as xr
from matplotlib.collections import Collection
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from test_figures import make_merged
from test_figures_chaining import make_merged as chaining_merged
from test_figures_variational import nrd_merged
from test_seed_figures import RUNS as SUNSPOT_RUNS
from test_seed_figures import _softmax_merged, _sunspot_merged

from bnnsweep.figures import FIGURES, load_merged, method_palette
from bnnsweep.methods import names
from bnnsweep.results import with_run_test_data
from bnnsweep.sweeps.table_kinds import TABLE_KINDS

SYNTHETIC = {
    "occam_hill": make_merged,
    "evidence_vs_error": make_merged,
    "toy_regression": make_merged,
    "chaining_diagnostics": chaining_merged,
    "schedule_comparison": chaining_merged,
    "sunspot_predictions": lambda: _sunspot_merged(SUNSPOT_RUNS),
    "adf_samples_loglik": lambda: _softmax_merged()[0],
    "adf_softmax_approximation": lambda: _softmax_merged()[0],
    "nrd_hidden_units": nrd_merged,
}
"""Kinds drawn from a synthetic merged Dataset: the builder."""

FITTED = {
    "adf_uci_table": ("adf_yacht_merged", None),
    "adf_toy_classification": ("adf_toy_merged", None),
    "adf_epoch_error": ("adf_toy_merged", None),
    "adf_error_bars": ("adf_toy_merged", None),
    "ica_alpha": ("ica_merged", 0),
    "ica_alpha_rounds": ("ica_merged", 0),
    "ica_bound_trace": ("ica_merged", 0),
    "ica_sources": ("ica_merged", 0),
    "mixture_target": ("mixture_target_merged_path", None),
    "gaussian_fits": ("gaussian_fits_merged_path", None),
    "adf_expected_activations": ("adf_activations_merged_path", None),
    "g2_approximation": ("g2_approximation_merged_path", None),
    "laplace_slices": ("posterior_slices_merged_path", None),
    "mixture_slices": ("posterior_slices_merged_path", None),
    "bm_correlation_error": ("bm_merged_files", "ens"),
    "bm_galland_iterations": ("bm_merged_files", "gal"),
    "bm_toy_learning": ("bm_merged_files", "toy"),
    "bm_digits_cost": ("bm_digits_merged", None),
    "bm_digits_joint_means": ("bm_digits_merged", None),
    "ltu_error_table": ("ltu_merged_path", None),
    "ltu_error_vs_hidden": ("ltu_merged_path", None),
    "sbn_error_histograms": ("sbn_inference_merged", 0),
    "sbn_error_vs_components": ("sbn_inference_merged", 0),
    "sbn_error_vs_span": ("sbn_inference_merged", 0),
    "sbn_bars_loglik": ("sbn_bars_merged", 0),
}
"""Kinds drawn from a fitted merged file: (session fixture of ``merged_fixtures``, the key or
index of the merged file in what the fixture returns, if it returns more)."""

TABLES = TABLE_KINDS  # Markdown and CSV, no colours

COLOURED_BY_METHOD = {
    "occam_hill",
    "evidence_vs_error",
    "toy_regression",
    "sunspot_predictions",
    "adf_epoch_error",
    "adf_error_bars",
    "nrd_hidden_units",
    "ica_alpha",
    "bm_galland_iterations",
    "bm_toy_learning",
    "bm_digits_cost",
    "bm_digits_joint_means",
}
"""Kinds that colour the runs by their method label (``method_palette``); the others colour
other things (estimators, q families, sources, model rows) or draw tables and checks."""


def _merged(kind: str, request) -> tuple[str, xr.Dataset]:
    """(name of the merged file, the Dataset as ``draw`` hands it to the figure)."""
    if kind in SYNTHETIC:
        return SYNTHETIC[kind].__name__, SYNTHETIC[kind]()
    fixture, key = FITTED[kind]
    value = request.getfixturevalue(fixture)
    value = value if key is None else value[key]
    ds = value if isinstance(value, xr.Dataset) else load_merged(value)
    return f"{fixture}[{key}]", with_run_test_data(ds)


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


def _has_data(artist) -> bool:
    """Whether an artist draws anything: a line with a finite point, a collection with a
    finite vertex or offset, any patch (a line or band over no data draws nothing)."""
    if isinstance(artist, Line2D):
        x, y = (np.asarray(v, dtype=float) for v in artist.get_data())
        return bool(np.isfinite(x + y).any()) if x.size and y.size else False
    if isinstance(artist, Collection):
        offsets = np.asarray(artist.get_offsets(), dtype=float)
        vertices = [np.asarray(p.vertices, dtype=float) for p in artist.get_paths()]
        return (
            bool(np.isfinite(offsets).all(axis=-1).any())
            if offsets.size
            else any(v.size and np.isfinite(v).all(axis=-1).any() for v in vertices)
        )
    return True


def _drawn_colours(fig: Figure) -> set[tuple[float, float, float]]:
    """Colours of the artists that draw something, on every axes and inset."""
    colours = set()
    insets = [child for parent in fig.axes for child in parent.child_axes]
    for ax in [*fig.axes, *insets]:
        for artist in [*ax.lines, *ax.collections, *ax.patches]:
            if not _has_data(artist):
                continue
            for getter in ("get_color", "get_facecolor", "get_edgecolor"):
                if hasattr(artist, getter):
                    for rgba in matplotlib.colors.to_rgba_array(getattr(artist, getter)()):
                        if rgba[3] > 0:
                            colours.add(tuple(round(float(v), 6) for v in rgba[:3]))
    return colours


def _rounded(rgb) -> tuple[float, ...]:
    return tuple(round(float(v), 6) for v in rgb)


def _method_of(label: str, methods) -> str | None:
    """The method label a legend entry names ('laplace', 'cond (zero, eta=0.03)',
    'digits_mf: final F/N ...'), or None."""
    head = re.split(r" \(|:", label)[0].strip()
    return head if head in methods else None


@pytest.fixture(scope="module")
def drawn(request):
    """``drawn(kind)``: (merged file name, Dataset, Figure), each kind drawn once."""
    cache: dict[str, tuple[str, xr.Dataset, Figure]] = {}

    def draw_kind(kind: str):
        if kind not in cache:
            source, ds = _merged(kind, request)
            cache[kind] = (source, ds, FIGURES[kind][0](ds))
        return cache[kind]

    return draw_kind


def _named_colours(kind: str, ds: xr.Dataset, fig: Figure) -> dict[str, tuple]:
    """Each method label a legend of ``fig`` names, with its palette colour; asserts that
    the legend entry has that colour and that the figure draws something in it."""
    methods = sorted({str(m) for m in ds["method"].values})
    palette = {m: tuple(to_rgb(c)) for m, c in method_palette(methods).items()}
    drawn_colours = _drawn_colours(fig)
    named: dict[str, tuple] = {}
    for label, handle in _legend_entries(fig):
        method = _method_of(label, palette)
        if method is None:
            continue
        assert _rgb(handle) == pytest.approx(palette[method]), (kind, label)
        assert _rounded(palette[method]) in drawn_colours, (kind, label)
        named[method] = palette[method]
    return named


def test_every_figure_kind_is_drawn_here():
    assert set(FIGURES) - TABLES == set(SYNTHETIC) | set(FITTED)
    assert COLOURED_BY_METHOD <= set(FIGURES)


@pytest.mark.parametrize("kind", sorted(set(SYNTHETIC) | set(FITTED)))
def test_a_method_in_a_legend_has_its_own_colour_and_is_drawn(kind, drawn):
    _, ds, fig = drawn(kind)
    assert isinstance(fig, Figure), kind
    named = _named_colours(kind, ds, fig)
    if kind not in COLOURED_BY_METHOD:
        return
    methods = sorted({str(m) for m in ds["method"].values})
    palette = method_palette(methods)
    colours = _drawn_colours(fig)
    methods_drawn = [m for m in methods if _rounded(to_rgb(palette[m])) in colours]
    assert methods_drawn, kind  # the runs are drawn in their methods' colours
    if not named:  # no legend names methods: the panels must (e.g. one panel per method)
        titles = " ".join(ax.get_title() for ax in fig.axes)
        assert all(m in titles for m in methods_drawn), kind


def test_the_same_method_has_the_same_colour_across_figure_kinds(drawn):
    """Within one merged file every label, and across files every registered method name,
    keeps its colour from kind to kind."""
    by_file: dict[tuple[str, str], tuple] = {}
    by_name: dict[str, tuple] = {}
    for kind in sorted(set(SYNTHETIC) | set(FITTED)):
        source, ds, fig = drawn(kind)
        for method, rgb in _named_colours(kind, ds, fig).items():
            assert by_file.setdefault((source, method), rgb) == pytest.approx(rgb), (kind, method)
            if method in names():
                assert by_name.setdefault(method, rgb) == pytest.approx(rgb), (kind, method)
    assert {"laplace", "map", "pbp", "ebp"} <= set(by_name)


def test_a_label_keeps_its_colour_when_a_figure_leaves_runs_out():
    """Labels that are not registered method names take the spare colours in sorted order:
    a figure that leaves out one label's runs (no retained-unit count) must not shift the
    colour of the others."""
    ds = nrd_merged()
    labels = np.where(np.arange(ds.sizes["run"]) < 4, "a_first", "my_nrd").astype(object)
    ds = ds.assign_coords(method=("run", labels))
    ds["diag_retained_hidden"][:4] = np.nan
    named = _named_colours("nrd_hidden_units", ds, FIGURES["nrd_hidden_units"][0](ds))
    assert list(named) == ["my_nrd"]  # in the colour of the whole file's palette
    alone = to_rgb(method_palette(["my_nrd"])["my_nrd"])
    assert named["my_nrd"] != pytest.approx(alone)  # which a palette of the drawn runs is not


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


def test_extra_labels_get_colours_far_from_every_method_colour():
    """Labels beyond the spare colours once took husl colours in hue order, so the Occam-hill
    variant ``laplace_paper_gn`` came out salmon beside ``laplace``'s pink. Each is now the
    husl colour farthest from every colour already given."""
    from bnnsweep.figures._common import _fixed_colours, colour_distance

    fixed, spare = _fixed_colours()
    for n in (len(spare) + 1, len(spare) + 6):
        palette = method_palette([f"label_{i:02d}" for i in range(n)])
        husl = list(palette.values())[len(spare) :]
        assert len(husl) == n - len(spare)
        for i, colour in enumerate(husl):
            assert min(colour_distance(colour, c) for c in fixed.values()) > 0.3
            assert all(colour_distance(colour, other) > 0.3 for other in husl[i + 1 :])
    variants = ["laplace", "laplace_paper", "laplace_paper_gn", "laplace_flat",
                "laplace_gamma_exact", "laplace_gamma_gn"]  # fmt: skip
    palette = method_palette(variants)
    assert colour_distance(palette["laplace_paper_gn"], palette["laplace"]) > 0.5
