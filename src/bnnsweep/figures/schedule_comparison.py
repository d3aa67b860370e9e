"""``schedule_comparison``: chaining evidence and its standard error against the number of
links, per schedule family and estimator.

One row of two panels per (dataset, hidden units) among the chaining runs (runs with a
``link_lambda``). K is the number of links (finite ``link_lambda`` values minus one). The
family of a schedule is its name without the numbers (``geometric20`` -> ``geometric``,
``power2p5_10`` -> ``power``). Colour is the estimator: the paper's product of ratios
(``diag_log_evidence_ratio``, else ``log_evidence``), thermodynamic integration
(``diag_log_evidence_ti``) and annealed importance sampling (``diag_log_evidence_ais``);
the marker is the family. (a) Every run's estimate +- its standard error, with a thin line
per (family, estimator) through the mean over seeds and splits at each K. (b) The standard
errors on a log axis. Runs flagged ``diverged`` are drawn hollow; estimates that are not
finite are counted in a note on panel (a).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from ._common import new_figure, note, note_figure, outside_legend, style
from .chaining_diagnostics import chaining_runs

ESTIMATORS = {
    "ratio": ("diag_log_evidence_ratio", "diag_log_evidence_ratio_se"),
    "TI": ("diag_log_evidence_ti", "diag_log_evidence_ti_se"),
    "AIS": ("diag_log_evidence_ais", "diag_log_evidence_ais_se"),
}
"""Estimator label -> (value column, s.e. column) of the merged file's scalar variables."""

ESTIMATOR_COLOURS = {"ratio": "#0072B2", "TI": "#D55E00", "AIS": "#009E73"}
FAMILY_MARKERS = {"paper": "o", "geometric": "s", "power": "^", "linear": "D"}
EXTRA_MARKERS = ("v", "P", "X", "*", "h")


def schedule_family(name: str) -> str:
    """Schedule name without its numbers: digits (with the ``p`` of a decimal such as
    ``2p5``) and underscores removed."""
    return re.sub(r"\d+(?:p\d+)?|_", "", str(name)) or str(name)


def estimates_frame(ds: xr.Dataset) -> pd.DataFrame:
    """One row per (chaining run, estimator): dataset, hidden, seed, split, schedule, family,
    n_links, status, estimator, value, se."""
    chains = chaining_runs(ds)
    columns = ["run", "dataset", "hidden", "seed", "split", "schedule", "family", "n_links"]
    parts = []
    for label, (value, se) in ESTIMATORS.items():
        if value not in chains and label == "ratio":
            value, se = "log_evidence", "log_evidence_se"
        part = chains.reindex(columns=[c for c in columns if c != "family"] + ["status"]).copy()
        part["family"] = [schedule_family(s) for s in chains["schedule"]]
        part["estimator"] = label
        part["value"] = chains[value].to_numpy(float) if value in chains else np.nan
        part["se"] = chains[se].to_numpy(float) if se in chains else np.nan
        parts.append(part)
    if not parts or chains.empty:
        return pd.DataFrame(columns=[*columns, "status", "estimator", "value", "se"])
    return pd.concat(parts, ignore_index=True)


def _markers(families) -> dict[str, str]:
    markers = {}
    extra = iter(EXTRA_MARKERS * 10)
    for family in sorted(set(families)):
        markers[family] = FAMILY_MARKERS.get(family) or next(extra)
    return markers


def _offsets(labels, spacing: float) -> dict[str, float]:
    labels = list(labels)
    if len(labels) <= 1:
        return dict.fromkeys(labels, 0.0)
    return dict(zip(labels, np.linspace(-spacing, spacing, len(labels)), strict=True))


def _draw_group(ax_ev, ax_se, group: pd.DataFrame, markers, offsets) -> None:
    finite = group[np.isfinite(group["value"].to_numpy(float))]
    bad = group[~np.isfinite(group["value"].to_numpy(float))]
    for (estimator, family), points in finite.groupby(["estimator", "family"], sort=True):
        colour = ESTIMATOR_COLOURS.get(estimator, "0.3")
        x = points["n_links"].to_numpy(float) + offsets[estimator]
        y = points["value"].to_numpy(float)
        se = points["se"].to_numpy(float)
        hollow = (points["status"] == "diverged").to_numpy()
        for mask, face in ((~hollow, colour), (hollow, "none")):
            if not mask.any():
                continue
            ax_ev.errorbar(
                x[mask],
                y[mask],
                yerr=np.where(np.isfinite(se[mask]), se[mask], 0.0),
                linestyle="",
                marker=markers[family],
                markersize=6,
                color=colour,
                markerfacecolor=face,
                ecolor=colour,
                elinewidth=0.9,
                capsize=2.5,
                alpha=0.85,
            )
            positive = mask & np.isfinite(se) & (se > 0)
            if positive.any():
                ax_se.scatter(
                    x[positive],
                    se[positive],
                    marker=markers[family],
                    s=36,
                    color=colour if face != "none" else "none",
                    edgecolors=colour,
                    linewidths=1.0,
                    alpha=0.85,
                )
        means = points.groupby("n_links")["value"].mean().sort_index()
        if len(means) > 1:
            ax_ev.plot(
                means.index.to_numpy(float) + offsets[estimator],
                means.to_numpy(float),
                color=colour,
                linewidth=0.8,
                alpha=0.5,
            )
    if not bad.empty:
        counts = bad.groupby("estimator").size()
        totals = group.groupby("estimator").size()
        text = "not finite: " + ", ".join(
            f"{e} {counts[e]}/{totals[e]}" for e in ESTIMATORS if e in counts
        )
        if finite.empty:
            note(ax_ev, "no finite evidence estimate\n" + text)
        else:
            ax_ev.text(
                0.02, 0.02, text, transform=ax_ev.transAxes, fontsize="x-small", color="0.35"
            )
    if ax_se.collections:
        ax_se.set_yscale("log")
    else:
        note(ax_se, "no positive standard error")


def schedule_comparison(ds: xr.Dataset) -> Figure:
    points = estimates_frame(ds)
    if points.empty:
        return note_figure(
            "no chaining run in the merged file (no run with link_lambda)",
            "Chaining schedules compared",
        )
    markers = _markers(points["family"])
    offsets = _offsets([e for e in ESTIMATORS if e in set(points["estimator"])], 0.12)
    keys = sorted(
        {(str(d), int(h)) for d, h in zip(points["dataset"], points["hidden"], strict=True)}
    )
    with style():
        fig = new_figure(12.5, 3.9 * len(keys))
        axes = fig.subplots(len(keys), 2, squeeze=False)
        for (ax_ev, ax_se), (name, hidden) in zip(axes, keys, strict=True):
            group = points[(points["dataset"] == name) & (points["hidden"] == hidden)]
            label = f"{name}, H = {hidden}" if hidden >= 0 else f"{name}, H n/a"
            ax_ev.set_title(f"{label}: (a) log evidence")
            ax_se.set_title(f"{label}: (b) standard error")
            ax_ev.set_ylabel("log evidence ± s.e. (nats)")
            ax_se.set_ylabel("s.e. of log evidence (nats, log scale)")
            links = sorted(set(group["n_links"].astype(int)))
            for ax in (ax_ev, ax_se):
                ax.set_xlabel("number of links K")
                # ticks at the K drawn: a single K gave ticks at the dodge offsets (9.87 ...)
                if len(links) <= 8:
                    ax.set_xticks(links)
                else:
                    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            _draw_group(ax_ev, ax_se, group, markers, offsets)

        handles = [
            Line2D([], [], color=ESTIMATOR_COLOURS[e], marker="o", linestyle="", label=e)
            for e in offsets
        ]
        handles += [
            Line2D([], [], color="0.3", marker=markers[f], linestyle="", label=f)
            for f in sorted(markers)
        ]
        handles.append(
            Line2D([], [], color="0.3", linewidth=0.8, alpha=0.6, label="mean over seeds at K")
        )
        if (points["status"] == "diverged").any():
            handles.append(
                Line2D(
                    [],
                    [],
                    color="0.3",
                    marker="o",
                    markerfacecolor="none",
                    linestyle="",
                    label="run flagged diverged",
                )
            )
        outside_legend(axes[0, 1], handles, "estimator / schedule")
        # above the first row's panel titles (tight_layout leaves it on top of them)
        fig.suptitle(
            "Chaining evidence against the number of links, per schedule family",
            y=1.0 + 0.3 / fig.get_figheight(),
        )
    return fig
