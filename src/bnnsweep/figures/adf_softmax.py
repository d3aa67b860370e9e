"""Figures of the softmax approximations of PBP and EBP (paper 004 supplement sec. 4).

``adf_samples_loglik`` (supplement fig. 3)
    The effect of the number S of Monte Carlo samples of the reparameterised ln Z estimate
    (``mc_samples``) on training: one column per dataset (the paper's synthetic 10- and
    100-class sets), top the mean training log-likelihood per point (``train_loglik``) of
    every repeat against S with its mean +- one standard deviation over repeats, one line
    per algorithm (``pbp``, ``ebp``); bottom that standard deviation against S. The paper
    states that the variance falls with S, steeply from S = 1 to 10 and only marginally from
    10 to 100; each column's title gives our ratios of the standard deviations.
``adf_softmax_approximation`` (supplement fig. 2)
    The log bound (``softmax_approximation: bound``, eq. 10) against the stochastic estimate
    (``mc``): test error rate and test log-likelihood averaged over algorithms and datasets
    (the mean of the per dataset-and-algorithm means, each a mean over splits and seeds;
    error bars the s.e. over those combinations), with every combination's mean drawn as a
    point beside its bar. The paper reports only that the stochastic estimate is clearly the
    better one (with S = 100; 2 x 400 units, 100 epochs on MNIST, UCI HAR and Sensorless).

Runs are classified by their resolved settings (``resolved_settings_json``): softmax
likelihood only; the algorithm is the registered method (``method_name``), so labels such
as ``pbp_s10`` need no naming convention. Diverged runs are left out.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import xarray as xr
from matplotlib.figure import Figure

from ._common import method_palette, new_figure, note, note_figure, runs_frame, style, usable

ALGORITHMS = ("pbp", "ebp")
APPROXIMATIONS = ("bound", "mc")
APPROXIMATION_NAMES = {"bound": "log bound", "mc": "stochastic (MC)"}
PAPER_SAMPLES_STATEMENT = (
    "paper 004 suppl. fig. 3: the variance falls with S; S = 100 only marginally below S = 10"
)
PAPER_APPROXIMATION_STATEMENT = (
    "paper 004 suppl. fig. 2: the stochastic approximation clearly outperforms the log bound "
    "(MNIST, UCI HAR, Sensorless; 2 x 400 units, 100 epochs, S = 100)"
)


def softmax_runs(ds: xr.Dataset) -> pd.DataFrame:
    """Usable softmax runs of PBP and EBP with columns ``algorithm``, ``approximation`` and
    ``samples`` (S of the MC estimate; NaN for the bound) from each run's resolved settings."""
    runs = usable(runs_frame(ds))
    if runs.empty or "resolved_settings_json" not in runs:
        return runs.iloc[0:0]
    settings = [json.loads(s) if s else {} for s in runs["resolved_settings_json"]]
    algorithm = runs["method_name"] if "method_name" in runs else runs["method"]
    runs = runs.assign(
        algorithm=list(algorithm),
        likelihood=[s.get("likelihood", "") for s in settings],
        approximation=[s.get("softmax_approximation", "") for s in settings],
        samples=[float(s.get("mc_samples", np.nan)) for s in settings],
    )
    runs = runs[(runs["likelihood"] == "softmax") & runs["algorithm"].isin(ALGORITHMS)]
    return runs.assign(samples=runs["samples"].where(runs["approximation"] == "mc"))


def samples_frame(ds: xr.Dataset) -> pd.DataFrame:
    """Per dataset, algorithm and S (MC runs only): repeats, mean and standard deviation
    (ddof 1) of the training log-likelihood per point."""
    runs = softmax_runs(ds)
    runs = runs[(runs["approximation"] == "mc") & np.isfinite(runs["train_loglik"])]
    rows = []
    for (dataset, algorithm, samples), group in runs.groupby(
        ["dataset", "algorithm", "samples"], sort=True
    ):
        values = group["train_loglik"].to_numpy(float)
        rows.append(
            {
                "dataset": dataset,
                "algorithm": algorithm,
                "samples": int(samples),
                "repeats": values.size,
                "train_loglik_mean": float(values.mean()),
                "train_loglik_sd": float(values.std(ddof=1)) if values.size > 1 else np.nan,
            }
        )
    return pd.DataFrame(rows)


def _sd_ratios(frame: pd.DataFrame) -> str:
    """``pbp: sd(1)/sd(10) = 3.1, sd(10)/sd(100) = 1.2`` for consecutive S of each algorithm."""
    parts = []
    for algorithm, group in frame.groupby("algorithm", sort=True):
        sd = group.set_index("samples")["train_loglik_sd"].sort_index()
        steps = [
            f"sd({a})/sd({b}) = {sd[a] / sd[b]:.2g}"
            for a, b in zip(sd.index[:-1], sd.index[1:], strict=True)
            if sd[b] > 0
        ]
        if steps:
            parts.append(f"{algorithm}: " + ", ".join(steps))
    return "; ".join(parts)


def adf_samples_loglik(ds: xr.Dataset) -> Figure:
    runs = softmax_runs(ds)
    runs = runs[(runs["approximation"] == "mc") & np.isfinite(runs["train_loglik"])]
    frame = samples_frame(ds)
    if frame.empty:
        return note_figure("no PBP/EBP softmax runs with the MC estimate", "samples S")
    datasets = sorted(frame["dataset"].unique())
    palette = method_palette(ALGORITHMS)
    with style():
        fig = new_figure(5.2 * len(datasets), 7.0)
        axes = fig.subplots(2, len(datasets), squeeze=False, sharex=True)
        for j, dataset in enumerate(datasets):
            top, bottom = axes[0, j], axes[1, j]
            here = frame[frame["dataset"] == dataset]
            for k, (algorithm, group) in enumerate(here.groupby("algorithm", sort=True)):
                colour = palette[algorithm]
                shift = 1.0 + 0.06 * (k - 0.5)  # side by side on the log axis
                points = runs[(runs["dataset"] == dataset) & (runs["algorithm"] == algorithm)]
                top.scatter(
                    points["samples"] * shift,
                    points["train_loglik"],
                    s=10,
                    color=colour,
                    alpha=0.45,
                )
                top.errorbar(
                    group["samples"] * shift,
                    group["train_loglik_mean"],
                    yerr=group["train_loglik_sd"],
                    color=colour,
                    marker="o",
                    capsize=4,
                    label=f"{algorithm} (mean ± s.d., {int(group['repeats'].min())}+ repeats)",
                )
                bottom.plot(
                    group["samples"],
                    group["train_loglik_sd"],
                    color=colour,
                    marker="o",
                    label=algorithm,
                )
            top.set_xscale("log")
            bottom.set_yscale("log")
            top.set_title(f"{dataset}\n{_sd_ratios(here)}", fontsize="small")
            top.set_ylabel("training log-likelihood per point")
            bottom.set_ylabel("s.d. over repeats")
            bottom.set_xlabel("Monte Carlo samples S")
            ticks = sorted(here["samples"].unique())
            bottom.set_xticks(ticks, [str(t) for t in ticks])
            top.legend(fontsize="x-small")
            bottom.legend(fontsize="x-small")
        fig.suptitle(
            "Training log-likelihood against the samples S of the ln Z estimate\n"
            + PAPER_SAMPLES_STATEMENT,
            fontsize="medium",
        )
    return fig


def approximation_frame(ds: xr.Dataset) -> pd.DataFrame:
    """Per dataset, algorithm and approximation (``bound`` or ``mc`` with its S): runs and
    mean test error rate and test log-likelihood over splits and seeds."""
    runs = softmax_runs(ds)
    runs = runs.assign(
        approximation=[
            "bound" if a == "bound" else f"mc S={int(s)}"
            for a, s in zip(runs["approximation"], runs["samples"].fillna(0), strict=True)
        ]
    )
    rows = []
    keys = ["dataset", "algorithm", "approximation"]
    for key, group in runs.groupby(keys, sort=True):
        row = dict(zip(keys, key, strict=True), runs=len(group))
        for metric in ("test_error_rate", "test_loglik"):
            values = group[metric].to_numpy(float) if metric in group else np.array([])
            values = values[np.isfinite(values)]
            row[metric] = float(values.mean()) if values.size else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def adf_softmax_approximation(ds: xr.Dataset) -> Figure:
    frame = approximation_frame(ds)
    if frame.empty:
        return note_figure("no PBP/EBP softmax runs", "log bound vs stochastic")
    approximations = sorted(frame["approximation"].unique(), key=lambda a: (a != "bound", a))
    combos = sorted({(d, a) for d, a in zip(frame["dataset"], frame["algorithm"], strict=True)})
    palette = method_palette(ALGORITHMS)
    markers = dict(zip(sorted({d for d, _ in combos}), "osD^v<>p*", strict=False))
    metrics = (("test_error_rate", "test error rate"), ("test_loglik", "test log-likelihood"))
    with style():
        fig = new_figure(4.8 * len(metrics) + 2.5, 4.4)
        axes = fig.subplots(1, len(metrics), squeeze=False)[0]
        for ax, (metric, label) in zip(axes, metrics, strict=True):
            for i, approximation in enumerate(approximations):
                here = frame[frame["approximation"] == approximation]
                values = here[metric].to_numpy(float)
                values = values[np.isfinite(values)]
                if values.size == 0:
                    continue
                se = values.std(ddof=1) / np.sqrt(values.size) if values.size > 1 else 0.0
                ax.bar(i, values.mean(), yerr=se, color="0.8", edgecolor="0.3", capsize=5)
                for (dataset, algorithm), offset in zip(
                    combos, np.linspace(-0.3, 0.3, len(combos)), strict=True
                ):
                    point = here[(here["dataset"] == dataset) & (here["algorithm"] == algorithm)]
                    if not point.empty:
                        ax.scatter(
                            i + offset,
                            point[metric].iloc[0],
                            color=palette[algorithm],
                            marker=markers[dataset],
                            edgecolor="black",
                            zorder=3,
                            label=f"{algorithm} · {dataset}" if i == 0 else None,
                        )
            names = [
                APPROXIMATION_NAMES.get(a, a.replace("mc ", "stochastic\n")) for a in approximations
            ]
            ax.set_xticks(range(len(approximations)), names)
            ax.set_ylabel(label)
            ax.set_title(f"{label}: mean over algorithms and datasets ± s.e.", fontsize="small")
        handles, labels = axes[0].get_legend_handles_labels()
        if handles:
            axes[-1].legend(
                handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="x-small"
            )
        else:
            note(axes[0], "no finite values")
        fig.suptitle(
            "Log bound against the stochastic ln Z\n" + PAPER_APPROXIMATION_STATEMENT,
            fontsize="small",
        )
    return fig
