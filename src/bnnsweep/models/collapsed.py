"""The chaining target with the output layer integrated out exactly (Rao-Blackwellised).

The outputs are linear in the hidden-to-output weights W2 and output biases b2. Given the
first layer (W1, b1), the output groups' precisions alpha_v, alpha_c and the noise precision
beta, each output p is Bayesian linear regression on the features Psi = [g(X W1^T + b1), 1]
(N x (H + 1)), prior theta_p ~ N(0, A^{-1}), A = diag(alpha_v 1_H, alpha_c), so

    ln p(t_p | W1, b1, alpha_v, alpha_c, beta)
        = N/2 ln beta - N/2 ln 2 pi + 1/2 ln |A| - 1/2 ln |M| - beta/2 |t_p|^2
          + beta^2/2 t_p^T Psi M^{-1} Psi^T t_p,        M = A + beta Psi^T Psi

(Bishop 2006 eq. 3.86; MacKay 1992). The outputs share Psi, A and beta, so one Cholesky
factor of M serves all P outputs. What is left to integrate numerically is the first layer
and the log-precisions of its groups, of alpha_v, alpha_c and beta: 3 + 5 = 8 coordinates at
H = 1 and 24 + 5 = 29 at H = 8 on the robot arm, against 7 and 42 weights for the full target, and none of the long valleys
along which a unit's output weights grow as its input weights shrink (docs/evidence.md).

Coordinates (non-centred, light-tailed, as ``MarginalModel.noncentred``):
u = (z, eta_in, eta_v, eta_c, eta_beta), z ~ N(0, I) over the first layer's weights with
(W1, b1) = z / sqrt(alpha_k) per input-side group k, and every eta = ln of a precision under
its Gamma(a, b) hyperprior, whose density in eta is a eta - b e^eta + a ln b - ln Gamma(a).
The evidence is the same integral as the full target's,

    p(D) = int p(D | W1, b1, alpha_v, alpha_c, beta) pi(u) du,

so any estimator on this target is a check on the full one with different geometry (nested
sampling from this prior: ``engines.evidence.nested``, whose ``space`` reads
``noncentred()`` and ``phi_one``).

The hidden units' symmetries act on the first layer alone (a unit's sign flip is absorbed by
its output weights, whose prior is symmetric): ``canonical`` sorts the units by their first
input weight after making it >= 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..runtime.jax_runtime import jax, jnp
from .jax_network import ODD_ACTIVATIONS, activation, objective_spec
from .marginal import LOG_2PI, NoncentredPrior
from .objective import PenalisedError
from .priors import GammaPrior


def _output_groups(objective: PenalisedError) -> tuple[int, int, int]:
    """(number of first-layer weights, group of W2, group of b2); refuses a prior in which
    an output-layer group also holds first-layer weights (the ``single`` prior)."""
    net, prior = objective.network, objective.prior
    if net.n_hidden == 0:
        raise ValueError("the collapsed target needs a hidden layer")
    if prior.partner_index is not None:
        raise ValueError(f"prior {prior.kind!r} has no group-wise conjugate form")
    s, index = net.slices, np.asarray(prior.group_index)
    n_first = s["b1"].stop
    g_v, g_c = set(index[s["W2"]]), set(index[s["b2"]])
    if len(g_v) != 1 or len(g_c) != 1 or (g_v | g_c) & set(index[:n_first]) or g_v == g_c:
        raise ValueError(
            f"prior {prior.kind!r}: the collapsed target needs the hidden-to-output weights and "
            "the output biases in groups of their own (prior 'grouped' or 'ard')"
        )
    return n_first, g_v.pop(), g_c.pop()


@dataclass
class CollapsedModel:
    """The robot-arm (any regression network's) evidence target with W2, b2 integrated out:
    ``phi_one(theta)`` = -ln p(D | theta), theta = (W1, b1, ln alpha_v, ln alpha_c, ln beta),
    and ``noncentred()`` the prior over u (module docstring)."""

    objective: PenalisedError
    noise_prior: GammaPrior

    def __post_init__(self) -> None:
        objective = self.objective
        n_first, g_v, g_c = _output_groups(objective)
        spec = objective_spec(objective)
        I, H, P = spec.n_inputs, spec.n_hidden, spec.n_outputs
        x, t = jnp.asarray(objective.x), jnp.asarray(objective.t)
        N = objective.x.shape[0]
        t_sq = float(np.sum(objective.t**2))
        name = spec.activation

        def factor(theta):
            """Psi (N, H+1), ln diag A, beta and the Cholesky factor of M = A + beta Psi^T Psi."""
            w1 = theta[: H * I].reshape(H, I)
            b1 = theta[H * I : n_first]
            beta = jnp.exp(theta[n_first + 2])
            psi = jnp.concatenate([activation(name, x @ w1.T + b1), jnp.ones((N, 1))], axis=1)
            log_a = jnp.concatenate([jnp.full(H, theta[n_first]), theta[n_first + 1 : n_first + 2]])
            chol = jnp.linalg.cholesky(jnp.diag(jnp.exp(log_a)) + beta * (psi.T @ psi))
            return psi, log_a, beta, chol

        def phi_one(theta):
            psi, log_a, beta, chol = factor(theta)
            proj = jax.scipy.linalg.solve_triangular(chol, psi.T @ t, lower=True)  # (H+1, P)
            log_det_m = 2.0 * jnp.sum(jnp.log(jnp.diag(chol)))
            log_lik = (
                0.5 * P * (N * theta[n_first + 2] - N * LOG_2PI + jnp.sum(log_a) - log_det_m)
                - 0.5 * beta * t_sq
                + 0.5 * beta**2 * jnp.sum(proj * proj)
            )
            return jnp.where(jnp.isfinite(log_lik), -log_lik, jnp.inf)

        def full_weights(theta, key):
            """One draw of the full weight vector [W1, b1, W2, b2] given theta: W2, b2 from
            their Gaussian conditional posterior, N(beta M^-1 Psi^T t_p, M^-1) per output p."""
            psi, _, beta, chol = factor(theta)
            mean = jax.scipy.linalg.cho_solve((chol, True), beta * (psi.T @ t))  # (H+1, P)
            noise = jax.random.normal(key, mean.shape)
            out = mean + jax.scipy.linalg.solve_triangular(chol.T, noise, lower=False)
            return jnp.concatenate([theta[:n_first], out[:H].T.ravel(), out[H]])

        self.phi_one = phi_one
        self.full_weights = full_weights
        self.n_first = n_first
        self.output_groups = (g_v, g_c)
        self.spec = spec

    def noncentred(self) -> NoncentredPrior:
        """The prior in u = (z, eta_in, eta_v, eta_c, eta_beta), the map u -> theta, exact
        draws of u and the canonical form of the units' symmetries (module docstring)."""
        from jax.scipy.special import gammaln

        spec, n_first = self.spec, self.n_first
        g_v, g_c = self.output_groups
        inner = [k for k in range(spec.n_groups) if k not in (g_v, g_c)]
        order = inner + [g_v, g_c]  # eta's order in u: input-side groups, then alpha_v, alpha_c
        shapes = np.append(spec.prior_shapes[order], self.noise_prior.shape)
        rates = np.append(spec.prior_rates[order], self.noise_prior.rate)
        a, b = jnp.asarray(shapes), jnp.asarray(rates)
        # each first-layer weight's input-side group, as an index into eta
        position = {k: i for i, k in enumerate(inner)}
        group = jnp.asarray([position[k] for k in spec.group_index[:n_first]])
        n_inner = len(inner)
        const = float(np.sum(shapes * np.log(rates) - gammaln(shapes)) - 0.5 * n_first * LOG_2PI)
        I, H = spec.n_inputs, spec.n_hidden

        def weights(u):
            eta = u[n_first:]
            return jnp.concatenate([u[:n_first] * jnp.exp(-0.5 * eta[group]), eta[n_inner:]])

        def log_prior(u):
            z, eta = u[:n_first], u[n_first:]
            return -0.5 * jnp.sum(z * z) + jnp.sum(a * eta - b * jnp.exp(eta)) + const

        def sample(n: int, rng: np.random.Generator) -> np.ndarray:
            precision = rng.gamma(shapes, 1.0 / rates, size=(n, len(shapes)))
            return np.concatenate([rng.standard_normal((n, n_first)), np.log(precision)], axis=1)

        odd = spec.activation in ODD_ACTIVATIONS

        def canonical(u):
            w1 = u[: H * I].reshape(H, I)
            b1 = u[H * I : n_first]
            if odd:
                sign = jnp.where(w1[:, 0] < 0, -1.0, 1.0)
                w1, b1 = w1 * sign[:, None], b1 * sign
            order_units = jnp.argsort(-w1[:, 0])
            return jnp.concatenate([w1[order_units].ravel(), b1[order_units], u[n_first:]])

        return NoncentredPrior(log_prior, weights, sample, canonical)
