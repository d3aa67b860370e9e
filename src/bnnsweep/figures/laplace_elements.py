"""Which element of the Laplace evidence framework moves the evidence (issue 17, item 1).

The laplace settings that only change how a converged mode is scored are re-evaluated from
a run's per-mode traces, at the same modes (``mode_log_evidence`` and ``mode_logdet_{exact,
clipped,gauss_newton}``):

- ``hessian=K``: ln p(D) of each mode shifted by -1/2 (ln|A_K| - ln|A_own|);
- ``symmetry=none``: each mode's ln p(D) less ln h! 2^h (``diag_symmetry_log_factor``);
- ``modes=all``: the sum over every mode with a positive-definite Hessian, not one per
  symmetry class.

The modes of the run's combination are then summed by log-sum-exp as ``laplace.fit`` does.
Settings that change the fit itself (``gamma_hessian``, ``evidence``) need their own labels;
those enter as they are. ``element_effects`` sets every variant beside a reference label
(default ``laplace``): mean +- s.e. over seeds of the log evidence and of its paired
difference from the reference (same seed, same random starts).

    python -m bnnsweep.figures.laplace_elements results/EXPERIMENT/merged.nc
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pandas as pd
import xarray as xr

from ._common import mean_se, runs_frame, usable
from ._paired import PAIR_KEYS, paired_differences

FRAMEWORK = ("hessian", "gamma_hessian", "evidence", "symmetry", "modes")
"""The laplace settings that are elements of the evidence framework."""

HESSIAN_KINDS = ("exact", "clipped", "gauss_newton")


def framework_of(resolved_settings_json: str) -> dict[str, str]:
    """The framework settings of one run, from its resolved settings."""
    settings = json.loads(resolved_settings_json or "{}")
    from ..methods.laplace import LaplaceSettings

    defaults = LaplaceSettings()
    return {key: str(settings.get(key, getattr(defaults, key))) for key in FRAMEWORK}


def describe(framework: dict[str, str]) -> str:
    """A short phrase for a run's framework settings, e.g. for a legend note."""
    hyper = "Gamma hyperpriors" if framework["evidence"] == "full" else "hyperpriors neglected"
    sym = "+ ln h! 2^h" if framework["symmetry"] == "factor" else "no ln h! 2^h"
    modes = "distinct modes" if framework["modes"] == "distinct" else "every mode found"
    return (
        f"ln|A|: {framework['hessian']}, gamma: {framework['gamma_hessian']}, {hyper}, "
        f"{sym}, {modes}"
    )


def _trace(ds: xr.Dataset, name: str, run: int) -> np.ndarray:
    return ds[name].isel(run=run).values.astype(float)


def reevaluated(ds: xr.Dataset, run: int, framework: dict[str, str]) -> dict[str, float]:
    """The evidence-only variants of one laplace run, keyed ``setting=value``."""
    ev = _trace(ds, "mode_log_evidence", run)
    counted = np.nan_to_num(_trace(ds, "mode_distinct", run)) > 0.5
    pd_ = np.nan_to_num(_trace(ds, "mode_positive_definite", run)) > 0.5
    out: dict[str, float] = {}

    def combine(values, mask):
        mask = mask & np.isfinite(values)
        # numpy's log-sum-exp: the figure commands do not import scipy.special
        return float(np.logaddexp.reduce(values[mask])) if mask.any() else float("nan")

    own = framework["hessian"]
    if f"mode_logdet_{own}" in ds:
        for kind in HESSIAN_KINDS:
            if kind != own:
                shift = -0.5 * (
                    _trace(ds, f"mode_logdet_{kind}", run) - _trace(ds, f"mode_logdet_{own}", run)
                )
                out[f"hessian={kind}"] = combine(ev + shift, counted)
    if framework["symmetry"] == "factor" and "diag_symmetry_log_factor" in ds:
        out["symmetry=none"] = combine(
            ev - float(ds["diag_symmetry_log_factor"].isel(run=run)), counted
        )
    if framework["modes"] == "distinct":
        out["modes=all"] = combine(ev, pd_)
    return out


def variant_frame(ds: xr.Dataset) -> pd.DataFrame:
    """One row per (laplace run, variant): label, split, seed, hidden, status, variant,
    log_evidence.
    ``variant`` is the label itself for the run as fitted, ``label | setting=value`` for a
    re-evaluation."""
    runs = usable(runs_frame(ds))
    if "method_name" in runs:
        runs = runs[runs["method_name"] == "laplace"]
    else:
        runs = runs[runs["method"].str.startswith("laplace")]
    rows = []
    for _, r in runs.iterrows():
        framework = framework_of(str(r.get("resolved_settings_json", "")))
        base = {"label": r["method"], **{k: r[k] for k in PAIR_KEYS}, "status": r["status"]}
        rows.append({**base, "variant": r["method"], "log_evidence": r["log_evidence"]})
        for variant, value in reevaluated(ds, int(r["run"]), framework).items():
            rows.append({**base, "variant": f"{r['method']} | {variant}", "log_evidence": value})
    columns = ["label", *PAIR_KEYS, "status", "variant", "log_evidence"]
    return pd.DataFrame(rows, columns=columns)


def element_effects(ds: xr.Dataset, reference: str = "laplace") -> pd.DataFrame:
    """Per variant and H: mean +- s.e. over seeds of ln p(D), and of its paired difference
    from the ``reference`` label's run of the same split, seed and hidden size (the pairing
    of the tables, ``_paired.paired_differences``)."""
    frame = variant_frame(ds)
    ref = frame[frame["variant"] == reference]
    rows = []
    for (variant, hidden), group in frame.groupby(["variant", "hidden"], sort=True):
        mean, se, n = mean_se(group["log_evidence"])
        paired = paired_differences(group, ref, ["log_evidence"])["log_evidence"]
        d_mean, d_se, d_n = mean_se(paired)
        rows.append(
            {
                "variant": variant,
                "hidden": int(hidden),
                "log_evidence": mean,
                "se": se,
                "n": n,
                f"minus_{reference}": d_mean,
                f"minus_{reference}_se": d_se,
                f"minus_{reference}_n": d_n,
            }
        )
    return pd.DataFrame(rows)


def _pm(mean: float, se: float) -> str:
    if not np.isfinite(mean):
        return "-"
    return f"{mean:.1f} ± {se:.1f}" if np.isfinite(se) else f"{mean:.1f}"


def markdown(effects: pd.DataFrame, column: str) -> str:
    """Variants as rows, H as columns, cells ``mean ± s.e.`` of ``column``."""
    hidden = sorted(effects["hidden"].unique())
    lines = ["| variant | " + " | ".join(f"H = {h}" for h in hidden) + " |"]
    lines.append("|---|" + "---|" * len(hidden))
    for variant, group in effects.groupby("variant", sort=False):
        by_h = group.set_index("hidden")
        cells = [
            _pm(by_h.loc[h, column], by_h.loc[h, f"{column}_se" if column != "log_evidence"
                                               else "se"]) if h in by_h.index else "-"
            for h in hidden
        ]  # fmt: skip
        lines.append(f"| {variant} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    ds = xr.open_dataset(argv[0])
    effects = element_effects(ds)
    order = sorted(effects["variant"].unique(), key=lambda v: (v != "laplace", "|" in v, v))
    effects = effects.set_index("variant").loc[order].reset_index()
    print("ln p(D), mean ± s.e. over seeds\n")
    print(markdown(effects, "log_evidence"))
    print("\nminus laplace (paired by seed), mean ± s.e.\n")
    print(markdown(effects, "minus_laplace"))


if __name__ == "__main__":
    main(sys.argv[1:])
