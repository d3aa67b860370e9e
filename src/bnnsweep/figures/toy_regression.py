"""``toy_regression``: predictive mean, +-1 s.d. band and posterior function draws over the
input (thesis fig. 5.3; paper 000 fig. 1).

For datasets with one input only. One row per (dataset, hidden units), one column per
method; each panel shows, for the run with the smallest seed (first split in sorted order),
the predictive mean, the band mean +- sqrt(pred_var) (the predictive variance includes
the noise), the method's posterior function draws (``pred_function_samples``, when recorded)
as thin lines, the test targets as a thin line (for the toy problems the noise-free function)
and the training points, which are not in the merged file and are reloaded with
``bnnsweep.datasets.load(dataset).split(split)``. Only output 0 is drawn.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from ._common import method_palette, new_figure, note, note_figure, runs_frame, style

BAND_SD = 1.0
"""Half-width of the predictive band in standard deviations (thesis fig. 5.3)."""


def _n_inputs(ds: xr.Dataset) -> np.ndarray:
    """Per run, the number of input columns with any finite test input (padding is NaN)."""
    x = ds["x_test"].transpose("run", "test_point", "input").values
    return np.isfinite(x).any(axis=1).sum(axis=1)


def _training_data(dataset: str, split: str) -> tuple[np.ndarray, np.ndarray] | None:
    from .. import datasets

    try:
        s = datasets.load(dataset).split(split)
    except Exception:  # not a registered dataset, or the split is unknown
        return None
    return s.x_train[:, 0], s.y_train[:, 0] * s.y_scale[0] + s.y_mean[0]


def _panel(ax, ds: xr.Dataset, run: int, color, train) -> tuple[float, ...] | None:
    """Draw one run; return the range of its mean, targets and training targets, and that
    range widened to the band."""
    one = ds.isel(run=run)
    x = one["x_test"].values[:, 0]
    mean = one["pred_mean"].values[:, 0]
    sd = np.sqrt(np.maximum(one["pred_var"].values[:, 0], 0.0))
    target = one["y_test"].values[:, 0]
    keep = np.isfinite(x)
    order = np.argsort(x[keep])
    x, mean, sd, target = (a[keep][order] for a in (x, mean, sd, target))
    ax.fill_between(
        x,
        mean - BAND_SD * sd,
        mean + BAND_SD * sd,
        color=color,
        alpha=0.22,
        linewidth=0,
        label=f"±{BAND_SD:g} s.d. (incl. noise)",
    )
    if "pred_function_samples" in one:
        draws = one["pred_function_samples"].transpose("function_sample", ...).values[..., 0]
        draws = [d[keep][order] for d in draws if np.isfinite(d[keep]).all()]
        for k, draw in enumerate(draws):
            label = "posterior draws" if k == 0 else None
            ax.plot(x, draw, color=color, linewidth=0.5, alpha=0.6, label=label)
    ax.plot(x, target, color="0.2", linewidth=0.8, label="test targets")
    ax.plot(x, mean, color=color, linewidth=1.8, label="predictive mean")
    if train is not None:
        ax.scatter(train[0], train[1], s=14, color="black", zorder=4, label="training data")
    else:
        ax.text(
            0.02,
            0.02,
            "training data unavailable",
            transform=ax.transAxes,
            fontsize="x-small",
            color="0.35",
        )
    data = [mean, target] + ([train[1]] if train is not None else [])
    values = np.concatenate([np.ravel(v) for v in data])
    values = values[np.isfinite(values)]
    if values.size == 0:
        return None
    lo, hi = float(values.min()), float(values.max())
    with np.errstate(invalid="ignore"):
        band_lo = float(np.nanmin(np.append(mean - BAND_SD * sd, lo)))
        band_hi = float(np.nanmax(np.append(mean + BAND_SD * sd, hi)))
    return lo, hi, band_lo, band_hi


def _limits(ranges: list[tuple[float, ...]]) -> tuple[float, float] | None:
    """y-limits that keep the curves and data readable: the range of means, targets and
    training data plus 60% each side, so that a very wide band is clipped rather than
    squashing the fit (and no wider than the bands need)."""
    if not ranges:
        return None
    lo, hi, band_lo, band_hi = (f(r[k] for r in ranges) for k, f in enumerate((min, max) * 2))
    span = hi - lo if hi > lo else 1.0
    return max(lo - 0.6 * span, band_lo - 0.05 * span), min(hi + 0.6 * span, band_hi + 0.05 * span)


def _legend_handles(drawn: set[str]) -> list:
    """Legend entries for what some panel draws, in grey: each panel draws in its method's
    colour (named in its title), so a coloured entry would claim one method's colour for
    all of them."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    kinds = [
        (f"±{BAND_SD:g} s.d. (incl. noise)", Patch(facecolor="0.5", alpha=0.3, linewidth=0)),
        ("posterior draws", Line2D([], [], color="0.5", linewidth=0.5)),
        ("predictive mean", Line2D([], [], color="0.5", linewidth=1.8)),
        ("test targets", Line2D([], [], color="0.2", linewidth=0.8)),
        ("training data", Line2D([], [], color="black", marker="o", markersize=4, linestyle="")),
    ]
    handles = []
    for label, handle in kinds:
        if label in drawn:
            handle.set_label(label)
            handles.append(handle)
    return handles


def toy_regression(ds: xr.Dataset) -> Figure:
    runs = runs_frame(ds)
    if runs.empty or "x_test" not in ds:
        return note_figure("no runs with test inputs in the merged file", "toy regression")
    palette = method_palette(runs["method"])
    runs = runs.assign(n_inputs=_n_inputs(ds))
    names = sorted(runs["dataset"].unique())
    one_input = [n for n in names if (runs.loc[runs["dataset"] == n, "n_inputs"] == 1).all()]
    if not one_input:
        return note_figure(
            "no one-input dataset in the merged file (datasets: " + ", ".join(names) + ")",
            "toy regression",
        )
    runs = runs[runs["dataset"].isin(one_input)]
    methods = sorted(runs["method"].unique())
    rows = sorted({(d, int(h)) for d, h in zip(runs["dataset"], runs["hidden"], strict=True)})
    chosen = (
        runs.sort_values(["seed", "split", "run"])
        .groupby(["dataset", "hidden", "method"], sort=False)
        .head(1)
    )
    same_run = chosen[["seed", "split"]].drop_duplicates()
    one_run = len(same_run) == 1
    with style():
        fig = new_figure(3.6 * len(methods) + 0.8, 2.9 * len(rows) + 0.6)
        axes = fig.subplots(len(rows), len(methods), squeeze=False, sharex="row", sharey="row")
        train_cache: dict[tuple[str, str], object] = {}
        for i, (dataset, hidden) in enumerate(rows):
            ranges = []
            h_label = f"H = {hidden}" if hidden >= 0 else "H n/a"
            for j, method in enumerate(methods):
                ax = axes[i, j]
                ax.set_title(method, color=palette[method], fontweight="bold")
                pick: pd.DataFrame = chosen[
                    (chosen["dataset"] == dataset)
                    & (chosen["hidden"] == hidden)
                    & (chosen["method"] == method)
                ]
                if pick.empty:
                    note(ax, "no run")
                    continue
                row = pick.iloc[0]
                key = (dataset, str(row["split"]))
                if key not in train_cache:
                    train_cache[key] = _training_data(*key)
                span = _panel(ax, ds, int(row["run"]), palette[method], train_cache[key])
                if span is not None:
                    ranges.append(span)
                if not one_run:
                    ax.set_title(f"{method} (seed {row['seed']}, split {row['split']})")
                if i == len(rows) - 1:
                    ax.set_xlabel("input x")
                # few x ticks: the labels of neighbouring panels ran into each other
                ax.xaxis.set_major_locator(MaxNLocator(nbins=4))
            axes[i, 0].set_ylabel(f"{dataset}, {h_label}\ntarget y")
            limits = _limits(ranges)
            if limits is not None:
                axes[i, 0].set_ylim(*limits)
        drawn = {label for ax in axes.ravel() for label in ax.get_legend_handles_labels()[1]}
        handles = _legend_handles(drawn)
        if handles:
            fig.legend(
                handles=handles,
                loc="upper center",
                bbox_to_anchor=(0.5, 0.0),
                ncols=len(handles),
                title="in each panel's colour: its method's",
                title_fontsize="small",
            )
        draws = " and posterior function draws" if "posterior draws" in drawn else ""
        run = (
            f" (seed {same_run.iloc[0]['seed']}, split {same_run.iloc[0]['split']})"
            if one_run
            else ""
        )
        fig.suptitle(
            f"Predictive mean, ±{BAND_SD:g} s.d. band{draws}, a row per dataset and H{run}"
        )
    return fig
