"""Sequential Monte Carlo from the valleys' reference: ln p(D) along the path of
``valley_tempering`` by resample-move instead of a ladder of exchanging chains, a second
estimator that shares the reference family and the invariant kernel with it, but no chain,
no ladder and no state: its reference is adapted to its own particles only.

The path is ``valley_tempering``'s: p_lambda(u, k) propto r(u, k) exp(-lambda phi'(u)) from
the reference restricted to one image C of the hidden units' symmetries (Z(0) = P) to the
folded posterior (Z(1) = p(D)). The reference is built from the search alone (valleys by
many starts, their pilot chains' moment-matched Gaussians, the prior as a defensive
component) with every valley weighted equally: any normalised reference gives the same
answer, and equal weights start every valley found with particles whatever its Laplace
mass, which is nats off. Passes then adapt it: after each, every valley's component is
moved to the final particles nearest it and widened where they spread beyond it, never
narrowed, and the weights follow the particles' occupancy (the tempering's
``refit_components`` and ``adapted_weights``, fed with this estimator's own particles),
until the passes settle (``passes_settled``: the last two differ by at most ``settle_gap``
combined s.e. and at most ``settle_nats``, or the last three by at most ``settle_gap``
combined s.e. pairwise and the last is within ``settle_nats`` of the one two passes back) or
``refits`` refits are spent; the last pass gives the estimate.

N particles per run start as exact draws of r on C. Stage t goes from lambda_t to
lambda_t+1, chosen by bisection so that the incremental weights w_i = exp(-(lambda_t+1 -
lambda_t) phi'(u_i)) keep an effective sample size of ``ess_target`` N in every run (one
ladder for all runs, so that they run in one batch); then

    ln Z(lambda_t+1) - ln Z(lambda_t) ~ ln mean_i w_i,

the particles are resampled by their weights (systematic) and moved by ``moves`` sweeps of
the tempering's invariant kernel at lambda_t+1 (``valley_tempering.move_function``: label
Gibbs, HMC in a valley's whitened coordinates, valley jumps), the HMC step adapted between
stages towards ``target_accept``. ln p(D) = ln P + sum_t ln mean_i w_i: the estimate of Z
is unbiased for any reference and any invariant kernel (Del Moral, Doucet & Jasra 2006, sec.
3.2), and resampling moves mass between valleys by their weights, so a valley the reference
underweights gains particles as lambda grows without any chain crossing between valleys.

Error. ``runs`` independent runs of N particles; ln p(D) = ln of the mean of their Z, its
s.e. the runs' spread of ln Z over sqrt(runs) with ln P's added. ``not_converged`` when the
runs' spread exceeds ``max_run_sd`` (the mean of Z is then carried by one run and its s.e.
meaningless), when the passes did not settle (the reference, refitted once more, still
changes the answer: robot arm H = 8, one seed's passes 475.87, 477.24, 477.90 stopped at a
gap of 0.66 nats within 2 s.e. and were marked ok, 4 nats under the other seeds), when the
ladder needs more than ``max_stages`` stages, or on the valley
search's coverage check (valleys first found by the last starts holding mass). The final
particles are equally weighted posterior draws (in C).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from ...runtime.jax_runtime import SAMPLER_COMPILER_OPTIONS, jax, jnp, key_from_rng
from . import valley_tempering as vt
from . import valleys as valley_search
from .result import EvidenceEstimate


@dataclass(frozen=True)
class ValleySMCSettings:
    """The valley search (``search``: overrides of ``valleys.ValleySettings`` under
    ``valley_tempering.SEARCH_DEFAULTS``) and the SMC protocol."""

    particles: int = 256  # per run
    runs: int = 8
    moves: int = 10  # sweeps of the invariant kernel per stage
    leapfrog: int = 10
    step_size: float = 0.5  # initial HMC step in whitened coordinates (adapted per stage)
    target_accept: float = 0.8
    ess_target: float = 0.5  # share of N the incremental weights' ESS keeps
    max_stages: int = 2000
    max_components: int = 48
    prior_share: float = 0.05
    tail_dof: float = math.inf
    fold_draws: int = 20000
    max_run_sd: float = 1.0
    # at most this many passes before the one that is kept: after each, every valley's
    # component is refitted to the final particles nearest it (``valley_tempering.
    # refit_components``: moved and widened, never narrowed) and the weights set to their
    # occupancy (with the tempering's ``weight_floor``); the passes stop when they settle
    # (``passes_settled``). The pilot chains' Gaussians hold too little
    # of the posterior's tails (robot arm H = 4, collapsed, from them: 161.61 +- 0.05, 36% of
    # the final particles outside every component, against 162.86 by tempering; H = 8, seed
    # 0, six passes of 10 moves: 474.73, 476.50, 478.08, 480.22, 481.56, 482.15)
    refits: int = 8
    # states that shrink a refit to the last fit (the tempering's ``refit_prior``; its 50
    # suits chain draws, 20-100 per valley; the SMC's particles are 2,048 moved draws). Robot
    # arm H = 8, seed 2: with 50 the passes gave 476.21, 476.11 and stopped (not_converged on
    # the coverage check), with 5 they climbed 476.21, 477.99, 478.89, 479.76, 480.97, 482.37
    # to settle at 481.93, 481.77 (ok); H = 4, seed 0: 161.45, 162.78, 162.91, 162.90
    refit_prior: float = 5.0
    refit_inflate: float = 1.2
    settle_gap: float = 2.0
    settle_nats: float = 0.25
    # draws of importance sampling from the last pass's reference refitted to its final
    # particles (``importance_check``; 0: none): a stochastic lower bound with no Markov
    # chain; above the estimate by more than ``check_se`` combined s.e.: not_converged
    check_draws: int = 100000
    check_se: float = 3.0
    # the second estimator in the cell (``tempering_check``): valley_tempering (its defaults
    # under the ``tempering`` overrides) from the final reference refitted once more, its
    # chains started from the final particles; apart from the SMC by more than ``check_se``
    # combined s.e.: not_converged
    tempering_check: bool = False
    tempering: dict = field(default_factory=dict)
    search: dict = field(default_factory=dict)

    def tempering_settings(self) -> vt.ValleyTemperingSettings:
        """The ``valley_tempering`` settings whose ``search`` builds the reference."""
        return vt.ValleyTemperingSettings(
            max_components=self.max_components, prior_share=self.prior_share,
            tail_dof=self.tail_dof, fold_draws=self.fold_draws, search=dict(self.search),
            refit_prior=self.refit_prior, refit_inflate=self.refit_inflate,
        )  # fmt: skip

    def check_protocol(self) -> vt.ValleyTemperingSettings:
        """The ladder protocol of ``tempering_check``: ``valley_tempering``'s defaults under
        the ``tempering`` overrides, on this estimator's reference family."""
        family = dict(max_components=self.max_components, prior_share=self.prior_share,
                      tail_dof=self.tail_dof, fold_draws=self.fold_draws,
                      search=dict(self.search))  # fmt: skip
        return vt.ValleyTemperingSettings(**{**family, **self.tempering})

    def validate(self) -> None:
        if int(self.refits) < 0:
            raise ValueError("valley SMC setting 'refits' must be >= 0")
        for key in ("particles", "moves", "leapfrog", "max_stages", "max_components"):
            if int(getattr(self, key)) < 1:
                raise ValueError(f"valley SMC setting {key!r} must be >= 1")
        if int(self.runs) < 2:
            raise ValueError("valley SMC setting 'runs' must be >= 2 (the s.e. is their spread)")
        if not 0 < self.ess_target < 1:
            raise ValueError("valley SMC setting 'ess_target' must be in (0, 1)")
        if not 0 < self.target_accept < 1 or not self.step_size > 0:
            raise ValueError("valley SMC settings 'target_accept' in (0, 1), 'step_size' > 0")
        if not self.max_run_sd > 0 or not self.settle_nats > 0 or not self.settle_gap > 0:
            raise ValueError(
                "valley SMC settings 'max_run_sd', 'settle_gap', 'settle_nats' must be > 0"
            )
        if int(self.check_draws) < 0 or not self.check_se > 0:
            raise ValueError("valley SMC settings 'check_draws' >= 0, 'check_se' > 0")
        self.tempering_settings().validate()
        if not isinstance(self.tempering, dict):
            raise ValueError("valley SMC setting 'tempering' must be a mapping")
        unknown = set(self.tempering) - set(vt.ValleyTemperingSettings.__dataclass_fields__)
        if unknown:
            raise ValueError(f"valley SMC setting 'tempering': unknown key {sorted(unknown)[0]!r}")
        self.check_protocol().validate()


# gradient-equivalents of one draw of the importance check (the reference mixture's density
# over up to ``max_components`` components and phi' at the draw): measured as about 6% of
# the SMC's CPU at H = 8 (10^5 draws beside 15-25 M gradients), i.e. about 12 a draw
CHECK_GRADIENTS_PER_DRAW = 12.0


def cost(settings: ValleySMCSettings, stages: int) -> tuple[float, int]:
    """(gradient-equivalents of ``stages`` stages of one pass, batch): per particle and
    stage, ``moves`` sweeps of ``leapfrog`` + 1 gradients and two evaluations for the jump,
    and one for the incremental weight."""
    s = settings
    batch = s.particles * s.runs
    return float(stages * batch * (s.moves * (s.leapfrog + 3) + 1)), batch


def checks_cost(settings: ValleySMCSettings) -> float:
    """Gradient-equivalents of the checks after the passes: the importance check's
    ``check_draws`` and, with ``tempering_check``, the ladder's (``valley_tempering.cost``)."""
    s = settings
    ladder = vt.cost(s.check_protocol())[0] if s.tempering_check else 0.0
    return int(s.check_draws) * CHECK_GRADIENTS_PER_DRAW + ladder


def next_lambda(phi: np.ndarray, lam: float, ess_target: float) -> float:
    """The largest lambda' in (lam, 1] whose incremental weights exp(-(lambda' - lam) phi)
    keep an ESS of at least ``ess_target`` times the particles in every run (phi: (R, N));
    bisection on the step (the ESS falls as the step grows)."""

    def worst_ess(step):
        log_w = np.where(np.isfinite(phi), -step * phi, -np.inf)
        log_w = log_w - log_w.max(axis=1, keepdims=True)
        w = np.exp(log_w)
        return float(np.min(w.sum(axis=1) ** 2 / np.sum(w**2, axis=1) / phi.shape[1]))

    if worst_ess(1.0 - lam) >= ess_target:
        return 1.0
    lo, hi = 0.0, 1.0 - lam
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if worst_ess(mid) >= ess_target else (lo, mid)
    return lam + max(lo, 1e-12)


def systematic_resample(log_w: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Indices (R, N) drawn by systematic resampling within each run from weights exp(log_w)
    (R, N): each particle kept floor or ceil of N w_i times."""
    R, N = log_w.shape
    w = np.exp(log_w - log_w.max(axis=1, keepdims=True))
    cdf = np.cumsum(w / w.sum(axis=1, keepdims=True), axis=1)
    points = (rng.uniform(size=(R, 1)) + np.arange(N)[None]) / N
    return np.minimum(np.stack([np.searchsorted(c, p) for c, p in zip(cdf, points, strict=True)]),
                      N - 1)  # fmt: skip


def _programs(target, settings: ValleySMCSettings):
    """(``phi(ref, u)`` over particles, ``mutate(key, u, k, lam, step, ref)``: ``moves``
    sweeps of every particle), compiled once per target and protocol."""
    cache = target.__dict__.setdefault("_valley_smc_programs", {})
    key = (int(settings.moves), int(settings.leapfrog))
    if key in cache:
        return cache[key]
    phi_prime = vt.path_functions(target)[3]
    move = jax.vmap(vt.move_function(target, int(settings.leapfrog)),
                    in_axes=(0, 0, 0, None, None, None))  # fmt: skip

    @partial(jax.jit, compiler_options=SAMPLER_COMPILER_OPTIONS)
    def mutate(key, u, k, lam, step, ref):
        def sweep(carry, key_t):
            u, k = carry
            u, k, acc, jumped, divergent = move(jax.random.split(key_t, u.shape[0]), u, k, lam,
                                                step, ref)  # fmt: skip
            return (u, k), (acc.mean(), jumped.mean(), divergent.mean())

        (u, k), (acc, jumped, divergent) = jax.lax.scan(
            sweep, (u, k), jax.random.split(key, settings.moves)
        )
        return u, k, acc.mean(), jumped.mean(), divergent.mean()

    phi = jax.jit(jax.vmap(phi_prime, in_axes=(None, 0)))
    cache[key] = (phi, mutate)
    return cache[key]


@dataclass
class ValleySMCRun:
    log_z_runs: np.ndarray  # (R,) ln Z of each run, ln P excluded
    ladder: np.ndarray  # (T + 1,) lambda_0 = 0 .. 1
    acceptance: np.ndarray  # (T,) mean HMC acceptance at each stage
    jumps: np.ndarray  # (T,) share of valley jumps accepted to another valley
    step_size: np.ndarray  # (T,)
    reference: vt.Reference
    log_fold: float
    log_fold_se: float
    particles: np.ndarray  # (R, N, D) the final particles, equally weighted posterior draws
    labels: np.ndarray  # (R, N) their components (indices of the reference's)
    n_grad_evals: int


def run_valley_smc(
    target, reference: vt.Reference, settings: ValleySMCSettings, rng, log=None
) -> ValleySMCRun:
    """The resample-move run of the module doc from ``reference`` (its weights as given)."""
    s = settings
    symmetry = valley_search.symmetry_of(target)
    R, N = int(s.runs), int(s.particles)
    phi_program, mutate = _programs(target, s)
    u, k = vt.sample_reference(symmetry, reference, R * N, rng, target.sample_prior)
    u, k = jnp.asarray(u), jnp.asarray(k)
    arrays = reference.arrays()
    key = key_from_rng(rng)
    lam, step, log_z = 0.0, float(s.step_size), np.zeros(R)
    ladder, acceptance, jumps, steps = [0.0], [], [], []
    while lam < 1.0 and len(ladder) <= s.max_stages:
        phi = np.asarray(phi_program(arrays, u)).reshape(R, N)
        new = next_lambda(phi, lam, s.ess_target)
        log_w = np.where(np.isfinite(phi), -(new - lam) * phi, -np.inf)
        top = log_w.max(axis=1, keepdims=True)
        log_z += top[:, 0] + np.log(np.mean(np.exp(log_w - top), axis=1))
        pick = systematic_resample(log_w, rng) + (np.arange(R) * N)[:, None]
        u, k = u[pick.ravel()], k[pick.ravel()]
        key, sub = jax.random.split(key)
        u, k, acc, jumped, _ = mutate(sub, u, k, new, step, arrays)
        acc, jumped = float(acc), float(jumped)
        lam = new
        ladder.append(lam)
        acceptance.append(acc)
        jumps.append(jumped)
        steps.append(step)
        # the next stage's step from this one's acceptance (Robbins-Monro in ln step)
        step *= math.exp(np.clip(2.0 * (acc - s.target_accept), -0.7, 0.7))
        if log is not None and len(ladder) % 20 == 0:
            log(f"  valley SMC stage {len(ladder) - 1}: lambda {lam:.4g}, acceptance "
                f"{acc:.2f}, step {steps[-1]:.3g}, ln Z so far {np.mean(log_z):.2f}")  # fmt: skip
    p, p_se, _ = vt.fold_probability(symmetry, reference, s.fold_draws, rng)
    stages = len(ladder) - 1
    return ValleySMCRun(
        log_z, np.asarray(ladder), np.asarray(acceptance), np.asarray(jumps),
        np.asarray(steps), reference, math.log(p) if p > 0 else -math.inf, p_se,
        np.asarray(u).reshape(R, N, -1), np.asarray(k).reshape(R, N),
        int(cost(s, stages)[0]),
    )  # fmt: skip


def estimate_from_run(res: ValleySMCRun, settings: ValleySMCSettings) -> EvidenceEstimate:
    """ln p(D) = ln P + ln mean_r Z_r; s.e. sd_r(ln Z_r) / sqrt(R) with ln P's (module doc)."""
    values = res.log_z_runs
    R = len(values)
    top = values.max()
    log_z = float(top + np.log(np.mean(np.exp(values - top))) + res.log_fold)
    spread = float(np.std(values, ddof=1))
    out = EvidenceEstimate(
        log_z, math.hypot(spread / math.sqrt(R), res.log_fold_se), res.n_grad_evals,
        diagnostics={
            "log_z_runs": values + res.log_fold, "run_sd": spread, "stages": len(res.ladder) - 1,
            "ladder": res.ladder, "acceptance_min": float(np.min(res.acceptance, initial=1.0)),
            "log_fold": res.log_fold, "log_fold_se": res.log_fold_se,
        },
    )  # fmt: skip
    if res.ladder[-1] < 1.0:
        out.flag("not_converged", f"the ladder stopped at lambda {res.ladder[-1]:.3g} after "
                 f"{settings.max_stages} stages (raise max_stages or particles)")  # fmt: skip
    if not np.all(np.isfinite(values)):
        out.flag("diverged", "a run's ln Z is not finite")
    elif spread > settings.max_run_sd:
        out.flag("not_converged", f"the {R} runs' ln Z spread by s.d. {spread:.2f} > "
                 f"{settings.max_run_sd:g} nats: their mean is carried by one run")  # fmt: skip
    return out


def refitted(target, res: ValleySMCRun, vts: vt.ValleyTemperingSettings) -> vt.Reference:
    """The run's reference adapted to its final particles: the weights to their occupancy
    (``valley_tempering.adapted_weights``), the components moved and widened to them
    (``valley_tempering.refit_components``); what the next pass starts from."""
    ref = res.reference
    labels = res.labels.ravel()
    occupancy = np.bincount(labels, minlength=len(ref.log_weights)) / labels.size
    ref = ref.with_weights(np.log(vt.adapted_weights(ref, occupancy, vts)))
    states = res.particles.reshape(-1, res.particles.shape[-1])
    return vt.refit_components(valley_search.symmetry_of(target), ref, states, vts)


def importance_check(
    target, out: EvidenceEstimate, res: ValleySMCRun, settings: ValleySMCSettings, rng
) -> None:
    """Importance sampling from the final reference refitted once more (``refitted``;
    ``valley_tempering.reference_importance``, ``check_draws`` draws): its expectation lies
    below ln p(D) whatever the reference, so a value above the SMC's estimate by more than
    ``check_se`` combined s.e. says the SMC is low: ``not_converged``. Robot arm H = 8 (seeds
    0 and 2, 4 x 10^5 draws): 481.29 +- 0.62 and 480.39 +- 0.40 (ESS 3 and 6) under the SMC's
    481.99 +- 0.13 and 481.77 +- 0.17; H = 4: 162.88 +- 0.09 and 162.88 +- 0.05 (ESS 128 and
    401) beside 162.90 +- 0.04 and 162.83 +- 0.05."""
    ref = refitted(target, res, settings.tempering_settings())
    value, se, ess = vt.reference_importance(target, ref, int(settings.check_draws), rng)
    out.n_grad_evals += int(settings.check_draws)  # evaluations, counted as gradients
    out.diagnostics.update(log_z_importance=value, log_z_importance_se=se, importance_ess=ess)
    gap_se = math.hypot(se, out.log_z_se)
    if math.isfinite(value) and value - out.log_z > settings.check_se * gap_se:
        out.flag(
            "not_converged",
            f"importance sampling from the final reference, a stochastic lower bound, gives "
            f"{value:.2f} +- {se:.2f}, above the SMC's {out.log_z:.2f} +- {out.log_z_se:.2f}",
        )


def passes_settled(values, ses, gap: float, nats: float) -> bool:
    """Whether the passes' estimates ``values`` (s.e. ``ses``, oldest first) have settled:
    the last two differ by at most ``gap`` combined s.e. and ``nats`` nats, or the last three
    differ pairwise by at most ``gap`` combined s.e. and the last lies within ``nats`` of the
    one two passes back (no trend over two refits, however the middle pass scatters). The
    second clause is the plateau whose passes scatter by their noise (robot arm H = 8, s.e.
    0.1-0.2 a pass: 481.66, 482.10, 481.78 differ by 0.44 and 0.32, within 2 combined s.e.,
    over 0.25 nat); it refuses a climb whose steps shrink (475.87, 477.24, 477.90: a gap of
    0.66 within 2 s.e., but 2.03 over two refits)."""

    def apart(i: int, j: int) -> tuple[float, float]:
        return abs(values[i] - values[j]), math.hypot(ses[i], ses[j])

    if len(values) < 2:
        return False
    d, se = apart(-1, -2)
    if d <= min(gap * se, nats):
        return True
    if len(values) < 3:
        return False
    pairs = [apart(-1, -2), apart(-2, -3), apart(-1, -3)]
    return all(d <= gap * se for d, se in pairs) and pairs[2][0] <= nats


def tempering_check(
    target, out: EvidenceEstimate, res: ValleySMCRun, settings: ValleySMCSettings, rng, log=None
) -> None:
    """The second estimator on the SMC's own reference: ``valley_tempering``
    (``check_protocol``: a ladder of exchanging chains, stepping stone plus ln P) from the
    final reference refitted once more (``refitted``), every rung's chain started from one of
    the SMC's final particles (drawn without replacement while they last). Both are
    consistent for any reference; they share it and the invariant kernel, not the estimator
    (resampled particles against exchanging chains) nor the stream. Apart by more than
    ``check_se`` combined s.e.: ``not_converged``. The tempering's own status and reason are
    stored beside its value.

    Why the particles: started from reference draws (the lambda = 0 end), the chains on the
    robot arm at H = 8 (32 rungs) were still settling through the first 2,400 kept
    iterations, whose stepping stone was 483.10 against 482.01-482.30 for the next three
    quarters of 9,600 (5 round trips per ladder in all), so the 4,800 kept came out 0.9-1.3
    nats above the SMC; from the final particles (the lambda = 1 end) the same ladder made 30
    round trips per ladder and its quarters gave 482.07-482.60 (docs/evidence.md). The start
    does not enter the estimate once the chains have settled: the round trips carry the top
    rungs' states down to the exact reference draws of rung 0 and back, so valleys the
    particles missed are reached."""
    protocol = settings.check_protocol()
    ref = refitted(target, res, settings.tempering_settings())
    n, need = res.labels.size, protocol.replicates * protocol.rungs
    pick = rng.choice(n, size=need, replace=n < need)
    start = (res.particles.reshape(n, -1)[pick], res.labels.ravel()[pick])
    run = vt.run_valley_tempering(target, ref, protocol, rng, log=log, start=start)
    second = vt.estimate_from_valley_run(run, protocol)
    out.n_grad_evals += second.n_grad_evals
    out.diagnostics.update(
        log_z_tempering=second.log_z, log_z_tempering_se=second.log_z_se,
        tempering_status=second.status, tempering_reason=second.reason or "",
        tempering_log_z_ti=second.diagnostics["log_z_ti"],
        tempering_round_trips=float(np.mean(second.diagnostics["round_trips"])),
        tempering_swap_accept_min=second.diagnostics["swap_accept_min"],
        tempering_log_z_drift=second.diagnostics.get("log_z_drift", float("nan")),
    )  # fmt: skip
    gap_se = math.hypot(second.log_z_se, out.log_z_se)
    gap = second.log_z - out.log_z
    if not abs(gap) <= settings.check_se * gap_se:
        out.flag(
            "not_converged",
            f"valley_tempering from the final reference gives {second.log_z:.2f} +- "
            f"{second.log_z_se:.2f}, {gap:+.2f} from the SMC's {out.log_z:.2f} +- "
            f"{out.log_z_se:.2f} (more than {settings.check_se:g} combined s.e.)",
        )


def estimate_and_run(
    target, settings: ValleySMCSettings, rng: np.random.Generator, log=None
) -> tuple[EvidenceEstimate, ValleySMCRun | None]:
    """The valley search (``valley_tempering.search``), the reference with equal valley
    weights, the SMC run and its estimate with the search's coverage check."""
    settings.validate()
    started = time.process_time()
    vts = settings.tempering_settings()
    ref, found, n_search = vt.search(target, vts, rng, log=log)
    if ref is None:
        out = EvidenceEstimate(float("nan"), float("nan"), n_search)
        out.flag("diverged", "no minimum passed the gradient and Hessian checks")
        return out, None
    valley = ref.valleys >= 0
    even = np.where(valley, (1.0 - settings.prior_share) / valley.sum(), settings.prior_share)
    ref = ref.with_weights(np.log(even))
    symmetry = valley_search.symmetry_of(target)
    spent, passes, pass_ses, stages, previous, settled = n_search, [], [], 0, None, False
    for p in range(int(settings.refits) + 1):
        res = run_valley_smc(target, ref, settings, rng, log=log)
        spent += res.n_grad_evals
        stages += len(res.ladder) - 1
        out = estimate_from_run(res, settings)
        passes.append(float(out.log_z))
        pass_ses.append(float(out.log_z_se))
        if log is not None:
            log(f"  valley SMC pass {p + 1}: ln p(D) {out.log_z:.3f} +- {out.log_z_se:.3f}")
        if previous is not None:
            gap = out.log_z - previous.log_z
            gap_se = math.hypot(out.log_z_se, previous.log_z_se)
            settled = passes_settled(passes, pass_ses, settings.settle_gap, settings.settle_nats)
        if settled or p == int(settings.refits):
            break
        previous = out
        ref = refitted(target, res, vts)
    out.n_grad_evals = spent
    out.diagnostics["log_z_passes"] = np.asarray(passes)
    out.diagnostics["log_z_passes_se"] = np.asarray(pass_ses)
    out.diagnostics["stages_all_passes"] = stages
    if previous is not None:
        out.diagnostics.update(log_z_pass_gap=gap, log_z_pass_gap_se=gap_se)
        if not settled:  # the reference refitted once more still changed the answer
            out.flag(
                "not_converged",
                f"after {len(passes)} passes the last gives ln p(D) {gap:+.2f} +- {gap_se:.2f} "
                "from the one before: the refitted reference has not settled (raise refits)",
            )
    vt.search_coverage(out, found, ref.valleys[res.labels.ravel()], vts.search_settings())
    if int(settings.check_draws) > 0 and np.isfinite(out.log_z):
        importance_check(target, out, res, settings, rng)
    if settings.tempering_check and np.isfinite(out.log_z):
        tempering_check(target, out, res, settings, rng, log=log)
    out.diagnostics.update(
        cpu_seconds=time.process_time() - started, n_components=len(found),
        group_order=valley_search.group_order(symmetry),
    )  # fmt: skip
    if log is not None:
        runs = ", ".join(f"{z:.2f}" for z in out.diagnostics["log_z_runs"])
        log(f"valley SMC: ln p(D) = {out.log_z:.3f} +- {out.log_z_se:.3f} over "
            f"{out.diagnostics['stages']} stages, runs {runs}")  # fmt: skip
    return out, res


def estimate(target, settings: ValleySMCSettings, rng, log=None) -> EvidenceEstimate:
    """ln p(D) by SMC from the valleys' reference (module doc)."""
    return estimate_and_run(target, settings, rng, log=log)[0]
