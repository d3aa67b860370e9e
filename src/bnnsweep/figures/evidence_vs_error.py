"""``evidence_vs_error``: log evidence against test NMSE (paper 000 fig. 2).

One facet per dataset. Each member counted in a run's evidence (a Laplace mode with
``mode_distinct``; later, mixture components with their own ``component_log_evidence``) is a
circle at (member log evidence, member test NMSE); each run with a log evidence is a square
at (combined ``log_evidence``, ``test_nmse``). Colour is the method, marker size the number
of hidden units. Member NMSE uses the run's own normaliser (``test_mse / test_nmse``), so
member and run points are on one scale. Diverged runs are left out. Where the
highest-evidence points crowd into one blob (``crowded``), an inset zooms into them.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ._common import (
    members_frame,
    method_palette,
    new_figure,
    note,
    outside_legend,
    runs_frame,
    style,
    usable,
)


def _points(ds: xr.Dataset) -> pd.DataFrame:
    all_runs = runs_frame(ds)
    runs = usable(all_runs)
    members = members_frame(ds, all_runs)
    members = members[members["run"].isin(runs["run"]) & members["counted"].astype(bool)]
    member_points = pd.DataFrame(
        {
            "dataset": members["dataset"],
            "method": members["method"],
            "hidden": members["hidden"],
            "level": members["level"],
            "log_evidence": members["member_log_evidence"],
            "test_nmse": members["member_test_nmse"],
        }
    )
    run_points = pd.DataFrame(
        {
            "dataset": runs["dataset"],
            "method": runs["method"],
            "hidden": runs["hidden"],
            "level": "run",
            "log_evidence": runs["log_evidence"],
            "test_nmse": runs["test_nmse"],
        }
    )
    points = pd.concat([member_points, run_points], ignore_index=True)
    finite = np.isfinite(points[["log_evidence", "test_nmse"]].to_numpy(float)).all(axis=1)
    return points[finite]


def crowded(d: pd.DataFrame) -> pd.DataFrame | None:
    """The points of a panel's highest-evidence cluster when they crowd into one blob (the
    networks the comparison is about): at least a third of the points, and at least 3, in
    the top tenth of the panel's log-evidence range. They are drawn again in a zoomed inset."""
    evidence = d["log_evidence"].to_numpy(float)
    span = evidence.max() - evidence.min()
    if len(d) < 6 or span <= 0:
        return None
    top = d[evidence >= evidence.max() - 0.1 * span]
    return top if len(top) >= max(3, len(d) // 3) else None


INSET_CORNERS = ([0.5, 0.47, 0.47, 0.4], [0.1, 0.47, 0.47, 0.4], [0.5, 0.1, 0.47, 0.4],
                 [0.1, 0.1, 0.47, 0.4])  # fmt: skip


def _emptiest_corner(ax, d: pd.DataFrame) -> list[float]:
    """Of the four corner boxes (axes fractions), the one over the fewest points."""
    ax.autoscale_view()
    xy = np.column_stack([d["log_evidence"].to_numpy(float), d["test_nmse"].to_numpy(float)])
    frac = ax.transAxes.inverted().transform(ax.transData.transform(xy))

    def covered(box):
        x0, y0, w, h = box
        inside = (frac[:, 0] >= x0 - 0.05) & (frac[:, 0] <= x0 + w + 0.02)
        return int(np.sum(inside & (frac[:, 1] >= y0 - 0.08) & (frac[:, 1] <= y0 + h + 0.08)))

    return min(INSET_CORNERS, key=covered)


def _scatter(ax, d: pd.DataFrame, palette: dict, sizes: dict) -> None:
    """Members as circles and runs as squares, colour the method, size the hidden units."""
    for (method, level), group in d.groupby(["method", "level"], sort=True):
        ax.scatter(
            group["log_evidence"],
            group["test_nmse"],
            s=group["hidden"].map(sizes),
            marker="s" if level == "run" else "o",
            color=palette[method],
            edgecolors="white" if level == "run" else palette[method],
            linewidths=0.6,
            alpha=0.75,
            zorder=2 if level == "run" else 3,
        )
    nmse = d["test_nmse"].to_numpy(float)
    if np.all(nmse > 0) and nmse.max() / nmse.min() > 30:
        ax.set_yscale("log")
    # room for the largest marker at the edges (an inset is small, its markers large)
    ax.margins(INSET_MARGIN if ax.get_label() == "inset" else 0.05)


INSET_MARGIN = 0.18
"""The inset's data margin, a fraction of its data range each side: its largest marker (about
11 points across) stays inside a box about 150 points wide."""


def evidence_vs_error(ds: xr.Dataset) -> Figure:
    runs = runs_frame(ds)
    palette = method_palette(runs["method"])
    names = sorted(runs["dataset"].unique()) or ["(no runs)"]
    points = _points(ds)
    hidden_values = sorted(points["hidden"].unique())
    sizes = dict(zip(hidden_values, np.linspace(30, 120, max(len(hidden_values), 1)), strict=False))
    ncols = min(3, len(names))
    nrows = math.ceil(len(names) / ncols)
    with style():
        fig = new_figure(4.8 * ncols + 1.8, 4.0 * nrows)
        axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
        for ax, name in zip(axes, names, strict=False):
            ax.set_title(name)
            ax.set_xlabel("log evidence (nats)")
            ax.set_ylabel("test NMSE (unitless)")
            d = points[points["dataset"] == name]
            if d.empty:
                without = sorted(runs.loc[runs["dataset"] == name, "method"].unique())
                note(
                    ax,
                    "no run with both a log evidence and a test NMSE\n(methods: "
                    + ", ".join(without)
                    + ")",
                )
                continue
            _scatter(ax, d, palette, sizes)
            crowd = crowded(d)
            if crowd is not None:
                inset = ax.inset_axes(_emptiest_corner(ax, d), label="inset")
                _scatter(inset, crowd, palette, sizes)
                inset.tick_params(labelsize="x-small")
                inset.set_title(
                    f"highest-evidence {len(crowd)} of {len(d)} points", fontsize="x-small"
                )
                ax.indicate_inset_zoom(inset, edgecolor="0.4")
        for ax in axes[len(names) :]:
            ax.set_axis_off()

        grey = "0.35"
        with_points = set(points["method"])
        # a legend names what is drawn; methods without a log evidence are named below it
        handles = [
            Line2D([], [], color=palette[m], marker="o", linestyle="", label=m)
            for m in sorted(with_points)
        ]
        absent = sorted(set(runs["method"].unique()) - with_points)
        for level in sorted(set(points["level"]) - {"run"}):
            handles.append(
                Line2D([], [], color=grey, marker="o", linestyle="", label=f"{level} (counted)")
            )
        if (points["level"] == "run").any():
            handles.append(
                Line2D([], [], color=grey, marker="s", linestyle="", label="run (combined)")
            )
        for h in hidden_values:
            handles.append(
                Line2D(
                    [],
                    [],
                    color=grey,
                    marker="o",
                    linestyle="",
                    markersize=np.sqrt(sizes[h]),
                    markerfacecolor="none",
                    label=f"H = {h}" if h >= 0 else "H n/a",
                )
            )
        if handles:
            outside_legend(axes[min(len(names), ncols) - 1], handles)
        if absent:
            fig.text(
                0.01,
                0.0,
                f"Not drawn, having no log evidence: {', '.join(absent)}.",
                ha="left",
                va="top",
                fontsize="small",
                color="0.3",
            )
        fig.suptitle("Log evidence against test error")
    return fig
