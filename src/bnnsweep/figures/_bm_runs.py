"""The run table of a merged file of ``bm_vi`` cells (thesis ch. 4).

Their cells have no test points (``likelihood: none``): ``x_test``/``y_test`` are empty, of
shape (run, 0, 0), which ``_common.runs_frame`` cannot take (its NMSE scale reshapes the
empty targets); they carry nothing for these figures, so they are dropped first.
"""

from __future__ import annotations

import pandas as pd
import xarray as xr

from ._common import runs_frame


def bm_runs(ds: xr.Dataset) -> pd.DataFrame:
    """``runs_frame`` of ``ds`` without its (empty) test data."""
    return runs_frame(ds.drop_vars(["x_test", "y_test"], errors="ignore"))
