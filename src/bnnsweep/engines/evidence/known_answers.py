"""Evidence problems whose answer is known in closed form, as targets of the chaining protocol
(``engines.evidence.chaining``): JAX ``phi_one``, ``prior_energy_one``, ``potential``,
``gibbs`` (or None), numpy ``phi``, ``prior_energy`` and exact reference draws
``sample_prior``. Each has the difficulty of the robot-arm evidence in one respect.

- ``mixture``: a first-order transition along the tempering path. Reference
  E_0(w) = -ln N(w | 0, s_0^2 I) in d dimensions; likelihood
      exp(-phi(w)) = Z sum_k pi_k N(w | m_k, s_k^2 I) / N(w | 0, s_0^2 I),
  so that the lambda = 1 posterior is the mixture sum_k pi_k N(m_k, s_k^2 I) exactly and
      Z(1) = int exp(-phi) N(w | 0, s_0^2 I) dw = Z sum_k pi_k = Z,
  with nothing left to approximate. The components are a broad shallow one (at 0, s_b,
  posterior mass pi_b = e^-30) and a few narrow deep ones (at distance r from 0, along
  orthogonal directions, unequal masses and widths). While the components are apart, the
  tempered mass of component k is the Gaussian integral (``phase_log_masses``)
      M_k(lambda) = int N(w | 0, s_0^2)^(1 - lambda) (pi_k N(w | m_k, s_k^2))^lambda dw
      ln M_k = lambda ln pi_k + d/2 ln(2 pi / P) - (1 - lambda) d/2 ln(2 pi s_0^2)
               - lambda d/2 ln(2 pi s_k^2) - |m_k|^2 / 2 (lambda / s_k^2 - lambda^2 / (s_k^4 P)),
      P = (1 - lambda) / s_0^2 + lambda / s_k^2,
  and the dominant phase switches from the broad component to the narrow ones at
  lambda* = 0.34 for ``mixture()``'s defaults (d = 30, narrow s.d. 0.28-0.32 at distance 2,
  broad s.d. 1 = s_0) with an energy gap d(ln M_narrow - ln M_broad)/d lambda of 31 nats
  there: the tempered posterior jumps. Below lambda* the narrow valleys hold e^-6 to e^-3 of
  the tempered mass (Monte Carlo of the share of each tempered component inside the region
  where it dominates the mixture; ``phase_log_masses`` alone overstates it at small
  lambda, where the tempered components spill out of their valleys), so annealing from the
  prior reaches them with a fraction of a per cent of its particles, and chains that stay in
  one valley give each valley equal shares at lambda = 1 whatever its mass.
- ``linear_gaussian``: Bayesian linear regression with a Gaussian prior N(0, I/alpha) and
  known noise precision beta: ln Z = ln N(t | 0, I/beta + X X^T/alpha) exactly. The
  posterior is much narrower than the prior (the information gain, tens of nats, is what a
  tempering ladder must bridge).
- ``linear_hierarchical``: the same regression with alpha ~ Gamma and beta ~ Gamma
  integrated out, built from the project's own ``MarginalModel`` (Student-t reference,
  alpha as Gibbs auxiliary variable); ln Z by quadrature over (ln alpha, ln beta)
  (``models.conjugate.linear_log_evidence_integrated``, a Riemann sum accurate to far below
  1e-6 on a smooth integrand).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from ...models import GammaPrior, Network, make_prior
from ...models.conjugate import linear_log_evidence_integrated
from ...models.marginal import MarginalModel
from ...models.objective import PenalisedError
from ...runtime.jax_runtime import jax, jnp

LOG_2PI = float(np.log(2.0 * np.pi))


class _BatchedTarget:
    """numpy ``phi`` (values, grads) and ``prior_energy`` from the JAX one-vector functions."""

    def _compile(self) -> None:
        self._phi_batch = jax.jit(jax.vmap(jax.value_and_grad(self.phi_one)))
        self._e0_batch = jax.jit(jax.vmap(self.prior_energy_one))

    def phi(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        value, grad = self._phi_batch(jnp.asarray(np.atleast_2d(w), dtype=jnp.float64))
        return np.asarray(value), np.asarray(grad)

    def prior_energy(self, w: np.ndarray) -> np.ndarray:
        return np.asarray(self._e0_batch(jnp.asarray(np.atleast_2d(w), dtype=jnp.float64)))

    def potential(self, lam, _theta, w):
        return lam * self.phi_one(w) + self.prior_energy_one(w)


class MixtureTarget(_BatchedTarget):
    """Reference N(0, s_0^2 I); lambda = 1 posterior sum_k pi_k N(m_k, s_k^2 I); Z(1) = e^log_z
    (module docstring). ``means`` (K, d), ``sds`` (K,), ``log_weights`` (K,) normalised."""

    gibbs = None
    mass = None

    def __init__(self, means, sds, log_weights, reference_sd: float, log_z: float):
        self.means = np.asarray(means, dtype=float)
        self.sds = np.asarray(sds, dtype=float)
        self.log_weights = np.asarray(log_weights, dtype=float)
        if abs(np.logaddexp.reduce(self.log_weights)) > 1e-12:
            raise ValueError("mixture log_weights must be normalised")
        self.dimension = self.means.shape[1]
        self.reference_sd, self.log_z = float(reference_sd), float(log_z)
        d, s0 = self.dimension, self.reference_sd
        m, inv_var = jnp.asarray(self.means), jnp.asarray(1.0 / self.sds**2)
        # ln pi_k + ln N(w | m_k, s_k^2) without the d/2 ln 2 pi that cancels against E_0's
        offset = jnp.asarray(self.log_weights - d * np.log(self.sds))
        e0_const = 0.5 * d * (LOG_2PI + 2.0 * np.log(s0))

        def prior_energy_one(w):
            return 0.5 * jnp.sum(w * w) / s0**2 + e0_const

        def phi_one(w):
            log_mix = jax.scipy.special.logsumexp(
                offset - 0.5 * inv_var * jnp.sum((w - m) ** 2, axis=1)
            )
            # -ln Z - ln mixture + ln N(w | 0, s_0^2), the 2 pi terms cancelled
            return -self.log_z - log_mix - 0.5 * jnp.sum(w * w) / s0**2 - d * np.log(s0)

        self.phi_one, self.prior_energy_one = phi_one, prior_energy_one
        self._compile()

    def sample_prior(self, n: int, rng: np.random.Generator):
        return self.reference_sd * rng.standard_normal((n, self.dimension)), None

    def sample_posterior(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Exact draws from the lambda = 1 posterior (the mixture)."""
        k = rng.choice(len(self.sds), size=n, p=np.exp(self.log_weights))
        return self.means[k] + self.sds[k, None] * rng.standard_normal((n, self.dimension))

    def phase_log_masses(self, lam) -> np.ndarray:
        """ln M_k(lambda), the tempered mass of each component taken alone (module docstring;
        the tempered mass of the whole is their sum while the components are apart), shape
        (..., K)."""
        lam = np.asarray(lam, dtype=float)[..., None]
        d, s0, s = self.dimension, self.reference_sd, self.sds
        m2 = np.sum(self.means**2, axis=1)
        P = (1.0 - lam) / s0**2 + lam / s**2
        return (
            lam * self.log_weights
            + 0.5 * d * np.log(2 * np.pi / P)
            - (1.0 - lam) * 0.5 * d * np.log(2 * np.pi * s0**2)
            - lam * 0.5 * d * np.log(2 * np.pi * s**2)
            - 0.5 * m2 * (lam / s**2 - lam**2 / (s**4 * P))
        )


def mixture(
    dimension: int = 30,
    narrow_sds=(0.3, 0.28, 0.32),
    narrow_weights=(0.5, 0.3, 0.2),
    distance: float = 2.0,
    broad_sd: float = 1.0,
    broad_log_weight: float = -30.0,
    reference_sd: float = 1.0,
    log_z: float = -7.3,
) -> MixtureTarget:
    """The first-order-transition mixture: narrow modes at ``distance`` along the first
    coordinate axes (orthogonal, so that the narrow modes are also apart from each other),
    and a broad one at 0 of posterior mass e^broad_log_weight. The narrow weights are
    renormalised to 1 - that mass."""
    k = len(narrow_sds)
    means = np.zeros((k + 1, dimension))
    means[np.arange(k), np.arange(k)] = distance
    weights = np.asarray(narrow_weights, dtype=float)
    weights = weights / weights.sum() * -np.expm1(broad_log_weight)
    log_weights = np.concatenate([np.log(weights), [broad_log_weight]])
    sds = np.concatenate([narrow_sds, [broad_sd]])
    return MixtureTarget(means, sds, log_weights, reference_sd, log_z)


class LinearGaussianTarget(_BatchedTarget):
    """Bayesian linear regression t = X w + noise, w ~ N(0, I/alpha), noise N(0, 1/beta):
    E_0(w) = alpha |w|^2 / 2 - d/2 ln(alpha / 2 pi), phi(w) = beta |t - X w|^2 / 2 - N/2
    ln(beta / 2 pi), and ln Z = ln N(t | 0, I/beta + X X^T/alpha)."""

    gibbs = None
    mass = None

    def __init__(self, x: np.ndarray, t: np.ndarray, alpha: float, beta: float):
        self.x, self.t = np.asarray(x, dtype=float), np.asarray(t, dtype=float).ravel()
        self.alpha, self.beta = float(alpha), float(beta)
        n, d = self.x.shape
        self.dimension = d
        xj, tj = jnp.asarray(self.x), jnp.asarray(self.t)
        e0_const = -0.5 * d * (np.log(alpha) - LOG_2PI)
        phi_const = -0.5 * n * (np.log(beta) - LOG_2PI)

        def prior_energy_one(w):
            return 0.5 * alpha * jnp.sum(w * w) + e0_const

        def phi_one(w):
            r = tj - xj @ w
            return 0.5 * beta * jnp.sum(r * r) + phi_const

        self.phi_one, self.prior_energy_one = phi_one, prior_energy_one
        cov = np.eye(n) / beta + self.x @ self.x.T / alpha
        _, logdet = np.linalg.slogdet(cov)
        self.log_z = float(-0.5 * (n * LOG_2PI + logdet + self.t @ np.linalg.solve(cov, self.t)))
        self._compile()

    def sample_prior(self, n: int, rng: np.random.Generator):
        return rng.standard_normal((n, self.dimension)) / np.sqrt(self.alpha), None


def _regression_data(n: int, d: int, noise_sd: float, seed: int):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d))
    w = rng.standard_normal(d)
    return x, x @ w + noise_sd * rng.standard_normal(n)


def linear_gaussian(n: int = 40, dimension: int = 20, alpha: float = 1.0, beta: float = 4.0):
    """Known-noise regression on fixed synthetic data (seeded): noise s.d. 1/sqrt(beta)."""
    x, t = _regression_data(n, dimension, 1.0 / np.sqrt(beta), seed=2026)
    return LinearGaussianTarget(x, t, alpha, beta)


def linear_hierarchical(
    n: int = 40,
    inputs: int = 19,
    weight_hyperprior: dict | None = None,
    noise_hyperprior: dict | None = None,
) -> MarginalModel:
    """``MarginalModel`` of a linear network (``inputs`` + bias weights, one alpha) with Gamma
    hyperpriors on alpha and beta integrated out; ``log_z`` attached from quadrature."""
    x, t = _regression_data(n, inputs, 0.5, seed=2027)
    network = Network(inputs, 0, 1, "linear")
    prior = make_prior(network, "single", {"weights": weight_hyperprior or {"mean": 1.0, "s": 2.0}})
    objective = PenalisedError(network, prior, x, (t + 0.3)[:, None])
    noise = GammaPrior.from_spec(noise_hyperprior or {"mean": 4.0, "s": 2.0})
    model = MarginalModel(objective, noise)
    model.log_z = linear_log_evidence_integrated(objective, noise, n_grid=401)
    model.dimension = network.n_weights
    return model


@dataclass(frozen=True)
class KnownAnswer:
    """A target, its exact ln Z(1), and an HMC step size that suits it (chains' start value;
    samplers adapt it)."""

    name: str
    target: object
    log_z: float
    step_size: float


_BUILDERS = {
    "mixture": (mixture, 0.1),
    "linear_gaussian": (linear_gaussian, 0.05),
    "linear_hierarchical": (linear_hierarchical, 0.05),
}
PROBLEMS = tuple(_BUILDERS)


@cache
def problem(name: str) -> KnownAnswer:
    """The named known-answer problem (built once per process)."""
    if name not in _BUILDERS:
        raise ValueError(f"unknown known-answer problem {name!r}; valid: {', '.join(PROBLEMS)}")
    build, step = _BUILDERS[name]
    target = build()
    return KnownAnswer(name, target, float(target.log_z), step)
