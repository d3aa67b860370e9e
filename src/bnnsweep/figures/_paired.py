"""Paired differences between the rows of a table (issue 17, common random numbers).

Every method of one (dataset, split, seed, hidden) draws the same random stream
(``sweep.Cell.rng``): restart r of every method starts from the same weights, and the full and
factor-analysis Gaussians and the mixture start from the diagonal Gaussian fit of that cell.
Two runs of one dataset with equal ``PAIR_KEYS`` are therefore a pair, and for a row (the runs
of one label and axis values) and its reference label the table gives

    d_k = x_k(row) - x_k(reference),   mean(d) ± sd(d) / sqrt(n)

over the n pairs k with both values finite (diverged runs on either side left out). The
s.e. of a paired difference leaves out what the two rows share (the split, the starts), which
the unpaired ``sqrt(se_row**2 + se_ref**2)`` does not.

The reference of a dataset (``reference_label``) is its diagonal ``vi_gauss`` label, the start
of its fa/full Gaussians and mixtures, so that "fa >= diag" and "mixture >= its start" read
off as a non-negative ``log_evidence`` difference; without one, the first label of
``laplace``, ``map``, ``hmc``, ``pbp``. A reference label with several runs at one key (it
varies an axis other than ``hidden``) pairs none of them. The reference row itself, and a row
none of whose runs has a partner, get no difference (blank, not a sentinel).

Within a run, the warm-started fits record their start: ``diag_diagonal_start_bound`` (full
and fa ``vi_gauss``: the diagonal fit of the same restart) and
``diag_single_component_bound`` (``vi_mixture``: its best one-component fit).
:func:`start_gain` is ``log_evidence`` minus that start, a pair that needs no other row.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from ._common import mean_se

PAIR_KEYS = ("split", "seed", "hidden")
"""Within a dataset, the keys of a run's random stream (``sweep.Cell.rng``)."""

FALLBACK_REFERENCES = ("laplace", "map", "hmc", "pbp")
"""Methods whose label is the reference of a dataset without a diagonal ``vi_gauss`` label."""

START_BOUNDS = ("diag_diagonal_start_bound", "diag_single_component_bound")
"""Per-run variables holding the bound a warm-started fit started from."""


def _settings(row: pd.Series) -> dict:
    for column in ("resolved_settings_json", "settings_json"):
        text = row.get(column, "")
        if isinstance(text, str) and text.strip() not in ("", "{}"):
            try:
                return json.loads(text)
            except json.JSONDecodeError:
                continue
    return {}


def label_methods(runs: pd.DataFrame) -> dict[str, tuple[str, str]]:
    """Per label: (registered method name, covariance of q(w) where the method has one)."""
    found = {}
    for label, group in runs.groupby("method", sort=True):
        first = group.iloc[0]
        name = str(first.get("method_name", "") or "") or str(label)
        found[str(label)] = (name, str(_settings(first).get("covariance", "diag")))
    return found


def _first(labels: list[str], method: str) -> str | None:
    """``method``'s own label first, then the others in sorted order."""
    return min(labels, key=lambda label: (label != method, label)) if labels else None


def reference_label(runs: pd.DataFrame) -> str | None:
    """The reference label of the runs of one dataset (module docstring)."""
    methods = label_methods(runs)
    diag = [lab for lab, (name, cov) in methods.items() if name == "vi_gauss" and cov == "diag"]
    if diag:
        return _first(diag, "vi_gauss")
    for method in FALLBACK_REFERENCES:
        labels = [lab for lab, (name, _) in methods.items() if name == method]
        if labels:
            return _first(labels, method)
    return None


def _keyed(runs: pd.DataFrame, metrics) -> pd.DataFrame:
    """The non-diverged runs indexed by ``PAIR_KEYS`` (strings), keys held more than once
    dropped."""
    kept = runs[runs["status"] != "diverged"]
    index = pd.MultiIndex.from_frame(kept[list(PAIR_KEYS)].astype(str))
    values = pd.DataFrame(
        {m: (kept[m].to_numpy(float) if m in kept else np.nan) for m in metrics}, index=index
    )
    return values[~index.duplicated(keep=False)]


def paired_differences(row_runs: pd.DataFrame, reference_runs: pd.DataFrame, metrics):
    """One row per pair (index ``PAIR_KEYS``): ``row - reference`` for each metric."""
    own, ref = _keyed(row_runs, metrics), _keyed(reference_runs, metrics)
    common = own.index.intersection(ref.index)
    return own.loc[common] - ref.loc[common]


def paired_columns(row_runs: pd.DataFrame, reference_runs: pd.DataFrame | None, metrics) -> dict:
    """``n_pairs`` and ``{metric}_diff_mean``/``_se`` of a row against its reference runs;
    missing values (``pd.NA``, NaN) where the row has no partner."""
    blank = {"n_pairs": pd.NA}
    blank.update({f"{m}_diff_{s}": np.nan for m in metrics for s in ("mean", "se")})
    if reference_runs is None:
        return blank
    diffs = paired_differences(row_runs, reference_runs, metrics)
    if diffs.empty:
        return blank
    out = {"n_pairs": len(diffs)}
    for metric in metrics:
        out[f"{metric}_diff_mean"], out[f"{metric}_diff_se"], _ = mean_se(diffs[metric])
    return out


def start_gain(runs: pd.DataFrame) -> tuple[float, float]:
    """Mean and s.e. over the non-diverged runs of ``log_evidence`` minus the run's own start
    bound (``START_BOUNDS``); NaN where no run records a finite start."""
    kept = runs[runs["status"] != "diverged"]
    start = pd.Series(np.nan, index=kept.index)
    for column in START_BOUNDS:
        if column in kept:
            start = start.fillna(pd.to_numeric(kept[column], errors="coerce"))
    mean, se, _ = mean_se(kept["log_evidence"].to_numpy(float) - start.to_numpy(float))
    return mean, se
