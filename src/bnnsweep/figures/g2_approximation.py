"""``g2_approximation``: thesis fig. C.1 from method ``g2_approximation``: g(x)^2 (solid), its
approximation f(x) = 1 - exp(-c x^2 / 2) at the printed c = 1.24 (dashed) and their error
magnified a hundredfold (dotted); the title gives the largest error and the c that minimises
it."""

from __future__ import annotations

import xarray as xr
from matplotlib.figure import Figure

from ._common import new_figure, note_figure, style
from .gaussian_fits import first_run

TITLE = "Thesis fig. C.1: the approximation to g(x)^2"
MAGNIFY = 100.0


def g2_approximation(ds: xr.Dataset) -> Figure:
    found = first_run(ds, "g2_approximation", "g2_exact")
    if found is None:
        return note_figure("no g2_approximation runs in this merged file", TITLE)
    runs, one = found
    x, exact, approx = (one[name].values for name in ("g2_x", "g2_exact", "g2_approximation"))
    row = runs.iloc[0]
    with style():
        fig = new_figure(6.4, 4.4)
        ax = fig.subplots()
        ax.plot(x, exact, "k-", label="g(x)^2")
        ax.plot(x, approx, "C0--", label=f"f(x), c = {row['diag_printed_c']:g}")
        ax.plot(x, MAGNIFY * (approx - exact), "C3:", label=f"error x {MAGNIFY:g}")
        ax.set_xlabel("x")
        ax.legend(loc="center right", fontsize=8)
        ax.set_title(
            f"largest error {row['diag_max_error_printed_c']:.4f}; c minimising it "
            f"{row['diag_c_minimax']:.4f}, the squared error {row['diag_c_least_squares']:.4f}",
            fontsize=8,
        )
        fig.suptitle(TITLE, fontsize=10)
    return fig
