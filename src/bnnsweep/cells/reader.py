"""Read a cell file into memory fast: netCDF4 directly, decoded as ``xr.open_dataset`` does.

``bnnsweep merge`` reads every cell of an experiment; through ``xr.open_dataset`` each file
cost about 45 ms (lazy backend arrays, the file manager, a CF decoding pass per variable),
most of a merge of short cells. The cells are written by ``results.write_netcdf_atomic`` in
a small subset of the CF encodings, which this module decodes itself:

- floating-point variables with ``_FillValue`` NaN (left as they are: the fill is NaN);
- integer variables without a fill value;
- booleans stored as int8 with the attribute ``dtype: bool``;
- variable-length strings, decoded to fixed-width unicode as xarray does;
- the ``coordinates`` attribute and dimension-named variables as coordinates.

A file holding anything else (another fill value, scale/offset, times, char arrays, groups,
an empty string array) is read by ``xr.open_dataset`` instead, so the result is the same
Dataset either way (``tests/test_cell_reader.py`` checks ``identical`` on every method's
cells).
"""

from __future__ import annotations

import netCDF4
import numpy as np

from .checksum import (
    CHECKSUM_ATTR,
    checksum_problem,
    content_checksum,
    dataset_checksum,
    dataset_variables,
)
from .file_seal import seal_problem

# units that xarray's CF decoding turns into datetimes or timedeltas
_TIME_UNITS = {"days", "hours", "minutes", "seconds", "milliseconds", "microseconds"}
_TIME_UNITS |= {"nanoseconds", "day", "hour", "minute", "second"}
_PLAIN_ATTRS = {"long_name", "units", "coordinates", "_FillValue", "dtype"}


class _NotPlain(Exception):
    """The file uses an encoding this reader does not decode itself."""


def _decode(var: netCDF4.Variable) -> tuple[np.ndarray, dict, list[str]]:
    """(decoded values, attributes left on the variable, coordinate names it lists)."""
    attrs = {name: var.getncattr(name) for name in var.ncattrs()}
    if set(attrs) - _PLAIN_ATTRS:
        raise _NotPlain
    units = attrs.get("units")
    if isinstance(units, str) and (" since " in units or units.strip() in _TIME_UNITS):
        raise _NotPlain
    raw = var[...]
    if var.dtype is str:
        values = np.asarray(raw, dtype=object)
        if values.size == 0:
            raise _NotPlain
        values = values.astype(str)
    else:
        values = np.asarray(raw)
        kind = values.dtype.kind
        fill = attrs.pop("_FillValue", None)
        if fill is not None and not (kind == "f" and np.isnan(fill)):
            raise _NotPlain
        if attrs.get("dtype") == "bool":
            if kind not in "iu":
                raise _NotPlain
            values = values.astype(bool)
            del attrs["dtype"]
        elif "dtype" in attrs or kind not in "fiub":
            raise _NotPlain
    coords = attrs.pop("coordinates", "")
    return values, attrs, coords.split() if isinstance(coords, str) else []


def read_variables(path) -> tuple[dict, set, dict]:
    """({name: (dims, values, attrs)}, coordinate names, global attributes) of a file in the
    plain encoding of the module docstring, through netCDF4 alone (no xarray: a fit job
    checks its cells with it); ``_NotPlain`` for any other file."""
    with netCDF4.Dataset(path) as nc:
        if nc.groups or nc.data_model != "NETCDF4":
            raise _NotPlain
        nc.set_auto_maskandscale(False)
        nc.set_auto_chartostring(False)
        variables, coord_names = {}, set()
        for name, var in nc.variables.items():
            values, attrs, listed = _decode(var)
            variables[name] = (var.dimensions, values, attrs)
            coord_names.update(listed)
            if var.dimensions == (name,):
                coord_names.add(name)
        attrs = {name: nc.getncattr(name) for name in nc.ncattrs()}
    if not coord_names <= set(variables):
        raise _NotPlain
    return variables, coord_names, attrs


def plain_dataset(variables: dict, coord_names: set, attrs: dict):
    """The ``xr.Dataset`` of ``read_variables``' answer."""
    import xarray as xr

    variables = {name: xr.Variable(*v) for name, v in variables.items()}
    coords = {name: variables.pop(name) for name in list(variables) if name in coord_names}
    return xr.Dataset(variables, coords=coords, attrs=attrs)


def _read_with_xarray(path):
    import xarray as xr

    with xr.open_dataset(path, engine="netcdf4") as ds:
        return ds.load()


def read_cell(path):
    """The whole content of the NetCDF file ``path``, loaded into memory, as an
    ``xr.Dataset`` equal to ``xr.open_dataset(path, engine="netcdf4").load()`` (without its
    encodings)."""
    try:
        return plain_dataset(*read_variables(path))
    except _NotPlain:
        return _read_with_xarray(path)


def read_any(path) -> tuple[dict, set, dict]:
    """``read_variables`` of any NetCDF file: one in an encoding this module does not decode
    is read by xarray and given in the same form (what ``read_cell`` holds, without an
    ``xr.Dataset`` for each of a merge's many cells)."""
    try:
        return read_variables(path)
    except _NotPlain:
        ds = _read_with_xarray(path)
        return dataset_variables(ds), set(ds.coords), dict(ds.attrs)


def integrity_problem(path) -> str | None:
    """Why the file ``path`` is not an intact file written by bnnsweep (unreadable, without
    its checksum, or content that does not match it), or None when it is. A cell is read
    through netCDF4 alone (a fit job checks its cells without importing xarray); a file in
    an encoding cells do not use, through xarray."""
    if (why := seal_problem(path)) is not None:  # before any parser sees damaged bytes
        return why
    try:
        try:
            variables, _, attrs = read_variables(path)
        except _NotPlain:  # a merged file written through xarray, say
            return dataset_integrity_problem(read_cell(path))
    except Exception as err:  # a damaged file fails in any of netCDF4's ways
        return f"it cannot be read ({err})"
    return content_problem(variables, attrs)


def content_problem(variables: dict, attrs: dict) -> str | None:
    """``integrity_problem`` of a file already read (``read_variables``, ``read_any``)."""
    return checksum_problem(attrs.get(CHECKSUM_ATTR), content_checksum(variables, attrs))


def dataset_integrity_problem(ds) -> str | None:
    """``integrity_problem`` of a file already read into the ``xr.Dataset`` ``ds``."""
    return checksum_problem(ds.attrs.get(CHECKSUM_ATTR), dataset_checksum(ds))
