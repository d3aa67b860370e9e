"""A checksum of a file's bytes, appended after its end, checked before the file is parsed.

A damaged HDF5 file can do worse than fail to open: a NetCDF cell with a few bytes changed
kept the HDF5 library in a loop for minutes (found by ``tests/test_cli_properties.py``), so
a damaged file must be recognised before any parser sees it. Every NetCDF file bnnsweep
writes (cells, merged files, prepared datasets) therefore ends with a seal: a NUL byte, the
tag ``BNNSWEEP-SHA256:`` and the hexadecimal SHA-256 of every byte before the seal. HDF5
and netCDF readers ignore bytes after the end of the HDF5 data, so the file reads as before.
A file changed in place (by an HDF5 editor, which rewrites its end) loses its seal or no
longer matches it.

A seal may carry a *key* just before it: ``\0BNNSWEEP-KEY:`` and a fixed-length ASCII text
(``KEY_LENGTH`` characters), covered by the seal's checksum. A cell's key says which cell it
is, on which data and by which code (``checksum.cell_key``); a prepared dataset's, the
checksum of its arrays; a merged file's, which cell files it was merged from
(``checksum.merge_key``: their keys and seals). Reading a key reads the file's last bytes only, so the workflow
knows what every cell file holds without a NetCDF parser.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

TAG = b"\0BNNSWEEP-SHA256:"
SEAL_SIZE = len(TAG) + 64
KEY_TAG = b"\0BNNSWEEP-KEY:"
KEY_LENGTH = 148
KEY_SIZE = len(KEY_TAG) + KEY_LENGTH
CHUNK = 1 << 20


def _digest(fh, length: int) -> str:
    digest = hashlib.sha256()
    left = length
    while left > 0:
        block = fh.read(min(CHUNK, left))
        if not block:
            break
        digest.update(block)
        left -= len(block)
    return digest.hexdigest()


def seal(path: str | os.PathLike, key: str | None = None) -> None:
    """Append ``key`` (if given: ``KEY_LENGTH`` printable ASCII characters) and then the seal
    of every byte before the seal to ``path``."""
    with open(path, "r+b") as fh:
        length = fh.seek(0, os.SEEK_END)
        if key is not None:
            encoded = key.encode("ascii")
            if len(encoded) != KEY_LENGTH or not encoded.isascii() or b"\0" in encoded:
                raise ValueError(f"a seal's key is {KEY_LENGTH} ASCII characters, got {key!r}")
            fh.write(KEY_TAG + encoded)
            length += KEY_SIZE
        fh.seek(0)
        hexdigest = _digest(fh, length)
        fh.seek(length)
        fh.write(TAG + hexdigest.encode())


def sealed_key(path: str | os.PathLike) -> str | None:
    """The key recorded before ``path``'s seal (``seal``), or None (no seal, no key, or no
    such file). Reads the file's last bytes only: whether the rest matches the seal is
    ``seal_problem``'s question."""
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            if size < SEAL_SIZE + KEY_SIZE:
                return None
            fh.seek(size - SEAL_SIZE - KEY_SIZE)
            tail = fh.read(SEAL_SIZE + KEY_SIZE)
    except OSError:
        return None
    if not (tail.startswith(KEY_TAG) and tail[KEY_SIZE:].startswith(TAG)):
        return None
    return tail[len(KEY_TAG) : KEY_SIZE].decode("ascii", "replace")


def sealed_record(path: str | os.PathLike) -> tuple[str | None, str | None]:
    """(key, checksum) that ``path``'s seal records (``sealed_key``; the hexadecimal
    SHA-256 after the tag), None for what it does not record. Reads the file's last bytes
    only: whether they match is ``seal_problem``'s question."""
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            if size < SEAL_SIZE:
                return None, None
            fh.seek(size - SEAL_SIZE)
            trailer = fh.read(SEAL_SIZE)
    except OSError:
        return None, None
    if not trailer.startswith(TAG):
        return None, None
    return sealed_key(path), trailer[len(TAG) :].decode("ascii", "replace")


def is_sealed(path: str | os.PathLike) -> bool:
    """Whether ``path`` ends with a seal (matching or not)."""
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            if size < SEAL_SIZE:
                return False
            fh.seek(size - SEAL_SIZE)
            return fh.read(len(TAG)) == TAG
    except OSError:
        return False


def seal_problem(path: str | os.PathLike) -> str | None:
    """Why the bytes of ``path`` are not those it was sealed with (no seal, or a seal they
    do not match), or None when they are. Reads the file; parses nothing."""
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            if size >= SEAL_SIZE:
                fh.seek(size - SEAL_SIZE)
                trailer = fh.read(SEAL_SIZE)
            else:
                trailer = b""
            if not trailer.startswith(TAG):
                return "it records no checksum (written by an older bnnsweep, or altered)"
            fh.seek(0)
            if _digest(fh, size - SEAL_SIZE) != trailer[len(TAG) :].decode("ascii", "replace"):
                return "its content does not match its checksum (altered or damaged after writing)"
    except OSError as err:
        return f"it cannot be read ({err})"
    return None
