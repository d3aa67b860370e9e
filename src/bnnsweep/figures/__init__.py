"""Figures and tables drawn from merged result files only.

>>> from bnnsweep.figures import draw
>>> draw("occam_hill", "results/exp/merged.nc", "figures/occam_hill.png")  # doctest: +SKIP

``palette()`` gives the colour the workflow draws each method in, for your own plots:

>>> import seaborn as sns  # doctest: +SKIP
>>> sns.lineplot(frame, x="hidden", y="test_rmse", hue="method", palette=palette())  # doctest: +SKIP

``FIGURES`` maps a kind to ``(function, suffix)``: the function takes the merged
``xarray.Dataset`` and returns a matplotlib ``Figure`` (suffix ``.png``) or a pandas
``DataFrame`` (suffix ``.md``; written as Markdown and CSV). Kinds:

``occam_hill``
    log evidence and test error against hidden units, per dataset (paper 001 figs. 2-3)
``evidence_vs_error``
    log evidence against test NMSE per mode/run, one facet per dataset (paper 000 fig. 2)
``evidence_committee``
    table: the unweighted committee of a laplace run's 1, 3 and 10 modes of largest log
    evidence, test error mean +- s.e. over runs, beside paper 000 Tables 1-2
``toy_regression``
    predictive mean, +-1 s.d. band, posterior function draws, targets and training data for
    one-input datasets (thesis fig. 5.3; paper 000 fig. 1)
``error_table``
    mean +- s.e. of test errors and log evidence per dataset/method/hidden, with published
    reference values, and beside them the paired differences (same split, seed, hidden) to
    the dataset's reference label, mean +- s.e. over pairs (figures/_paired.py)
``chaining_diagnostics``
    one chaining run per dataset link by link: phi(w) trace at lambda = 0.6, ln evidence ratio
    and HMC acceptance per link against lambda (paper 001 fig. 1)
``adf_uci_table``
    PBP beside EBP: test RMSE and log-likelihood per dataset, mean +- s.e. over splits,
    their paired per-split differences, with HL&A 2015's published PBP values (paper 004
    Fig. 2)
``adf_toy_classification``
    predictive class-1 probability maps of the two-class toy per method, with the pointwise
    KL from an ``hmc`` reference when present (paper 004 Fig. 2 top)
``adf_error_bars``
    test error and log-likelihood per dataset as bars per ADF method label, mean +- s.d.
    over splits, beside paper 004's printed summary (paper 004 Fig. 2 bottom (b)-(d))
``adf_expected_activations``
    paper 004 fig. 1: expected output of sign and rectified linear units against the mean of
    their Gaussian input, per input variance, with Monte Carlo dots (method
    ``adf_activations``)
``adf_epoch_error``
    test error against epoch for the ADF methods, mean +- s.e. over splits
``adf_samples_loglik``, ``adf_softmax_approximation``
    softmax PBP and EBP (paper 004 supplement figs. 3 and 2): training log-likelihood
    against the Monte Carlo samples S, mean +- s.d. over repeats; the log bound against
    the stochastic ln Z, averaged over algorithms and datasets (figures/adf_softmax.py)
``nrd_hidden_units``
    hidden units retained by NRD structure learning against the number of training cases,
    mean +- s.d. over draws (thesis fig. 6.17)
``ica_alpha``, ``ica_alpha_rounds``, ``ica_bound_trace``, ``ica_sources``
    variational Bayesian ICA (thesis figs. 6.9-6.14): log10 alpha per fitted source, its
    evolution over the outer rounds (fig. 6.10), the bound against update, true against
    recovered sources (figures/ica.py)
``chapter_one_checks``
    table: the exact examples of thesis ch. 1 (method ``ch1_checks``) beside the printed
    values
``bm_correlation_error``
    Boltzmann machines: pair-correlation errors of mean-field and mixture joints against
    enumeration, histograms and the mean sum of squares against M (thesis fig. 4.2)
``bm_galland_iterations``
    Boltzmann machines on Galland's 6-bit task: iterations to convergence per run and start,
    learning curves, beside the thesis' 98 iterations (fig. 4.4)
``bm_toy_learning``
    Boltzmann machines on the two-unit toy: KL(data || model), weight and biases against
    iteration for mean field, mixture and exact learning (figs. 4.5-4.6)
``bm_digits_cost``, ``bm_digits_joint_means``
    Boltzmann machines on 8x8 binary digits (stand-in data): F per pattern against
    iteration, and the joint's visible means per iteration and component with their mode
    hopping, mean field against a mixture of 10 (figs. 4.8-4.9)
``laplace_slices``, ``mixture_slices``
    thesis figs. 5.4-5.5 (method ``posterior_slices``): the log true posterior beside the
    log Laplace approximation along its covariance's eigenvectors, and beside the log
    variational mixture along the lines through pairs of component means, with the
    mutual-information bound against the thesis's 1.5229 / 1.5614
``mixture_components``
    table: what a variational mixture's components do (issue 34, thesis sec. 5.5.1): the
    bound's gain over its start, I*/ln M, each component's bound against the start, the
    spread of the components' predictions over the predictive s.d., the paired change of
    the test error against the diagonal Gaussian
``mixture_target``
    thesis fig. 5.6: a two-component diagonal mixture fitted by the mutual-information bound
    to a correlated Gaussian (method ``vi_mixture_target``), contours and KL per seed
``gaussian_fits``
    paper 002 fig. 1: the posterior of a two-weight network with its Laplace and minimum-KL
    (diagonal, full) Gaussian fits and their KL divergences (method ``gaussian_fits``)
``g2_approximation``
    thesis fig. C.1: g(x)^2 beside its approximation 1 - exp(-c x^2 / 2), c = 1.24, and the
    error magnified a hundredfold (method ``g2_approximation``)
``ltu_error_table``
    linear threshold units: average and best test-error counts over the grid, the
    validation-selected network and committee of 5, beside thesis Table 3.1 (and 3.2's note)
``ltu_error_vs_hidden``
    linear threshold units: test errors against hidden units per C (thesis figs. 3.6-3.7)
``sbn_error_histograms``, ``sbn_error_vs_components``, ``sbn_error_vs_span``, ``sbn_bars_loglik``
    sigmoid belief networks (thesis figs. 2.4-2.7): relative error of the mean-field,
    mixture and Markov-chain bounds over random nets, against M and against the weight
    span; exact log-likelihood of nets learned on the bars data against M
``sunspot_predictions``
    one-step-ahead predictions with +-1 s.d. error bars against the target series, per method
    (paper 000 fig. 3), with the published NMSE
``schedule_comparison``
    chaining log evidence (ratio, TI, AIS) and its s.e. against the number of links, per
    schedule family, one row per dataset and hidden size
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

import pandas as pd
import xarray as xr
from matplotlib.figure import Figure

from ..cells.checksum import CHECKSUM_ATTR
from ..cells.file_seal import seal_problem
from ..cells.reader import dataset_integrity_problem
from ..results import with_run_test_data
from ._common import FIGURE_SUFFIXES, method_palette, save_figure
from .adf_activations import adf_expected_activations
from .adf_classification import adf_epoch_error, adf_toy_classification
from .adf_error_bars import adf_error_bars
from .adf_softmax import adf_samples_loglik, adf_softmax_approximation
from .adf_uci_table import adf_uci_table
from .bm_correlation import bm_correlation_error
from .bm_digits import bm_digits_cost, bm_digits_joint_means
from .bm_learning import bm_galland_iterations, bm_toy_learning
from .chaining_diagnostics import chaining_diagnostics
from .error_table import error_table, write_table
from .error_table import to_markdown as error_table_markdown
from .evidence_committee import committee_markdown, evidence_committee
from .evidence_vs_error import evidence_vs_error
from .g2_approximation import g2_approximation
from .gaussian_fits import gaussian_fits
from .ica import ica_alpha, ica_alpha_rounds, ica_bound_trace, ica_sources
from .laplace_slices import laplace_slices
from .ltu import ltu_error_frame, ltu_error_table, ltu_error_vs_hidden, ltu_markdown
from .mixture_components import mixture_components
from .mixture_components import to_markdown as mixture_components_markdown
from .mixture_slices import mixture_slices
from .mixture_target import mixture_target
from .nrd_structure import nrd_hidden_units
from .occam_hill import occam_hill
from .sbn_figures import (
    sbn_bars_loglik,
    sbn_error_histograms,
    sbn_error_vs_components,
    sbn_error_vs_span,
)
from .schedule_comparison import schedule_comparison
from .sunspot_predictions import sunspot_predictions
from .thesis_ch1 import chapter_one_checks
from .thesis_ch1 import to_markdown as chapter_one_markdown
from .toy_regression import toy_regression

FIGURES: dict[str, tuple[Callable[[xr.Dataset], Figure | pd.DataFrame], str]] = {
    "occam_hill": (occam_hill, ".png"),
    "evidence_vs_error": (evidence_vs_error, ".png"),
    "toy_regression": (toy_regression, ".png"),
    "error_table": (error_table, ".md"),
    "evidence_committee": (evidence_committee, ".md"),
    "chaining_diagnostics": (chaining_diagnostics, ".png"),
    "schedule_comparison": (schedule_comparison, ".png"),
    "adf_uci_table": (adf_uci_table, ".png"),
    "adf_toy_classification": (adf_toy_classification, ".png"),
    "adf_epoch_error": (adf_epoch_error, ".png"),
    "adf_error_bars": (adf_error_bars, ".png"),
    "adf_samples_loglik": (adf_samples_loglik, ".png"),
    "adf_softmax_approximation": (adf_softmax_approximation, ".png"),
    "nrd_hidden_units": (nrd_hidden_units, ".png"),
    "ica_alpha": (ica_alpha, ".png"),
    "ica_alpha_rounds": (ica_alpha_rounds, ".png"),
    "ica_bound_trace": (ica_bound_trace, ".png"),
    "ica_sources": (ica_sources, ".png"),
    "chapter_one_checks": (chapter_one_checks, ".md"),
    "bm_correlation_error": (bm_correlation_error, ".png"),
    "bm_galland_iterations": (bm_galland_iterations, ".png"),
    "bm_toy_learning": (bm_toy_learning, ".png"),
    "bm_digits_cost": (bm_digits_cost, ".png"),
    "bm_digits_joint_means": (bm_digits_joint_means, ".png"),
    "ltu_error_table": (ltu_error_table, ".png"),
    "ltu_error_vs_hidden": (ltu_error_vs_hidden, ".png"),
    "ltu_error_counts": (ltu_error_frame, ".md"),
    "sbn_error_histograms": (sbn_error_histograms, ".png"),
    "sbn_error_vs_components": (sbn_error_vs_components, ".png"),
    "sbn_error_vs_span": (sbn_error_vs_span, ".png"),
    "sbn_bars_loglik": (sbn_bars_loglik, ".png"),
    "sunspot_predictions": (sunspot_predictions, ".png"),
    "mixture_target": (mixture_target, ".png"),
    "mixture_components": (mixture_components, ".md"),
    "laplace_slices": (laplace_slices, ".png"),
    "mixture_slices": (mixture_slices, ".png"),
    "gaussian_fits": (gaussian_fits, ".png"),
    "adf_expected_activations": (adf_expected_activations, ".png"),
    "g2_approximation": (g2_approximation, ".png"),
}

MARKDOWN = {
    "chapter_one_checks": chapter_one_markdown,
    "evidence_committee": committee_markdown,
    "ltu_error_counts": ltu_markdown,
    "mixture_components": mixture_components_markdown,
}
"""The Markdown writer of a table kind other than ``error_table``."""

__all__ = [
    "FIGURES",
    "adf_epoch_error",
    "adf_error_bars",
    "adf_expected_activations",
    "adf_samples_loglik",
    "adf_softmax_approximation",
    "adf_toy_classification",
    "adf_uci_table",
    "bm_correlation_error",
    "bm_digits_cost",
    "bm_digits_joint_means",
    "bm_galland_iterations",
    "bm_toy_learning",
    "chaining_diagnostics",
    "draw",
    "error_table",
    "evidence_committee",
    "evidence_vs_error",
    "g2_approximation",
    "gaussian_fits",
    "ica_alpha",
    "ica_alpha_rounds",
    "ica_bound_trace",
    "ica_sources",
    "laplace_slices",
    "load_merged",
    "method_palette",
    "mixture_components",
    "mixture_slices",
    "mixture_target",
    "nrd_hidden_units",
    "palette",
    "occam_hill",
    "sbn_bars_loglik",
    "sbn_error_histograms",
    "sbn_error_vs_components",
    "sbn_error_vs_span",
    "schedule_comparison",
    "chapter_one_checks",
    "sunspot_predictions",
    "toy_regression",
    "write_table",
]


def palette(methods: Iterable[str] | None = None) -> dict[str, tuple[float, float, float]]:
    """The colour (RGB in [0, 1]) the workflow's figures draw each method label in: every
    registered method when ``methods`` is None, else the labels given (a config's own labels,
    such as ``laplace_paper``, take spare colours in sorted order, as in the figures drawn
    from a merged file holding the same labels). Pass it as seaborn's ``palette=``; colour-
    blind safe (``_common.METHOD_COLOURS``)."""
    if methods is None:
        from ..methods import names

        methods = names()
    return method_palette(methods)


def load_merged(path: str | os.PathLike) -> xr.Dataset:
    """Read a merged NetCDF file fully into memory and close it; an unreadable one, or one
    whose bytes do not match the checksum they end with (``file_seal``), or that has none
    (written by an older bnnsweep: the workflow merges again), is a ValueError naming it."""
    if Path(path).is_file() and (why := seal_problem(path)) is not None:
        raise ValueError(f"{path} is corrupt or outdated: {why}; merge its cells again")
    try:
        with xr.open_dataset(path, engine="netcdf4") as ds:
            ds = ds.load()
    except FileNotFoundError:
        raise
    except (OSError, ValueError, RuntimeError) as err:
        raise ValueError(f"{path} is not a readable merged file ({err})") from None
    if CHECKSUM_ATTR in ds.attrs and (why := dataset_integrity_problem(ds)) is not None:
        raise ValueError(f"{path} is corrupt: {why}; merge its cells again")
    return ds


def _output_path(kind: str, suffix: str, output_path) -> Path:
    path = Path(output_path)
    allowed = (".md", ".csv") if suffix == ".md" else FIGURE_SUFFIXES
    if path.suffix == "":
        return path.with_suffix(suffix)
    if path.suffix.lower() not in allowed:
        raise ValueError(
            f"{kind!r} writes {' and '.join(allowed)} files; output {str(path)!r} has suffix "
            f"{path.suffix!r}"
        )
    return path


def draw(kind: str, merged_path: str | os.PathLike | xr.Dataset, output_path) -> list[Path]:
    """Draw figure or table ``kind`` from the merged file ``merged_path`` (or an already
    loaded Dataset) into ``output_path``; return the paths written.

    Figures are PNG at 150 dpi, or PDF or SVG when ``output_path`` ends so. Tables write ``<stem>.md`` and ``<stem>.csv``. A missing
    suffix gets the kind's own. Raises ``ValueError`` for an unknown kind (listing the valid
    ones) or a suffix that does not fit the kind.
    """
    if kind not in FIGURES:
        raise ValueError(f"unknown figure kind {kind!r}; valid kinds: {', '.join(FIGURES)}")
    function, suffix = FIGURES[kind]
    path = _output_path(kind, suffix, output_path)
    ds = merged_path if isinstance(merged_path, xr.Dataset) else load_merged(merged_path)
    result = function(with_run_test_data(ds))
    if isinstance(result, pd.DataFrame):
        return write_table(result, path, MARKDOWN.get(kind, error_table_markdown))
    path.parent.mkdir(parents=True, exist_ok=True)
    save_figure(result, path)
    return [path]
