"""``nrd_hidden_units``: hidden units retained by node-relevance structure learning against
the number of training cases (thesis sec. 6.5.10, fig. 6.17).

One line per method label with ``diag_retained_hidden`` (``vi_gauss`` with ``structure:
nrd``) and one panel per dataset: the mean over splits and seeds of the hidden units left
after node removal, with +- one standard deviation as error bars (the thesis's bars), at each
training-set size ``n_train``. The starting H is marked as a dashed line.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from ._common import new_figure, note_figure, outside_legend, run_palette, runs_frame, style


def nrd_hidden_units(ds: xr.Dataset) -> Figure:
    runs = runs_frame(ds)
    needed = {"diag_retained_hidden", "n_train"}
    if runs.empty or not needed <= set(runs.columns):
        return note_figure(
            "no runs with diag_retained_hidden and n_train (vi_gauss with structure: nrd)",
            "NRD structure learning",
        )
    runs = runs[np.isfinite(runs["diag_retained_hidden"].astype(float))]
    if runs.empty:
        return note_figure("no finite diag_retained_hidden", "NRD structure learning")
    names = sorted(runs["dataset"].unique())
    palette = run_palette(ds)
    with style():
        fig = new_figure(5.5 * len(names) + 1.5, 3.8)
        axes = fig.subplots(1, len(names), squeeze=False)[0]
        for ax, name in zip(axes, names, strict=True):
            one = runs[runs["dataset"] == name]
            handles = []
            for method, group in one.groupby("method", sort=True):
                stats = group.groupby("n_train")["diag_retained_hidden"].agg(["mean", "std"])
                handles.append(
                    ax.errorbar(
                        stats.index.to_numpy(float),
                        stats["mean"].to_numpy(float),
                        yerr=stats["std"].fillna(0.0).to_numpy(float),
                        marker="o",
                        capsize=3,
                        color=palette[method],
                        label=method,
                    )
                )
            start = one["hidden"].max()
            if start > 0:
                ax.axhline(start, color="0.5", linestyle="--", linewidth=0.8)
            ax.set_xscale("log")
            ax.set_xlabel("training cases N")
            ax.set_ylabel("hidden units retained")
            ax.set_title(f"{name}: NRD node removal (start H = {start})")
            outside_legend(ax, handles, title="method")
    return fig
