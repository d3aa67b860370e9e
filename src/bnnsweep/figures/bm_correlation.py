"""``bm_correlation_error``: accuracy of the mean-field and mixture joints of random
Boltzmann machines against enumeration (thesis §4.5.1, fig. 4.2).

From ``bm_vi`` cells of kind ``inference``: left, histograms of the pair errors 4.26,
sum_m Q(m) <s_i>_m <s_j>_m - <s_i s_j> (trace ``pair_error``, every pair of every machine)
for a few M; right, the mean over machines (and seeds) of the sum of squared pair errors
(``pair_sq_error``) against M, +- one standard error. Mean field is M = 1. The thesis
prints no values, only the statement set in the title.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr
from matplotlib.figure import Figure

from ._bm_runs import bm_runs
from ._common import mean_se, new_figure, note_figure, style, usable

PUBLISHED_STATEMENT = (
    "thesis fig. 4.2 (no printed values): 'a clear and systematic improvement ... as the "
    "number of components in the mixture is increased'"
)
HISTOGRAM_M = (1, 2, 5, 10)


def components_of(runs: pd.DataFrame) -> np.ndarray:
    """M of each run: ``components`` for a mixture, 1 for mean field."""
    mixture = runs["q_family"].astype(str) == "mixture"
    return np.where(mixture, runs["components"].astype(int), 1)


def correlation_error_frame(ds: xr.Dataset) -> pd.DataFrame:
    """Per M: mean, s.e. and count of the per-machine sum of squared pair errors, over
    every usable run and machine."""
    runs = usable(bm_runs(ds))
    runs = runs.assign(M=components_of(runs))
    rows = []
    for m, group in runs.groupby("M", sort=True):
        values = ds["pair_sq_error"].isel(run=group["run"].to_numpy()).values.ravel()
        mean, se, n = mean_se(values)
        rows.append({"M": int(m), "mean_pair_sq_error": mean, "se": se, "machines": n})
    return pd.DataFrame(rows)


def bm_correlation_error(ds: xr.Dataset) -> Figure:
    title = "Boltzmann machine joint: pairwise correlation error (thesis fig. 4.2)"
    if "pair_sq_error" not in ds or "q_family" not in ds.coords:
        return note_figure("no bm_vi inference runs (trace pair_sq_error)", title)
    frame = correlation_error_frame(ds)
    frame = frame[frame["machines"] > 0]
    if frame.empty:
        return note_figure("no finite pair errors", title)
    runs = usable(bm_runs(ds))
    runs = runs.assign(M=components_of(runs))
    with style():
        fig = new_figure(11.0, 4.2)
        left, right = fig.subplots(1, 2)
        shown = [m for m in HISTOGRAM_M if m in set(frame["M"])] or list(frame["M"][:4])
        errors = {
            m: ds["pair_error"].isel(run=runs.loc[runs["M"] == m, "run"].to_numpy()).values.ravel()
            for m in shown
        }
        errors = {m: e[np.isfinite(e)] for m, e in errors.items()}
        top = max((np.abs(e).max() for e in errors.values() if e.size), default=1.0)
        bins = np.linspace(-top, top, 61)
        for m, e in errors.items():
            left.hist(e, bins=bins, histtype="step", linewidth=1.2, label=f"M = {m}")
        left.set_yscale("log")
        left.set_xlabel(
            r"$\sum_m Q(m)\langle s_i\rangle_m\langle s_j\rangle_m - \langle s_i s_j\rangle$"
        )
        left.set_ylabel("pairs")
        left.set_title("pair errors (4.26), all machines")
        left.legend(fontsize="small")
        right.errorbar(
            frame["M"],
            frame["mean_pair_sq_error"],
            yerr=frame["se"].fillna(0.0),
            marker="o",
            capsize=3,
        )
        for m, v in zip(frame["M"], frame["mean_pair_sq_error"], strict=True):
            right.annotate(
                f"{v:.3g}", (m, v), textcoords="offset points", xytext=(4, 4), fontsize=7
            )
        right.set_yscale("log")
        right.set_xticks(sorted(int(m) for m in frame["M"]))  # whole M, not 1.2, 1.4, ...
        right.set_xlabel("components M (1 = mean field)")
        right.set_ylabel("mean sum of squared pair errors")
        right.set_title(f"mean over {int(frame['machines'].max())} machines (+- s.e.)")
        fig.suptitle(f"{title}\n{PUBLISHED_STATEMENT}", fontsize="small")
    return fig
