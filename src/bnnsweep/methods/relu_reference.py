"""Reference fits of the ADF methods' ReLU classifier with a fixed N(0, prior_variance) prior
(paper 004 Fig. 2 top): ``relu_map``, the point estimate ("backpropagation"), and
``relu_hmc``, the sampled "ground truth" posterior predictive.

The moment network with all weight variances 0 is the ordinary network, and its reverse pass
with psi = 0 gives the ordinary gradient, so the ADF code is reused: ln Z of the probit or
softmax-bound likelihood at psi = 0 is the exact log-likelihood ln Phi(t f) or y.f - lse(f).
``relu_hmc`` runs the package's compiled hybrid Monte Carlo kernel on the same energy written
in JAX (``relu_potential``; paper 004 used NUTS, 20000 samples after 5000 burn-in; here
several HMC chains with step sizes adapted during burn-in only).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..datasets.base import Split
from ..engines.adf import choices
from ..engines.adf import likelihoods as lik
from ..engines.adf.network import Architecture, backward, forward
from ..engines.adf.replicates import n_classes_of
from ..engines.mcmc import hmc as hmc_sampler
from ..method_base import FitResult, check_choice, check_positive
from ..runtime.jax_runtime import jax, jnp, key_from_rng
from . import JAX, SCIPY, Method, no_work_model, register

LIKELIHOODS = ("probit", "softmax")


@dataclass(frozen=True)
class PointSettings:
    hidden: int = 10
    layers: int = 1
    activation: str = "relu"
    likelihood: str = "softmax"
    prior_variance: float = 100.0
    max_iter: int = 5000

    def validate(self) -> None:
        for key in ("hidden", "layers", "prior_variance", "max_iter"):
            check_positive(key, getattr(self, key))
        check_choice("activation", self.activation, ("relu",))
        check_choice("likelihood", self.likelihood, LIKELIHOODS)


@dataclass(frozen=True)
class ReferenceHMCSettings(PointSettings):
    chains: int = 4
    burn_in: int = 1000
    samples: int = 2000
    leapfrog: int = 30
    step_size: float = 0.05
    target_accept: float = 0.8
    predictive_samples: int = 2000

    def validate(self) -> None:
        super().validate()
        for key in ("chains", "burn_in", "samples", "leapfrog", "step_size", "predictive_samples"):
            check_positive(key, getattr(self, key))


def accepted_tasks(settings: PointSettings) -> tuple[str, ...]:
    return choices.TASKS[settings.likelihood]


class ClassifierPosterior:
    """Negative log posterior of a batch of weight vectors (B, W) of the ReLU classifier."""

    def __init__(self, split: Split, settings: PointSettings):
        n_out = choices.n_outputs(settings.likelihood, n_classes_of([split]), 1)
        self.arch = Architecture((split.n_inputs, *[settings.hidden] * settings.layers, n_out))
        self.sizes = [o * i for o, i in self.arch.shapes]
        self.split, self.settings = split, settings

    def unpack(self, w: np.ndarray) -> list[np.ndarray]:
        parts = np.split(w, np.cumsum(self.sizes)[:-1], axis=1)
        return [p.reshape(len(w), *s) for p, s in zip(parts, self.arch.shapes, strict=True)]

    def outputs(self, w: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Network outputs (B, T, P) at inputs x (T, I)."""
        means = self.unpack(w)
        nu, _ = forward(
            means, [np.zeros_like(m) for m in means], np.broadcast_to(x, (len(w), *x.shape))
        )
        return nu

    def energy(self, w: np.ndarray, _theta=None) -> tuple[np.ndarray, np.ndarray]:
        """U(w) = -sum_n ln p(y_n | x_n, w) + |w|^2 / (2 prior_variance) and dU/dw."""
        means = self.unpack(w)
        zeros = [np.zeros_like(m) for m in means]
        x = np.broadcast_to(self.split.x_train, (len(w), *self.split.x_train.shape))
        nu, _, cache = forward(means, zeros, x, keep=True)
        B, N, P = nu.shape
        y = np.broadcast_to(self.split.y_train, (B, N, 1)).reshape(B * N, 1)
        flat_nu = nu.reshape(B * N, P)
        zero = np.zeros_like(flat_nu)
        if self.settings.likelihood == "probit":
            log_z, g_nu, _ = lik.probit_log_z(flat_nu, zero, y)
        else:
            log_z, g_nu, _ = lik.softmax_bound_log_z(flat_nu, zero, y)
        grads, _ = backward(means, zeros, cache, g_nu.reshape(B, N, P), np.zeros((B, N, P)))
        grad = np.concatenate([g.reshape(B, -1) for g in grads], axis=1)
        var = self.settings.prior_variance
        u = -log_z.reshape(B, N).sum(axis=1) + 0.5 * np.sum(w * w, axis=1) / var
        return u, -grad + w / var

    def class_probs(self, w: np.ndarray, x: np.ndarray, chunk: int = 100) -> np.ndarray:
        """Class probabilities averaged over the weight vectors w (B, W), shape (T, C),
        accumulated over chunks of weight vectors to bound memory."""
        from scipy.special import softmax

        total = 0.0
        for start in range(0, len(w), chunk):
            nu = self.outputs(w[start : start + chunk], x)
            if self.settings.likelihood == "probit":
                probs = lik.probit_probs(nu, np.zeros_like(nu))
            else:
                probs = softmax(nu, axis=-1)
            total = total + probs.sum(axis=0)
        return total / len(w)


def _result(post: ClassifierPosterior, w: np.ndarray, n_evals: int) -> FitResult:
    split = post.split

    def scored(x, y):
        probs = post.class_probs(w, x)
        labels = y[:, 0].astype(int)
        return probs, np.log(np.maximum(probs[np.arange(len(labels)), labels], 1e-300))

    probs, logpred = scored(split.x_test, split.y_test)
    _, train_logpred = scored(split.x_train, split.y_train)
    label = np.argmax(probs, axis=1)[:, None].astype(float)
    result = FitResult(
        pred_mean=label, pred_var=np.full_like(label, np.nan), likelihood=post.settings.likelihood,
        class_probs=probs, test_logpred=logpred, train_logpred=train_logpred, n_grad_evals=n_evals,
    )  # fmt: skip
    result.diagnostics["n_weights"] = post.arch.n_weights
    return result


def fit(split: Split, settings: PointSettings, rng: np.random.Generator, log=print) -> FitResult:
    """``relu_map``: MAP weights by L-BFGS; predictions are the network's class probabilities."""
    from scipy.optimize import minimize

    post = ClassifierPosterior(split, settings)

    def objective(w):
        u, g = post.energy(w[None])
        return float(u[0]), g[0]

    w0 = np.concatenate([m.ravel() for m in post.arch.init_means([rng])])
    found = minimize(
        objective, w0, jac=True, method="L-BFGS-B", options={"maxiter": settings.max_iter}
    )
    result = _result(post, found.x[None], int(found.nfev))
    result.diagnostics["map_objective"] = float(found.fun)
    if not found.success:
        result.flag("not_converged", f"L-BFGS: {found.message}")
    return result


def relu_outputs(shapes, x, w):
    """Outputs (N, P) of the ReLU network with flat weights w (one vector; layer l a row-major
    (D_l, D_{l-1} + 1) block whose last column multiplies the bias unit) at inputs x (N, I):
    z_l = relu([z_{l-1}, 1] W_l^T / sqrt(D_{l-1} + 1)), linear output layer (paper 004 eq. 7
    with every weight variance 0, the fan-in scaling of ``engines.adf.network.forward``)."""
    z, start = x, 0
    for layer, (n_out, n_in) in enumerate(shapes):
        m = w[start : start + n_out * n_in].reshape(n_out, n_in)
        start += n_out * n_in
        a = (z @ m[:, :-1].T + m[:, -1]) / np.sqrt(n_in)
        z = a if layer == len(shapes) - 1 else jnp.where(a > 0.0, a, 0.0)
    return z


def relu_potential(shapes, likelihood: str, prior_variance: float, x, y):
    """U(w) = -sum_n ln p(y_n | x_n, w) + |w|^2 / (2 prior_variance) for one weight vector,
    a JAX function for the compiled HMC kernel: ln p = ln Phi(t f) with t = 2 y - 1 (probit)
    or f_y - ln sum_c exp f_c (softmax), the psi = 0 values of paper 004 eq. 24 and 14."""
    labels = jnp.asarray(y[:, 0].astype(int))
    x = jnp.asarray(x)

    def potential(params, theta, w):
        f = relu_outputs(shapes, x, w)
        if likelihood == "probit":
            log_lik = jax.scipy.special.log_ndtr((2.0 * labels - 1.0) * f[:, 0])
        else:
            log_lik = jnp.take_along_axis(f, labels[:, None], axis=1)[:, 0] - (
                jax.scipy.special.logsumexp(f, axis=1)
            )
        return -jnp.sum(log_lik) + 0.5 * jnp.dot(w, w) / prior_variance

    return potential


def fit_hmc(
    split: Split, settings: ReferenceHMCSettings, rng: np.random.Generator, log=print
) -> FitResult:
    """``relu_hmc``: HMC chains (the compiled kernel of ``engines.mcmc.hmc``) from random
    fan-in initialisations; predictions average the class probabilities over
    ``predictive_samples`` kept samples."""
    post = ClassifierPosterior(split, settings)
    w0 = np.concatenate(
        [m.reshape(settings.chains, -1) for m in post.arch.init_means([rng] * settings.chains)],
        axis=1,
    )
    potential = relu_potential(
        post.arch.shapes, settings.likelihood, settings.prior_variance,
        split.x_train, split.y_train,
    )  # fmt: skip
    run = hmc_sampler.sample(
        potential, w0, None, None, key_from_rng(rng),
        n_burn=settings.burn_in, n_samples=settings.samples,
        n_leapfrog_burn=settings.leapfrog, n_leapfrog=settings.leapfrog,
        step_size=settings.step_size, target_accept=settings.target_accept, log=log,
    )  # fmt: skip
    flat = run.samples.reshape(-1, run.samples.shape[-1])
    pick = np.linspace(0, len(flat) - 1, min(settings.predictive_samples, len(flat))).astype(int)
    result = _result(post, flat[pick], run.n_grad_evals)
    result.traces["sample_energy"] = (("sample", "chain"), run.energy)
    result.diagnostics.update(
        acceptance_rate=float(run.accepted.mean()), divergent=int(run.divergent.sum())
    )
    if run.divergent.sum() > 0.1 * flat.shape[0]:
        result.flag("diverged", f"{run.divergent.sum()} of {flat.shape[0]} trajectories diverged")
    return result


register(
    Method(
        "relu_map",
        PointSettings,
        fit,
        ("hidden",),
        "point estimate (MAP by L-BFGS) of the ADF methods' ReLU classifier: paper 004 Fig. 2's backpropagation baseline",
        tasks=accepted_tasks,
        work=no_work_model,
        imports=(*JAX, *SCIPY),
    )
)
register(
    Method(
        "relu_hmc",
        ReferenceHMCSettings,
        fit_hmc,
        ("hidden",),
        "hybrid Monte Carlo reference posterior of the ADF methods' ReLU classifier (paper 004 Fig. 2's ground truth)",
        tasks=accepted_tasks,
        work=no_work_model,
        imports=(*JAX, *SCIPY),
    )
)
