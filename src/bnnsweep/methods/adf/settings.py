"""Settings of the ``pbp`` and ``ebp`` methods (paper 004 sec. 3-6).

The ADF model is not the erf/tanh network of :class:`ModelSettings`: ReLU hidden layers, any
number of them, one shared prior precision lambda for every weight (paper 004 eq. 3) and a
choice of likelihood, so these settings stand on their own.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...engines.adf.likelihoods import LIKELIHOODS, SOFTMAX_APPROXIMATIONS
from ...method_base import check_choice, check_positive


@dataclass(frozen=True)
class ADFSettings:
    """Shared by PBP and EBP.

    ``layers`` is either the number of hidden layers, each of ``hidden`` units (the sweep
    axis), or an explicit list of hidden-layer widths (e.g. [50, 50]); the list form fixes
    the architecture whatever ``hidden`` says, so prefer the integer form in sweeps. Hidden
    units are ReLU (``activation`` accepts only ``relu``).
    """

    hidden: int = 50
    layers: int | list = 1
    activation: str = "relu"
    likelihood: str = "gaussian"
    epochs: int = 40
    noise_shape: float = 6.0
    noise_rate: float = 6.0
    softmax_approximation: str = "mc"
    mc_samples: int = 10
    predictive_samples: int = 100
    trace_test: bool = True

    def validate(self) -> None:
        check_positive("hidden", self.hidden)
        if isinstance(self.layers, list | tuple):
            if not self.layers or not all(
                isinstance(w, int) and not isinstance(w, bool) and w >= 1 for w in self.layers
            ):
                raise ValueError(
                    f"setting 'layers' must be a positive integer or a non-empty list of them, got {self.layers!r}"
                )
        elif isinstance(self.layers, bool) or not isinstance(self.layers, int) or self.layers < 1:
            raise ValueError(
                f"setting 'layers' must be a positive integer or a non-empty list of them, got {self.layers!r}"
            )
        check_choice("activation", self.activation, ("relu",))
        check_choice("likelihood", self.likelihood, LIKELIHOODS)
        check_choice("softmax_approximation", self.softmax_approximation, SOFTMAX_APPROXIMATIONS)
        for key in ("epochs", "noise_shape", "noise_rate", "mc_samples", "predictive_samples"):
            check_positive(key, getattr(self, key))
        if self.noise_shape <= 1:
            raise ValueError(
                f"setting 'noise_shape' must be > 1 (the noise variance b/(a-1) must exist), got {self.noise_shape}"
            )

    @property
    def hidden_widths(self) -> list[int]:
        if isinstance(self.layers, list | tuple):
            return list(self.layers)
        return [self.hidden] * self.layers


@dataclass(frozen=True)
class PBPSettings(ADFSettings):
    """PBP: Gaussian weights N(m, v) with both moments updated; lambda ~ Gamma(prior_shape,
    prior_rate) refined by EP after every epoch (HL&A 2015 use shape = rate = 6)."""

    prior_shape: float = 6.0
    prior_rate: float = 6.0

    def validate(self) -> None:
        super().validate()
        check_positive("prior_rate", self.prior_rate)
        if self.prior_shape <= 1:
            raise ValueError(f"setting 'prior_shape' must be > 1, got {self.prior_shape}")


@dataclass(frozen=True)
class EBPSettings(ADFSettings):
    """EBP: weight variances fixed at 1, means only; the prior precision is fixed at the small
    value ``prior_precision`` (paper 004 sec. 3)."""

    prior_precision: float = 1e-3

    def validate(self) -> None:
        super().validate()
        check_positive("prior_precision", self.prior_precision)
