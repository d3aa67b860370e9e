"""The problem specifications of thesis ch. 1's exact examples, as stated in the text, one
split per example, task ``analytic`` (nothing to fit: method ``ch1_checks`` computes each
example's quantities from the numbers in ``x_train``, a single row; ``y_train`` (1, 0) is
empty; ``x_test`` repeats the row and ``y_test`` (1, 0) is empty: a merged file whose test
sets all have zero points cannot be read by the figures today, as
``results.run_test_data`` fails on them).

Splits and the columns of their one row:

- ``burglary`` (§1.4, Table 1.1): P(B = yes), P(C = yes), P(A = yes | B, C) for (B, C) =
  (no, no), (yes, no), (no, yes), (yes, yes), and the alternative P(A = yes | B = no) of
  the two-node net (1e-3 % = 1e-5); the two-node net uses the (., C = no) entries;
- ``kl_asymmetry`` (fig. 1.9): the eigenvalues 1 and 0.01 of N1's covariance and the angle
  of its first eigenvector, 45 degrees;
- ``quartic_a``, ``quartic_b`` (figs. 1.12-1.13): (c4, c3, c2) of
  p(x) ∝ exp(c4 x^4 + c3 x^3 + c2 x^2): (-1, 0, -0.1) and (-0.7, 1.5, -0.1).
"""

from __future__ import annotations

import numpy as np

from .base import Split
from .generated import unstandardised_split
from .registry import register

PROBLEMS = {
    "burglary": [0.01, 0.01, 1e-6, 0.05, 0.7, 0.2, 1e-5],
    "kl_asymmetry": [1.0, 0.01, 45.0],
    "quartic_a": [-1.0, 0.0, -0.1],
    "quartic_b": [-0.7, 1.5, -0.1],
}


@register(
    "thesis_ch1",
    metadata={
        "source": "the numbers stated in thesis ch. 1 (sec. 1.4 and Table 1.1, figs. 1.9, 1.12-1.13)",
        "licence": "none needed: numbers from the text",
        "preprocessing": "none; one row of problem parameters per split (see datasets/thesis_ch1.py)",
        "task": "analytic",
        "error_measure": "none",
        "paper": "Lawrence, PhD thesis, ch. 1 (paper 003)",
    },
    split_names=list(PROBLEMS),
)
def thesis_ch1() -> dict[str, Split]:
    return {
        name: unstandardised_split(
            name, np.array([row]), np.zeros((1, 0)), np.array([row]), np.zeros((1, 0))
        )
        for name, row in PROBLEMS.items()
    }
