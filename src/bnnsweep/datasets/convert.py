"""Conversion of raw data files into the vendored form, and reading that form back.

A vendored file is an ``.npz`` archive (a zip of ``.npy`` arrays, deflate-compressed) holding
``data`` (float64, one row per case as in the raw file) and, for files with a header,
``columns`` (the column names as a unicode array). It is written with fixed zip timestamps,
so converting the same raw file twice gives byte-identical output and a stable checksum, and
it is read with ``allow_pickle=False``.
"""

from __future__ import annotations

import gzip
import io
import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np

from .base import DatasetError
from .sources import RawSource

_GZIP_MAGIC = b"\x1f\x8b"
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def read_raw_bytes(path: str | Path) -> bytes:
    """The uncompressed bytes of a raw file, gunzipping it if it is gzip-compressed."""
    blob = Path(path).read_bytes()
    if blob[:2] == _GZIP_MAGIC:
        try:
            return gzip.decompress(blob)
        except (OSError, EOFError) as exc:
            raise DatasetError(f"{path}: corrupt gzip data ({exc})") from exc
    return blob


def parse_raw(path: str | Path, src: RawSource) -> dict[str, np.ndarray]:
    """Parse the raw file at ``path`` (laid out as ``src.layout``) and check its shape."""
    if src.layout not in ("whitespace", "csv-header"):
        raise DatasetError(f"{src.key}: unknown raw layout {src.layout!r}")
    try:
        text = read_raw_bytes(path).decode("ascii")
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path}: not an ASCII text file ({exc})") from exc
    arrays: dict[str, np.ndarray] = {}
    try:
        if src.layout == "whitespace":
            arrays["data"] = np.loadtxt(io.StringIO(text), dtype=np.float64, ndmin=2)
        else:
            header, _, body = text.partition("\n")
            names = [name.strip().strip('"') for name in header.strip().split(",")]
            arrays["columns"] = np.array(names, dtype=str)
            arrays["data"] = np.loadtxt(io.StringIO(body), dtype=np.float64, delimiter=",", ndmin=2)
    except ValueError as exc:
        raise DatasetError(f"{path}: cannot parse as {src.layout} numbers ({exc})") from exc
    check_arrays(arrays, src, where=str(path))
    return arrays


def check_arrays(arrays: dict[str, np.ndarray], src: RawSource, *, where: str) -> None:
    """Raise :class:`DatasetError` naming ``where`` if the arrays do not match ``src``.

    Checks that ``data`` is a finite float 2-D array of ``src.rows`` x ``src.cols`` and that a
    ``columns`` array, when present, has one name per column.
    """
    if "data" not in arrays:
        raise DatasetError(f"{where}: no 'data' array")
    data = arrays["data"]
    if data.ndim != 2 or data.shape[1] != src.cols:
        raise DatasetError(f"{where}: expected {src.cols} columns, got array of shape {data.shape}")
    if data.shape[0] != src.rows:
        raise DatasetError(f"{where}: expected {src.rows} rows, got {data.shape[0]}")
    if not np.issubdtype(data.dtype, np.floating):
        raise DatasetError(f"{where}: data must be floating point, got {data.dtype}")
    if not np.all(np.isfinite(data)):
        bad = int(np.count_nonzero(~np.isfinite(data)))
        raise DatasetError(f"{where}: {bad} NaN or infinite value(s) in data")
    columns = arrays.get("columns")
    if columns is not None and columns.shape != (src.cols,):
        raise DatasetError(f"{where}: expected {src.cols} column names, got shape {columns.shape}")


def write_npz(path: str | Path, arrays: dict[str, np.ndarray]) -> None:
    """Write ``arrays`` as a deterministic compressed ``.npz`` file, atomically."""
    path = Path(path)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            with zipfile.ZipFile(handle, "w", compression=zipfile.ZIP_DEFLATED) as archive:
                for name in sorted(arrays):
                    buffer = io.BytesIO()
                    np.lib.format.write_array(buffer, np.asarray(arrays[name]), allow_pickle=False)
                    info = zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_DATE)
                    info.compress_type = zipfile.ZIP_DEFLATED
                    info.external_attr = 0o644 << 16
                    archive.writestr(info, buffer.getvalue(), compresslevel=9)
        os.chmod(tmp_name, 0o644)
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def read_npz(path: str | Path) -> dict[str, np.ndarray]:
    """Read every array of a vendored ``.npz`` file (no pickles); errors name the file."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise DatasetError(f"{path}: cannot read vendored array file ({exc})") from exc
