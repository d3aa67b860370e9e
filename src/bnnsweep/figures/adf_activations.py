"""``adf_expected_activations``: paper 004 fig. 1 from method ``adf_activations``: the
expected output of a sign unit (left) and of a rectified linear unit (right) against the mean
of its Gaussian input, one curve per input variance, the unit's own activation dashed, and
the Monte Carlo check's sample means as dots ("as the variance of the input decreases the
expected responses tend towards the activations they approximate")."""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from ._common import new_figure, note_figure, style
from .gaussian_fits import first_run

TITLE = "Paper 004 fig. 1: expected activations under a Gaussian input"
PANELS = {"sign": "sign unit", "relu": "rectified linear unit"}


def adf_expected_activations(ds: xr.Dataset) -> Figure:
    found = first_run(ds, "adf_activations", "sign_mean")
    if found is None:
        return note_figure("no adf_activations runs in this merged file", TITLE)
    runs, one = found
    mu, taus, checked = (one[f"{axis}_value"].values
                         for axis in ("input_mean", "input_variance", "checked_mean"))  # fmt: skip
    taus = taus[np.isfinite(taus)]
    keep = np.isfinite(mu)
    with style():
        fig = new_figure(10.0, 4.4)
        axes = fig.subplots(1, 2)
        for ax, (unit, title) in zip(axes, PANELS.items(), strict=True):
            mean, sample = one[f"{unit}_mean"].values, one[f"{unit}_mc_mean"].values
            for i, tau in enumerate(taus):
                colour = f"C{i}"
                ax.plot(mu[keep], mean[i, keep], color=colour, label=f"input variance {tau:g}")
                ax.plot(checked, sample[i], ".", color=colour, markersize=3)
            hard = np.sign(mu[keep]) if unit == "sign" else np.maximum(mu[keep], 0.0)
            ax.plot(mu[keep], hard, "k--", linewidth=0.8, label="the activation itself")
            ax.set_xlabel("mean of the unit's input")
            ax.set_ylabel("expected activation E[z]")
            worst = float(runs[f"diag_mc_max_abs_z_{unit}"].max())
            ax.set_title(f"{title}; Monte Carlo dots, largest |z| {worst:.1f}", fontsize=9)
            ax.legend(loc="upper left", fontsize=7)
        fig.suptitle(TITLE, fontsize=10)
    return fig
