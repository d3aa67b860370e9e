"""Round trip of a :class:`Dataset` through one compressed NetCDF file.

Layout: for each split ``s`` the variables ``x_train__s``, ``y_train__s``, ``x_test__s``,
``y_test__s``, ``y_mean__s`` and ``y_scale__s`` with dimensions of their own (``train__s``,
``test__s``, ``input__s``, ``output__s``); global attributes ``bnnsweep_format``,
``dataset_name``, ``split_names`` (JSON list, in order), ``metadata`` (JSON object) and
``sha256`` (of every array, see :func:`checksum`), which :func:`load_netcdf` verifies (a file
without it, as prepared by old versions, is refused: prepare it again). Variables are float64 with zlib
compression and no fill value, so values come back exactly.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import numpy as np

from ..cells.atomic_file import write_atomic
from ..cells.file_seal import seal_problem
from .base import DataFileError, Dataset, DatasetError, Split

FORMAT = "bnnsweep-dataset-1"
_FIELDS = ("x_train", "y_train", "x_test", "y_test", "y_mean", "y_scale")
_SPLIT_NAME = re.compile(r"^[A-Za-z0-9_]+$")


def _dims(field: str, split: str) -> tuple[str, ...]:
    rows = f"{'train' if field.endswith('train') else 'test'}__{split}"
    if field.startswith("x_"):
        return rows, f"input__{split}"
    if field in ("y_mean", "y_scale"):
        return (f"output__{split}",)
    return rows, f"output__{split}"


def checksum(splits: dict[str, Split]) -> str:
    """SHA-256 over every split's arrays (name, shape and float64 little-endian bytes), in
    split and field order."""
    digest = hashlib.sha256()
    for split_name, split in splits.items():
        for field in _FIELDS:
            values = np.ascontiguousarray(getattr(split, field), dtype="<f8")
            digest.update(f"{field}__{split_name}{values.shape}".encode())
            digest.update(values.tobytes())
    return digest.hexdigest()


def data_key(sha256: str) -> str:
    """The seal key of a prepared dataset file (``file_seal``): ``D:`` and its arrays'
    checksum, padded to the key length."""
    from ..cells.file_seal import KEY_LENGTH

    return f"D:{sha256}".ljust(KEY_LENGTH, "-")


def data_checksum(path: str | Path) -> str | None:
    """The checksum of a prepared dataset file's arrays as its seal records it (its last
    bytes only; ``load_netcdf`` verifies the file), or None for a file without one."""
    from ..cells.file_seal import sealed_key

    key = sealed_key(path)
    if key is None or not key.startswith("D:"):
        return None
    return key[2:66]


def _check_columns(split: Split) -> None:
    """Output columns agree between train, test and the standardisation (Split itself checks
    rows, input columns and finiteness), and the standardisation gives numbers
    (``preprocess.standardisation_problem``: y_scale 0 or NaN, targets near 1e300)."""
    from .preprocess import standardisation_problem

    outputs = split.y_train.shape[1]
    for field in ("y_test", "y_mean", "y_scale"):
        values = getattr(split, field)
        if values.shape[-1] != outputs:
            raise DatasetError(
                f"split {split.name!r}: {field} has {values.shape[-1]} output columns, "
                f"y_train has {outputs}"
            )
    with np.errstate(over="ignore", invalid="ignore"):
        original = [y * split.y_scale + split.y_mean for y in (split.y_train, split.y_test)]
    why = standardisation_problem(split.y_mean, split.y_scale, np.concatenate(original))
    if why is not None:
        raise DatasetError(f"split {split.name!r}: {why}")


def save_netcdf(dataset: Dataset, path: str | Path) -> Path:
    """Write ``dataset`` to ``path`` (temporary file in the same folder, then rename;
    netCDF4 directly, as xarray would write it with no fill value)."""
    path = Path(path)
    data_vars = {}
    for split_name, split in dataset.splits.items():
        _check_columns(split)
        if not _SPLIT_NAME.match(split_name):
            raise DatasetError(f"split name {split_name!r} cannot be stored: use [A-Za-z0-9_]")
        for field in _FIELDS:
            values = np.asarray(getattr(split, field), dtype=np.float64)
            data_vars[f"{field}__{split_name}"] = (_dims(field, split_name), values)
    try:
        metadata = json.dumps(dataset.metadata, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise DatasetError(f"metadata of {dataset.name!r} is not JSON-serialisable: {exc}") from exc
    attrs = {
        "bnnsweep_format": FORMAT,
        "dataset_name": dataset.name,
        "split_names": json.dumps(list(dataset.splits)),
        "metadata": metadata,
        "sha256": checksum(dataset.splits),
    }
    import netCDF4

    def write(tmp: str) -> None:
        with netCDF4.Dataset(tmp, "w", format="NETCDF4") as nc:
            for name, (dims, values) in data_vars.items():
                for dim, n in zip(dims, values.shape, strict=True):
                    if dim not in nc.dimensions:
                        nc.createDimension(dim, n)
                var = nc.createVariable(name, "f8", dims, zlib=True, complevel=4, shuffle=True)
                var[...] = values
            for key, value in attrs.items():
                nc.setncattr(key, value)

    # the arrays' checksum as the seal's key: what a cell fitted on this file records
    return write_atomic(path, write, sealed=True, key=data_key(attrs["sha256"]))


def load_netcdf(path: str | Path) -> Dataset:
    """Read a file written by :func:`save_netcdf` (netCDF4 directly: a fit job needs no
    xarray); errors name the file."""
    import netCDF4

    path = Path(path)
    if (why := seal_problem(path)) is not None:  # damaged bytes can hang the HDF5 parser
        raise DataFileError(f"{path}: {why}; prepare it again", path)
    try:
        with netCDF4.Dataset(path) as nc:
            nc.set_auto_maskandscale(False)
            attrs = {name: nc.getncattr(name) for name in nc.ncattrs()}
            if attrs.get("bnnsweep_format") != FORMAT:
                raise DatasetError(f"not a bnnsweep dataset file ({FORMAT})")
            split_names = json.loads(attrs["split_names"])
            metadata = json.loads(attrs["metadata"])
            name = str(attrs["dataset_name"])
            splits = {}
            for split_name in split_names:
                fields = {
                    field: np.array(nc[f"{field}__{split_name}"][...], dtype=np.float64)
                    for field in _FIELDS
                }
                splits[split_name] = Split(split_name, **fields)
                _check_columns(splits[split_name])
            recorded = attrs.get("sha256")
            if recorded is None:
                raise DatasetError(
                    "no checksum (sha256 attribute), so altered data would go unnoticed; "
                    "prepare it again (delete the file and rerun, or `bnnsweep prepare`)"
                )
            if recorded != checksum(splits):
                raise DatasetError(
                    "checksum mismatch: the arrays differ from those written by "
                    "`bnnsweep prepare` (sha256 attribute); prepare the file again"
                )
    except DatasetError as exc:
        raise DataFileError(f"{path}: {exc}", path) from exc
    except Exception as exc:  # a damaged file fails in any of netCDF4's or json's ways
        raise DataFileError(f"{path}: cannot read dataset file ({exc})", path) from exc
    return Dataset(name=name, splits=splits, metadata=metadata)
