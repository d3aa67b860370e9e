"""``adf_error_bars``: paper 004 Fig. 2 bottom (b) and (c) as the paper draws them: per
dataset, a bar per ADF method label of its mean test error over the splits with the s.d. over
the splits as the error bar ("the mean test errors ... along with associated standard
deviations", sec. 6); beside it the test log-likelihood the same way.

The test error is the one the dataset's task measures (``error_measure``: the 0-1 error rate
of (b) and (c), the mean absolute deviation of (d), RMSE for regression). In the title, where
paper 004 prints a summary over its datasets and splits (sec. 6: binary text sets, PBP
0.07 +- 0.06 against EBP 0.27 +- 0.12 in error rate, -0.33 +- 0.45 against -0.50 +- 0.15 in
log-likelihood; bike sharing), ours over the same pool, mean +- s.d. over every usable run;
MNIST's numbers the paper gives only as bars. A stand-in dataset is named as one under its
bars and in the title, and the figure says so in red at its foot.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
import xarray as xr
from matplotlib.figure import Figure

from ._common import dataset_meta, new_figure, note_figure, run_palette, runs_frame, style, usable
from .adf_classification import ERROR_LABELS, is_stand_in, mark_stand_ins
from .published import PAPER004_SUMMARY

TITLE = "Paper 004 Fig. 2 bottom: test error and log-likelihood per dataset"
ERROR_COLUMNS = {"error_rate": "test_error_rate", "mad": "test_mad", "rmse": "test_rmse"}


def error_column(dataset: str) -> str:
    """The run column of ``dataset``'s test error (by its ``error_measure``)."""
    return ERROR_COLUMNS.get(dataset_meta(dataset).get("error_measure", ""), "test_rmse")


def tick_label(dataset: str) -> str:
    """The dataset's name, with ``(STAND-IN)`` under it when it is one (what it stands in
    for is in the title: ``stand_in_line``)."""
    return f"{dataset}\n(STAND-IN)" if is_stand_in(dataset) else dataset


def stand_in_line(datasets) -> str:
    """``STAND-IN: x for y; ...`` naming what each stand-in dataset stands in for, or ''."""
    parts = [f"{d} for {dataset_meta(d).get('stands_in_for', '?')}" for d in datasets
             if is_stand_in(d)]  # fmt: skip
    return "STAND-IN: " + "; ".join(parts) if parts else ""


def summary_group(datasets) -> str | None:
    """The paper 004 summary the datasets fall under: ``text`` (binary classification),
    ``bike`` (counts), or None (no printed summary: MNIST, the UCI sets have their table)."""
    tasks = {dataset_meta(d).get("task", "") for d in datasets}
    if tasks == {"binary"}:
        return "text"
    if tasks == {"count"}:
        return "bike"
    return None


def bars_frame(ds: xr.Dataset) -> pd.DataFrame:
    """Per dataset and method label: runs, and mean and s.d. over them of the test error
    (``error``) and the test log-likelihood (``loglik``)."""
    runs = usable(runs_frame(ds))
    rows = []
    for (dataset, method), group in runs.groupby(["dataset", "method"], sort=True):
        row = {"dataset": dataset, "method": method, "n_runs": len(group)}
        for name, column in (("error", error_column(dataset)), ("loglik", "test_loglik")):
            values = group[column].to_numpy(float) if column in group else np.array([])
            values = values[np.isfinite(values)]
            row[f"{name}_mean"] = values.mean() if values.size else np.nan
            row[f"{name}_sd"] = values.std(ddof=1) if values.size > 1 else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def summary_line(ds: xr.Dataset, datasets) -> str:
    """Ours beside paper 004's printed summary over datasets and splits, or why there is none."""
    group = summary_group(datasets)
    if group is None:
        return "paper 004 prints these numbers only as bars: no summary to set beside ours"
    runs = usable(runs_frame(ds))
    parts = []
    for (g, label, metric), (value, spread) in PAPER004_SUMMARY.items():
        chosen = runs[runs["method"] == label]
        if g != group or chosen.empty or metric not in chosen:
            continue
        x = chosen[metric].to_numpy(float)
        x = x[np.isfinite(x)]
        if x.size:
            sd = f"{x.std(ddof=1):.3g}" if x.size > 1 else "–"
            parts.append(f"{label} {metric.removeprefix('test_')} {x.mean():.3g} ± {sd} "
                         f"(paper 004: {value:g} ± {spread:g})")  # fmt: skip
    n = runs["dataset"].nunique()
    return (f"Over every dataset and split, mean ± s.d. ({n} set{'s' * (n != 1)}, "
            f"{len(runs)} runs): " + "; ".join(parts)) if parts else ""  # fmt: skip


def adf_error_bars(ds: xr.Dataset) -> Figure:
    frame = bars_frame(ds)
    if frame.empty:
        return note_figure("no runs to draw", TITLE)
    datasets = sorted(frame["dataset"].unique())
    methods = sorted(frame["method"].unique(), key=lambda m: (not m.startswith("pbp"), m))
    palette = run_palette(ds)
    width = 0.8 / len(methods)
    with style():
        fig = new_figure(max(7.0, 1.6 * len(datasets) * 2 + 2.0), 4.6)
        axes = fig.subplots(1, 2)
        for ax, name, label in (
            (axes[0], "error", "test error"),
            (axes[1], "loglik", "test log-likelihood"),
        ):
            for k, method in enumerate(methods):
                mine = frame[frame["method"] == method].set_index("dataset").reindex(datasets)
                x = np.arange(len(datasets)) + (k - (len(methods) - 1) / 2) * width
                ax.bar(x, mine[f"{name}_mean"], width, yerr=mine[f"{name}_sd"].fillna(0.0),
                       color=palette[method], label=method, capsize=3)  # fmt: skip
            ax.set_xticks(range(len(datasets)), [tick_label(d) for d in datasets], fontsize=7)
            measures = {dataset_meta(d).get("error_measure", "") for d in datasets}
            ax.set_ylabel(ERROR_LABELS.get(measures.pop(), label) if name == "error"
                          and len(measures) == 1 else label)  # fmt: skip
        axes[0].legend(fontsize="small")
        runs = int(frame["n_runs"].max())
        title = (f"{TITLE}\nbars: mean over splits, error bars: s.d. over splits "
                 f"(up to {runs} run{'s' * (runs != 1)} a bar)")  # fmt: skip
        if stand_ins := stand_in_line(datasets):
            title += "\n" + textwrap.fill(stand_ins, 140)
        if line := summary_line(ds, datasets):
            title += "\n" + textwrap.fill(line, 140)
        fig.suptitle(title, fontsize=8)
        mark_stand_ins(fig, datasets)
    return fig
