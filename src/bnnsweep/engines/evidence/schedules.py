"""Chaining schedules 0 = lambda_0 < lambda_1 < ... < lambda_K = 1, named by strings so that
they can be a sweep axis:

- ``paper``: 18 links dense near 0, reconstructed from paper 001 sec. 5 and fig. 1b (the
  values are not printed; the figure shows the largest ratios at the start of the chain):
  1e-4, 3e-4, 1e-3, 2e-3, 5e-3, 0.01, 0.02, 0.035, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4,
  0.6, 0.8, 1;
- ``geometricK``: K links with lambda_i = 10^(-4 (K - i) / (K - 1)), i = 1..K;
- ``powerP_K``: lambda_i = (i / K)^P (e.g. ``power4_20``);
- ``linearK``: lambda_i = i / K.
"""

from __future__ import annotations

import re

import numpy as np

PAPER = (1e-4, 3e-4, 1e-3, 2e-3, 5e-3, 0.01, 0.02, 0.035, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3,
         0.4, 0.6, 0.8, 1.0)  # fmt: skip

_PATTERNS = {
    "geometric": re.compile(r"^geometric(\d+)$"),
    "power": re.compile(r"^power(\d+(?:p\d+)?)_(\d+)$"),
    "linear": re.compile(r"^linear(\d+)$"),
}


def schedule(name: str) -> np.ndarray:
    """The lambdas of a named schedule, starting with lambda_0 = 0, shape (K + 1,)."""
    if name == "paper":
        return np.concatenate([[0.0], PAPER])
    match = _PATTERNS["geometric"].match(name)
    if match:
        k = int(match.group(1))
        _check(name, k, 2)
        return np.concatenate([[0.0], 10.0 ** (-4.0 * (k - np.arange(1, k + 1)) / (k - 1))])
    match = _PATTERNS["power"].match(name)
    if match:
        power, k = float(match.group(1).replace("p", ".")), int(match.group(2))
        _check(name, k, 1)
        return (np.arange(k + 1) / k) ** power
    match = _PATTERNS["linear"].match(name)
    if match:
        k = int(match.group(1))
        _check(name, k, 1)
        return np.arange(k + 1) / k
    raise ValueError(
        f"unknown schedule {name!r}; valid: 'paper', 'geometricK', 'powerP_K' (P may be "
        "written 2p5 for 2.5), 'linearK', with K the number of links"
    )


def _check(name: str, k: int, minimum: int) -> None:
    if k < minimum:
        raise ValueError(f"schedule {name!r} needs at least {minimum} links")
