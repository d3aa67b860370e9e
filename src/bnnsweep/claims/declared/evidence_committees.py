"""Paper 000 sec. 4.2-4.3, Tables 1-2: the evidence committees (the unweighted mean of the
three, or ten, evidence-procedure networks of largest hyper-likelihood), from the per-mode
predictions of the ``laplace`` runs of config/sunspots.yaml and config/tecator.yaml
(:mod:`bnnsweep.figures.evidence_committee`; table kind ``evidence_committee``)."""

import pandas as pd

from ...figures.evidence_committee import PUBLISHED_COMMITTEE, committee_runs
from ...sweeps.axes import NOT_APPLICABLE
from ..registry import Claim, declare, metric

EXPERIMENTS = {"sunspots": ("sunspots_seeds",), "tecator": ("tecator",)}


def committees_of(size: int, hidden: int):
    """The runs of :func:`committee_runs` with ``hidden`` units, with the axes a method does
    not use as missing values (as ``results_frame`` gives them)."""

    def runs_from(merged) -> pd.DataFrame:
        runs = committee_runs(merged, size)
        runs = runs[runs["hidden"] == hidden] if "hidden" in runs else runs
        for axis, na in NOT_APPLICABLE.items():
            if axis in runs:
                runs[axis] = runs[axis].where(runs[axis] != na, pd.NA)
        return runs

    return runs_from


for (_dataset, _hidden, _size, _metric), _ref in PUBLISHED_COMMITTEE.items():
    if _size == 1:  # the evidence row itself: declared with the other published errors
        continue
    declare(
        Claim(
            paper="paper 000",
            where=_ref.source,
            quantity=f"{_metric}, evidence committee of {_size} (laplace) on {_dataset}",
            published=_ref.value,
            decimals=_ref.decimals,
            experiments=EXPERIMENTS[_dataset],
            runs_from=committees_of(_size, _hidden),
            measure=metric(_metric, datasets=[_dataset], labels=["laplace"]),
            finding="the committee of a laplace run's modes of largest log evidence; "
            "bnnsweep figure evidence_committee --merged results/<experiment>/merged.nc "
            "--output committee.md",
        )
    )
