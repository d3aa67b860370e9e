"""``mixture_slices``: thesis fig. 5.5 from method ``posterior_slices``: the log of the
variational mixture (dotted) beside the log of the true posterior at the same
hyperparameters (solid) along the line through the means of each pair of components, panel
(i, j) in row i and column j as the thesis lays them out.

One run is drawn (the first usable run of the first dataset, lowest seed). The abscissa runs
from component i's mean (0) to component j's (1); the true log posterior's normaliser is
unknown, so it is shifted by the one constant that makes its maximum over all lines the
mixture's. Above the panels, the mutual information of the fit: the lower bound I* it was
trained with, I(m; w) itself by Monte Carlo, and the ceiling -sum Q ln Q (the thesis's
"minimum overlap" upper bound), beside the thesis's printed 1.5229 and 1.5614.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from ._common import new_figure, note_figure, style
from .adf_classification import mark_stand_ins
from .laplace_slices import run_title, slice_run

TITLE = "Thesis fig. 5.5: log variational mixture (dotted) and log true posterior (solid)"
PUBLISHED_MI = {"bound": 1.5229, "limit": 1.5614}
"""Thesis sec. 5.5.1: I* at the end of training, and the minimum-overlap upper bound."""
DEEPEST = 60.0
"""The panels show at most this many nats below the highest point of any curve."""


def _diagnostic(one: xr.Dataset, name: str) -> float:
    return float(one[name]) if name in one else float("nan")


def mutual_information_line(one: xr.Dataset) -> str:
    bound = _diagnostic(one, "diag_mutual_information_bound")
    mc = _diagnostic(one, "diag_mutual_information_mc")
    mc_se = _diagnostic(one, "diag_mutual_information_mc_se")
    limit = _diagnostic(one, "diag_mutual_information_limit")
    return (
        f"I* (the bound) {bound:.4f} <= I(m; w) by Monte Carlo {mc:.4f} ± {mc_se:.4f} <= "
        f"-sum Q ln Q {limit:.4f};  thesis: I* {PUBLISHED_MI['bound']}, "
        f"minimum-overlap bound {PUBLISHED_MI['limit']}"
    )


def mixture_slices(ds: xr.Dataset) -> Figure:
    run = slice_run(ds, "mixture_slice_true")
    if run is None:
        return note_figure("no posterior_slices runs in this merged file", TITLE)
    one = ds.isel(run=run)
    pairs = one["mixture_slice_pair"].values
    keep = np.isfinite(pairs).all(axis=1)
    pairs = pairs[keep].astype(int)
    position = one["mixture_slice_position"].values
    true, approx = one["mixture_slice_true"].values[keep], one["mixture_slice_approx"].values[keep]
    if not len(pairs):
        return note_figure("the mixture has one component: no line between two means", TITLE)
    M = int(pairs.max()) + 1
    values = np.concatenate([true.ravel(), approx.ravel()])
    values = values[np.isfinite(values)]
    top = float(values.max())
    depth = min(float(top - values.min()), DEEPEST) * 1.05
    with style():
        size = 2.3 * (M - 1)
        fig = new_figure(size + 0.6, size + 1.2)
        axes = fig.subplots(M - 1, M - 1, squeeze=False)
        used = set()
        for k, (i, j) in enumerate(pairs):
            ax = axes[i, j - 1]
            used.add((i, j - 1))
            ax.plot(position, true[k], color="k", lw=1.2, label="true")
            ax.plot(position, approx[k], color="C0", ls=":", lw=1.6, label="mixture")
            ax.set_ylim(top - depth, top + 0.05 * depth)
            ax.axvline(0.0, color="0.8", lw=0.6)
            ax.axvline(1.0, color="0.8", lw=0.6)
            ax.set_title(f"components {i + 1} and {j + 1}", fontsize=7)
            ax.tick_params(labelsize=6)
        for r in range(M - 1):
            for c in range(M - 1):
                if (r, c) not in used:
                    axes[r, c].set_axis_off()
        axes[0, 0].legend(fontsize=6, loc="lower center")
        axes[0, 0].set_xlabel("0: mean of first, 1: of second", fontsize=6)
        fig.suptitle(f"{TITLE}\n{run_title(ds, run)}; {mutual_information_line(one)}",
                     fontsize=8)  # fmt: skip
        mark_stand_ins(fig, [str(one["dataset"].item())])
    return fig
