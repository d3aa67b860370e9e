"""The regression network, its penalised error and the conjugate hyperparameter conditionals
in JAX, for one weight vector at a time (samplers vmap them over chains).

y_p(x) = sum_j W2[p, j] g(W1[j] . x + b1[j]) + b2[p]          (paper 001 sec. 3, thesis eq. 5.2)
E_D(w) = 1/2 sum_n ||y(x_n; w) - t_n||^2,   E_Wk = 1/2 w_k^T w_k
M(w)   = beta E_D(w) + sum_k alpha_k E_Wk(w)                     (thesis eq. 5.4-5.6)

with g one of tanh, erf(a / sqrt 2) and the identity, and ``hidden = 0`` the linear model
y = Wd x + b2. The flat weight layout is that of ``models.network.Network``
([W1 (H x I), b1, W2 (P x H), b2] or [Wd (P x I), b2]) and the groups those of a
``models.priors.WeightPrior`` (single, grouped or ARD), so that a weight vector means the
same here and in the numpy code, which keeps the exact Hessians the Laplace and variational
methods need.

The Gibbs conditionals of the hyperparameters given the weights (Neal 1996 sec. 3.2;
thesis sec. 5.3.1) are conjugate Gamma distributions (shape, rate):

alpha_k | w ~ Gamma(a_k + W_k / 2, b_k + w_k^T w_k / 2),   beta | w ~ Gamma(a + N P / 2, b + E_D(w)).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from ..runtime.jax_runtime import jax, jnp
from .network import Network
from .objective import PenalisedError
from .priors import GammaPrior, WeightPrior
from .unit_symmetry import UnitSymmetry

SQRT_HALF = float(np.sqrt(0.5))
SQRT_2_OVER_PI = float(np.sqrt(2.0 / np.pi))  # d erf(a / sqrt 2) / da at a = 0
# up to this many inputs and outputs the layers are written as sums of outer products and
# per-output matrix-vector products: 0.56 against 0.81 ms per batched gradient, 18 chains,
# H = 24, in a compiled loop on the robot arm (the same numbers to 1e-13); with 13 inputs
# (UCI) the matmuls are faster (1.3 against 6.4 ms)
FEW = 4


@dataclass(frozen=True, eq=False)
class NetworkSpec:
    """Architecture, activation and weight groups with their Gamma hyperpriors: everything
    the JAX functions need apart from data and weights (static: closed over when traced)."""

    n_inputs: int
    n_hidden: int
    n_outputs: int
    activation: str
    group_index: np.ndarray  # (W,) group of each weight
    prior_shapes: np.ndarray  # (K,) Gamma shape a_k of each group's precision
    prior_rates: np.ndarray  # (K,) Gamma rate b_k

    @property
    def n_weights(self) -> int:
        return len(self.group_index)

    @property
    def n_groups(self) -> int:
        return len(self.prior_shapes)

    @property
    def group_sizes(self) -> np.ndarray:
        return np.bincount(self.group_index, minlength=self.n_groups)


def network_spec(network: Network, prior: WeightPrior | None = None) -> NetworkSpec:
    """The spec of a ``models.network.Network`` with the groups of ``prior`` (one group of
    all weights with a unit Gamma hyperprior when None). ``nrd`` priors (products of node
    precisions) are not expressible here and are refused."""
    if prior is None:
        index = np.zeros(network.n_weights, dtype=int)
        shapes, rates = np.ones(1), np.ones(1)
    else:
        if prior.partner_index is not None:
            raise ValueError(f"prior {prior.kind!r} has no group-wise conjugate form")
        if len(prior.group_index) != network.n_weights:
            raise ValueError("the prior's groups do not match the network's weights")
        index, shapes, rates = np.asarray(prior.group_index), prior.shapes, prior.rates
    return NetworkSpec(
        network.n_inputs, network.n_hidden, network.n_outputs, network.activation_name,
        np.array(index, dtype=int), np.array(shapes, dtype=float), np.array(rates, dtype=float),
    )  # fmt: skip


def objective_spec(objective: PenalisedError) -> NetworkSpec:
    """The spec of a ``models.objective.PenalisedError`` (its network and weight prior)."""
    return network_spec(objective.network, objective.prior)


def activation(name: str, a: jax.Array) -> jax.Array:
    """g(a): tanh, erf(a / sqrt 2) (paper 002 eq. 2) or the identity."""
    if name == "tanh":
        return jnp.tanh(a)
    if name == "erf":
        return jax.scipy.special.erf(a * SQRT_HALF)
    if name == "linear":
        return a
    raise ValueError(f"unknown activation {name!r}")


def forward(spec: NetworkSpec, x: jax.Array, w: jax.Array) -> jax.Array:
    """Network outputs y (N, P) at inputs x (N, I) for one weight vector w (W,)."""
    return _layers(spec, x, w)[2]


def _unpack(spec: NetworkSpec, w: jax.Array):
    """(W1 (H, I), b1, W2 (P, H), b2) of a flat weight vector with hidden units."""
    I, H, P = spec.n_inputs, spec.n_hidden, spec.n_outputs
    start = H * I + H
    w1, b1 = w[: H * I].reshape(H, I), w[H * I : start]
    return w1, b1, w[start : start + P * H].reshape(P, H), w[start + P * H : start + P * H + P]


ODD_ACTIVATIONS = ("tanh", "erf")


def network_symmetry(spec: NetworkSpec) -> UnitSymmetry | None:
    """The hidden layer's symmetries on the flat weights [W1 (H, I), b1 (H), W2 (P, H), b2 (P)]
    (``models.unit_symmetry``): unit j owns W1[j], b1[j] and W2[:, j], its key is W2[0, j];
    None without a hidden layer."""
    I, H, P = spec.n_inputs, spec.n_hidden, spec.n_outputs
    if H == 0:
        return None
    units = tuple(
        (*range(j * I, (j + 1) * I), H * I + j, *(H * I + H + p * H + j for p in range(P)))
        for j in range(H)
    )
    return UnitSymmetry(spec.n_weights, units, I + 1, spec.activation in ODD_ACTIVATIONS)


def canonical_units(spec: NetworkSpec, w: jax.Array) -> jax.Array:
    """One representative of w's orbit under the hidden layer's symmetries, which leave the
    network's function and every prior here unchanged: permutations of the H units and, for
    an odd activation (tanh, erf), a sign flip of a unit's input weights, bias and output
    weights (|G| = 2^H H!, paper 001 sec. 5). The representative has every unit's first
    output weight >= 0 (odd activations) and the units sorted by it, largest first."""
    symmetry = network_symmetry(spec)
    return w if symmetry is None else symmetry.canonical(w)


def _few(spec: NetworkSpec) -> bool:
    return spec.n_inputs <= FEW and spec.n_outputs <= FEW


def _slope(spec: NetworkSpec, a: jax.Array, z: jax.Array) -> jax.Array:
    """g'(a) from the pre-activation a and z = g(a)."""
    if spec.activation == "tanh":
        return 1.0 - z * z
    if spec.activation == "erf":
        return SQRT_2_OVER_PI * jnp.exp(-0.5 * a * a)
    return jnp.ones_like(a)


def _layers(spec: NetworkSpec, x: jax.Array, w: jax.Array):
    """Pre-activations a (N, H), hidden outputs z = g(a) and outputs y (N, P); a and z are
    None for the linear model. With few inputs and outputs the first layer is a sum of I
    outer products (vmapped over chains, XLA fuses it with g and the bias into one pass,
    where a contraction over so few inputs runs as many small matmuls) and the second P
    matrix-vector products."""
    I, P = spec.n_inputs, spec.n_outputs
    if spec.n_hidden == 0:
        wd = w[: P * I].reshape(P, I)
        return None, None, x @ wd.T + w[P * I : P * I + P]
    w1, b1, w2, b2 = _unpack(spec, w)
    if _few(spec):
        a = b1 + sum(x[:, i : i + 1] * w1[:, i] for i in range(I))
        z = activation(spec.activation, a)
        return a, z, jnp.stack([z @ w2[p] for p in range(P)], axis=1) + b2
    a = x @ w1.T + b1
    z = activation(spec.activation, a)
    return a, z, z @ w2.T + b2


def _data_error_forward(spec: NetworkSpec, x: jax.Array, t: jax.Array, w: jax.Array):
    """E_D(w) and what its gradient reuses: inputs, weights, a, z and the residuals."""
    a, z, y = _layers(spec, x, w)
    r = y - t
    return 0.5 * jnp.sum(r * r), (x, w, a, z, r)


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def data_error(spec: NetworkSpec, x: jax.Array, t: jax.Array, w: jax.Array) -> jax.Array:
    """E_D(w) = 1/2 sum_n ||y(x_n; w) - t_n||^2 (thesis eq. 5.4) for one weight vector.

    Its gradient is back-propagation written out (Bishop 1995 sec. 4.8), not traced by
    autodiff: with r_n = y_n - t_n and delta_nj = g'(a_nj) sum_p r_np W2[p, j],
    dE/dW2 = r^T z, dE/db2 = sum_n r_n, dE/dW1 = delta^T x, dE/db1 = sum_n delta_n.
    Vmapped over chains this is one fused pass per layer; autodiff's version cost 1.3x the
    CPU time per batched gradient on the robot arm (18 chains, H = 24). Only first
    derivatives exist (reverse mode); the exact Hessians are in ``models.objective``.
    """
    return _data_error_forward(spec, x, t, w)[0]


def _data_error_bwd(spec, saved, cotangent):
    x, w, a, z, r = saved
    g = cotangent * r  # (N, P)
    zeros = (jnp.zeros_like(x), jnp.zeros_like(r))
    if spec.n_hidden == 0:
        return (*zeros, jnp.concatenate([(g.T @ x).reshape(-1), g.sum(0)]))
    I, P = spec.n_inputs, spec.n_outputs
    _, _, w2, _ = _unpack(spec, w)
    if _few(spec):
        g_w2 = jnp.stack([g[:, p] @ z for p in range(P)])
        delta = sum(g[:, p : p + 1] * w2[p] for p in range(P)) * _slope(spec, a, z)
        g_w1 = jnp.stack([x[:, i] @ delta for i in range(I)], axis=1)
    else:
        g_w2 = g.T @ z
        delta = (g @ w2) * _slope(spec, a, z)
        g_w1 = delta.T @ x
    grad = jnp.concatenate([g_w1.reshape(-1), delta.sum(0), g_w2.reshape(-1), g.sum(0)])
    return (*zeros, grad)


data_error.defvjp(_data_error_forward, _data_error_bwd)


def group_sum_squares(spec: NetworkSpec, w: jax.Array) -> jax.Array:
    """w_k^T w_k of each group k, shape (K,)."""
    return jax.ops.segment_sum(w * w, spec.group_index, num_segments=spec.n_groups)


def weight_error(spec: NetworkSpec, w: jax.Array, alpha: jax.Array) -> jax.Array:
    """sum_k alpha_k E_Wk(w) = 1/2 sum_i alpha_{k(i)} w_i^2 (thesis eq. 5.5-5.6)."""
    return 0.5 * jnp.sum(alpha[spec.group_index] * w * w)


def penalised_error(
    spec: NetworkSpec, x: jax.Array, t: jax.Array, w: jax.Array, alpha: jax.Array, beta
) -> jax.Array:
    """M(w) = beta E_D(w) + sum_k alpha_k E_Wk(w), alpha (K,), beta scalar (thesis eq. 5.18)."""
    return beta * data_error(spec, x, t, w) + weight_error(spec, w, alpha)


def sample_alpha(key: jax.Array, spec: NetworkSpec, w: jax.Array) -> jax.Array:
    """alpha_k | w ~ Gamma(a_k + W_k / 2, b_k + w_k^T w_k / 2), all K groups at once."""
    shape = spec.prior_shapes + 0.5 * spec.group_sizes
    rate = spec.prior_rates + 0.5 * group_sum_squares(spec, w)
    return jax.random.gamma(key, shape) / rate


def sample_beta(key: jax.Array, e_d: jax.Array, n_targets: int, noise: GammaPrior) -> jax.Array:
    """beta | w ~ Gamma(a + N P / 2, b + E_D(w)) for N P noise terms and hyperprior (a, b)."""
    return jax.random.gamma(key, noise.shape + 0.5 * n_targets) / (noise.rate + e_d)


def gibbs_hyperparameters(
    key: jax.Array,
    spec: NetworkSpec,
    x: jax.Array,
    t: jax.Array,
    w: jax.Array,
    noise: GammaPrior,
) -> tuple[jax.Array, jax.Array]:
    """One draw of (alpha, beta) from their conditionals given w (independent given w):
    the K + 1 Gamma variates of ``sample_alpha`` and ``sample_beta`` in one call, since each
    call of the Gamma sampler (a rejection loop) is a large piece of the compiled program."""
    shape = jnp.append(spec.prior_shapes + 0.5 * spec.group_sizes, noise.shape + 0.5 * np.size(t))
    rate = jnp.append(
        spec.prior_rates + 0.5 * group_sum_squares(spec, w), noise.rate + data_error(spec, x, t, w)
    )
    draw = jax.random.gamma(key, shape) / rate
    return draw[:-1], draw[-1]
