"""``bm_vi``: variational inference and learning in Boltzmann machines with ±1 units (thesis
ch. 4), by mean field (4.7-4.14), a mixture of M mean-field components (4.16-4.25) or, as
the reference for learning, exact enumeration (4.5-4.6). The numerics are
``engines.boltzmann``; this module turns a split into machines and data, and the engine's
answers into traces.

Two kinds of cell (setting ``kind``):

``inference`` (dataset task ``network_ensemble``, thesis §4.5.1, fig. 4.2)
    every row of ``x_train`` is one fully connected machine (``datasets.boltzmann_tasks``:
    upper-triangle weights, then biases). Its joint (nothing clamped) is approximated by the
    annealed family and scored against enumeration: traces over ``network`` of the sum of
    squares of the pair errors 4.26, sum_m Q(m) <s_i>_m <s_j>_m - <s_i s_j>
    (``pair_sq_error``), the pair errors themselves (``pair_error``, dims network, pair:
    i < j in row-major order), the errors of the means, the bound L- and the exact ln Z.
    There is no data likelihood: ``log_evidence`` is not set (kind ``none``).

``learning`` (task ``binary_density``, §4.5.2, figs. 4.4-4.6)
    the rows of ``x_train`` are ±1 patterns. Without ``y_train`` columns the machine learns
    their density ln P(V) (visible units fully connected, or layered with
    ``hidden_layers`` layers of ``layer_size`` hidden units); with them it learns
    ln P(y | x) (Galland's association task: inputs, ``hidden_layers`` layers, outputs,
    adjacent layers fully connected; x clamped in both phases, y in the clamped one). With
    ``architecture: grid`` (density only, the digits machine of figs. 4.8-4.9) the visible
    units are a square grid, each linked to its 8 neighbours, plus ``grid_hidden`` hidden
    units linked to every unit (``models.boltzmann.grid_neighbourhood_mask``). ``runs``
    machines are started from ``init_seed`` (the same machines for every q family and start,
    so that they can be compared run by run) and trained by gradient ascent on
    F = L+ - L- (4.12, gradients 4.15/4.25) for ``iterations`` steps, or until every output
    mean is within ``stop_within`` of its target (Galland's 0.2; 0 = no such rule). The
    clamped phase is mean field, annealed through the schedule and started as
    ``clamped_init`` says: from zero, from its previous state, or (``joint``, the digits
    experiment) from the hidden units' expectations under the joint; the joint phase is the
    q family, started as ``joint_init`` says and annealed through the schedule when it starts
    from zero or when ``anneal_joint: always`` (the digits experiment; by default,
    ``auto``, a ``conditional`` or ``previous`` start is not annealed, which would wash
    it out). ``q_family: exact`` is learning on the exact
    gradient by enumeration (``engines.boltzmann.fit_boltzmann_exact``), the reference curve
    of fig. 4.5. Traces over ``iteration`` and ``restart``: F (``objective``), patterns with
    F > 0, Galland's output error 4.27 and largest output gap (supervised), and, when
    enumerating the joint is cheap (``ENUMERATION_BUDGET``), the exact log-likelihood,
    KL(data || model) (density tasks); when enumerating is cheap, or for density learning
    when the paths are small (``PATH_BUDGET``), the parameters (``weight_path`` over pairs,
    ``bias_path`` over units) and the joint's component means and ln mixing weights
    (``joint_means`` over joint_pattern, component and unit: the mean-field parameters of
    figs. 4.6 and 4.9; ``joint_log_mixing`` over joint_pattern and component). With
    ``stop_within``, ``iterations_to_converge`` (restart) is the number of weight updates
    before the stopping rule held (NaN if it never did).
    ``log_evidence`` is the mean over restarts of the final F (kind ``approximation``: not a
    bound), or of the exact log-likelihood for
    ``q_family: exact`` (kind ``exact``).

A cell is ``not_converged`` when some joint was inconsistent (F > 0 for a pattern at some
iteration, fig. 4.1b), when a run did not meet ``stop_within``, or (inference) when the
bound was still moving after ``max_sweeps`` sweeps at T = 1.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np

from ..datasets.base import Split
from ..datasets.boltzmann_tasks import DATA_MODEL, ensemble_machines
from ..engines.boltzmann import (
    JOINT_INITS,
    fit_boltzmann,
    fit_boltzmann_exact,
    geometric_temperatures,
    joint_accuracy,
)
from ..method_base import FitResult, check_choice, check_positive
from ..models.boltzmann import (
    empirical_kl,
    fully_connected_mask,
    grid_neighbourhood_mask,
    layered_mask,
    random_machines,
    symmetric_weights,
    weights_to_vector,
)
from . import Method, Work, register

Q_FAMILIES = {"mean_field": "mf", "mixture": "mixture", "exact": None}
"""The q_family values and the engine's name of each (exact: enumeration, no q)."""
KINDS = {"inference": "network_ensemble", "learning": "binary_density"}
INIT_WEIGHTS = ("uniform", "normal")
ARCHITECTURES = ("layered", "grid")
CLAMPED_INITS = ("zero", "previous", "joint")
ANNEAL_JOINT = ("auto", "always")
PATH_BUDGET = 2e6
"""A density-learning cell keeps the parameter and joint-mean paths (per iteration) when they
hold at most this many numbers, even when it cannot enumerate (the digits: about 1e6)."""
ENUMERATION_BUDGET = 1e7
"""A learning cell also enumerates (exact log-likelihood, KL(data || model) and the
parameter paths at every iteration) when states x joint patterns x runs x units^2 of the
joint phase stays within this many multiply-adds per iteration."""
SWEEP_S_PER_UNIT = 4e-5
"""Measured cost of one coordinate sweep per unit over a batch of machines and patterns
(numpy, one core), the ``call_s`` of the cost model."""
BM_INFERENCE_TYPICAL = 0.35
"""Share of the bound a bm_vi inference fit takes (``Work.typical``): its sweeps stop at
their tolerance before ``max_sweeps``. 0.13-0.33 per cell on the default sweep's
bm_inference cells (M = 1-10), 0.14 of their summed bounds (2026-11-25); 0.17 gave 0.47 of
the fit CPU time measured on them on 2026-11-27 (``python benchmarks/plan_vs_measured.py
config/config.yaml results`` after the default sweep), 0.35 gives 0.97."""


@dataclass(frozen=True)
class BMSettings:
    """Settings of ``bm_vi`` (module docstring). Temperatures: ``temperatures`` when given
    (ending at 1), else ``anneal_steps`` geometric steps from ``anneal_start`` to 1 (thesis
    §4.5.1: 8 steps from 60)."""

    kind: str = "learning"
    q_family: str = "mean_field"
    components: int = 1
    joint_init: str = "previous"
    temperatures: list = dataclasses.field(default_factory=list)
    anneal_start: float = 1.0
    anneal_steps: int = 1
    damping: float = 0.0
    sweeps_per_temperature: int = 1
    max_sweeps: int = 100
    tol: float = 1e-4
    smoothing_spread: float = 1.0
    learning_rate: float = 0.1
    iterations: int = 100
    stop_within: float = 0.0
    runs: int = 10
    init_weights: str = "uniform"
    init_scale: float = 0.5
    init_seed: int = 0
    hidden_layers: int = 0
    layer_size: int = 6
    architecture: str = "layered"
    grid_hidden: int = 10
    clamped_init: str = "zero"
    anneal_joint: str = "auto"

    def validate(self) -> None:
        check_choice("kind", self.kind, tuple(KINDS))
        check_choice("q_family", self.q_family, tuple(Q_FAMILIES))
        check_choice("joint_init", self.joint_init, JOINT_INITS)
        check_choice("init_weights", self.init_weights, INIT_WEIGHTS)
        check_choice("architecture", self.architecture, ARCHITECTURES)
        check_choice("clamped_init", self.clamped_init, CLAMPED_INITS)
        check_choice("anneal_joint", self.anneal_joint, ANNEAL_JOINT)
        check_positive("grid_hidden", self.grid_hidden, allow_zero=True)
        if self.architecture == "grid" and self.hidden_layers:
            raise ValueError(
                "architecture 'grid' has its own hidden units (grid_hidden); set hidden_layers 0"
            )
        if self.clamped_init == "joint" and self.joint_init == "conditional":
            raise ValueError(
                "clamped_init 'joint' and joint_init 'conditional' each start from the other"
            )
        check_positive("components", self.components)
        if self.q_family != "mixture" and self.components != 1:
            raise ValueError(
                f"setting 'components' must be 1 for q_family {self.q_family!r}, "
                f"got {self.components}"
            )
        if self.kind == "inference" and self.q_family == "exact":
            raise ValueError(
                "q_family 'exact' has no approximation error to score (kind inference)"
            )
        if not isinstance(self.temperatures, list) or not all(
            isinstance(t, int | float) and not isinstance(t, bool) and t > 0
            for t in self.temperatures
        ):
            raise ValueError(
                f"setting 'temperatures' must be a list of positive numbers, got {self.temperatures!r}"
            )
        if self.temperatures and self.temperatures[-1] != 1:
            raise ValueError(
                f"setting 'temperatures' must end at 1 (F is scored at T = 1), got {self.temperatures}"
            )
        if self.anneal_start < 1:
            raise ValueError(f"setting 'anneal_start' must be >= 1, got {self.anneal_start}")
        check_positive("anneal_steps", self.anneal_steps)
        if not 0.0 <= self.damping < 1.0:
            raise ValueError(f"setting 'damping' must lie in [0, 1), got {self.damping}")
        for key in ("sweeps_per_temperature", "max_sweeps", "tol", "smoothing_spread"):
            check_positive(key, getattr(self, key))
        for key in ("learning_rate", "iterations", "runs", "layer_size"):
            check_positive(key, getattr(self, key))
        for key in ("stop_within", "init_scale", "hidden_layers"):
            check_positive(key, getattr(self, key), allow_zero=True)

    def schedule(self) -> tuple[float, ...]:
        if self.temperatures:
            return tuple(float(t) for t in self.temperatures)
        return tuple(geometric_temperatures(self.anneal_start, 1.0, self.anneal_steps))


def _empty_predictions(split: Split) -> tuple[np.ndarray, np.ndarray]:
    shape = (0, split.n_outputs)
    return np.zeros(shape), np.zeros(shape)


def _result(split: Split, **kwargs) -> FitResult:
    return FitResult(*_empty_predictions(split), likelihood="none", **kwargs)


# --------------------------------------------------------------------------- inference
def fit_inference(split: Split, s: BMSettings, rng: np.random.Generator, log) -> FitResult:
    """§4.5.1: the annealed joint of every machine of the ensemble against enumeration."""
    if split.n_outputs != 0:
        raise ValueError("a network_ensemble split has no targets (y_train of 0 columns)")
    weights, biases = ensemble_machines(split.x_train)
    acc = joint_accuracy(
        weights,
        biases,
        components=s.components,
        temperatures=s.schedule(),
        rng=rng,
        damping=s.damping,
        sweeps_per_temperature=s.sweeps_per_temperature,
        max_sweeps=s.max_sweeps,
        tol=s.tol,
        smoothing_spread=s.smoothing_spread,
        q=Q_FAMILIES[s.q_family],
    )
    result = _result(
        split,
        traces={
            "pair_error": (("network", "pair"), acc.pair_errors),
            "pair_sq_error": (("network",), acc.pair_sq_error),
            "mean_error": (("network", "unit"), acc.mean_errors),
            "joint_bound": (("network",), acc.bound),
            "log_partition": (("network",), acc.log_partition),
        },
    )
    mean_sq = float(acc.pair_sq_error.mean())
    log(
        f"{len(biases)} machines, {s.q_family} M={s.components}: mean sum of squared pair "
        f"errors {mean_sq:.4f}, {acc.sweeps} sweeps at T=1"
    )
    result.diagnostics.update(
        mean_pair_sq_error=mean_sq,
        sweeps_at_t1=int(acc.sweeps),
        variational_cpu_s=float(acc.seconds),
        mean_log_partition_gap=float(np.mean(acc.log_partition - acc.bound)),
    )
    result.n_grad_evals = int(acc.sweeps + len(s.schedule()) - 1)
    if acc.sweeps >= s.max_sweeps:
        result.flag(
            "not_converged",
            f"the joint bound still changed by more than {s.tol:g} (relative) after "
            f"{s.max_sweeps} sweeps at T = 1",
        )
    return result


# --------------------------------------------------------------------------- learning
@dataclass(frozen=True)
class LearningTask:
    """A learning cell's machine and data: units x first, hidden layers, then y."""

    mask: np.ndarray
    data: np.ndarray  # (P, clamped) values of plus_clamped
    plus_clamped: np.ndarray
    minus_clamped: np.ndarray  # empty: density learning
    supervised: bool

    def enumeration_cost(self, runs: int) -> float:
        """Multiply-adds of the exact joint phase per iteration (``ENUMERATION_BUDGET``)."""
        n = self.mask.shape[0]
        patterns = self.data.shape[0] if self.supervised else 1
        return 2.0 ** (n - self.minus_clamped.size) * patterns * runs * n * n

    def path_size(self, s: BMSettings) -> float:
        """Numbers in the stored paths: weights, biases and the joint's component means."""
        n = self.mask.shape[0]
        patterns = self.data.shape[0] if self.supervised else 1
        per_iteration = n * n + n + patterns * s.components * (n + 1)
        return (s.iterations + 1) * s.runs * per_iteration


def learning_task(split: Split, s: BMSettings) -> LearningTask:
    x, y = split.x_train, split.y_train
    for name, values in (("x_train", x), ("y_train", y)):
        if not np.all(np.abs(values) == 1.0):
            raise ValueError(f"a binary_density split has ±1 units; {name} has other values")
    n_x, n_y = x.shape[1], y.shape[1]
    hidden = [s.layer_size] * s.hidden_layers
    supervised = n_y > 0
    if s.architecture == "grid":
        side = int(round(np.sqrt(n_x)))
        if supervised or side * side != n_x:
            raise ValueError(
                "architecture 'grid' learns the density of square images: x_train needs a "
                f"square number of columns and y_train none, got {n_x} and {n_y}"
            )
        mask = grid_neighbourhood_mask(side, side, s.grid_hidden)
    elif supervised:
        mask = layered_mask([n_x, *hidden, n_y])
    elif hidden:
        mask = layered_mask([n_x, *hidden])
    else:
        mask = fully_connected_mask(n_x)
    n = mask.shape[0]
    plus = np.r_[np.arange(n_x), np.arange(n - n_y, n)]
    minus = np.arange(n_x) if supervised else np.zeros(0, int)
    return LearningTask(mask, np.hstack([x, y]), plus, minus, supervised)


def initial_machines(task: LearningTask, s: BMSettings) -> tuple[np.ndarray, np.ndarray]:
    """``runs`` machines from ``init_seed``: weights on the mask and biases U(-scale, scale)
    or N(0, scale^2) (thesis toy: N(0, 0.1^2))."""
    rng = np.random.default_rng(s.init_seed)
    if s.init_weights == "uniform":
        return random_machines(rng, s.runs, task.mask, -s.init_scale, s.init_scale)
    n = task.mask.shape[0]
    w = symmetric_weights(rng.normal(0.0, s.init_scale, (s.runs, n, n)), task.mask)
    return w, rng.normal(0.0, s.init_scale, (s.runs, n))


def fit_learning(split: Split, s: BMSettings, rng: np.random.Generator, log) -> FitResult:
    """§4.5.2: gradient ascent on F (or on the exact log-likelihood) from ``runs`` starts."""
    task = learning_task(split, s)
    w0, b0 = initial_machines(task, s)
    enumerable = task.enumeration_cost(s.runs) <= ENUMERATION_BUDGET
    keep_path = enumerable or (not task.supervised and task.path_size(s) <= PATH_BUDGET)
    minus = task.minus_clamped if task.supervised else None
    start = time.process_time()
    if s.q_family == "exact" and not enumerable:
        raise ValueError(
            f"q_family 'exact' enumerates the joint: a machine of {task.mask.shape[0]} units is "
            "too large"
        )
    if s.q_family == "exact":
        hist = fit_boltzmann_exact(
            w0,
            b0,
            task.mask,
            task.data,
            task.plus_clamped,
            minus,
            learning_rate=s.learning_rate,
            iterations=s.iterations,
            keep_path=enumerable,
        )
    else:
        schedule = s.schedule()
        hist = fit_boltzmann(
            w0,
            b0,
            task.mask,
            task.data,
            task.plus_clamped,
            minus,
            q_plus="mf",
            q_minus=Q_FAMILIES[s.q_family],
            components=s.components,
            joint_init=s.joint_init,
            plus_init=s.clamped_init,
            temperatures=schedule,
            joint_temperatures=schedule
            if s.joint_init == "zero" or s.anneal_joint == "always"
            else (1.0,),
            damping=s.damping,
            sweeps_per_temperature=s.sweeps_per_temperature,
            max_sweeps=s.max_sweeps,
            tol=s.tol,
            learning_rate=s.learning_rate,
            iterations=s.iterations,
            rng=rng,
            smoothing_spread=s.smoothing_spread,
            exact=enumerable,
            stop_within=s.stop_within if s.stop_within > 0 else None,
            keep_path=keep_path,
        )
    done = len(hist.objective)
    it = ("iteration", "restart")
    traces = {"objective": (it, hist.objective)}
    if s.q_family != "exact":
        traces["inconsistent_patterns"] = (it, hist.inconsistent)
    if task.supervised:
        traces["output_error"] = (it, hist.output_error)
        traces["max_output_gap"] = (it, hist.max_output_gap)
    if enumerable:
        traces["exact_log_likelihood"] = (it, hist.exact_log_likelihood)
    if keep_path:
        w_path, b_path = hist.weight_path[:done], hist.bias_path[:done]
        traces["weight_path"] = (
            ("iteration", "restart", "pair"),
            weights_to_vector(w_path, task.mask),
        )
        traces["bias_path"] = (("iteration", "restart", "unit"), b_path)
        if s.q_family != "exact":  # the joint's component means (fig. 4.6), (I, K, P-, M, n)
            dims = ("iteration", "restart", "joint_pattern", "component", "unit")
            traces["joint_means"] = (dims, hist.joint_means_path[:done])
            traces["joint_log_mixing"] = (dims[:-1], hist.joint_log_mixing_path[:done])
    if enumerable and not task.supervised:  # enumerable implies keep_path
        kl = np.array(
            [
                empirical_kl(w, b, task.plus_clamped, task.data)
                for w, b in zip(w_path, b_path, strict=True)
            ]
        )
        traces["kl_data_model"] = (it, kl)
    converged = np.where(hist.converged_at >= 0, hist.converged_at, np.nan).astype(float)
    if s.stop_within > 0:
        traces["iterations_to_converge"] = (("restart",), converged)
    final = hist.objective[-1]
    traces["final_objective"] = (("restart",), final)
    result = _result(
        split,
        traces=traces,
        log_evidence=float(np.mean(final)),
        log_evidence_se=float(np.std(final, ddof=1) / np.sqrt(len(final)))
        if len(final) > 1
        else float("nan"),
        log_evidence_kind="exact" if s.q_family == "exact" else "approximation",
    )
    result.n_grad_evals = int(done * s.runs)
    n_converged = int(np.sum(hist.converged_at >= 0))
    result.diagnostics.update(
        iterations_run=done,
        learning_cpu_s=float(time.process_time() - start),
        inconsistent_pattern_iterations=int(hist.inconsistent.sum()),
    )
    if s.stop_within > 0:
        result.diagnostics.update(
            runs_converged=n_converged,
            median_iterations_to_converge=float(
                np.median(np.where(np.isnan(converged), np.inf, converged))
            ),
        )
        if n_converged < s.runs:
            result.flag(
                "not_converged",
                f"{s.runs - n_converged} of {s.runs} runs did not get every output within "
                f"{s.stop_within:g} of its target in {s.iterations} iterations",
            )
    bad = hist.inconsistent.sum(0) > 0
    if bad.any():
        result.flag(
            "not_converged",
            f"inconsistent joint (F > 0) for {int(hist.inconsistent.sum())} pattern-iterations "
            f"in {int(bad.sum())} of {s.runs} runs",
        )
    log(
        f"{s.q_family} M={s.components} joint_init={s.joint_init}: {done} iterations, final F "
        f"{result.log_evidence:.4f} (mean over {s.runs} runs), {n_converged} runs met the stopping "
        f"rule"
    )
    return result


def fit(split: Split, settings: BMSettings, rng: np.random.Generator, log=print) -> FitResult:
    if settings.kind == "inference":
        return fit_inference(split, settings, rng, log)
    return fit_learning(split, settings, rng, log)


def work(s: BMSettings, n_train: int, n_test: int, n_out: int, n_weights: int) -> Work:
    """Cost model: coordinate sweeps (one 'call' each), priced per unit of the machine and
    per pair of mixture components. Inference: n_train machines at once, each (annealing
    steps + max_sweeps) sweeps. Learning: per iteration and phase the same number of sweeps
    over ``runs`` machines and the patterns. The units are estimated from ``n_weights`` (the
    width of x and y, as jobsize counts a linear model) and the hidden units. Density
    learning (no y) prices its phases apart: the clamped phase sweeps only the hidden units
    of every pattern with one component, the joint all units of one joint with M. An
    estimate, checked against the measured cells (thesis_bm.yaml), not a proof of a bound."""
    sweeps = len(s.schedule()) - 1 + s.max_sweeps
    mixture = s.components**2  # a mixture sweep touches every pair of components
    if s.kind == "inference":
        call_s = SWEEP_S_PER_UNIT * 16 * mixture * max(n_train, 1) / 100
        return Work(sweeps, call_s=call_s, typical=BM_INFERENCE_TYPICAL)
    hidden = s.grid_hidden if s.architecture == "grid" else s.hidden_layers * s.layer_size
    units = 2 * n_weights + hidden + 16
    if n_out == 0:
        clamped = max(hidden, 1) * max(1.0, s.runs * n_train / 100)
        joint = units * mixture * max(1.0, s.runs / 100)
        return Work(sweeps * s.iterations, call_s=SWEEP_S_PER_UNIT * (clamped + joint))
    per_sweep = SWEEP_S_PER_UNIT * units * mixture * max(1.0, s.runs * n_train / 100)
    return Work(2 * sweeps * s.iterations, call_s=per_sweep)


register(
    Method(
        "bm_vi",
        BMSettings,
        fit,
        ("q_family", "components", "joint_init"),
        "Boltzmann machines with ±1 units (thesis ch. 4): mean field or mixture-of-mean-field "
        "joint, scored against enumeration on random machines (kind inference) or learnt by "
        "gradient ascent on F = L+ - L- (kind learning; q_family exact: the enumerated "
        "gradient)",
        tasks=lambda settings: (KINDS[settings.kind],),
        models=(DATA_MODEL,),
        work=work,
        imports=("scipy.special",),
    )
)
