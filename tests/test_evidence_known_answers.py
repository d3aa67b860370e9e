"""Every evidence estimator of the project on every known-answer problem
(``engines.evidence.known_answers``), over five seeds: |ln Z - truth| <= 3 reported s.e. in
at least 4 of 5, with a reported s.e. of at most 1 nat. An estimator that misses a problem is marked as failing there
(``xfail(strict=True)`` with the measured reason), so that the day it passes the mark must
go.

``ESTIMATORS`` is the registry: name -> callable(problem, seed) -> EvidenceEstimate. The
chaining estimators (ratio, TI, forward AIS, BDMC) share one ``run_chain`` per problem and
seed (small protocol: 30 links of ``power4_30``, 8 replicate chains of 100 x 10 burn-in and
200 x 10 kept leapfrog steps, 256 AIS particles through 150 temperatures both ways).

Run as a script to print the outcome table (estimator x problem: bias, mean reported s.e.,
s.d. over seeds, hits within 3 s.e.): ``python tests/test_evidence_known_answers.py``.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from bnnsweep.engines.evidence import (
    known_answers,
    nested,
    tempering,
    valley_smc,
    valley_tempering,
    valleys,
)
from bnnsweep.engines.evidence.chaining import ChainProtocol, run_chain
from bnnsweep.engines.evidence.estimators import bdmc_estimate
from bnnsweep.engines.evidence.result import EvidenceEstimate
from bnnsweep.engines.evidence.schedules import schedule

SEEDS = tuple(range(5))
MIN_HITS = 4
WITHIN_SE = 3.0
# a hit also needs an informative error: a reported s.e. above 1 nat covers any bias (BDMC's
# half-bracket reached 12 nats on the mixture, 17 nats below the truth, and "passed")
MAX_SE = 1.0


def _rng(problem: known_answers.KnownAnswer, seed: int, stream: int) -> np.random.Generator:
    return np.random.default_rng([known_answers.PROBLEMS.index(problem.name), seed, stream])


@cache
def _chain(name: str, seed: int):
    problem = known_answers.problem(name)
    proto = ChainProtocol(
        replicates=8,
        burn_in=100,
        burn_leapfrog=10,
        samples=200,
        leapfrog=10,
        step_size=problem.step_size,
        ais_particles=256,
        ais_leapfrog=10,
        ais_substeps=5,
        ais_reverse=True,
    )
    return run_chain(problem.target, schedule("power4_30"), proto, _rng(problem, seed, 0))


def _chained(value: str, se: str):
    def run(problem, seed):
        res = _chain(problem.name, seed)
        return EvidenceEstimate(getattr(res, value), getattr(res, se), res.n_grad_evals)

    return run


def _bdmc(problem, seed):
    res = _chain(problem.name, seed)
    value, se = bdmc_estimate(
        res.log_z_ais, res.log_z_ais_se, res.log_z_ais_reverse, res.log_z_ais_reverse_se
    )
    return EvidenceEstimate(value, se, res.n_grad_evals)


TEMPERING = tempering.TemperingSettings(
    rungs=24, replicates=4, burn_in=1000, samples=2000, leapfrog=10
)


def _tempering(problem, seed):
    settings = tempering.TemperingSettings(**{**TEMPERING.__dict__, "step_size": problem.step_size})
    return tempering.estimate(problem.target, settings, _rng(problem, seed, 1))


VALLEYS = valleys.ValleySettings(starts=16, temperatures=300, particles=32, pilot_samples=100)


def _valleys(problem, seed):
    return valleys.estimate(problem.target, VALLEYS, _rng(problem, seed, 2))


# 3 x dim slice steps suffice here with 100 live points (the robot arm needs the default
# 10 x dim: 3 x dim left H = 2 five nats low); 50 live points with 3 x dim were 2.5-4.3 nats
# HIGH on the mixture and the hierarchical regression in 5 of 5 seeds (the new points too
# close to the survivors they start from)
NESTED = nested.NestedSettings(live=100, replicates=2, inner_steps=3.0)


def _nested(problem, seed):
    return nested.estimate(problem.target, NESTED, _rng(problem, seed, 3))


# nested sampling from the valleys' reference (posterior repartitioning): the valley search
# of valley_tempering with the same 128 starts, Student-t components
NESTED_REFERENCE = nested.NestedSettings(
    live=100, replicates=2, inner_steps=3.0, coordinates="reference", search={"starts": 128}
)


def _nested_reference(problem, seed):
    return nested.estimate(problem.target, NESTED_REFERENCE, _rng(problem, seed, 5))


# 128 starts: the mixture's narrowest mode draws 3-5% of them (64 missed it in 2 of 3 seeds)
VALLEY_TEMPERING = valley_tempering.ValleyTemperingSettings(
    rungs=8, replicates=8, burn_in=200, samples=200, search={"starts": 128, "pilot_samples": 100}
)


def _valley_tempering(problem, seed):
    return valley_tempering.estimate(problem.target, VALLEY_TEMPERING, _rng(problem, seed, 4))


# the same search (128 starts); the defaults: 8 runs of 256 particles, 10 moves per stage,
# passes until they settle (``valley_smc.passes_settled``; with 128 particles, 5 moves and two passes the mixture
# came out -0.13 and -0.14 in two seeds, at 2.7 and 3.0 s.e.)
VALLEY_SMC = valley_smc.ValleySMCSettings(search={"starts": 128, "pilot_samples": 100})


def _valley_smc(problem, seed):
    return valley_smc.estimate(problem.target, VALLEY_SMC, _rng(problem, seed, 6))


ESTIMATORS = {
    "valley_tempering": _valley_tempering,
    "valley_smc": _valley_smc,
    "nested": _nested,
    "nested_reference": _nested_reference,
    "valleys": _valleys,
    "ratio": _chained("log_z_ratio", "log_z_ratio_se"),
    "ti": _chained("log_z_ti", "log_z_ti_se"),
    "ais": _chained("log_z_ais", "log_z_ais_se"),
    "bdmc": _bdmc,
    "tempering": _tempering,
}

# (valleys, linear_hierarchical) passes 4/5 since the HMC pilot chains' random stream changed
# (67de3ee): errors -0.056, -0.181, +0.010, -0.002, -0.067 with s.e. 0.028, 0.039, 0.085,
# 0.019, 0.086; seed 1 still misses by 4.6 s.e. (was 3/5, errors up to 0.11)
# measured misses (estimator, problem) -> reason: the outcome table of 2026-11-27 (bias of
# the mean over 5 seeds, mean reported s.e., hits within 3 s.e. with s.e. <= 1 nat)
FAILING: dict[tuple[str, str], str] = {
    ("valleys", "mixture"): "bias -0.33 to -0.43 in 4 of 5 seeds (s.e. 0.04-0.08): 16 starts "
    "from the prior miss a narrow mode (the sum is a lower bound, as it should be)",
    ("ratio", "mixture"): "bias -8.2, s.e. 1.5, 0/5: the links' chains stay in the broad "
    "phase past the transition and hold the narrow valleys in equal shares",
    ("ti", "mixture"): "bias -19.8, s.e. 1.7, 0/5: E_lambda[phi] from chains that never "
    "cross the first-order transition",
    ("ti", "linear_gaussian"): "bias -0.59, s.e. 0.26, 1/5: the trapezoid rule's "
    "discretisation error on 30 links, which no Monte Carlo s.e. contains",
    ("ais", "mixture"): "bias -4.8, s.e. 3.6, 1/5: weights with ESS 1-2 of 256",
    ("ais", "linear_gaussian"): "bias -1.0, s.e. 0.50, s.d. 0.66, 3/5: 150 temperatures "
    "leave the weights heavy-tailed (ESS 2-13 of 256)",
    ("ais", "linear_hierarchical"): "bias -18.7, s.e. 1.8, 0/5: particles with the "
    "alpha mass matrix and MASS_STEP fall behind the narrowing posterior",
    ("bdmc", "mixture"): "bias -17.2, s.e. 12.6 (half the bracket), 0/5 with s.e. <= 1",
    ("bdmc", "linear_gaussian"): "bias +0.16, s.e. 1.34, 2/5 with s.e. <= 1: the bracket "
    "between forward and reverse AIS is 2-4 nats wide",
    ("bdmc", "linear_hierarchical"): "bias -8.2, s.e. 10.6, 0/5 with s.e. <= 1: forward "
    "AIS 18 nats low",
}


def _outcome(estimator: str, name: str):
    problem = known_answers.problem(name)
    runs = [ESTIMATORS[estimator](problem, seed) for seed in SEEDS]
    values = np.array([r.log_z for r in runs])
    ses = np.array([r.log_z_se for r in runs])
    hits = int(np.sum((np.abs(values - problem.log_z) <= WITHIN_SE * ses) & (ses <= MAX_SE)))
    return problem, runs, values, ses, hits


BORDERLINE = {("ti", "linear_gaussian")}
"""Misses that sit on the 4-of-5 line, so that the floating-point platform decides them:
TI on the linear Gaussian is biased low in every seed (-0.46 to -0.83 with s.e. 0.21-0.40 on
the machine of 2026-12-03, 4/5 within 3 s.e.; 1/5 on the earlier one). Still marked failing
(it is no default), but not strictly: a pass there is no news."""


def _cases():
    for estimator in ESTIMATORS:
        for name in known_answers.PROBLEMS:
            reason = FAILING.get((estimator, name))
            strict = (estimator, name) not in BORDERLINE
            marks = [pytest.mark.xfail(strict=strict, reason=reason)] if reason else []
            yield pytest.param(estimator, name, marks=marks, id=f"{estimator}-{name}")


@pytest.mark.parametrize(("estimator", "name"), list(_cases()))
def test_estimator_within_three_reported_se_of_the_known_answer(estimator, name):
    problem, runs, values, ses, hits = _outcome(estimator, name)
    assert np.all(np.isfinite(ses)) and np.all(ses > 0), ses
    detail = [f"{v - problem.log_z:+.3f} +- {s:.3f}" for v, s in zip(values, ses, strict=True)]
    assert hits >= MIN_HITS, (estimator, name, detail)


def test_mixture_normaliser_against_quadrature_and_an_independent_density():
    """The mixture's phi: int exp(-phi) N(0, s_0^2) = Z by 2-D quadrature on a grid, and in
    20 dimensions exp(-phi) N(0, s_0^2) / Z equals the mixture density written with
    scipy.stats (so the closed form Z(1) = Z holds for the shipped target too)."""
    from scipy.stats import multivariate_normal

    small = known_answers.mixture(dimension=2, narrow_sds=(0.3, 0.2), narrow_weights=(0.6, 0.4))
    grid = np.linspace(-8, 8, 801)
    xx, yy = np.meshgrid(grid, grid)
    w = np.column_stack([xx.ravel(), yy.ravel()])
    integrand = np.exp(-small.phi(w)[0] - small.prior_energy(w))
    value = integrand.sum() * (grid[1] - grid[0]) ** 2
    assert np.log(value) == pytest.approx(small.log_z, abs=1e-9)

    target = known_answers.problem("mixture").target
    w = target.sample_posterior(50, np.random.default_rng(3))
    w = np.concatenate([w, np.random.default_rng(4).normal(size=(50, target.dimension))])
    dens = sum(
        np.exp(lw) * multivariate_normal(m, s**2 * np.eye(target.dimension)).pdf(w)
        for m, s, lw in zip(target.means, target.sds, target.log_weights, strict=True)
    )
    ours = -target.phi(w)[0] - target.prior_energy(w) - target.log_z
    np.testing.assert_allclose(ours, np.log(dens), rtol=0, atol=1e-9)


def test_mixture_has_a_first_order_transition():
    """The tempered masses of the narrow and the broad phase cross at a lambda* inside
    (0.1, 0.6) with a jump in E_lambda[phi] (the slope of their log ratio) of over 10 nats."""
    target = known_answers.problem("mixture").target
    lams = np.linspace(0.01, 1.0, 991)
    masses = target.phase_log_masses(lams)
    diff = np.logaddexp.reduce(masses[:, :-1], axis=1) - masses[:, -1]
    cross = np.flatnonzero(np.diff(np.sign(diff)) > 0)
    assert len(cross) == 1 and 0.1 < lams[cross[0]] < 0.6
    assert np.gradient(diff, lams)[cross[0]] > 10.0


def test_linear_gaussian_evidence_against_monte_carlo():
    """ln Z of the known-noise regression against importance sampling from its exact
    posterior N(A^-1 beta X^T t, A^-1), A = alpha I + beta X^T X (a check of the closed form
    and of phi and E_0 together)."""
    target = known_answers.problem("linear_gaussian").target
    a = target.alpha * np.eye(target.dimension) + target.beta * target.x.T @ target.x
    cov = np.linalg.inv(a)
    mean = cov @ (target.beta * target.x.T @ target.t)
    rng = np.random.default_rng(5)
    w = rng.multivariate_normal(mean, cov, size=4000)
    d = w - mean
    _, logdet = np.linalg.slogdet(cov)
    log_q = -0.5 * (target.dimension * np.log(2 * np.pi) + logdet + np.sum(d @ a * d, axis=1))
    log_w = -target.phi(w)[0] - target.prior_energy(w) - log_q
    # the proposal is the posterior: every weight is Z, up to rounding
    np.testing.assert_allclose(log_w, target.log_z, atol=1e-8)


def test_hierarchical_regression_quadrature_is_converged():
    model = known_answers.problem("linear_hierarchical").target
    from bnnsweep.models.conjugate import linear_log_evidence_integrated

    coarse = linear_log_evidence_integrated(model.objective, model.noise_prior, n_grid=201)
    assert coarse == pytest.approx(model.log_z, abs=1e-8)


def outcome_table() -> str:
    """estimator x problem: bias of the mean, mean reported s.e., s.d. over seeds, hits."""
    lines = [
        f"{'estimator':<10} {'problem':<20} {'bias':>8} {'mean se':>8} {'sd':>8} hits  "
        "not ok  grads"
    ]
    for estimator in ESTIMATORS:
        for name in known_answers.PROBLEMS:
            problem, runs, values, ses, hits = _outcome(estimator, name)
            lines.append(
                f"{estimator:<10} {name:<20} {values.mean() - problem.log_z:+8.3f} "
                f"{ses.mean():8.3f} {values.std(ddof=1):8.3f} {hits}/{len(SEEDS)}   "
                f"{sum(r.status != 'ok' for r in runs)}/{len(SEEDS)}   "
                f"{np.mean([r.n_grad_evals for r in runs]):.2e}"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    print(outcome_table())
