"""``laplace_slices``: thesis fig. 5.4 from method ``posterior_slices``: the log of the
Laplace approximation (dotted) beside the log of the true posterior at the same
hyperparameters (solid) along each eigenvector of the approximation's covariance, largest
variance first, as the thesis orders its panels.

One run is drawn (the first usable run of the first dataset, lowest seed). The abscissa is the
offset from the mode in s.d.s of the approximation along that direction; both curves are 0 at
the mode. Where the true log posterior falls far below the approximation's parabola the axis
is cut at four times the parabola's depth and the panel gives the true curve's lowest value:
the thesis's "for larger eigenvalues the approximation is very poor".
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from ._common import new_figure, note_figure, runs_frame, style, usable
from .adf_classification import mark_stand_ins

TITLE = "Thesis fig. 5.4: log Laplace approximation (dotted) and log true posterior (solid)"
COLUMNS = 4


def slice_run(ds: xr.Dataset, variable: str) -> int | None:
    """Index along ``run`` of the first usable ``posterior_slices`` run (by dataset, then
    seed) that holds ``variable``; None when there is none."""
    if variable not in ds:
        return None
    runs = usable(runs_frame(ds))
    finite = np.isfinite(ds[variable].values.reshape(ds.sizes["run"], -1)).any(axis=1)
    runs = runs[finite[runs["run"].to_numpy(int)]]
    if runs.empty:
        return None
    return int(runs.sort_values(["dataset", "seed", "run"]).iloc[0]["run"])


def run_title(ds: xr.Dataset, run: int) -> str:
    one = ds.isel(run=run)
    hidden = f", {int(one['hidden'])} hidden units" if "hidden" in one else ""
    return f"{one['dataset'].item()}{hidden}, seed {int(one['seed'])}"


def laplace_slices(ds: xr.Dataset) -> Figure:
    run = slice_run(ds, "laplace_slice_true")
    if run is None:
        return note_figure("no posterior_slices runs in this merged file", TITLE)
    one = ds.isel(run=run)
    variance = one["laplace_slice_variance"].values
    keep = np.isfinite(variance)
    variance = variance[keep]
    offset = one["laplace_slice_offset"].values[keep]
    true = one["laplace_slice_true"].values[keep]
    approx = one["laplace_slice_approx"].values[keep]
    rows = int(np.ceil(len(variance) / COLUMNS))
    with style():
        fig = new_figure(2.6 * COLUMNS, 1.9 * rows + 1.0)
        axes = np.atleast_1d(fig.subplots(rows, COLUMNS, squeeze=False)).ravel()
        for i, ax in enumerate(axes):
            if i >= len(variance):
                ax.set_axis_off()
                continue
            x = offset[i] / np.sqrt(variance[i])
            ax.plot(x, true[i], color="k", lw=1.2, label="true")
            ax.plot(x, approx[i], color="C0", ls=":", lw=1.6, label="Laplace")
            floor = 4.0 * approx[i].min()
            lowest = np.nanmin(true[i])
            if lowest < floor:
                ax.set_ylim(floor, 0.1 * abs(floor))
                ax.text(0.5, 0.04, f"true falls to {lowest:.3g}", transform=ax.transAxes,
                        ha="center", fontsize=6, color="0.3")  # fmt: skip
            ax.set_title(f"{i + 1}: variance {variance[i]:.3g}", fontsize=7)
            ax.tick_params(labelsize=6)
            if i % COLUMNS == 0:
                ax.set_ylabel("log density - value at mode", fontsize=6)
            if i >= len(variance) - COLUMNS:
                ax.set_xlabel("offset along eigenvector, s.d.", fontsize=6)
        axes[0].legend(fontsize=6, loc="lower center")
        fig.suptitle(f"{TITLE}\n{run_title(ds, run)}; eigenvectors of the Laplace covariance, "
                     "largest variance first", fontsize=9)  # fmt: skip
        mark_stand_ins(fig, [str(one["dataset"].item())])
    return fig
