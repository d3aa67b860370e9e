"""``chapter_one_checks``: a table drawn as a figure (the workflow draws every kind but
``error_table`` as PNG) of the numbers of thesis ch. 1 computed by method ``ch1_checks``
beside the values printed in the thesis (§1.4 and Table 1.1, figs. 1.9, 1.12-1.13).

One row per computed quantity: the problem (split), the quantity, ours, the printed value
(as printed: the thesis rounds and sometimes truncates) and ours rounded to the printed
number of digits; quantities the thesis prints no number for (the variational Gaussians
of fig. 1.13) have an empty published column.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr
from matplotlib.figure import Figure

from ._common import new_figure, note_figure, runs_frame

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
            value = float(run[column])
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
                "difference": value - printed,
            })  # fmt: skip
    return pd.DataFrame(
        rows,
        columns=["problem", "quantity", "ours", "ours_rounded", "published", "where", "difference"],
    )


def chapter_one_checks(ds: xr.Dataset) -> Figure:
    frame = thesis_ch1_frame(ds)
    if frame.empty:
        return note_figure("no ch1_checks runs in this merged file", "thesis ch. 1 checks")
    cells = [
        [r.problem, r.quantity, f"{r.ours:.6g}", r.ours_rounded, r.published, r.where]
        for r in frame.itertuples()
    ]
    fig = new_figure(11.0, 0.32 * (len(cells) + 3))
    ax = fig.add_subplot()
    ax.set_axis_off()
    table = ax.table(
        cellText=cells,
        colLabels=["problem", "quantity", "ours", "ours, as printed", "thesis", "where"],
        loc="center",
        cellLoc="left",
    )
    table.auto_set_font_size(False)
    table.set_fontsize(8)
    table.auto_set_column_width(list(range(6)))
    ax.set_title(
        "Thesis ch. 1: exact examples computed by bnnsweep beside the printed values", fontsize=9
    )
    return fig
