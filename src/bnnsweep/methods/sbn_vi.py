"""Variational inference and learning in layered sigmoid belief networks (thesis ch. 2).

The distribution Q over the hidden units comes from the ``q_family`` axis:

- ``mean_field``: Saul et al.'s bound 2.12-2.15, xi by a 1-D search and coordinate updates
  of the means (2.16-2.18, App. A), ``engines.sbn.saul_bound``;
- ``mixture``: a mixture of ``components`` (axis, M) mean-field distributions with the
  mutual-information bound 2.24 (2.19-2.37), ``engines.sbn.mixture_bound``;
- ``chain``: the Markov-chain Q (2.38-2.50, App. B), L-BFGS-B in place of SCG, started
  from the mean-field solution as §2.5.1 did, ``engines.sbn.markov_chain``.

Two tasks (dataset metadata ``task``):

``network_ensemble`` (§2.5.1, figs. 2.4-2.6): each row of ``x_train`` is one network (its
parameters as ``models.sigmoid_belief.pack_parameters`` lays them out, then its observed
visible values). The bound is optimised for every network at once (batched), from mu, xi
~ U(0, 1); ln P(V) is enumerated. Traces over ``network``: ``exact_loglik``, ``bound``,
``rel_error`` = |L - bound| / |L|; ``log_evidence`` = sum of the bounds (``lower_bound``,
the evidence of the ensemble's observations); diagnostics: mean, median and max relative
error, sweeps or iterations run, and for ``chain`` the mean-field start's mean error.

``binary_density`` (§2.5.2, fig. 2.7): ``restarts`` networks of architecture ``layers``
learned at once from U(-init_span, init_span) by gradient ascent on the bound (M = 1 for
mean field, ``engines.sbn.learning.learning_step``): ``epochs`` passes over the training
patterns, each pass a fresh shuffle per restart in steps of ``batch`` patterns; Q for every
pattern is refitted from mu, xi ~ U(0, 1) with at most ``learn_sweeps`` sweeps at every
step. Traces: the exact ln P(v) of every training and test pattern under each learned net
(``train_loglik_pattern`` (restart, train_pattern), ``test_loglik_pattern`` (restart,
test_pattern)), and per epoch the mean bound and the mean exact ln P(v) on the training
patterns (``bound_epoch``, ``train_loglik_epoch``, (restart, epoch)). No evidence
(``log_evidence_kind`` ``none``: a maximum-likelihood fit has no marginal likelihood);
diagnostics: mean and best (over restarts) train and test log-likelihood per pattern.
The Markov-chain Q is not used for learning (the thesis learned with mixtures only).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..datasets.base import Split
from ..datasets.sbn_ensembles import DATA_MODEL
from ..method_base import FitResult, check_choice, check_positive
from ..models.sigmoid_belief import (
    LayeredSBN,
    exact_log_marginal,
    exact_log_marginal_patterns,
    n_parameters,
    unpack_parameters,
)
from . import Method, Work, register

Q_FAMILIES = ("mean_field", "mixture", "chain")
TASKS = ("network_ensemble", "binary_density")
UPDATE_FORMS = ("saul", "thesis")
BOUND_SLACK = 1e-9
"""A bound above the enumerated ln P(V) by more than this (relative) is a failure."""
EXACT_CHUNK = 25
"""Patterns enumerated at once (bounds the memory of 2^H states x patterns x restarts)."""

# cost model, measured on one core (CPU seconds; JAX-compiled engines, sums over the layered
# parent blocks only): one coordinate sweep (xi searches, then the means) of one network
# (or pattern) and one mixture component about 2e-6 s per parent-child pair of the net
# (2-4-6: 32 pairs, 1-8-16: 136); an L-BFGS-B iteration of the chain (scipy's update of a
# 250-network problem, about 9 ms, plus the compiled bound and gradient, about 5 ms) about
# 5e-6 s per unit and network; enumeration about 1e-8 s per multiply-add
SWEEP_PAIR_S = 2e-6
CHAIN_ITER_UNIT_S = 5e-6
ENUMERATE_S = 1e-8


@dataclass(frozen=True)
class SBNSettings:
    """``q_family`` (axis): mean_field | mixture | chain; ``components`` (axis, M): mixture
    only. ``layers``: the architecture, top layer first ("2-4-6"); ``auto``: 2-4-6 for a
    network ensemble (sec. 2.5.1), 1-8-D for patterns of D pixels (sec. 2.5.2's 1-8-16
    for the 16-pixel bars). Inference: at most
    ``max_sweeps`` coordinate sweeps (each a 1-D search of every xi_i, App. A, then every
    hidden mean in turn), stopping when no bound moves by more than ``tol`` (relative);
    ``update``: the mean update "saul" (Saul et al.'s tangent step, never lowers the bound)
    or "thesis" (2.17 as printed with the sign corrected, not monotone); the chain runs at
    most ``chain_max_iter`` L-BFGS-B iterations, ``chain_chunk`` networks per problem.
    Learning (binary_density): ``restarts`` nets from U(-init_span, init_span),
    ``epochs`` passes over the training patterns in steps of ``batch`` patterns with
    ``learning_rate``, Q refitted with at most ``learn_sweeps`` sweeps per step."""

    q_family: str = "mean_field"
    components: int = 1
    layers: str = "auto"
    max_sweeps: int = 100
    tol: float = 1e-10
    update: str = "saul"
    chain_max_iter: int = 1000
    chain_chunk: int = 250
    learning_rate: float = 0.5
    epochs: int = 10
    batch: int = 10
    restarts: int = 10
    learn_sweeps: int = 20
    init_span: float = 0.1

    def validate(self) -> None:
        check_choice("q_family", self.q_family, Q_FAMILIES)
        check_choice("update", self.update, UPDATE_FORMS)
        if self.components < 1:
            raise ValueError(f"setting 'components' must be >= 1, got {self.components}")
        if self.components > 1 and self.q_family != "mixture":
            raise ValueError(
                f"setting 'components' = {self.components} needs q_family 'mixture', "
                f"got {self.q_family!r}"
            )
        self.layer_sizes()
        for key in (
            "max_sweeps",
            "chain_max_iter",
            "chain_chunk",
            "epochs",
            "batch",
            "restarts",
            "learn_sweeps",
        ):
            if getattr(self, key) < 1:
                raise ValueError(f"setting {key!r} must be >= 1, got {getattr(self, key)}")
        for key in ("tol", "learning_rate", "init_span"):
            check_positive(key, getattr(self, key))

    def layer_sizes(self, n_pixels: int | None = None) -> tuple[int, ...]:
        """The layer sizes, top first; ``auto`` resolves for patterns of ``n_pixels``
        pixels (learning) or, without, for the thesis's 2-4-6 ensembles."""
        if self.layers == "auto":
            return (2, 4, 6) if n_pixels is None else (1, 8, n_pixels)
        try:
            sizes = tuple(int(n) for n in self.layers.split("-"))
        except ValueError:
            sizes = ()
        if len(sizes) < 2 or min(sizes) < 1:
            raise ValueError(
                f"setting 'layers' must be layer sizes top first joined by '-', at least two "
                f"(e.g. '2-4-6'), got {self.layers!r}"
            )
        return sizes

    @property
    def n_components(self) -> int:
        return self.components if self.q_family == "mixture" else 1


def accepted_tasks(settings: SBNSettings) -> tuple[str, ...]:
    return TASKS


def _uniform_start(rng: np.random.Generator, n_batch: int, n_components: int, sizes):
    """mu ~ U(0, 1) of the hidden units and xi ~ U(0, 1) of every unit, drawn as
    ``mixture_bound.init_mixture`` draws them, so a mean-field start equals the M = 1
    mixture's start from the same stream: (B, M, H), (B, M, N)."""
    n_hidden, n_units = sum(sizes[:-1]), sum(sizes)
    mu = rng.random((n_batch, n_components, n_hidden))
    xi = rng.random((n_batch, n_components, n_units))
    return mu, xi


# --------------------------------------------------------------------------- inference


def ensemble_networks(split: Split, sizes: tuple[int, ...]) -> tuple[LayeredSBN, np.ndarray]:
    """The networks of a ``network_ensemble`` split and their observed values (K, D)."""
    n_par, n_vis = n_parameters(sizes), sizes[-1]
    rows = split.x_train
    if rows.shape[1] != n_par + n_vis:
        raise ValueError(
            f"split {split.name!r} has {rows.shape[1]} columns per network; a "
            f"{'-'.join(map(str, sizes))} network needs {n_par} parameters + {n_vis} "
            "visible values (set 'layers')"
        )
    visible = rows[:, n_par:]
    if not np.all((visible == 0) | (visible == 1)):
        raise ValueError(f"split {split.name!r}: visible values must be 0 or 1")
    return unpack_parameters(rows[:, :n_par], sizes), visible


def optimise_bounds(
    net: LayeredSBN, visible: np.ndarray, s: SBNSettings, rng: np.random.Generator, log=print
) -> tuple[np.ndarray, dict]:
    """The optimised bound of every network (K,) for ``s.q_family`` and what it took."""
    from ..engines.sbn import fit_markov_chain, fit_mean_field, fit_mixture

    sizes, k = net.layer_sizes, net.n_networks
    n_hidden = net.n_hidden
    if s.q_family == "mixture":
        fit = fit_mixture(
            net.weights,
            net.biases,
            visible,
            s.components,
            rng,
            s.max_sweeps,
            s.tol,
            s.update,
            layer_sizes=sizes,
        )
        log(f"mixture M={s.components}: {fit.sweeps} sweeps")
        return fit.bound, {"sweeps": fit.sweeps}
    mu, xi = _uniform_start(rng, k, 1, sizes)
    mf = fit_mean_field(
        net.weights,
        net.biases,
        visible,
        mu[:, 0],
        xi[:, 0],
        s.max_sweeps,
        s.tol,
        s.update,
        layer_sizes=sizes,
    )
    log(f"mean field: {mf.sweeps} sweeps")
    if s.q_family == "mean_field":
        return mf.bound, {"sweeps": mf.sweeps}
    chain = fit_markov_chain(
        net.weights,
        net.biases,
        visible,
        sizes,
        mf.mu[:, :n_hidden],
        mf.xi,
        chunk=s.chain_chunk,
        max_iter=s.chain_max_iter,
    )
    log(f"Markov chain from the mean-field solution: {chain.iterations} L-BFGS-B iterations")
    return chain.bound, {
        "sweeps": mf.sweeps,
        "chain_iterations": chain.iterations,
        "mean_field_bound": mf.bound,
    }


def relative_error(exact: np.ndarray, bound: np.ndarray) -> np.ndarray:
    """|L - bound| / |L| (the thesis plots (L - bound)/L, which is <= 0 as L < 0)."""
    return np.abs(exact - bound) / np.abs(exact)


def fit_ensemble(split: Split, s: SBNSettings, rng: np.random.Generator, log=print) -> FitResult:
    sizes = s.layer_sizes()
    net, visible = ensemble_networks(split, sizes)
    exact = exact_log_marginal(net, visible[:, None, :])[:, 0]
    bound, info = optimise_bounds(net, visible, s, rng, log)
    rel = relative_error(exact, bound)
    result = FitResult(
        pred_mean=np.zeros((0, 0)),
        pred_var=np.zeros((0, 0)),
        likelihood="none",
        log_evidence=float(np.sum(bound)),
        log_evidence_kind="lower_bound",
        traces={
            "exact_loglik": (("network",), exact),
            "bound": (("network",), bound),
            "rel_error": (("network",), rel),
        },
        n_grad_evals=int(info["sweeps"] + info.get("chain_iterations", 0)),
    )
    result.diagnostics.update(
        mean_rel_error=float(np.mean(rel)),
        median_rel_error=float(np.median(rel)),
        max_rel_error=float(np.max(rel)),
        exact_log_evidence=float(np.sum(exact)),
        n_networks=int(len(exact)),
        sweeps=int(info["sweeps"]),
    )
    if "chain_iterations" in info:
        result.diagnostics.update(
            chain_iterations=int(info["chain_iterations"]),
            mean_field_mean_rel_error=float(
                np.mean(relative_error(exact, info["mean_field_bound"]))
            ),
        )
    log(f"{s.q_family} (M={s.n_components}): mean relative error {100 * np.mean(rel):.3f} %")
    if not np.all(np.isfinite(bound)):
        result.flag("diverged", f"{int(np.sum(~np.isfinite(bound)))} non-finite bounds")
    above = bound > exact + BOUND_SLACK * np.abs(exact)
    if np.any(above):
        result.flag("diverged", f"{int(above.sum())} bounds above the exact ln P(V)")
    return result


# --------------------------------------------------------------------------- learning


def exact_loglik_patterns(weights, biases, sizes, patterns: np.ndarray) -> np.ndarray:
    """Exact ln P(v) of every pattern (P, D) under each of R nets: (R, P), by enumeration in
    chunks of ``EXACT_CHUNK`` patterns."""
    net = LayeredSBN(sizes, np.asarray(weights), np.asarray(biases))
    return np.concatenate(
        [
            exact_log_marginal_patterns(net, patterns[i : i + EXACT_CHUNK])
            for i in range(0, len(patterns), EXACT_CHUNK)
        ],
        axis=1,
    )


def fit_density(split: Split, s: SBNSettings, rng: np.random.Generator, log=print) -> FitResult:
    from ..engines.sbn import init_weights, learning_step

    if s.q_family == "chain":
        raise ValueError("q_family 'chain' is for network ensembles; learn with mean_field/mixture")
    train, test = split.x_train, split.x_test
    sizes = s.layer_sizes(train.shape[1])
    for name, patterns in (("training", train), ("test", test)):
        if not np.all((patterns == 0) | (patterns == 1)):
            raise ValueError(
                f"split {split.name!r}: {name} patterns must be 0 or 1 (sigmoid belief units)"
            )
    if train.shape[1] != sizes[-1]:
        raise ValueError(
            f"split {split.name!r} has {train.shape[1]} pixels per pattern; layers "
            f"{s.layers!r} have {sizes[-1]} visible units"
        )
    n = len(train)
    steps = math.ceil(n / s.batch)
    weights, biases = init_weights(sizes, s.restarts, s.init_span, rng)
    bound_epoch = np.zeros((s.restarts, s.epochs))
    loglik_epoch = np.zeros((s.restarts, s.epochs))
    for epoch in range(s.epochs):
        order = np.stack([rng.permutation(n) for _ in range(s.restarts)])
        bounds = []
        for step in range(steps):
            # fixed batch shape (the last one wraps round), so the fit compiles once
            idx = order[:, (step * s.batch + np.arange(s.batch)) % n]
            weights, biases, bound = learning_step(
                sizes,
                weights,
                biases,
                train[idx],
                s.n_components,
                rng,
                s.learning_rate,
                s.learn_sweeps,
            )
            bounds.append(np.asarray(bound))
        bound_epoch[:, epoch] = np.concatenate(bounds, axis=1).mean(1)
        loglik_epoch[:, epoch] = exact_loglik_patterns(weights, biases, sizes, train).mean(1)
        log(
            f"epoch {epoch + 1}/{s.epochs}: mean bound {bound_epoch[:, epoch].mean():.3f}, "
            f"exact ln P(v) {loglik_epoch[:, epoch].mean():.3f} per pattern"
        )
    train_ll = exact_loglik_patterns(weights, biases, sizes, train)
    test_ll = exact_loglik_patterns(weights, biases, sizes, test)
    result = FitResult(
        pred_mean=np.zeros_like(split.y_test),  # (T, 0): no predictions at the test patterns
        pred_var=np.zeros_like(split.y_test),
        likelihood="none",
        traces={
            "train_loglik_pattern": (("restart", "train_pattern"), train_ll),
            "test_loglik_pattern": (("restart", "test_pattern"), test_ll),
            "bound_epoch": (("restart", "epoch"), bound_epoch),
            "train_loglik_epoch": (("restart", "epoch"), loglik_epoch),
        },
        n_grad_evals=s.epochs * steps,
    )
    per_train, per_test = train_ll.mean(1), test_ll.mean(1)
    best = int(np.argmax(per_train))
    result.diagnostics.update(
        train_loglik_per_pattern=float(per_train.mean()),
        test_loglik_per_pattern=float(per_test.mean()),
        best_train_loglik_per_pattern=float(per_train[best]),
        best_test_loglik_per_pattern=float(per_test[best]),
        presentations=int(s.epochs * steps * s.batch),
    )
    if not (np.all(np.isfinite(train_ll)) and np.all(np.isfinite(test_ll))):
        result.flag("diverged", "non-finite log-likelihood of a learned network")
    return result


def fit(split: Split, settings: SBNSettings, rng: np.random.Generator, log=print) -> FitResult:
    """``network_ensemble`` splits have no targets and no test points; a split with test
    patterns is a ``binary_density`` one."""
    if split.x_test.shape[0] == 0:
        return fit_ensemble(split, settings, rng, log)
    return fit_density(split, settings, rng, log)


def work(s: SBNSettings, n_train: int, n_test: int, n_out: int, n_weights: int) -> Work:
    """Cost model (one call priced in seconds, ``call_s``): ensembles, every sweep of every
    network and component to ``max_sweeps`` (and the chain to ``chain_max_iter``) plus the
    enumeration; learning, ``epochs`` x steps of ``batch`` patterns x ``restarts`` nets
    refitted for ``learn_sweeps`` sweeps, and the enumeration of every pattern per epoch."""
    sizes = s.layer_sizes()
    units, hidden = sum(sizes), sum(sizes[:-1])
    pairs = sum(a * b for a, b in zip(sizes[:-1], sizes[1:], strict=False))
    states = 2.0**hidden * units * units
    if n_test == 0:
        seconds = n_train * (
            SWEEP_PAIR_S * pairs * s.max_sweeps * s.n_components + ENUMERATE_S * states
        )
        if s.q_family == "chain":
            seconds += n_train * CHAIN_ITER_UNIT_S * units * s.chain_max_iter
        held = n_train * (s.n_components * units * 4 + 2.0**hidden)
    else:
        steps = s.epochs * math.ceil(n_train / s.batch)
        seconds = (
            steps * s.restarts * s.batch * SWEEP_PAIR_S * pairs * (s.learn_sweeps * s.n_components)
            + ENUMERATE_S * states * s.restarts * (s.epochs * n_train + n_train + n_test) / units
        )
        held = 4 * s.restarts * EXACT_CHUNK * 2.0**hidden * units
    return Work(1, floats_held=held, call_s=seconds)


register(
    Method(
        "sbn_vi",
        SBNSettings,
        fit,
        ("q_family", "components"),
        "sigmoid belief networks (thesis ch. 2): mean-field, mixture and Markov-chain bounds "
        "on ln P(V) for ensembles of random nets against enumeration, and learning by "
        "gradient ascent on the bound with the exact log-likelihood of the learned nets",
        tasks=accepted_tasks,
        models=(DATA_MODEL,),
        work=work,
        imports=("scipy.special", "scipy.optimize"),
    )
)
