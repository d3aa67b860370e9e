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
from .unit_symmetry import UnitSymmetry

# B's diagonal times this is added to B before its Cholesky factor (``factor``)
JITTER = 1e-12


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
            """Phi = Psi A^-1/2 (N, H+1), the scales A^-1/2, beta and the Cholesky factor L of
            B = I + beta Phi^T Phi = A^-1/2 M A^-1/2 (eigenvalues >= 1), ln |M| = ln |A| +
            2 sum ln diag L.

            Rounding: with alpha_v near 0 and a saturated unit's column equal to the bias
            column, B's entries reach 1e17 and the rounding of Phi^T Phi (~ N eps max B_jj)
            leaves it indefinite (1.3% of prior draws at H = 4 on the robot arm: phi
            infinite there, TI -inf). So L factors B + delta I, delta = JITTER max_j B_jj:
            at 1e-12 no prior draw of 2e5 fails at H = 4 or 8 (at 1e-15: 43 and 243). At the
            robot arm's minima (max_j B_jj 1.5e5-4.1e7 at H = 4, 5.7e6-1.9e8 at H = 8) it
            moves phi by at most 2.2e-4 and 1.8e-3 nats, far below any s.e. here (python
            benchmarks/collapsed_jitter.py)."""
            w1 = theta[: H * I].reshape(H, I)
            b1 = theta[H * I : n_first]
            beta = jnp.exp(theta[n_first + 2])
            psi = jnp.concatenate([activation(name, x @ w1.T + b1), jnp.ones((N, 1))], axis=1)
            log_a = jnp.concatenate([jnp.full(H, theta[n_first]), theta[n_first + 1 : n_first + 2]])
            scale = jnp.exp(-0.5 * log_a)
            phi = psi * scale
            b = jnp.eye(H + 1) + beta * (phi.T @ phi)
            b = b + JITTER * jnp.max(jnp.diag(b)) * jnp.eye(H + 1)
            return phi, scale, beta, jnp.linalg.cholesky(b)

        def phi_one(theta):
            """-ln p(t | theta) = sum_p 1/2 (N ln 2 pi - N ln beta + ln |B|) + beta/2 |t_p|^2
            - beta^2/2 |L^-1 Phi^T t_p|^2 (the module docstring's form, whitened)."""
            phi, _, beta, chol = factor(theta)
            proj = jax.scipy.linalg.solve_triangular(chol, phi.T @ t, lower=True)  # (H+1, P)
            log_det_b = 2.0 * jnp.sum(jnp.log(jnp.diag(chol)))  # ln |M| - ln |A|
            log_lik = (
                0.5 * P * (N * theta[n_first + 2] - N * LOG_2PI - log_det_b)
                - 0.5 * beta * t_sq
                + 0.5 * beta**2 * jnp.sum(proj * proj)
            )
            return jnp.where(jnp.isfinite(log_lik), -log_lik, jnp.inf)

        def full_weights(theta, key):
            """One draw of the full weight vector [W1, b1, W2, b2] given theta: W2, b2 from
            their Gaussian conditional posterior, N(beta M^-1 Psi^T t_p, M^-1) per output p,
            M^-1 = A^-1/2 B^-1 A^-1/2 (``factor``)."""
            phi, scale, beta, chol = factor(theta)
            mean = jax.scipy.linalg.cho_solve((chol, True), beta * (phi.T @ t))  # (H+1, P)
            noise = jax.random.normal(key, mean.shape)
            v = mean + jax.scipy.linalg.solve_triangular(chol.T, noise, lower=False)
            out = scale[:, None] * v
            return jnp.concatenate([theta[:n_first], out[:H].T.ravel(), out[H]])

        self.phi_one = phi_one
        self.full_weights = full_weights
        self.n_first = n_first
        self.output_groups = (g_v, g_c)
        self.spec = spec
        # unit j owns W1[j] and b1[j]; its key is W1[j, 0] (module docstring)
        units = tuple((*range(j * I, (j + 1) * I), H * I + j) for j in range(H))
        self.symmetry = UnitSymmetry(n_first + 3, units, 0, name in ODD_ACTIVATIONS)
        self._centred_prior()

    def _hyperpriors(self):
        """(each first-layer weight's input-side group, as an index 0..K_in-1; those groups'
        Gamma shapes and rates; the shapes and rates of alpha_v, alpha_c and beta)."""
        spec = self.spec
        g_v, g_c = self.output_groups
        inner = [k for k in range(spec.n_groups) if k not in (g_v, g_c)]
        position = {k: i for i, k in enumerate(inner)}
        group = np.array([position[k] for k in spec.group_index[: self.n_first]])
        eta_shapes = np.append(spec.prior_shapes[[g_v, g_c]], self.noise_prior.shape)
        eta_rates = np.append(spec.prior_rates[[g_v, g_c]], self.noise_prior.rate)
        return group, spec.prior_shapes[inner], spec.prior_rates[inner], eta_shapes, eta_rates

    def _centred_prior(self) -> None:
        """``prior_energy_one(theta)`` = -ln pi(theta), the normalised prior in theta = (W1, b1,
        eta_v, eta_c, eta_beta): each input-side group's alpha integrated out (the Student-t
        E_0 of ``MarginalModel``, Neal 1996 / paper 001 sec. 5),

            -ln p(w_k) = (a_k + n_k/2) ln(b_k + |w_k|^2 / 2) - a_k ln b_k + ln Gamma(a_k)
                         - ln Gamma(a_k + n_k/2) + n_k/2 ln 2 pi,

        and each eta = ln of a precision under its Gamma(a, b), density a eta - b e^eta +
        a ln b - ln Gamma(a); ``sample_prior`` draws from it, ``start_points`` starts
        minimisers at the hyperprior means (capped below at 1e-2, as ``MarginalModel``)."""
        from scipy.special import gammaln

        n_first = self.n_first
        group, a_in, b_in, a_eta, b_eta = self._hyperpriors()
        n_inner = len(a_in)
        sizes = np.bincount(group, minlength=n_inner)
        shapes_post = a_in + 0.5 * sizes
        const = float(np.sum(-a_in * np.log(b_in) + gammaln(a_in) - gammaln(shapes_post)
                             + 0.5 * sizes * LOG_2PI))  # fmt: skip
        const -= float(np.sum(a_eta * np.log(b_eta) - gammaln(a_eta)))
        rates_j, shapes_j, group_j = jnp.asarray(b_in), jnp.asarray(shapes_post), jnp.asarray(group)
        a_j, b_j = jnp.asarray(a_eta), jnp.asarray(b_eta)

        def prior_energy_one(theta):
            w = theta[:n_first]
            ss = jax.ops.segment_sum(w * w, group_j, num_segments=n_inner)
            eta = theta[n_first:]
            return (jnp.sum(shapes_j * jnp.log(rates_j + 0.5 * ss))
                    - jnp.sum(a_j * eta - b_j * jnp.exp(eta)) + const)  # fmt: skip

        def draw(n, rng, alpha_in, eta):
            w = rng.standard_normal((n, n_first)) / np.sqrt(alpha_in[:, group])
            return np.concatenate([w, eta], axis=1)

        def sample_prior(n: int, rng: np.random.Generator):
            alpha = rng.gamma(a_in, 1.0 / b_in, size=(n, n_inner))
            eta = np.log(rng.gamma(a_eta, 1.0 / b_eta, size=(n, 3)))
            return draw(n, rng, alpha, eta), alpha

        def start_points(n: int, rng: np.random.Generator):
            alpha = np.broadcast_to(np.maximum(a_in / b_in, 1e-2), (n, n_inner))
            eta = np.broadcast_to(np.log(np.maximum(a_eta / b_eta, 1e-2)), (n, 3))
            return draw(n, rng, alpha, eta), alpha

        self.prior_energy_one = prior_energy_one
        self.sample_prior, self.start_points = sample_prior, start_points

    def noncentred(self) -> NoncentredPrior:
        """The prior in u = (z, eta_in, eta_v, eta_c, eta_beta), the map u -> theta, exact
        draws of u and the canonical form of the units' symmetries (module docstring)."""
        from jax.scipy.special import gammaln

        n_first = self.n_first
        group, a_in, b_in, a_eta, b_eta = self._hyperpriors()
        # eta's order in u: input-side groups, then alpha_v, alpha_c, beta
        shapes, rates = np.append(a_in, a_eta), np.append(b_in, b_eta)
        a, b = jnp.asarray(shapes), jnp.asarray(rates)
        group = jnp.asarray(group)
        n_inner = len(a_in)
        const = float(np.sum(shapes * np.log(rates) - gammaln(shapes)) - 0.5 * n_first * LOG_2PI)

        def weights(u):
            eta = u[n_first:]
            return jnp.concatenate([u[:n_first] * jnp.exp(-0.5 * eta[group]), eta[n_inner:]])

        def log_prior(u):
            z, eta = u[:n_first], u[n_first:]
            return -0.5 * jnp.sum(z * z) + jnp.sum(a * eta - b * jnp.exp(eta)) + const

        def sample(n: int, rng: np.random.Generator) -> np.ndarray:
            precision = rng.gamma(shapes, 1.0 / rates, size=(n, len(shapes)))
            return np.concatenate([rng.standard_normal((n, n_first)), np.log(precision)], axis=1)

        canonical = self.symmetry.padded(n_first + len(shapes)).canonical
        return NoncentredPrior(log_prior, weights, sample, canonical)
