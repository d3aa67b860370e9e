"""Parallel tempering along lambda with stepping-stone and thermodynamic integration on its
ladder: an evidence estimator whose chains move mass between valleys by themselves.

A ladder 0 = lambda_0 < lambda_1 < ... < lambda_{L-1} = 1 of the tempered family
p_lambda(w) propto exp(-lambda phi(w) - E_0(w)), Z(0) = 1 (``engines.evidence.chaining``'s
target protocol), holds one state per rung. Every iteration

1. rungs 1..L-1 take one HMC transition (Gibbs step of the auxiliary theta, trajectory,
   Metropolis test: ``engines.mcmc.hmc.transition``, vmapped over rungs and replicates),
   and rung 0 takes a fresh exact draw from the reference (``sample_prior``), a kernel
   that leaves p_0 invariant and feeds independent states into the ladder;
2. neighbours (i, i+1) exchange their states (w, theta) with probability
   min(1, exp((lambda_{i+1} - lambda_i)(phi(w_{i+1}) - phi(w_i)))) (Geyer 1991; Hukushima
   & Nemoto 1996; the reference terms cancel), the even pairs at even iterations and the odd
   pairs at odd ones (deterministic even-odd swaps, the non-reversible scheme of Okabe et
   al. 2001 and Syed, Bouchard-Cote, Deligiannidis & Doucet 2022, whose replicas sweep the
   ladder instead of diffusing on it).

A state that reaches a narrow valley at low lambda, where valleys are wide and swaps are
easy, is carried up to lambda = 1 by swaps: the chains at high lambda need not cross a
barrier themselves, which is what sequential chains and annealing cannot do across a
first-order transition.

During burn-in the ladder is placed for equal swap rejection between neighbours (Syed et
al. 2022 sec. 5.1): after each of ``adapt_rounds`` rounds the rejection rates r_i of the
pairs give the communication barrier Lambda(lambda_i) = sum_{j < i} r_j, interpolated
monotonically, and the new rungs sit at equal steps of Lambda; HMC steps adapt per rung by
dual averaging (``hmc.dual_averaging_update``). Kept iterations use the frozen ladder and
steps.

Estimates from phi at the kept states of every rung, (L, R, S) for R independent replicate
ladders (``engines.evidence.estimators``):

- stepping stone, ln Z = sum_i ln E_{lambda_i}[exp(-(lambda_{i+1} - lambda_i) phi)] (Xie
  et al. 2011; paper 001's ratio estimator on the ladder), the reported value;
- thermodynamic integration, -int_0^1 E_lambda[phi] d lambda by the trapezoid rule, with
  the rule's discretisation error estimated by Richardson (every rung against every
  second rung, / 3).

The standard error is the jackknife over the R replicate ladders, which run independently
from independent starts. The status turns ``not_converged`` when the run's own diagnostics
say the number cannot be trusted: a neighbour pair's mean swap acceptance below
``min_swap_accept``; fewer round trips (a replica's index going from rung 0 to rung L-1 and
back) per replicate than ``min_round_trips``; stepping stone and TI differing by more than
3 combined s.e. (TI's discretisation error included). Replicate ladders that disagree
(one of them without the heavy valley) widen the jackknife s.e. instead.

Cost (``cost``): R ((L - 1)(leapfrog + 1) + L) gradient-equivalents per iteration.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial

import numpy as np

from ...runtime.jax_runtime import SAMPLER_COMPILER_OPTIONS, jax, jnp, key_from_rng
from ..mcmc import hmc
from .estimators import ratio_estimate, thermodynamic
from .result import EvidenceEstimate

CHUNK = 50  # iterations per compiled sweep: lengths that are multiples of it compile once


@dataclass(frozen=True)
class TemperingSettings:
    """Parallel tempering protocol. Defaults: 32 rungs x 4 replicate ladders, 1,000 burn-in
    (ladder and step adaptation) and 2,000 kept iterations of 10 leapfrog steps."""

    rungs: int = 32  # L, including lambda = 0 and lambda = 1
    replicates: int = 4  # R independent ladders (jackknife s.e.)
    burn_in: int = 1000
    samples: int = 2000
    leapfrog: int = 10
    step_size: float = 0.1  # initial HMC step (adapted per rung during burn-in)
    target_accept: float = 0.8
    adapt_rounds: int = 4  # ladder re-placements during burn-in
    ladder_power: float = 4.0  # initial ladder lambda_i = (i / (L - 1))^power
    ladder_floor: float = 0.5  # share of the rungs kept on the initial ladder's spacing
    min_swap_accept: float = 0.1
    min_round_trips: float = 2.0  # per replicate ladder, over the kept iterations
    max_ss_ti_gap: float = 3.0  # in combined s.e.

    def validate(self) -> None:
        for key in ("rungs", "replicates", "samples", "leapfrog", "adapt_rounds"):
            if int(getattr(self, key)) < 1:
                raise ValueError(f"tempering setting {key!r} must be >= 1")
        if self.rungs < 3:
            raise ValueError("tempering needs at least 3 rungs (lambda = 0, one between, 1)")
        if self.replicates < 2:
            raise ValueError("tempering needs replicates >= 2 for its standard error")
        if self.burn_in < 0 or not self.step_size > 0 or not 0 < self.target_accept < 1:
            raise ValueError("tempering needs burn_in >= 0, step_size > 0, 0 < target_accept < 1")


def cost(settings: TemperingSettings) -> tuple[float, int]:
    """(gradient evaluations, batch): every iteration runs R (L - 1) trajectories of
    ``leapfrog`` gradients plus one at the start (U and dU/dw after the Gibbs step and the
    swap) and one phi per state for the swaps (counted as a gradient); as one vmapped batch
    of R L networks."""
    s = settings
    iterations = s.burn_in + s.samples
    per_iteration = s.replicates * ((s.rungs - 1) * (s.leapfrog + 1) + s.rungs)
    return float(iterations * per_iteration), s.replicates * s.rungs


def initial_ladder(rungs: int, power: float) -> np.ndarray:
    return (np.arange(rungs) / (rungs - 1)) ** power


def replace_ladder(ladder: np.ndarray, rejection: np.ndarray, power: float, floor: float):
    """Rungs at equal steps of a blend of the communication barrier Lambda(lambda), piecewise
    linear through Lambda(lambda_i) = sum_{j < i} r_j (Syed et al. 2022 sec. 5.1), and the
    index of the initial ladder (i / (L - 1) at lambda = (i / (L - 1))^power), with weight
    ``floor`` on the latter, each scaled to [0, 1]. The floor keeps rungs where no swap is
    rejected yet: a phase the ladder has not met (narrow valleys at low lambda, before any
    state has found them) rejects nothing, and a ladder placed by rejections alone would
    leave that range empty and never meet it."""
    r = np.maximum(np.asarray(rejection, dtype=float), 1e-3)
    barrier = np.concatenate([[0.0], np.cumsum(r)])
    index = ladder ** (1.0 / power)
    measure = (1.0 - floor) * barrier / barrier[-1] + floor * index
    new = np.interp(np.linspace(0.0, 1.0, len(ladder)), measure, ladder)
    new[0], new[-1] = 0.0, 1.0
    return new


def round_trips(labels: np.ndarray) -> np.ndarray:
    """Round trips per replicate ladder from the replica labels at each rung, (T, R, L): a
    label's trip counts when it has gone from rung 0 to rung L-1 and back to rung 0."""
    T, R, L = labels.shape
    position = np.argsort(labels, axis=-1)  # (T, R, L): the rung of each label
    phase = np.zeros((R, L), dtype=int)  # 0: wait for bottom, 1: going up, 2: going down
    trips = np.zeros(R, dtype=int)
    for t in range(T):
        pos = position[t]
        at_bottom, at_top = pos == 0, pos == L - 1
        done = (phase == 2) & at_bottom
        trips += done.sum(axis=1)
        phase = np.where(done | ((phase == 0) & at_bottom), 1, phase)
        phase = np.where((phase == 1) & at_top, 2, phase)
    return trips


def even_odd_swaps(key, it, ladder, phi):
    """One iteration's exchanges (module docstring, step 2) for phi (R, L) at every rung of
    R ladders: the pairs (i, i+1) with i of the iteration's parity swap with probability
    min(1, exp((lambda_{i+1} - lambda_i)(phi_{i+1} - phi_i))). Returns the rung each rung's
    new state comes from (R, L) and the swap probabilities of every pair (R, L - 1)."""
    R, L = phi.shape
    log_a = (ladder[1:] - ladder[:-1]) * (phi[:, 1:] - phi[:, :-1])
    swap_prob = jnp.where(jnp.isnan(log_a), 0.0, jnp.exp(jnp.minimum(0.0, log_a)))
    active = (jnp.arange(L - 1) % 2) == (it % 2)
    do = active & (jax.random.uniform(key, (R, L - 1)) < swap_prob)
    no = jnp.zeros((R, 1), dtype=bool)
    perm = (
        jnp.arange(L)
        + jnp.concatenate([do, no], axis=1).astype(jnp.int32)
        - jnp.concatenate([no, do], axis=1).astype(jnp.int32)
    )
    return perm, swap_prob


def permute_rungs(perm, a):
    """``a`` (R, L, ...) with each ladder's rungs reordered by ``perm`` (R, L)."""
    index = perm.reshape(perm.shape + (1,) * (a.ndim - 2))
    return jnp.take_along_axis(a, index, axis=1)


def _programs(target, n_leapfrog: int):
    """The compiled sweep ``run(carry, ladder, xs, consts, adapt)`` over the iterations in
    ``xs`` for one target (cached on the target)."""
    cache = target.__dict__.setdefault("_tempering_programs", {})
    if n_leapfrog in cache:
        return cache[n_leapfrog]
    one = partial(
        hmc.transition, potential=target.potential, gibbs=getattr(target, "gibbs", None),
        n_steps=n_leapfrog, recompute=True, mass=getattr(target, "mass", None),
    )  # fmt: skip
    # over rungs (each its own lambda and step), then over replicate ladders
    move = jax.vmap(jax.vmap(one, in_axes=(0, 0, 0, 0, None)), in_axes=(0, 0, None, 0, None))

    def safe_phi(w):
        return jnp.nan_to_num(target.phi_one(w), nan=jnp.inf)

    phi_all = jax.vmap(jax.vmap(safe_phi))

    def body(carry, x, ladder, consts, adapt):
        w, theta, labels, da, step, key = carry
        it, w0, theta0 = x
        R, L = labels.shape
        k_it = jax.random.fold_in(key, it)
        k_move, k_swap = jax.random.split(k_it)
        upper = hmc.ChainState(
            w[:, 1:], jnp.zeros_like(w[:, 1:]), jnp.zeros((R, L - 1)), jnp.zeros_like(w[:, 1:]),
            jax.tree_util.tree_map(lambda a: a[:, 1:], theta),
        )  # fmt: skip
        keys = jax.random.split(k_move, (R, L - 1))
        upper, info = move(keys, upper, ladder[1:], step, consts)
        w = jnp.concatenate([w0[:, None], upper.w], axis=1)
        theta = jax.tree_util.tree_map(
            lambda a, b: jnp.concatenate([a[:, None], b], axis=1), theta0, upper.theta
        )
        phi = phi_all(w)  # (R, L)
        perm, swap_prob = even_odd_swaps(k_swap, it, ladder, phi)
        permute = partial(permute_rungs, perm)
        w, phi, labels = permute(w), permute(phi), permute(labels)
        theta = jax.tree_util.tree_map(permute, theta)
        moved = jax.vmap(
            jax.vmap(hmc.dual_averaging_update, in_axes=(0, 0, None)), in_axes=(0, 0, None)
        )(da, info.accept_prob, consts["target_accept"])
        da = jax.tree_util.tree_map(lambda a, b: jnp.where(adapt, a, b), moved, da)
        step = jnp.where(adapt, jnp.exp(da.log_step), step)
        record = (phi, swap_prob, labels, info.accept_prob, info.divergent, w[:, -1])
        return (w, theta, labels, da, step, key), record

    @partial(jax.jit, compiler_options=SAMPLER_COMPILER_OPTIONS)
    def run(carry, ladder, xs, consts, adapt):
        return jax.lax.scan(lambda c, x: body(c, x, ladder, consts, adapt), carry, xs)

    cache[n_leapfrog] = run
    return run


@dataclass
class TemperingRun:
    """Kept records of one run, numpy: R replicate ladders, L rungs, S kept iterations."""

    ladder: np.ndarray  # (L,)
    phi: np.ndarray  # (L, R, S)
    swap_accept: np.ndarray  # (L - 1,) mean swap acceptance probability of each pair
    hmc_accept: np.ndarray  # (L - 1,) mean HMC acceptance at rungs 1..L-1
    divergent: np.ndarray  # (L - 1,) divergent trajectories at rungs 1..L-1
    step_size: np.ndarray  # (R, L - 1)
    round_trips: np.ndarray  # (R,)
    posterior_samples: np.ndarray  # (S, R, W) the lambda = 1 rung's states
    barrier: float  # the global communication barrier sum_i r_i of the final ladder
    n_grad_evals: int

    @classmethod
    def from_records(
        cls, ladder, phi, swap_prob, labels, accept, divergent, step_size, top, n_grad_evals: int
    ) -> TemperingRun:
        """The kept iterations' records of a compiled run, (S, R, L) or (S, R, L - 1) each, as
        a run: phi per rung, swap and HMC acceptance averaged, round trips counted."""
        swap = swap_prob.mean(axis=(0, 1))
        return cls(
            ladder=ladder,
            phi=np.transpose(phi, (2, 1, 0)),
            swap_accept=swap,
            hmc_accept=accept.mean(axis=(0, 1)),
            divergent=divergent.sum(axis=(0, 1)),
            step_size=np.asarray(step_size),
            round_trips=round_trips(labels),
            posterior_samples=top,
            barrier=float(np.sum(1.0 - swap)),
            n_grad_evals=int(n_grad_evals),
        )


def _draws(target, n_iter: int, R: int, rng: np.random.Generator):
    w, theta = target.sample_prior(n_iter * R, rng)
    w = jnp.asarray(np.asarray(w).reshape(n_iter, R, -1))
    theta = jax.tree_util.tree_map(
        lambda a: jnp.asarray(np.asarray(a).reshape(n_iter, R, *np.shape(a)[1:])), theta
    )
    return w, theta


def run_tempering(
    target, settings: TemperingSettings, rng: np.random.Generator, log=None
) -> TemperingRun:
    """Burn-in with ladder and step adaptation, then the kept iterations (module docstring)."""
    s = settings
    s.validate()
    R, L = s.replicates, s.rungs
    run = _programs(target, int(s.leapfrog))
    ladder = initial_ladder(L, s.ladder_power)
    w, theta = target.sample_prior(R * L, rng)
    w = jnp.asarray(np.asarray(w).reshape(R, L, -1))
    theta = jax.tree_util.tree_map(
        lambda a: jnp.asarray(np.asarray(a).reshape(R, L, *np.shape(a)[1:])), theta
    )
    labels = jnp.tile(jnp.arange(L, dtype=jnp.int32), (R, 1))
    step = jnp.full((R, L - 1), float(s.step_size))
    key = key_from_rng(rng)
    consts = {
        "persistence": jnp.float64(0.0),
        "jitter": jnp.float64(0.1),
        "divergence_threshold": jnp.float64(1000.0),
        "target_accept": jnp.float64(s.target_accept),
    }
    it = 0

    def sweep(carry, n, adapt):
        # in compiled pieces of CHUNK iterations (one program for every piece of that length)
        nonlocal it
        records = []
        for start in range(0, n, CHUNK):
            m = min(CHUNK, n - start)
            w0, theta0 = _draws(target, m, R, rng)
            xs = (jnp.arange(it, it + m), w0, theta0)
            it += m
            carry, rec = run(carry, jnp.asarray(ladder), xs, consts, jnp.asarray(adapt))
            records.append(jax.device_get(rec))
        return carry, [np.concatenate(parts) for parts in zip(*records, strict=True)]

    rounds = s.adapt_rounds if s.burn_in > 0 else 0
    lengths = np.diff(np.linspace(0, s.burn_in, rounds + 1).round().astype(int)) if rounds else []
    carry = (w, theta, labels, None, step, key)
    for r, n in enumerate(lengths):
        da = jax.vmap(jax.vmap(hmc.dual_averaging_init))(carry[4])
        carry = (*carry[:3], da, *carry[4:])
        carry, rec = sweep(carry, int(n), True)
        swap = rec[1][len(rec[1]) // 2 :].mean(axis=(0, 1))  # the round's second half
        if r < len(lengths) - 1:
            ladder = replace_ladder(ladder, 1.0 - swap, s.ladder_power, s.ladder_floor)
        # the averaged iterate of dual averaging is the step kept from a round
        carry = (*carry[:4], jnp.exp(carry[3].log_step_bar), carry[5])
        if log is not None:
            log(
                f"  tempering burn-in round {r + 1}/{rounds}: swap acceptance "
                f"min {swap.min():.2f} mean {swap.mean():.2f}, barrier {np.sum(1 - swap):.2f}"
            )
    if carry[3] is None:
        carry = (*carry[:3], jax.vmap(jax.vmap(hmc.dual_averaging_init))(carry[4]), *carry[4:])
    carry, rec = sweep(carry, int(s.samples), False)
    phi, swap_prob, labels_t, accept, divergent, top = rec
    grads, _ = cost(s)
    out = TemperingRun.from_records(
        ladder, phi, swap_prob, labels_t, accept, divergent, carry[4], top, grads
    )
    if log is not None:
        log(f"  tempering kept {s.samples} iterations: swap acceptance min "
            f"{out.swap_accept.min():.2f}")  # fmt: skip
    return out


def _thinned_ti(ladder: np.ndarray, phi: np.ndarray) -> float:
    """TI on every second rung (and the last), for the Richardson discretisation error."""
    idx = np.unique(np.concatenate([np.arange(0, len(ladder), 2), [len(ladder) - 1]]))
    return thermodynamic(ladder[idx], phi[idx])[0]


def estimate(
    target, settings: TemperingSettings, rng: np.random.Generator, log=None
) -> EvidenceEstimate:
    """ln Z by stepping stone on a parallel-tempering ladder, with TI beside it and the
    diagnostics that decide the status (module docstring)."""
    started = time.process_time()
    res = run_tempering(target, settings, rng, log=log)
    out = estimate_from_run(res, settings)
    out.diagnostics["cpu_seconds"] = time.process_time() - started
    return out


def estimate_from_run(res: TemperingRun, settings: TemperingSettings) -> EvidenceEstimate:
    """The stepping-stone estimate, TI and the status of a finished run (``estimate``)."""
    ratios = ratio_estimate(res.ladder, res.phi)
    ti, ti_se, _ = thermodynamic(res.ladder, res.phi)
    ti_discretisation = abs(ti - _thinned_ti(res.ladder, res.phi)) / 3.0
    out = EvidenceEstimate(
        log_z=ratios.log_z,
        log_z_se=ratios.log_z_se,
        n_grad_evals=res.n_grad_evals,
        diagnostics={
            "log_z_ti": ti,
            "log_z_ti_se": ti_se,
            "ti_discretisation": ti_discretisation,
            "log_z_se_within": ratios.log_z_se_within,
            "swap_accept_min": float(res.swap_accept.min()),
            "swap_accept": res.swap_accept,
            "round_trips": res.round_trips,
            "barrier": res.barrier,
            "ladder": res.ladder,
            "hmc_accept_min": float(res.hmc_accept.min()),
            "divergent": int(res.divergent.sum()),
        },
    )
    s = settings
    if not np.isfinite(out.log_z):
        out.flag("diverged", "the stepping-stone estimate is not finite")
        return out
    worst = int(np.argmin(res.swap_accept))
    if res.swap_accept[worst] < s.min_swap_accept:
        out.flag(
            "not_converged",
            f"swap acceptance {res.swap_accept[worst]:.3f} between lambda = "
            f"{res.ladder[worst]:.4g} and {res.ladder[worst + 1]:.4g} is below "
            f"{s.min_swap_accept:g} (barrier {res.barrier:.1f}: raise rungs)",
        )
    trips = res.round_trips.mean()
    if trips < s.min_round_trips:
        out.flag(
            "not_converged",
            f"{trips:.1f} round trips per ladder over the ladder (fewer than "
            f"{s.min_round_trips:g}): the rungs near lambda = 1 may not have met every valley "
            "(raise samples or rungs)",
        )
    combined = np.sqrt(out.log_z_se**2 + ti_se**2 + ti_discretisation**2)
    if not np.isfinite(combined) or abs(out.log_z - ti) > s.max_ss_ti_gap * combined:
        out.flag(
            "not_converged",
            f"stepping stone {out.log_z:.2f} and TI {ti:.2f} on the same ladder differ by more "
            f"than {s.max_ss_ti_gap:g} combined s.e. ({combined:.2f})",
        )
    return out
