"""Access to the vendored data files: manifest, checksum verification, download fallback.

The vendored files live in the package folder ``datasets/data/`` (or in
``$BNNSWEEP_VENDORED_DIR`` when set, which tests use to point at a modified copy). Each file
is checked once per process against the SHA-256 recorded in ``MANIFEST.json``. When a file
is missing, its raw source is downloaded with :func:`bnnsweep.datasets.download.fetch`
(checksum-verified, cached) and converted in memory the same way the vendoring script does.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import numpy as np

from .base import DatasetError
from .checksums import verify_sha256
from .convert import check_arrays, parse_raw, read_npz
from .download import fetch
from .sources import source

VENDORED_DIR_ENV = "BNNSWEEP_VENDORED_DIR"
MANIFEST_NAME = "MANIFEST.json"
MANIFEST_FORMAT = 1

_verified: set[tuple[str, int, int, str]] = set()


def vendored_dir() -> Path:
    """Folder holding the vendored files and their manifest."""
    configured = os.environ.get(VENDORED_DIR_ENV)
    if configured:
        return Path(configured).expanduser()
    return Path(__file__).resolve().parent / "data"


def read_manifest(directory: Path | None = None) -> dict:
    """The parsed ``MANIFEST.json`` of ``directory`` (default :func:`vendored_dir`)."""
    path = (directory or vendored_dir()) / MANIFEST_NAME
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DatasetError(
            f"{path} is missing; reinstall bnnsweep or run scripts/vendor_datasets.py"
        ) from None
    except (OSError, ValueError) as exc:
        raise DatasetError(f"{path}: cannot read manifest ({exc})") from exc
    if manifest.get("format") != MANIFEST_FORMAT or not isinstance(manifest.get("files"), dict):
        raise DatasetError(f"{path}: not a version-{MANIFEST_FORMAT} bnnsweep data manifest")
    return manifest


def _verify_once(path: Path, expected: str) -> None:
    """Check ``path`` against ``expected``, skipping files already verified unchanged."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns, expected)
    if key in _verified:
        return
    verify_sha256(path, expected, what=f"vendored file {path.name}")
    _verified.add(key)


def load_arrays(key: str) -> dict[str, np.ndarray]:
    """Arrays of the vendored file for raw source ``key`` (``data`` and maybe ``columns``).

    Verifies the file's checksum against the manifest and its shape and finiteness against
    :mod:`bnnsweep.datasets.sources`; every error names the file. Falls back to downloading
    the raw source when the vendored file is absent.
    """
    src = source(key)
    directory = vendored_dir()
    path = directory / src.vendored_name
    if not path.exists():
        return _load_from_download(key, path)
    entry = read_manifest(directory)["files"].get(src.vendored_name)
    if not isinstance(entry, dict) or "sha256" not in entry:
        raise DatasetError(
            f"vendored file {src.vendored_name} has no entry in {directory / MANIFEST_NAME}"
        )
    _verify_once(path, entry["sha256"])
    arrays = read_npz(path)
    check_arrays(arrays, src, where=f"vendored file {path}")
    return arrays


def _load_from_download(key: str, missing: Path) -> dict[str, np.ndarray]:
    src = source(key)
    warnings.warn(
        f"vendored file {missing} is missing; using the download cache for {src.url}",
        stacklevel=3,
    )
    raw = fetch(src.url, src.content_sha256, src.cache_name)
    return parse_raw(raw, src)
