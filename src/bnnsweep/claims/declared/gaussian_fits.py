"""Paper 002 fig. 1: the KL divergence from the posterior of a two-parameter regression
problem of the Laplace Gaussian (41), the minimum-KL Gaussian with a diagonal covariance (4.6)
and with a full one (3.9), from the ``gaussian_fits`` runs (config/paper002_fig1.yaml; figure
``gaussian_fits``). The paper prints neither its data nor its model, so ours run on a stand-in
(dataset ``two_weight_toy``): no verdict, the ordering and the ratios are what compare."""

from ...figures.gaussian_fits import FIT_LABELS, PUBLISHED_KL
from ..registry import Claim, declare, metric

for _fit, _label in FIT_LABELS.items():
    declare(
        Claim(
            paper="paper 002",
            where="paper 002 fig. 1",
            quantity=f"KL from the posterior of the {_label} Gaussian, gaussian_fits on a "
            "two-weight network",
            published=PUBLISHED_KL[_fit],
            published_note="(one problem)",
            dataset="two_weight_toy",
            label="gaussian_fits",
            measure=metric(
                f"diag_kl_{_fit}", datasets=["two_weight_toy"], labels=["gaussian_fits"]
            ),  # fmt: skip
            finding="the paper's problem is not printed ('a two-parameter regression "
            "problem'): ours is y = v erf(u x / sqrt 2) on 12 points, and a KL depends on the "
            "data and the prior. What compares is the order (Laplace far above the diagonal, "
            "the full covariance lowest) and each KL includes ln 2 for the posterior's second "
            "image (-u, -v); the grid KL checks the closed form (bnnsweep figure "
            "gaussian_fits --merged results/paper002_fig1/merged.nc)",
        )
    )
