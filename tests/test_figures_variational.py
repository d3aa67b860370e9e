"""Figures of the variational experiments, drawn from synthetic merged files."""

import numpy as np
import xarray as xr

from bnnsweep.figures import FIGURES
from bnnsweep.figures.nrd_structure import nrd_hidden_units


def nrd_merged() -> xr.Dataset:
    n_train = np.repeat([5, 25, 100], 4)
    retained = np.array([1, 1, 2, 1, 2, 3, 2, 2, 3, 3, 4, 3], dtype=float)
    n = len(n_train)
    return xr.Dataset(
        {
            "diag_retained_hidden": (("run",), retained),
            "n_train": (("run",), n_train),
            "status": (("run",), np.array(["ok"] * n, dtype=object)),
        },
        coords={
            "dataset": ("run", np.array(["toy_sine_nrd"] * n, dtype=object)),
            "method": ("run", np.array(["vi_nrd"] * n, dtype=object)),
            "split": (
                "run",
                np.array(
                    [f"n{k}r{i}" for k, i in zip(n_train, range(n), strict=True)], dtype=object
                ),
            ),
            "seed": ("run", np.zeros(n, dtype=int)),
            "hidden": ("run", np.full(n, 5)),
        },
    )


def test_nrd_figure_plots_mean_and_sd_per_training_size():
    fig = nrd_hidden_units(nrd_merged())
    ax = fig.axes[0]
    line = ax.get_lines()[0]
    np.testing.assert_allclose(line.get_xdata(), [5, 25, 100])
    np.testing.assert_allclose(line.get_ydata(), [1.25, 2.25, 3.25])
    assert "start H = 5" in ax.get_title()


def test_nrd_figure_without_structure_runs_is_a_note():
    ds = nrd_merged().drop_vars("diag_retained_hidden")
    fig = nrd_hidden_units(ds)
    assert "no runs with diag_retained_hidden" in fig.axes[0].texts[0].get_text()
    assert "nrd_hidden_units" in FIGURES
