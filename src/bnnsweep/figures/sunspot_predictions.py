"""``sunspot_predictions``: one-step-ahead predictions with one-standard-deviation error bars
against the target series (paper 000 fig. 3).

Paper 000 fig. 3 draws the one-step-ahead prediction of a three-component variational
committee (config/sunspots_committee.yaml) over the test years 1921-1979 as a solid line, the prediction plus and minus one
standard deviation as dashed lines and the targets as circles. Here one panel per dataset
and method label (and per value of every sweep axis it uses, e.g. ``components``) draws
the run of smallest seed the same way: ``pred_mean`` solid, ``pred_mean +- sqrt(pred_var)``
dashed (the predictive variance includes the noise), ``y_test`` as circles, against the
target year when the dataset's metadata give ``test_target_years`` (else the test index).

Each title gives the drawn run's test NMSE, the mean +- s.e. of the test NMSE over every
usable run of the panel's label (seeds), the fraction of targets inside the +-1 s.d. bars
(about 0.68 for calibrated Gaussian predictions) and the published NMSE of
:mod:`.published` for the dataset and method. Only output 0 is drawn; diverged runs are
left out.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr
from matplotlib.figure import Figure

from ..sweeps.axes import NOT_APPLICABLE
from ._common import (
    dataset_meta,
    mean_se,
    new_figure,
    note_figure,
    run_palette,
    runs_frame,
    style,
    usable,
)
from .published import references

ERROR_BAR_SD = 1.0
"""Half-width of the error bars in predictive standard deviations (paper 000 fig. 3)."""


def target_years(dataset: str, n_points: int) -> tuple[np.ndarray, str]:
    """The x-axis of a test series: the target years from the dataset's metadata
    (``test_target_years`` = [first, last]) when they count ``n_points`` years, else the
    test-point index."""
    span = dataset_meta(dataset).get("test_target_years")
    if span is not None and int(span[1]) - int(span[0]) + 1 == n_points:
        return np.arange(int(span[0]), int(span[1]) + 1), "target year"
    return np.arange(n_points), "test point"


def series(ds: xr.Dataset, run: int) -> dict[str, np.ndarray]:
    """Mean, predictive s.d. and target of output 0 of one run, test points padded with NaN
    (a shorter test set than the merged file's longest) removed."""
    one = ds.isel(run=run)
    mean = one["pred_mean"].values[:, 0]
    sd = np.sqrt(np.maximum(one["pred_var"].values[:, 0], 0.0))
    target = one["y_test"].values[:, 0]
    keep = np.isfinite(target)
    return {"mean": mean[keep], "sd": sd[keep], "target": target[keep]}


def coverage(mean: np.ndarray, sd: np.ndarray, target: np.ndarray, width: float) -> float:
    """Fraction of targets inside mean +- width * sd (NaN predictions count as outside)."""
    with np.errstate(invalid="ignore"):
        inside = np.abs(target - mean) <= width * sd
    return float(np.mean(inside)) if target.size else float("nan")


def published_nmse(dataset: str, method: str) -> str:
    refs = references(dataset, method).get("test_nmse", ())
    return "; ".join(f"{ref.value:g} ({ref.short})" for ref in refs)


def _axis_columns(runs: pd.DataFrame) -> list[str]:
    """Sweep axes that take more than their not-applicable value in these runs."""
    return [a for a, na in NOT_APPLICABLE.items() if a in runs and (runs[a] != na).any()]


def _label(row: pd.Series, axes: list[str]) -> str:
    parts = [str(row["method"])]
    for axis in axes:
        if row[axis] != NOT_APPLICABLE[axis]:
            parts.append(f"{axis} {row[axis]}")
    return " · ".join(parts)


def sunspot_predictions(ds: xr.Dataset) -> Figure:
    runs = usable(runs_frame(ds))
    if runs.empty or "pred_var" not in ds or "y_test" not in ds:
        return note_figure("no usable runs with predictions in the merged file", "predictions")
    axes_used = _axis_columns(runs)
    keys = ["dataset", "method", *axes_used]
    groups = list(runs.sort_values(["seed", "split", "run"]).groupby(keys, sort=True))
    palette = run_palette(ds)
    with style():
        fig = new_figure(11.0, 2.9 * len(groups) + 0.6)
        axes = fig.subplots(len(groups), 1, squeeze=False)[:, 0]
        for ax, (_, group) in zip(axes, groups, strict=True):
            row = group.iloc[0]
            s = series(ds, int(row["run"]))
            x, x_label = target_years(str(row["dataset"]), s["target"].size)
            colour = palette[str(row["method"])]
            ax.plot(x, s["mean"], color=colour, linewidth=1.6, label="one-step prediction")
            for sign in (-1.0, 1.0):
                ax.plot(
                    x,
                    s["mean"] + sign * ERROR_BAR_SD * s["sd"],
                    color=colour,
                    linestyle="--",
                    linewidth=0.9,
                    label=f"±{ERROR_BAR_SD:g} s.d." if sign > 0 else None,
                )
            ax.scatter(x, s["target"], s=16, facecolors="none", edgecolors="black", label="targets")
            mean, se, n = mean_se(group["test_nmse"])
            spread = f"{mean:.3f} ± {se:.2g} over {n} seeds" if n > 1 else f"{mean:.3f}"
            published = published_nmse(str(row["dataset"]), str(row["method"]))
            cover = coverage(s["mean"], s["sd"], s["target"], ERROR_BAR_SD)
            ax.set_title(
                f"{row['dataset']} · {_label(row, axes_used)} (seed {row['seed']}): test NMSE "
                f"{float(row['test_nmse']):.3f}; all runs {spread}; "
                f"{cover:.0%} of targets within ±{ERROR_BAR_SD:g} s.d.\n"
                f"published NMSE: {published or 'none stored'}",
                fontsize="small",
            )
            ax.set_xlabel(x_label)
            ax.set_ylabel("target (original units)")
            ax.legend(loc="upper right", fontsize="x-small", ncols=3)
        fig.suptitle(
            f"One-step-ahead predictions with ±{ERROR_BAR_SD:g} s.d. error bars, a panel per "
            "method\n(drawn as paper 000 fig. 3 draws its three-component variational committee)"
        )
    return fig
