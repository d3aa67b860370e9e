"""A checksum of a result file's content, written into the file and verified when it is read.

A cell or merged file truncated or altered after it was written may still open: HDF5 finds
nothing wrong with a flipped byte in a compressed chunk that still inflates, or with a file
whose modification time was set back. Each file bnnsweep writes therefore records, in the
global attribute ``content_sha256``, the SHA-256 of its content in a canonical form that does
not depend on how the file is encoded or read back (netCDF4 directly, or xarray):

- every variable (data and coordinate alike), in name order: its name, dimensions, shape,
  a type tag and its values: booleans as bytes, integers as little-endian int64,
  floating-point numbers little-endian at their own width with every NaN the same NaN,
  strings as UTF-8, each with its length (a missing string, which a file holds as empty,
  as the empty string);
- each variable's attributes, except those that only say how it is encoded
  (``_FillValue``, ``coordinates``, ``dtype``);
- the global attributes, except the checksum itself.

Attributes are hashed as JSON of their values made flat lists (netCDF returns a one-element
array attribute as a scalar, a Python int as numpy int64).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping

import numpy as np

CHECKSUM_ATTR = "content_sha256"
ENCODING_ATTRS = frozenset({"_FillValue", "coordinates", "dtype"})


def _attrs_json(attrs: Mapping, skip: Iterable[str]) -> bytes:
    skip = set(skip)
    flat = {
        str(key): np.asarray(value).ravel().tolist()
        for key, value in attrs.items()
        if key not in skip
    }
    return json.dumps(flat, sort_keys=True, default=str).encode()


def _text(item) -> str:
    """A string array's item; a missing one (None, NaN: an outer join's fill) is written and
    read back as the empty string."""
    if item is None or (isinstance(item, float) and item != item):
        return ""
    return str(item)


def _values_bytes(values: np.ndarray) -> tuple[bytes, bytes]:
    """(type tag, canonical bytes) of an array's values."""
    values = np.asarray(values)
    kind = values.dtype.kind
    if kind == "b":
        return b"b", values.astype(np.uint8).tobytes()
    if kind in "iu":
        return b"i", values.astype("<i8").tobytes()
    if kind == "f":
        canonical = values.astype(values.dtype.newbyteorder("<"))
        canonical = np.where(np.isnan(canonical), np.nan, canonical).astype(canonical.dtype)
        return f"f{canonical.dtype.itemsize}".encode(), canonical.tobytes()
    if kind in "UOS":
        parts = []
        for item in values.ravel():
            text = item.decode() if isinstance(item, bytes) else _text(item)
            encoded = text.encode()
            parts.append(len(encoded).to_bytes(8, "little") + encoded)
        return b"U", b"".join(parts)
    raise TypeError(f"cannot checksum values of type {values.dtype}")


def content_checksum(variables: Mapping[str, tuple], attrs: Mapping) -> str:
    """The hexadecimal SHA-256 of ``variables`` ({name: (dims, values, attrs)}) and the
    global ``attrs``, in the canonical form of the module docstring."""
    digest = hashlib.sha256()
    for name in sorted(variables):
        dims, values, var_attrs = variables[name]
        values = np.asarray(values)
        tag, data = _values_bytes(values)
        header = json.dumps([name, list(dims), list(values.shape)]).encode()
        for part in (header, tag, data, _attrs_json(var_attrs, ENCODING_ATTRS)):
            digest.update(len(part).to_bytes(8, "little"))
            digest.update(part)
    digest.update(_attrs_json(attrs, {CHECKSUM_ATTR}))
    return digest.hexdigest()


def dataset_variables(ds) -> dict[str, tuple]:
    """{name: (dims, values, attrs)} of an ``xr.Dataset``'s data variables and coordinates."""
    return {name: (var.dims, var.values, dict(var.attrs)) for name, var in ds.variables.items()}


def dataset_checksum(ds) -> str:
    """``content_checksum`` of an ``xr.Dataset`` (its data variables and coordinates)."""
    return content_checksum(dataset_variables(ds), ds.attrs)


def checksum_problem(recorded, computed: str) -> str | None:
    """Why a file whose attribute records ``recorded`` and whose content hashes to
    ``computed`` is not intact, or None when it is."""
    if recorded is None:
        return f"it records no {CHECKSUM_ATTR} (written by an older bnnsweep, or altered)"
    if str(recorded) != computed:
        return "its content does not match its checksum (altered or damaged after writing)"
    return None


# --- what a cell is: its key, sealed into its file -------------------------------------------

IDENTITY_ATTRS = ("cell_json", "settings_json", "method_name")
DATA_ATTR = "data_sha256"
NO_DATA = "0" * 64
NO_CODE = "0" * 16


def identity_digest(attrs: Mapping) -> str:
    """SHA-256 of what identifies a cell's computation: its cell (experiment apart), its
    settings and its registered method, as a cell file records them (``results.cell_content``)."""
    wanted = {name: str(attrs.get(name, "")) for name in IDENTITY_ATTRS}
    return hashlib.sha256(json.dumps(wanted, sort_keys=True).encode()).hexdigest()


def cell_key(attrs: Mapping) -> str:
    """A cell file's key (sealed after its bytes, ``file_seal``): ``C:``, its identity
    digest, the checksum of the prepared data it was fitted on (``datasets.store.checksum``)
    and the version of its method's code (``sweep.code_version``), separated by ``:``:
    what the workflow, ``bnnsweep check`` and ``bnnsweep fit-batch`` compare with what the
    config and code ask for (``result_check.cell_state``)."""
    data = str(attrs.get(DATA_ATTR) or NO_DATA)
    code = str(attrs.get("code_version") or NO_CODE)
    if len(data) != 64 or len(code) != 16:
        raise ValueError("a cell key needs a 64-digit data checksum and 16-digit code version")
    return f"C:{identity_digest(attrs)}:{data}:{code}"


def parse_cell_key(text: str | None) -> tuple[str, str, str] | None:
    """(identity digest, data checksum, code version) of a cell key, or None for anything
    else (no key, a prepared dataset's key)."""
    parts = (text or "").split(":")
    if len(parts) != 4 or parts[0] != "C":
        return None
    return parts[1], parts[2], parts[3]


# --- what a merged file was merged from: its key, sealed into its file -----------------------

MERGE_KEY_ATTR = "merge_key"


def merge_key(records: Iterable[tuple[str | None, str | None]]) -> str:
    """A merged file's key (sealed after its bytes, and its attribute ``merge_key``) from
    the (key, seal checksum) of every cell file merged (``file_seal.sealed_record``): ``M:``,
    the SHA-256 of their seals' checksums, that of their keys (each list sorted: the files'
    order does not matter) and their number (16 digits), separated by ``:``. A merged file
    whose key is not the one its experiment's cell files give now was not merged from
    them: damaged, replaced or left from before a refit (``result_check.merged_state``)."""
    records = list(records)

    def digest(items) -> str:
        return hashlib.sha256("\n".join(sorted(items)).encode()).hexdigest()

    seals = digest(seal or "" for _, seal in records)
    keys = digest(key or "" for key, _ in records)
    return f"M:{seals}:{keys}:{len(records):016d}"
