"""Paper 004 Fig. 2 bottom (b)-(c) as bars (``adf_error_bars``): each bar is the mean of its
runs' test error over the splits, its error bar their s.d.; stand-in data are named on the
figure; the paper's printed summary stands beside ours."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from bnnsweep.figures import FIGURES

ERRORS = {"pbp": (0.10, 0.20, 0.15), "ebp": (0.30, 0.40, 0.20)}
LOGLIK = {"pbp": (-0.3, -0.4, -0.2), "ebp": (-0.5, -0.7, -0.6)}


def merged(dataset: str) -> xr.Dataset:
    """Three splits of ``dataset`` per label with the test errors and log-likelihoods above."""
    labels = [m for m in ERRORS for _ in range(3)]
    return xr.Dataset(
        {
            "test_error_rate": ("run", [e for m in ERRORS for e in ERRORS[m]]),
            "test_loglik": ("run", [v for m in LOGLIK for v in LOGLIK[m]]),
        },
        coords={
            "dataset": ("run", [dataset] * 6),
            "method": ("run", labels),
            "split": ("run", ["0", "1", "2"] * 2),
            "seed": ("run", [0] * 6),
            "status": ("run", ["ok"] * 6),
        },
    )


@pytest.mark.parametrize("dataset", ["text_standin", "spam_d0"])
def test_bars_are_the_mean_and_sd_over_splits(dataset):
    fig = FIGURES["adf_error_bars"][0](merged(dataset))
    error_ax, loglik_ax = fig.axes[:2]
    for ax, values in ((error_ax, ERRORS), (loglik_ax, LOGLIK)):
        by_label = {c.get_label(): c for c in ax.containers}
        for label, x in values.items():
            bars = by_label[label]
            assert [p.get_height() for p in bars.patches] == pytest.approx([np.mean(x)])
            (segment,) = bars.errorbar.lines[2][0].get_segments()
            assert np.ptp(segment[:, 1]) / 2 == pytest.approx(np.std(x, ddof=1))
    texts = " ".join(" ".join(t.get_text().split()) for t in fig.texts)  # wrapped lines joined
    pbp = np.mean(ERRORS["pbp"])
    assert (
        f"pbp error_rate {pbp:.3g} ± {np.std(ERRORS['pbp'], ddof=1):.3g} (paper 004: 0.07 ± 0.06)"
        in texts
    )
    assert "(paper 004: 0.27 ± 0.12)" in texts and "(paper 004: -0.33 ± 0.45)" in texts
    stand_in = dataset == "text_standin"
    assert ("STAND-IN" in texts) == stand_in
    assert all(("STAND-IN" in t.get_text()) == stand_in for t in error_ax.get_xticklabels())


def test_mnist_has_no_printed_summary():
    fig = FIGURES["adf_error_bars"][0](merged("mnist_standin"))
    texts = " ".join(" ".join(t.get_text().split()) for t in fig.texts)  # wrapped lines joined
    assert "only as bars" in texts and "STAND-IN" in texts
