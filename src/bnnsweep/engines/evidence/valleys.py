"""Model evidence as a sum over the posterior's valleys: a lower bound with a coverage check.

The posterior exp(-E(w)) / p(D), E(w) = phi(w) + E_0(w) (the chaining target at lambda = 1,
hyperparameters integrated out), has many valleys: a network with H hidden units is
unchanged by the 2^H H! sign flips and permutations of its hidden units (paper 001 eq. 11's
ln h! + h ln 2; Bishop 1995 sec. 10.10), and beyond those images the valleys differ. For
valleys v with disjoint basins B_v and orbit sizes |G v| (the number of distinct images of
v, 2^H H! unless v is fixed by some symmetry: a dead unit, two equal units),

    p(D) = int exp(-E) dw >= sum_v |G v| Z_v,    Z_v = int_{B_v} exp(-E(w)) dw,

with equality when every valley with mass is found. Each Z_v is estimated by annealed
importance sampling (Neal 2001) from a Gaussian N(c_v, L_v L_v^T) matched to the valley (the
mean and covariance of a short HMC run started at the mode; the Laplace Gaussian
N(m_v, A_v^-1) where the run leaves the valley) to exp(-E), along
p_beta(z) propto exp(-beta E(c_v + L_v z) - (1 - beta) |z|^2 / 2) in the whitened coordinates
w = c_v + L_v z, so that HMC with identity mass in z is HMC with that covariance's inverse
as mass matrix in w. AIS underestimates ln Z_v in expectation
(Jensen), so the sum stays a lower bound in expectation as long as the particles stay in
their valley (checked: ``stayed``).

The procedure, as a reviewer can check it step by step:

1. minima of E from ``starts`` random starts (L-BFGS, then trust-region Newton with the
   exact Hessian), kept where the gradient is below ``gtol`` and the Hessian positive definite;
2. minima merged into valleys by their distance modulo the symmetry group (an assignment
   problem over hidden units with sign flips: ``aligned_distance``);
3. each valley's Laplace mass (``laplace_log_mass``), its orbit size (``orbit_size``) and,
   for the valleys within ``mass_window`` nats of the best by Laplace mass, its AIS mass; a
   valley whose AIS particles mostly end nearer another valley's mode is a side pocket of
   that valley's basin, not a basin of its own: its mass is left out (``min_stayed``);
4. coverage: how many valleys were first found by the last ``coverage_fraction`` of the
   starts, and what share of the total they carry; a large share means more starts would
   find more mass, and the estimate is marked not_converged.

Targets give ``phi_one`` and ``prior_energy_one`` (JAX, one weight vector), ``start_points``
or ``sample_prior`` (numpy draws to start from) and optionally ``symmetry`` (a
``models.unit_symmetry.UnitSymmetry``: the coordinates each hidden unit owns); without it
the group is trivial.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ...models.marginal import lbfgs_program
from ...runtime.jax_runtime import jax, jnp, key_from_rng
from .chaining import ais_constants, ais_program
from .estimators import ais_estimate
from .result import EvidenceEstimate

LOG_2PI = float(np.log(2.0 * np.pi))


@dataclass(frozen=True)
class ValleySettings:
    starts: int = 64  # random starts of the minimiser
    start_iter: int = 4000  # L-BFGS iterations per start
    newton_iter: int = 1000  # at most this many trust-region Newton steps polish a minimum
    gtol: float = 1e-3  # max |dE/dw| of an accepted minimum
    same_valley: float = 1e-3  # aligned distance / (1 + |w|) below which minima are one valley
    mass_window: float = 30.0  # AIS for valleys within this many nats of the best Laplace mass
    max_valleys: int = 24  # at most this many valleys get AIS (the heaviest by Laplace mass)
    particles: int = 32  # AIS particles per valley
    groups: int = 4  # independent groups of particles (jackknife s.e.)
    temperatures: int = 2000  # AIS temperatures from the Laplace Gaussian to the valley
    schedule_power: float = 2.0  # beta_k = (k / T)^power
    leapfrog: int = 10  # leapfrog steps per AIS transition
    step: float = 0.3  # initial HMC step in whitened coordinates
    min_stayed: float = 0.9  # a valley whose AIS particles stay less is merged into others
    pilot_chains: int = 4  # HMC chains per valley placing its AIS start (0: the Laplace)
    pilot_samples: int = 200  # their draws (after as many burn-in iterations)
    pilot_inflate: float = 1.2  # the start's scale over the draws' covariance
    coverage_fraction: float = 0.25  # the last share of starts the coverage check looks at
    max_new_share: float = 0.05  # mass share of valleys new in that last share: not_converged

    def validate(self) -> None:
        for key in ("starts", "start_iter", "particles", "groups", "temperatures", "leapfrog"):
            if getattr(self, key) < 1:
                raise ValueError(f"valley setting {key!r} must be >= 1")
        if self.particles < self.groups or self.groups < 2:
            raise ValueError("valley setting 'groups' must be >= 2 and <= 'particles'")
        for key in ("gtol", "same_valley", "mass_window", "step", "schedule_power"):
            if not getattr(self, key) > 0:
                raise ValueError(f"valley setting {key!r} must be > 0")

    def n_grad_evals(self, n_valleys: int) -> int:
        """Gradient evaluations of the AIS runs of ``n_valleys`` valleys (minimisation apart)."""
        return n_valleys * self.particles * (self.temperatures - 1) * (self.leapfrog + 1)


# ----------------------------------------------------------------------------------------
# the symmetry group of a hidden layer (``models.unit_symmetry``)


def symmetry_of(target):
    """The target's ``models.unit_symmetry.UnitSymmetry`` (its ``symmetry`` attribute), or
    None: the trivial group."""
    return getattr(target, "symmetry", None)


def group_order(symmetry) -> int:
    """|G| (2^H H! for H tanh units; 1 for the trivial group)."""
    return 1 if symmetry is None else symmetry.order


def aligned_distance(symmetry, a: np.ndarray, b: np.ndarray) -> float:
    """min over the group's elements g of ||a - g b||: the cost of matching unit i of a to
    unit j of b is ||u_i - v_j||^2, or min(||u_i - v_j||^2, ||u_i + v_j||^2) where a sign
    flip (negating every coordinate the unit owns) is a symmetry, and the best matching is
    an assignment problem (Hungarian algorithm)."""
    if symmetry is None:
        return float(np.linalg.norm(a - b))
    from scipy.optimize import linear_sum_assignment

    ua, ba = symmetry.blocks(a)
    ub, bb = symmetry.blocks(b)
    cost = np.sum((ua[:, None, :] - ub[None, :, :]) ** 2, axis=-1)
    if symmetry.odd:
        cost = np.minimum(cost, np.sum((ua[:, None, :] + ub[None, :, :]) ** 2, axis=-1))
    rows, cols = linear_sum_assignment(cost)
    return float(np.sqrt(cost[rows, cols].sum() + np.sum((ba - bb) ** 2)))


def orbit_size(symmetry, w: np.ndarray, rel_tol: float = 1e-3) -> int:
    """The number of distinct images of w under the group: |G| / |stabiliser|. A unit whose
    coordinates are all zero is fixed by its own sign flip, and k units equal (up to sign,
    where flips are symmetries) are fixed by their k! permutations."""
    order = group_order(symmetry)
    if order == 1:
        return 1
    units, _ = symmetry.blocks(w)
    scale = rel_tol * (1.0 + np.linalg.norm(w))
    dead = np.linalg.norm(units, axis=1) < scale
    n_dead = int(dead.sum())
    stabiliser = (2**n_dead if symmetry.odd else 1) * math.factorial(n_dead)
    live = units[~dead]
    seen = np.zeros(len(live), dtype=bool)
    for i in range(len(live)):
        if seen[i]:
            continue
        d = np.linalg.norm(live - live[i], axis=1)
        if symmetry.odd:
            d = np.minimum(d, np.linalg.norm(live + live[i], axis=1))
        twins = (d < scale) & ~seen
        seen |= twins
        stabiliser *= math.factorial(int(twins.sum()))
    return order // stabiliser


def group_elements(symmetry) -> list[tuple[np.ndarray, np.ndarray]]:
    """Every element of the group as (index, sign) over the coordinates: g w = sign * w[index]
    (``UnitSymmetry.elements``; only for small H). The trivial group has no listing here."""
    return [] if symmetry is None else symmetry.elements()


# ----------------------------------------------------------------------------------------
# minima


# compiled programs per target (by identity: targets are not hashable) and shape settings,
# so that repeated estimates on one target compile once
_PROGRAMS: dict[tuple, tuple] = {}


def _program(target, kind: str, key, build):
    """The compiled program ``kind`` of ``target`` for ``key``, built once; the target is
    kept beside it so that its id is not reused while the entry lives."""
    full = (id(target), kind, key)
    if full not in _PROGRAMS:
        if len(_PROGRAMS) > 32:
            _PROGRAMS.clear()
        _PROGRAMS[full] = (target, build())
    return _PROGRAMS[full][1]


def energy_function(target):
    """E(w) = phi(w) + E_0(w), the negative log of the unnormalised posterior (JAX, one w)."""

    def energy(w):
        return target.phi_one(w) + target.prior_energy_one(w)

    return energy


def _trust_region_polish(target, w: np.ndarray, max_iter: int):
    """Each row of ``w`` polished to a minimum of E by scipy's exact trust-region Newton
    method (``trust-exact``, Nocedal & Wright 2006 alg. 4.3) with the exact gradient and
    Hessian: robust where the Hessian is indefinite or nearly singular, as it is far from a
    minimum of a network's posterior, and quadratically convergent near one. Returns the
    points, energies, max |gradient| and Hessians."""
    from scipy.optimize import minimize

    value_and_grad, hessian = _program(target, "derivatives", None, lambda: (
        jax.jit(jax.value_and_grad(energy_function(target))), jax.jit(jax.hessian(energy_function(target)))
    ))  # fmt: skip

    def fun(v):
        e, g = value_and_grad(jnp.asarray(v))
        return float(e), np.asarray(g)

    def hess(v):
        return np.asarray(hessian(jnp.asarray(v)))

    out_w, out_e, out_g, out_a = [], [], [], []
    for row in np.asarray(w):
        if not np.all(np.isfinite(row)) or not np.isfinite(fun(row)[0]):
            out_w.append(row), out_e.append(np.inf), out_g.append(np.inf)
            out_a.append(np.full((len(row), len(row)), np.nan))
            continue
        res = minimize(fun, row, jac=True, hess=hess, method="trust-exact",
                       options={"gtol": 1e-9, "maxiter": max_iter})  # fmt: skip
        e, g = fun(res.x)
        out_w.append(res.x), out_e.append(e), out_g.append(float(np.max(np.abs(g))))
        out_a.append(hess(res.x))
    return np.array(out_w), np.array(out_e), np.array(out_g), np.array(out_a)


def find_minima(target, settings: ValleySettings, rng: np.random.Generator):
    """Minima of E from ``settings.starts`` draws (``start_points`` if the target has them,
    else reference draws): returns points (B, W), energies (B,), max |gradient| (B,),
    Hessians (B, W, W) and the number of L-BFGS iterations spent."""
    draws = getattr(target, "start_points", None) or target.sample_prior
    w0, _ = draws(settings.starts, rng)
    return minima_from(target, w0, settings)


def minima_from(target, w0: np.ndarray, settings: ValleySettings):
    """Minima of E reached from the points ``w0`` (B, W): L-BFGS, then the trust-region
    polish; returns as ``find_minima``."""
    lbfgs = _program(target, "lbfgs", settings.start_iter, lambda: lbfgs_program(
        lambda lam, w: lam * target.phi_one(w) + target.prior_energy_one(w), settings.start_iter
    ))  # fmt: skip
    x, _, iters = lbfgs(jnp.ones(len(w0)), jnp.asarray(w0, dtype=jnp.float64))
    w, e, g, a = _trust_region_polish(target, np.asarray(x), settings.newton_iter)
    return np.asarray(w), np.asarray(e), np.asarray(g), np.asarray(a), int(np.sum(iters))


@dataclass
class Valley:
    mode: np.ndarray  # (W,)
    energy: float  # E at the mode
    hessian: np.ndarray  # (W, W)
    hits: list = field(default_factory=list)  # indices of the starts that ended here
    orbit: int = 1
    laplace_log_mass: float = float("nan")  # -E + W/2 ln 2 pi - 1/2 ln |A|
    log_mass: float = float("nan")  # AIS ln Z_v (NaN where not run)
    log_mass_se: float = float("nan")
    ess: float = float("nan")
    stayed: float = float("nan")  # share of AIS particles that ended in this valley
    draws: np.ndarray | None = None  # (P, W) the AIS particles' final weights
    draw_log_weights: np.ndarray | None = None  # (P,) their AIS log weights

    @property
    def first_hit(self) -> int:
        return min(self.hits)


def laplace_log_mass(energy: float, hessian: np.ndarray) -> float:
    """ln int exp(-E(m) - (w - m)^T A (w - m) / 2) dw = -E(m) + W/2 ln 2 pi - 1/2 ln |A|."""
    sign, logdet = np.linalg.slogdet(hessian)
    if sign <= 0:
        return float("nan")
    return float(-energy + 0.5 * len(hessian) * LOG_2PI - 0.5 * logdet)


def in_valley(symmetry, w: np.ndarray, valley: Valley, settings: ValleySettings) -> bool:
    """The minimum w is ``valley``'s mode up to the symmetries: aligned distance at most
    ``same_valley`` (1 + |mode|)."""
    d = aligned_distance(symmetry, w, valley.mode)
    return d <= settings.same_valley * (1.0 + np.linalg.norm(valley.mode))


def distinct_valleys(symmetry, w, e, g, a, settings: ValleySettings) -> list[Valley]:
    """The accepted minima (gradient below ``gtol``, positive-definite Hessian) merged into
    valleys modulo the symmetry group, lowest energy first; each valley keeps the starts that
    reached it."""
    valleys: list[Valley] = []
    for i in np.argsort(e):
        if not (np.isfinite(e[i]) and g[i] <= settings.gtol):
            continue
        if np.linalg.eigvalsh(0.5 * (a[i] + a[i].T))[0] <= 0:
            continue
        for v in valleys:
            if in_valley(symmetry, w[i], v, settings):
                v.hits.append(int(i))
                break
        else:
            hessian = 0.5 * (a[i] + a[i].T)
            valleys.append(
                Valley(
                    w[i],
                    float(e[i]),
                    hessian,
                    [int(i)],
                    orbit_size(symmetry, w[i]),
                    laplace_log_mass(float(e[i]), hessian),
                )  # fmt: skip
            )
    return valleys


# ----------------------------------------------------------------------------------------
# AIS per valley


class _ValleyPath:
    """The AIS target of one batch of valleys in whitened coordinates z: each particle's theta
    holds its valley's mode m and the Cholesky factor L of the Laplace covariance A^-1, and
    p_beta(z) propto exp(-beta E(m + L z) - (1 - beta) (|z|^2 / 2 + W/2 ln 2 pi)): a
    normalised standard Gaussian at beta = 0, exp(-E(m + L z)) (integral Z_v / |L|) at 1."""

    def __init__(self, energy, n_weights: int):
        const = 0.5 * n_weights * LOG_2PI

        def reference(z):
            return 0.5 * jnp.dot(z, z) + const

        def phi_aux(theta, z):
            return energy(theta["m"] + theta["L"] @ z) - reference(z)

        def potential(lam, theta, z):
            return lam * phi_aux(theta, z) + reference(z)

        self.phi_aux, self.potential = phi_aux, potential
        self.gibbs = None

    def phi_one(self, z):  # pragma: no cover - AIS uses phi_aux
        raise TypeError("a valley path needs the particle's valley: use phi_aux(theta, z)")


def _path(target, n_w: int) -> _ValleyPath:
    return _program(target, "path", n_w, lambda: _ValleyPath(energy_function(target), n_w))


def moment_matched_start(target, valleys: list[Valley], settings: ValleySettings, rng):
    """Each valley's AIS start N(c_v, L_v L_v^T) moved from its Laplace Gaussian to the mean
    and covariance (times ``pilot_inflate``^2) of a short HMC run in the valley
    (``pilot_chains`` chains of ``pilot_samples`` draws after as many burn-in iterations, all
    valleys in one batch, in the Laplace-whitened coordinates). The Laplace Gaussian
    misplaces a network's valley by nats (its curvature at the mode is not the valley's
    shape), which leaves AIS weights degenerate; the moment-matched Gaussian is the valley's
    own scale. A valley whose pilot chains leave it keeps its Laplace start. Returns the
    centres (V, W), factors (V, W, W) and the gradient evaluations."""
    from ..mcmc import hmc

    n_w = len(valleys[0].mode)
    centres = np.stack([v.mode for v in valleys])
    factors = np.stack([np.linalg.cholesky(np.linalg.inv(v.hessian)) for v in valleys])
    C, S = settings.pilot_chains, settings.pilot_samples
    if C == 0 or S < 2:
        return centres, factors, 0
    theta = {"m": np.repeat(centres, C, axis=0), "L": np.repeat(factors, C, axis=0)}
    path = _path(target, n_w)
    result = hmc.sample(
        path.potential, 0.5 * rng.standard_normal((len(theta["m"]), n_w)), theta,
        np.ones(len(theta["m"])), key_from_rng(rng), n_burn=S, n_samples=S,
        n_leapfrog_burn=settings.leapfrog, n_leapfrog=settings.leapfrog, step_size=settings.step,
    )  # fmt: skip
    z = np.asarray(result.samples)  # (S, V C, W)
    symmetry = symmetry_of(target)
    for k in range(len(valleys)):
        zk = z[:, k * C : (k + 1) * C].reshape(-1, n_w)
        wk = centres[k] + zk @ factors[k].T
        check = wk[np.linspace(0, len(wk) - 1, 16).astype(int)]
        if _stayed(symmetry, check, valleys, k) < settings.min_stayed:
            continue
        cov = np.cov(zk, rowvar=False) * settings.pilot_inflate**2
        try:
            root = np.linalg.cholesky(cov)
        except np.linalg.LinAlgError:
            continue
        centres[k] = centres[k] + factors[k] @ zk.mean(axis=0)
        factors[k] = factors[k] @ root
    return centres, factors, int(result.n_grad_evals)


def ais_valleys(target, valleys: list[Valley], settings: ValleySettings, rng) -> int:
    """AIS for every valley of ``valleys`` in one compiled batch (settings.particles each),
    from each valley's moment-matched Gaussian; fills log_mass, log_mass_se, ess and stayed;
    returns the gradient evaluations."""
    if not valleys:
        return 0
    n_w = len(valleys[0].mode)
    P = settings.particles
    program = _program(target, "ais", settings.leapfrog, lambda: ais_program(
        _path(target, n_w), settings.leapfrog
    ))  # fmt: skip
    centres, chol, n_pilot = moment_matched_start(target, valleys, settings, rng)
    theta = {"m": np.repeat(centres, P, axis=0), "L": np.repeat(chol, P, axis=0)}
    z0 = rng.standard_normal((len(valleys) * P, n_w))
    T = settings.temperatures
    fine = (np.arange(T + 1) / T) ** settings.schedule_power
    steps = np.full(T + 1, settings.step)
    keys = jax.random.split(key_from_rng(rng), len(z0))
    log_w, _, z_end = program(
        keys, jnp.asarray(z0), jax.tree_util.tree_map(jnp.asarray, theta),
        jnp.asarray(fine), jnp.asarray(steps), ais_constants(),
    )  # fmt: skip
    log_w, z_end = np.asarray(log_w).reshape(len(valleys), P), np.asarray(z_end)
    w_end = theta["m"] + np.einsum("bij,bj->bi", theta["L"], z_end)
    symmetry = symmetry_of(target)
    for k, v in enumerate(valleys):
        value, se, ess = ais_estimate(log_w[k], settings.groups)
        logdet_l = float(np.sum(np.log(np.diag(chol[k]))))
        v.log_mass, v.log_mass_se, v.ess = value + logdet_l, se, ess
        v.draws, v.draw_log_weights = w_end[k * P : (k + 1) * P], log_w[k]
        v.stayed = _stayed(symmetry, v.draws, valleys, k)
    return settings.n_grad_evals(len(valleys)) + n_pilot


def _stayed(symmetry, w_end: np.ndarray, valleys: list[Valley], k: int) -> float:
    """Share of valley k's final particles nearer (modulo the group) to its mode than to any
    other valley's."""
    near = 0
    for w in w_end:
        d = [aligned_distance(symmetry, w, v.mode) for v in valleys]
        near += int(np.argmin(d) == k)
    return near / len(w_end)


# ----------------------------------------------------------------------------------------
# the estimator


def combine(valleys: list[Valley]) -> tuple[float, float]:
    """ln sum_v |G v| Z_v over the valleys with an AIS mass, and its delta-method s.e.
    sqrt(sum_v share_v^2 se_v^2), share_v = |G v| Z_v / sum."""
    done = [v for v in valleys if np.isfinite(v.log_mass)]
    if not done:
        return float("nan"), float("nan")
    terms = np.array([v.log_mass + np.log(v.orbit) for v in done])
    total = float(np.logaddexp.reduce(terms))
    share = np.exp(terms - total)
    se = float(np.sqrt(np.sum((share * np.array([v.log_mass_se for v in done])) ** 2)))
    return total, se


def posterior_draws(valleys: list[Valley]) -> tuple[np.ndarray, np.ndarray]:
    """The AIS particles of the valleys counted in the sum, (N, W), with normalised weights
    (N,): valley v's share |G v| Z_v / sum times each particle's share of its valley's AIS
    weights. The images of a valley predict alike, so its particles stand for all of them."""
    done = [v for v in valleys if np.isfinite(v.log_mass) and v.draws is not None]
    if not done:
        return np.zeros((0, 0)), np.zeros(0)
    terms = np.array([v.log_mass + np.log(v.orbit) for v in done])
    share = np.exp(terms - np.logaddexp.reduce(terms))
    weights = []
    for v, s in zip(done, share, strict=True):
        w = np.exp(v.draw_log_weights - np.logaddexp.reduce(v.draw_log_weights))
        weights.append(s * w)
    return np.concatenate([v.draws for v in done]), np.concatenate(weights)


def coverage(valleys: list[Valley], n_starts: int, fraction: float) -> tuple[int, float]:
    """Valleys first reached by the last ``fraction`` of the starts, and the share of the
    total mass they carry (0 when none are new)."""
    cut = n_starts - max(1, int(round(fraction * n_starts)))
    new = [v for v in valleys if v.first_hit >= cut and np.isfinite(v.log_mass)]
    total, _ = combine(valleys)
    if not new or not np.isfinite(total):
        return len(new), 0.0
    mass = np.logaddexp.reduce([v.log_mass + np.log(v.orbit) for v in new])
    return len(new), float(np.exp(mass - total))


def estimate(target, settings: ValleySettings, rng: np.random.Generator, log=None):
    """ln p(D) >= ln sum_v |G v| Z_v (module docstring), as an ``EvidenceEstimate`` whose
    diagnostics list every valley."""
    settings.validate()
    symmetry = symmetry_of(target)
    w, e, g, a, n_lbfgs = find_minima(target, settings, rng)
    valleys = distinct_valleys(symmetry, w, e, g, a, settings)
    accepted = int(sum(len(v.hits) for v in valleys))
    if log:
        log(f"valleys: {len(valleys)} distinct of {accepted} accepted minima "
            f"({settings.starts} starts)")  # fmt: skip
    best = max((v.laplace_log_mass for v in valleys), default=float("nan"))
    chosen = [v for v in valleys if v.laplace_log_mass >= best - settings.mass_window]
    chosen = sorted(chosen, key=lambda v: -v.laplace_log_mass)[: settings.max_valleys]
    n_grad = (
        n_lbfgs
        + settings.starts * settings.newton_iter
        + ais_valleys(target, chosen, settings, rng)
    )
    # a valley whose particles run into another valley is no basin of its own at the scale of
    # the posterior: its mass is that valley's (counting both would count it twice)
    left = [k for k, v in enumerate(chosen) if v.stayed < settings.min_stayed]
    for k in left:
        chosen[k].log_mass = float("nan")
    log_z, se = combine(chosen)
    n_new, new_share = coverage(chosen, settings.starts, settings.coverage_fraction)
    result = EvidenceEstimate(log_z, se, n_grad)
    result.diagnostics.update(
        n_valleys=len(valleys),
        n_ais_valleys=len(chosen),
        n_accepted_minima=accepted,
        n_new_valleys=n_new,
        new_valley_share=new_share,
        group_order=group_order(symmetry),
        valley_energy=np.array([v.energy for v in chosen]),
        valley_hits=np.array([len(v.hits) for v in chosen]),
        valley_orbit=np.array([v.orbit for v in chosen], dtype=float),
        valley_laplace_log_mass=np.array([v.laplace_log_mass for v in chosen]),
        valley_log_mass=np.array([v.log_mass for v in chosen]),
        valley_log_mass_se=np.array([v.log_mass_se for v in chosen]),
        valley_ess=np.array([v.ess for v in chosen]),
        valley_stayed=np.array([v.stayed for v in chosen]),
        modes=np.stack([v.mode for v in chosen]) if chosen else np.zeros((0, len(w[0]))),
    )
    if not chosen:
        result.flag("diverged", "no minimum passed the gradient and Hessian checks")
        return result
    if new_share > settings.max_new_share:
        result.flag(
            "not_converged",
            f"{n_new} valleys first found by the last {settings.coverage_fraction:.0%} of "
            f"the starts carry {new_share:.1%} of the mass: more starts would find more",
        )
    low_ess = [
        k for k, v in enumerate(chosen)
        if np.isfinite(v.log_mass) and v.ess < 0.2 * settings.particles
    ]  # fmt: skip
    if low_ess:
        result.flag("not_converged", f"AIS weights degenerate (ESS < 20%) in valleys {low_ess}")
    if left and not np.isfinite(chosen[0].log_mass):
        result.flag(
            "not_converged",
            "AIS particles left the heaviest valley (by Laplace mass): its basin is not "
            "separated from the others at this temperature schedule",
        )
    result.diagnostics["n_merged_valleys"] = len(left)
    result.diagnostics["draws"], result.diagnostics["draw_weights"] = posterior_draws(chosen)
    return result


# ----------------------------------------------------------------------------------------
# an independent check for small networks: importance sampling over all images


def importance_reference(
    target,
    valleys: list[Valley],
    n_draws: int,
    rng: np.random.Generator,
    df: float = 4.0,
    chunk: int = 20000,
    inflate: float = 1.2,
) -> tuple[float, float, float]:
    """ln p(D) by importance sampling (no assumption that basins are disjoint or that AIS
    stays in them): the proposal is the mixture, over the valleys and every element g of the
    symmetry group, of multivariate-t densities (``df`` degrees of freedom) centred at g m_v
    with scale inflate^2 g A_v^-1 g^T, valley weights proportional to their Laplace mass
    times orbit. Since E(g w) = E(w) and q(g w) = q(w), draws need not be moved by g: a draw
    from valley v's t density is weighted by exp(-E(w)) / q(w) with
    q(w) = sum_v pi_v / |G| sum_g t_v(g^-1 w). The group is enumerated, so this is for small
    H only (|G| = 8 at H = 2, 384 at H = 4). Returns ln Z, its s.e. and the weights' ESS."""
    from scipy.special import gammaln

    elements = group_elements(symmetry_of(target))
    if not elements:
        n = len(valleys[0].mode)
        elements = [(np.arange(n), np.ones(n))]
    # g^-1 w for a signed permutation g w = sign * w[index]: (g^-1 w)[index] = sign * w
    inverse = []
    for index, sign in elements:
        inv_index = np.empty_like(index)
        inv_index[index] = np.arange(len(index))
        inverse.append((inv_index, sign[inv_index]))
    n_w = len(valleys[0].mode)
    log_pi = np.array([v.laplace_log_mass + np.log(v.orbit) for v in valleys])
    log_pi = log_pi - np.logaddexp.reduce(log_pi)
    chol = [inflate * np.linalg.cholesky(np.linalg.inv(v.hessian)) for v in valleys]
    inv_chol = [np.linalg.inv(c) for c in chol]
    log_norm = np.array(
        [
            gammaln(0.5 * (df + n_w))
            - gammaln(0.5 * df)
            - 0.5 * n_w * np.log(df * np.pi)
            - np.sum(np.log(np.diag(c)))
            for c in chol
        ]  # fmt: skip
    )
    energy = _program(target, "energy", None, lambda: jax.jit(jax.vmap(energy_function(target))))
    log_ratio = []
    remaining = n_draws
    while remaining > 0:
        n = min(chunk, remaining)
        remaining -= n
        which = rng.choice(len(valleys), size=n, p=np.exp(log_pi))
        z = rng.standard_normal((n, n_w))
        scale = np.sqrt(df / rng.chisquare(df, size=n))
        w = np.empty((n, n_w))
        for k, v in enumerate(valleys):
            rows = which == k
            w[rows] = v.mode + scale[rows, None] * (z[rows] @ chol[k].T)
        log_q = np.full(n, -np.inf)
        for k, v in enumerate(valleys):
            terms = []
            for inv_index, sign in inverse:
                u = (sign * w[:, inv_index] - v.mode) @ inv_chol[k].T
                quad = np.sum(u * u, axis=1)
                terms.append(log_norm[k] - 0.5 * (df + n_w) * np.log1p(quad / df))
            log_t = np.logaddexp.reduce(np.stack(terms), axis=0) - np.log(len(inverse))
            log_q = np.logaddexp(log_q, log_pi[k] + log_t)
        e = np.asarray(energy(jnp.asarray(w)))
        log_ratio.append(np.where(np.isfinite(e), -e, -np.inf) - log_q)
    lr = np.concatenate(log_ratio)
    top = lr.max()
    r = np.exp(lr - top)
    value = float(top + np.log(r.mean()))
    se = float(r.std(ddof=1) / (np.sqrt(r.size) * r.mean()))
    ess = float(r.sum() ** 2 / np.sum(r**2))
    return value, se, ess
