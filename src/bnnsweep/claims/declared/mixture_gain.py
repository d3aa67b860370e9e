"""Thesis Tables 5.1-5.2, paper 000 Tables 1-2: the variational mixture's gain over the
diagonal Gaussian it starts from (issue 34: "mixtures that beat the diagonal").

The papers print one run of each, so their gain is the difference of two printed numbers
(:data:`bnnsweep.figures.published.PUBLISHED`: ``vi_mixture`` minus ``vi_gauss``). Ours is the
paired difference (:mod:`bnnsweep.figures._paired`): per split, seed and hidden size the
``vi_mixture`` run's test error minus the ``vi_gauss`` run's, mean +- s.e. over the pairs, at
the paper's hidden size and number of components. A mixture that improves on its start shows
a negative mean more than 2 s.e. below zero; the verdict compares it with the papers' gain.
"""

import numpy as np
import pandas as pd

from ...figures._common import runs_frame
from ...figures._paired import PAIR_KEYS, paired_differences
from ...figures.published import PUBLISHED
from ..registry import Claim, declare, metric

MIXTURE, DIAGONAL = "vi_mixture", "vi_gauss"

SETTINGS = {  # (dataset, metric, source prefix): (hidden units, components) the paper used
    ("sunspots", "test_nmse", "thesis"): (8, 5),
    ("sunspots", "test_nmse", "paper 000"): (8, 3),
    ("tecator", "test_rmse", "thesis"): (8, 5),
    ("tecator", "test_rmse", "paper 000"): (3, 3),
}

FINDING = (
    "on these data the components separate in weight space along directions the posterior is "
    "long in and change the network function little, as on the thesis's fig. 5.6 toy "
    "(mixture_target, config/variational.yaml) and as thesis sec. 5.5.1 says of fig. 5.5; "
    "the gain in bound is at most ln M. The table mixture_components of the same experiment "
    "gives, from these runs, the bound's gain over the start, I*/ln M, each component's own "
    "bound against the start and the spread of the components' predictions over the "
    "predictive s.d. (bnnsweep figure mixture_components --merged "
    "results/<experiment>/merged.nc --output mixture_components.md)"
)


def pair_keys(runs: pd.DataFrame) -> np.ndarray:
    """Each run's pair key (``PAIR_KEYS`` joined as strings), as an array of str."""
    rows = runs[list(PAIR_KEYS)].astype(str).itertuples(index=False)
    return np.array(["|".join(row) for row in rows], dtype=object)


def mixture_minus_diagonal(dataset: str, metric_name: str, hidden: int, components: int):
    """``runs_from``: one row per pair of a ``vi_mixture`` run (``hidden`` units,
    ``components``) and the ``vi_gauss`` run of the same split, seed and hidden size on
    ``dataset``, with ``metric_name`` holding mixture minus diagonal and ``status`` the worse
    of the two (``diverged`` runs make no pair). With no pair, one ``diverged`` row per
    mixture run at the setting that has a ``vi_gauss`` run beside it: none when the
    experiment never ran the pair (the claims table tells "not swept" from "no usable
    runs" by them)."""

    def runs_from(merged) -> pd.DataFrame:
        runs = runs_frame(merged)
        runs = runs[(runs["dataset"] == dataset) & (runs["hidden"] == hidden)]
        mixture = runs[(runs["method"] == MIXTURE) & (runs["components"] == components)]
        diagonal = runs[runs["method"] == DIAGONAL]
        key, ref = pair_keys(mixture), pair_keys(diagonal)
        diffs = paired_differences(mixture, diagonal, [metric_name]).reset_index()
        if diffs.empty:  # no pair: none run (no rows), or every pair lost to divergence
            return pd.DataFrame(
                {"dataset": dataset, "method": MIXTURE, "status": "diverged",
                 metric_name: np.nan, "hidden": hidden, "components": components},
                index=range(len(set(key) & set(ref))),
            )  # fmt: skip
        ok = set(key[mixture["status"].to_numpy() == "ok"])
        ok &= set(ref[diagonal["status"].to_numpy() == "ok"])
        pairs = pair_keys(diffs)
        return diffs.assign(
            dataset=dataset,
            method=MIXTURE,
            status=["ok" if p in ok else "not_converged" for p in pairs],
            hidden=hidden,
            components=components,
        )

    return runs_from


for (_dataset, _metric, _source), (_hidden, _components) in SETTINGS.items():
    _mix = next(r for r in PUBLISHED[_dataset, MIXTURE, _metric] if r.short.startswith(_source))
    _diag = next(r for r in PUBLISHED[_dataset, DIAGONAL, _metric] if r.short.startswith(_source))
    _table = _mix.source.split(" (")[0]
    declare(
        Claim(
            paper=_source,
            where=f"{_table} (variational mixture minus diagonal, one run each)",
            quantity=f"{_metric}, {MIXTURE} ({_components} components) minus {DIAGONAL}, "
            f"paired, on {_dataset}",
            published=round(_mix.value - _diag.value, 6),
            published_note=f"({_mix.value:g} - {_diag.value:g})",
            dataset=_dataset,
            label=MIXTURE,
            runs_from=mixture_minus_diagonal(_dataset, _metric, _hidden, _components),
            measure=metric(_metric, datasets=[_dataset], labels=[MIXTURE]),
            finding=FINDING,
        )
    )
