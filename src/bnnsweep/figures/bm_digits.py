"""Boltzmann machine learning on 8x8 binary digits (``bm_vi`` cells with ``architecture:
grid``; thesis §4.5.2, figs. 4.8-4.9), drawn on the stand-in data ``digits_binary`` (the
thesis' CEDAR digits are not available; the note is in every figure).

``bm_digits_cost`` (fig. 4.8)
    F = L+ - L- per pattern (``objective`` / ``n_train``) against learning iteration for
    mean field (dotted, F_mft) and the mixture (dashed, F_mix), every run thin and the first
    bold. Beside it, per label and run, the *instability* of the curve: the number of
    iterations after ``SETTLE`` at which F per pattern fell by more than ``DROP`` nats (gradient
    ascent on a consistent objective with a small rate would not fall), and the mean
    |dF| per pattern over those iterations; medians over runs in the legend.
``bm_digits_joint_means`` (fig. 4.9)
    the joint approximation's visible means as 8x8 images, one row per learning iteration
    (0 at the top) and one column per mixture component (in order, the first ten) with mean
    field in the right-most column, for the first run (the thesis' layout; component
    columns are headed by their final Q(m)). Beside it the *mode hopping*: per iteration
    the mean over visible units of |mu_t - mu_{t-1}| for mean field and for the mixture's
    components (mean over components, and the largest), medians over runs in the legend.

The thesis' statements are in the titles: F_mft "relatively unstable compared to the mixture
model"; mean field "exhibits substantial 'mode hopping', while the components of the mixture
distribution are much more stable (although some tendency to mode hop is still evident)".
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr
from matplotlib.figure import Figure

from ._common import new_figure, note_figure, outside_legend, run_palette, style
from .bm_learning import _setting, learning_runs

STAND_IN_NOTE = (
    "STAND-IN DATA: scikit-learn's 1797 UCI 8x8 digits thresholded (digits_binary), not the "
    "thesis' CEDAR digits (700 per class, N = 7000)"
)
COST_STATEMENT = (
    "thesis fig. 4.8: F_mft (dotted) and F_mix (dashed, M = 10) over 30 iterations: 'mean "
    "field theory is relatively unstable compared to the mixture model' (curves only)"
)
MEANS_STATEMENT = (
    "thesis fig. 4.9: mean field 'exhibits substantial mode hopping', the mixture components "
    "'are much more stable (although some tendency to mode hop is still evident)'"
)
SHORT = {
    "anneal_joint": "joint annealed",
    "final_F_per_pattern": "final F/N",
    "mean_abs_dF": "mean |dF/N|",
    "mode_hopping": "hopping",
    "mode_hopping_Q": "hopping (Q)",
    "live_components": "live",
}
"""Column headers of the summary table in the figure."""
SETTLE = 5
"""Iterations left out of the instability counts (the initial rise of F)."""
DROP = 0.5
"""A fall of F per pattern larger than this (nats) between iterations counts as a drop."""


def digits_runs(ds: xr.Dataset) -> pd.DataFrame:
    """Usable ``bm_vi`` learning runs of the grid machine with the joint's path, labelled,
    with their number of visible (grid) units."""
    if "joint_means" not in ds or "objective" not in ds:
        return pd.DataFrame()
    runs = learning_runs(ds, "joint_means")
    if runs.empty:
        return runs
    runs = runs.assign(
        architecture=_setting(runs, "architecture"), grid_hidden=_setting(runs, "grid_hidden")
    )
    runs = runs[runs["architecture"] == "grid"]
    units = [
        int(np.isfinite(visible_means(ds, r, None)).any(axis=(0, 1, 2)).sum()) for r in runs["run"]
    ]
    runs = runs.assign(visible=np.array(units, dtype=int) - runs["grid_hidden"].astype(int))
    return runs.assign(label=runs["method"].astype(str))


def is_mean_field(group: pd.DataFrame) -> bool:
    return str(group["q_family"].iloc[0]) == "mean_field"


def line_style(group: pd.DataFrame) -> str:
    """The thesis' styles: mean field dotted, the mixture dashed."""
    return ":" if is_mean_field(group) else "--"


def objective_per_pattern(ds: xr.Dataset, run: int, n_train: int) -> np.ndarray:
    """(iteration, restart) F / N of one run, padding removed."""
    values = ds["objective"].isel(run=run).transpose("iteration", "restart").values
    values = values[np.isfinite(values).any(axis=1)]
    return values[:, np.isfinite(values).all(axis=0)] / max(int(n_train), 1)


def instability(f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per restart: drops of F per pattern > ``DROP`` after ``SETTLE`` and the mean |dF|."""
    steps = np.diff(f[SETTLE:], axis=0)
    if steps.size == 0:
        return np.zeros(f.shape[1]), np.full(f.shape[1], np.nan)
    return (steps < -DROP).sum(0).astype(float), np.abs(steps).mean(0)


def visible_means(ds: xr.Dataset, run: int, units: int | None) -> np.ndarray:
    """(iteration, restart, component, unit) joint means of the first ``units`` units (the
    grid's; all for None) of one run, padded iterations and components removed."""
    mu = ds["joint_means"].isel(run=run, joint_pattern=0)
    mu = mu.transpose("iteration", "restart", "component", "unit").values[..., :units]
    mu = mu[np.isfinite(mu).any(axis=(1, 2, 3))]
    return mu[:, :, np.isfinite(mu).any(axis=(0, 1, 3))]


def mode_hopping(mu: np.ndarray) -> np.ndarray:
    """(iteration - 1, restart, component) mean over units of |mu_t - mu_{t-1}|."""
    return np.abs(np.diff(mu, axis=0)).mean(-1)


def mixing(ds: xr.Dataset, run: int, shape: tuple[int, ...]) -> np.ndarray:
    """(iteration, restart, component) Q(m) of one run's joint, trimmed to ``shape`` (that
    of its ``visible_means`` without the unit axis); equal weights without the trace."""
    if "joint_log_mixing" not in ds:
        return np.full(shape, 1.0 / shape[-1])
    lm = ds["joint_log_mixing"].isel(run=run, joint_pattern=0)
    lm = lm.transpose("iteration", "restart", "component").values
    return np.exp(lm[: shape[0], :, : shape[2]])


def weighted_hopping(mu: np.ndarray, q: np.ndarray) -> np.ndarray:
    """(iteration - 1, restart) sum_m Q_t(m) mean_i |mu_tmi - mu_(t-1)mi|."""
    return (q[1:] * mode_hopping(mu)).sum(-1)


def digits_summary(ds: xr.Dataset) -> pd.DataFrame:
    """One row per label: medians over runs of the final F / N, the drops and mean |dF| of
    F / N after ``SETTLE``, and the mean mode hopping (mean field, or the mixture's mean over
    components) after ``SETTLE``: the numbers both figures print."""
    runs = digits_runs(ds)
    rows = []
    for label, group in runs.groupby("label", sort=True):
        r = int(group["run"].iloc[0])
        units = int(group["visible"].iloc[0])
        f = objective_per_pattern(ds, r, int(group["n_train"].iloc[0]))
        drops, mean_step = instability(f)
        mu = visible_means(ds, r, units)
        q = mixing(ds, r, mu.shape[:-1])
        hop = mode_hopping(mu)[SETTLE:]
        rows.append(
            {
                "label": label,
                "M": mu.shape[2],
                "anneal_joint": str(_setting(group, "anneal_joint")[0]),
                "restarts": f.shape[1],
                "final_F_per_pattern": float(np.median(f[-1])),
                "drops": float(np.median(drops)),
                "mean_abs_dF": float(np.median(mean_step)),
                "mode_hopping": float(np.median(hop.mean(axis=(0, 2)))),
                "mode_hopping_Q": float(np.median(weighted_hopping(mu, q)[SETTLE:].mean(0))),
                "live_components": float(np.median((q[-1] > 0.01).sum(-1))),
            }
        )
    return pd.DataFrame(rows)


def bm_digits_cost(ds: xr.Dataset) -> Figure:
    title = "Boltzmann machine on 8x8 binary digits: cost functions (thesis fig. 4.8)"
    runs = digits_runs(ds)
    if runs.empty:
        return note_figure("no bm_vi grid learning runs (joint_means on square images)", title)
    summary = digits_summary(ds).set_index("label")
    palette = run_palette(ds)
    with style():
        fig = new_figure(15.0, 5.5)
        left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [2.2, 0.8]})
        handles = []
        for x, (label, group) in enumerate(runs.groupby("label", sort=True)):
            r = int(group["run"].iloc[0])
            f = objective_per_pattern(ds, r, int(group["n_train"].iloc[0]))
            ls = line_style(group)
            it = np.arange(f.shape[0])
            left.plot(it, f[:, 1:], color=palette[label], lw=0.5, alpha=0.5, ls=ls)
            row = summary.loc[label]
            handles.append(
                left.plot(
                    it,
                    f[:, 0],
                    color=palette[label],
                    lw=1.8,
                    ls=ls,
                    label=f"{label}: final F/N {row['final_F_per_pattern']:.2f}, "
                    f"{row['drops']:.0f} drops > {DROP:g}, mean |dF/N| {row['mean_abs_dF']:.2f}",
                )[0]
            )
            drops, mean_step = instability(f)
            jitter = np.linspace(-0.12, 0.12, len(drops))
            right.scatter(x + jitter, mean_step, color=palette[label], s=22)
        left.set_xlabel("learning iteration")
        left.set_ylabel("F / N = (L+ - L-) per pattern (nats)")
        left.set_title("F per pattern; first run bold, others thin", fontsize="small")
        outside_legend(left, handles, title="q family (medians over runs)")
        labels = sorted(runs["label"].unique())
        right.set_xticks(range(len(labels)))
        right.set_xticklabels(labels, fontsize=7, rotation=25, ha="right")
        right.set_ylabel(f"mean |F/N change| per iteration after {SETTLE}")
        right.set_title("instability per run", fontsize="small")
        fig.suptitle(f"{title}\n{COST_STATEMENT}\n{STAND_IN_NOTE}", fontsize="small")
    return fig


def joint_columns(ds: xr.Dataset, runs: pd.DataFrame) -> list[tuple[str, str, np.ndarray]]:
    """The mosaic's columns, (label, header, (iteration, unit) means of the first restart):
    every label's components in order, mixtures first and mean field right-most (the
    thesis' layout); a mixture column is headed by the component's final Q(m)."""
    columns = []
    groups = sorted(runs.groupby("label", sort=True), key=lambda g: is_mean_field(g[1]))
    for label, group in groups:
        r = int(group["run"].iloc[0])
        mu = visible_means(ds, r, int(group["visible"].iloc[0]))
        q = mixing(ds, r, mu.shape[:-1])
        for m in range(mu.shape[2]):
            header = "MF" if mu.shape[2] == 1 else f"m{m + 1}\n{q[-1, 0, m]:.2f}"
            columns.append((label, header, mu[:, 0, m]))
    return columns


def draw_mosaic(ax, columns: list[tuple[str, str, np.ndarray]]) -> None:
    """Rows of 8x8 images (one per iteration), one column per entry of ``columns``, with a
    thin gap between tiles and a wider one between labels."""
    n_iter = max(values.shape[0] for _, _, values in columns)
    side = int(round(np.sqrt(columns[0][2].shape[-1])))
    step = side + 1
    offsets, x, previous = [], 0, columns[0][0]
    for label, _, _ in columns:
        if label != previous:
            x += side // 2
            previous = label
        offsets.append(x)
        x += step
    mosaic = np.full((n_iter * step, x), np.nan)
    for x0, (_, _, values) in zip(offsets, columns, strict=True):
        for i in range(values.shape[0]):
            mosaic[i * step : i * step + side, x0 : x0 + side] = values[i].reshape(side, side)
    ax.imshow(mosaic, cmap="gray_r", vmin=-1, vmax=1, interpolation="nearest", aspect="equal")
    ax.set_xticks([x0 + side / 2 for x0 in offsets])
    ax.set_xticklabels([header for _, header, _ in columns], fontsize=5)
    ax.xaxis.tick_top()
    ticks = list(range(0, n_iter, 5))
    ax.set_yticks([i * step + side / 2 for i in ticks])
    ax.set_yticklabels([str(i) for i in ticks], fontsize=7)
    ax.set_ylabel("learning iteration (one row each)")
    ax.grid(False)
    for label in dict.fromkeys(label for label, _, _ in columns):
        xs = [x0 for x0, c in zip(offsets, columns, strict=True) if c[0] == label]
        ax.text(
            (xs[0] + xs[-1] + side) / 2,
            n_iter * step + 2,
            label,
            ha="center",
            va="top",
            fontsize=6,
            rotation=0 if len(xs) > 2 else 30,
        )


def bm_digits_joint_means(ds: xr.Dataset) -> Figure:
    title = "Boltzmann machine on 8x8 binary digits: joint means per iteration (thesis fig. 4.9)"
    runs = digits_runs(ds)
    if runs.empty:
        return note_figure("no bm_vi grid learning runs (joint_means on square images)", title)
    summary = digits_summary(ds)
    palette = run_palette(ds)
    columns = joint_columns(ds, runs)
    with style():
        fig = new_figure(16.0, 12.0)
        grid = fig.add_gridspec(2, 2, width_ratios=(1.6, 1.0), height_ratios=(1.2, 1.0))
        mosaic_ax = fig.add_subplot(grid[:, 0])
        hop_ax = fig.add_subplot(grid[0, 1])
        table_ax = fig.add_subplot(grid[1, 1])
        draw_mosaic(mosaic_ax, columns)
        mosaic_ax.set_title(
            "visible means <s_i>- of the joint (black +1, white -1), first run; "
            "mixture columns headed by their final Q(m)",
            fontsize="small",
        )
        handles = []
        by_label = summary.set_index("label")
        for label, group in runs.groupby("label", sort=True):
            r = int(group["run"].iloc[0])
            mu = visible_means(ds, r, int(group["visible"].iloc[0]))
            per_iter = mode_hopping(mu).mean(axis=2)  # (iteration - 1, restart)
            it = np.arange(1, per_iter.shape[0] + 1)
            ls = line_style(group)
            hop_ax.plot(it, per_iter[:, 1:], color=palette[label], lw=0.5, alpha=0.5, ls=ls)
            value = by_label.loc[label, "mode_hopping"]
            handles.append(
                hop_ax.plot(
                    it,
                    per_iter[:, 0],
                    color=palette[label],
                    lw=1.8,
                    ls=ls,
                    label=f"{label}: median {value:.3f}",
                )[0]
            )
        hop_ax.set_xlabel("learning iteration")
        hop_ax.set_ylabel("mean |mu_t - mu_(t-1)| over visible units")
        hop_ax.set_title(
            "mode hopping (mixtures: mean over components); first run bold", fontsize="small"
        )
        hop_ax.legend(handles=handles, fontsize="x-small", title=f"mean after iteration {SETTLE}")
        table_ax.set_axis_off()
        cell_text = [
            [v if isinstance(v, str) else f"{v:.3g}" for v in row]
            for row in summary.itertuples(index=False)
        ]
        tab = table_ax.table(
            cellText=cell_text,
            colLabels=[SHORT.get(c, c) for c in summary.columns],
            loc="upper center",
        )
        tab.auto_set_font_size(False)
        tab.set_fontsize(6)
        tab.auto_set_column_width(list(range(len(summary.columns))))
        table_ax.set_title(
            f"medians over runs; drops: falls of F/N > {DROP:g} after iteration {SETTLE}; "
            "mode_hopping_Q weights components by Q_t(m); live: Q(m) > 0.01 at the end",
            fontsize="x-small",
        )
        fig.suptitle(f"{title}\n{MEANS_STATEMENT}\n{STAND_IN_NOTE}", fontsize="small")
    return fig
