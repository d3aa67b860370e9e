"""``mixture_target``: thesis fig. 5.6 from method ``vi_mixture_target``: a two-component
diagonal mixture fitted by the mutual-information bound to a correlated 2-D Gaussian.

Left: three contours of the target (solid) and of the fitted mixture of the run with the
largest bound (dotted), the means of the quadrature-optimal mixture as crosses. Right: per
run, the KL of the best diagonal Gaussian, -L of the mixture fit (the KL its bound
certifies), the true KL of the fitted mixture and the minimum true KL over such mixtures.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from ._common import new_figure, note_figure, runs_frame, style

TITLE = "Thesis fig. 5.6: two diagonal Gaussians fitted to a correlated Gaussian"
KL_COLUMNS = {
    "diag_kl_diagonal": "diagonal Gaussian",
    "diag_kl_mixture_bound": "mixture, -bound",
    "diag_kl_mixture_exact": "mixture, true KL",
    "diag_kl_mixture_minimum": "optimum (quadrature)",
}


def _log_gaussian(points, mean, cov):
    diff = points - mean
    return -0.5 * np.einsum("...i,ij,...j->...", diff, np.linalg.inv(cov), diff)


def _mixture_density(points, weights, means, sds):
    z = (points[..., None, :] - means) / sds
    dens = np.exp(-0.5 * np.sum(z * z, axis=-1)) / np.prod(2 * np.pi * sds * sds, axis=-1) ** 0.5
    return dens @ weights


def mixture_target(ds: xr.Dataset) -> Figure:
    runs = runs_frame(ds)
    runs = runs[runs["method"] == "vi_mixture_target"] if "method" in runs else runs
    if runs.empty or "component_mean" not in ds:
        return note_figure("no vi_mixture_target runs in this merged file", TITLE)
    best = int(runs.loc[runs["diag_kl_mixture_bound"].idxmin(), "run"])
    one = ds.isel(run=best)
    cov = one["target_covariance"].values
    weights = one["mixing_weight"].values
    keep = np.isfinite(weights)
    means, sds = one["component_mean"].values[keep], one["component_sd"].values[keep]
    ref = one["reference_mean"].values
    ref = ref[np.isfinite(ref[:, 0])]
    grid = np.linspace(-1.5, 1.5, 301)
    points = np.stack(np.meshgrid(grid, grid, indexing="xy"), axis=-1)
    target = np.exp(_log_gaussian(points, np.zeros(2), cov))
    mixture = _mixture_density(points, weights[keep], means, sds)
    with style():
        fig = new_figure(10.0, 4.6)
        ax, bx = fig.subplots(1, 2)
        levels = np.exp(-0.5 * np.array([9.0, 4.0, 1.0]))  # 3, 2 and 1 s.d. of the target
        ax.contour(grid, grid, target, levels=levels, colors="k", linestyles="solid")
        ax.contour(grid, grid, mixture / mixture.max(), levels=levels, colors="C0",
                   linestyles="dotted")  # fmt: skip
        ax.plot(ref[:, 0], ref[:, 1], "x", color="C3", label="optimum's means (quadrature)")
        ax.plot(means[:, 0], means[:, 1], ".", color="C0", label="fitted means")
        ax.set_aspect("equal")
        ax.set_xlabel("w1")
        ax.set_ylabel("w2")
        ax.legend(loc="upper left", fontsize=7)
        ax.set_title(f"target (solid), mixture (dotted), run {best}", fontsize=9)
        for i, column in enumerate(KL_COLUMNS):
            values = runs[column].to_numpy(float)
            bx.plot(np.full(values.size, i) + np.linspace(-0.1, 0.1, values.size), values, "o",
                    color=f"C{i}")  # fmt: skip
            bx.annotate(f"{np.min(values):.4f}", (i, np.min(values)), textcoords="offset points",
                        xytext=(8, -10), fontsize=7)  # fmt: skip
        bx.set_xticks(range(len(KL_COLUMNS)), list(KL_COLUMNS.values()), rotation=15, fontsize=8)
        bx.set_ylabel("KL(q || p), nats")
        bx.set_title(f"{len(runs)} seeds; separation along the correlation "
                     f"{runs['diag_separation_along'].min():.1f}-"
                     f"{runs['diag_separation_along'].max():.1f} component s.d.",
                     fontsize=9)  # fmt: skip
        fig.suptitle(TITLE, fontsize=10)
    return fig
