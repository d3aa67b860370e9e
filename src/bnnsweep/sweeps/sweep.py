"""Sweep cells: one (experiment, dataset, split, method, axis values, seed) each, with its
settings, a stable file name and a random stream derived from a stable encoding of the cell.
"""

from __future__ import annotations

import ast
import hashlib
import itertools
import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np

from .axes import AXES, NOT_APPLICABLE
from .code_imports import import_statements
from .code_imports import save as save_import_statements


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
        values = dict(NOT_APPLICABLE)
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
        parts = [f"{AXES[a].prefix}{v}" for a, v in self.axes]
        return "_".join([*parts, f"split-{self.split}", f"seed-{self.seed}"])

    @property
    def path_id(self) -> str:
        return f"{self.experiment}/cells/{self.dataset}/{self.method}/{self.cell_id}"

    def rng(self) -> np.random.Generator:
        """A generator seeded by SeedSequence over the seed and a SHA-256 encoding (never
        Python's hash(), which varies between processes) of the data and the network size:
        dataset, split and ``hidden``, not the method, its label or its other axes.

        Common random numbers: every method of one (dataset, split, seed, hidden) draws the
        same stream, so that methods that start from random weights start from the same
        ones (a diagonal, full and factor-analysis Gaussian, a mixture and its one-component
        start, Laplace's restarts), and differences between them in a table are paired."""
        common = {"dataset": self.dataset, "split": self.split}
        common["hidden"] = dict(self.axes).get("hidden", NOT_APPLICABLE["hidden"])
        encoded = json.dumps(common, sort_keys=True)
        digest = hashlib.sha256(encoded.encode()).digest()
        words = tuple(int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4))
        return np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=words))


def _as_list(value) -> list:
    return list(value) if isinstance(value, list | tuple) else [value]


def expand_experiment(name: str, experiment: dict, split_names) -> list[Cell]:
    """Cells of one validated experiment; ``split_names(dataset)`` lists a dataset's splits."""
    from ..methods import get_method

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


def cell_spec(cell: Cell) -> dict:
    """A cell as plain JSON data (``cell_from_spec`` reads it back): what a batch job gets."""
    return {
        "experiment": cell.experiment,
        "dataset": cell.dataset,
        "split": cell.split,
        "method": cell.method,
        "method_name": cell.method_name,
        "seed": cell.seed,
        "axes": [list(pair) for pair in cell.axes],
        "settings": cell.settings,
    }


def cell_from_spec(spec: dict) -> Cell:
    return Cell(
        spec["experiment"],
        spec["dataset"],
        str(spec["split"]),
        spec["method"],
        spec["method_name"],
        int(spec["seed"]),
        tuple((str(a), v) for a, v in spec["axes"]),
        dict(spec["settings"]),
    )


# --- the version of the code a cell depends on ---------------------------------------------

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
# Never part of a code version: the package root (version string) and the method registry's
# machinery (each method's registration lives in its own module, which is part of its version).
_NOT_CODE = ("__init__.py", "methods/__init__.py")


def _module_file(dotted: str) -> Path | None:
    """The source file of ``bnnsweep.<dotted>`` (module or package), if it exists."""
    base = PACKAGE_ROOT.joinpath(*dotted.split(".")) if dotted else PACKAGE_ROOT
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _package_of(path: Path) -> list[str]:
    """Dotted parts, below bnnsweep, of the package that holds ``path``."""
    parts = list(path.relative_to(PACKAGE_ROOT).parts[:-1])
    return parts


@cache
def _imports(path: Path) -> frozenset[Path]:
    """Files of bnnsweep that ``path`` imports (anywhere in it, lazily imported ones too);
    each file's statements read once per process and parsed once per content
    (``code_imports``)."""
    found: set[Path] = set()
    package = _package_of(path)
    for level, dotted, names in import_statements(path):
        if level is None:  # import bnnsweep.x.y
            for name in names:
                if name.split(".")[0] == "bnnsweep":
                    found.add(_module_file(".".join(name.split(".")[1:])))
            continue
        if level:
            base = package[: len(package) - level + 1]
        elif dotted.split(".")[0] == "bnnsweep":
            base = []
        else:
            continue
        module = dotted.split(".") if dotted else []
        if not level:
            module = module[1:]
        target = ".".join(base + module)
        for name in names:  # a submodule, or a name defined in the module
            sub = _module_file(f"{target}.{name}" if target else name)
            found.add(sub if sub else _module_file(target))
    return frozenset(f for f in found if f is not None)


@cache
def code_files(module: str) -> tuple[Path, ...]:
    """Source files ``bnnsweep.<module>`` depends on: itself and, transitively, every module
    of the package it imports (parsed, not imported), apart from the package root and the
    method registry."""
    start = _module_file(module)
    if start is None:
        raise ValueError(f"no module bnnsweep.{module}")
    excluded = {PACKAGE_ROOT / name for name in _NOT_CODE}
    seen, todo = {start}, [start]
    while todo:
        for dep in _imports(todo.pop()):
            if dep not in seen and dep not in excluded:
                seen.add(dep)
                todo.append(dep)
    save_import_statements()
    return tuple(sorted(seen))


def files_version(files) -> str:
    """SHA-256 (first 16 hex digits) over the package-relative names and contents of files."""
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(str(Path(path).relative_to(PACKAGE_ROOT)).encode() + b"\0")
        digest.update(Path(path).read_bytes() + b"\0")
    return digest.hexdigest()[:16]


# Code outside a method's imports that sets a cell's numbers: the metrics computed from its
# predictions (results.cell_content calls them). Part of every method's code version.
CELL_NUMBERS_MODULES = ("metrics",)


@cache
def code_version(method_name: str) -> str:
    """Version of the code that fits cells of a registered method: a hash of the source of
    the module that registers it (its ``fit``, settings and cost model), of every bnnsweep
    module that imports (engines, models, datasets...), found without importing, and of
    the modules that compute a cell's metrics (``CELL_NUMBERS_MODULES``). Editing
    ``methods/laplace.py`` changes the version of ``laplace`` and of the methods whose
    module imports it (``vi_mixture``), of no other; editing ``metrics.py`` that of every
    method."""
    from ..methods import module_of

    files = set(code_files(module_of(method_name).removeprefix("bnnsweep.")))
    for module in CELL_NUMBERS_MODULES:
        files.update(code_files(module))
    return files_version(files)


@cache
def data_code_version() -> str:
    """Version of the code that prepares datasets (the ``datasets`` package: loaders,
    generators, preprocessing, the file format): a prepared file written by other code is
    prepared again, and cells fitted on data that came out different are refitted (their
    key records the data's checksum)."""
    return files_version(code_files("datasets"))


FIGURES_INIT = PACKAGE_ROOT / "figures" / "__init__.py"


@cache
def figure_code_version(kind: str) -> str:
    """Version of the code that draws figure ``kind``: the module of its function in
    ``figures.FIGURES`` and what that imports, found by parsing (importing the figures
    would load matplotlib into every Snakemake run)."""
    module = _figure_modules().get(kind)
    if module is None:
        raise ValueError(f"unknown figure kind {kind!r}")
    return files_version((*code_files(f"figures.{module}"), FIGURES_INIT))


@cache
def _figure_modules() -> dict[str, str]:
    """Figure kind -> the module (below ``figures``) of its function, read from the
    ``FIGURES`` table of ``figures/__init__.py`` by parsing it once."""
    tree = ast.parse(FIGURES_INIT.read_text())
    module_of = {
        alias.name: node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module
        for alias in node.names
    }
    kinds = {}
    for node in ast.walk(tree):
        target = getattr(node, "target", None) or (getattr(node, "targets", None) or [None])[0]
        if (
            isinstance(target, ast.Name)
            and target.id == "FIGURES"
            and isinstance(node.value, ast.Dict)
        ):
            for key, value in zip(node.value.keys, node.value.values, strict=True):
                if isinstance(key, ast.Constant):
                    kinds[key.value] = module_of[value.elts[0].id]
    return kinds


# --- batch jobs ----------------------------------------------------------------------------


def cell_paths(cell: Cell, results_dir: str) -> dict[str, str]:
    """The workflow's files of a cell: its result, its prepared data, its log."""
    return {
        "output": f"{results_dir}/{cell.path_id}.nc",
        "data": f"{results_dir}/data/{cell.dataset}.nc",
        "log": f"{results_dir}/logs/{cell.experiment}/{cell.dataset}/{cell.method}/{cell.cell_id}.log",
    }


def batch_spec(
    cells: list[Cell], vectorise: bool, results_dir: str, code_reruns: bool = True
) -> dict:
    """What ``bnnsweep fit-batch`` needs to fit a batch: every cell with its settings, files
    and, with ``code_reruns``, the version of its method's code, so that a cell file written
    by other code is refitted (``runner.fit_batch`` reads it)."""
    return {
        "vectorise": vectorise,
        "code_reruns": code_reruns,
        "cells": [
            {
                "cell": cell_spec(c),
                **({"code_version": code_version(c.method_name)} if code_reruns else {}),
                **cell_paths(c, results_dir),
            }
            for c in cells
        ],
    }


_CELL_TEXT_KEYS = ("experiment", "dataset", "split", "method", "method_name")


def _checked(value, kind, where: str, what: str):
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise ValueError(f"{where} must be {what}, got {json.dumps(value, default=str)[:60]}")
    return value


def read_batch_spec(spec, name: str) -> tuple[bool, bool, list[dict]]:
    """(vectorise, code_reruns, entries) of a batch spec (``batch_spec``) read from the
    file ``name``, every entry's ``cell`` made a ``Cell``; a ValueError naming the file and
    the key for anything of another shape (a spec is written by the workflow, but may have
    been edited or damaged)."""
    where = f"batch spec {name}"
    _checked(spec, dict, where, "a JSON object")
    vectorise = _checked(spec.get("vectorise", False), bool, f"{where}: vectorise", "true/false")
    reruns = _checked(spec.get("code_reruns", True), bool, f"{where}: code_reruns", "true/false")
    cells = _checked(spec.get("cells"), list, f"{where}: cells", "a list")
    entries = []
    for i, entry in enumerate(cells):
        at = f"{where}: cells[{i}]"
        _checked(entry, dict, at, "an object")
        _checked(entry.get("output"), str, f"{at}.output", "a path")
        for key in ("data", "log", "code_version"):
            if entry.get(key) is not None:
                _checked(entry[key], str, f"{at}.{key}", "a string")
        cell = _checked(entry.get("cell"), dict, f"{at}.cell", "an object")
        for key in _CELL_TEXT_KEYS:
            _checked(cell.get(key), str, f"{at}.cell.{key}", "a string")
        _checked(cell.get("seed"), int, f"{at}.cell.seed", "an integer")
        _checked(cell.get("settings"), dict, f"{at}.cell.settings", "an object")
        for axis in _checked(cell.get("axes"), list, f"{at}.cell.axes", "a list"):
            pair = _checked(axis, list, f"{at}.cell.axes", "a list of [name, value] pairs")
            if len(pair) != 2 or not isinstance(pair[0], str):
                raise ValueError(f"{at}.cell.axes must be a list of [name, value] pairs")
        entries.append(dict(entry, cell=cell_from_spec(cell)))
    return vectorise, reruns, entries


def spec_text(spec: dict) -> tuple[str, str]:
    """``spec`` as canonical JSON text and its hash (the first 20 hex digits of its
    SHA-256): a changed cell, setting or code version gives another hash."""
    text = json.dumps(spec, sort_keys=True, separators=(",", ":"))
    return text, hashlib.sha256(text.encode()).hexdigest()[:20]


def spec_file(directory: str | Path, text: str, digest: str) -> Path:
    """Where the spec ``text`` (hash ``digest``) is to be found: ``<digest>.json`` under
    ``directory``, or, if a file of that name holds anything else (damaged), the first of
    ``<digest>-2.json``, ``<digest>-3.json``, ... that is missing or holds ``text``, so that
    the workflow writes it again under a fresh name. Reads, never writes."""
    directory = Path(directory)
    n = 1
    while True:
        path = directory / (f"{digest}.json" if n == 1 else f"{digest}-{n}.json")
        try:
            if path.read_bytes() == text.encode():
                return path
        except FileNotFoundError:
            return path
        except OSError:
            pass  # a directory, unreadable: the next name
        n += 1


def write_spec_file(path: str | Path, text: str) -> Path:
    """Write a spec's text to ``path`` atomically (the workflow's job for it)."""
    from ..cells.atomic_file import write_atomic

    return write_atomic(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))


def check_spec_name(path: str | Path, text: str) -> None:
    """A ValueError when the spec file ``path`` (``<digest>.json`` or ``<digest>-N.json``)
    does not hold the text its name is the hash of: damaged or edited since it was written
    (the next run of the workflow writes it again under another name, ``spec_file``)."""
    stem = Path(path).name.removesuffix(".json").split("-")[0]
    if len(stem) == 20 and all(c in "0123456789abcdef" for c in stem):
        if hashlib.sha256(text.encode()).hexdigest()[:20] != stem:
            raise ValueError(
                f"batch spec {path} is damaged (its content is not what its name is the hash "
                "of): run the same command again, which writes it anew"
            )


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
