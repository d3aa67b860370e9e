"""Dataset registry: generated toy problems and vendored real data, with fixed splits.

>>> from bnnsweep import datasets
>>> datasets.names()[:3]
['boston_housing', 'concrete', 'energy']
>>> ds = datasets.load("robot_arm")
>>> ds.split("default").x_train.shape
(200, 2)

``load`` is deterministic: generated data use fixed seeds, the UCI splits the benchmark's
seeded recipe. Vendored files are verified against ``data/MANIFEST.json`` on first use.
"""

from __future__ import annotations

from . import (  # noqa: F401  (registration)
    analytic_rows,
    boltzmann_tasks,
    classes,
    downloadable,
    generated,
    ica_mixtures,
    ripley,
    robot_arm,
    sbn_ensembles,
    stand_ins,
    tecator,
    text_sets,
    thesis_ch1,
    timeseries,
    toy_nrd,
    two_weight_toy,
    uci,
)
from .base import DataFileError, Dataset, DatasetError, Split
from .registry import entry, names
from .store import load_netcdf, save_netcdf
from .uci import uci_split_indices

__all__ = [
    "DataFileError",
    "Dataset",
    "DatasetError",
    "Split",
    "describe",
    "load",
    "load_netcdf",
    "names",
    "save_netcdf",
    "uci_split_indices",
]


def load(name: str) -> Dataset:
    """Load registered dataset ``name`` with all its splits.

    Raises :class:`DatasetError` listing the valid names when ``name`` is unknown, and naming
    the file when a vendored file fails its checksum, shape or finiteness check.
    """
    return entry(name).load()


def describe(name: str) -> dict:
    """Metadata of ``name`` without loading arrays: source, licence, preprocessing, task,
    error measure, ``n_splits`` and ``split_names``."""
    return entry(name).describe()
