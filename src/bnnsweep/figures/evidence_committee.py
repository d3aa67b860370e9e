"""``evidence_committee``: paper 000's evidence committees (sec. 4.2-4.3, Tables 1-2).

Paper 000 trains ten networks by the evidence procedure from random starts and averages,
unweighted, the three with the largest hyper-likelihood (the Laplace log evidence of the
mode), on the sunspots (Table 1: NMSE 0.14) and on Tecator with 3 hidden units (Table 2:
RMSE 0.57 for three networks and for all ten). A ``laplace`` run holds what this needs for
each restart: its mode's test predictions (``mode_pred_mean``), log evidence
(``mode_log_evidence``) and whether its Hessian was positive definite
(``mode_positive_definite``; a mode that is not is never counted, as in the method). The
committee of size k is the mean of the k modes of largest log evidence; ``k = 1`` is the
evidence row of the tables (the best network). Duplicated modes are kept, as the paper picks
networks, not distinct modes.

``committee_runs(ds, size)`` gives one row per ``laplace`` run (the run's columns, with
``test_mse``, ``test_rmse`` and ``test_nmse`` of the committee, NMSE with the run's own
normaliser ``nmse_scale``, and ``committee_members``, how many modes it averaged: fewer than
``size`` when the run has fewer positive-definite modes); ``evidence_committee(ds)`` is the
table: per dataset, hidden size and committee size, mean +- s.e. over runs beside the
printed numbers.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from ._common import dataset_meta, mean_se, runs_frame, usable
from .published import Reference

COMMITTEE_SIZES = (1, 3, 10)

PUBLISHED_COMMITTEE: dict[tuple[str, int, int, str], Reference] = {
    ("sunspots", 8, 1, "test_nmse"): Reference(
        0.18, "paper 000 Table 1 (evidence)", "paper 000 T1"
    ),
    ("sunspots", 8, 3, "test_nmse"): Reference(
        0.14, "paper 000 Table 1 (evidence committee, 3 networks)", "paper 000 T1"
    ),
    ("tecator", 3, 1, "test_rmse"): Reference(
        0.60, "paper 000 Table 2 (evidence, 3 hidden units)", "paper 000 T2", decimals=2
    ),
    ("tecator", 3, 3, "test_rmse"): Reference(
        0.57, "paper 000 Table 2 (evidence committee (3), 3 hidden units)", "paper 000 T2"
    ),
    ("tecator", 3, 10, "test_rmse"): Reference(
        0.57, "paper 000 Table 2 (evidence committee (10), 3 hidden units)", "paper 000 T2"
    ),
}
"""Paper 000's printed evidence and evidence-committee test errors, by (dataset, hidden
units, committee size, metric): 8 erf hidden units on the sunspots, 3 on Tecator."""

NEEDED = ("mode_pred_mean", "mode_log_evidence", "y_test")


def committee_runs(ds: xr.Dataset, size: int) -> pd.DataFrame:
    """One row per usable ``laplace`` run with modes: the committee of its ``size`` modes of
    largest log evidence (positive-definite modes only) and that committee's test errors."""
    runs = usable(runs_frame(ds))
    if runs.empty or any(name not in ds for name in NEEDED):
        return runs.iloc[0:0].assign(committee_members=pd.Series(dtype=int))
    means = ds["mode_pred_mean"].transpose("run", "mode", "test_point", "output").values
    evidence = ds["mode_log_evidence"].transpose("run", "mode").values.astype(float)
    if "mode_positive_definite" in ds:
        pd_ok = ds["mode_positive_definite"].transpose("run", "mode").values.astype(float) > 0.5
        evidence = np.where(pd_ok, evidence, np.nan)
    targets = ds["y_test"].transpose("run", "test_point", "output").values.astype(float)
    rows = []
    for _, row in runs.iterrows():
        r = int(row["run"])
        ranked = [i for i in np.argsort(-np.nan_to_num(evidence[r], nan=-np.inf))
                  if np.isfinite(evidence[r, i]) and np.isfinite(means[r, i]).all()]  # fmt: skip
        if not ranked:
            continue
        chosen = ranked[:size]
        mean = means[r, chosen].astype(float).mean(axis=0)
        mse = float(np.mean((mean - targets[r]) ** 2))
        scale = float(row["nmse_scale"])  # NaN NMSE when the test targets do not vary
        rows.append(
            {**row.to_dict(), "committee_members": len(chosen), "test_mse": mse,
             "test_rmse": float(np.sqrt(mse)), "test_nmse": mse / scale if scale > 0 else np.nan}
        )  # fmt: skip
    if not rows:
        return runs.iloc[0:0].assign(committee_members=pd.Series(dtype=int))
    return pd.DataFrame(rows)


def error_metric(dataset: str) -> str:
    """``test_nmse`` for a dataset whose error measure is the NMSE (the sunspots), else
    ``test_rmse`` (Tecator: RMSE in fat %)."""
    return "test_nmse" if dataset_meta(dataset).get("error_measure") == "nmse" else "test_rmse"


def evidence_committee(ds: xr.Dataset) -> pd.DataFrame:
    """The table: per dataset, method label, hidden size and committee size, the committee's
    test error (the dataset's error measure) mean +- s.e. over runs, and the printed value."""
    rows = []
    for size in COMMITTEE_SIZES:
        runs = committee_runs(ds, size)
        if runs.empty:
            continue
        for (dataset, method, hidden), group in runs.groupby(
            ["dataset", "method", "hidden"], sort=True
        ):
            metric = error_metric(str(dataset))
            mean, se, n = mean_se(group[metric])
            ref = PUBLISHED_COMMITTEE.get((str(dataset), int(hidden), size, metric))
            rows.append(
                {
                    "dataset": dataset,
                    "method": method,
                    "hidden": int(hidden),
                    "committee": "best network" if size == 1 else f"best {size} by evidence",
                    "members (min-max)": f"{group['committee_members'].min()}-"
                    f"{group['committee_members'].max()}",
                    "metric": metric,
                    "ours (mean ± s.e.)": f"{mean:.4f} ± {se:.4f}"
                    if np.isfinite(se)
                    else f"{mean:.4f}",  # fmt: skip
                    "runs": n,
                    "published": f"{ref.value:g} ({ref.source})" if ref else "–",
                }
            )
    if not rows:
        return pd.DataFrame({"note": ["no laplace runs with per-mode predictions"]})
    return pd.DataFrame(rows)


def committee_markdown(frame: pd.DataFrame) -> str:
    """:func:`evidence_committee` as Markdown."""
    columns = list(frame.columns)
    lines = [
        "# Evidence committees beside paper 000 Tables 1-2",
        "",
        "Committee: the unweighted mean of the laplace run's modes of largest log evidence "
        "(positive-definite Hessian only); mean ± s.e. over runs (seeds).",
        "",
        "| " + " | ".join(columns) + " |",
        "|" + "---|" * len(columns),
    ]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.to_numpy()]
    return "\n".join(lines) + "\n"
