"""Thesis Table 3.1: test-error counts of networks of linear threshold units, "the average of
all the networks' classification errors" (Pima: H = 10, 15, 20 x C = 1, 10, 100 x ten
initialisations, 90 networks; crabs: H = 10, 20, 30, 40, 120 networks; the printed 73.97 and
6.08 are 6657/90 and 730/120) and the best network's, from the ``ltu`` runs of
config/thesis_ltu.yaml (figure ``ltu_error_counts``). Ours pools every network of the grid
(diag_test_errors), per label: ``ltu`` (the defaults: standardised inputs, eqs. 3.23-3.24 as
printed), ``ltu_unit_box`` (the ablation with the inputs in [-1, 1] as the thesis's text
states) and ``ltu_exact`` (the ablation with the exact T = 0 limit)."""

from ...figures.ltu import PUBLISHED_LTU
from ..registry import Claim, Ours, declare, metric, usable_runs

FINDINGS = {
    "pima_ripley": (
        "the thesis's split. Its text fixes the grid, 7 alternations, the annealing schedule, "
        "the SMO cap and the KKT schedule, all followed. Its input scaling ('zero mean and lie "
        "between -1 and 1', label ltu_unit_box: min-max to [-1, 1]; the other reading, centred "
        "and divided by the largest |x - mean|, gives the same count within its s.e.) makes "
        "fewer errors than the thesis; standardised inputs (unit s.d., the default: about twice "
        "the scale, so harder SVM margins at the same C, since scaling the inputs by s is "
        "scaling C by s^2) reproduce its average. The default is the setting that reproduces "
        "the table (config/thesis_ltu.yaml; python benchmarks/ltu_pima_scaling.py). Open: "
        "the initial weights (not given), Platt's SMO against libsvm's"
    ),
    "crabs_ripley": (
        "STAND-IN SPLIT: Ripley's (1994) 80/120 partition is not available; the count moves "
        "with the seeded split by more than the gap (python benchmarks/ltu_crabs_splits.py). "
        "The input scaling moves it too: compare this table's ltu and ltu_unit_box rows (the "
        "same grid and seeds); a 48-network benchmark on split 0 saw the two readings within "
        "its s.e. (python benchmarks/ltu_pima_scaling.py --dataset crabs --seeds 4 "
        "--readings minmax standardised)"
    ),
}
LABELS = {
    "ltu": "ltu (defaults: standardised inputs, eqs. 3.23-3.24 as printed)",
    "ltu_unit_box": "ltu_unit_box (ablation: inputs in [-1, 1] as the text states)",
    "ltu_exact": "ltu_exact (ablation: the exact T = 0 limit)",
}


def best_network(dataset: str, label: str):
    """A measure: the fewest test errors of any network of ``label`` on ``dataset`` (one
    number, no s.e.: the thesis's 'best linear threshold unit')."""

    def measure(runs):
        chosen = usable_runs(runs)
        chosen = chosen[(chosen["dataset"] == dataset) & (chosen["method"] == label)]
        if chosen.empty or "diag_test_errors" not in chosen:
            return []
        best = float(chosen["diag_test_errors"].min())
        return [Ours(best, float("nan"), len(chosen), (dataset,), "minimum over the grid")]

    return measure


def _claims(dataset: str, published: dict) -> list[dict]:
    """The rows of one dataset: the grid's average per label, and the best ``ltu`` network."""
    rows = [
        {
            "where": "thesis Table 3.1 (average linear threshold unit)",
            "quantity": f"test errors, mean over every network of the grid, {what} on {dataset}",
            "published": published["average"],
            "published_note": "(mean over the grid's networks)",
            "label": label,
            "measure": metric(
                "diag_test_errors", datasets=[dataset], labels=[label], pooled=True
            ),  # fmt: skip
            "show_sd": True,
            "finding": FINDINGS[dataset],
        }
        for label, what in LABELS.items()
    ]
    rows.append(
        {
            "where": "thesis Table 3.1 (best linear threshold unit)",
            "quantity": f"test errors of the best network of the grid, ltu on {dataset}",
            "published": published["best"],
            "published_note": "(the minimum over the grid)",
            "label": "ltu",
            "measure": best_network(dataset, "ltu"),
            "finding": "the minimum of 90-120 networks is an extreme of a noisy sample: "
            "compare the averages",
        }
    )
    return rows


for _dataset, _published in PUBLISHED_LTU.items():
    for _row in _claims(_dataset, _published):
        declare(Claim(paper="thesis", dataset=_dataset, **_row))
