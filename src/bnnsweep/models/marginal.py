"""Energies with the hyperparameters integrated out by Gamma-Gaussian conjugacy (paper 001
sec. 3: "we perform the integrals over hyper-parameters analytically").

phi(w) = -ln int p(D | w, beta) Gamma(beta | a, b) d beta
       = (a + N/2) ln(b + E_D(w)) - a ln b + ln Gamma(a) - ln Gamma(a + N/2) + N/2 ln 2 pi
E_0(w) = -sum_k ln int N(w_k | 0, I/alpha_k) Gamma(alpha_k | a_k, b_k) d alpha_k
       = sum_k (a_k + W_k/2) ln(b_k + w_k^T w_k / 2) - a_k ln b_k + ln Gamma(a_k)
         - ln Gamma(a_k + W_k/2) + W_k/2 ln 2 pi

exp(-E_0) is a normalised density (a product of multivariate Student-t), so the chain
E(lambda, w) = lambda phi(w) + E_0(w) starts from a reference with evidence 1 and ends at
Z(1) = p(D). For sampling, alpha is kept as an auxiliary variable with the Gibbs conditional
alpha_k | w ~ Gamma(a_k + W_k/2, b_k + w_k^T w_k / 2), which leaves the marginal in w exact:
the sampler's potential is U(w; alpha) = lambda phi(w) + sum_k alpha_k w_k^T w_k / 2.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..runtime.jax_runtime import jax, jnp
from .jax_network import (
    data_error,
    group_sum_squares,
    network_symmetry,
    objective_spec,
    sample_alpha,
    weight_error,
)
from .objective import PenalisedError
from .priors import GammaPrior

LOG_2PI = np.log(2.0 * np.pi)
FTOL = 1e-12  # relative decrease per step below which a row stops
GTOL = 1e-5


def converged(value, previous, grad, ftol: float = FTOL, gtol: float = GTOL):
    """L-BFGS stopping rule: the last step lowered E by at most
    ``ftol`` relative to max(|E|, |E_prev|, 1) (``previous`` is inf before the first step),
    or no gradient component exceeds ``gtol`` (scipy L-BFGS-B's pgtol; its default ftol,
    2.2e-9, left stationarity tests on toy_sine with gradients above 1e-3)."""
    scale = jnp.maximum(jnp.maximum(jnp.abs(value), jnp.abs(previous)), 1.0)
    stalled = jnp.isfinite(previous) & ((previous - value) <= ftol * scale)
    return stalled | (jnp.max(jnp.abs(grad)) <= gtol)


def lbfgs_program(value_fn, n_iter: int):
    """A compiled batch minimiser of ``value_fn(lam, w)`` over w: for rows (lam_b, w0_b),
    L-BFGS with a zoom line search (``optax.lbfgs``), vmapped over the batch in one compiled
    loop, each row until ``converged`` or ``n_iter`` iterations. The program returns the
    points (B, W), their values (B,) (inf where the run left the finite region: the start is
    returned there) and each row's iteration count."""
    import optax  # after bnnsweep.runtime.jax_runtime has configured jax

    def one(lam, w):
        def fn(v):
            return value_fn(lam, v)

        opt = optax.lbfgs()
        value_and_grad = optax.value_and_grad_from_state(fn)

        def running(carry):
            _, _, _, done, it = carry
            return (it < n_iter) & ~done

        def step(carry):
            v, state, previous, done, it = carry
            value, grad = value_and_grad(v, state=state)
            done = done | converged(value, previous, grad)
            # a converged row is frozen: zero gradient and a constant objective make its
            # update zero and its line search accept at once, so that the rows still
            # moving do not wait on line searches at a stationary point
            grad = jnp.where(done, 0.0, grad)

            def objective(u):
                return jnp.where(done, value, fn(u))

            updates, state = opt.update(grad, state, v, value=value, grad=grad, value_fn=objective)
            return optax.apply_updates(v, updates), state, value, done, it + 1

        carry = (w, opt.init(w), jnp.inf, jnp.asarray(False), jnp.asarray(0))
        v, _, _, _, iterations = jax.lax.while_loop(running, step, carry)
        value = fn(v)
        ok = jnp.isfinite(value) & jnp.all(jnp.isfinite(v))
        return jnp.where(ok, v, w), jnp.where(ok, value, jnp.inf), iterations

    return jax.jit(jax.vmap(one))


@dataclass(frozen=True)
class NoncentredPrior:
    """``MarginalModel.noncentred``: the prior's log density in u = (z, ln alpha), the map
    u -> w, exact draws of u, and the representative of u's orbit under the hidden units'
    symmetries (``models.unit_symmetry`` on z: the groups' alpha are shared by
    all units, so the symmetries act on z alone)."""

    log_prior: object
    weights: object
    sample: object
    canonical: object


@dataclass
class MarginalModel:
    """The chaining target E(lambda, w) = lambda phi(w) + E_0(w) for one dataset.

    Per-weight-vector JAX functions (``phi_one``, ``prior_energy_one``, ``potential``,
    ``gibbs``, and ``mass``: each weight's prior precision alpha_k, the diagonal mass matrix
    of AIS trajectories) feed the compiled sampler; ``phi``, ``prior_energy`` and
    ``prior_energy_and_grad`` evaluate them, jitted and vectorised, on a numpy batch (B, W).
    """

    objective: PenalisedError
    noise_prior: GammaPrior

    def __post_init__(self) -> None:
        from scipy.special import gammaln

        prior = self.objective.prior
        n = self.objective.n_targets
        a, b = self.noise_prior.shape, self.noise_prior.rate
        self.phi_shape = a + 0.5 * n
        self.phi_const = -a * np.log(b) + gammaln(a) - gammaln(a + 0.5 * n) + 0.5 * n * LOG_2PI
        sizes = prior.group_sizes
        self.e0_shapes = prior.shapes + 0.5 * sizes
        self.e0_const = float(
            np.sum(
                -prior.shapes * np.log(prior.rates)
                + gammaln(prior.shapes)
                - gammaln(self.e0_shapes)
                + 0.5 * sizes * LOG_2PI
            )
        )
        self.spec = objective_spec(self.objective)
        self.symmetry = network_symmetry(self.spec)  # None without a hidden layer
        x, t = jnp.asarray(self.objective.x), jnp.asarray(self.objective.t)
        spec, rate = self.spec, float(self.noise_prior.rate)
        phi_shape, phi_const = float(self.phi_shape), float(self.phi_const)
        e0_shapes, e0_const = jnp.asarray(self.e0_shapes), self.e0_const
        rates = jnp.asarray(prior.rates)

        def phi_one(w):
            return phi_shape * jnp.log(rate + data_error(spec, x, t, w)) + phi_const

        def prior_energy_one(w):
            return jnp.sum(e0_shapes * jnp.log(rates + 0.5 * group_sum_squares(spec, w))) + e0_const

        def potential(lam, alpha, w):
            return lam * phi_one(w) + weight_error(spec, w, alpha)

        def gibbs(key, _lam, w, _alpha):
            return sample_alpha(key, spec, w)

        def mass(_lam, alpha):
            return alpha[spec.group_index]

        def tempered(lam, w):
            return lam * phi_one(w) + prior_energy_one(w)

        self._tempered_value = tempered
        self._minimisers: dict[int, object] = {}

        self.phi_one, self.prior_energy_one = phi_one, prior_energy_one
        self.potential, self.gibbs, self.mass = potential, gibbs, mass
        self._phi_batch = jax.jit(jax.vmap(jax.value_and_grad(phi_one)))
        self._e0_batch = jax.jit(jax.vmap(jax.value_and_grad(prior_energy_one)))

    def phi(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """phi(w) (B,) and its gradient (B, W)."""
        value, grad = self._phi_batch(jnp.asarray(np.atleast_2d(w), dtype=jnp.float64))
        return np.asarray(value), np.asarray(grad)

    def prior_energy(self, w: np.ndarray) -> np.ndarray:
        """E_0(w), the negative log of the normalised marginal prior, shape (B,)."""
        return self.prior_energy_and_grad(w)[0]

    def prior_energy_and_grad(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """E_0(w) (B,) and dE_0/dw = (a_k + W_k/2) w / (b_k + w_k^T w_k / 2) per group, (B, W)."""
        value, grad = self._e0_batch(jnp.asarray(np.atleast_2d(w), dtype=jnp.float64))
        return np.asarray(value), np.asarray(grad)

    def tempered_minima(
        self, lams: np.ndarray, w0: np.ndarray, n_iter: int
    ) -> tuple[np.ndarray, np.ndarray, int]:
        """Minima of E(lam_b, w) = lam_b phi(w) + E_0(w) from every row of ``w0`` (B, W) at
        once: L-BFGS with a zoom line search (``optax.lbfgs``), vmapped over the batch in one
        compiled loop, each row until ``converged`` or
        ``n_iter`` iterations. Returns the points (B, W), their energies (B,) (inf where the
        run left the finite region: the start is returned there) and the number of L-BFGS
        iterations plus final evaluations (line-search trials not counted)."""
        program = self._minimisers.get(n_iter)
        if program is None:
            program = self._minimisers[n_iter] = self._minimiser(n_iter)
        x, fun, iterations = program(
            jnp.asarray(lams, dtype=jnp.float64), jnp.asarray(w0, dtype=jnp.float64)
        )
        return np.asarray(x), np.asarray(fun), int(np.sum(np.asarray(iterations) + 1))

    def _minimiser(self, n_iter: int):
        """The compiled batch minimiser of ``tempered_minima`` for ``n_iter`` iterations
        (built once per model and count, so later calls reuse the compiled program)."""
        return lbfgs_program(self._tempered_value, n_iter)

    def optimised_start_points(
        self,
        lambdas: np.ndarray,
        replicates: int,
        rng: np.random.Generator,
        restarts: int,
        max_iter: int,
    ) -> tuple[np.ndarray, np.ndarray, int]:
        """Chain starts near the modes of each link's E(lam_i, w), for ``replicates``
        independent chains per link (rows ordered link-major: link i's chains at rows
        i * replicates ... ). Each replicate is placed by its own continuation: the lowest of
        ``restarts`` minima of E at the largest lambda (from ``start_points`` draws), then a
        minimum of every link's E(lam_i, w) started from that one, so that a replicate's
        links sit in one basin as a sequential chain's would while different replicates may
        find different basins (their spread then shows in the standard error). Alpha is
        drawn from its Gibbs conditional there. Only where burn-in starts changes, not what
        is sampled. All minimisations of a stage run as one vmapped batch."""
        lambdas = np.asarray(lambdas, dtype=float)
        top = float(np.max(lambdas))
        K = len(lambdas)
        draws, _ = self.start_points(replicates * restarts, rng)
        # both stages as one batch shape, so they share one compiled program: the smaller
        # batch is padded with copies of its first row, whose results are dropped
        batch = max(len(draws), K * replicates)
        padded = np.concatenate([draws, np.repeat(draws[:1], batch - len(draws), axis=0)])
        minima, values, n_evals = self.tempered_minima(np.full(batch, top), padded, max_iter)
        n_evals = n_evals * len(draws) // batch
        values = values[: len(draws)].reshape(replicates, restarts)
        best = minima[: len(draws)].reshape(replicates, restarts, -1)[
            np.arange(replicates), np.argmin(values, axis=1)
        ]  # (R, W)
        lam_grid = np.repeat(lambdas, replicates)  # link-major
        from_best = np.tile(best, (K, 1))
        pad = batch - len(from_best)
        starts, values, evals = self.tempered_minima(
            np.concatenate([lam_grid, np.full(pad, top)]),
            np.concatenate([from_best, np.repeat(from_best[:1], pad, axis=0)]),
            max_iter,
        )
        starts, values = starts[: len(from_best)], values[: len(from_best)]
        evals = evals * len(from_best) // batch
        starts = np.where(np.isfinite(values)[:, None], starts, from_best)
        starts[lam_grid == top] = from_best[lam_grid == top]
        return starts, self.alpha_given(starts, rng), n_evals + evals

    def alpha_given(self, w: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """alpha_k | w ~ Gamma(a_k + W_k/2, rate b_k + w_k^T w_k / 2), shape (B, K): the
        chains' first auxiliary state (the sampler's ``gibbs`` draws it afresh in JAX)."""
        prior = self.objective.prior
        rate = prior.rates + 0.5 * prior.sum_squares(w)
        return rng.gamma(self.e0_shapes, 1.0 / rate)

    def sample_prior(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Exact draws from the reference: alpha ~ Gamma(a, b), w | alpha ~ N(0, I/alpha)."""
        prior = self.objective.prior
        alpha = rng.gamma(prior.shapes, 1.0 / prior.rates, size=(n, prior.n_groups))
        w = rng.standard_normal((n, self.objective.network.n_weights))
        return w / np.sqrt(prior.per_weight(alpha)), alpha

    def start_points(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Typical starting states for chains: alpha at its hyperprior mean (capped below at
        1e-2 so that very broad hyperpriors do not start chains at huge weights), w | alpha."""
        prior = self.objective.prior
        alpha = np.broadcast_to(
            np.maximum(prior.shapes / prior.rates, 1e-2), (n, prior.n_groups)
        ).copy()
        w = rng.standard_normal((n, self.objective.network.n_weights))
        return w / np.sqrt(prior.per_weight(alpha)), alpha

    def noncentred(self) -> NoncentredPrior:
        """The reference exp(-E_0) in non-centred coordinates u = (z, eta): z ~ N(0, I_W),
        eta_k = ln alpha_k with alpha_k ~ Gamma(a_k, b_k), and w = z / sqrt(alpha_k(w)) per
        weight; integrating alpha out gives back the Student-t exp(-E_0(w)), so an integral
        of a function of w against the prior is the same in either. ln density of eta_k:
        a_k eta_k - b_k e^eta_k + a_k ln b_k - ln Gamma(a_k) (the Jacobian of alpha = e^eta
        included). Light-tailed in every coordinate, which samplers that learn a scale from
        prior draws (nested sampling's live points) need: Neal's hyperpriors (shape 0.1)
        make E_0 nearly Cauchy in w."""
        from jax.scipy.special import gammaln

        prior = self.objective.prior
        shapes, rates = np.asarray(prior.shapes, float), np.asarray(prior.rates, float)
        a, b = jnp.asarray(shapes), jnp.asarray(rates)
        group = jnp.asarray(self.spec.group_index)
        n_weights = self.objective.network.n_weights
        const = float(np.sum(shapes * np.log(rates) - gammaln(shapes)) - 0.5 * n_weights * LOG_2PI)

        def weights(u):
            return u[:n_weights] * jnp.exp(-0.5 * u[n_weights:][group])

        def log_prior(u):
            z, eta = u[:n_weights], u[n_weights:]
            return -0.5 * jnp.sum(z * z) + jnp.sum(a * eta - b * jnp.exp(eta)) + const

        def sample(n: int, rng: np.random.Generator) -> np.ndarray:
            alpha = rng.gamma(shapes, 1.0 / rates, size=(n, len(shapes)))
            return np.concatenate([rng.standard_normal((n, n_weights)), np.log(alpha)], axis=1)

        symmetry = self.symmetry
        canonical = (
            (lambda u: u)
            if symmetry is None
            else symmetry.padded(len(shapes) + n_weights).canonical
        )
        return NoncentredPrior(log_prior, weights, sample, canonical)

    def noise_variance_mean(self, w: np.ndarray) -> np.ndarray:
        """E[1/beta | w, D] = (b + E_D) / (a + N/2 - 1), shape (B,)."""
        e_d = self.objective.data_error(w)
        return (self.noise_prior.rate + e_d) / max(self.phi_shape - 1.0, 1e-12)
