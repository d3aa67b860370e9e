"""``chaining_diagnostics``: one Monte Carlo chaining run link by link (paper 001 fig. 1).

Per dataset, a row of three panels for one chosen chaining run: the run with the largest
number of hidden units among those with schedule ``paper`` (else among all chaining runs),
preferring runs not flagged ``diverged``, then the lowest seed.

(a) The error E(lambda, w) = lambda phi(w) + E_0(w) (``link_energy_trace``) at the kept
samples of the link whose lambda is nearest 0.6, against the sample index, one line per chain
(paper 001 fig. 1a); files without that trace show phi(w) (``link_phi_trace``) instead.
(b) The log evidence ratio ln p(D|M_i) / p(D|M_{i-1}) of every link i = 1..K against
lambda_i, with +- one standard error; the x axis is logarithmic because the schedules are
dense near 0 (lambda_0 = 0 has no ratio). (c) The mean HMC acceptance probability of every
link against lambda_i, with the run's ``target_accept`` as a dashed line when it is known.

A chaining run is any run with at least two finite ``link_lambda`` values; runs of a merged
file that have fewer links than the longest are padded with NaN, which is ignored.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from ._common import new_figure, note, note_figure, runs_frame, style

TRACE_LAMBDA = 0.6
"""The lambda whose error trace panel (a) shows (paper 001 fig. 1a)."""


def n_links(lambdas) -> int:
    """Number of links K of a schedule stored as ``link_lambda`` (lambda_0 .. lambda_K, padded
    with NaN in a merged file): the count of finite values minus one, at least 0."""
    finite = np.isfinite(np.asarray(lambdas, dtype=float))
    return max(int(finite.sum()) - 1, 0)


def nearest_link(lambdas, target: float = TRACE_LAMBDA) -> int:
    """Index of the link whose lambda is closest to ``target`` (NaN padding ignored; the first
    of equally close links). Raises ``ValueError`` when no lambda is finite."""
    lambdas = np.asarray(lambdas, dtype=float)
    finite = np.isfinite(lambdas)
    if not finite.any():
        raise ValueError("no finite lambda")
    distance = np.where(finite, np.abs(lambdas - target), np.inf)
    return int(np.argmin(distance))


def chaining_runs(ds: xr.Dataset) -> pd.DataFrame:
    """The runs frame (see ``runs_frame``) restricted to chaining runs, with ``n_links`` (K)."""
    runs = runs_frame(ds)
    if "link_lambda" not in ds or "run" not in ds["link_lambda"].dims:
        empty = runs.iloc[:0].copy()
        empty["n_links"] = pd.Series(dtype=np.int64)
        return empty
    lambdas = ds["link_lambda"].transpose("run", ...).values.astype(float)
    lambdas = lambdas.reshape(lambdas.shape[0], -1)
    runs["n_links"] = [n_links(row) for row in lambdas]
    if "schedule" not in runs:
        runs["schedule"] = "none"
    return runs[runs["n_links"] >= 1].reset_index(drop=True)


def choose_run(chains: pd.DataFrame) -> pd.Series:
    """The run to show for one dataset: largest hidden size among schedule ``paper`` (else
    among all), then not ``diverged``, then lowest seed, then first in the file."""
    paper = chains[chains["schedule"] == "paper"]
    pool = paper if not paper.empty else chains
    ranked = pool.assign(_diverged=(pool["status"] == "diverged").astype(int)).sort_values(
        ["hidden", "_diverged", "seed", "run"], ascending=[False, True, True, True]
    )
    return ranked.iloc[0]


def _target_accept(ds: xr.Dataset, run: int) -> float | None:
    for name in ("resolved_settings_json", "settings_json"):
        if name not in ds or ds[name].dims != ("run",):
            continue
        try:
            value = json.loads(str(ds[name].values[run])).get("target_accept")
        except (ValueError, AttributeError):
            continue
        if value is not None:
            return float(value)
    return None


def _link_values(ds: xr.Dataset, name: str, run: int, n: int) -> np.ndarray:
    if name not in ds:
        return np.full(n, np.nan)
    return ds[name].isel(run=run).values.astype(float).reshape(-1)[:n]


def _trace_panel(ax, ds: xr.Dataset, run: int, lambdas: np.ndarray) -> None:
    link = nearest_link(lambdas)
    name, symbol = "link_energy_trace", f"E(λ = {lambdas[link]:.3g}, w)"
    if name not in ds or not np.isfinite(ds[name].isel(run=run, link=link).values).any():
        name, symbol = "link_phi_trace", "φ(w) = −ln p(D | w)"
    ax.set_title(f"(a) error at λ = {lambdas[link]:.3g}")
    ax.set_xlabel("kept sample")
    ax.set_ylabel(f"{symbol} (nats)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if name not in ds:
        note(ax, "no link_phi_trace in the merged file")
        return
    trace = ds[name].isel(run=run, link=link).transpose("chain", "sample").values
    trace = np.asarray(trace, dtype=float)
    drawn = 0
    for chain, values in enumerate(trace):
        keep = np.isfinite(values)
        if not keep.any():
            continue
        ax.plot(np.flatnonzero(keep), values[keep], linewidth=0.9, label=f"chain {chain}")
        drawn += 1
    if drawn == 0:
        note(ax, f"no finite error values at link {link}")
    elif 1 < drawn <= 8:
        ax.legend(fontsize="x-small", loc="best")


def _ratio_panel(ax, ds: xr.Dataset, run: int, lambdas: np.ndarray) -> None:
    n = len(lambdas)
    ratio = _link_values(ds, "link_ln_ratio", run, n)
    se = _link_values(ds, "link_ln_ratio_se", run, n)
    ax.set_title("(b) ln p(D|M_i) / p(D|M_{i−1})")
    ax.set_xlabel("λ_i (log scale)")
    ax.set_ylabel("ln evidence ratio (nats)")
    links = np.arange(n)
    keep = (links > 0) & (lambdas > 0) & np.isfinite(ratio)
    bad = np.flatnonzero((links > 0) & np.isfinite(lambdas) & ~np.isfinite(ratio))
    bad_text = ", ".join(str(i) for i in bad[:6]) + (", ..." if len(bad) > 6 else "")
    ax.axhline(0.0, color="0.6", linewidth=0.8)
    if keep.any():
        yerr = np.where(np.isfinite(se[keep]), se[keep], 0.0)
        ax.errorbar(
            lambdas[keep],
            ratio[keep],
            yerr=yerr,
            marker="o",
            markersize=4,
            linewidth=1.0,
            capsize=2.5,
            color="C0",
        )
        ax.set_xscale("log")
        total = float(np.sum(ratio[keep]))
        total_se = float(np.sqrt(np.sum(yerr**2)))
        text = f"Σ = {total:.3g} ± {total_se:.2g} nats"
        if bad.size:
            text = f"Σ of finite ratios = {total:.3g} ± {total_se:.2g} nats"
            text += f"\nnot finite at link {bad_text}"
        ax.text(0.03, 0.97, text, transform=ax.transAxes, ha="left", va="top", fontsize="small")
    else:
        note(ax, f"no finite ln ratio (not finite at link {bad_text})")


def _acceptance_panel(ax, ds: xr.Dataset, run: int, lambdas: np.ndarray) -> None:
    n = len(lambdas)
    acceptance = _link_values(ds, "link_acceptance", run, n)
    ax.set_title("(c) HMC acceptance per link")
    ax.set_xlabel("λ_i (log scale)")
    ax.set_ylabel("mean acceptance probability")
    keep = (lambdas > 0) & np.isfinite(acceptance)
    if not keep.any():
        note(ax, "no acceptance recorded")
        return
    ax.plot(lambdas[keep], acceptance[keep], marker="o", markersize=4, linewidth=1.0, color="C2")
    ax.set_xscale("log")
    ax.set_ylim(0.0, 1.05)
    target = _target_accept(ds, run)
    if target is not None:
        ax.axhline(target, color="0.4", linestyle="--", linewidth=0.9)
        ax.text(
            0.98,
            target,
            f" target {target:g}",
            transform=ax.get_yaxis_transform(),
            ha="right",
            va="bottom",
            fontsize="small",
            color="0.3",
        )


def chaining_diagnostics(ds: xr.Dataset) -> Figure:
    chains = chaining_runs(ds)
    if chains.empty:
        return note_figure(
            "no chaining run in the merged file (no run with link_lambda)",
            "Chaining diagnostics",
        )
    names = sorted(chains["dataset"].unique())
    with style():
        fig = new_figure(14.5, 4.1 * len(names))
        axes = fig.subplots(len(names), 3, squeeze=False)
        for row, name in zip(axes, names, strict=True):
            chosen = choose_run(chains[chains["dataset"] == name])
            run = int(chosen["run"])
            lambdas = _link_values(ds, "link_lambda", run, ds.sizes["link"])
            _trace_panel(row[0], ds, run, lambdas)
            _ratio_panel(row[1], ds, run, lambdas)
            _acceptance_panel(row[2], ds, run, lambdas)
            hidden = int(chosen["hidden"])
            parts = [
                str(name),
                f"H = {hidden}" if hidden >= 0 else "H n/a",
                f"schedule {chosen['schedule']} (K = {int(chosen['n_links'])})",
                f"seed {int(chosen['seed'])}",
            ]
            if str(chosen.get("split", "default")) not in ("default", ""):
                parts.append(f"split {chosen['split']}")
            if chosen["status"] != "ok":
                parts.append(f"status {chosen['status']}")
            header = ", ".join(parts)
            row[0].set_title(f"\n{row[0].get_title()}")
            row[1].set_title(f"{header}\n{row[1].get_title()}")
            row[2].set_title(f"\n{row[2].get_title()}")
        fig.suptitle("Monte Carlo chaining diagnostics")
    return fig
