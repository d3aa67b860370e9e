"""Monte Carlo chaining (paper 001 sec. 2-3): every link of the schedule sampled by HMC in
one vectorised batch, then the ratio, thermodynamic-integration and AIS estimates.

A target provides ``phi(w) -> (value, grad)``, ``tempered_energy(lam) -> energy(w, theta)``
for per-chain lambdas, an optional Gibbs step ``gibbs_alpha(w, theta, rng)``, and exact
draws from the normalised reference ``sample_prior(n, rng) -> (w, theta)``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..mcmc import hmc as hmc_sampler
from .estimators import ais_estimate, ratio_estimate, thermodynamic


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
    posterior_samples: np.ndarray  # (C * S, W) at lambda = 1
    n_grad_evals: int
    start_seconds: float  # wall time spent placing the chains' starting points


def _phi_chunked(target, w: np.ndarray, chunk: int) -> np.ndarray:
    flat = w.reshape(-1, w.shape[-1])
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.concatenate(
            [target.phi(flat[i : i + chunk])[0] for i in range(0, len(flat), chunk)]
        )
    # weights so large that the network output overflows have E_D -> infinity: zero weight
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
    n_start, started = 0, time.perf_counter()
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
    ramp = max(1, int(proto.ramp_fraction * proto.burn_in))

    def burn_energy(it):
        # every chain anneals from lambda = 0 to its own lambda over the first part of
        # burn-in, as a sequential chain would arrive from the previous link
        return target.tempered_energy(lam * min(1.0, (it + 1) / ramp))

    result = hmc_sampler.sample(
        target.tempered_energy(lam),
        w0,
        theta0,
        rng,
        n_burn=proto.burn_in,
        n_samples=S,
        n_leapfrog_burn=proto.burn_leapfrog,
        n_leapfrog=proto.leapfrog,
        step_size=proto.step_size,
        gibbs=getattr(target, "gibbs_alpha", None),
        persistence=proto.persistence,
        target_accept=proto.target_accept,
        log=log,
        # chains started at their own modes need no annealing from the reference
        burn_energy=burn_energy if proto.ramp_fraction > 0 and not optimised else None,
    )
    phi_links = _phi_chunked(target, result.samples, proto.phi_chunk)  # (S, K*C)
    phi_links = phi_links.T.reshape(K, C, S)
    phi_all = np.concatenate([phi_ref[None], phi_links], axis=0)  # (K+1, C, S)
    energy_all = _tempered_energy_trace(target, lambdas, phi_all, w_ref, result.samples, C)
    ratios = ratio_estimate(lambdas, phi_all)
    log_z_ti, ti_se, ti_se_within = thermodynamic(lambdas, phi_all)
    step = result.step_size.reshape(K, C)
    ais, ais_se, ais_ess, n_grad_ais = float("nan"), float("nan"), float("nan"), 0
    if proto.ais_particles > 0:
        ais, ais_se, ais_ess, n_grad_ais = _ais(target, lambdas, step.mean(axis=1), proto, rng)
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
        posterior_samples=result.samples[:, -C:, :].reshape(-1, result.samples.shape[-1]),
        n_grad_evals=result.n_grad_evals + n_grad_ais + n_start,
        start_seconds=start_seconds,
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


def _ais(target, lambdas, steps, proto: ChainProtocol, rng):
    """Annealed importance sampling (Neal 2001) along the schedule refined by
    ``ais_substeps`` temperatures per link: particles from the reference, weights
    accumulated at each temperature, one HMC transition (with Gibbs) at each intermediate
    distribution using the step size adapted for the link that holds it."""
    n = proto.ais_particles
    fine, link = refine_schedule(lambdas, proto.ais_substeps)
    w, theta = target.sample_prior(n, rng)
    log_w = np.zeros(n)
    phi, _ = target.phi(w)
    n_grad = 0
    gibbs = getattr(target, "gibbs_alpha", None)
    for k in range(1, len(fine)):
        log_w += -(fine[k] - fine[k - 1]) * np.where(np.isnan(phi), np.inf, phi)
        if k == len(fine) - 1:
            break
        res = hmc_sampler.sample(
            target.tempered_energy(np.full(n, fine[k])),
            w,
            theta,
            rng,
            n_burn=0,
            n_samples=1,
            n_leapfrog_burn=proto.ais_leapfrog,
            n_leapfrog=proto.ais_leapfrog,
            step_size=steps[link[k - 1] - 1],
            gibbs=gibbs,
            adapt=False,
        )
        w, theta = res.samples[-1], res.thetas[-1]
        n_grad += res.n_grad_evals
        phi, _ = target.phi(w)
    value, se, ess = ais_estimate(log_w, proto.replicates)
    return value, se, ess, n_grad
