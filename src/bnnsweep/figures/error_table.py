"""``error_table``: test errors per dataset, method and sweep axis value, with published values.

One row per (dataset, method[, hidden][, components][, schedule]...) — an axis is a column
only when some run uses it, blank in the rows of methods that do not. For each metric, the mean and standard error (sample s.d. /
sqrt(n)) over the group's seeds and splits, taken over runs with a finite value and not
``diverged``; ``n_runs`` counts every run of the group, ``n_not_ok`` those whose status is
not ``ok``. ``published`` lists the reference values of :mod:`.published` for the dataset
and method label. :func:`write_table` writes the same table as Markdown and CSV.

Paired differences (issue 17, :mod:`._paired`): ``paired_with`` names the dataset's reference
label, ``n_pairs`` counts the runs of the row with a run of the reference at the same split,
seed and ``hidden`` (the common random numbers), and ``{metric}_diff_mean``/``_se`` are the
mean and standard error of the per-pair differences row - reference. Blank for the reference
row itself and for a row without a partner. ``start_gain_mean``/``_se``: ``log_evidence`` minus
the bound the run's own fit started from (fa/full: its diagonal fit; mixture: its one-component
fit), blank for methods without a warm start.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from ..cells.atomic_file import write_atomic
from ..sweeps.axes import AXES, NOT_APPLICABLE
from ._common import mean_se, runs_frame
from ._paired import paired_columns, reference_label, start_gain
from .published import format_references

METRICS = ("test_rmse", "test_nmse", "test_loglik", "log_evidence")


def _used_axes(runs: pd.DataFrame) -> list[str]:
    return [
        axis
        for axis, na in NOT_APPLICABLE.items()
        if axis in runs and (runs[axis].astype(str) != str(na)).any()
    ]


def error_table(ds: xr.Dataset) -> pd.DataFrame:
    runs = runs_frame(ds)
    keys = ["dataset", "method", *_used_axes(runs)]
    references = {
        dataset: reference_label(group) for dataset, group in runs.groupby("dataset", sort=True)
    }
    rows = []
    for values, group in runs.groupby(keys, sort=True):
        row = dict(zip(keys, values, strict=True))
        row["n_runs"] = len(group)
        row["n_not_ok"] = int((group["status"] != "ok").sum())
        kept = group[group["status"] != "diverged"]
        for metric in METRICS:
            column = kept[metric] if metric in kept else pd.Series(dtype=float)
            mean, se, _ = mean_se(column)
            row[f"{metric}_mean"] = mean
            row[f"{metric}_se"] = se
        row.update(_paired(runs, row["dataset"], row["method"], group, references))
        row["start_gain_mean"], row["start_gain_se"] = start_gain(group)
        row["published"] = format_references(row["dataset"], row["method"])
        rows.append(row)
    columns = [
        *keys,
        "n_runs",
        "n_not_ok",
        *(f"{m}_{s}" for m in METRICS for s in ("mean", "se")),
        "paired_with",
        "n_pairs",
        *(f"{m}_diff_{s}" for m in METRICS for s in ("mean", "se")),
        "start_gain_mean",
        "start_gain_se",
        "published",
    ]
    table = pd.DataFrame(rows, columns=columns)
    table["paired_with"] = table["paired_with"].astype("string")
    table["n_pairs"] = table["n_pairs"].astype("Int64")
    return blank_unused_axes(table)


def _paired(runs: pd.DataFrame, dataset: str, label: str, group: pd.DataFrame, references):
    """The paired-difference columns of one row against its dataset's reference label."""
    reference = references[dataset]
    if reference is None or reference == label:
        return {"paired_with": pd.NA, **paired_columns(group, None, METRICS)}
    partner = runs[(runs["dataset"] == dataset) & (runs["method"] == reference)]
    columns = paired_columns(group, partner, METRICS)
    return {"paired_with": reference if columns["n_pairs"] is not pd.NA else pd.NA, **columns}


def blank_unused_axes(table: pd.DataFrame) -> pd.DataFrame:
    """Axis columns with a missing value (<NA>, written blank) where a row's method does not
    use the axis, instead of the merged file's 'not applicable' sentinel (-1, 'none')."""
    for name, axis in AXES.items():
        if name in table:
            kind = "Int64" if axis.type is int else "string"
            column = table[name].astype(kind)
            table[name] = column.mask(column == axis.not_applicable)
    return table


def _fmt(mean: float, se: float, missing: str = "–") -> str:
    if not np.isfinite(mean):
        return missing
    if not np.isfinite(se):
        return f"{mean:.4g}"
    return f"{mean:.4g} ± {se:.2g}"


def to_markdown(table: pd.DataFrame) -> str:
    """Markdown with 'mean ± s.e.' cells (s.e. omitted for a single run, '–' for none; a
    paired difference without pairs blank)."""
    keys = [c for c in table.columns if c in ("dataset", "method", *NOT_APPLICABLE)]
    paired = "paired_with" in table
    differences = [f"Δ {m}" for m in METRICS] if paired else []
    header = [*keys, "n runs", "n not ok", *METRICS]
    header += ["paired with", "n pairs", *differences] if paired else []
    gain = "start_gain_mean" in table
    header += ["bound − own start"] if gain else []
    header.append("published")
    text = {*keys, "paired with", "published"}  # left-aligned; numbers right-aligned
    lines = [
        "# Test errors",
        "",
        "Mean ± standard error over seeds and splits (runs with a finite value, diverged runs",
        "excluded). test_rmse in original target units; test_nmse = MSE / variance of the test",
        "targets; test_loglik = mean Gaussian log predictive density (nats); log_evidence in",
        "nats. Published values were obtained with the papers' own architectures.",
        "",
        "Δ: mean ± standard error over pairs of the difference row − 'paired with', one pair",
        "per run of the row with a run of the reference at the same split, seed and hidden",
        "units (common random numbers). A dataset's reference is its diagonal vi_gauss (the",
        "start of its fa/full Gaussians and mixtures), else its laplace, map, hmc or pbp. Blank",
        "for the reference itself and for rows without a partner. bound − own start: the",
        "log_evidence bound minus the one the run's fit started from (fa/full: its diagonal",
        "fit; mixture: its one-component fit), mean ± standard error over runs.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" if h in text else "---:" for h in header) + "|",
    ]
    for _, row in table.iterrows():
        cells = ["" if pd.isna(row[k]) else str(row[k]) for k in keys]
        cells += [str(int(row["n_runs"])), str(int(row["n_not_ok"]))]
        cells += [_fmt(row[f"{m}_mean"], row[f"{m}_se"]) for m in METRICS]
        if paired:
            cells += ["" if pd.isna(row["paired_with"]) else str(row["paired_with"])]
            cells += ["" if pd.isna(row["n_pairs"]) else str(int(row["n_pairs"]))]
            cells += [_fmt(row[f"{m}_diff_mean"], row[f"{m}_diff_se"], "") for m in METRICS]
        if gain:
            cells.append(_fmt(row["start_gain_mean"], row["start_gain_se"], ""))
        cells.append(str(row["published"]).replace("|", "/"))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_table(table: pd.DataFrame, path, markdown=to_markdown) -> list[Path]:
    """Write ``<stem>.md`` (``markdown(table)``) and ``<stem>.csv`` next to ``path``; return
    both paths."""
    path = Path(path)
    md, csv = path.with_suffix(".md"), path.with_suffix(".csv")
    text = markdown(table)
    write_atomic(md, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
    write_atomic(csv, lambda tmp: table.to_csv(tmp, index=False, float_format="%.10g"))
    return [md, csv]
