"""Figures of the ADF classification and count experiments (paper 004 Fig. 2).

``adf_toy_classification``
    predictive probability of class 1 on the [-6, 6]^2 grid of the two-class toy, one panel
    per method (PBP, EBP, the point estimate, an ``hmc``/``relu_hmc`` reference when present), training
    points overlaid; with a reference run each panel's title gives the mean pointwise KL
    divergence KL(reference || method) over the grid.
``adf_epoch_error``
    test error (error rate, mean absolute deviation or RMSE, as the dataset's task says)
    against epoch, mean +- s.e. over splits, one panel per dataset, from the
    ``epoch_test_error`` trace of ``pbp``/``ebp`` cells (paper 004 Fig. 2 bottom (b)-(d)). A
    panel of a stand-in dataset says so in its title, and the figure in red at its foot.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from ._common import (
    dataset_meta,
    new_figure,
    note_figure,
    run_palette,
    runs_frame,
    style,
    usable,
)

REFERENCE = ("hmc", "relu_hmc")
ERROR_LABELS = {
    "error_rate": "test error rate",
    "mad": "test mean absolute deviation",
    "rmse": "test RMSE",
}


def pointwise_kl(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """KL(p || q) of categorical distributions along the last axis."""
    p = np.clip(p, 1e-12, 1.0)
    q = np.clip(q, 1e-12, 1.0)
    return np.sum(p * (np.log(p) - np.log(q)), axis=-1)


def _training_points(dataset: str, split: str):
    from .. import datasets

    try:
        s = datasets.load(dataset).split(split)
    except Exception:  # an unregistered (test) dataset: no overlay
        return None
    return s.x_train, s.y_train[:, 0]


def adf_toy_classification(ds: xr.Dataset) -> Figure:
    if "class_probs" not in ds or "x_test" not in ds:
        return note_figure("no class probabilities in these runs", "ADF toy classification")
    runs = usable(runs_frame(ds))
    runs = runs[[np.isfinite(ds["class_probs"].isel(run=r).values).all() for r in runs["run"]]]
    if runs.empty or ds["x_test"].sizes.get("input", 0) != 2:
        return note_figure("needs runs with two inputs and class probabilities", "ADF toy")
    panels = list(runs.groupby(["dataset", "split", "method"], sort=True))
    reference = {
        (d, s): ds["class_probs"].isel(run=int(g["run"].iloc[0])).values
        for (d, s, m), g in panels
        if m in REFERENCE
    }
    with style():
        fig = new_figure(3.4 * len(panels), 3.4)
        for k, ((dataset, split, method), group) in enumerate(panels):
            ax = fig.add_subplot(1, len(panels), k + 1)
            r = int(group["run"].iloc[0])
            x = ds["x_test"].isel(run=r).values
            probs = ds["class_probs"].isel(run=r).values
            g1, g2 = np.unique(x[:, 0]), np.unique(x[:, 1])
            if g1.size * g2.size != len(x):
                ax.scatter(x[:, 0], x[:, 1], c=probs[:, 1], cmap="RdBu_r", vmin=0, vmax=1, s=4)
            else:
                order = np.lexsort((x[:, 0], x[:, 1]))
                grid = probs[order, 1].reshape(g2.size, g1.size)
                ax.pcolormesh(g1, g2, grid, cmap="RdBu_r", vmin=0, vmax=1, shading="auto")
            train = _training_points(dataset, split)
            if train is not None:
                ax.scatter(*train[0].T, c=train[1], cmap="RdBu_r", vmin=0, vmax=1,
                           edgecolors="k", s=30)  # fmt: skip
            title = method
            ref = reference.get((dataset, split))
            if ref is not None and method not in REFERENCE:
                title += f" (KL {np.mean(pointwise_kl(ref, probs)):.3f})"
            ax.set_title(title, fontsize="small")
            ax.set_aspect("equal")
            ax.set_xlabel("$x_1$")
            if k == 0:
                ax.set_ylabel("$x_2$")
        fig.suptitle("p(class 1 | x), training points overlaid", fontsize="small")
    return fig


def adf_epoch_error(ds: xr.Dataset) -> Figure:
    if "epoch_test_error" not in ds:
        return note_figure("no per-epoch test error trace in these runs", "test error per epoch")
    runs = usable(runs_frame(ds))
    datasets = sorted(runs["dataset"].unique())
    palette = run_palette(ds)
    with style():
        fig = new_figure(4.2 * len(datasets) + 1.5, 3.4)
        for k, dataset in enumerate(datasets):
            ax = fig.add_subplot(1, len(datasets), k + 1)
            untraced = []  # methods without epochs (relu_map): named, not in the legend
            for method, group in runs[runs["dataset"] == dataset].groupby("method", sort=True):
                trace = ds["epoch_test_error"].isel(run=group["run"].to_numpy()).values
                trace = trace[:, np.isfinite(trace).any(axis=0)]
                if trace.shape[1] == 0:
                    untraced.append(method)
                    continue
                epochs = np.arange(1, trace.shape[1] + 1)
                mean = np.nanmean(trace, axis=0)
                n = np.sum(np.isfinite(trace), axis=0)
                se = np.nanstd(trace, axis=0, ddof=1) / np.sqrt(n) if len(trace) > 1 else 0 * mean
                ax.plot(epochs, mean, color=palette[method], label=method)
                ax.fill_between(epochs, mean - se, mean + se, color=palette[method], alpha=0.25)
            if untraced:
                ax.text(0.02, 0.02, "no epoch trace: " + ", ".join(untraced),
                        transform=ax.transAxes, fontsize="x-small", color="0.35")  # fmt: skip
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            measure = dataset_meta(dataset).get("error_measure", "")
            ax.set_xlabel("epoch")
            ax.set_ylabel(ERROR_LABELS.get(measure, "test error"))
            ax.set_title(dataset_title(dataset), fontsize="small")
            if k == len(datasets) - 1 and ax.lines:
                ax.legend(fontsize="small", loc="upper right")
        mark_stand_ins(fig, datasets)
    return fig


STAND_IN_NOTE = "STAND-IN data made here, not the paper's: these numbers say nothing about it"


def is_stand_in(dataset: str) -> bool:
    """Whether ``dataset`` is registered as a stand-in (metadata ``stand_in``)."""
    return bool(dataset_meta(dataset).get("stand_in", False))


def dataset_title(dataset: str) -> str:
    """A panel's title: the dataset's name, marked ``(STAND-IN for ...)`` when it is one."""
    if not is_stand_in(dataset):
        return dataset
    import textwrap

    what = dataset_meta(dataset).get("stands_in_for", "?")
    return dataset + "\n" + textwrap.fill(f"(STAND-IN for {what})", 44)


def mark_stand_ins(fig: Figure, datasets) -> None:
    """A red line of text across the bottom of ``fig`` when any of ``datasets`` is a stand-in."""
    if any(is_stand_in(d) for d in datasets):
        fig.text(0.5, 0.005, STAND_IN_NOTE, ha="center", va="bottom", color="#b00000",
                 fontsize="small", fontweight="bold")  # fmt: skip
