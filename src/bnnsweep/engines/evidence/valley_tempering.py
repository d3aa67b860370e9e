"""Parallel tempering from a reference placed on the posterior's valleys: ln p(D) along a
path with no first-order transition, whose chains move mass between valleys themselves.

Tempering from the prior (``engines.evidence.tempering``) meets a first-order transition on
a network's posterior: the valleys that hold the evidence are a tiny share of the prior and
take over only near lambda = 1, so no ladder of practical length carries states into them.
Here the path starts from a reference r that already sits in the valleys, as parallel
tempering with a variational reference does (Surjanovic, Syed, Bouchard-Cote & Campbell
2022): the family

    p_lambda(u, k) propto r(u, k) exp(-lambda phi'(u)),   phi'(u) = E(u) - ln |G| + ln r(u),

with E(u) = phi(u) + E_0(u) the chaining target's energy at lambda = 1, runs from the
normalised reference (lambda = 0, Z = P) to the posterior folded onto one image of the hidden
units' symmetries (lambda = 1, Z = p(D)).

The folding. A one-hidden-layer network is unchanged by the 2^H H! sign flips and
permutations G of its hidden units (``valleys``). C is the set of weight vectors that are
their own canonical form (``models.unit_symmetry.UnitSymmetry.canonical``: for the weights,
every unit's first output weight >= 0, units sorted by it), one image of each orbit, so int_C |G| exp(-E) = p(D)
exactly. The reference on C is a mixture over the valleys found, k = 1..K, of Gaussians
N(c_k, L_k L_k^T) (each valley's moment-matched Gaussian, moved to C), or with ``tail_dof``
finite multivariate Student-t components of the same centres and scale matrices:

    r(u, k) = pi_k N(u; c_k, L_k L_k^T) 1[u in C],   Z(0) = P = sum_k pi_k P(c_k + L_k x in C),

P estimated by plain Monte Carlo over x ~ N(0, I) or the Student-t (no target evaluations;
its binomial error is part of the reported s.e.). The estimate is ln p(D) = (stepping stone along the
ladder) + ln P, for any weights pi and Gaussians: they set how fast the run mixes, never what
it converges to. Valleys no start found are missed here as in the valley sum: the coverage
check of the valley search is reported beside the estimate.

Moves, each leaving p_lambda invariant (per rung; rung 0 takes exact reference draws):

1. Gibbs update of the label k given u, from r(u, k) (the same at every lambda);
2. HMC in the label's coordinates x = L_k^-1 (u - c_k), potential U_k(x) = -ln r(c_k + L_k x,
   k) - ln |det L_k| + lambda phi'(c_k + L_k x), the density of p_lambda in x: for a
   valley's Gaussian |x|^2 / 2 - ln pi_k + const, for the prior's component -ln pi_K - ln |G|
   + E_0(u). A state with the prior's label moves in the coordinates of a valley j drawn
   from the valleys' responsibilities q(j | u), with the factor q(j | u') / q(j | u) in its
   acceptance (the prior's unit frame is far too wide where the posterior is: its steps,
   adapted with the valleys', froze those states). An end point outside C is rejected (the
   folded density is zero there);
3. a valley jump at fixed x: k' uniform, u' = c_k' + L_k' x, accepted with probability
   1[u' in C] min(1, exp(U_k(x) - U_k'(x))) (the corresponding point of another valley; a
   Metropolis move on (x, k), whose density U carries the Jacobian |det L_k|);
4. swaps of (u, k) between neighbouring rungs, min(1, exp((lambda_i+1 - lambda_i)
   (phi'_i+1 - phi'_i))), even and odd pairs in turn (``tempering``).

During burn-in the ladder is placed for equal swap rejection (``tempering.replace_ladder``),
the HMC step adapted per rung by dual averaging, and the weights pi moved to the valleys'
occupancy at lambda = 1 (with ``weight_floor`` spread evenly, so that no valley is shut
out), and (``refit``) each valley's component moved to the lambda = 1 states nearest it and
widened where they spread beyond it, never narrowed (``refit_components``): the variational
reference's fit (Surjanovic et al. 2022); valleys that no state in the upper half of the
ladder visited leave the mixture (``prune``: each costs K W^2 per evaluation, more than the
network at H = 8). The kept iterations use all of them frozen, so the estimate stays exact
for the reference they end with.

Status and error as ``tempering``: the s.e. is the jackknife over independent replicate
ladders; ``not_converged`` on swap acceptance below ``min_swap_accept``, fewer round trips
than ``min_round_trips``, stepping stone and TI apart, or the two halves of the kept
iterations apart (``max_drift``). The ladders of one run share its valley search, whose
variability they cannot see: with ``searches`` > 1 the run is that many independent
searches, each with its share of the ladders, and the s.e. spans their spread
(``combine_searches``). ``reference_importance`` is importance sampling from the reference
with no Markov chain, a stochastic lower bound beside the estimate.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np

from ...runtime.jax_runtime import SAMPLER_COMPILER_OPTIONS, jax, jnp, key_from_rng
from ..mcmc import hmc
from . import valleys as valley_search
from .estimators import ratio_estimate
from .result import EvidenceEstimate
from .tempering import (
    CHUNK,
    TemperingRun,
    estimate_from_run,
    even_odd_swaps,
    initial_ladder,
    permute_rungs,
    replace_ladder,
)

LOG_2PI = math.log(2.0 * math.pi)


# 256 starts, not the valley sum's 64: on the robot arm at H = 4 chaining from its defaults
# with 64 starts came out 159.05 +- 0.21 for seed 0 against 160.84 +- 0.25 with 256 (the other
# seeds 161.1-161.6), its search having missed mass that the ladders never reached
SEARCH_DEFAULTS = {"starts": 256}


@dataclass(frozen=True)
class ValleyTemperingSettings:
    """The valley search (``search``: overrides of ``valleys.ValleySettings``; the AIS
    settings there are not used; ``SEARCH_DEFAULTS`` under them) and the tempering protocol.
    Defaults: 24 rungs x 8 replicate ladders, 1,200 burn-in iterations in 6 rounds of ladder
    placement and 1,600 kept iterations of 10 leapfrog steps. On the robot arm at H = 8,
    seed 0, 16 rungs placed with half their measure on the initial ladder (floor 0.5) left
    the last pair, lambda 0.956 to 1, at swap acceptance 0.012; 24 rungs with floor 0.2 gave
    every pair >= 0.53."""

    rungs: int = 24
    replicates: int = 8
    burn_in: int = 1200
    samples: int = 1600
    leapfrog: int = 10
    step_size: float = 0.5  # initial HMC step in whitened coordinates (adapted per rung)
    target_accept: float = 0.8
    adapt_rounds: int = 6
    ladder_power: float = 2.0
    ladder_floor: float = 0.2
    weight_floor: float = 0.05  # share of the reference spread evenly over the valleys
    max_components: int = 48  # at most this many valleys, the heaviest by Laplace mass
    prune: bool = True  # drop valleys the upper half of the ladder never visits (burn-in)
    # the prior's share of the reference (a defensive component, Hesterberg 1995): ln r stays
    # above ln(prior_share) + ln prior, so that phi' is bounded below where the posterior
    # reaches beyond every valley's Gaussian (0: valleys only)
    prior_share: float = 0.05
    fold_draws: int = 20000  # draws per valley estimating P(c_k + L_k x in C)
    # degrees of freedom of the valleys' components: multivariate Student-t with the Gaussians'
    # centres and scale matrices (inf: the Gaussians themselves). A light-tailed reference
    # holds back the posterior's mass beyond the Gaussians until lambda is near 1
    tail_dof: float = math.inf
    # move each valley's component to the lambda = 1 states nearest it at the end of every
    # burn-in round but the last, widening it where they spread beyond it and never narrowing
    # it (``refit_components``), shrunk to the previous fit by ``refit_prior`` states; off:
    # the pilot chains' Gaussians throughout
    refit: bool = True
    refit_prior: float = 50.0
    refit_inflate: float = 1.2  # the refitted scale matrix over the states' covariance
    # independent valley searches, each with replicates / searches of the ladders: the s.e.
    # then spans what differs between searches (``combine_searches``)
    searches: int = 1
    min_swap_accept: float = 0.1
    min_round_trips: float = 2.0
    max_ss_ti_gap: float = 3.0
    max_drift: float = 3.0  # combined s.e. between the kept iterations' halves
    search: dict = field(default_factory=dict)

    def search_settings(self) -> valley_search.ValleySettings:
        """The valley search: ``SEARCH_DEFAULTS`` under the ``search`` overrides."""
        return valley_search.ValleySettings(**{**SEARCH_DEFAULTS, **self.search})

    def validate(self) -> None:
        for key in ("rungs", "replicates", "samples", "leapfrog", "max_components", "fold_draws"):
            if int(getattr(self, key)) < 1:
                raise ValueError(f"valley tempering setting {key!r} must be >= 1")
        if self.rungs < 3 or self.replicates < 2:
            raise ValueError("valley tempering needs rungs >= 3 and replicates >= 2")
        if (
            int(self.searches) < 1
            or self.replicates % int(self.searches)
            or (self.replicates // int(self.searches) < 2)
        ):
            raise ValueError(
                "valley tempering setting 'searches' must divide 'replicates' into groups of "
                f">= 2 ladders (replicates {self.replicates}, searches {self.searches})"
            )
        if not 0 <= self.prior_share < 1:
            raise ValueError("valley tempering setting 'prior_share' must be in [0, 1)")
        if not 0 < self.weight_floor <= 1:
            raise ValueError("valley tempering setting 'weight_floor' must be in (0, 1]")
        if not self.refit_prior > 0 or not self.refit_inflate > 0:
            raise ValueError("valley tempering settings 'refit_prior', 'refit_inflate' must be > 0")
        if not self.max_drift > 0:
            raise ValueError("valley tempering setting 'max_drift' must be > 0")
        if not self.tail_dof > 0:
            raise ValueError("valley tempering setting 'tail_dof' must be > 0 (inf: Gaussian)")
        self.search_settings().validate()


def cost(settings: ValleyTemperingSettings) -> tuple[float, int]:
    """(gradient-equivalents of the tempering, batch): per iteration and replicate, (L - 1)
    trajectories of ``leapfrog`` + 1 gradients, two evaluations for the jump and one for the
    swap per rung."""
    s = settings
    per_iteration = s.replicates * ((s.rungs - 1) * (s.leapfrog + 4) + s.rungs)
    return float((s.burn_in + s.samples) * per_iteration), s.replicates * s.rungs


# ----------------------------------------------------------------------------------------
# the reference: a Gaussian mixture over the valleys on the fundamental domain C


@dataclass(frozen=True)
class Reference:
    centres: np.ndarray  # (K, W) in C
    factors: np.ndarray  # (K, W, W) L_k
    inverses: np.ndarray  # (K, W, W) L_k^-1
    log_det: np.ndarray  # (K,) ln |det L_k|
    log_weights: np.ndarray  # (K,) ln pi_k
    valleys: np.ndarray  # (K,) the index of each component's valley searched; -1: the prior
    dof: float = math.inf  # the valleys' components: Student-t of these degrees of freedom

    def arrays(self) -> dict:
        out = {k: jnp.asarray(v) for k, v in self.__dict__.items() if k != "valleys"}
        out["is_prior"] = jnp.asarray(self.valleys < 0)
        return out

    def with_weights(self, log_weights: np.ndarray) -> Reference:
        lw = np.asarray(log_weights, dtype=float)
        return Reference(self.centres, self.factors, self.inverses, self.log_det,
                         lw - np.logaddexp.reduce(lw), self.valleys, self.dof)  # fmt: skip

    def subset(self, keep: np.ndarray) -> Reference:
        """The components ``keep`` only, their weights renormalised."""
        return Reference(self.centres[keep], self.factors[keep], self.inverses[keep],
                         self.log_det[keep], self.log_weights[keep], self.valleys[keep],
                         self.dof).with_weights(self.log_weights[keep])  # fmt: skip

    def with_components(self, centres: np.ndarray, factors: np.ndarray) -> Reference:
        """The same weights and labels with new centres and scale factors."""
        return Reference(centres, factors, np.linalg.inv(factors),
                         np.linalg.slogdet(factors)[1], self.log_weights, self.valleys,
                         self.dof)  # fmt: skip

    def standard_draws(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """n draws x of a valley's standardised component: N(0, I), or for finite ``dof``
        the multivariate Student-t, z / sqrt(g / dof) with z ~ N(0, I), g ~ chi^2_dof."""
        x = rng.standard_normal((n, self.centres.shape[1]))
        if math.isfinite(self.dof):
            x /= np.sqrt(rng.chisquare(self.dof, size=(n, 1)) / self.dof)
        return x


def fold(symmetry, centre: np.ndarray, factor: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The image of N(centre, factor factor^T) whose centre lies in C: the signed permutation
    g that ``UnitSymmetry.canonical`` applies to the centre, applied to both (g factor is a
    factor of g S g^T)."""
    if symmetry is None:
        return centre, factor
    index, sign = symmetry.signed_permutation(centre)
    image = sign * centre[index]
    if not np.allclose(image, np.asarray(symmetry.canonical(jnp.asarray(centre))), atol=0):
        raise ValueError("signed_permutation disagrees with canonical")
    return image, sign[:, None] * factor[index]


def build_reference(
    symmetry, centres, factors, log_weights, prior_share: float = 0.0, dof: float = math.inf
) -> Reference:
    """The mixture over the valleys' Gaussians (Student-t of ``dof`` degrees of freedom when
    finite) moved into C, weights from ``log_weights``; with ``prior_share`` > 0 the prior
    (folded into C) as a last component of that weight, its HMC frame the unit one."""
    folded = [fold(symmetry, c, f) for c, f in zip(centres, factors, strict=True)]
    c = np.stack([a for a, _ in folded])
    f = np.stack([b for _, b in folded])
    valleys = np.arange(len(c))
    lw = np.asarray(log_weights, dtype=float)
    lw = lw - np.logaddexp.reduce(lw)
    if prior_share > 0:
        n = c.shape[1]
        c = np.concatenate([c, np.zeros((1, n))])
        f = np.concatenate([f, np.eye(n)[None]])
        valleys = np.append(valleys, -1)
        lw = np.append(lw + np.log1p(-prior_share), np.log(prior_share))
    inv = np.linalg.inv(f)
    log_det = np.linalg.slogdet(f)[1]
    return Reference(c, f, inv, log_det, lw, valleys, float(dof))


def in_domain(symmetry):
    """u in C: u is its own canonical form (always, for the trivial group)."""
    if symmetry is None:
        return lambda u: jnp.array(True)
    return lambda u: jnp.all(symmetry.canonical(u) == u)


def _log_components(ref: dict, u, log_prior_folded):
    """ln pi_k + ln N(u; c_k, L_k L_k^T), (K,), or for finite dof nu the multivariate
    Student-t, ln Gamma((nu + n) / 2) - ln Gamma(nu / 2) - (n / 2) ln(nu pi) - ln |det L_k| -
    ((nu + n) / 2) ln(1 + |z|^2 / nu), z = L_k^-1 (u - c_k); the prior's component
    ln pi_K + ln |G| + ln prior(u) (the prior folded into C) where ``is_prior``."""
    z = jnp.einsum("kij,kj->ki", ref["inverses"], u[None, :] - ref["centres"])
    n = u.shape[0]
    r2 = jnp.sum(z * z, axis=1)
    gauss = -0.5 * r2 - ref["log_det"] - 0.5 * n * LOG_2PI
    finite = jnp.isfinite(ref["dof"])
    nu = jnp.where(finite, ref["dof"], 1.0)
    gammaln = jax.scipy.special.gammaln
    student = (gammaln(0.5 * (nu + n)) - gammaln(0.5 * nu) - 0.5 * n * jnp.log(nu * jnp.pi)
               - ref["log_det"] - 0.5 * (nu + n) * jnp.log1p(r2 / nu))  # fmt: skip
    valley = jnp.where(finite, student, gauss)
    return ref["log_weights"] + jnp.where(ref["is_prior"], log_prior_folded(u), valley)


def fold_probability(symmetry, ref: Reference, draws: int, rng: np.random.Generator):
    """P = sum_k pi_k P(c_k + L_k x in C), x a standardised component's draw (N(0, I) or
    Student-t), by Monte Carlo per valley, and the s.e. of ln P (binomial)."""
    inside = _inside_program(symmetry)
    share = []
    for c, f, v in zip(ref.centres, ref.factors, ref.valleys, strict=True):
        if v < 0:  # the prior folded into C lies in C
            share.append(1.0)
            continue
        u = c + ref.standard_draws(draws, rng) @ f.T
        share.append(float(np.mean(np.asarray(inside(jnp.asarray(u))))))
    share = np.asarray(share)
    pi = np.exp(ref.log_weights)
    p = float(pi @ share)
    var = float(np.sum(pi**2 * share * (1 - share) / draws))
    return p, (math.sqrt(var) / p if p > 0 else float("inf")), share


def sample_reference(symmetry, ref: Reference, n: int, rng: np.random.Generator, prior=None):
    """n exact draws (u, k) from r restricted to C (rejection: Gaussian draws outside C are
    redrawn; the prior's draws, ``prior(m, rng)``, are moved to their image in C)."""
    inside = _inside_program(symmetry)
    pi = np.exp(ref.log_weights)
    out_u, out_k, have = [], [], 0
    while have < n:
        m = max(16, int(1.3 * (n - have)))
        k = rng.choice(len(pi), size=m, p=pi / pi.sum())
        x = ref.standard_draws(m, rng)
        u = ref.centres[k] + np.einsum("mij,mj->mi", ref.factors[k], x)
        from_prior = ref.valleys[k] < 0
        if from_prior.any():
            u[from_prior] = np.asarray(_canonical_program(symmetry)(
                jnp.asarray(prior(int(from_prior.sum()), rng)[0])))  # fmt: skip
        ok = np.asarray(inside(jnp.asarray(u)))
        out_u.append(u[ok])
        out_k.append(k[ok])
        have += int(ok.sum())
    return np.concatenate(out_u)[:n], np.concatenate(out_k)[:n]


_INSIDE: dict = {}


def _canonical_program(symmetry):
    """The jitted, vmapped ``UnitSymmetry.canonical`` of a group (compiled once per process)."""
    key = ("canonical", symmetry)
    if key not in _INSIDE:
        _INSIDE[key] = jax.jit(jax.vmap(
            (lambda u: u) if symmetry is None else symmetry.canonical
        ))  # fmt: skip
    return _INSIDE[key]


def _inside_program(symmetry):
    """The jitted, vmapped ``u in C`` test of a group (compiled once per process)."""
    key = ("inside", symmetry)
    if key not in _INSIDE:
        _INSIDE[key] = jax.jit(jax.vmap(in_domain(symmetry)))
    return _INSIDE[key]


# ----------------------------------------------------------------------------------------
# the compiled sweep


def path_functions(target):
    """(energy, ln |G|, components, phi') of the reference path on ``target``: E(u), the
    symmetry group's log order, ln pi_k r_k(u) (``_log_components``) and
    phi'(u) = E(u) - ln |G| + ln r(u) (module doc)."""
    symmetry = valley_search.symmetry_of(target)
    energy = valley_search.energy_function(target)
    log_group = math.log(valley_search.group_order(symmetry))

    def log_prior_folded(u):
        return log_group - target.prior_energy_one(u)

    components = partial(_log_components, log_prior_folded=log_prior_folded)

    def phi_prime(ref, u):
        value = energy(u) - log_group + jax.scipy.special.logsumexp(components(ref, u))
        return jnp.nan_to_num(value, nan=jnp.inf)

    return energy, log_group, components, phi_prime


def move_function(target, n_leapfrog: int):
    """``move(key, u, k, lam, step, ref)`` -> (u, k, HMC acceptance probability, moved to
    another valley, divergent): one sweep of the moves 1-3 of the module doc at one lambda,
    each leaving p_lambda(u, k) invariant (JAX, one state; ``ref`` is ``Reference.arrays``).
    Shared by the ladder here and by ``valley_smc``'s particles."""
    inside = in_domain(valley_search.symmetry_of(target))
    energy, log_group, components, _ = path_functions(target)

    def label_potential(ref, k, j, x, lam):
        """U_k(x) = -ln r(u, k) - ln |det L_j| + lambda phi'(u), u = c_j + L_j x: minus the log
        density of p_lambda(., k) in the coordinates x of frame j (module doc, move 2). With
        j = k and a Gaussian component -ln r - ln |det L_k| = |x|^2 / 2 - ln pi_k + const;
        for the prior's label it is -ln pi_K - ln |G| + E_0(u) - ln |det L_j|."""
        u = ref["centres"][j] + ref["factors"][j] @ x
        log_r = components(ref, u)
        phi = energy(u) - log_group + jax.scipy.special.logsumexp(log_r)
        value = -(log_r[k] + ref["log_det"][j]) + lam * phi
        return jnp.nan_to_num(value, nan=jnp.inf)

    def frame_log_probs(ref, log_r):
        """ln q(j | u) from ln pi_k r_k(u) (``components``): the valleys' Gaussians'
        responsibilities at u (the prior left out), the frame of a prior-labelled state's HMC
        move."""
        return jax.nn.log_softmax(jnp.where(ref["is_prior"], -jnp.inf, log_r))

    def move(key, u, k, lam, step, ref):
        """Gibbs label; HMC in a valley's whitened coordinates (the label's own, or for the
        prior's label one drawn from q(j | u), with the Metropolis-Hastings factor
        q(j | u') / q(j | u): the prior's unit frame is far too wide where the posterior is);
        valley jump (module doc)."""
        k_lab, k_frame, k_mom, k_jit, k_acc, k_jump, k_jacc = jax.random.split(key, 7)
        log_r = components(ref, u)
        k = jax.random.categorical(k_lab, log_r)
        prior_label = ref["is_prior"][k]
        log_q = frame_log_probs(ref, log_r)
        j = jnp.where(prior_label, jax.random.categorical(k_frame, log_q), k)
        c, f, inv = ref["centres"][j], ref["factors"][j], ref["inverses"][j]

        def potential(x, kk=k, jj=j):
            return label_potential(ref, kk, jj, x, lam)

        value_and_grad = jax.value_and_grad(potential)
        x = inv @ (u - c)
        u0, g0 = value_and_grad(x)
        p = jax.random.normal(k_mom, x.shape, x.dtype)
        eps = step * jax.random.uniform(k_jit, (), x.dtype, 0.9, 1.1)
        x1, p1, u1, _ = hmc.leapfrog(value_and_grad, x, p, g0, eps, n_leapfrog)
        new_u = c + f @ x1
        frame_term = jnp.where(
            prior_label, log_q[j] - frame_log_probs(ref, components(ref, new_u))[j], 0.0
        )
        d_h = u1 + 0.5 * jnp.dot(p1, p1) - u0 - 0.5 * jnp.dot(p, p) + frame_term
        ok = jnp.isfinite(d_h) & jnp.all(jnp.isfinite(x1)) & inside(new_u)
        accept_prob = jnp.where(ok, jnp.exp(jnp.minimum(0.0, -jnp.where(ok, d_h, 0.0))), 0.0)
        accepted = jax.random.uniform(k_acc, (), x.dtype) < accept_prob
        u = jnp.where(accepted, new_u, u)
        # valley jump at fixed x in the label's own frame (the prior's: x = u)
        x = ref["inverses"][k] @ (u - ref["centres"][k])
        here = label_potential(ref, k, k, x, lam)
        k2 = jax.random.randint(k_jump, (), 0, ref["centres"].shape[0])
        u2 = ref["centres"][k2] + ref["factors"][k2] @ x
        there = label_potential(ref, k2, k2, x, lam)
        log_a = jnp.where(inside(u2) & jnp.isfinite(there), here - there, -jnp.inf)
        jump = jnp.log(jax.random.uniform(k_jacc, (), x.dtype)) < log_a
        moved_valley = jump & (k2 != k)
        u = jnp.where(jump, u2, u)
        k = jnp.where(jump, k2, k)
        return u, k, accept_prob, moved_valley, ~jnp.isfinite(d_h)

    return move


def _programs(target, n_leapfrog: int):
    """``run(carry, ladder, xs, consts, ref, adapt)``: compiled sweep over the iterations in
    xs (cached on the target)."""
    cache = target.__dict__.setdefault("_valley_tempering_programs", {})
    if n_leapfrog in cache:
        return cache[n_leapfrog]
    phi_prime = path_functions(target)[3]
    moves = jax.vmap(jax.vmap(move_function(target, n_leapfrog), in_axes=(0, 0, 0, 0, 0, None)),
                     in_axes=(0, 0, 0, None, 0, None))  # fmt: skip
    phi_all = jax.vmap(jax.vmap(phi_prime, in_axes=(None, 0)), in_axes=(None, 0))

    def body(carry, x, ladder, consts, ref, adapt):
        u, k, labels, da, step, key = carry
        it, u0, k0 = x
        R, L = labels.shape
        k_move, k_swap = jax.random.split(jax.random.fold_in(key, it))
        keys = jax.random.split(k_move, (R, L - 1))
        up, kp, acc, jumped, divergent = moves(keys, u[:, 1:], k[:, 1:], ladder[1:], step, ref)
        u = jnp.concatenate([u0[:, None], up], axis=1)
        k = jnp.concatenate([k0[:, None], kp], axis=1)
        phi = phi_all(ref, u)
        perm, swap_prob = even_odd_swaps(k_swap, it, ladder, phi)
        u, phi, k, labels = (permute_rungs(perm, a) for a in (u, phi, k, labels))
        moved = jax.vmap(
            jax.vmap(hmc.dual_averaging_update, in_axes=(0, 0, None)), in_axes=(0, 0, None)
        )(da, acc, consts["target_accept"])
        da = jax.tree_util.tree_map(lambda a, b: jnp.where(adapt, a, b), moved, da)
        step = jnp.where(adapt, jnp.exp(da.log_step), step)
        record = (phi, swap_prob, labels, acc, divergent, jumped, k, u[:, -1])
        return (u, k, labels, da, step, key), record

    @partial(jax.jit, compiler_options=SAMPLER_COMPILER_OPTIONS)
    def run(carry, ladder, xs, consts, ref, adapt):
        return jax.lax.scan(lambda c, x: body(c, x, ladder, consts, ref, adapt), carry, xs)

    cache[n_leapfrog] = run
    return run


@dataclass
class ValleyTemperingRun:
    run: TemperingRun  # phi holds phi'(u) of the reference path
    reference: Reference  # with the frozen weights of the kept iterations
    log_fold: float  # ln P
    log_fold_se: float
    fold_share: np.ndarray  # (K,) P(c_k + L_k x in C)
    jump_accept: np.ndarray  # (L - 1,) share of accepted valley jumps to another valley
    top_labels: np.ndarray  # (S, R) the lambda = 1 rung's valley labels


def adapted_weights(ref: Reference, occupancy: np.ndarray, s) -> np.ndarray:
    """The valleys' weights from their lambda = 1 occupancy, ``weight_floor`` spread evenly
    over them; the prior's component keeps its ``prior_share``."""
    valley = ref.valleys >= 0
    occ = np.where(valley, occupancy, 0.0)
    occ = occ / occ.sum() if occ.sum() > 0 else valley / valley.sum()
    weights = (1.0 - s.weight_floor) * occ + s.weight_floor * valley / valley.sum()
    if (~valley).any():
        weights = np.where(valley, (1.0 - s.prior_share) * weights, s.prior_share)
    return weights


def refit_components(symmetry, ref: Reference, states: np.ndarray, s) -> Reference:
    """Each valley's component widened to the lambda = 1 ``states`` (N, W) nearest it, the
    moment matching of a variational reference (Surjanovic et al. 2022) per valley, expand
    only: a state goes to the valley of largest ln pi_k + ln r_k(u) (the prior's component
    left out); in the component's whitened coordinates x = L_k^-1 (u - c_k) its n_k states
    have mean m and covariance S, and with n_0 = ``refit_prior``, a = ``refit_inflate``

        c_k' = c_k + L_k n_k m / (n_k + n_0),
        (n_k a^2 S + n_0 I) / (n_k + n_0) = V D V^T,   L_k' = L_k V max(D, 1)^(1/2),

    so that the new scale matrix L_k' L_k'^T is never narrower than L_k L_k^T in any
    direction (for Student-t components of nu > 2 degrees of freedom S is first scaled by
    (nu - 2) / nu, the t's covariance to its scale matrix). Expand only: the states of a
    valley are autocorrelated chain draws, too few to estimate 42 variances at H = 8, and a
    plain moment match narrowed the components in the directions they had not explored, which
    pushed the lambda = 1 states out of them (the prior's label 0.15, 0.48, 0.59 over three
    burn-in rounds). Valleys with fewer than two states keep their component; the centres
    stay in C (a convex cone: the mean of states in C lies in it, and c_k' is between c_k
    and that mean)."""
    valley = np.flatnonzero(ref.valleys >= 0)
    z = np.einsum("kij,nkj->nki", ref.inverses[valley], states[:, None] - ref.centres[valley])
    r2 = np.sum(z * z, axis=2)
    if math.isfinite(ref.dof):
        n = states.shape[1]
        score = (
            ref.log_weights[valley]
            - ref.log_det[valley]
            - 0.5 * (ref.dof + n) * np.log1p(r2 / ref.dof)
        )
    else:
        score = ref.log_weights[valley] - ref.log_det[valley] - 0.5 * r2
    nearest = np.argmax(score, axis=1)
    to_scale = (ref.dof - 2.0) / ref.dof if math.isfinite(ref.dof) and ref.dof > 2 else 1.0
    centres, factors = ref.centres.copy(), ref.factors.copy()
    n0 = float(s.refit_prior)
    for i, k in enumerate(valley):
        x = z[nearest == i, i]
        n_k = len(x)
        if n_k < 2:
            continue
        cov = (n_k * s.refit_inflate**2 * to_scale * np.cov(x, rowvar=False)
               + n0 * np.eye(x.shape[1])) / (n_k + n0)  # fmt: skip
        d, v = np.linalg.eigh(cov)
        factor = ref.factors[k] @ (v * np.sqrt(np.maximum(d, 1.0)))
        centre = ref.centres[k] + ref.factors[k] @ (n_k * x.mean(axis=0) / (n_k + n0))
        centres[k], factors[k] = fold(symmetry, centre, factor)
    return ref.with_components(centres, factors)


def run_valley_tempering(
    target, reference: Reference, settings: ValleyTemperingSettings, rng, log=None, start=None
) -> ValleyTemperingRun:
    """Burn-in (ladder, steps and reference weights adapted), then the kept iterations.

    Every rung's chain starts from an exact reference draw (the lambda = 0 end in
    equilibrium), or with ``start`` = (u, k), states in C and their labels (indices of
    ``reference``'s components, at least replicates x rungs of them: the first are taken),
    from those: e.g. posterior draws, the lambda = 1 end in equilibrium. Either start leaves
    the estimate exact once the chains have settled; runs from the two ends that agree
    bracket the settling from both sides."""
    s = settings
    symmetry = valley_search.symmetry_of(target)
    R, L, K = s.replicates, s.rungs, len(reference.log_weights)
    run = _programs(target, int(s.leapfrog))
    ladder = initial_ladder(L, s.ladder_power)
    prior = target.sample_prior
    if start is None:
        u, k = sample_reference(symmetry, reference, R * L, rng, prior)
    else:
        u, k = (np.asarray(a) for a in start)
        if len(u) < R * L or len(k) != len(u) or not np.all((k >= 0) & (k < K)):
            raise ValueError(
                f"valley tempering start: need >= {R * L} states with labels in 0..{K - 1}"
            )
        u, k = u[: R * L], k[: R * L]
    carry = [
        jnp.asarray(u.reshape(R, L, -1)), jnp.asarray(k.reshape(R, L)),
        jnp.tile(jnp.arange(L, dtype=jnp.int32), (R, 1)), None,
        jnp.full((R, L - 1), float(s.step_size)), key_from_rng(rng),
    ]  # fmt: skip
    consts = {"target_accept": jnp.float64(s.target_accept)}
    it = 0

    def sweep(carry, n, adapt, ref):
        nonlocal it
        arrays, records = ref.arrays(), []
        for start in range(0, n, CHUNK):
            m = min(CHUNK, n - start)
            u0, k0 = sample_reference(symmetry, ref, m * R, rng, prior)
            xs = (jnp.arange(it, it + m), jnp.asarray(u0.reshape(m, R, -1)),
                  jnp.asarray(k0.reshape(m, R)))  # fmt: skip
            it += m
            carry, rec = run(tuple(carry), jnp.asarray(ladder), xs, consts, arrays,
                             jnp.asarray(adapt))  # fmt: skip
            carry = list(carry)
            records.append(jax.device_get(rec))
        return carry, [np.concatenate(parts) for parts in zip(*records, strict=True)]

    rounds = s.adapt_rounds if s.burn_in > 0 else 0
    lengths = np.diff(np.linspace(0, s.burn_in, rounds + 1).round().astype(int)) if rounds else []
    for r, n in enumerate(lengths):
        carry[3] = jax.vmap(jax.vmap(hmc.dual_averaging_init))(carry[4])
        carry, rec = sweep(carry, int(n), True, reference)
        half = len(rec[1]) // 2
        swap = rec[1][half:].mean(axis=(0, 1))
        if r < len(lengths) - 1:
            ladder = replace_ladder(ladder, 1.0 - swap, s.ladder_power, s.ladder_floor)
        labels_k = rec[6][half:]  # (T, R, L)
        occupancy = np.bincount(labels_k[..., -1].ravel(), minlength=K) / labels_k[..., -1].size
        prior_label = float(occupancy[reference.valleys < 0].sum())
        reference = reference.with_weights(np.log(adapted_weights(reference, occupancy, s)))
        if s.refit and r < len(lengths) - 1:  # the last round runs on the final reference
            top = rec[7][half:]
            reference = refit_components(symmetry, reference, top.reshape(-1, top.shape[-1]), s)
        upper = np.bincount(labels_k[..., L // 2 :].ravel(), minlength=K)
        keep = np.flatnonzero((upper > 0) | (reference.valleys < 0))  # the prior stays
        # (none pruned when no valley was visited: the mixture keeps at least one valley)
        if s.prune and 0 < len(keep) < K and np.any(reference.valleys[keep] >= 0):
            # valleys no state of the upper half of the ladder visited: out of the mixture
            labels_now = np.asarray(carry[1])
            remap = np.zeros(K, dtype=labels_now.dtype)
            remap[keep] = np.arange(len(keep))
            reference = reference.subset(keep)
            carry[1] = jnp.asarray(remap[labels_now])
            occupancy, K = occupancy[keep], len(keep)
        carry[4] = jnp.exp(carry[3].log_step_bar)
        if log is not None:
            log(f"  valley tempering burn-in round {r + 1}/{rounds}: swap acceptance min "
                f"{swap.min():.2f}, barrier {np.sum(1 - swap):.2f}, top-rung occupancy "
                f"{np.array2string(occupancy, precision=2)}, prior's label {prior_label:.2f}")  # fmt: skip
    if carry[3] is None:
        carry[3] = jax.vmap(jax.vmap(hmc.dual_averaging_init))(carry[4])
    carry, rec = sweep(carry, int(s.samples), False, reference)
    phi, swap_prob, labels_t, accept, divergent, jumped, all_k, top_u = rec
    top_k = reference.valleys[all_k[..., -1]]  # as indices of the valleys searched (-1: prior)
    p, p_se, share = fold_probability(symmetry, reference, s.fold_draws, rng)
    grads, _ = cost(s)
    tempering_run = TemperingRun.from_records(
        ladder, phi, swap_prob, labels_t, accept, divergent, carry[4], top_u, grads
    )
    return ValleyTemperingRun(
        tempering_run, reference, math.log(p) if p > 0 else -math.inf, p_se, share,
        jumped.mean(axis=(0, 1)), top_k,
    )  # fmt: skip


def search(target, settings: ValleyTemperingSettings, rng, log=None):
    """Valleys by many starts (``valleys.find_minima``, merged modulo the symmetries), the
    heaviest ``max_components`` by Laplace mass with their moment-matched Gaussians; the
    reference with weights proportional to the Laplace masses (adapted in the burn-in).
    Returns the reference, the valleys and the gradient evaluations spent."""
    vs = settings.search_settings()
    symmetry = valley_search.symmetry_of(target)
    w, e, g, a, n_lbfgs = valley_search.find_minima(target, vs, rng)
    found = valley_search.distinct_valleys(symmetry, w, e, g, a, vs)
    if not found:
        return None, found, n_lbfgs
    found = sorted(found, key=lambda v: -v.laplace_log_mass)[: settings.max_components]
    centres, factors, n_pilot = valley_search.moment_matched_start(target, found, vs, rng)
    lw = np.array([v.laplace_log_mass for v in found])
    lw = np.maximum(lw, lw.max() - 30.0)  # Laplace masses are nats off: start no valley shut
    if log is not None:
        log(f"valley tempering: {len(found)} valleys as the reference ({len(w)} starts)")
    ref = build_reference(symmetry, centres, factors, lw, settings.prior_share, settings.tail_dof)
    return ref, found, n_lbfgs + vs.starts * vs.newton_iter + n_pilot


def _per_valley(ref: Reference, values: np.ndarray, n: int, fill: float) -> np.ndarray:
    """A value per valley searched from one per component kept (``fill`` for the pruned)."""
    out = np.full(n, fill)
    valley = ref.valleys >= 0
    out[ref.valleys[valley]] = np.asarray(values)[valley]
    return out


def estimate_from_valley_run(res: ValleyTemperingRun, settings) -> EvidenceEstimate:
    """ln p(D) of one run: the ladder's stepping stone (``tempering.estimate_from_run``) plus
    ln P; s.e. the larger of the replicate ladders' jackknife and the within-ladder s.e.
    (the jackknife of a few ladders is itself noisy: 4 ladders gave s.e. 0.004-0.04 against
    a spread of 0.04 over seeds on the linear regression), with ln P's s.e. added.

    Drift check: the stepping stone of the second half of the kept iterations minus that of
    the first (``log_z_drift``); beyond ``max_drift`` combined s.e. the run is
    ``not_converged`` (chains still moving into mass the first half had not reached: on the
    robot arm at H = 4 a run 4 x as long came out 0.5-0.7 nats higher)."""
    out = estimate_from_run(res.run, settings)
    jackknife, within = out.log_z_se, out.diagnostics["log_z_se_within"]
    out.log_z += res.log_fold
    out.log_z_se = math.hypot(max(jackknife, within), res.log_fold_se)
    out.diagnostics["log_z_se_jackknife"] = jackknife
    out.diagnostics["log_z_ti"] += res.log_fold
    S = res.run.phi.shape[2]
    if S >= 4:
        halves = [ratio_estimate(res.run.ladder, res.run.phi[:, :, part])
                  for part in (slice(0, S // 2), slice(S // 2, S))]  # fmt: skip
        drift = halves[1].log_z - halves[0].log_z
        drift_se = math.hypot(*(max(h.log_z_se, h.log_z_se_within) for h in halves))
        out.diagnostics.update(log_z_drift=drift, log_z_drift_se=drift_se)
        if not abs(drift) <= settings.max_drift * drift_se:
            out.flag(
                "not_converged",
                f"the second half of the kept iterations gives ln p(D) {drift:+.2f} +- "
                f"{drift_se:.2f} from the first: the chains have not settled (raise samples)",
            )
    return out


def reference_importance(
    target,
    ref: Reference,
    draws: int,
    rng: np.random.Generator,
    fold_draws: int = 20000,
    chunk: int = 20000,
) -> tuple[float, float, float]:
    """ln p(D) by importance sampling from the reference, no Markov chain: with u exact draws
    of r restricted to C (``sample_reference``), |G| exp(-E(u)) / (r(u) / P) has mean p(D),
    so

        ln p(D) ~ ln P + ln mean_u exp(-phi'(u)),

    the stepping stone's single link from lambda = 0 to 1 with independent draws. Its
    expectation lies below ln p(D) (Jensen) and it exceeds ln p(D) + t with probability at
    most exp(-t) (Markov) whatever the reference: a stochastic lower bound. Returns ln p(D),
    its s.e. (the weights' delta-method s.e. and ln P's) and the weights' ESS."""
    symmetry = valley_search.symmetry_of(target)
    cache = target.__dict__.setdefault("_valley_tempering_programs", {})
    if "phi_prime" not in cache:
        phi_prime = path_functions(target)[3]
        cache["phi_prime"] = jax.jit(jax.vmap(phi_prime, in_axes=(None, 0)))
    program, arrays = cache["phi_prime"], ref.arrays()
    log_w = []
    for start in range(0, draws, chunk):
        u, _ = sample_reference(symmetry, ref, min(chunk, draws - start), rng, target.sample_prior)
        log_w.append(-np.asarray(program(arrays, jnp.asarray(u))))
    log_w = np.concatenate(log_w)
    p, p_se, _ = fold_probability(symmetry, ref, fold_draws, rng)
    top = log_w.max()
    w = np.exp(log_w - top)
    value = float(top + np.log(w.mean()) + math.log(p))
    se = math.hypot(float(w.std(ddof=1) / (math.sqrt(w.size) * w.mean())), p_se)
    return value, se, float(w.sum() ** 2 / np.sum(w**2))


def estimate(
    target, settings: ValleyTemperingSettings, rng: np.random.Generator, log=None
) -> EvidenceEstimate:
    """ln p(D) = stepping stone along the reference path + ln P (module docstring)."""
    return estimate_and_run(target, settings, rng, log=log)[0]


def estimate_and_run(
    target, settings: ValleyTemperingSettings, rng: np.random.Generator, log=None
) -> tuple[EvidenceEstimate, ValleyTemperingRun | None]:
    """``estimate`` and the run it came from (None when no search found a valley): with
    ``searches`` G > 1, G independent valley searches, each with replicates / G ladders
    (``combine_searches``); the run returned is the first search's with the lambda = 1 states
    of all of them."""
    settings.validate()
    started = time.process_time()
    G = int(settings.searches)
    part = replace(settings, replicates=settings.replicates // G)
    found = [_one_search(target, part, rng, log) for _ in range(G)]
    if any(res is None for _, res in found):
        out = EvidenceEstimate(float("nan"), float("nan"), sum(e.n_grad_evals for e, _ in found))
        out.flag("diverged", "no minimum passed the gradient and Hessian checks")
        return out, None
    out = combine_searches([e for e, _ in found]) if G > 1 else found[0][0]
    out.diagnostics["cpu_seconds"] = time.process_time() - started
    runs = [res for _, res in found]
    first = runs[0]
    pooled = replace(
        first.run,
        posterior_samples=np.concatenate([r.run.posterior_samples for r in runs], axis=1),
        round_trips=np.concatenate([r.run.round_trips for r in runs]),
        n_grad_evals=sum(r.run.n_grad_evals for r in runs),
    )
    return out, replace(first, run=pooled)


def combine_searches(parts: list[EvidenceEstimate]) -> EvidenceEstimate:
    """One estimate from G independent searches (each its own valleys, reference and
    ladders): ln p(D) the mean of theirs; s.e. the larger of their spread, s_G / sqrt(G), and
    their reported errors, sqrt(mean se_g^2 / G). The searches' spread is what differs between
    seeds (the valleys found, their Gaussians) and the ladders of one search share: at H = 4 it
    was most of the spread over seeds. Each search's flags are kept (named by its index);
    per-search values are in ``search_log_z`` and ``search_log_z_se``, the ladders' round
    trips pooled, the rest of the diagnostics the first search's."""
    values = np.array([p.log_z for p in parts])
    ses = np.array([p.log_z_se for p in parts])
    G = len(parts)
    between = float(np.std(values, ddof=1) / math.sqrt(G))
    within = float(math.sqrt(np.mean(ses**2) / G))
    out = EvidenceEstimate(
        float(values.mean()), max(between, within), sum(p.n_grad_evals for p in parts),
        diagnostics=dict(parts[0].diagnostics),
    )  # fmt: skip
    out.diagnostics.update(
        search_log_z=values,
        search_log_z_se=ses,
        log_z_se_between_searches=between,
        log_z_se_within_searches=within,
        log_z_ti=float(np.mean([p.diagnostics["log_z_ti"] for p in parts])),
        round_trips=np.concatenate([p.diagnostics["round_trips"] for p in parts]),
        swap_accept_min=min(p.diagnostics["swap_accept_min"] for p in parts),
        prior_occupancy=float(np.mean([p.diagnostics["prior_occupancy"] for p in parts])),
        new_valley_share=max(p.diagnostics["new_valley_share"] for p in parts),
    )
    for g, p in enumerate(parts):
        if p.status != "ok":
            out.flag(p.status, f"search {g}: {p.reason}")
    return out


def _one_search(target, settings: ValleyTemperingSettings, rng, log=None):
    """One valley search, its tempering run and estimate with the coverage diagnostics:
    (estimate, run), run None when the search found no valley."""
    started = time.process_time()
    ref, found, n_search = search(target, settings, rng, log=log)
    if ref is None:
        return EvidenceEstimate(float("nan"), float("nan"), n_search), None
    res = run_valley_tempering(target, ref, settings, rng, log=log)
    out = estimate_from_valley_run(res, settings)
    out.n_grad_evals += n_search
    symmetry = valley_search.symmetry_of(target)
    vs = settings.search_settings()
    top = res.top_labels.ravel()
    search_coverage(out, found, top, vs)
    out.diagnostics.update(
        cpu_seconds=time.process_time() - started,
        log_fold=res.log_fold,
        log_fold_se=res.log_fold_se,
        fold_share=_per_valley(res.reference, res.fold_share, len(found), np.nan),
        n_components=len(found),
        n_kept_components=int(np.sum(res.reference.valleys >= 0)),
        reference_weights=_per_valley(
            res.reference, np.exp(res.reference.log_weights), len(found), 0.0
        ),
        jump_accept=res.jump_accept,
        group_order=valley_search.group_order(symmetry),
    )
    return out, res


def search_coverage(out: EvidenceEstimate, found, labels: np.ndarray, vs) -> None:
    """The valley search's coverage from the posterior draws' valley labels (indices into
    ``found``, -1 the prior's component): each valley's posterior share (``top_occupancy``),
    the share of the valleys that only the last ``coverage_fraction`` of the starts found
    (``new_valley_share``; above ``max_new_share`` the estimate is ``not_converged``: more
    starts would find more mass) and of those a single start found (``singleton_share``,
    Good-Turing: valleys as heavy may lie where no start went), the starts per valley."""
    occupancy = np.bincount(labels[labels >= 0], minlength=len(found)) / labels.size
    cut = vs.starts - max(1, int(round(vs.coverage_fraction * vs.starts)))
    new = np.array([v.first_hit >= cut for v in found])
    n_new, new_share = int(new.sum()), float(occupancy[new].sum())
    out.diagnostics.update(
        top_occupancy=occupancy, n_new_valleys=n_new, new_valley_share=new_share,
        singleton_share=float(occupancy[[len(v.hits) == 1 for v in found]].sum()),
        top_hits=np.array([len(v.hits) for v in found]), prior_occupancy=float(np.mean(labels < 0)),
    )  # fmt: skip
    if new_share > vs.max_new_share:
        out.flag(
            "not_converged",
            f"{n_new} valleys first found by the last {vs.coverage_fraction:.0%} of the starts "
            f"hold {new_share:.1%} of the posterior: more starts would find more",
        )
