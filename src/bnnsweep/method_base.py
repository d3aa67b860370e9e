"""What every inference method shares: the FitResult it returns and typed, validated settings."""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass, field
from typing import Any, get_type_hints

import numpy as np

STATUSES = ("ok", "diverged", "not_converged")
SEVERITY = {"ok": 0, "not_converged": 1, "diverged": 2}
EVIDENCE_KINDS = ("none", "lower_bound", "laplace", "chain", "exact", "approximation")
"""How ``log_evidence`` was obtained; ``approximation`` is an estimate that is neither a bound
nor exact (a Boltzmann machine's mean-field F = L+ - L-, thesis eqs. 4.12-4.15)."""
LIKELIHOODS = ("gaussian", "probit", "softmax", "poisson", "gaussian_rounded", "none")
"""``gaussian_rounded``: counts predicted by a rounded Gaussian (paper 004's baseline), scored as
counts. ``none``: a method whose answer is not a prediction at test points (an ensemble of random
networks, a density over binary patterns, thesis chs. 2-4 and 6.5); its predictions are
empty, shape (0, P), and its numbers are in ``traces`` and ``diagnostics``."""


FUNCTION_SAMPLES = 10
"""How many posterior function draws a method records in ``FitResult.function_samples``."""


def evenly_spaced(n_available: int, n: int = FUNCTION_SAMPLES) -> np.ndarray:
    """Indices of ``min(n, n_available)`` evenly spaced items of ``n_available``."""
    return np.linspace(0, n_available - 1, min(n, n_available)).astype(int)


class SettingsError(ValueError):
    """A method setting that does not exist, has the wrong type or an invalid value."""


@dataclass
class FitResult:
    """What a method computed for one cell, in the (possibly standardised) units it was fit in.

    Predictions ``pred_mean``, ``pred_var`` are over the split's test points, shape (T, P);
    ``train_mean``/``train_var`` over the training points give ``train_loglik``. ``members`` optionally holds predictions
    of the parts of a method's answer (``mode`` for Laplace, ``component`` for mixtures) as
    ``dim -> (mean (M, T, P), var (M, T, P))``. ``traces`` maps a name to ``(dims, array)``;
    ``diagnostics`` holds scalars. Metrics in original units are derived from these by
    ``bnnsweep.results`` so that every method is scored by the same code.
    """

    pred_mean: np.ndarray
    pred_var: np.ndarray
    train_mean: np.ndarray | None = None
    train_var: np.ndarray | None = None
    log_evidence: float = float("nan")
    log_evidence_se: float = float("nan")
    log_evidence_kind: str = "none"
    members: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    traces: dict[str, tuple[tuple[str, ...], np.ndarray]] = field(default_factory=dict)
    coords: dict[str, np.ndarray] = field(default_factory=dict)
    diagnostics: dict[str, Any] = field(default_factory=dict)
    n_grad_evals: int = 0
    status: str = "ok"
    status_message: str = ""
    runtime_s: float = float("nan")
    # non-Gaussian likelihoods (ADF methods): class probabilities (T, C) for probit/softmax,
    # per-point log predictive probabilities of the test/train targets for scoring
    likelihood: str = "gaussian"
    class_probs: np.ndarray | None = None
    test_logpred: np.ndarray | None = None
    train_logpred: np.ndarray | None = None
    # network outputs f(x_test; w_s) for a few draws w_s from the posterior (or q), (S, T, P),
    # drawn as thin lines by the toy figures (thesis fig. 5.3)
    function_samples: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")
        if self.log_evidence_kind not in EVIDENCE_KINDS:
            raise ValueError(f"log_evidence_kind must be one of {EVIDENCE_KINDS}")
        if self.likelihood not in LIKELIHOODS:
            raise ValueError(f"likelihood must be one of {LIKELIHOODS}, got {self.likelihood!r}")

    def flag(self, status: str, message: str) -> None:
        """Record numerical trouble: the most severe status wins, messages accumulate."""
        if SEVERITY[status] > SEVERITY[self.status]:
            self.status = status
        self.status_message = "; ".join(m for m in (self.status_message, message) if m)


def suggest(name: str, valid) -> str:
    """' (did you mean X?)' when a close match of ``name`` exists among ``valid``."""
    close = difflib.get_close_matches(str(name), [str(v) for v in valid], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _check_type(where: str, key: str, value: Any, annotation: Any) -> Any:
    origin = getattr(annotation, "__origin__", None)
    base = origin or annotation
    if base is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise SettingsError(f"{where}: setting {key!r} must be a number, got {value!r}")
        if not np.isfinite(value):  # .inf or .nan in YAML: no setting means either
            raise SettingsError(f"{where}: setting {key!r} must be a finite number, got {value!r}")
        return float(value)
    if base is int:
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise SettingsError(f"{where}: setting {key!r} must be an integer, got {value!r}")
        return int(value)
    if base is bool:
        if not isinstance(value, bool):
            raise SettingsError(f"{where}: setting {key!r} must be true or false, got {value!r}")
        return value
    if base is str:
        if not isinstance(value, str):
            raise SettingsError(f"{where}: setting {key!r} must be a string, got {value!r}")
        return value
    if base is dict:
        if not isinstance(value, dict):
            raise SettingsError(f"{where}: setting {key!r} must be a mapping, got {value!r}")
        return value
    return value


def build_settings(cls, values: dict, where: str):
    """Instantiate settings dataclass ``cls`` from ``values``, naming any bad key or value."""
    if not isinstance(values, dict):
        raise SettingsError(f"{where}: settings must be a mapping, got {values!r}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    hints = get_type_hints(cls)
    kwargs = {}
    for key, value in values.items():
        if key not in fields:
            raise SettingsError(
                f"{where}: unknown setting {key!r}{suggest(key, fields)}; "
                f"valid settings: {', '.join(sorted(fields))}"
            )
        kwargs[key] = _check_type(where, key, value, hints[key])
    settings = cls(**kwargs)
    try:
        settings.validate()
    except (ValueError, TypeError) as err:
        raise SettingsError(f"{where}: {err}") from None
    return settings


def check_choice(key: str, value: str, choices) -> None:
    if value not in choices:
        raise ValueError(
            f"setting {key!r} must be one of {', '.join(choices)}; got {value!r}{suggest(value, choices)}"
        )


def check_positive(key: str, value, allow_zero: bool = False) -> None:
    if not (value > 0 or (allow_zero and value == 0)):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"setting {key!r} must be {bound}, got {value!r}")


def check_sampler_fractions(target_accept: float, persistence: float) -> None:
    """HMC settings shared by every sampling method: target acceptance in (0, 1),
    momentum persistence in [0, 1)."""
    if not 0.0 < target_accept < 1.0:
        raise ValueError(f"setting 'target_accept' must lie in (0, 1), got {target_accept}")
    if not 0.0 <= persistence < 1.0:
        raise ValueError(f"setting 'persistence' must lie in [0, 1), got {persistence}")
