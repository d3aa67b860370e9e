"""Settings that define the probabilistic model, shared by every method that fits it.

Defaults follow the thesis sec. 5.5.2: Gamma hyperpriors a_alpha = 3e-4, b_alpha = 1e-3 on
every weight precision and a_beta = 0.02, b_beta = 1e-4 on the noise precision.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .datasets.base import Split
from .method_base import check_choice
from .models import HYPERPRIOR_ROLES, PRIOR_KINDS, GammaPrior, Network, make_prior
from .models.activations import ACTIVATIONS
from .models.objective import PenalisedError


def _default_hyperpriors() -> dict:
    return {role: {"shape": 3e-4, "rate": 1e-3} for role in HYPERPRIOR_ROLES}


def _default_noise_hyperprior() -> dict:
    return {"shape": 0.02, "rate": 1e-4}


def _check_gamma_spec(key: str, spec) -> None:
    if not isinstance(spec, dict):
        raise ValueError(f"setting {key!r} must be a mapping, got {spec!r}")
    allowed = {"shape", "rate", "mean", "s", "scale_with_hidden"}
    unknown = set(spec) - allowed
    if unknown:
        raise ValueError(
            f"setting {key!r}: unknown keys {sorted(unknown)}; allowed {sorted(allowed)}"
        )
    has_sr = {"shape", "rate"} <= set(spec)
    has_ms = {"mean", "s"} <= set(spec)
    if has_sr == has_ms:
        raise ValueError(f"setting {key!r} needs either shape and rate, or mean and s")
    try:
        GammaPrior.from_spec(spec)
    except (ValueError, TypeError) as err:
        raise ValueError(f"setting {key!r}: {err}") from None


@dataclass(frozen=True)
class ModelSettings:
    """The network architecture, weight prior and hyperpriors (DESIGN.md 'One model')."""

    hidden: int = 8
    activation: str = "tanh"
    prior: str = "grouped"
    hyperpriors: dict = field(default_factory=_default_hyperpriors)
    noise_hyperprior: dict = field(default_factory=_default_noise_hyperprior)

    def validate(self) -> None:
        if self.hidden < 0:
            raise ValueError(f"setting 'hidden' must be >= 0, got {self.hidden}")
        check_choice("activation", self.activation, tuple(ACTIVATIONS))
        check_choice("prior", self.prior, PRIOR_KINDS)
        for role, spec in self.hyperpriors.items():
            check_choice("hyperpriors key", role, HYPERPRIOR_ROLES)
            _check_gamma_spec(f"hyperpriors.{role}", spec)
        _check_gamma_spec("noise_hyperprior", self.noise_hyperprior)

    def build(self, split: Split) -> tuple[PenalisedError, GammaPrior]:
        """The penalised error on the split's training data and the noise hyperprior."""
        network = Network(split.n_inputs, self.hidden, split.n_outputs, self.activation)
        hyper = {**type(self)().hyperpriors, **self.hyperpriors}  # the method's own defaults
        prior = make_prior(network, self.prior, hyper)
        objective = PenalisedError(network, prior, split.x_train, split.y_train)
        return objective, GammaPrior.from_spec(self.noise_hyperprior)
