"""Paper 004 (Ghosh, Delle Fave & Yedidia) sec. 6: its own summaries over datasets and
splits (:data:`bnnsweep.figures.published.PAPER004_SUMMARY`), each the mean of the metric over
every run of the label in the experiments that reproduce it (the paper's average over
datasets and splits): the UCI regression sets (config/uci_adf_paper004.yaml, 100 epochs), the
binary text sets and bike sharing (config/adf_paper004.yaml), and the same experiments on
stand-in data (config/adf_paper004_standin.yaml; rows marked, no verdict)."""

from ...figures.published import PAPER004_SUMMARY
from ..registry import Claim, declare, metric

WHERE = {
    "uci": ("sec. 6, Fig. 2 bottom (a)", "over the UCI regression sets and their splits"),
    "text": ("sec. 6, Fig. 2 bottom (b)", "over the six binary text sets and their splits"),
    "bike": ("sec. 6, Fig. 2 bottom (d)", "bike sharing, over ten splits"),
}
EXPERIMENTS = {
    "uci": (("uci_adf004", "uci_adf004_protein"), True),
    "text": (("adf004_text", "adf004_text_standin"), False),
    "bike": (("adf004_bike", "adf004_bike_standin"), False),
}

for (_group, _label, _metric), (_value, _spread) in PAPER004_SUMMARY.items():
    _where, _over = WHERE[_group]
    _experiments, _pool = EXPERIMENTS[_group]
    declare(
        Claim(
            paper="paper 004",
            where=_where,
            quantity=f"{_metric}, {_label}, mean {_over}",
            published=_value,
            published_note=f"± {_spread:.2f} (as printed: s.d. over datasets and splits)"
            if _group != "bike"
            else f"± {_spread:.2f} (as printed)",
            experiments=_experiments,
            pool_experiments=_pool,
            show_sd=_group != "bike",
            measure=metric(_metric, labels=[_label], pooled=True),
            # sec. 6 prints two decimals at least ("-.50"), the bike log-likelihood four
            decimals=max(2, len(f"{_value:g}".partition(".")[2])),
        )
    )
