"""Checksum-verified downloads into a local cache, for data whose vendored copy is missing.

The cache folder is ``$BNNSWEEP_DATA_DIR`` when set, else ``~/.cache/bnnsweep``. A file is
accepted only if its SHA-256 matches; a file already in the cache with the right checksum is
used without touching the network, so on a machine without network access a user can place
the file there by hand.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from .base import DatasetError
from .checksums import file_digest

DATA_DIR_ENV = "BNNSWEEP_DATA_DIR"


def cache_dir() -> Path:
    """The download cache folder (not created here)."""
    configured = os.environ.get(DATA_DIR_ENV)
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "bnnsweep"


def cache_path(dest: str | Path) -> Path:
    """Where ``fetch`` stores ``dest``: itself if absolute, else inside :func:`cache_dir`."""
    dest = Path(dest).expanduser()
    return dest if dest.is_absolute() else cache_dir() / dest


def fetch(
    url: str, sha256: str, dest: str | Path, *, timeout: float = 60.0, algorithm: str = "sha256"
) -> Path:
    """Return the local path of ``url``'s content, downloading it if needed.

    ``dest`` is a file name relative to the cache folder (or an absolute path). When the file
    is already there with SHA-256 ``sha256`` nothing is downloaded. Otherwise ``url`` is
    fetched with :mod:`urllib` into a temporary file next to the destination, checked, and
    moved into place. ``algorithm`` names another ``hashlib`` digest for sources that publish
    only that (the MNIST files' MD5 sums); ``sha256`` then holds that digest. Raises :class:`DatasetError` when the download fails (with the path
    and URL needed to supply the file by hand) or the checksum does not match.
    """
    target = cache_path(dest)
    expected = sha256.lower()
    stale = target.exists()
    if stale and file_digest(target, algorithm) == expected:
        return target
    manual = (
        f"Download {url} by other means and save it as {target} "
        f"(expected {algorithm} {expected}), or set {DATA_DIR_ENV} to a folder holding "
        f"{dest if not Path(dest).is_absolute() else target.name}."
    )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DatasetError(f"cannot create cache folder {target.parent} ({exc}). {manual}") from exc
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        try:
            with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:
                shutil.copyfileobj(resp, out)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            note = " (the file already there has a different checksum)" if stale else ""
            raise DatasetError(f"could not download {url} ({exc}){note}. {manual}") from exc
        actual = file_digest(tmp, algorithm)
        if actual != expected:
            raise DatasetError(
                f"checksum mismatch for download of {url}: expected {algorithm} {expected}, got "
                f"{actual}; nothing was saved to {target}. The source may have changed. {manual}"
            )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target
