"""Thesis Table 3.1 claims: the average pools every network of the grid (all hidden sizes and
penalties, as the thesis's 'average of all the networks'), the best is the grid's minimum."""

import math

import pandas as pd

from bnnsweep.claims.declared.ltu_table import best_network
from bnnsweep.claims.registry import registered


def runs() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "dataset": ["pima_ripley"] * 6 + ["crabs_ripley"],
            "method": ["ltu"] * 4 + ["ltu_exact"] * 2 + ["ltu"],
            "hidden": [10, 10, 15, 20, 10, 15, 10],
            "status": ["ok", "ok", "ok", "diverged", "ok", "ok", "ok"],
            "diag_test_errors": [70.0, 74.0, 78.0, 1.0, 90.0, 80.0, 7.0],
        }
    )


def test_average_pools_the_grid_and_best_is_its_minimum():
    claims = {
        (c.where, c.label, c.dataset): c
        for c in registered()
        if c.where.startswith("thesis Table 3.1")
    }
    average = claims[("thesis Table 3.1 (average linear threshold unit)", "ltu", "pima_ripley")]
    (ours,) = average.measure(runs())
    assert ours.n == 3 and ours.mean == 74.0  # hidden 10 and 15 pooled, the diverged left out
    assert math.isclose(ours.se, 4.0 / math.sqrt(3))
    (best,) = best_network("pima_ripley", "ltu")(runs())
    assert best.mean == 70.0 and math.isnan(best.se)
    exact = claims[("thesis Table 3.1 (average linear threshold unit)", "ltu_exact", "pima_ripley")]
    assert exact.measure(runs())[0].mean == 85.0
