"""SHA-256 helpers shared by the vendoring script, the vendored loaders and the downloader."""

from __future__ import annotations

import hashlib
from pathlib import Path

from .base import DatasetError

_CHUNK = 1 << 20


def sha256_bytes(data: bytes) -> str:
    """Hex SHA-256 digest of ``data``."""
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | Path) -> str:
    """Hex SHA-256 digest of the file at ``path``, read in chunks."""
    return file_digest(path, "sha256")


def file_digest(path: str | Path, algorithm: str) -> str:
    """Hex digest of the file at ``path`` with ``hashlib`` algorithm ``algorithm``."""
    digest = hashlib.new(algorithm)
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def verify_sha256(path: str | Path, expected: str, *, what: str | None = None) -> None:
    """Raise :class:`DatasetError` naming the file unless its SHA-256 equals ``expected``."""
    actual = sha256_file(path)
    if actual != expected.lower():
        label = what or str(path)
        raise DatasetError(
            f"checksum mismatch for {label} ({path}): expected sha256 {expected}, got {actual}"
        )
