"""``occam_hill``: log evidence and test error against the number of hidden units (paper 001
figs. 2-3, after MacKay).

Per dataset, a row of two panels. (a) One point per mode counted in a Laplace run's evidence
(``mode_log_evidence`` where ``mode_distinct``), one point per run for methods without modes,
and per method a line through the mean over seeds (and splits) of the run's combined
``log_evidence``, with +- one standard error when there are several seeds. (b) The test error
of every mode (hollow when the mode is not counted in the evidence: a duplicate, or no
positive-definite Hessian) or run, and per method the mean +- s.e. of the runs' test error.
The test error is MSE / noise variance when the dataset's noise level is known (with the
theoretical minimum 1 when the test targets are noisy), otherwise RMSE. Diverged runs and
runs without a hidden-units axis are left out.

A chaining run that carries its second estimator (``valley_smc``'s ``tempering_check``:
``diag_smc_log_z_tempering``, valley_tempering from the SMC's final reference) adds a series
of its own, "<method>: tempering on its reference", drawn as a run without modes and without
a test error (``second_estimates``), so that the two estimators of each cell stand side by
side.

Where a dataset holds laplace runs with different evidence-framework settings (labels run
with ``method: laplace``, e.g. today's default beside paper 001 sec. 4 as written), a note
under panel (a) gives each label's settings and its paired difference from ``laplace`` at
the two largest H, beside those of the evidence-only elements re-evaluated at laplace's own
modes (``laplace_elements``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ._common import (
    dodge,
    mean_se,
    members_frame,
    method_palette,
    new_figure,
    note,
    outside_legend,
    runs_frame,
    style,
    test_error,
    test_targets_noisy,
    usable,
)
from .laplace_elements import describe, element_effects, framework_of

MEMBER_SIZE = 36
RUN_SIZE = 32


def _mean_line(ax, frame: pd.DataFrame, column: str, offset: float, color) -> None:
    rows = []
    for hidden, group in frame.groupby("hidden", sort=True):
        mean, se, n = mean_se(group[column])
        if n:
            rows.append((hidden + offset, mean, se))
    if not rows:
        return
    x, y, se = (np.array(v, dtype=float) for v in zip(*rows, strict=True))
    yerr = np.where(np.isfinite(se), se, 0.0) if np.isfinite(se).any() else None
    ax.errorbar(
        x,
        y,
        yerr=yerr,
        color=color,
        marker="D",
        markersize=5,
        markeredgecolor="white",
        linewidth=1.6,
        capsize=3,
        zorder=3,
    )


def _scatter(ax, x, y, color, marker: str, filled: bool, size: float) -> None:
    if len(x) == 0:
        return
    ax.scatter(
        x,
        y,
        s=size,
        marker=marker,
        facecolors=color if filled else "none",
        edgecolors=color,
        linewidths=1.1,
        alpha=0.8,
        zorder=2,
    )


def _maybe_log(ax, values) -> None:
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size and np.all(v > 0) and v.max() / v.min() > 30:
        ax.set_yscale("log")


def _draw_dataset(
    ax_ev, ax_err, name: str, runs: pd.DataFrame, members: pd.DataFrame, palette: dict
) -> None:
    ax_ev.set_title(f"{name}: (a) log evidence")
    ax_err.set_title(f"{name}: (b) test error")
    ax_ev.set_xlabel("hidden units H")
    ax_err.set_xlabel("hidden units H")
    ax_ev.set_ylabel("log evidence ln p(D | H) (nats)")
    err_col, err_label, divisor = test_error(name)
    ax_err.set_ylabel(err_label)
    if runs.empty:
        for ax in (ax_ev, ax_err):
            note(ax, "no usable runs with a hidden-units axis")
        return

    hidden = np.sort(runs["hidden"].unique())
    spacing = float(np.min(np.diff(hidden))) if hidden.size > 1 else 1.0
    methods = sorted(runs["method"].unique())
    offsets = dodge(methods, spacing)
    without_evidence = []
    errors_drawn = []
    evidence_drawn: list[tuple[float, float]] = []  # (H, ln p(D)) of every point drawn
    for method in methods:
        color = palette[method]
        m_runs = runs[runs["method"] == method]
        m_members = members[members["method"] == method]
        off = offsets[method]

        # (a) evidence: counted members, else one point per run
        counted = m_members[m_members["counted"].to_numpy(bool)]
        _scatter(
            ax_ev,
            counted["hidden"] + off,
            counted["member_log_evidence"],
            color,
            "o",
            True,
            MEMBER_SIZE,
        )
        lone = m_runs[~m_runs["run"].isin(counted["run"])]
        lone = lone[np.isfinite(lone["log_evidence"].to_numpy(float))]
        _scatter(ax_ev, lone["hidden"] + off, lone["log_evidence"], color, "s", True, RUN_SIZE)
        evidence_drawn += list(zip(counted["hidden"], counted["member_log_evidence"], strict=True))
        evidence_drawn += list(zip(lone["hidden"], lone["log_evidence"], strict=True))
        if np.isfinite(m_runs["log_evidence"].to_numpy(float)).any():
            _mean_line(ax_ev, m_runs, "log_evidence", off, color)
        elif counted.empty:
            without_evidence.append(method)

        # (b) test error of each member (hollow when not counted), else of each run
        if divisor is not None:
            member_err = m_members["member_test_mse"] / divisor
            run_err = m_runs["test_mse"] / divisor
        else:
            member_err = m_members["member_test_rmse"]
            run_err = m_runs["test_rmse"]
        flags = m_members["counted"].to_numpy(bool)
        x = m_members["hidden"].to_numpy(float) + off
        _scatter(ax_err, x[flags], member_err[flags], color, "o", True, MEMBER_SIZE)
        _scatter(ax_err, x[~flags], member_err[~flags], color, "o", False, MEMBER_SIZE)
        lone = ~m_runs["run"].isin(m_members["run"])
        _scatter(ax_err, m_runs["hidden"][lone] + off, run_err[lone], color, "s", True, RUN_SIZE)
        _mean_line(ax_err, m_runs.assign(error=run_err), "error", off, color)
        errors_drawn += [*member_err, *run_err]

    if divisor is not None and test_targets_noisy(name):
        ax_err.axhline(1.0, color="0.3", linestyle="--", linewidth=1, zorder=1)
        ax_err.annotate(
            "theoretical minimum 1.0",
            xy=(0.99, 1.0),
            xycoords=("axes fraction", "data"),
            xytext=(0, -3),  # under the line at the right: the small-H markers sat on it
            textcoords="offset points",
            ha="right",
            va="top",
            fontsize="x-small",
            color="0.3",
        )
        errors_drawn.append(1.0)
    _maybe_log(ax_err, errors_drawn)
    if len(without_evidence) == len(methods):
        note(ax_ev, "no method with a log evidence")
    elif without_evidence:
        ax_ev.text(
            0.01,
            0.98,
            "no log evidence: " + ", ".join(without_evidence),
            ha="left",
            va="top",
            transform=ax_ev.transAxes,
            fontsize="x-small",
            color="0.35",
        )
    for ax in (ax_ev, ax_err):
        ax.set_xticks(hidden)
        ax.set_xlim(hidden[0] - 0.5 * spacing, hidden[-1] + 0.5 * spacing)
    _show_the_top(ax_ev, evidence_drawn)


TOP_SPAN = 150.0
"""The evidence panel shows the top this many nats (small networks' evidence lies hundreds of
nats lower and would flatten the hill); the points below are named under the panel."""


def _show_the_top(ax, points: list[tuple[float, float]]) -> None:
    """Limit the evidence axis to the top ``TOP_SPAN`` nats of what was drawn, and say which
    H have points below it and how low they go."""
    finite = [(h, y) for h, y in points if np.isfinite(y)]
    if not finite:
        return
    ys = np.array([y for _, y in finite])
    top = float(ys.max())
    if top - ys.min() <= TOP_SPAN:
        return
    low = top - TOP_SPAN
    ax.set_ylim(low, top + 0.06 * TOP_SPAN)
    below = sorted({int(h) for h, y in finite if y < low})
    lowest = min(y for _, y in finite)
    ax.text(
        0.99, 0.02,
        f"off scale below: H = {', '.join(map(str, below))} (down to {lowest:.0f})",
        ha="right", va="bottom", transform=ax.transAxes, fontsize="x-small", color="0.35",
    )  # fmt: skip


def _legend_handles(
    palette: dict, methods, members: pd.DataFrame, most_seeds: int, lone_runs: bool
) -> list[Line2D]:
    """Legend entries for what a dataset's row draws, and only those: each method as its
    mean line, the member markers of the levels drawn (hollow only where some member is not
    counted), the run square where runs without members are drawn; ``most_seeds`` is the
    largest number of runs behind one mean (one: there is no standard error to show)."""
    handles = [
        Line2D([], [], color=palette[m], marker="D", markeredgecolor="white", label=m)
        for m in methods
    ]
    grey = "0.3"
    for level, group in members.groupby("level", sort=True) if not members.empty else []:
        counted = group["counted"].to_numpy(bool)
        if counted.any():
            handles.append(
                Line2D([], [], color=grey, marker="o", linestyle="", label=f"{level} in evidence")
            )
        if (~counted).any():
            handles.append(
                Line2D(
                    [],
                    [],
                    color=grey,
                    marker="o",
                    markerfacecolor="none",
                    linestyle="",
                    label=f"{level} not counted",
                )  # fmt: skip
            )
    if lone_runs:
        handles.append(Line2D([], [], color=grey, marker="s", linestyle="", label="run (per seed)"))
    mean = "mean ± s.e. over seeds" if most_seeds > 1 else "mean (one seed: no s.e.)"
    handles.append(Line2D([], [], color=grey, marker="D", linestyle="-", label=mean))
    return handles


PAPER_001 = {"hessian": "exact", "gamma_hessian": "exact", "evidence": "paper",
             "symmetry": "factor", "modes": "all"}  # fmt: skip
"""Paper 001 sec. 4 as written: A = grad grad E in eqs. 10-11, hyperpriors neglected
(footnote 1), ln h! + h ln 2, the evidences of all modes found summed."""


def _which(framework: dict[str, str]) -> str:
    from .laplace_elements import framework_of

    if framework == PAPER_001:
        return "  [paper 001 sec. 4 as written]"
    if framework == framework_of("{}"):
        return "  [today's default]"
    return ""


def _framework_note(ds: xr.Dataset, d_runs: pd.DataFrame, name: str) -> str | None:
    """Each laplace label's framework settings and, at the two largest H, its mean +- s.e.
    paired difference from the ``laplace`` label; None unless the settings differ."""
    if "method_name" not in d_runs or "resolved_settings_json" not in d_runs:
        return None
    laplace = d_runs[d_runs["method_name"] == "laplace"]
    frameworks = {
        label: framework_of(str(group["resolved_settings_json"].iloc[0]))
        for label, group in laplace.groupby("method", sort=True)
    }
    if len({tuple(f.items()) for f in frameworks.values()}) < 2:
        return None
    lines = [f"{name}: Laplace evidence framework per label"]
    lines += [f"  {label}: {describe(f)}{_which(f)}" for label, f in frameworks.items()]
    for label, group in laplace.groupby("method", sort=True):
        missing = group[~np.isfinite(group["log_evidence"].to_numpy(float))]
        for hidden, runs in missing.groupby("hidden", sort=True):
            lines.append(
                f"  {label}: no mode with a positive-definite Hessian at H = {hidden} in "
                f"{len(runs)} of {int((group['hidden'] == hidden).sum())} seeds (no evidence)"
            )
    if "laplace" not in frameworks:
        return "\n".join(lines)
    subset = ds.isel(run=np.flatnonzero(ds["dataset"].values.astype(str) == name))
    effects = element_effects(subset)
    seeds = laplace[laplace["method"] == "laplace"].groupby("hidden")["seed"].nunique()
    effects["n_seeds"] = effects["hidden"].map(seeds).fillna(0).astype(int)
    top = sorted(effects["hidden"].unique())[-2:]
    lines.append(
        "ln p(D) minus laplace's, paired by seed, at H = "
        + " / ".join(str(h) for h in top)
        + " (mean ± s.e.; 'laplace | x' re-scores laplace's own modes with setting x):"
    )
    for variant, group in effects.groupby("variant", sort=True):
        if variant == "laplace" or ("|" in variant and not variant.startswith("laplace |")):
            continue
        by_h = group.set_index("hidden")
        cells = []
        for h in top:
            if h in by_h.index and np.isfinite(by_h.loc[h, "minus_laplace"]):
                d, se = by_h.loc[h, "minus_laplace"], by_h.loc[h, "minus_laplace_se"]
                cell = f"{d:+.1f} ± {se:.1f}" if np.isfinite(se) else f"{d:+.1f}"
                n, seeds = int(by_h.loc[h, "minus_laplace_n"]), int(by_h.loc[h, "n_seeds"])
                cells.append(cell if n == seeds else f"{cell} (n = {n})")
            else:
                cells.append("-")
        lines.append(f"  {variant}: " + " / ".join(cells))
    return "\n".join(lines)


def _zoom(ax, runs: pd.DataFrame, palette: dict) -> None:
    """An inset of the mean lines from the H of the highest mean on, where the hill's top
    would otherwise be squeezed by the small networks' far lower evidence."""
    runs = runs[np.isfinite(runs["log_evidence"].to_numpy(float))]
    if runs.empty or ax.get_ylim()[0] > runs["log_evidence"].min():
        return  # the axis already shows the top (_show_the_top): an inset would hide it
    means = runs.groupby(["method", "hidden"])["log_evidence"].mean()
    top = means.max()
    h_peak = int(means.idxmax()[1])
    near = means[means > top - 100.0].index.get_level_values("hidden")
    start = min(h_peak, int(near.min()))
    if start == runs["hidden"].min():
        return
    inset = ax.inset_axes([0.42, 0.1, 0.55, 0.55])
    part = runs[runs["hidden"] >= start]
    for method, group in part.groupby("method", sort=True):
        _mean_line(inset, group, "log_evidence", 0.0, palette[method])
    inset.set_xticks(sorted(part["hidden"].unique()))
    inset.tick_params(labelsize="x-small")
    inset.set_title(f"zoom: H >= {start}", fontsize="x-small")


SECOND = "diag_smc_log_z_tempering"
SECOND_LABEL = ": tempering on its reference"


def second_estimates(runs: pd.DataFrame) -> pd.DataFrame:
    """Pseudo-runs for the second estimator that a chaining cell carries (``SECOND`` and its
    s.e.): the run's coordinates and status, method "<method>: tempering on its reference",
    ``log_evidence`` the second estimate, no test error; empty when no run carries one."""
    if SECOND not in runs:
        return runs.iloc[0:0]
    carried = runs[np.isfinite(runs[SECOND].to_numpy(float))]
    errors = ("test_rmse", "test_mse", "test_nmse")
    return carried.assign(
        method=carried["method"] + SECOND_LABEL,
        log_evidence=carried[SECOND],
        log_evidence_se=carried.get(f"{SECOND}_se", np.nan),
        **{col: np.nan for col in errors},
    )


def occam_hill(ds: xr.Dataset) -> Figure:
    all_runs = runs_frame(ds)
    members = members_frame(ds, all_runs)
    all_runs = pd.concat([all_runs, second_estimates(all_runs)], ignore_index=True)
    palette = method_palette(all_runs["method"])
    runs = usable(all_runs)
    runs = runs[runs["hidden"] >= 0]
    members = members[members["run"].isin(runs["run"])]
    names = sorted(all_runs["dataset"].unique()) or ["(no runs)"]
    with style():
        fig = new_figure(12.5, 4.4 * len(names))
        axes = fig.subplots(len(names), 2, squeeze=False)
        notes = []
        for row, name in enumerate(names):
            d_runs = runs[runs["dataset"] == name]
            d_members = members[members["dataset"] == name]
            _draw_dataset(axes[row, 0], axes[row, 1], name, d_runs, d_members, palette)
            methods = sorted(d_runs["method"].unique())
            if methods:
                most_seeds = int(d_runs.groupby(["method", "hidden"]).size().max())
                lone_runs = bool((~d_runs["run"].isin(d_members["run"])).any())
                handles = _legend_handles(palette, methods, d_members, most_seeds, lone_runs)
                outside_legend(axes[row, 1], handles, "method / marker")
            framework = _framework_note(ds, d_runs, name)
            if framework:
                notes.append(framework)
                _zoom(axes[row, 0], d_runs, palette)
        if notes:  # below the figure: tight_layout leaves it alone, bbox_inches takes it in
            fig.text(0.01, 0.0, "\n\n".join(notes), ha="left", va="top",
                     fontsize="small", family="monospace", color="0.15")  # fmt: skip
        fig.suptitle(
            "Log evidence and test error against the number of hidden units (paper 001 figs. 2-3)"
        )
    return fig
