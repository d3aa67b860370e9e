"""Helpers shared by the figure modules: tidy frames from a merged file, colours, styling.

Figures are drawn on standalone :class:`matplotlib.figure.Figure` objects with an Agg canvas,
so nothing here touches pyplot's global state or the interactive backend of the caller.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterable, Iterator
from functools import lru_cache
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import xarray as xr
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ..cells.atomic_file import write_atomic
from ..sweeps.axes import NOT_APPLICABLE
from . import theme

RUN_COLUMNS = ("experiment", "dataset", "split", "method", "seed", *NOT_APPLICABLE)
MEMBER_DIMS = ("mode", "component")
"""Dimensions of the parts of a method's answer (Laplace modes, mixture components)."""

NOISY_TEST_TARGETS = frozenset({"robot_arm"})
"""Datasets whose test targets carry the generating noise, so that test MSE / noise variance
has the theoretical minimum 1. Used when the dataset metadata lack ``test_targets_noisy``."""

DPI = 150


# --------------------------------------------------------------------------- styling


@contextlib.contextmanager
def style() -> Iterator[None]:
    """Seaborn's whitegrid theme (``theme.rc``) for axes created inside the block (no global
    change)."""
    with matplotlib.rc_context(theme.rc()):
        yield


def new_figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig


def note_figure(text: str, title: str = "") -> Figure:
    """A small figure that only says why there is nothing to draw."""
    with style():
        fig = new_figure(6.0, 2.5)
        ax = fig.add_subplot()
        ax.set_axis_off()
        ax.text(0.5, 0.5, text, ha="center", va="center", wrap=True, transform=ax.transAxes)
        if title:
            ax.set_title(title)
    return fig


def note(ax, text: str) -> None:
    ax.text(
        0.5,
        0.5,
        text,
        ha="center",
        va="center",
        transform=ax.transAxes,
        color="0.35",
        fontsize="small",
        wrap=True,
    )


def outside_legend(ax, handles, title: str | None = None) -> None:
    """A small legend to the right of ``ax``, outside the plotting area."""
    ax.legend(
        handles=handles,
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
        fontsize="small",
        title=title,
        title_fontsize="small",
    )


METHOD_COLOURS = {
    # the network methods drawn together (occam_hill, evidence_vs_error, toy_regression,
    # sunspot_predictions): Okabe & Ito's colour-blind-safe set without its yellow
    "laplace": "#0072B2",  # blue
    "map": "#D55E00",  # vermillion
    "hmc": "#000000",  # black: the sampling reference
    "vi_gauss": "#009E73",  # bluish green
    "vi_mixture": "#CC79A7",  # reddish purple
    "chaining": "#E69F00",  # orange
    # the ADF comparison (paper 004): sky blue, Tol's purple, olive and indigo
    "pbp": "#56B4E9",
    "ebp": "#AA4499",
    "relu_map": "#999933",
    "relu_hmc": "#332288",
    # the thesis's other models, rarely two in one figure: Tol's muted colours
    "bm_vi": "#117733",
    "exact": "#44AA99",
    "sbn_vi": "#882255",
    "ltu": "#CC6677",
    "vb_ica": "#661100",
    "ch1_checks": "#777777",
    # methods of one figure each (thesis figs. 1.x, 5.4-5.6, app. C; papers 002, 004): Tol's
    # bright and vibrant colours, named here so that they leave every spare colour to a
    # config's own labels
    "least_squares": "#4477AA",
    "posterior_slices": "#228833",
    "vi_mixture_target": "#AA3377",
    "gaussian_fits": "#EE6677",
    "adf_activations": "#0077BB",
    "g2_approximation": "#009988",
}
"""A registered method's own colour, the same in every figure (hex RGB). Chosen to stay apart
under simulated protanopia, deuteranopia and tritanopia within each group drawn together and
to stand out on white (WCAG contrast >= 2); ``tests/test_palette.py`` checks both. A method
registered later and not named here takes a spare colour."""

SPARE_COLOURS = ("#7900F2", "#592D00", "#002080", "#492D59", "#802038", "#C579F2")
"""Colours for labels that are not registered method names (``laplace_paper``,
``vi_gauss_full``, ``bm_mixture``), in this order over the sorted labels: violet, dark brown,
navy, aubergine, wine, lilac, each in turn the colour of an HSV grid (contrast on white
>= 2.2) farthest, under every simulated colour vision, from the six network methods' and
the spare colours before it. Beyond them, husl colours far from every colour given
(``_farthest_colours``)."""


def _rgb(hex_colour: str) -> tuple[float, float, float]:
    value = hex_colour.lstrip("#")
    return tuple(int(value[i : i + 2], 16) / 255.0 for i in (0, 2, 4))


@lru_cache(maxsize=1)
def _fixed_colours() -> tuple[dict[str, tuple[float, float, float]], list]:
    """Every registered method's own colour (``METHOD_COLOURS``; a method missing there takes
    the first spare colour in sorted order) and the spare colours left over."""
    from ..methods import names

    spare = [_rgb(c) for c in SPARE_COLOURS]
    fixed = {}
    for name in names():
        fixed[name] = _rgb(METHOD_COLOURS[name]) if name in METHOD_COLOURS else spare.pop(0)
    return fixed, spare


def colour_distance(a, b) -> float:
    """Perceived distance of two RGB colours in [0, 1]^3: the "redmean" weighted Euclidean
    distance (Riemersma's low-cost approximation of a perceptual colour difference)."""
    rbar = 0.5 * (a[0] + b[0])
    dr, dg, db = a[0] - b[0], a[1] - b[1], a[2] - b[2]
    return float(np.sqrt((2 + rbar) * dr * dr + 4 * dg * dg + (3 - rbar) * db * db))


def _farthest_colours(n: int, taken: list) -> list:
    """``n`` colours from 36 husl hues at two lightnesses (seaborn's, and its RGB times 0.6),
    each in turn the candidate farthest (``colour_distance``) from every colour already taken,
    so that no extra label lands next to a method's own."""
    husl = theme.palette("husl")
    candidates = husl + [tuple(0.6 * c for c in rgb) for rgb in husl]
    chosen: list = []
    for _ in range(n):
        used = list(taken) + chosen
        best = max(candidates, key=lambda c: min(colour_distance(c, u) for u in used))
        candidates.remove(best)
        chosen.append(best)
    return chosen


def method_palette(methods: Iterable[str]) -> dict[str, tuple[float, float, float]]:
    """One colour per method label, the same in every figure of every experiment: a label that
    is a registered method's name always gets that method's colour (``laplace`` is the same
    colour wherever it is drawn); other labels (``vi_gauss_full``, a config's own names) take
    the colours no registered method holds, in sorted order, then husl colours chosen as far
    as possible from every colour already given (``_farthest_colours``)."""
    fixed, spare = _fixed_colours()
    labels = sorted({str(m) for m in methods})
    others = [m for m in labels if m not in fixed]
    extra = list(spare[: len(others)])
    extra += _farthest_colours(len(others) - len(extra), list(fixed.values()) + extra)
    palette = {m: fixed[m] for m in labels if m in fixed}
    palette.update(zip(others, extra, strict=True))
    return palette


def run_palette(ds: xr.Dataset) -> dict[str, tuple[float, float, float]]:
    """``method_palette`` over every method label of the merged file ``ds``: a label keeps its
    colour in every figure drawn from the file, whichever runs a figure leaves out (diverged
    runs, other tasks or datasets). A palette of a subset would shift the colours of labels
    that are not registered method names, which take the spare colours in sorted order of
    the labels present."""
    labels = ds["method"].values if "method" in ds.variables else np.array([], dtype=object)
    return method_palette(str(m) for m in np.ravel(labels))


FIGURE_SUFFIXES = (".png", ".pdf", ".svg")


def save_figure(fig: Figure, path) -> None:
    """Save ``fig`` as PNG (``DPI``), PDF or SVG, as the path's suffix says, whole or not at
    all (``atomic_file.write_atomic``)."""
    fig.tight_layout()
    kind = Path(path).suffix.lower().lstrip(".") or "png"
    write_atomic(path, lambda tmp: fig.savefig(tmp, dpi=DPI, format=kind, bbox_inches="tight"))
    fig.clear()


# --------------------------------------------------------------------------- dataset metadata


@lru_cache(maxsize=64)
def _describe(name: str) -> dict:
    from .. import datasets

    try:
        return datasets.describe(name)
    except Exception:  # unregistered name (e.g. synthetic test data): no metadata
        return {}


def dataset_meta(name: str) -> dict:
    return dict(_describe(str(name)))


def noise_sd(name: str) -> float | None:
    value = _describe(str(name)).get("noise_sd")
    return None if value is None else float(value)


def test_targets_noisy(name: str) -> bool:
    meta = _describe(str(name))
    if "test_targets_noisy" in meta:
        return bool(meta["test_targets_noisy"])
    return str(name) in NOISY_TEST_TARGETS


# --------------------------------------------------------------------------- tidy frames


def _strings(values: np.ndarray) -> np.ndarray:
    return np.array([str(v) for v in values], dtype=object)


def runs_frame(ds: xr.Dataset) -> pd.DataFrame:
    """One row per run: the run coordinates and every scalar (run-only) variable.

    ``run`` holds the position along the merged file's ``run`` dimension.
    """
    n = ds.sizes.get("run", 0)
    columns: dict[str, np.ndarray] = {"run": np.arange(n)}
    for name, var in [*ds.coords.items(), *ds.data_vars.items()]:
        if var.dims != ("run",):
            continue
        values = var.values
        columns[str(name)] = _strings(values) if values.dtype.kind in "USO" else values
    frame = pd.DataFrame(columns)
    for col in ("dataset", "split", "method", "status", "log_evidence_kind"):
        if col not in frame:
            frame[col] = "ok" if col == "status" else ""
    for col, na in {"seed": -1, **NOT_APPLICABLE}.items():
        if col not in frame:
            frame[col] = na
    for col in ("log_evidence", "log_evidence_se", "test_rmse", "test_mse", "test_nmse"):
        if col not in frame:
            frame[col] = np.nan
    frame["nmse_scale"] = _nmse_scale(ds, frame)
    return frame


def _nmse_scale(ds: xr.Dataset, frame: pd.DataFrame) -> np.ndarray:
    """Per run, the divisor that turns test MSE into NMSE (mean over outputs of the variance of
    the test targets), taken from ``test_mse / test_nmse`` or else from ``y_test``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = frame["test_mse"].to_numpy(float) / frame["test_nmse"].to_numpy(float)
    if "y_test" in ds and ds["y_test"].dims[0] == "run" and ds["y_test"].size > 0:
        y = ds["y_test"].transpose("run", "test_point", ...).values
        y = y.reshape(y.shape[0], y.shape[1], -1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            fallback = np.nanmean(np.nanvar(y, axis=1), axis=1)
        scale = np.where(np.isfinite(scale) & (scale > 0), scale, fallback)
    return scale


def member_dims(ds: xr.Dataset) -> list[str]:
    """Member dimensions that carry per-member test errors in ``ds``."""
    return [
        dim
        for dim in MEMBER_DIMS
        if f"{dim}_test_mse" in ds and ds[f"{dim}_test_mse"].dims == ("run", dim)
    ]


def members_frame(ds: xr.Dataset, runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per member (mode/component) with a finite test error.

    Columns: the run columns, ``level`` (the member dimension), ``member`` (its index),
    ``member_log_evidence`` (NaN when the member has none), ``counted`` (whether the member
    enters the run's evidence: ``{dim}_distinct`` when present, otherwise a finite evidence),
    ``member_test_mse``, ``member_test_rmse`` and ``member_test_nmse``.
    """
    runs = runs_frame(ds) if runs is None else runs
    parts = []
    for dim in member_dims(ds):
        mse = ds[f"{dim}_test_mse"].transpose("run", dim).values.astype(float)
        rmse_name = f"{dim}_test_rmse"
        rmse = (
            ds[rmse_name].transpose("run", dim).values.astype(float)
            if rmse_name in ds
            else np.sqrt(mse)
        )
        ev_name = f"{dim}_log_evidence"
        evidence = (
            ds[ev_name].transpose("run", dim).values.astype(float)
            if ev_name in ds
            else np.full_like(mse, np.nan)
        )
        distinct_name = f"{dim}_distinct"
        if distinct_name in ds:
            flags = ds[distinct_name].transpose("run", dim).values.astype(float)
            counted = np.nan_to_num(flags, nan=0.0) > 0.5
        else:
            counted = np.isfinite(evidence)
        run_idx, member_idx = np.nonzero(np.isfinite(mse))
        if run_idx.size == 0:
            continue
        part = runs.iloc[run_idx].reset_index(drop=True).copy()
        part["level"] = dim
        part["member"] = member_idx
        part["member_log_evidence"] = evidence[run_idx, member_idx]
        part["counted"] = counted[run_idx, member_idx] & np.isfinite(part["member_log_evidence"])
        part["member_test_mse"] = mse[run_idx, member_idx]
        part["member_test_rmse"] = rmse[run_idx, member_idx]
        part["member_test_nmse"] = part["member_test_mse"] / part["nmse_scale"]
        parts.append(part)
    if not parts:
        empty = runs.iloc[:0].copy()
        empty["level"] = pd.Series(dtype=object)
        empty["member"] = pd.Series(dtype=np.int64)
        empty["member_log_evidence"] = pd.Series(dtype=float)
        empty["counted"] = pd.Series(dtype=bool)
        for col in ("member_test_mse", "member_test_rmse", "member_test_nmse"):
            empty[col] = pd.Series(dtype=float)
        return empty
    return pd.concat(parts, ignore_index=True)


def usable(runs: pd.DataFrame) -> pd.DataFrame:
    """Runs whose numbers mean something: everything except ``diverged``."""
    return runs[runs["status"] != "diverged"]


def mean_se(values) -> tuple[float, float, int]:
    """Mean, standard error (sample s.d. / sqrt(n); NaN for n < 2) and n of finite values."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    n = int(x.size)
    if n == 0:
        return np.nan, np.nan, 0
    se = float(np.std(x, ddof=1) / np.sqrt(n)) if n > 1 else np.nan
    return float(np.mean(x)), se, n


def test_error(dataset: str) -> tuple[str, str, float | None]:
    """(column, axis label, divisor) of the headline test error for ``dataset``: MSE / noise
    variance when the noise level is known, else RMSE."""
    sd = noise_sd(dataset)
    if sd is not None and sd > 0:
        return "test_mse", f"test MSE / noise variance (σ = {sd:g}; unitless)", sd**2
    return "test_rmse", "test RMSE (target units)", None


def dodge(methods: list[str], spacing: float) -> dict[str, float]:
    """Small horizontal offsets so that methods at one x do not hide each other."""
    if len(methods) <= 1:
        return dict.fromkeys(methods, 0.0)
    width = 0.25 * spacing
    offsets = np.linspace(-width / 2, width / 2, len(methods))
    return dict(zip(methods, offsets, strict=True))
