"""Sweep cells: one (experiment, dataset, split, method, axis values, seed) each, with its
settings, a stable file name and a random stream derived from a stable encoding of the cell.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass, field

import numpy as np

# Sweep axes a method may use, with the value recorded when a method does not use it.
AXES = {"hidden": -1, "components": -1, "schedule": "none"}
AXIS_PREFIX = {"hidden": "h", "components": "m", "schedule": "sched"}


@dataclass(frozen=True)
class Cell:
    experiment: str
    dataset: str
    split: str
    method: str  # the label in the config (usually the registered method name)
    method_name: str  # the registered method
    seed: int
    axes: tuple[tuple[str, object], ...]
    settings: dict = field(compare=False, hash=False)

    def axis_values(self) -> dict:
        values = dict(AXES)
        values.update(dict(self.axes))
        return values

    def key(self) -> dict:
        """What identifies the cell's computation, apart from the experiment name."""
        return {
            "dataset": self.dataset,
            "split": self.split,
            "method": self.method,
            "seed": self.seed,
            **dict(self.axes),
        }

    @property
    def cell_id(self) -> str:
        """File stem: axis values, split and seed, e.g. ``h8_split-default_seed-0``."""
        parts = [f"{AXIS_PREFIX[a]}{v}" for a, v in self.axes]
        return "_".join([*parts, f"split-{self.split}", f"seed-{self.seed}"])

    @property
    def path_id(self) -> str:
        return f"{self.experiment}/cells/{self.dataset}/{self.method}/{self.cell_id}"

    def rng(self) -> np.random.Generator:
        """A generator seeded by SeedSequence over the seed and a SHA-256 encoding of the cell
        (never Python's hash(), which varies between processes)."""
        encoded = json.dumps({k: v for k, v in self.key().items() if k != "seed"}, sort_keys=True)
        digest = hashlib.sha256(encoded.encode()).digest()
        words = tuple(int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4))
        return np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=words))


def _as_list(value) -> list:
    return list(value) if isinstance(value, list | tuple) else [value]


def expand_experiment(name: str, experiment: dict, split_names) -> list[Cell]:
    """Cells of one validated experiment; ``split_names(dataset)`` lists a dataset's splits."""
    from .methods import get_method

    cells = []
    for label, entry in experiment["methods"].items():
        entry = dict(entry)
        method_name = entry.pop("method", label)
        method = get_method(method_name)
        axis_lists = {a: _as_list(entry.pop(a)) for a in method.axes if a in entry}
        for dataset in experiment["datasets"]:
            splits = experiment["splits"]
            if splits == ["all"]:
                splits = list(split_names(dataset))
            for split, seed in itertools.product(splits, experiment["seeds"]):
                for combo in itertools.product(*axis_lists.values()):
                    axes = tuple(zip(axis_lists, combo, strict=True))
                    settings = {**entry, **dict(axes)}
                    cells.append(
                        Cell(
                            name, dataset, str(split), label, method_name, int(seed), axes, settings
                        )
                    )
    return cells


def fit_arguments(cell: Cell) -> str:
    """The ``bnnsweep fit`` arguments of a cell, shell-quoted (used by the fit rule)."""
    import shlex

    axis_settings = dict(cell.axes)
    settings = {k: v for k, v in cell.settings.items() if k not in axis_settings}
    args = [
        "--experiment",
        cell.experiment,
        "--dataset",
        cell.dataset,
        "--split",
        cell.split,
        "--method",
        cell.method_name,
        "--label",
        cell.method,
        "--seed",
        str(cell.seed),
    ]
    for axis, value in cell.axes:
        args += [f"--{axis}", str(value)]
    args += ["--settings-json", json.dumps(settings, sort_keys=True)]
    return " ".join(shlex.quote(a) for a in args)


def cell_index(cells: list[Cell]) -> dict[str, Cell]:
    """Cells by their path id (``experiment/cells/dataset/method/cell_id``); ids are unique."""
    index: dict[str, Cell] = {}
    for cell in cells:
        if cell.path_id in index:
            raise ValueError(
                f"two cells share the file {cell.path_id}.nc; make their labels differ"
            )
        index[cell.path_id] = cell
    return index
