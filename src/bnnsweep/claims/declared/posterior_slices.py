"""Thesis sec. 5.5.1 (fig. 5.5): the mutual information of the five-component mixture on the
toy with a gap, "the lower bound on the mutual information was calculated as 1.5229 this
compares with an upper bound, calculated using the minimum overlap assumption of 1.5614",
from the ``posterior_slices`` runs (config/thesis_slices.yaml; figure ``mixture_slices``)."""

from ...figures.mixture_slices import PUBLISHED_MI
from ..registry import Claim, declare, metric

QUANTITIES = {
    "bound": ("diag_mutual_information_bound", "mutual-information lower bound I* at the end"),
    "limit": ("diag_mutual_information_limit", "minimum-overlap upper bound -sum Q ln Q"),
}

for _key, (_column, _what) in QUANTITIES.items():
    declare(
        Claim(
            paper="thesis",
            where="thesis sec. 5.5.1 (fig. 5.5)",
            quantity=f"{_what}, posterior_slices (5 components) on toy_sine_gap",
            published=PUBLISHED_MI[_key],
            published_note="(one run)",
            dataset="toy_sine_gap",
            label="posterior_slices",
            measure=metric(_column, datasets=["toy_sine_gap"], labels=["posterior_slices"]),
            finding="the thesis's 30 points are a draw it does not print: ours are another "
            "draw of the same generator (eq. 5.48), and the mixture's Q(m) and overlap "
            "depend on the run; I(m; w) itself, by Monte Carlo, is in the figure",
        )
    )
