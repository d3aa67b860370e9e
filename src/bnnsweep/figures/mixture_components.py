"""``mixture_components``: table of what a variational mixture's components do, from the
``vi_mixture`` runs of a merged file (issue 34: why the mixture's gain over the diagonal
Gaussian is small on the sunspots and Tecator; thesis sec. 5.5.1).

The mixture's bound is L = sum_m Q(m) L_m + I*, with L_m the bound of component m alone and
I* the smoothing-function bound on the mutual information I(m; w) <= -sum_m Q(m) ln Q(m)
<= ln M (``vi_mixture``; paper 000 eq. 16). Per hidden size and number of components M,
over the runs (each started from its best one-component fit, the diagonal Gaussian):

* ``gain_mean``/``gain_se``: L minus the one-component bound it started from (nats);
* ``mi_over_log_m``: I* / ln M, smallest and largest over runs (1: components that do not
  overlap at all in weight space, so the gain is the entropy of Q and nothing else);
* ``component_minus_start``: L_m minus the start's bound, smallest and largest over every
  component of every run (near 0 or below: the components sit on, or beside, the mode the
  diagonal found; well above it: further optimisation, not the mixture);
* ``spread_over_sd``: the components' spread in function space, the Q-weighted s.d. of
  their predictive means at the test points (root mean square over points), over the
  mixture's predictive s.d. (root mean square over points), smallest and largest over runs:
  how far apart the networks the components stand for are, in units of the predictive
  uncertainty;
* ``error_change_mean``/``_se``: the test error (the dataset's headline metric) of the
  mixture minus that of its paired diagonal ``vi_gauss`` run (same split, seed and hidden
  size: ``_paired``), mean +- s.e. over pairs, and ``error_change_z`` their ratio; the
  metric is the one the papers print for the dataset (``headline_metric``).

A mixture whose components are far apart in weight space (I* near ln M) while the spread of
their predictions is a small fraction of the predictive s.d. is the case of the thesis's
fig. 5.6 toy (``mixture_target``) within one mode: components spread along directions the
posterior is long in, which the network function hardly depends on, and the test error
cannot move much.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from ._common import mean_se, runs_frame, test_error, usable
from ._paired import paired_differences, reference_label
from .published import PUBLISHED

NEEDED = ("component_pred_mean", "mixing_weight", "component_bound", "pred_var")
COLUMNS = (
    "dataset", "hidden", "components", "n_runs", "gain_mean", "gain_se", "mi_over_log_m_min",
    "mi_over_log_m_max", "component_minus_start_min", "component_minus_start_max",
    "spread_over_sd_min", "spread_over_sd_max", "error_metric", "n_pairs",
    "error_change_mean", "error_change_se", "error_change_z",
)  # fmt: skip


def headline_metric(dataset: str) -> str:
    """The test error the papers print for ``dataset`` (``published.PUBLISHED``), else the
    figures' headline metric (``_common.test_error``)."""
    printed = sorted({metric for (name, _, metric) in PUBLISHED if name == dataset})
    return printed[0] if printed else test_error(dataset)[0]


def function_spread(ds: xr.Dataset, run: int) -> float:
    """The Q-weighted s.d. of the components' predictive means over the mixture's predictive
    s.d., each the root mean square over test points and outputs (NaN padding dropped)."""
    one = ds.isel(run=run)
    q = one["mixing_weight"].values
    means = one["component_pred_mean"].values  # (component, test_point, output)
    keep = np.isfinite(q)
    q, means = q[keep] / np.sum(q[keep]), means[keep]
    centre = np.tensordot(q, means, axes=1)
    spread = np.sqrt(np.tensordot(q, (means - centre) ** 2, axes=1))
    sd = np.sqrt(one["pred_var"].values)
    ok = np.isfinite(spread) & np.isfinite(sd)
    if not ok.any():
        return np.nan
    return float(np.sqrt(np.mean(spread[ok] ** 2)) / np.sqrt(np.mean(sd[ok] ** 2)))


def _error_change(mixture: pd.DataFrame, diagonal: pd.DataFrame | None, metric: str):
    if diagonal is None or diagonal.empty:
        return 0, np.nan, np.nan
    diffs = paired_differences(mixture, diagonal, [metric])
    mean, se, n = mean_se(diffs[metric]) if not diffs.empty else (np.nan, np.nan, 0)
    return n, mean, se


NO_RUNS = "no vi_mixture runs with component predictions in this merged file"


def _no_runs() -> pd.DataFrame:
    return pd.DataFrame([{"dataset": NO_RUNS}], columns=list(COLUMNS))


def mixture_components(ds: xr.Dataset) -> pd.DataFrame:
    """The table (module docstring): one row per dataset, hidden size and M of the
    ``vi_mixture`` runs; one row saying so when there are none."""
    runs = runs_frame(ds)
    if runs.empty or any(name not in ds for name in NEEDED) or "method_name" not in runs:
        return _no_runs()
    runs = usable(runs)
    rows = []
    for dataset, of_dataset in runs.groupby("dataset", sort=True):
        reference = reference_label(of_dataset)
        mixtures = of_dataset[of_dataset["method_name"] == "vi_mixture"]
        metric = headline_metric(str(dataset))
        for (hidden, m), group in mixtures.groupby(["hidden", "components"], sort=True):
            start = group["diag_single_component_bound"].to_numpy(float)
            gain_mean, gain_se, _ = mean_se(group["log_evidence"].to_numpy(float) - start)
            mi = (group["diag_mutual_information"] / group["diag_log_components"]).to_numpy(float)
            own = ds["component_bound"].isel(run=group["run"].to_numpy()).values - start[:, None]
            spread = np.array([function_spread(ds, int(r)) for r in group["run"]])
            diagonal = of_dataset[
                (of_dataset["method"] == reference) & (of_dataset["hidden"] == hidden)
            ] if reference else None  # fmt: skip
            n_pairs, change, change_se = _error_change(group, diagonal, metric)
            rows.append(
                {
                    "dataset": dataset,
                    "hidden": int(hidden),
                    "components": int(m),
                    "n_runs": len(group),
                    "gain_mean": gain_mean,
                    "gain_se": gain_se,
                    "mi_over_log_m_min": np.nanmin(mi),
                    "mi_over_log_m_max": np.nanmax(mi),
                    "component_minus_start_min": np.nanmin(own),
                    "component_minus_start_max": np.nanmax(own),
                    "spread_over_sd_min": np.nanmin(spread),
                    "spread_over_sd_max": np.nanmax(spread),
                    "error_metric": metric,
                    "n_pairs": n_pairs,
                    "error_change_mean": change,
                    "error_change_se": change_se,
                    "error_change_z": change / change_se if change_se > 0 else np.nan,
                }
            )
    return pd.DataFrame(rows, columns=list(COLUMNS)) if rows else _no_runs()


def _range(low: float, high: float, digits: int) -> str:
    if not np.isfinite(low):
        return "–"
    return f"{low:.{digits}f}" if high == low else f"{low:.{digits}f} to {high:.{digits}f}"


def _mean_se(mean: float, se: float, digits: int) -> str:
    if not np.isfinite(mean):
        return "–"
    return f"{mean:.{digits}f} ± {se:.{digits}f}" if np.isfinite(se) else f"{mean:.{digits}f}"


def to_markdown(table: pd.DataFrame) -> str:
    """The table as Markdown, with the module docstring's reading of each column."""
    lines = [
        "# What the mixture's components do (vi_mixture; thesis sec. 5.5.1, fig. 5.6)",
        "",
        "Per hidden size H and components M, over runs: the bound's gain over the one-component",
        "start (nats, mean ± s.e.), I*/ln M (the mutual-information bound over its largest",
        "value), each component's own bound minus the start (nats, over every component of",
        "every run), the Q-weighted s.d. of the components' test predictions over the",
        "predictive s.d. (root mean square over test points), and the test error of the",
        "mixture minus its paired diagonal vi_gauss run (mean ± s.e. over pairs; z = mean /",
        "s.e.). Components far apart in weight space (I*/ln M near 1) whose predictions differ",
        "by a small fraction of the predictive s.d. cannot change the test error much.",
        "",
        "| dataset | H | M | runs | bound − start | I*/ln M | component − start | "
        "prediction spread / s.d. | test error | pairs | mixture − diagonal | z |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in table.itertuples(index=False):
        if r.dataset == NO_RUNS:
            lines.append(f"| {NO_RUNS} |" + " |" * 11)
            continue
        cells = [
            r.dataset, r.hidden, r.components, r.n_runs, _mean_se(r.gain_mean, r.gain_se, 3),
            _range(r.mi_over_log_m_min, r.mi_over_log_m_max, 3),
            _range(r.component_minus_start_min, r.component_minus_start_max, 2),
            _range(r.spread_over_sd_min, r.spread_over_sd_max, 4), r.error_metric, r.n_pairs,
            _mean_se(r.error_change_mean, r.error_change_se, 5),
            f"{r.error_change_z:.1f}" if np.isfinite(r.error_change_z) else "–",
        ]  # fmt: skip
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"
