"""The ADF / EP updates of the Gaussian weight factors and the Gamma prior precision.

``adf_update`` is paper 004 eq. 6 (Minka 2001): m' = m + v dlnZ/dm,
v' = v - v^2 [(dlnZ/dm)^2 - 2 dlnZ/dv]. ``refine_prior`` is the EP refinement of the prior
factors N(w | 0, 1/lambda) with lambda ~ Gamma (HL&A 2015 sec. 3.3; paper 004 sec. 3),
done weight by weight as a ``jax.lax.scan`` over one replicate's weights.
"""

from __future__ import annotations

from typing import NamedTuple

from ...runtime.jax_runtime import jax, jnp
from .likelihoods import gamma_moment_match

MIN_VARIANCE = 1e-100
MAX_CAVITY_VARIANCE = 1e6


def adf_update(m, v, g_m, g_v, fixed_variance: bool = False):
    """New (m, v) of one weight array by eq. 6 and the mask of accepted elements.

    An element whose new variance is not positive, or whose new mean or variance is not
    finite, keeps its old (m, v) (the caller counts the rejections). With ``fixed_variance``
    (EBP) only the mean moves and v stays as it is.

    The compiler recomputes the candidate (m', v') inside each consumer (the acceptance test,
    the two selects, the caller's rejection count): with the layer's output gradients computed
    once (``network.backward``) that chain is a few operations per weight, and this is faster
    than computing (m', v') once into a stacked array, for one replicate as for a batch.
    """
    m_new = m + v * g_m
    if fixed_variance:
        ok = jnp.isfinite(m_new)
        return jnp.where(ok, m_new, m), v, ok
    v_new = v - v * v * (g_m * g_m - 2.0 * g_v)
    ok = jnp.isfinite(m_new) & jnp.isfinite(v_new) & (v_new > MIN_VARIANCE)
    return jnp.where(ok, m_new, m), jnp.where(ok, v_new, v), ok


class PriorSites(NamedTuple):
    """EP approximations of the prior factors, one per weight, flat over layers (..., W):
    Gaussian site N(m_hat, v_hat) in w and a Gamma-like site lambda^(a_hat - 1) e^(-b_hat lambda)."""

    m_hat: jax.Array
    v_hat: jax.Array
    a_hat: jax.Array
    b_hat: jax.Array

    @classmethod
    def initial(cls, n_rep: int, n_weights: int, variance: float) -> PriorSites:
        """Sites that hold the prior's variance b/(a-1) and no information about lambda.
        Every leaf is a strongly typed float64 array, as the filter's outputs are: a weakly
        typed one (what ``jnp.full`` makes of a Python float) would make the first epoch a
        program of its own, compiled a second time for the next."""
        shape = (n_rep, n_weights)
        f64 = jnp.float64
        return cls(
            jnp.zeros(shape, f64), jnp.full(shape, variance, f64), jnp.ones(shape, f64),
            jnp.zeros(shape, f64),
        )  # fmt: skip


def _refine_one(carry, weight):
    """EP update of one weight's prior site (HL&A 2015 sec. 3.3, eq. 6 with y = 0).

    ``carry`` = [a, b, skipped] and ``weight`` = [m, v, m_hat, v_hat, a_hat, b_hat] are packed
    vectors, so each scan step reads and writes one array (a handful of kernels per weight
    instead of one per quantity)."""
    a, b, skipped = carry[0], carry[1], carry[2]
    mj, vj, m_hat, v_hat, a_hat, b_hat = (weight[i] for i in range(6))
    v_c = 1.0 / (1.0 / vj - 1.0 / v_hat)
    m_c = v_c * (mj / vj - m_hat / v_hat)
    a_c = a - a_hat + 1.0
    b_c = b - b_hat
    ok = (v_c > 0) & (v_c < MAX_CAVITY_VARIANCE) & (b_c > 0) & (a_c > 1)
    s = v_c + b_c / (a_c - 1.0)
    g_m = -m_c / s
    g_v = 0.5 * (m_c * m_c / s - 1.0) / s
    m_new = m_c + v_c * g_m
    v_new = v_c - v_c * v_c * (g_m * g_m - 2.0 * g_v)
    a_new, b_new = gamma_moment_match(jnp.zeros(1), m_c[None], v_c[None], a_c, b_c)
    v_hat_new = 1.0 / (1.0 / v_new - 1.0 / v_c)
    m_hat_new = v_hat_new * (m_new / v_new - m_c / v_c)
    # Like the authors' code (network.c, refine_prior), a proper cavity's update is taken
    # whatever Gamma it gives, a <= 1 included: later cavities are then improper (a_c <= 1)
    # and skipped, so the prior stops being refined. Refusing such an update instead lets the
    # Gamma absorb every later site; its variance b/(a-1) then runs away (to 1e9 after one
    # epoch on five-layer networks) and deep networks lose their prior. Only non-finite
    # results and non-positive weight variances are refused, which the C code never meets.
    ok &= jnp.isfinite(m_new) & (v_new > MIN_VARIANCE)
    ok &= jnp.isfinite(v_hat_new) & jnp.isfinite(m_hat_new)
    ok &= jnp.isfinite(a_new) & jnp.isfinite(b_new)
    new = jnp.stack([m_new, v_new, m_hat_new, v_hat_new, a_new - a_c + 1.0, b_new - b_c])
    carry = jnp.where(ok, jnp.stack([a_new, b_new, skipped]), jnp.stack([a, b, skipped + 1.0]))
    return carry, jnp.where(ok, new, weight)


def refine_prior(m, v, sites: PriorSites, a, b, unroll: int = 1):
    """One sequential EP sweep over the prior factors of one replicate (HL&A 2015 sec. 3.3).

    ``m``, ``v`` (W,) flat weight moments, ``sites`` (W,) each, ``a``, ``b`` scalars: the Gamma
    of lambda. For each weight in turn: remove its site to get the cavity
    N(m_c, v_c) Gamma(a_c, b_c); match moments of N(w|0, 1/lambda) times the cavity, whose
    normaliser is approximated by N(m_c | 0, v_c + b_c/(a_c - 1)) (the same form as the noise
    factor, so ``gamma_moment_match`` and eq. 6 apply with y = 0); store the new site.
    Weights whose cavity is improper (v_c <= 0 or > 1e6, b_c <= 0, a_c <= 1) are skipped;
    a proper cavity's update is kept even when the new Gamma is improper, as the authors' C
    code keeps it (see ``_refine_one``).
    Returns ``(m, v, sites, a, b, skipped)``, skipped the number of skipped or rejected sites.
    """
    carry = jnp.stack([a, b, jnp.zeros_like(a)])
    carry, packed = jax.lax.scan(
        _refine_one, carry, jnp.stack([m, v, *sites], axis=-1), unroll=unroll
    )
    m, v, *new_sites = (packed[:, i] for i in range(6))
    return m, v, PriorSites(*new_sites), carry[0], carry[1], carry[2].astype(jnp.int64)
