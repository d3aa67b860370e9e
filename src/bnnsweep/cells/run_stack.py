"""The runs of a merge stacked along ``run`` with numpy, as ``results.concat_runs`` stacks them.

``xr.concat`` of one small Dataset per cell costs about 2.5 ms per cell (building each
Dataset, aligning its indexes, reindexing every variable), a third of merging short cells
and most of the memory a merge of many cells holds. A merge usually needs none of its
generality: the runs share their dimension labels, or label a dimension with integers
0..n-1 (``results._run_variables`` gives every unlabelled dimension such labels) and differ
only in its length. ``stack_runs`` handles that case with one array per variable:

- a coordinate without ``run`` equal in every run is kept; integer labels 0..n-1 of
  different lengths become 0..N-1 for the longest, the outer join of the labels;
- a variable with ``run`` is stacked; where a run is shorter along a dimension, or lacks the
  variable, the rest holds the missing value of its type, promoted as xarray promotes it
  (``xarray.core.dtypes.maybe_promote``: integers become floating point, NaN).

Anything else (other labels that differ between runs, a variable whose dimensions, type or
attributes differ between runs, booleans that would need a missing value) is left to
``xr.concat`` (``stack_runs`` answers None). ``tests/test_run_stack.py`` checks that both give
identical Datasets, type for type.
"""

from __future__ import annotations

import numpy as np

Variable = tuple[tuple[str, ...], np.ndarray, dict]
"""(dimensions, values, attributes) of one variable."""


def _same(entries: list[Variable]) -> bool:
    """Whether variables have equal dimensions, type and attributes (values aside)."""
    dims, values, attrs = entries[0]
    return all(d == dims and v.dtype == values.dtype and a == attrs for d, v, a in entries[1:])


def _is_integer_range(values: np.ndarray) -> bool:
    return values.dtype.kind == "i" and np.array_equal(values, np.arange(len(values)))


def _static_coordinates(runs: list[tuple[dict, dict]]) -> dict[str, Variable] | None:
    """The coordinates without ``run``, joined over the runs (None: not a stacking case)."""
    named: dict[str, list[Variable]] = {}
    for _, coords in runs:
        for name, var in coords.items():
            if "run" not in var[0]:
                named.setdefault(name, []).append(var)
    joined = {}
    for name, entries in named.items():
        if not _same(entries):
            return None
        dims, first, attrs = entries[0]
        if all(np.array_equal(v, first) for _, v, _ in entries[1:]):
            joined[name] = entries[0]
        elif dims == (name,) and all(_is_integer_range(v) for _, v, _ in entries):
            longest = max(len(v) for _, v, _ in entries)
            joined[name] = (dims, np.arange(longest, dtype=first.dtype), attrs)
        else:
            return None
    return joined


def _stack(entries: list[Variable | None], sizes: dict[str, int]) -> Variable | None:
    """One variable with ``run`` over every run (None for a run without it)."""
    present = [e for e in entries if e is not None]
    if not _same(present):
        return None
    dims, values, attrs = present[0]
    if dims[0] != "run" or any(d not in sizes for d in dims[1:]):
        return None
    shape = (len(entries), *(sizes[d] for d in dims[1:]))
    full = all(e is not None and e[1].shape[1:] == shape[1:] for e in entries)
    if full:
        return dims, np.concatenate([e[1] for e in entries]), attrs
    if values.dtype.kind == "b":  # xarray fills booleans as objects: left to it
        return None
    from xarray.core.dtypes import maybe_promote

    dtype, fill = maybe_promote(values.dtype)
    out = np.full(shape, fill, dtype=dtype)
    for run, entry in enumerate(entries):
        if entry is not None:
            out[(slice(run, run + 1), *(slice(0, n) for n in entry[1].shape[1:]))] = entry[1]
    return dims, out, attrs


def stack_runs(runs: list[tuple[dict, dict]]):
    """``runs``, each (data variables, coordinates) of ``results._run_variables`` ({name:
    (dims, values, attrs)}, every variable with ``run`` of length 1 first), as one
    ``xr.Dataset`` along ``run``: ``results.concat_runs`` of their Datasets, or None where the
    runs need more of ``xr.concat`` than the module docstring's case."""
    import xarray as xr

    static = _static_coordinates(runs)
    if static is None:
        return None
    # every dimension of a run is labelled by a coordinate of its name (``_run_variables``)
    sizes = {name: len(values) for name, (dims, values, _) in static.items() if dims == (name,)}
    for dims, values, _ in static.values():
        if any(d not in sizes for d in dims) or values.shape != tuple(sizes[d] for d in dims):
            return None
    stacked: list[dict[str, Variable]] = [{}, {}]
    for kind in (0, 1):
        names = dict.fromkeys(n for run in runs for n, v in run[kind].items() if "run" in v[0])
        for name in names:
            var = _stack([run[kind].get(name) for run in runs], sizes)
            if var is None:
                return None
            stacked[kind][name] = var
    data, coords = stacked
    coords.update(static)
    if set(data) & set(coords):  # a name that is a coordinate in some runs only
        return None

    def variables(named):
        return {name: xr.Variable(*v, fastpath=True) for name, v in named.items()}

    return xr.Dataset(variables(data), coords=variables(coords))
