"""Nested sampling (Skilling 2006) for ln p(D): an evidence estimator that needs no path
through a tempered family, so a first-order transition along lambda does not trouble it.

Z = int L(w) pi(w) dw = int_0^1 L(X) dX, X(l) the prior mass with likelihood above l.
``live`` points drawn from the prior are replaced, ``k = delete_fraction * live`` at a time,
lowest likelihood first, by points drawn from the prior restricted to L > L_dead; the prior
mass shrinks by t ~ Beta(n, 1) per deletion, and ln Z = ln sum_i L_i (X_{i-1} - X_i) over the
dead points and the final live set. The constrained draws are BlackJAX's nested slice
sampling (``blackjax.nss``: hit-and-run slice steps along directions drawn from the live
points' covariance, Yallup, Kroupa & Handley 2026), ``inner_steps x dimension`` steps per
new point from a surviving live point.

Here L(w) = exp(-phi(w)) and pi(w) = exp(-E_0(w)), the chaining target's likelihood and
normalised reference. A target that provides ``noncentred()`` (``models.marginal``: the
Student-t prior of the integrated hyperparameters written as z ~ N(0, I), ln alpha ~
ln-Gamma, w = z / sqrt(alpha)) is sampled in those coordinates, where the prior is
light-tailed: in w the live points' covariance is dominated by a few draws from the t's tails
and the runs lost the heavy valley (robot arm H = 1: -543.6 against -514.5).

A valley that splits off the live set with few points can die out before its likelihood
overtakes the rest (the new points are copies of survivors moved by MCMC, so each valley's
share of live points drifts); the run then misses its mass and the volume error of the run
does not show it. ``replicates`` independent runs are therefore made, merged for the
estimate (the union of R runs of n live points is one run of R n live points: Higson et al.
2019, "dynamic nested sampling"), and compared with each other: the reported standard error
is the larger of the merged run's volume error (``blackjax.ns.utils.log_weights`` simulating
the shrinkage) and the spread of the replicates' ln Z / sqrt(R); replicates more spread than
their own volume errors allow (chi-square over R - 1 degrees of freedom with p below
``min_p``) make the status ``not_converged``.

``coordinates: reference`` starts the runs from the valleys' reference of
``valley_tempering`` instead of the prior (``reference_space``, posterior repartitioning): the
same Z, a compression of KL(posterior || reference) instead of KL(posterior || prior), and
every valley found holding live points from the first step.

Cost: likelihood evaluations (each slice step's stepping-out and shrinkage trials), reported
as ``n_grad_evals`` (a likelihood costs about a third of a gradient).
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np

from ...runtime.jax_runtime import jax, jnp, key_from_rng
from .result import EvidenceEstimate
from .valleys import symmetry_of

CHUNK = 20  # outer steps per compiled call
COORDINATES = ("noncentred", "centred", "reference", "collapsed")


@dataclass(frozen=True)
class NestedSettings:
    """Nested sampling protocol. Defaults: 4 independent runs of 300 live points, 10 x dim
    slice steps per replacement, a tenth of the live points replaced per step, stop when the
    live points hold under 1e-3 of the evidence. On the robot arm at H = 2, 3 x dim steps
    gave -364.3 to -369.4 (runs disagreeing far beyond their volume errors) and 10 x dim
    -359.9 +- 0.3, with the valley sum's -359.5."""

    live: int = 300
    replicates: int = 4
    inner_steps: float = 10.0  # slice steps per new point, in multiples of the dimension
    delete_fraction: float = 0.1
    stop: float = 1e-3  # remaining evidence fraction in the live points
    volume_draws: int = 200  # simulated shrinkage sequences for the volume error
    max_steps: int = 200_000  # cap on outer steps (a run that reaches it is not_converged)
    window: float = 40.0  # dead points kept for posterior draws, in multiples of live
    min_p: float = 0.01  # replicate consistency (chi-square p-value) below which: not_converged
    # or "centred": w itself under exp(-E_0); "reference" (below); or "collapsed": the target
    # with the output layer integrated out exactly (``models.collapsed``), in its own
    # non-centred coordinates
    coordinates: str = "noncentred"
    # ``coordinates: reference``: the valley search's mixture (Student-t components of
    # ``reference_dof`` degrees of freedom, the prior's share ``reference_prior_share``) as the
    # prior, the likelihood repartitioned (module docstring); ``search`` overrides the search
    reference_dof: float = 3.0
    # "search": the search's mixture with Laplace-mass weights; "tempered": that mixture after
    # valley_tempering's burn-in (weights from the lambda = 1 occupancy, components refitted
    # to the lambda = 1 states; its own Gaussian components, reference_dof unused)
    reference: str = "search"
    reference_prior_share: float = 0.05
    search: dict = field(default_factory=dict)

    def validate(self) -> None:
        if int(self.live) < 10:
            raise ValueError("nested setting 'live' must be >= 10")
        if int(self.replicates) < 2:
            raise ValueError("nested setting 'replicates' must be >= 2 for its standard error")
        if not self.inner_steps > 0 or not 0 < self.delete_fraction <= 0.5:
            raise ValueError("nested needs inner_steps > 0 and 0 < delete_fraction <= 0.5")
        if not 0 < self.stop < 1 or int(self.volume_draws) < 10:
            raise ValueError("nested needs 0 < stop < 1 and volume_draws >= 10")
        if self.coordinates not in COORDINATES:
            raise ValueError(
                f"nested setting 'coordinates' must be one of {', '.join(COORDINATES)}, "
                f"not {self.coordinates!r}"
            )
        if self.reference not in ("search", "tempered"):
            raise ValueError(
                f"nested setting 'reference' must be 'search' or 'tempered', not {self.reference!r}"
            )
        if not self.reference_dof > 0 or not 0 <= self.reference_prior_share < 1:
            raise ValueError(
                "nested settings need reference_dof > 0 and 0 <= reference_prior_share < 1"
            )
        if self.search:  # the reference's valley search: its keys checked before any fit
            from .valley_tempering import ValleyTemperingSettings

            ValleyTemperingSettings(search=dict(self.search)).validate()


class Space(NamedTuple):
    """What a nested run moves in: the log prior (up to a constant) and log likelihood of one
    point, exact prior draws ``sample(n, rng)``, the canonical form of the symmetries (None:
    no folding), the map ``to_weights(u, key)`` to weights w (a posterior draw of what the
    coordinates integrate out, where they do), and ln of the constant Z is multiplied by
    (with its s.e.) and the gradient-equivalents spent building the space."""

    log_prior: Callable
    log_likelihood: Callable
    sample: Callable
    canonical: Callable | None
    to_weights: Callable
    log_offset: float = 0.0
    log_offset_se: float = 0.0
    evaluations: int = 0


def space(target, coordinates: str = "noncentred") -> Space:
    """The coordinates nested sampling moves in: the target's ``noncentred()`` where it has
    one (module docstring), else w itself with pi = exp(-E_0) and exact draws
    ``sample_prior`` (``reference_space`` for ``coordinates: reference``)."""
    if coordinates == "noncentred" and hasattr(target, "noncentred"):
        nc = target.noncentred()
        return Space(
            nc.log_prior,
            lambda u: -target.phi_one(nc.weights(u)),
            nc.sample,
            nc.canonical,
            lambda u, _key: nc.weights(u),
        )
    return Space(
        lambda w: -target.prior_energy_one(w),
        lambda w: -target.phi_one(w),
        lambda n, rng: target.sample_prior(n, rng)[0],
        _canonical(target),
        lambda w, _key: w,
    )


def collapsed_space(target) -> Space:
    """Nested sampling on the target with the output layer integrated out exactly
    (``models.collapsed.CollapsedModel``: the first layer and the hyperparameters in
    non-centred coordinates, W2 and b2 in closed form): the same Z with no long valleys of
    growing output weights, 29 coordinates instead of 42 + 4 on the robot arm at H = 8. Its
    posterior draws get W2, b2 from their Gaussian conditional."""
    from ...models.collapsed import CollapsedModel

    model = CollapsedModel(target.objective, target.noise_prior)
    weights = model.noncentred().weights
    # the collapsed target's own non-centred space, its draws completed with W2, b2
    return space(model)._replace(to_weights=lambda u, key: model.full_weights(weights(u), key))


def reference_space(target, settings: NestedSettings, rng, log=None) -> Space | None:
    """Nested sampling from the valleys' reference (posterior repartitioning, Chen, Hobson,
    Das & Gelderblom 2019): with r the mixture that ``valley_tempering`` starts its ladders
    from (its valley search; Student-t components of ``reference_dof``, the prior's share
    ``reference_prior_share``; Laplace masses as weights) restricted to the fundamental
    domain C of the hidden units' symmetries, P = int_C r,

        p(D) = int_C |G| exp(-E(u)) du = P int (r 1_C / P) exp(-phi'(u)) du,

    phi'(u) = E(u) - ln |G| + ln r(u): the prior r 1_C / P, the likelihood exp(-phi'), and
    ln P (Monte Carlo, ``fold_probability``) added to the run's ln Z. Z is the same for any r;
    r sets how far the run has to compress, KL(posterior || r 1_C / P) instead of KL from the
    prior, and each valley starts with live points in proportion to its weight instead of its
    tiny share of the prior, so that no valley has to survive the compression from the prior
    (the failure of ``coordinates: noncentred`` on the robot arm at H = 4). No lambda path and
    no Markov chain between the reference and the posterior: independent of the tempering
    that uses the same reference. With ``reference: tempered`` r is the mixture after
    valley_tempering's burn-in (weights from the lambda = 1 occupancy, components refitted
    to the lambda = 1 states, ``refit_components``) and ln P that run's; its ladders' kept
    iterations are not used. None when the search found no valley."""
    from . import valley_tempering as vt

    symmetry = symmetry_of(target)
    tempered = settings.reference == "tempered"
    vts = vt.ValleyTemperingSettings(
        tail_dof=math.inf if tempered else settings.reference_dof,
        prior_share=settings.reference_prior_share,
        search=dict(settings.search),
    )
    ref, found, n_search = vt.search(target, vts, rng, log=log)
    if ref is None:
        return None
    if tempered:  # the burn-in adapts the reference; its kept iterations are not used
        res = vt.run_valley_tempering(target, ref, replace(vts, samples=CHUNK), rng, log=log)
        ref, n_search = res.reference, n_search + res.run.n_grad_evals
        log_p, p_se = res.log_fold, res.log_fold_se
    else:
        p, p_se, _ = vt.fold_probability(symmetry, ref, vts.fold_draws, rng)
        log_p = math.log(p)
    _, _, components, phi_prime = vt.path_functions(target)
    arrays = ref.arrays()
    inside = vt.in_domain(symmetry)

    def log_prior(u):
        value = jax.scipy.special.logsumexp(components(arrays, u))
        return jnp.where(inside(u), value, -jnp.inf)

    if log is not None:
        log(f"nested from the {settings.reference} reference: {int(np.sum(ref.valleys >= 0))} "
            f"valleys, ln P = {log_p:.3f}")  # fmt: skip
    return Space(
        log_prior,
        lambda u: -phi_prime(arrays, u),
        lambda n, rng: vt.sample_reference(symmetry, ref, n, rng, target.sample_prior)[0],
        None,
        lambda u, _key: u,
        log_p,
        p_se,
        int(n_search),
    )


def _canonical(target):
    """The canonical form of the hidden units' symmetries, for a target that has them."""
    symmetry = symmetry_of(target)
    return None if symmetry is None else symmetry.canonical


def cost(settings: NestedSettings, dimension: int, information: float) -> float:
    """Likelihood evaluations expected: R runs of n ``information`` deletions each (the run
    ends after about n H deletions, H = KL(posterior || prior) in nats), each new point
    ``inner_steps x dimension`` slice steps of about 6 evaluations (stepping out and
    shrinkage, measured on the robot arm at H = 1-2)."""
    s = settings
    return s.replicates * s.live * information * s.inner_steps * dimension * 6.0


@dataclass
class NestedRun:
    log_z_replicates: np.ndarray  # (R,) each run's ln Z (mean over volume draws)
    se_replicates: np.ndarray  # (R,) each run's volume error
    log_z: float  # the merged run's
    se_volume: float  # the merged run's volume error
    dead: int  # dead points over all runs (with the final live sets)
    steps: int
    evaluations: int
    information: float  # KL(posterior || prior) of the merged run, nats
    capped: bool
    draws: np.ndarray  # (M, W) weights of the last ``window`` dead points and the live sets
    draw_weights: np.ndarray  # (M,) their posterior weights, summing to 1
    kept_share: float  # posterior weight of the kept points in the whole run's
    log_offset: float = 0.0  # ln P of ``coordinates: reference`` (in every ln Z above)
    log_offset_se: float = 0.0  # its s.e., common to the replicates


def _dead(loglikelihood, birth):
    """The points of a finished run as BlackJAX's ``NSInfo``: only the likelihoods and the
    likelihoods they were born above enter the volume simulation."""
    from blackjax.ns.base import NSInfo, StateWithLogLikelihood

    ll = jnp.asarray(loglikelihood)
    zeros = jnp.zeros_like(ll)
    return NSInfo(StateWithLogLikelihood(zeros, zeros, ll, jnp.asarray(birth)), None)


def _log_z_draws(key, loglikelihood, birth, draws: int) -> np.ndarray:
    """ln Z under ``draws`` simulated shrinkage sequences (``blackjax.ns.utils.log_weights``)."""
    from blackjax.ns import utils

    log_w = utils.log_weights(key, _dead(loglikelihood, birth), shape=draws)
    return np.asarray(jax.scipy.special.logsumexp(log_w, axis=0))


def _mean_log_weights(key, loglikelihood, birth) -> np.ndarray:
    """Each point's posterior log weight ln(L_i dX_i), dX_i averaged over 10 simulated
    shrinkage sequences."""
    from blackjax.ns import utils

    log_w = utils.log_weights(key, _dead(loglikelihood, birth), shape=10)
    return np.asarray(log_w).mean(axis=1)


def _information(log_z: float, loglikelihood, log_w) -> float:
    """KL(posterior || prior) = sum_i p_i ln L_i - ln Z, p_i from the points' log weights
    ``log_w`` (the run length in e-folds of prior mass is about n times this)."""
    p = np.exp(log_w - np.logaddexp.reduce(log_w))
    # points of zero likelihood (a prior draw whose Cholesky factor overflowed) weigh nothing
    ll = np.where(p > 0, np.asarray(loglikelihood), 0.0)
    return float(np.sum(p * ll) - log_z)


def run_nested(
    target, settings: NestedSettings, rng: np.random.Generator, log=None
) -> NestedRun | None:
    """R independent nested-sampling runs as one vmapped compiled program (module docstring)."""
    import blackjax

    s = settings
    s.validate()
    from blackjax.ns.nss import live_covariance_factor

    if s.coordinates == "reference":
        where = reference_space(target, s, rng, log=log)
        if where is None:
            return None
    elif s.coordinates == "collapsed":
        where = collapsed_space(target)
    else:
        where = space(target, s.coordinates)
    log_prior, log_likelihood, sample, canonical, to_weights = where[:5]
    R, n = int(s.replicates), int(s.live)
    starts = np.stack([sample(n, rng) for _ in range(R)])  # (R, n, d)
    d = starts.shape[-1]
    k = max(1, int(round(s.delete_fraction * n)))
    algo = blackjax.nss(
        logprior_fn=log_prior,
        loglikelihood_fn=log_likelihood,
        num_inner_steps=max(5, int(np.ceil(s.inner_steps * d))),
        num_delete=k,
    )
    state = jax.jit(jax.vmap(algo.init))(jnp.asarray(starts, dtype=jnp.float64))

    @jax.jit
    def advance(state, key):
        def step(key_r, st):
            st, info = algo.step(key_r, st)
            if canonical is not None:  # the live set folded onto one image of each valley
                folded = st.particles._replace(position=jax.vmap(canonical)(st.particles.position))
                st = st._replace(particles=folded)
                st = st._replace(inner_kernel_params=live_covariance_factor(None, st, None, None))
            return st, info

        def body(st, key_t):
            st, info = jax.vmap(step)(jax.random.split(key_t, R), st)
            slice_info = info.update_info
            evals = jnp.sum(slice_info.num_expansions + slice_info.num_shrink, axis=(1, 2))
            p = info.particles
            return st, (p.loglikelihood, p.loglikelihood_birth, evals, p.position)

        st, (ll, birth, evals, pos) = jax.lax.scan(body, state, jax.random.split(key, CHUNK))
        remaining = st.integrator.logZ_live - st.integrator.logZ  # (R,)
        return st, ll, birth, evals.sum(axis=0), remaining, pos

    key = key_from_rng(rng)
    lls, births, evaluations, steps = [], [], np.zeros(R), 0
    positions: deque = deque(maxlen=max(1, int(np.ceil(s.window * n / (CHUNK * k)))))
    capped = False
    while True:
        key, sub = jax.random.split(key)
        state, ll, birth, evals, remaining, pos = advance(state, sub)
        lls.append(np.asarray(ll))  # (CHUNK, R, k)
        births.append(np.asarray(birth))
        positions.append(np.asarray(pos))  # (CHUNK, R, k, d): only the last ``window``
        evaluations += np.asarray(evals)
        steps += CHUNK
        if log is not None and steps % (10 * CHUNK) == 0:
            log(f"nested: {steps} steps, ln Z_live - ln Z {np.asarray(remaining).round(2)}")
        if np.all(np.asarray(remaining) < np.log(s.stop)):
            break
        if steps >= s.max_steps:
            capped = True
            break
    # (R, dead) per run: the dead points in order, then the final live set
    ll = np.concatenate(lls).transpose(1, 0, 2).reshape(R, -1)
    birth = np.concatenate(births).transpose(1, 0, 2).reshape(R, -1)
    ll = np.concatenate([ll, np.asarray(state.particles.loglikelihood)], axis=1)
    birth = np.concatenate([birth, np.asarray(state.particles.loglikelihood_birth)], axis=1)
    keys = jax.random.split(key, R + 1)
    per_run = np.stack([_log_z_draws(keys[r], ll[r], birth[r], s.volume_draws) for r in range(R)])
    merged = _log_z_draws(keys[R], ll.ravel(), birth.ravel(), s.volume_draws)
    log_z = float(merged.mean())
    # posterior weights of the merged run's points, and the points whose positions were kept
    log_w = _mean_log_weights(keys[R], ll.ravel(), birth.ravel()).reshape(R, -1)
    kept = np.concatenate(list(positions)).transpose(1, 0, 2, 3).reshape(R, -1, d)
    kept = np.concatenate([kept, np.asarray(state.particles.position)], axis=1)
    kept_log_w = log_w[:, -kept.shape[1] :]
    total = np.logaddexp.reduce(log_w.ravel())
    share = float(np.exp(np.logaddexp.reduce(kept_log_w.ravel()) - total))
    weights = np.exp(kept_log_w.ravel() - np.logaddexp.reduce(kept_log_w.ravel()))
    # points of zero weight (below every contour, e.g. prior draws of zero likelihood in a
    # short run's window) are dropped: what they map to need not be finite
    carries = weights > 0
    weights = weights[carries] / weights[carries].sum()
    to_w = jax.jit(jax.vmap(to_weights))
    flat = jnp.asarray(kept.reshape(-1, d)[carries])
    draws = np.asarray(to_w(flat, jax.random.split(jax.random.fold_in(key, 1), len(flat))))
    return NestedRun(
        log_z_replicates=per_run.mean(axis=1) + where.log_offset,
        se_replicates=per_run.std(axis=1, ddof=1),
        log_z=log_z + where.log_offset,
        se_volume=float(merged.std(ddof=1)),
        dead=int(ll.size),
        steps=steps,
        evaluations=int(evaluations.sum()) + where.evaluations,
        information=_information(log_z, ll.ravel(), log_w.ravel()),
        capped=capped,
        draws=draws,
        draw_weights=weights,
        kept_share=share,
        log_offset=where.log_offset,
        log_offset_se=where.log_offset_se,
    )


def estimate_from_run(res: NestedRun, settings: NestedSettings) -> EvidenceEstimate:
    """The merged ln Z, its honest error and status (module docstring)."""
    from scipy.stats import chi2

    R = len(res.log_z_replicates)
    spread_se = float(np.std(res.log_z_replicates, ddof=1) / np.sqrt(R))
    statistic = float(
        np.sum(
            (res.log_z_replicates - res.log_z_replicates.mean()) ** 2
            / np.maximum(res.se_replicates, 1e-12) ** 2
        )
    )
    p_value = float(chi2.sf(statistic, R - 1))
    out = EvidenceEstimate(
        log_z=res.log_z,
        log_z_se=math.hypot(max(res.se_volume, spread_se), res.log_offset_se),
        n_grad_evals=res.evaluations,
        diagnostics={
            "log_z_replicates": res.log_z_replicates,
            "se_replicates": res.se_replicates,
            "se_volume": res.se_volume,
            "se_spread": spread_se,
            "replicate_p": p_value,
            "information": res.information,
            "dead": res.dead,
            "steps": res.steps,
            "kept_share": res.kept_share,
            "log_offset": res.log_offset,
            "draws": res.draws,
            "draw_weights": res.draw_weights,
        },
    )
    if res.capped:
        out.flag("not_converged", f"nested sampling stopped at max_steps={settings.max_steps}")
    if p_value < settings.min_p:
        runs = ", ".join(f"{z:.2f}" for z in res.log_z_replicates)
        out.flag(
            "not_converged",
            f"independent nested runs disagree beyond their volume errors ({runs}; "
            f"p = {p_value:.2g}): a run lost a valley",
        )
    return out


def estimate(
    target, settings: NestedSettings, rng: np.random.Generator, log=None
) -> EvidenceEstimate:
    """ln Z by nested sampling, R independent runs merged (module docstring)."""
    started = time.process_time()
    res = run_nested(target, settings, rng, log=log)
    if res is None:
        out = EvidenceEstimate(float("nan"), float("nan"), 0)
        out.flag("diverged", "the valley search found no minimum for the reference")
        return out
    out = estimate_from_run(res, settings)
    out.diagnostics["cpu_seconds"] = time.process_time() - started
    return out
