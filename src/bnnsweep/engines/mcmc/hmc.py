"""Hybrid Monte Carlo for a batch of independent chains, compiled with JAX (Duane et al. 1987;
Neal 1993, 1996).

Each chain b has its own target exp(-U(w; params_b, theta)), where ``params_b`` are fixed
per-chain parameters (e.g. a tempering lambda) and theta are auxiliary variables (e.g.
hyperparameters) refreshed by a Gibbs step before every trajectory. A trajectory is
``n_leapfrog`` leapfrog steps with a per-chain step size, jittered by +-``jitter`` (10%) to
avoid periodic orbits (Neal 1996 sec. 3.5.1); its end point is accepted by the Metropolis
test on the total energy H = U + |p|^2 / 2. Momenta are refreshed fully, or partially with
persistence p <- decay p + sqrt(1 - decay^2) n (Horowitz 1991; thesis sec. 5.5.2), and
negated on rejection, which keeps the composed kernel reversible.

During burn-in only, each chain's step size is adapted by dual averaging (Hoffman & Gelman
2014, sec. 3.2, with their defaults gamma = 0.05, t0 = 10, kappa = 0.75, mu = ln 10 eps_0)
towards a target acceptance probability; at the end of burn-in the step size is frozen at
the averaged iterate, so kept samples come from a fixed, reversible kernel. A trajectory
whose energy error exceeds ``divergence_threshold`` (or is not finite) is rejected and
counted as divergent.

Everything is a pure function of an explicit state, as in BlackJAX: ``transition`` advances
one chain by one iteration; ``sample`` vmaps it over the chains (a group of chains at a time,
sized so that a group's arrays stay in the CPU's cache: ``chains_per_group``) and runs the
iterations in a compiled loop (``lax.fori_loop``; the leapfrog steps are an inner
``fori_loop``), writing the kept iterations into preallocated buffers (S x B x W samples,
nothing else of size W per iteration is kept). The random key of iteration ``it`` is ``fold_in(key, it)``, so running
the loop in chunks (to log progress between them) does not change a number.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any, NamedTuple

import numpy as np

from ...runtime.jax_runtime import SAMPLER_COMPILER_OPTIONS, jax, jnp

# potential(params, theta, w (W,)) -> scalar U for one chain
Potential = Callable[[Any, Any, jax.Array], jax.Array]
# gibbs(key, params, w (W,), theta) -> theta for one chain
GibbsFn = Callable[[jax.Array, Any, jax.Array, Any], Any]
# mass(params, theta) -> diagonal mass matrix (W,) of one chain's trajectory
MassFn = Callable[[Any, Any], jax.Array]
# burn_params(it, params) -> params of one chain at burn-in iteration it
BurnParams = Callable[[jax.Array, Any], Any]

# dual averaging constants (Hoffman & Gelman 2014 sec. 3.2)
DA_GAMMA, DA_T0, DA_KAPPA = 0.05, 10.0, 0.75
N_LOG_CHUNKS = 10


@dataclass
class HMCResult:
    """Kept samples and per-iteration diagnostics (S kept iterations, B chains), numpy."""

    samples: np.ndarray  # (S, B, W)
    thetas: Any  # pytree of theta stacked (S, B, ...); None without theta
    energy: np.ndarray  # (S, B) potential U at the kept samples
    accept_prob: np.ndarray  # (S, B) Metropolis acceptance probability
    accepted: np.ndarray  # (S, B) bool
    energy_error: np.ndarray  # (S, B) H(end) - H(start); inf when not finite
    burn_accept: np.ndarray  # (n_burn, B)
    divergent: np.ndarray  # (B,) divergent trajectories after burn-in
    divergent_burn: np.ndarray  # (B,) divergent trajectories during burn-in (adaptation)
    step_size: np.ndarray  # (B,) frozen step sizes
    n_grad_evals: int  # gradient evaluations summed over chains


class ChainState(NamedTuple):
    """One chain: position, momentum, potential and its gradient at w, auxiliary theta."""

    w: jax.Array  # (W,)
    p: jax.Array  # (W,)
    u: jax.Array  # ()
    grad: jax.Array  # (W,)
    theta: Any


class DualAveragingState(NamedTuple):
    """Hoffman & Gelman (2014) eq. 6 state of one chain: log eps_t, log eps-bar_t, H-bar_t."""

    log_step: jax.Array
    log_step_bar: jax.Array
    h_bar: jax.Array
    mu: jax.Array
    count: jax.Array


class TransitionInfo(NamedTuple):
    accept_prob: jax.Array
    accepted: jax.Array
    energy_error: jax.Array
    divergent: jax.Array


def dual_averaging_init(step: jax.Array) -> DualAveragingState:
    """Start at eps_0 with mu = ln(10 eps_0) (Hoffman & Gelman 2014 sec. 3.2)."""
    log_step = jnp.log(step)
    zero = jnp.zeros_like(log_step)
    return DualAveragingState(log_step, log_step, zero, jnp.log(10.0) + log_step, zero)


def dual_averaging_update(
    state: DualAveragingState, accept_prob: jax.Array, target: jax.Array
) -> DualAveragingState:
    """One step of Hoffman & Gelman (2014) eq. 6 for acceptance statistic ``accept_prob``:
    H-bar_t = (1 - 1/(t + t0)) H-bar_{t-1} + (delta - a_t)/(t + t0),
    ln eps_t = mu - sqrt(t)/gamma H-bar_t,  ln eps-bar_t = t^-kappa ln eps_t + (1 - t^-kappa) ln eps-bar_{t-1}."""
    t = state.count + 1.0
    weight = 1.0 / (t + DA_T0)
    h_bar = (1.0 - weight) * state.h_bar + weight * (target - accept_prob)
    log_step = state.mu - jnp.sqrt(t) / DA_GAMMA * h_bar
    eta = t ** (-DA_KAPPA)
    log_step_bar = eta * log_step + (1.0 - eta) * state.log_step_bar
    return DualAveragingState(log_step, log_step_bar, h_bar, state.mu, t)


def leapfrog(value_and_grad, w, p, grad, eps, n_steps: int | jax.Array, inv_mass=1.0):
    """``n_steps`` (>= 1) leapfrog steps of size eps from (w, p) with dU/dw = ``grad`` at w
    (Neal 1996 eq. 3.8-3.10) and kinetic energy p^T M^-1 p / 2 for a diagonal mass M
    (``inv_mass`` = diag M^-1, or 1); the half momentum steps between full steps are merged,
    so there is one gradient per step. Returns w, p, U and dU/dw at the end point.

    Every step calls ``value_and_grad`` at the same place in one loop, so the compiled program
    holds one copy of the gradient (a loop of dU/dw alone and U with dU/dw after it held two,
    and compiled 1.3x longer, for a value that costs one reduction a step)."""

    def step(i, carry):
        w, p, _, g = carry
        p = p - jnp.where(i == 0, 0.5, 1.0) * eps * g
        w = w + eps * inv_mass * p
        return (w, p, *value_and_grad(w))

    w, p, u, g = jax.lax.fori_loop(0, n_steps, step, (w, p, jnp.zeros((), w.dtype), grad))
    return w, p - 0.5 * eps * g, u, g


def transition(
    key: jax.Array,
    state: ChainState,
    params: Any,
    step: jax.Array,
    consts: dict,
    *,
    potential: Potential,
    gibbs: GibbsFn | None,
    n_steps: int | jax.Array,
    recompute: bool | jax.Array,
    mass: MassFn | None = None,
) -> tuple[ChainState, TransitionInfo]:
    """One iteration for one chain: Gibbs update of theta (if any), momentum refresh, a
    jittered leapfrog trajectory and the Metropolis test; momentum negated on rejection.

    ``mass(params, theta)`` gives a diagonal mass matrix (W,) for the trajectory, e.g. the
    prior precision of each weight under the hyperparameters just drawn (Neal 1996 sec.
    3.5.2 scales each weight's step by its prior width in the same way); the momentum is
    drawn from N(0, M) and the kinetic energy is p^T M^-1 p / 2. None: M = I. With partial
    momentum refresh and a mass that changes with theta, the kept momentum is carried in
    whitened coordinates z = M(theta)^-1/2 p: z ~ N(0, I) whatever theta is, so the Gibbs
    step (theta | w), the refresh z <- decay z + sqrt(1 - decay^2) n and the trajectory at
    fixed theta each leave exp(-U) N(z; 0, I) invariant; the momentum of the trajectory is
    then M(theta_new)^1/2 z (for a fixed mass this is the momentum kept, unchanged).

    ``recompute``: U and dU/dw at w are evaluated afresh (needed after the Gibbs step or when
    ``params`` changed since the last iteration). ``consts`` holds the traced scalars
    persistence, jitter and divergence_threshold."""
    k_gibbs, k_mom, k_jit, k_acc = jax.random.split(key, 4)
    theta = state.theta
    if gibbs is not None:
        theta = gibbs(k_gibbs, params, state.w, theta)

    def value_and_grad(w):
        return jax.value_and_grad(potential, argnums=2)(params, theta, w)

    if isinstance(recompute, bool):
        u, grad = value_and_grad(state.w) if recompute else (state.u, state.grad)
    else:  # traced: both branches compiled, one run
        u, grad = jax.lax.cond(recompute, value_and_grad, lambda _: (state.u, state.grad), state.w)
    decay = consts["persistence"]
    kept = state.p
    if mass is None:
        root_mass, inv_mass = 1.0, 1.0
    else:
        m = mass(params, theta)
        root_mass, inv_mass = jnp.sqrt(m), 1.0 / m
        if gibbs is not None:  # theta moved: the kept momentum's whitened z under the new mass
            kept = state.p * (root_mass / jnp.sqrt(mass(params, state.theta)))
    noise = root_mass * jax.random.normal(k_mom, state.w.shape, state.w.dtype)
    p = jnp.where(decay > 0, decay * kept + jnp.sqrt(1.0 - decay**2) * noise, noise)
    jitter = consts["jitter"]
    eps = step * jax.random.uniform(k_jit, (), state.w.dtype, 1.0 - jitter, 1.0 + jitter)
    h0 = u + 0.5 * jnp.dot(p, inv_mass * p)
    w1, p1, u1, g1 = leapfrog(value_and_grad, state.w, p, grad, eps, n_steps, inv_mass)
    d_h = u1 + 0.5 * jnp.dot(p1, inv_mass * p1) - h0
    bad = ~jnp.isfinite(d_h) | (d_h > consts["divergence_threshold"]) | ~jnp.all(jnp.isfinite(w1))
    accept_prob = jnp.where(bad, 0.0, jnp.exp(jnp.minimum(0.0, -jnp.where(bad, 0.0, d_h))))
    accepted = (jax.random.uniform(k_acc, (), state.w.dtype) < accept_prob) & ~bad
    new = ChainState(
        w=jnp.where(accepted, w1, state.w),
        p=jnp.where(accepted, p1, -p),
        u=jnp.where(accepted, u1, u),
        grad=jnp.where(accepted, g1, grad),
        theta=theta,
    )
    info = TransitionInfo(accept_prob, accepted, jnp.where(jnp.isfinite(d_h), d_h, jnp.inf), bad)
    return new, info


GROUP_BYTES = 5_000_000
"""Bytes of arrays a group of chains may make in one gradient (``chains_per_group``). One
gradient of one chain of the robot arm's chaining potential at H = 24 makes 566 kB of arrays
(before XLA fuses them), so 8 chains a group. The 72 chains of chaining's batch at H = 24 (18
links x 4 replicates), CPU per network gradient in the sampler (Gibbs step, 300 leapfrog
steps a trajectory; ``python benchmarks/bench_chain.py --replicates 4 --groups 1 4 8 18 36
--groups-only``, 2-core machine under load): 20.2 us in groups of 1, 21.0 of 4, 22.0 of 8,
23.3 of 18, 24.5 of 36, 28.8 all 72 at once."""


def _array_bytes(jaxpr) -> int:
    """Bytes of every array the equations of ``jaxpr`` (and of the programs inside it) make."""
    total = 0
    for eqn in jaxpr.eqns:
        total += sum(
            v.aval.size * v.aval.dtype.itemsize for v in eqn.outvars if hasattr(v.aval, "size")
        )
        for value in eqn.params.values():
            for sub in value if isinstance(value, tuple | list) else (value,):
                inner = getattr(sub, "jaxpr", sub)  # a ClosedJaxpr's jaxpr, or a Jaxpr
                if hasattr(inner, "eqns"):
                    total += _array_bytes(inner)
    return total


def chains_per_group(potential: Potential, params, theta, w: jax.Array, params_axis) -> int:
    """How many chains to advance together so that what their gradients make stays in the
    CPU's cache: ``GROUP_BYTES`` over the bytes of the arrays one chain's U and dU/dw make
    (traced, not run). Every chain of one batch, vmapped, costs more per gradient once the
    batch falls out of the cache: on the robot arm at H = 24, 19.3 us per network gradient in
    the 72 chains of chaining against 8.5 us in 18 (issue 37, compiled loop, one core)."""

    def first(tree):  # one chain's shapes: traced, nothing computed
        return jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct(a.shape[1:], a.dtype), tree)

    one = first(params) if params_axis == 0 else params
    jaxpr = jax.make_jaxpr(jax.value_and_grad(potential, argnums=2))(one, first(theta), first(w))
    return max(1, GROUP_BYTES // max(1, _array_bytes(jaxpr.jaxpr)))


def in_groups(fn, group: int | None, *args):
    """``fn(*args)`` for arguments with a leading chain axis B (pytrees; None leaves pass
    through), run ``group`` chains at a time: the chains are cut into G = ceil(B / group)
    groups of equal size (the last padded with copies of the last chain, whose results are
    dropped) and a ``lax.map`` runs ``fn`` on one group after another. Each group's arrays
    then stay in the CPU's cache for a whole trajectory, where one batch of every chain
    falls out of it (see ``GROUP_BYTES``). ``fn`` must treat the chains independently
    (vmapped): the result is the same as ``fn(*args)``. ``group`` None or >= B: one batch."""
    B = jax.tree_util.tree_leaves(args)[0].shape[0]
    if group is None or group >= B:
        return fn(*args)
    n_groups = -(-B // group)
    size = -(-B // n_groups)  # groups of equal size, at most ``group`` chains
    pad = n_groups * size - B

    def split(a):
        if pad:
            a = jnp.concatenate([a, jnp.repeat(a[-1:], pad, axis=0)])
        return a.reshape(n_groups, size, *a.shape[1:])

    out = jax.lax.map(lambda xs: fn(*xs), jax.tree_util.tree_map(split, args))
    return jax.tree_util.tree_map(lambda a: a.reshape(-1, *a.shape[2:])[:B], out)


@lru_cache(maxsize=8)
def _programs(potential, gibbs, burn_params, n_leapfrog_burn, n_leapfrog, thin, adapt,
              recompute_burn, recompute_keep, params_axis, group, mass=None):  # fmt: skip
    """The compiled pieces of ``sample`` for one target and configuration (cached, so that
    repeated calls with the same functions trace and compile once). ``params_axis`` is 0
    when ``params`` has a leading chain axis, None when all chains share it; the iterations
    run ``group`` chains at a time (``in_groups``).

    Burn-in and kept iterations are one program (``advance``, over any range of iterations;
    whether an iteration is burn-in is a traced test ``it < n_burn``): the trajectory, the
    Gibbs step and the gradient are compiled once, not once per phase, which halves the
    compile time that dominates short cells."""

    def chain_value_and_grad(params, theta, w):
        return jax.value_and_grad(potential, argnums=2)(params, theta, w)

    def static_or_traced(burn_value, keep_value, burning):
        """A setting that differs between the phases becomes a traced choice."""
        return (
            burn_value if burn_value == keep_value else jnp.where(burning, burn_value, keep_value)
        )

    @partial(jax.jit, static_argnames="momentum", compiler_options=SAMPLER_COMPILER_OPTIONS)
    def init(params, theta, w, key, step, momentum):
        """The chains' first state, the dual-averaging state and the loop's key: in one
        program (each small operation run outside one is compiled on its own). The first
        momentum is drawn only when ``momentum`` (persistence > 0): otherwise every
        trajectory draws its own and the first is never read (zeros, one program less of
        random numbers to compile)."""
        key_init, key_loop = jax.random.split(key)
        u, grad = jax.vmap(chain_value_and_grad, in_axes=(params_axis, 0, 0))(params, theta, w)
        p = jax.random.normal(key_init, w.shape, w.dtype) if momentum else jnp.zeros_like(w)
        if momentum and mass is not None:  # drawn from N(0, M(theta)), as in ``transition``
            p = p * jnp.sqrt(jax.vmap(mass, in_axes=(params_axis, 0))(params, theta))
        return ChainState(w, p, u, grad, theta), jax.vmap(dual_averaging_init)(step), key_loop

    @partial(jax.jit, compiler_options=SAMPLER_COMPILER_OPTIONS)
    def refresh(params, state):
        u, grad = jax.vmap(chain_value_and_grad, in_axes=(params_axis, 0, 0))(
            params, state.theta, state.w
        )
        return state._replace(u=u, grad=grad)

    @partial(jax.jit, donate_argnums=0, compiler_options=SAMPLER_COMPILER_OPTIONS)
    def advance(buf, carry, params, key, consts, n_burn, start, stop):
        # ``buf`` (burn-in acceptance, n_burn x B, and the kept draws, S x B x W) is donated:
        # updated in place, never copied; a write the phase does not make goes out of
        # bounds and is dropped
        n_kept = buf["u"].shape[0]

        def body(it, loop):
            buf, (state, da, step, div_burn, div_keep) = loop
            burning = it < n_burn
            keys = jax.random.split(jax.random.fold_in(key, it), state.w.shape[0])
            p_it = params
            if burn_params is not None:
                moved = jax.vmap(burn_params, in_axes=(None, params_axis))(it, params)
                p_it = jax.tree_util.tree_map(lambda a, b: jnp.where(burning, a, b), moved, params)
            one = partial(
                transition, potential=potential, gibbs=gibbs, mass=mass,
                n_steps=static_or_traced(n_leapfrog_burn, n_leapfrog, burning),
                recompute=static_or_traced(recompute_burn, recompute_keep, burning),
            )  # fmt: skip

            def chains(k, st, sz, pp):
                return jax.vmap(
                    lambda k_, st_, sz_, pp_: one(k_, st_, pp_, sz_, consts),
                    in_axes=(0, 0, 0, params_axis),
                )(k, st, sz, pp)

            if params_axis is None:  # one ``params`` for every chain: not cut into groups
                state, info = in_groups(
                    lambda k, st, sz: chains(k, st, sz, p_it), group, keys, state, step
                )
            else:
                state, info = in_groups(chains, group, keys, state, step, p_it)
            if adapt:
                moved = jax.vmap(dual_averaging_update, in_axes=(0, 0, None))(
                    da, info.accept_prob, consts["target_accept"]
                )
                da = jax.tree_util.tree_map(lambda a, b: jnp.where(burning, a, b), moved, da)
                step = jnp.where(burning, jnp.exp(da.log_step), step)
            div_burn = div_burn + jnp.where(burning, info.divergent, 0)
            div_keep = div_keep + jnp.where(burning, 0, info.divergent)
            b = jnp.where(burning, it, buf["burn_accept"].shape[0])
            # the last iteration of each group of ``thin`` is what stays
            slot = jnp.where(burning, n_kept, (it - n_burn) // thin)

            def put(b_, x):
                return b_.at[slot].set(x, mode="drop")

            buf = {
                "burn_accept": buf["burn_accept"].at[b].set(info.accept_prob, mode="drop"),
                "w": put(buf["w"], state.w),
                "theta": jax.tree_util.tree_map(put, buf["theta"], state.theta),
                "u": put(buf["u"], state.u),
                "accept_prob": put(buf["accept_prob"], info.accept_prob),
                "accepted": put(buf["accepted"], info.accepted),
                "energy_error": put(buf["energy_error"], info.energy_error),
            }
            return buf, (state, da, step, div_burn, div_keep)

        return jax.lax.fori_loop(start, stop, body, (buf, carry))

    return init, refresh, advance


def _chunks(start: int, stop: int, every: int | None) -> list[tuple[int, int]]:
    """[start, stop) cut at the multiples of ``every`` (one piece when None)."""
    if stop <= start:
        return []
    if every is None:
        return [(start, stop)]
    cuts = [start] + [k for k in range(every * (start // every + 1), stop, every)] + [stop]
    return list(zip(cuts[:-1], cuts[1:], strict=True))


def sample(
    potential: Potential,
    w0,
    theta0,
    params,
    key: jax.Array,
    *,
    n_burn: int,
    n_samples: int,
    n_leapfrog_burn: int,
    n_leapfrog: int,
    step_size,
    gibbs: GibbsFn | None = None,
    burn_params: BurnParams | None = None,
    persistence: float = 0.0,
    adapt: bool = True,
    target_accept: float = 0.8,
    thin: int = 1,
    divergence_threshold: float = 1000.0,
    jitter: float = 0.1,
    log: Callable[[str], None] | None = None,
    shared_params: bool = False,
    group: int | str | None = "cache",
    mass: MassFn | None = None,
) -> HMCResult:
    """Run ``n_burn`` burn-in iterations (step sizes adapted by dual averaging when ``adapt``,
    trajectories of ``n_leapfrog_burn`` steps, ``burn_params(it, params)`` as the chain's
    parameters when given) and then ``n_samples * thin`` iterations of ``n_leapfrog`` steps
    at the frozen step size with ``params``, keeping every ``thin``-th.

    ``potential(params, theta, w)`` is U for one chain (gradient by ``jax.value_and_grad``);
    ``w0`` is (B, W); ``theta0`` and ``params`` are pytrees with leading axis B (either may
    be None), or with ``shared_params`` ``params`` is one pytree that every chain sees (pass
    the data this way rather than closing ``potential`` over it: arrays closed over are
    baked into the compiled program as constants, so another dataset of the same shape
    would compile again instead of reusing the program, in memory or from the persistent
    cache); ``gibbs(key, params, w, theta)`` draws theta before every trajectory. The chains
    advance ``group`` at a time (``in_groups``; "cache": as many as ``chains_per_group``
    says, None: all at once), which changes no number beyond rounding. ``log``
    receives a progress line ten times; the loop then runs in ten compiled chunks, which
    changes no number. ``mass(params, theta)``: a diagonal mass matrix of each trajectory
    (``transition``); the step size then applies to the scaled coordinates.
    """
    w = jnp.asarray(w0, dtype=jnp.float64)
    if w.ndim != 2:
        raise ValueError(f"w0 must have shape (chains, weights), got {w.shape}")
    if n_burn < 0 or n_samples < 0 or thin < 1 or n_leapfrog < 1 or n_leapfrog_burn < 1:
        raise ValueError("need n_burn, n_samples >= 0 and thin, n_leapfrog(_burn) >= 1")
    if not 0.0 <= persistence < 1.0:
        raise ValueError(f"persistence must be in [0, 1), got {persistence}")
    B = w.shape[0]
    theta0 = jax.tree_util.tree_map(jnp.asarray, theta0)
    params = jax.tree_util.tree_map(jnp.asarray, params)
    # host arrays here: what runs outside the compiled programs compiles nothing
    step = np.broadcast_to(np.asarray(step_size, dtype=np.float64), (B,))
    adapting = bool(adapt) and n_burn > 0
    # U and dU/dw are evaluated afresh before a trajectory after a Gibbs step, and at every
    # burn-in iteration whose parameters change (then once more at the first kept one)
    recompute_burn = gibbs is not None or burn_params is not None
    recompute_keep = gibbs is not None
    params_axis = None if shared_params else 0
    if group == "cache":
        group = chains_per_group(potential, params, theta0, w, params_axis)
    init, refresh, advance = _programs(
        potential, gibbs, burn_params, int(n_leapfrog_burn), int(n_leapfrog), int(thin),
        adapting, recompute_burn, recompute_keep, params_axis, group, mass,
    )  # fmt: skip
    consts = {
        "persistence": np.float64(persistence),
        "jitter": np.float64(jitter),
        "divergence_threshold": np.float64(divergence_threshold),
        "target_accept": np.float64(target_accept),
    }
    state, da, key_loop = init(params, theta0, w, key, step, momentum=persistence > 0)
    n_grad = B
    total = n_burn + n_samples * thin
    every = max(1, total // N_LOG_CHUNKS) if log is not None else None

    def report(stop, accept):
        if log is not None and (stop % every == 0 or stop == total):
            log(f"  hmc iteration {stop}/{total}: mean acceptance {float(accept.mean()):.2f}")

    def stacked(x, dtype=np.float64):  # one spare row when empty: a size-0 axis cannot be indexed
        return np.zeros((max(n_samples, 1), *np.shape(x)), dtype=dtype)

    buf = {
        "burn_accept": np.zeros((max(n_burn, 1), B)),
        "w": stacked(state.w),
        "theta": jax.tree_util.tree_map(lambda t: stacked(t, t.dtype), state.theta),
        "u": stacked(state.u),
        "accept_prob": stacked(state.u),
        "accepted": stacked(state.u, bool),
        "energy_error": stacked(state.u),
    }
    zero = np.zeros(B, dtype=np.int32)
    carry = (state, da, step, zero, zero)
    n_burn_ = np.int32(n_burn)
    for start, stop in _chunks(0, n_burn, every):
        buf, carry = advance(buf, carry, params, key_loop, consts, n_burn_, start, stop)
        report(stop, np.asarray(buf["burn_accept"])[start:stop])
    state, da, step, divergent_burn, divergent = carry
    n_grad += B * n_burn * (n_leapfrog_burn + int(recompute_burn))
    if adapting:
        step = np.exp(np.asarray(da.log_step_bar))
    if burn_params is not None and n_burn > 0 and not recompute_keep:
        state = refresh(params, state)
        n_grad += B
    n_keep = n_samples * thin
    carry = (state, da, step, divergent_burn, divergent)
    for start, stop in _chunks(n_burn, total, every):
        buf, carry = advance(buf, carry, params, key_loop, consts, n_burn_, start, stop)
        j0, j1 = start - n_burn, stop - n_burn  # kept-phase iteration numbers
        report(stop, np.asarray(buf["accept_prob"])[j0 // thin : max(j0 // thin + 1, j1 // thin)])
    _, _, step, divergent_burn, divergent = carry
    n_grad += B * n_keep * (n_leapfrog + int(recompute_keep))
    out = jax.device_get(buf)
    burn_accept = out.pop("burn_accept")[:n_burn]
    out = jax.tree_util.tree_map(lambda a: a[:n_samples], out)
    return HMCResult(
        samples=out["w"],
        thetas=out["theta"],
        energy=out["u"],
        accept_prob=out["accept_prob"],
        accepted=out["accepted"],
        energy_error=out["energy_error"],
        burn_accept=np.asarray(burn_accept),
        divergent=np.asarray(divergent),
        divergent_burn=np.asarray(divergent_burn),
        step_size=np.asarray(step),
        n_grad_evals=int(n_grad),
    )
