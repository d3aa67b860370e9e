"""Issue 35: every figure and table of the default sweep (config/config.yaml) and the smoke
sweep (config/smoke.yaml), drawn from the small merged files of the figures' own tests
(``test_figure_legends._merged``), laid out as ``save_figure`` lays it out: no text clipped by
its axes or outside the saved canvas, no marker cut by the edge of its axes (an inset), and
every legend entry names a glyph the figure draws. Tables are Markdown and CSV files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from matplotlib.collections import Collection, PathCollection
from matplotlib.colors import rgb_to_hsv, to_rgba_array
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.markers import MarkerStyle
from matplotlib.patches import Patch
from matplotlib.text import Text
from matplotlib.transforms import Bbox
from test_figure_legends import _has_data, _legend_entries, _merged

from bnnsweep.figures import FIGURES, draw
from bnnsweep.figures._common import DPI
from bnnsweep.sweeps.table_kinds import TABLE_KINDS

ROOT = Path(__file__).resolve().parents[1]
SWEEPS = ("config.yaml", "smoke.yaml")
TOLERANCE_PX = 1.0


def sweep_kinds() -> list[str]:
    kinds = set()
    for name in SWEEPS:
        config = yaml.safe_load((ROOT / "config" / name).read_text())
        for experiment in config["experiments"].values():
            kinds.update(experiment.get("figures", ["error_table"]))
    return sorted(kinds)


def laid_out(fig: Figure):
    """The renderer after the layout ``save_figure`` applies, the canvas it saves
    (``bbox_inches="tight"``, pad 0.1 inch) in display pixels, and the texts drawn (tick
    labels outside the view exist but are not drawn)."""
    fig.set_dpi(DPI)
    fig.tight_layout()
    renderer = fig.canvas.get_renderer()
    drawn: list[Text] = []
    draw_text = Text.draw

    def recording(self, renderer):
        drawn.append(self)
        return draw_text(self, renderer)

    Text.draw = recording
    try:
        fig.draw(renderer)
    finally:
        Text.draw = draw_text
    saved = fig.get_tightbbox(renderer).padded(0.1)
    return renderer, Bbox(saved.get_points() * DPI), drawn


def _inside(inner: Bbox, outer: Bbox) -> bool:
    return (
        inner.x0 >= outer.x0 - TOLERANCE_PX
        and inner.y0 >= outer.y0 - TOLERANCE_PX
        and inner.x1 <= outer.x1 + TOLERANCE_PX
        and inner.y1 <= outer.y1 + TOLERANCE_PX
    )


def clipped_texts(fig: Figure) -> list[str]:
    renderer, canvas, drawn = laid_out(fig)
    problems = []
    for text in drawn:
        if not text.get_visible() or not text.get_text().strip():
            continue
        extent = text.get_window_extent(renderer)
        if not _inside(extent, canvas):
            problems.append(f"{text.get_text()!r} outside the canvas")
        clip = text.get_clip_box() if text.get_clip_on() else None
        if clip is not None and not _inside(extent, clip):
            problems.append(f"{text.get_text()!r} clipped by its axes")
    return problems


def overlapping_tick_labels(fig: Figure) -> list[str]:
    """Tick labels of different axes drawn over each other (neighbouring panels' x labels)."""
    renderer, _, drawn = laid_out(fig)
    drawn_ids = {id(t) for t in drawn}
    labels = [
        (i, t.get_window_extent(renderer), t.get_text())
        for i, ax in enumerate(_axes(fig))
        for t in [*ax.get_xticklabels(), *ax.get_yticklabels()]
        if id(t) in drawn_ids and t.get_visible() and t.get_text().strip()
    ]
    problems = []
    for k, (i, a, text_a) in enumerate(labels):
        for j, b, text_b in labels[k + 1 :]:
            if i != j and a.overlaps(b):
                problems.append(f"{text_a!r} over {text_b!r}")
    return problems


def _axes(fig: Figure):
    return [*fig.axes, *(child for ax in fig.axes for child in ax.child_axes)]


def cut_markers(fig: Figure) -> list[str]:
    """Scatter markers of an axes that its frame cuts (a marker whose centre is inside but
    whose edge is outside)."""
    laid_out(fig)
    problems = []
    for ax in _axes(fig):
        box = ax.get_window_extent()
        for coll in ax.collections:
            if not isinstance(coll, PathCollection) or not coll.get_clip_on():
                continue
            xy = coll.get_offset_transform().transform(np.asarray(coll.get_offsets(), float))
            sizes = np.broadcast_to(coll.get_sizes(), (len(xy),)) if len(coll.get_sizes()) else 0
            radius = np.sqrt(sizes) / 2 * DPI / 72.0
            finite = np.isfinite(xy).all(axis=1)
            x, y, r = xy[finite, 0], xy[finite, 1], np.broadcast_to(radius, (len(xy),))[finite]
            centre_in = (x >= box.x0) & (x <= box.x1) & (y >= box.y0) & (y <= box.y1)
            edge_out = (
                (x - r < box.x0 - TOLERANCE_PX)
                | (x + r > box.x1 + TOLERANCE_PX)
                | (y - r < box.y0 - TOLERANCE_PX)
                | (y + r > box.y1 + TOLERANCE_PX)
            )
            if np.any(centre_in & edge_out):
                problems.append(
                    f"{int(np.sum(centre_in & edge_out))} markers cut in {ax.get_title()!r}"
                )
    return problems


def _shape(path) -> np.ndarray:
    v = np.asarray(path.vertices, dtype=float)
    v = v - v.mean(axis=0)
    return np.round(v / max(np.abs(v).max(), 1e-12), 3)


def _marker_shape(marker) -> np.ndarray:
    style = MarkerStyle(marker)
    return _shape(style.get_path().transformed(style.get_transform()))


def _coloured(rgba) -> bool:
    """Not a grey: the legend's greys stand for a shape or a size, not for a colour."""
    return float(rgb_to_hsv(np.asarray(rgba)[:3])[1]) > 0.15


def _colours(artist) -> list[tuple]:
    found = []
    for getter in ("get_color", "get_facecolor", "get_edgecolor", "get_markerfacecolor"):
        if hasattr(artist, getter):
            for rgba in to_rgba_array(getattr(artist, getter)()):
                if rgba[3] > 0:
                    found.append(tuple(np.round(rgba[:3], 4)))
    return found


def _glyphs(fig: Figure) -> list[tuple[str, object, list[tuple]]]:
    """What the figure draws: ('line', linestyle, colours), ('marker', shape, colours),
    ('patch', None, colours) for every artist with data, on every axes and inset."""
    glyphs = []
    for ax in _axes(fig):
        for artist in [*ax.lines, *ax.collections, *ax.patches]:
            if not _has_data(artist):
                continue
            colours = _colours(artist)
            if isinstance(artist, Line2D):
                if artist.get_linestyle() not in ("None", "", " "):
                    glyphs.append(("line", artist.get_linestyle(), colours))
                if artist.get_marker() not in ("None", "", " ", None):
                    glyphs.append(("marker", _marker_shape(artist.get_marker()), colours))
            elif isinstance(artist, PathCollection):
                glyphs += [("marker", _shape(p), colours) for p in artist.get_paths()[:1]]
            elif isinstance(artist, Collection):
                glyphs.append(("patch", None, colours))
                if artist.get_linestyle():
                    glyphs.append(("line", "-", colours))
            elif isinstance(artist, Patch):
                glyphs.append(("patch", None, colours))
    return glyphs


def _wanted(handle) -> list[tuple[str, object, tuple | None]]:
    colour = next((c for c in _colours(handle) if _coloured(c)), None)
    if isinstance(handle, Line2D):
        wanted = []
        if handle.get_linestyle() not in ("None", "", " "):
            wanted.append(("line", handle.get_linestyle(), colour))
        if handle.get_marker() not in ("None", "", " ", None):
            wanted.append(("marker", _marker_shape(handle.get_marker()), colour))
        return wanted
    if isinstance(handle, PathCollection):
        return [("marker", _shape(handle.get_paths()[0]), colour)]
    return [("patch", None, colour)]


def _matches(want, glyph) -> bool:
    kind, shape, colour = want
    if glyph[0] != kind:
        return False
    if kind == "marker" and (glyph[1].shape != shape.shape or not np.allclose(glyph[1], shape)):
        return False
    if kind == "line" and glyph[1] != shape:
        return False
    return colour is None or colour in glyph[2]


def unmarked_legend_entries(fig: Figure) -> list[str]:
    glyphs = _glyphs(fig)
    problems = []
    for label, handle in _legend_entries(fig):
        wanted = _wanted(handle)
        if not wanted:
            problems.append(f"{label!r} has no mark")
        for want in wanted:
            if not any(_matches(want, g) for g in glyphs):
                problems.append(
                    f"{label!r}: no {want[0]} {want[1] if want[0] == 'line' else ''} drawn"
                )
    return problems


KINDS = sweep_kinds()


def test_the_sweeps_draw_these_kinds():
    assert {"occam_hill", "evidence_vs_error", "toy_regression", "sunspot_predictions",
            "error_table", "chapter_one_checks", "bm_correlation_error"} == set(KINDS)  # fmt: skip
    assert {k for k, (_, suffix) in FIGURES.items() if suffix == ".md"} == TABLE_KINDS


@pytest.mark.parametrize(
    "kind",
    [k for k in KINDS if k not in TABLE_KINDS],
)
def test_figure_text_is_inside_and_every_legend_entry_is_drawn(kind, request):
    _, ds = _merged(kind, request)
    fig = FIGURES[kind][0](ds)
    assert clipped_texts(fig) == []
    assert overlapping_tick_labels(fig) == []
    assert cut_markers(fig) == []
    assert unmarked_legend_entries(fig) == []


def test_the_evidence_inset_keeps_its_markers_whole():
    """The crowded top cluster gets an inset (``evidence_vs_error.crowded``): its markers,
    up to 11 points across, once overran its frame (8 cut on these runs)."""
    from test_figures import make_merged

    runs = [("toy_sine", "laplace", h, s, "ok", 0.05, 1.0, ev, [ev, ev + 0.5, np.nan], [1, 1, 0])
            for h, s, ev in [(1, 0, -400.0), (1, 1, -380.0), (2, 0, 100.0), (2, 1, 101.0),
                             (3, 0, 102.0), (3, 1, 100.5)]]  # fmt: skip
    fig = FIGURES["evidence_vs_error"][0](make_merged(runs))
    assert [ax for ax in fig.axes if ax.child_axes]
    assert cut_markers(fig) == []


@pytest.mark.parametrize("kind", sorted(TABLE_KINDS))
def test_tables_are_markdown_and_csv(kind, request, tmp_path):
    from test_figures import make_merged

    ds = make_merged() if kind == "error_table" else _merged_ch1(request)
    md, csv = draw(kind, ds, tmp_path / f"{kind}.md")
    assert md.read_text().startswith("# ") and "|---" in md.read_text()
    assert csv.read_text().count("\n") >= 2


def _merged_ch1(request):
    from bnnsweep.figures import load_merged
    from bnnsweep.results import with_run_test_data

    return with_run_test_data(load_merged(request.getfixturevalue("ch1_merged_path")))


def test_chapter_one_zeros_are_written_as_zero(request, tmp_path):
    """The quartic's Laplace mode at 0 is found by minimisation as about -6e-9."""
    md, csv = draw("chapter_one_checks", _merged_ch1(request), tmp_path / "checks.md")
    import pandas as pd

    table = pd.read_csv(csv)
    mode = table[(table["problem"] == "quartic_a") & (table["quantity"] == "laplace_mode")]
    assert mode["ours"].tolist() == [0.0]
    row = next(line for line in md.read_text().splitlines() if "quartic_a | laplace_mode" in line)
    assert row.split(" | ")[2] == "0"
    import re

    assert not re.search(r"e-(0[89]|[1-9][0-9])", md.read_text())  # nothing below 1e-7
