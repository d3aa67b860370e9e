"""``gaussian_fits``: paper 002 fig. 1 from method ``gaussian_fits``: the posterior of a two-
weight network with its Laplace and minimum-KL Gaussian fits.

Left: contours of the grid-normalised posterior over the whole grid (both images of the
weight-sign symmetry). Right: the mode the fits sit on, with the 1 and 2 s.d. ellipses of the
Laplace, diagonal and full-covariance Gaussians; the legend gives each fit's KL(Q || p)
beside the value paper 002 prints. The paper prints neither its data nor its model: the
title says which set stands in for them.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from ._common import new_figure, note_figure, runs_frame, style
from .adf_error_bars import stand_in_line

TITLE = "Paper 002 fig. 1: Laplace and minimum-KL Gaussian fits to the posterior"
PUBLISHED_KL = {"laplace": 41.0, "diagonal": 4.6, "full": 3.9}
"""Paper 002 fig. 1's caption: KL of the Laplace fit, the diagonal and the full minimum-KL
Gaussians."""
FIT_LABELS = {"laplace": "Laplace", "diagonal": "min. KL, diagonal", "full": "min. KL, full"}
FIT_COLOURS = {"laplace": "C3", "diagonal": "C0", "full": "C2"}


def _ellipse(mean: np.ndarray, cov: np.ndarray, radius: float) -> np.ndarray:
    """(2, 200) points of the ellipse (w - mean)^T cov^-1 (w - mean) = radius^2."""
    angle = np.linspace(0.0, 2.0 * np.pi, 200)
    circle = np.stack([np.cos(angle), np.sin(angle)])
    return mean[:, None] + radius * np.linalg.cholesky(cov) @ circle


def first_run(ds: xr.Dataset, method: str, variable: str):
    """(runs of ``method``, the first of them as a Dataset), or None when the merged file has
    none or lacks ``variable``."""
    runs = runs_frame(ds)
    runs = runs[runs["method"] == method] if "method" in runs else runs
    if runs.empty or variable not in ds:
        return None
    return runs, ds.isel(run=int(runs["run"].iloc[0]))


def gaussian_fits(ds: xr.Dataset) -> Figure:
    found = first_run(ds, "gaussian_fits", "fit_mean")
    if found is None:
        return note_figure("no gaussian_fits runs in this merged file", TITLE)
    runs, one = found
    axis = one["plane_axis"].values
    log_p = one["plane_log_posterior"].values
    fits = [str(f) for f in one["fit"].values]
    means, covs = one["fit_mean"].values, one["fit_covariance"].values
    row = runs.iloc[0]
    with style():
        fig = new_figure(10.0, 4.8)
        ax, bx = fig.subplots(1, 2)
        levels = np.max(log_p) - np.array([20.0, 10.0, 4.5, 2.0, 0.5])
        for panel in (ax, bx):
            panel.contour(
                axis, axis, log_p.T, levels=levels, colors="0.4", linewidths=0.7, linestyles="solid"
            )
            panel.set_xlabel("u (input-hidden weight)")
            panel.set_ylabel("v (hidden-output weight)")
        spread = max(np.sqrt(np.max(np.linalg.eigvalsh(c))) for c in covs)
        centre = means[fits.index("full")]
        for name, mean, cov in zip(fits, means, covs, strict=True):
            colour = FIT_COLOURS.get(name, "k")
            kl = float(row[f"diag_kl_{name}"])
            label = f"{FIT_LABELS.get(name, name)}: KL {kl:.2f} (paper {PUBLISHED_KL[name]:g})"
            for radius, style_ in ((1.0, "solid"), (2.0, "dashed")):
                points = _ellipse(mean, cov, radius)
                bx.plot(points[0], points[1], color=colour, linestyle=style_,
                        label=label if radius == 1.0 else None)  # fmt: skip
            bx.plot(*mean, "+", color=colour)
            ax.plot(*mean, "+", color=colour)
        half = 3.0 * spread
        bx.set_xlim(centre[0] - half, centre[0] + half)
        bx.set_ylim(centre[1] - half, centre[1] + half)
        ax.set_title("posterior, ln p contours 0.5-20 below the mode", fontsize=9)
        bx.set_title("fits: 1 s.d. (solid), 2 s.d. (dashed)", fontsize=9)
        bx.legend(loc="upper right", fontsize=7)
        subtitle = stand_in_line(sorted(set(runs["dataset"]))) or ""
        fig.suptitle(f"{TITLE}\n{subtitle}", fontsize=9)
    return fig
