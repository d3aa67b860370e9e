"""Monte Carlo chaining (paper 001 sec. 2-3): every link of the schedule sampled by HMC in
one vectorised batch, then the ratio, thermodynamic-integration and AIS estimates.

A target provides, as JAX functions of one weight vector, ``phi_one(w)``,
``potential(lam, theta, w)`` (the sampler's U at tempering lambda with auxiliary theta) and
``gibbs(key, lam, w, theta)`` (or None), optionally ``prior_energy_one(w)`` (E_0, for the
energy trace of paper 001 fig. 1a); and in numpy exact draws from the normalised reference
``sample_prior(n, rng) -> (w, theta)``, optionally ``start_points`` or
``optimised_start_points`` for the chains' starts.

The links' chains run as one compiled HMC batch (``engines.mcmc.hmc``); AIS particles move
through their temperatures in one compiled scan of the same HMC transition.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ...runtime.jax_runtime import SAMPLER_COMPILER_OPTIONS, jax, jnp, key_from_rng
from ..mcmc import hmc
from .estimators import ais_estimate, ratio_estimate, thermodynamic

# AIS particles adapt their step towards this acceptance probability at this rate (per
# temperature, on the log step); with a mass matrix their steps start at MASS_STEP
AIS_ACCEPT, ADAPT_RATE, MASS_STEP = 0.7, 0.05, 0.1


@dataclass(frozen=True)
class ChainProtocol:
    """Sampling protocol per link (the ``chaining`` method's settings hold the defaults:
    paper 001 sec. 5's 100 x 50 burn-in and 600 x 300 kept leapfrog steps)."""

    replicates: int  # independent chains per link (and groups of AIS particles)
    burn_in: int
    burn_leapfrog: int
    samples: int
    leapfrog: int
    step_size: float
    ais_particles: int
    ais_leapfrog: int
    ais_substeps: int = 1
    ais_reverse: bool = False  # also AIS from posterior draws back to the reference (BDMC)
    target_accept: float = 0.8
    persistence: float = 0.0
    phi_chunk: int = 256
    ramp_fraction: float = 0.5
    start: str = "prior"  # or "optimised": chains start at minima of their own E(lambda, w)
    start_restarts: int = 8
    start_iter: int = 1000


@dataclass
class ChainResult:
    lambdas: np.ndarray  # (K + 1,)
    ln_ratio: np.ndarray  # (K,)
    ln_ratio_se: np.ndarray  # (K,) within-chain
    ratio_ess: np.ndarray  # (K,)
    acceptance: np.ndarray  # (K + 1,), NaN at lambda_0 (exact draws)
    step_size: np.ndarray  # (K + 1,)
    divergent: np.ndarray  # (K + 1,)
    mean_phi: np.ndarray  # (K + 1,)
    phi_trace: np.ndarray  # (K + 1, C, S)
    energy_trace: np.ndarray  # (K + 1, C, S): E(lambda_i, w) = lambda_i phi + E_0, NaN if no E_0
    log_z_ratio: float
    log_z_ratio_se: float  # jackknife over replicates
    log_z_ratio_se_within: float  # within-chain (importance-weight ESS, autocorrelation)
    log_z_ti: float
    log_z_ti_se: float
    log_z_ti_se_within: float
    log_z_ais: float
    log_z_ais_se: float  # jackknife over groups of particles
    ais_ess: float
    log_z_ais_reverse: float  # reverse AIS: a stochastic upper bound (Grosse et al. 2015)
    log_z_ais_reverse_se: float  # jackknife over the replicate chains the particles start from
    ais_reverse_ess: float
    posterior_samples: np.ndarray  # (C * S, W) at lambda = 1
    n_grad_evals: int
    start_seconds: float  # wall time spent placing the chains' starting points
    start_cpu_seconds: float  # CPU time of the same


def _phi_chunked(target, w: np.ndarray, chunk: int) -> np.ndarray:
    """phi at every weight vector of ``w`` (..., W), in jitted batches of ``chunk``; weights
    so large that the network output overflows have E_D -> infinity: zero weight."""
    flat = np.asarray(w).reshape(-1, w.shape[-1])
    out = np.concatenate([target.phi(flat[i : i + chunk])[0] for i in range(0, len(flat), chunk)])
    return np.where(np.isnan(out), np.inf, out).reshape(w.shape[:-1])


def _tempered_energy_trace(target, lambdas, phi_all, w_ref, samples, C) -> np.ndarray:
    """E(lambda_i, w) = lambda_i phi(w) + E_0(w) at every kept sample (paper 001 fig. 1a), when
    the target provides the normalised reference energy ``prior_energy``; else NaN."""
    if not hasattr(target, "prior_energy"):
        return np.full(phi_all.shape, np.nan)
    K, S = len(lambdas) - 1, samples.shape[0]
    e0_ref = target.prior_energy(w_ref).reshape(C, S)
    e0_links = target.prior_energy(samples.reshape(-1, samples.shape[-1]))
    e0_links = e0_links.reshape(S, K * C).T.reshape(K, C, S)
    e0_all = np.concatenate([e0_ref[None], e0_links], axis=0)
    return lambdas[:, None, None] * phi_all + e0_all


def run_chain(
    target, lambdas: np.ndarray, proto: ChainProtocol, rng: np.random.Generator, log=None
):
    """Sample every link and estimate ln Z(1) three ways."""
    lambdas = np.asarray(lambdas, dtype=float)
    K, C, S = len(lambdas) - 1, proto.replicates, proto.samples
    # lambda_0: exact draws from the normalised reference
    w_ref, _ = target.sample_prior(C * S, rng)
    phi_ref = _phi_chunked(target, w_ref, proto.phi_chunk).reshape(C, S)
    # lambda_1..lambda_K: one batch of K * C chains, started from reference draws
    lam = np.repeat(lambdas[1:], C)
    n_start, started, started_cpu = 0, time.perf_counter(), time.process_time()
    optimised = proto.start == "optimised" and hasattr(target, "optimised_start_points")
    if optimised:
        w0, theta0, n_start = target.optimised_start_points(
            lambdas[1:], C, rng, proto.start_restarts, proto.start_iter
        )
    elif hasattr(target, "start_points"):
        w0, theta0 = target.start_points(K * C, rng)
    else:
        w0, theta0 = target.sample_prior(K * C, rng)
    start_seconds = time.perf_counter() - started
    start_cpu_seconds = time.process_time() - started_cpu
    ramp = max(1, int(proto.ramp_fraction * proto.burn_in))

    def burn_params(it, lam_chain):
        # every chain anneals from lambda = 0 to its own lambda over the first part of
        # burn-in, as a sequential chain would arrive from the previous link
        return lam_chain * jnp.minimum(1.0, (it + 1.0) / ramp)

    result = hmc.sample(
        target.potential,
        w0,
        theta0,
        lam,
        key_from_rng(rng),
        n_burn=proto.burn_in,
        n_samples=S,
        n_leapfrog_burn=proto.burn_leapfrog,
        n_leapfrog=proto.leapfrog,
        step_size=proto.step_size,
        gibbs=getattr(target, "gibbs", None),
        persistence=proto.persistence,
        target_accept=proto.target_accept,
        # every link advances at once: a count of iterations is the progress of the chain
        log=None if log is None else (lambda m: log(f"{m} (all {K} links x {C} chains)")),
        # chains started at their own modes need no annealing from the reference
        burn_params=burn_params if proto.ramp_fraction > 0 and not optimised else None,
    )
    phi_links = _phi_chunked(target, result.samples, proto.phi_chunk)  # (S, K*C)
    phi_links = phi_links.T.reshape(K, C, S)
    phi_all = np.concatenate([phi_ref[None], phi_links], axis=0)  # (K+1, C, S)
    energy_all = _tempered_energy_trace(target, lambdas, phi_all, w_ref, result.samples, C)
    ratios = ratio_estimate(lambdas, phi_all)
    log_z_ti, ti_se, ti_se_within = thermodynamic(lambdas, phi_all)
    step = result.step_size.reshape(K, C)
    ais, ais_se, ais_ess, n_grad_ais = float("nan"), float("nan"), float("nan"), 0
    reverse = (float("nan"),) * 3
    if proto.ais_particles > 0:
        program = ais_program(target, proto.ais_leapfrog)
        ais, ais_se, ais_ess, n_grad_ais = _ais(
            target, program, lambdas, step.mean(axis=1), proto, rng
        )
        if proto.ais_reverse:
            *reverse, n_grad_rev = _ais_reverse(
                target, program, lambdas, step.mean(axis=1), proto, result, rng
            )
            n_grad_ais += n_grad_rev
    accept = result.accept_prob.T.reshape(K, C, S).mean(axis=(1, 2))
    return ChainResult(
        lambdas=lambdas,
        ln_ratio=ratios.ln_ratio,
        ln_ratio_se=ratios.ln_ratio_se,
        ratio_ess=ratios.weight_ess,
        acceptance=np.concatenate([[np.nan], accept]),
        step_size=np.concatenate([[np.nan], step.mean(axis=1)]),
        divergent=np.concatenate([[0], result.divergent.reshape(K, C).sum(axis=1)]),
        mean_phi=phi_all.mean(axis=(1, 2)),
        phi_trace=phi_all,
        energy_trace=energy_all,
        log_z_ratio=ratios.log_z,
        log_z_ratio_se=ratios.log_z_se,
        log_z_ratio_se_within=ratios.log_z_se_within,
        log_z_ti=log_z_ti,
        log_z_ti_se=ti_se,
        log_z_ti_se_within=ti_se_within,
        log_z_ais=ais,
        log_z_ais_se=ais_se,
        ais_ess=ais_ess,
        log_z_ais_reverse=reverse[0],
        log_z_ais_reverse_se=reverse[1],
        ais_reverse_ess=reverse[2],
        posterior_samples=result.samples[:, -C:, :].reshape(-1, result.samples.shape[-1]),
        n_grad_evals=result.n_grad_evals + n_grad_ais + n_start,
        start_seconds=start_seconds,
        start_cpu_seconds=start_cpu_seconds,
    )


def refine_schedule(lambdas: np.ndarray, substeps: int) -> tuple[np.ndarray, np.ndarray]:
    """``substeps`` evenly spaced temperatures in each interval (lambda_{k-1}, lambda_k], and
    for each the index k of the link whose interval holds it (so 1 leaves the schedule as is).
    """
    lambdas = np.asarray(lambdas, dtype=float)
    fractions = np.arange(1, substeps + 1) / substeps
    fine = lambdas[:-1, None] + np.diff(lambdas)[:, None] * fractions[None, :]
    link = np.repeat(np.arange(1, len(lambdas)), substeps)
    return np.concatenate([[lambdas[0]], fine.ravel()]), link


def ais_program(target, n_steps: int):
    """The compiled AIS sweep for one target: particles (P, W) with auxiliary theta, through
    temperatures ``fine`` (T + 1,) in the order given (increasing: forward AIS; decreasing:
    reverse), with the HMC step size ``steps[k]`` at temperature k times a factor each
    particle adapts as it goes, ln f <- ln f + ADAPT_RATE (a - AIS_ACCEPT) after a transition
    accepted with probability a (each transition still leaves its own distribution invariant;
    only its step depends on the particle's past, which AIS allows). Targets with a ``mass``
    (e.g. the prior precision of every weight) run their trajectories with it. A target whose
    phi depends on the particle's auxiliary theta gives ``phi_aux(theta, w)`` instead of
    ``phi_one(w)`` for the weights (e.g. one program for the AIS of many valleys, each
    particle carrying its valley's centre and scale in theta). The program returns each
    particle's ln w, its mean acceptance probability and its final weights."""
    mass = getattr(target, "mass", None)
    phi_aux = getattr(target, "phi_aux", None)
    if phi_aux is None:

        def phi_aux(_theta, w):
            return target.phi_one(w)

    def particle(key, w, theta, fine, steps, consts):
        state = hmc.ChainState(w, jnp.zeros_like(w), jnp.zeros(()), jnp.zeros_like(w), theta)

        def body(carry, k):
            state, log_w, log_f = carry
            log_w = log_w - (fine[k] - fine[k - 1]) * jnp.nan_to_num(
                phi_aux(state.theta, state.w), nan=jnp.inf
            )
            # one transition (Gibbs + HMC) leaving the k-th distribution invariant
            state, info = hmc.transition(
                jax.random.fold_in(key, k), state, fine[k], steps[k] * jnp.exp(log_f), consts,
                potential=target.potential, gibbs=getattr(target, "gibbs", None), n_steps=n_steps,
                recompute=True, mass=mass,
            )  # fmt: skip
            log_f = log_f + ADAPT_RATE * (info.accept_prob - AIS_ACCEPT)
            return (state, log_w, log_f), info.accept_prob

        ks = jnp.arange(1, fine.shape[0] - 1)
        (state, log_w, _), accept = jax.lax.scan(body, (state, jnp.zeros(()), jnp.zeros(())), ks)
        last = fine.shape[0] - 1
        log_w = log_w - (fine[last] - fine[last - 1]) * jnp.nan_to_num(
            phi_aux(state.theta, state.w), nan=jnp.inf
        )
        return log_w, accept.mean(), state.w

    return jax.jit(
        jax.vmap(particle, in_axes=(0, 0, 0, None, None, None)),
        compiler_options=SAMPLER_COMPILER_OPTIONS,
    )


def _ais_steps(target, steps, link) -> np.ndarray:
    """The initial HMC step at every temperature (index 0 unused): the step size adapted by
    the link that holds it, or MASS_STEP when the target's mass matrix sets the scales."""
    if getattr(target, "mass", None) is not None:
        return np.full(len(link) + 1, MASS_STEP)
    return np.concatenate([[steps[0]], np.asarray(steps)[link - 1]])


def ais_constants() -> dict:
    return {
        "persistence": jnp.float64(0.0),
        "jitter": jnp.float64(0.1),
        "divergence_threshold": jnp.float64(1000.0),
    }


def _ais_reverse(target, program, lambdas, steps, proto: ChainProtocol, chains: hmc.HMCResult, rng):
    """Reverse AIS, the upper half of bidirectional Monte Carlo (Grosse, Ghahramani & Adams
    2015, sec. 4): particles start at posterior draws (the kept samples of the lambda = 1
    link's chains, with their auxiliary theta) and move through the same temperatures from
    1 down to 0, accumulating ln w_rev = sum_k (lambda_k - lambda_{k-1}) phi(w_k). Then
    E[w_rev] = 1 / Z(1), so -ln mean w_rev estimates ln Z(1) and is, by Jensen's inequality,
    an upper bound in expectation, as forward AIS's is a lower bound; the gap between the two
    bounds the error of both. The bound is exact only for exact posterior draws: chains that
    have not mixed across the posterior's modes make it approximate.

    ``ais_particles`` particles, split evenly over the ``replicates`` chains at lambda = 1
    (evenly spaced kept samples of each); the s.e. is the jackknife over those chains.
    Returns (ln Z estimate, s.e., ESS of the reverse weights, gradient evaluations)."""
    C = proto.replicates
    per_chain = max(1, proto.ais_particles // C)
    S = chains.samples.shape[0]
    rows = np.linspace(0, S - 1, per_chain).round().astype(int)
    top = chains.samples.shape[1] - C  # the lambda = 1 link's chains are the last C columns
    w = chains.samples[rows][:, top:].transpose(1, 0, 2).reshape(C * per_chain, -1)
    theta = jax.tree_util.tree_map(
        lambda t: np.swapaxes(np.asarray(t)[rows][:, top:], 0, 1).reshape(C * per_chain, -1),
        chains.thetas,
    )
    fine, link = refine_schedule(lambdas, proto.ais_substeps)
    step_at = _ais_steps(target, steps, link)
    keys = jax.random.split(key_from_rng(rng), len(w))
    log_w_rev, _, _ = program(
        keys, jnp.asarray(w), jax.tree_util.tree_map(jnp.asarray, theta),
        jnp.asarray(fine[::-1].copy()), jnp.asarray(step_at[::-1].copy()), ais_constants(),
    )  # fmt: skip
    inverse, se, ess = ais_estimate(np.asarray(log_w_rev), C)
    n_grad = len(w) * (len(fine) - 2) * (proto.ais_leapfrog + 1)
    return -inverse, se, ess, n_grad


def _ais(target, program, lambdas, steps, proto: ChainProtocol, rng):
    """Annealed importance sampling (Neal 2001) along the schedule refined by
    ``ais_substeps`` temperatures per link: particles from the reference, weights
    accumulated at each temperature, one HMC transition (with Gibbs) at each intermediate
    distribution using the step size adapted for the link that holds it. The particles form
    ``replicates`` independent groups for the standard error."""
    n = proto.ais_particles
    fine, link = refine_schedule(lambdas, proto.ais_substeps)
    w, theta = target.sample_prior(n, rng)
    step_at = _ais_steps(target, steps, link)
    keys = jax.random.split(key_from_rng(rng), n)
    log_w, _, _ = program(
        keys, jnp.asarray(w), jax.tree_util.tree_map(jnp.asarray, theta),
        jnp.asarray(fine), jnp.asarray(step_at), ais_constants(),
    )  # fmt: skip
    value, se, ess = ais_estimate(np.asarray(log_w), proto.replicates)
    n_grad = n * (len(fine) - 2) * (proto.ais_leapfrog + 1)
    return value, se, ess, n_grad
