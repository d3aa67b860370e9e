"""Published test errors to set beside our own, keyed by (dataset, method label, metric).

Each key maps to a tuple of :class:`Reference` (one per source). ``short`` is the compact
citation shown in tables, ``source`` the full one. Values are in the units of the metric as
bnnsweep computes it (``test_nmse`` is unitless; ``test_rmse`` in original target units).
The published numbers were obtained with the papers' own architectures and protocols, so
they are a reference level, not a like-for-like comparison for every hidden size.
"""

from __future__ import annotations

from typing import NamedTuple


class Reference(NamedTuple):
    value: float
    source: str
    short: str


PUBLISHED: dict[tuple[str, str, str], tuple[Reference, ...]] = {
    ("sunspots", "laplace", "test_nmse"): (
        Reference(0.171, "thesis Table 5.1 (evidence)", "thesis T5.1"),
        Reference(0.18, "paper 000 Table 1 (evidence)", "paper 000 T1"),
    ),
    ("sunspots", "map", "test_nmse"): (
        Reference(0.262, "thesis Table 5.1 (early stopping)", "thesis T5.1"),
        Reference(0.22, "paper 000 Table 1 (early stopping)", "paper 000 T1"),
    ),
    ("sunspots", "hmc", "test_nmse"): (
        Reference(0.131, "thesis Table 5.1 (hybrid Monte Carlo)", "thesis T5.1"),
        Reference(0.09, "paper 000 Table 1 (hybrid Monte-Carlo)", "paper 000 T1"),
    ),
    ("sunspots", "vi_gauss", "test_nmse"): (
        Reference(0.178, "thesis Table 5.1 (variational, diagonal)", "thesis T5.1"),
        Reference(0.14, "paper 000 Table 1 (variational, diagonal)", "paper 000 T1"),
    ),
    ("sunspots", "vi_mixture", "test_nmse"): (
        Reference(0.172, "thesis Table 5.1 (variational mixture, 5 components)", "thesis T5.1"),
        Reference(0.11, "paper 000 Table 1 (variational committee, 3 components)", "paper 000 T1"),
    ),
    ("tecator", "laplace", "test_rmse"): (
        Reference(0.55, "thesis Table 5.2 (evidence, Thodberg)", "thesis T5.2"),
        Reference(0.60, "paper 000 Table 2 (evidence, 3 hidden units)", "paper 000 T2"),
    ),
    ("tecator", "map", "test_rmse"): (
        Reference(0.65, "thesis Table 5.2 (early stopping)", "thesis T5.2"),
        Reference(0.65, "paper 000 Table 2 (early stopping)", "paper 000 T2"),
    ),
    ("tecator", "vi_gauss", "test_rmse"): (
        Reference(0.526, "thesis Table 5.2 (variational, diagonal, 8 hidden units)", "thesis T5.2"),
        Reference(
            0.56, "paper 000 Table 2 (variational, diagonal, 3 hidden units)", "paper 000 T2"
        ),
    ),
    ("tecator", "vi_mixture", "test_rmse"): (
        Reference(0.519, "thesis Table 5.2 (variational mixture, 5 components)", "thesis T5.2"),
        Reference(0.54, "paper 000 Table 2 (variational committee, 3 components)", "paper 000 T2"),
    ),
    ("tecator", "hmc", "test_rmse"): (
        Reference(0.481, "thesis Table 5.2 (hybrid Monte Carlo)", "thesis T5.2"),
        Reference(0.59, "paper 000 Table 2 (hybrid Monte-Carlo)", "paper 000 T2"),
    ),
    ("sunspots", "vi_single", "test_nmse"): (
        Reference(0.19, "thesis Table 6.1 (variational, single prior)", "thesis T6.1"),
    ),
    ("sunspots", "vi_grouped", "test_nmse"): (
        Reference(0.194, "thesis Table 6.1 (variational, grouped prior)", "thesis T6.1"),
    ),
    ("sunspots", "vi_ard", "test_nmse"): (
        Reference(0.153, "thesis Table 6.1 (variational, ARD prior)", "thesis T6.1"),
    ),
    ("sunspots", "vi_nrd", "test_nmse"): (
        Reference(0.163, "thesis Table 6.1 (variational, NRD prior)", "thesis T6.1"),
    ),
    ("sunspots", "hmc_grouped", "test_nmse"): (
        Reference(0.131, "thesis Table 6.1 (hybrid Monte Carlo, grouped prior)", "thesis T6.1"),
    ),
    ("sunspots", "hmc_ard", "test_nmse"): (
        Reference(0.132, "thesis Table 6.1 (hybrid Monte Carlo, ARD prior)", "thesis T6.1"),
    ),
    ("tecator", "vi_single", "test_rmse"): (
        Reference(0.549, "thesis Table 6.2 (variational, single prior)", "thesis T6.2"),
    ),
    ("tecator", "vi_grouped", "test_rmse"): (
        Reference(0.54, "thesis Table 6.2 (variational, grouped prior)", "thesis T6.2"),
    ),
    ("tecator", "vi_ard", "test_rmse"): (
        Reference(0.539, "thesis Table 6.2 (variational, ARD prior)", "thesis T6.2"),
    ),
    ("tecator", "vi_nrd", "test_rmse"): (
        Reference(0.532, "thesis Table 6.2 (variational, NRD prior)", "thesis T6.2"),
    ),
    ("tecator", "hmc_grouped", "test_rmse"): (
        Reference(0.481, "thesis Table 6.2 (hybrid Monte Carlo, grouped prior)", "thesis T6.2"),
    ),
    ("tecator", "hmc_ard", "test_rmse"): (
        Reference(0.471, "thesis Table 6.2 (hybrid Monte Carlo, ARD prior)", "thesis T6.2"),
    ),
    ("boston_housing_128", "vi_fa", "test_nmse"): (
        Reference(
            0.22,
            "paper 002 Table 1 (ensemble learning, factor-analysis covariance s = 1; DELVE split, MSE on normalised targets)",
            "paper 002 T1",
        ),
    ),
    ("boston_housing_128", "vi_diag", "test_nmse"): (
        Reference(
            0.28,
            "paper 002 Table 1 (ensemble learning, diagonal covariance; DELVE split, MSE on normalised targets)",
            "paper 002 T1",
        ),
    ),
    ("boston_housing_128", "laplace", "test_nmse"): (
        Reference(
            0.33,
            "paper 002 Table 1 (Laplace / evidence procedure; DELVE split, MSE on normalised targets)",
            "paper 002 T1",
        ),
    ),
}


def references(dataset: str, method: str) -> dict[str, tuple[Reference, ...]]:
    """Every published metric known for ``(dataset, method)``: ``{metric: references}``."""
    return {
        metric: refs
        for (ds, m, metric), refs in sorted(PUBLISHED.items())
        if ds == dataset and m == method
    }


def format_references(dataset: str, method: str) -> str:
    """E.g. ``"test_nmse: 0.171 (thesis T5.1); 0.18 (paper 000 T1)"``; ``""`` if none known."""
    parts = []
    for metric, refs in references(dataset, method).items():
        values = "; ".join(f"{ref.value:g} ({ref.short})" for ref in refs)
        parts.append(f"{metric}: {values}")
    return " / ".join(parts)
