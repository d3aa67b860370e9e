"""Effective sample size and potential scale reduction of MCMC traces, from arviz-stats.

Both are the rank-normalised split-chain versions of Vehtari, Gelman, Simpson, Carpenter &
Buerkner (2021), "Rank-normalization, folding, and localization: an improved R-hat":

- ``effective_sample_size``: bulk ESS (sec. 4.3: split chains, rank-normalised draws, the
  autocorrelation summed with Geyer's initial monotone sequence) or tail ESS (the minimum
  of the ESS of the 5% and 95% quantile indicators);
- ``split_rhat``: rank-normalised split R-hat, the larger of the bulk and the folded
  (tail) R-hat (sec. 4.2, eq. 4.9 onwards).

This module is a thin layer over ``arviz_stats.base.array_stats`` (the array-level
functions behind ``arviz_stats.ess`` and ``arviz_stats.rhat``): traces are numpy arrays of
shape (S,) for one chain or (C, S) for C chains, and every function returns a float.
"""

from __future__ import annotations

from functools import cache

import numpy as np

ESS_METHODS = ("bulk", "tail")
TAIL_PROB = 0.05


@cache
def _array_stats():
    """``arviz_stats.base.array_stats``, imported on first use: the import (scipy.signal and
    scipy.stats among it) takes about a second, which every process that merely registers
    the MCMC methods (the Snakefile, ``bnnsweep plan``) would otherwise pay."""
    from arviz_stats.base import array_stats

    return array_stats


def _chains(trace) -> np.ndarray:
    x = np.asarray(trace, dtype=float)
    if x.ndim not in (1, 2):
        raise ValueError(f"a trace has shape (S,) or (C, S), got {x.shape}")
    return np.atleast_2d(x)


def effective_sample_size(trace, method: str = "bulk") -> float:
    """Bulk (default) or tail ESS of a scalar trace (S,) or (C, S) (Vehtari et al. 2021).

    NaN with fewer than 4 draws per chain or non-finite draws; a constant trace counts as
    C * S independent draws (there is nothing left to estimate)."""
    if method not in ESS_METHODS:
        raise ValueError(f"unknown ESS method {method!r}; valid: {', '.join(ESS_METHODS)}")
    x = _chains(trace)
    C, S = x.shape
    if S < 4 or not np.all(np.isfinite(x)):
        return float("nan")
    if np.ptp(x) == 0.0:
        return float(C * S)
    if method == "tail":
        return float(_array_stats().ess(x, method="tail", prob=TAIL_PROB))
    return float(_array_stats().ess(x, method="bulk"))


def tail_effective_sample_size(trace) -> float:
    """Tail ESS: the smaller ESS of the 5% and 95% quantiles (Vehtari et al. 2021 sec. 4.3)."""
    return effective_sample_size(trace, method="tail")


def split_rhat(trace) -> float:
    """Rank-normalised split R-hat of a (C, S) trace (Vehtari et al. 2021 sec. 4.2): the
    maximum of the bulk and folded split R-hat. NaN with fewer than 4 draws per chain or
    non-finite draws; 1 for a constant trace."""
    x = _chains(trace)
    if x.shape[1] < 4 or not np.all(np.isfinite(x)):
        return float("nan")
    if np.ptp(x) == 0.0:
        return 1.0
    return float(_array_stats().rhat(x, method="rank"))
