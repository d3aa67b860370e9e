"""``chapter_one_checks``: a table (Markdown and CSV, like ``error_table``) of the numbers of
thesis ch. 1 computed by method ``ch1_checks`` beside the values printed in the thesis
(§1.4 and Table 1.1, figs. 1.9, 1.12-1.13).

One row per computed quantity: the problem (split), the quantity, ours, ours rounded to the
printed number of digits, the printed value (as printed: the thesis rounds and sometimes
truncates), where it is printed, and ours minus the printed value; quantities the thesis
prints no number for (the variational Gaussians of fig. 1.13) have an empty published
column. ``ours`` is rounded to ``RESOLUTION``: the quartics' modes and the variational
Gaussians are found by numerical minimisation, so a mode at 0 comes out as -6e-9.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from ._common import runs_frame

RESOLUTION = 1e-7
"""Absolute resolution of the computed numbers: the minimisers of ``models.thesis_ch1`` stop
within about 1e-8 of the optimum, so digits below 1e-7 are the optimiser's, not the
problem's."""

COLUMNS = ["problem", "quantity", "ours", "ours_rounded", "published", "where", "difference"]

# (split, quantity) -> (printed value, as printed, where)
PUBLISHED = {
    ("burglary", "p_b_given_a_two_node"): (0.9980, "0.9980", "eq. 1.5"),
    ("burglary", "p_b_given_a_two_node_alt"): (0.9806, "0.9806", "sec. 1.4 (1e-3 %)"),
    ("burglary", "p_b_given_a"): (0.0692, "6.92 %", "eq. 1.7"),
    ("burglary", "p_c_given_a"): (0.933, "93.3 %", "sec. 1.4.1"),
    ("burglary", "p_b_given_a_c"): (0.00287, "0.287 %", "sec. 1.4.1"),
    ("kl_asymmetry", "s2_forward_kl"): (0.505, "0.505", "fig. 1.9 (a)"),
    ("kl_asymmetry", "s2_reverse_kl"): (0.0198, "0.0198", "fig. 1.9 (b)"),
    ("quartic_a", "laplace_mode"): (0.0, "0", "fig. 1.12 (a)"),
    ("quartic_a", "laplace_variance"): (5.0, "5", "fig. 1.12 (a)"),
    ("quartic_b", "laplace_mode"): (1.5614, "1.5614", "fig. 1.12 (b)"),
    ("quartic_b", "laplace_variance"): (0.1509, "0.1509", "fig. 1.12 (b)"),
}


def _printed_digits(text: str) -> int:
    number = text.split()[0]
    return len(number.split(".")[1]) if "." in number else 0


def thesis_ch1_frame(ds: xr.Dataset) -> pd.DataFrame:
    runs = runs_frame(ds)
    quantities = [c for c in runs.columns if c.startswith("diag_")]
    rows = []
    for _, run in runs.sort_values("split").iterrows():
        for column in quantities:
            value = resolved(float(run[column]))
            if not np.isfinite(value):
                continue
            name = column.removeprefix("diag_")
            printed, text, where = PUBLISHED.get((run["split"], name), (np.nan, "", ""))
            scale = 100.0 if text.endswith("%") else 1.0
            ours_as_printed = (
                f"{value * scale:.{_printed_digits(text)}f}{' %' if scale == 100 else ''}"
                if text
                else ""
            )
            if not where and name.startswith("vg_"):
                where = "fig. 1.13 (no number printed)"
            rows.append({
                "problem": run["split"],
                "quantity": name,
                "ours": value,
                "ours_rounded": ours_as_printed,
                "published": text,
                "where": where,
                "difference": resolved(value - printed),
            })  # fmt: skip
    return pd.DataFrame(rows, columns=COLUMNS)


def resolved(value: float) -> float:
    """``value`` rounded to ``RESOLUTION`` (and -0 as 0)."""
    return float(np.round(value / RESOLUTION) * RESOLUTION) + 0.0 if np.isfinite(value) else value


def _number(value: float) -> str:
    return "" if not np.isfinite(value) else f"{value:.6g}"


def to_markdown(frame: pd.DataFrame) -> str:
    """The table as Markdown: numbers to 6 significant digits, blank where none."""
    header = ["problem", "quantity", "ours", "ours, as printed", "thesis", "where", "ours − thesis"]
    lines = [
        "# Thesis ch. 1: exact examples beside the printed values",
        "",
        "Computed by method `ch1_checks` (bnnsweep.models.thesis_ch1); `ours` rounded to "
        "10^-7, the minimisers' resolution. 'ours, as printed': ours with the "
        "thesis's number of digits.",
        "",
        "| " + " | ".join(header) + " |",
        "|---|---|---:|---:|---:|---|---:|",
    ]
    for r in frame.itertuples():
        cells = [r.problem, r.quantity, _number(r.ours), r.ours_rounded, r.published, r.where]
        lines.append("| " + " | ".join([*cells, _number(r.difference)]) + " |")
    return "\n".join(lines) + "\n"


def chapter_one_checks(ds: xr.Dataset) -> pd.DataFrame:
    """The table (written as Markdown by ``to_markdown`` and as CSV); a ValueError when the
    merged file holds no ``ch1_checks`` numbers."""
    frame = thesis_ch1_frame(ds)
    if frame.empty:
        raise ValueError("no ch1_checks numbers (diag_*) in this merged file")
    return frame
