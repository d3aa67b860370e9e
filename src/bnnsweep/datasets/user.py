"""Datasets of a user's own, declared in the config's ``datasets:`` section.

Each names a file (CSV, Parquet or NetCDF with one row dimension), its input and target
columns, the task, and a split recipe:

- ``{holdout: f, repeats: n, seed: s}``: n splits ``0..n-1``, each a random test set of
  round(f N) rows drawn with ``numpy.random.default_rng([s, i])`` for split i;
- ``{kfold: k, seed: s}``: the rows shuffled once with ``default_rng(s)`` and cut into k
  folds; split i tests on fold i and trains on the others;
- ``{column: c}``: split v tests on the rows whose column c holds v and trains on the rest.

As for the vendored sets, inputs are standardised with the training rows' mean and
standard deviation (``preprocess.standardise``), and so are regression targets
(``y_mean``/``y_scale`` give results back in original units); class labels (any values,
numbered 0..C-1 in sorted order) and counts stay as they are.
The file's SHA-256 goes into the dataset's metadata, so ``bnnsweep prepare`` records which
file a prepared dataset came from.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from .base import DatasetError, Split
from .preprocess import MAX_ABS_VALUE, standardise
from .registry import _REGISTRY, register

ERROR_MEASURE = {"regression": "rmse", "binary": "error_rate", "multiclass": "error_rate"}
ERROR_MEASURE["count"] = "mad"


def _where(name: str) -> str:
    return f"config key 'datasets.{name}'"


def read_table(path: Path, where: str) -> dict[str, np.ndarray]:
    """Columns of a CSV, Parquet or NetCDF file as 1-D arrays (NetCDF: every variable over
    the file's one row dimension)."""
    if not path.is_file():
        raise DatasetError(f"{where}: file {str(path)!r} does not exist")
    suffix = path.suffix.lower()
    try:
        if suffix in (".csv", ".txt"):
            import pandas as pd

            frame = pd.read_csv(path)
            return {str(c): frame[c].to_numpy() for c in frame.columns}
        if suffix in (".parquet", ".pq"):
            import pandas as pd

            try:
                frame = pd.read_parquet(path)
            except ImportError as err:
                raise DatasetError(
                    f"{where}: reading Parquet file {str(path)!r} needs pyarrow "
                    f"(pip install pyarrow): {err}"
                ) from None
            return {str(c): frame[c].to_numpy() for c in frame.columns}
        if suffix in (".nc", ".nc4", ".netcdf"):
            import netCDF4

            with netCDF4.Dataset(path) as nc:
                return {
                    name: _unmasked(var[...]) for name, var in nc.variables.items() if var.ndim == 1
                }
    except DatasetError:
        raise
    except Exception as err:  # noqa: BLE001 - any reader's failure, named by file
        raise DatasetError(f"{where}: cannot read {str(path)!r}: {err}") from None
    raise DatasetError(
        f"{where}: file {str(path)!r} is not .csv, .parquet or .nc; convert it to one of them"
    )


def _unmasked(values) -> np.ndarray:
    """A NetCDF variable's values with its masked entries (``_FillValue``, ``missing_value``)
    made NaN, so that they count as missing, not as the fill number (-999, 9.97e36)."""
    if np.ma.isMaskedArray(values) and np.ma.getmaskarray(values).any():
        if values.dtype.kind not in "fiu":
            return np.asarray(values.filled(), dtype=object)
        return np.ma.filled(values.astype(np.float64), np.nan)
    return np.asarray(values)


def _numeric(columns: dict, names: list[str], where: str, role: str) -> np.ndarray:
    out = []
    for name in names:
        if name not in columns:
            valid = ", ".join(columns)
            raise DatasetError(f"{where}: no {role} column {name!r} in the file; columns: {valid}")
        try:
            values = np.asarray(columns[name], dtype=np.float64)
        except (TypeError, ValueError):
            raise DatasetError(f"{where}: {role} column {name!r} is not numeric") from None
        if not np.all(np.isfinite(values)):
            bad = int(np.sum(~np.isfinite(values)))
            raise DatasetError(
                f"{where}: {role} column {name!r} has {bad} missing or infinite value(s)"
            )
        if np.any(np.abs(values) > MAX_ABS_VALUE):
            raise DatasetError(
                f"{where}: {role} column {name!r} has values beyond {MAX_ABS_VALUE:g} "
                f"(largest {np.max(np.abs(values)):.3g}), whose squares overflow: rescale it"
            )
        out.append(values)
    return np.stack(out, axis=1)


def _labels(columns: dict, name: str, task: str, where: str) -> np.ndarray:
    """Class labels 0..C-1 (values numbered in sorted order) or counts, one column."""
    if name not in columns:
        raise DatasetError(
            f"{where}: no target column {name!r} in the file; columns: {', '.join(columns)}"
        )
    raw = np.asarray(columns[name])
    if task == "count":
        values = _numeric(columns, [name], where, "target")[:, 0]
        if np.any(values < 0) or np.any(values != np.round(values)):
            raise DatasetError(f"{where}: count target {name!r} must hold non-negative integers")
        return values[:, None]
    try:  # numbers in numeric order (2 before 10), anything else as text
        values = raw.astype(np.float64)
    except (TypeError, ValueError):
        values = raw.astype(str)
    classes, labels = np.unique(values, return_inverse=True)
    if task == "binary" and len(classes) != 2:
        raise DatasetError(f"{where}: binary target {name!r} has {len(classes)} distinct values")
    return labels.astype(np.float64)[:, None]


def split_rows(recipe: dict, n: int, split_column, where: str) -> dict[str, np.ndarray]:
    """{split name: boolean test mask over the n rows} of a split recipe."""
    if "holdout" in recipe:
        n_test = int(round(recipe["holdout"] * n))
        if not 1 <= n_test < n:
            raise DatasetError(
                f"{where}: holdout {recipe['holdout']} of {n} rows leaves no train or test row"
            )
        masks = {}
        for i in range(int(recipe.get("repeats", 1))):
            rng = np.random.default_rng([int(recipe.get("seed", 0)), i])
            mask = np.zeros(n, dtype=bool)
            mask[rng.permutation(n)[:n_test]] = True
            masks[str(i)] = mask
        return masks
    if "kfold" in recipe:
        k = int(recipe["kfold"])
        if k > n:
            raise DatasetError(f"{where}: {k} folds of {n} rows")
        order = np.random.default_rng(int(recipe.get("seed", 0))).permutation(n)
        masks = {}
        for i, fold in enumerate(np.array_split(order, k)):
            mask = np.zeros(n, dtype=bool)
            mask[fold] = True
            masks[str(i)] = mask
        return masks
    values = np.asarray(split_column).astype(str)
    masks = {}
    for value in np.unique(values):
        if not value.replace("_", "").isalnum() or not value.isascii():
            raise DatasetError(
                f"{where}: split column value {value!r} is not a split name ([A-Za-z0-9_])"
            )
        masks[value] = values == value
        if masks[value].all():
            raise DatasetError(f"{where}: split {value!r} leaves no training row")
    return masks


def build_splits(spec: dict, name: str) -> dict[str, Split]:
    """The splits of user dataset ``name`` from its config entry ``spec``."""
    columns = read_table(Path(spec["file"]), _where(name))
    where = f"{_where(name)}, file {spec['file']}"  # what follows is about the file's content
    task = spec["task"]
    targets = list(spec["targets"])
    split_column = spec["splits"].get("column")
    if split_column is not None and split_column not in columns:
        raise DatasetError(
            f"{where}: no split column {split_column!r} in the file; columns: {', '.join(columns)}"
        )
    skip = set(targets) | {split_column}
    inputs = list(spec.get("inputs") or [c for c in columns if c not in skip])
    overlap = sorted(set(inputs) & skip)
    if overlap:
        raise DatasetError(
            f"{where}: column {overlap[0]!r} is both an input and a target or the split column"
        )
    if not inputs:
        raise DatasetError(f"{where}: no input columns")
    x = _numeric(columns, inputs, where, "input")
    if task == "regression":
        y = _numeric(columns, targets, where, "target")
    elif len(targets) != 1:
        raise DatasetError(f"{where}: a {task} task has one target column, got {len(targets)}")
    else:
        y = _labels(columns, targets[0], task, where)
    masks = split_rows(spec["splits"], x.shape[0], columns.get(split_column), where)
    splits = {}
    for split_name, test in masks.items():
        x_train, _, _, (x_test,) = standardise(x[~test], x[test])
        if task == "regression":
            y_train, y_mean, y_scale, (y_test,) = standardise(y[~test], y[test])
        else:
            y_train, y_test = y[~test], y[test]
            y_mean, y_scale = np.zeros(y.shape[1]), np.ones(y.shape[1])
        splits[split_name] = Split(split_name, x_train, y_train, x_test, y_test, y_mean, y_scale)
    return splits


def _metadata(spec: dict) -> dict:
    path = Path(spec["file"])
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return {
        "source": f"user file {str(path)!r} (sha256 {digest})",
        "licence": "the user's own data",
        "preprocessing": (
            f"inputs standardised with the training rows of each split; splits "
            f"{json.dumps(spec['splits'], sort_keys=True)}"
            + ("; targets standardised likewise" if spec["task"] == "regression" else "")
        ),
        "task": spec["task"],
        "error_measure": ERROR_MEASURE[spec["task"]],
        "user_spec": json.dumps(spec, sort_keys=True),
        "file_sha256": digest,
    }


def register_user_datasets(specs: dict) -> list[str]:
    """Register the config's ``datasets:`` entries (idempotent for an unchanged entry); a
    name taken by a registered dataset, an unreadable file or a missing column is a
    DatasetError naming the config key."""
    names = []
    for name, spec in (specs or {}).items():
        where = _where(name)
        spec_json = json.dumps(spec, sort_keys=True)
        known = _REGISTRY.get(name)
        if known is not None:
            if known.metadata.get("user_spec") == spec_json:
                names.append(name)
                continue
            raise DatasetError(
                f"{where}: the name {name!r} is taken by a registered dataset; choose another"
            )
        splits = build_splits(spec, name)
        loader_spec = dict(spec)
        register(name, metadata=_metadata(spec), split_names=list(splits))(
            lambda s=loader_spec, n=name: build_splits(s, n)
        )
        names.append(name)
    return names


__all__ = ["build_splits", "read_table", "register_user_datasets", "split_rows"]
