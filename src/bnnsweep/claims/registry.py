"""The claims registry: every published number the project reproduces, declared once, with
the function that computes our value of it from merged results.

A :class:`Claim` names the paper and the table or figure, the quantity, the published number
(and its printed spread), the experiments whose ``results/<experiment>/merged.nc`` hold our
runs of it, and a ``measure``: a function from one experiment's runs (a pandas frame, one row
per run, as :func:`bnnsweep.figures._common.runs_frame` gives it) to our values
(:class:`Ours`: mean, standard error over runs, how many runs, which datasets). Declarations
live in the modules of :mod:`bnnsweep.claims.declared`, one per topic; adding a module there
adds its rows to ``bnnsweep claims``.

This module holds no numbers and imports nothing of bnnsweep: declaring a claim costs nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

AXIS_COLUMNS = ("hidden", "components", "schedule", "links", "q_family")
"""Run columns that tell one configuration of a label from another (sweep axes); a measure
gives one value per combination present, so that runs of different sizes are never pooled."""


@dataclass(frozen=True)
class Ours:
    """Our value of a claim over a group of runs: mean, standard error over the runs (sample
    s.d. / sqrt(n), NaN for one run), ``n`` runs, the ``datasets`` they used and ``setting``,
    the group's axis values (e.g. ``hidden=8``; empty when there is one group); ``not_ok``
    how many of the runs are ``not_converged`` (they count, as in the figures; diverged runs
    do not)."""

    mean: float
    se: float
    n: int
    datasets: tuple[str, ...]
    setting: str = ""
    sd: float = float("nan")
    not_ok: int = 0


@dataclass(frozen=True)
class Claim:
    """One published number and how we reproduce it.

    ``published_note`` says what the paper prints beside the number (e.g. ``± 0.06, s.d.
    over datasets and splits``); ``published_se`` is the paper's standard error when it
    gives one (it enters the verdict), else NaN. ``experiments`` are the experiments whose
    merged results hold our runs (found in the shipped configs when empty: every experiment
    whose datasets and method labels contain ``dataset`` and ``label``). The verdict is
    *within* when |ours - published| <= ``within_se`` combined standard errors, or, for a
    single run (no s.e.) or runs that all give the same number (a deterministic method), when
    it is within ``tolerance`` (absolute; NaN: no verdict). ``decimals``: how many decimals
    the paper prints (None: as many as ``f"{published:g}"`` shows, which drops a printed
    trailing zero, so 0.60 needs ``decimals=2``); the printed number stands for an interval
    of half a unit of its last digit either side, so ours inside that interval is within,
    and the rounding's s.d. (half unit / sqrt 3) enters the combined s.e.
    ``pool_experiments``: the runs of all ``experiments`` make one row (a paper's average
    over datasets that our configs split into experiments), else each experiment its own.
    ``show_sd``: our s.d. over runs is shown too (the paper prints an s.d., not an s.e.).
    ``runs_from``: the runs the measure sees are this function of the merged Dataset (e.g.
    one row per run with a committee's test error, from the run's per-mode predictions)
    rather than the merged file's own run columns. ``finding``: what was found about the
    difference (its cause, the command that measures it), shown beside the verdict; it names
    no number of ours (those come from the results).
    """

    paper: str
    where: str
    quantity: str
    published: float
    measure: Callable[[pd.DataFrame], list[Ours]]
    experiments: tuple[str, ...] = ()
    dataset: str = ""
    label: str = ""
    published_note: str = ""
    published_se: float = float("nan")
    within_se: float = 3.0
    tolerance: float = float("nan")
    decimals: int | None = None
    pool_experiments: bool = False
    show_sd: bool = False
    runs_from: Callable[[object], pd.DataFrame] | None = None
    finding: str = ""

    def __post_init__(self) -> None:
        if not self.experiments and not (self.dataset and self.label):
            raise ValueError(
                f"claim {self.paper} {self.where} {self.quantity!r}: give its experiments, or "
                "the dataset and method label to find them by"
            )
        if not math.isfinite(self.published):
            raise ValueError(f"claim {self.paper} {self.where}: published value must be finite")


_REGISTRY: list[Claim] = []


def declare(claim: Claim) -> Claim:
    """Add ``claim`` to the registry (a claim with the same paper, place and quantity twice is
    an error: each published number is declared once)."""
    ident = (claim.paper, claim.where, claim.quantity, claim.dataset, claim.label)
    if any((c.paper, c.where, c.quantity, c.dataset, c.label) == ident for c in _REGISTRY):
        raise ValueError(f"claim declared twice: {' / '.join(filter(None, ident))}")
    _REGISTRY.append(claim)
    return claim


def registered() -> list[Claim]:
    """Every declared claim, in declaration order (declaring modules imported first)."""
    from . import declared  # noqa: F401  (imports every declaring module)

    return list(_REGISTRY)


# ---- measures: from an experiment's runs to our values ------------------------------------


def usable_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """Runs whose numbers mean something: every status except ``diverged`` (as the figures)."""
    return runs[runs["status"] != "diverged"] if "status" in runs else runs


def summary(values: Sequence[float], datasets, setting: str = "", not_ok: int = 0) -> Ours:
    """Mean, s.e. and s.d. of the finite ``values`` (NaN when there are none)."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    n = int(x.size)
    mean = float(np.mean(x)) if n else float("nan")
    sd = float(np.std(x, ddof=1)) if n > 1 else float("nan")
    se = sd / math.sqrt(n) if n > 1 else float("nan")
    return Ours(mean, se, n, tuple(sorted({str(d) for d in datasets})), setting, sd, not_ok)


def _groups(runs: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """Runs split by the axis columns that vary or are set (``hidden=8, components=5``)."""
    axes = [c for c in AXIS_COLUMNS if c in runs and runs[c].notna().any()]
    if not axes:
        return [("", runs)]
    out = []
    for values, group in runs.groupby(axes, sort=True, dropna=False):
        values = values if isinstance(values, tuple) else (values,)
        setting = ", ".join(f"{a}={v}" for a, v in zip(axes, values, strict=True) if pd.notna(v))
        out.append((setting, group))
    return out


def metric(
    name: str,
    *,
    datasets: Sequence[str] | None = None,
    labels: Sequence[str] | None = None,
    pooled: bool = False,
    axes: dict | None = None,
) -> Callable[[pd.DataFrame], list[Ours]]:
    """A measure: mean +- s.e. over runs of column ``name``, restricted to ``datasets`` and
    method ``labels`` (all when None) and to the runs whose axis columns hold ``axes`` (e.g.
    ``{"components": 3}``: the configuration the paper ran; runs without that column do not
    count), one value per configuration of the axes (``_groups``); ``pooled`` pools every
    selected run into one value (a paper's average over datasets and splits)."""

    def measure(runs: pd.DataFrame) -> list[Ours]:
        chosen = usable_runs(runs)
        if datasets is not None:
            chosen = chosen[chosen["dataset"].isin(list(datasets))]
        if labels is not None:
            chosen = chosen[chosen["method"].isin(list(labels))]
        for axis, value in (axes or {}).items():
            chosen = chosen[chosen[axis] == value] if axis in chosen else chosen.iloc[:0]
        if chosen.empty or name not in chosen:
            return []
        groups = [("", chosen)] if pooled else _groups(chosen)
        return [
            summary(g[name], g["dataset"], setting, int((g.get("status", "ok") != "ok").sum()))
            for setting, g in groups
        ]

    return measure


# ---- verdicts ---------------------------------------------------------------------------

OUTCOMES = {
    "within": "reproduced",
    "off": "not reproduced",
    "outside": "not reproduced",
    "stand-in": "stand-in",
    "not run": "not run",
    "not configured": "not configured",
    "no usable": "no usable runs",
    "not swept": "not swept",
    "1 run": "undecided",
}


def outcome(verdict_text: str) -> str:
    """The verdict's kind (``reproduced``, ``not reproduced``, ``stand-in``, ``not run``,
    ``not configured``, ``no usable runs``, ``not swept``, ``undecided``), for counting."""
    return next((kind for start, kind in OUTCOMES.items() if verdict_text.startswith(start)),
                "undecided")  # fmt: skip


def printed_half_unit(value: float, decimals: int | None = None) -> float:
    """Half a unit of the last printed digit of ``value`` (printed with ``decimals``
    decimals, or as ``f"{value:g}"`` shows it): 0.54 -> 0.005, 27 -> 0.5."""
    if decimals is None:
        text = f"{value:g}"
        if "e" in text:
            return 0.0
        decimals = len(text.partition(".")[2])
    return 0.5 * 10.0 ** (-decimals)


SAME_RUNS_RTOL = 1e-6
"""Runs whose s.e. is below this share of max(1, |mean|) count as every run the same: seeds
that end in one optimum differ by the optimiser's tolerance (an s.e. of 1e-7), which would
otherwise turn any difference into thousands of s.e."""


def verdict(claim: Claim, ours: Ours, stand_in: bool) -> str:
    """Whether ``ours`` reproduces the claim: ``within the printed precision`` (ours inside
    the interval the printed number stands for), ``within k s.e.`` / ``off by z s.e.`` (the
    s.e. of our mean, the paper's own and its rounding's, combined), ``within tolerance``
    for a single run, and no verdict for stand-in data (a stand-in's number says nothing
    about the paper's)."""
    if stand_in:
        return "stand-in data: no verdict"
    if ours.n == 0 or not math.isfinite(ours.mean):
        return "no usable runs"
    diff = ours.mean - claim.published
    half = printed_half_unit(claim.published, claim.decimals)
    if abs(diff) <= half:
        return f"within the printed precision (± {half:g})"
    pub_se = claim.published_se if math.isfinite(claim.published_se) else 0.0
    if pub_se == 0 and ours.se <= SAME_RUNS_RTOL * max(1.0, abs(ours.mean)):
        # every run the same number to the optimiser's precision (a deterministic method, or
        # every seed in one mode): their spread is no error bar; judged as one run
        if math.isfinite(claim.tolerance):
            word = "within" if abs(diff) <= claim.tolerance else "outside"
            return f"{word} tolerance {claim.tolerance:g} (every run the same)"
        return f"every run the same: no s.e. (difference {diff:+.3g})"
    if math.isfinite(ours.se):
        se = math.hypot(ours.se, pub_se, half / math.sqrt(3.0))
        if se == 0:
            return "within 0 s.e." if diff == 0 else "off (s.e. 0)"
        z = abs(diff) / se
        if z <= claim.within_se:
            return f"within {claim.within_se:g} s.e. ({z:.1f})"
        return f"off by {z:.1f} s.e."
    if math.isfinite(claim.tolerance):
        word = "within" if abs(diff) <= claim.tolerance else "outside"
        return f"{word} tolerance {claim.tolerance:g} (1 run)"
    return f"1 run: no s.e. (difference {diff:+.3g})"
