"""Hybrid Monte Carlo for a batch of independent chains (Duane et al. 1987; Neal 1993, 1996).

Each chain has its own target exp(-U(w; theta)), where theta are auxiliary variables (e.g.
hyperparameters) refreshed by a Gibbs step before every trajectory. A trajectory is
``n_leapfrog`` leapfrog steps with a per-chain step size (jittered by +-10% to avoid
periodic orbits); the end point is accepted by the Metropolis test on the total energy
H = U + |p|^2 / 2. Momenta are refreshed fully, or partially with persistence
p <- decay p + sqrt(1 - decay^2) n (Horowitz; thesis sec. 5.5.2), negated on rejection.

During burn-in only, each chain's step size is adapted by dual averaging (Hoffman & Gelman
2014, sec. 3.2) towards a target acceptance rate; the step size is then frozen, so the
kept samples come from a fixed, reversible kernel. A trajectory whose energy error exceeds
``divergence_threshold`` (or is not finite) is rejected and counted as divergent.
All chains advance together: one gradient call per leapfrog step for the whole batch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

# energy(w (B, W), theta) -> (U (B,), dU/dw (B, W))
EnergyFn = Callable[[np.ndarray, object], tuple[np.ndarray, np.ndarray]]
# gibbs(w (B, W), theta, rng) -> new theta
GibbsFn = Callable[[np.ndarray, object, np.random.Generator], object]


@dataclass
class HMCResult:
    """Kept samples and per-iteration diagnostics (S kept iterations, B chains)."""

    samples: np.ndarray  # (S, B, W)
    thetas: list  # S entries of theta
    energy: np.ndarray  # (S, B) potential U at the kept samples
    accept_prob: np.ndarray  # (S, B) Metropolis acceptance probability
    accepted: np.ndarray  # (S, B) bool
    energy_error: np.ndarray  # (S, B) H(end) - H(start)
    burn_accept: np.ndarray  # (n_burn, B)
    divergent: np.ndarray  # (B,) divergent trajectories after burn-in
    divergent_burn: np.ndarray  # (B,) divergent trajectories during burn-in (adaptation)
    step_size: np.ndarray  # (B,) frozen step sizes
    n_grad_evals: int  # batched gradient calls x B


class DualAveraging:
    """Per-chain step-size adaptation towards acceptance ``target`` (Hoffman & Gelman 2014)."""

    def __init__(self, step: np.ndarray, target: float, gamma=0.05, t0=10.0, kappa=0.75):
        self.mu = np.log(10.0 * step)
        self.target, self.gamma, self.t0, self.kappa = target, gamma, t0, kappa
        self.h_bar = np.zeros_like(step)
        self.log_step = np.log(step)
        self.log_step_bar = np.log(step)
        self.t = 0

    def update(self, accept_prob: np.ndarray) -> np.ndarray:
        self.t += 1
        t = self.t
        w = 1.0 / (t + self.t0)
        self.h_bar = (1 - w) * self.h_bar + w * (self.target - accept_prob)
        self.log_step = self.mu - np.sqrt(t) / self.gamma * self.h_bar
        eta = t ** (-self.kappa)
        self.log_step_bar = eta * self.log_step + (1 - eta) * self.log_step_bar
        return np.exp(self.log_step)

    @property
    def final(self) -> np.ndarray:
        return np.exp(self.log_step_bar)


def leapfrog(energy: EnergyFn, theta, w, p, grad, step, n_steps):
    """``n_steps`` leapfrog steps for every chain; ``step`` is (B,). Returns w, p, U, grad."""
    eps = step[:, None]
    p = p - 0.5 * eps * grad
    u = None
    for i in range(n_steps):
        w = w + eps * p
        u, grad = energy(w, theta)
        if i < n_steps - 1:
            p = p - eps * grad
    p = p - 0.5 * eps * grad
    return w, p, u, grad


def sample(
    energy: EnergyFn,
    w0: np.ndarray,
    theta0,
    rng: np.random.Generator,
    *,
    n_burn: int,
    n_samples: int,
    n_leapfrog_burn: int,
    n_leapfrog: int,
    step_size: float | np.ndarray,
    gibbs: GibbsFn | None = None,
    persistence: float = 0.0,
    adapt: bool = True,
    target_accept: float = 0.8,
    thin: int = 1,
    divergence_threshold: float = 1000.0,
    jitter: float = 0.1,
    log: Callable[[str], None] | None = None,
    burn_energy: Callable[[int], EnergyFn] | None = None,
) -> HMCResult:
    """Run burn-in (with adaptation) then ``n_samples`` kept iterations (every ``thin``-th).

    ``burn_energy(it)``, if given, is the energy used at burn-in iteration ``it`` (e.g. a
    tempering ramp towards the target); kept samples always use ``energy``."""
    w = np.array(w0, dtype=float)
    B, W = w.shape
    theta = theta0
    step = np.broadcast_to(np.asarray(step_size, dtype=float), (B,)).copy()
    adapter = DualAveraging(step, target_accept) if adapt and n_burn > 0 else None
    u, grad = energy(w, theta)
    p = rng.standard_normal((B, W))
    n_grad = B
    divergent = np.zeros(B, dtype=int)
    divergent_burn = np.zeros(B, dtype=int)
    keep = {"w": [], "theta": [], "u": [], "a": [], "acc": [], "de": []}
    burn_accept = np.zeros((n_burn, B))
    total = n_burn + n_samples * thin
    target_energy = energy
    for it in range(total):
        burning = it < n_burn
        if burn_energy is not None:
            energy = burn_energy(it) if burning else target_energy
            if burning or it == n_burn:
                u, grad = energy(w, theta)
                n_grad += B
        if gibbs is not None:
            theta = gibbs(w, theta, rng)
            u, grad = energy(w, theta)
            n_grad += B
        # momentum refresh: full, or partial with persistence
        noise = rng.standard_normal((B, W))
        p = persistence * p + np.sqrt(1.0 - persistence**2) * noise if persistence > 0 else noise
        h0 = u + 0.5 * np.sum(p * p, axis=1)
        eps = step * rng.uniform(1.0 - jitter, 1.0 + jitter, B)
        n_steps = n_leapfrog_burn if burning else n_leapfrog
        with np.errstate(over="ignore", invalid="ignore"):
            w1, p1, u1, g1 = leapfrog(energy, theta, w, p, grad, eps, n_steps)
            h1 = u1 + 0.5 * np.sum(p1 * p1, axis=1)
            d_h = h1 - h0
        n_grad += B * n_steps
        bad = ~np.isfinite(d_h) | (d_h > divergence_threshold) | ~np.all(np.isfinite(w1), axis=1)
        if burning:
            divergent_burn += bad
        else:
            divergent += bad
        accept_prob = np.where(bad, 0.0, np.exp(np.minimum(0.0, -np.where(bad, 0.0, d_h))))
        accepted = (rng.uniform(size=B) < accept_prob) & ~bad
        w = np.where(accepted[:, None], w1, w)
        u = np.where(accepted, u1, u)
        grad = np.where(accepted[:, None], g1, grad)
        # with persistence, a rejection reverses the momentum (keeps the chain reversible)
        p = np.where(accepted[:, None], p1, -p)
        if burning:
            burn_accept[it] = accept_prob
            if adapter is not None:
                step = adapter.update(accept_prob)
                if it == n_burn - 1:
                    step = adapter.final
        elif (it - n_burn) % thin == thin - 1:
            keep["w"].append(w.copy())
            keep["theta"].append(theta)
            keep["u"].append(u.copy())
            keep["a"].append(accept_prob)
            keep["acc"].append(accepted)
            keep["de"].append(np.where(np.isfinite(d_h), d_h, np.inf))
        if log is not None and (it + 1) % max(1, total // 10) == 0:
            log(f"  hmc iteration {it + 1}/{total}: mean acceptance {accept_prob.mean():.2f}")
    return HMCResult(
        samples=np.array(keep["w"]).reshape(len(keep["w"]), B, W),
        thetas=keep["theta"],
        energy=np.array(keep["u"]).reshape(-1, B),
        accept_prob=np.array(keep["a"]).reshape(-1, B),
        accepted=np.array(keep["acc"]).reshape(-1, B),
        energy_error=np.array(keep["de"]).reshape(-1, B),
        burn_accept=burn_accept,
        divergent=divergent,
        divergent_burn=divergent_burn,
        step_size=step,
        n_grad_evals=int(n_grad),
    )
