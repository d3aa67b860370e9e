"""Thesis sec. 2.6's drop of the mean relative error from mean field to M = 5 (claims row
``thesis sec. 2.6``): the paired drop and its delta-method standard error, and the rows a
merged file of ``sbn_vi`` runs gives, one per sweep cap."""

from __future__ import annotations

import numpy as np
import pytest
from merged_fixtures import sbn_cell, sbn_fit, sbn_small_ensemble, sbn_write

from bnnsweep.claims.declared.sbn_drop import drop_measure, drop_summary, paired_errors


def test_a_drop_by_a_constant_factor_is_that_factor_with_no_spread():
    e_mf = np.linspace(0.01, 0.05, 40)
    drop, se = drop_summary(e_mf, 0.73 * e_mf)
    assert drop == pytest.approx(27.0) and se == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_standard_error_covers_the_spread_over_draws_of_the_nets(seed):
    """Over 400 draws of 200 nets whose mixture errors are noisy fractions of mean field's,
    the s.d. of the drop matches the mean delta-method s.e. within 15 %."""
    rng = np.random.default_rng(seed)
    drops, ses = [], []
    for _ in range(400):
        e_mf = rng.gamma(2.0, 0.02, 200)
        e_mix = e_mf * rng.uniform(0.2, 1.0, 200)
        drop, se = drop_summary(e_mf, e_mix)
        drops.append(drop)
        ses.append(se)
    assert np.std(drops, ddof=1) == pytest.approx(np.mean(ses), rel=0.15)


def test_rows_per_sweep_cap_match_the_figure_s_mean_errors(tmp_path):
    """Mean field and two M = 5 mixtures (2 and 30 sweeps) on 15 nets: one row each, the
    drop being 1 - mean e_mix / mean e_mf over the same nets."""
    from bnnsweep.figures import load_merged
    from bnnsweep.results import merge_cells, write_netcdf_atomic

    split = sbn_small_ensemble("span_1p0", 15)
    paths = []
    for label, q, settings in (
        ("mean_field", "mean_field", {}),
        ("mixture_sweeps_2", "mixture", {"components": 5, "max_sweeps": 2}),
        ("mixture_sweeps_30", "mixture", {"components": 5, "max_sweeps": 30}),
    ):
        axes = (("q_family", q),) + ((("components", 5),) if settings else ())
        cell = sbn_cell("b", "sbn_random_246", "span_1p0", label, axes,
                        {"q_family": q, **settings})  # fmt: skip
        result = sbn_fit(split, q_family=q, **settings)
        paths.append(sbn_write(tmp_path, cell, split, result))
    write_netcdf_atomic(merge_cells(paths), tmp_path / "merged.nc")
    ds = load_merged(tmp_path / "merged.nc")
    runs = paired_errors(ds)
    rows = {o.setting: o for o in drop_measure(runs)}
    assert set(rows) == {"mixture_sweeps_2, max_sweeps=2", "mixture_sweeps_30, max_sweeps=30"}
    errors = {str(m): ds["rel_error"].values[i] for i, m in enumerate(ds["method"].values)}
    for label in ("mixture_sweeps_2", "mixture_sweeps_30"):
        expected = 100 * (1 - np.nanmean(errors[label]) / np.nanmean(errors["mean_field"]))
        row = rows[f"{label}, max_sweeps={label.rsplit('_', 1)[1]}"]
        assert row.mean == pytest.approx(expected) and row.n == 15
