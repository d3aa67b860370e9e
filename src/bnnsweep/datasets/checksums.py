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


GIT_BLOB_SHA1 = "git-blob-sha1"
"""The SHA-1 git gives a file's content (its blob id: SHA-1 of ``blob <size>\\0`` and the
bytes), for data pinned by a repository's commit tree."""


def file_digest(path: str | Path, algorithm: str) -> str:
    """Hex digest of the file at ``path`` with ``hashlib`` algorithm ``algorithm``, or its git
    blob id when ``algorithm`` is :data:`GIT_BLOB_SHA1`."""
    if algorithm == GIT_BLOB_SHA1:
        digest = hashlib.sha1(usedforsecurity=False)
        digest.update(f"blob {Path(path).stat().st_size}\0".encode())
    else:
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
