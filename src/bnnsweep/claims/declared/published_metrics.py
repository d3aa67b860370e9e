"""One claim per number of :data:`bnnsweep.figures.published.PUBLISHED` (the papers' test
errors that the figures and tables print beside ours): the mean of that metric over the runs
of the dataset and method label, in every experiment of the shipped configs that runs them
(found by dataset and label), one row per hidden size and other axis value."""

from ...figures.published import PUBLISHED
from ..registry import Claim, declare, metric

for (_dataset, _label, _metric), _refs in PUBLISHED.items():
    for _ref in _refs:
        _where, _, _note = _ref.short.partition(", ")
        declare(
            Claim(
                paper=_where.split(" T")[0].split(" suppl.")[0],
                where=_ref.source,
                quantity=f"{_metric}, {_label} on {_dataset}",
                published=_ref.value,
                published_note=_note,
                dataset=_dataset,
                label=_label,
                measure=metric(_metric, datasets=[_dataset], labels=[_label]),
            )
        )
