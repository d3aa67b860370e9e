"""Networks of linear threshold units (thesis ch. 3): one hidden layer of ±1 threshold units
learned as the zero-temperature limit of a sigmoid belief network, alternating the annealed
E-step over the hidden states with one soft-margin linear SVM per unit (``engines.ltu``).

Binary classification (labels 0/1, targets t = 2y - 1). Each seed is one initialisation
(thesis §3.8: ten per setting). The answer is the network of least training error; its test
predictions are hard, reported as one-hot ``class_probs`` with ``likelihood="probit"`` so
that ``results`` scores ``test_error_rate`` like any binary classifier (no
``test_loglik``: a hard prediction has none). ``diag_test_errors`` is the count of Table 3.1.

``validation`` > 0 holds that many training points out of learning (stratified by label,
drawn with ``numpy.random.default_rng([VALIDATION_SEED, validation_seed])``, the same points
for every seed and setting), and records their errors in ``diag_validation_errors`` for the
selection and committee protocol of Table 3.2 (``figures.ltu``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..datasets.base import Split
from ..engines.ltu import (
    UPDATE_RULES,
    LearningSchedule,
    annealing_temperatures,
    learn,
    random_network,
)
from ..method_base import FitResult, check_choice, check_positive
from ..models.threshold_network import forward
from . import Method, Work, register

VALIDATION_SEED = 314  # the FISH validation set had 314 points (thesis §3.8)
SMO_ITERATION_S = 2e-6  # seconds per libsvm SMO iteration on these data sizes (measured ~1 us)
UNIT_UPDATE_S = 50e-6  # seconds per E-step update of one unit over all patterns
LTU_TYPICAL = 0.25
"""Share of the bound an ltu fit takes (``Work.typical``; the SVMs stop far below their SMO
cap): 0.15-0.37 per cell, 0.256 of the summed bounds, on 16 cells of config/thesis_ltu.yaml
(each label's first and last cell on Pima and crabs, H = 10 to 40, C = 1 and 100; fit CPU
time, 2026-11-27): ``python benchmarks/plan_vs_measured.py config/thesis_ltu.yaml --fit 2``."""


INPUT_SCALINGS = ("standardised", "as_given")
"""``inputs``: ``standardised`` (the default: each input to zero mean and unit s.d. over the
training set, test inputs by the same map, as every registered dataset but Ripley's is
already) or ``as_given`` (the dataset's scaling; Ripley's Pima and crabs: each input's
training minimum to -1 and maximum to +1, which the thesis's text states, "lie between -1 and
1"; an ablation). Threshold units are blind to the scale of their inputs, but the SVM of each
M-step is not: scaling every input by s is the same SVM as scaling its penalty C by s^2, so
the input scale sets how hard the margins are at the grid's C. Table 3.1's Pima average
comes out with standardised inputs and not with the text's [-1, 1] (config/thesis_ltu.yaml,
config/README.md section ltu: the numbers and why the default is this one)."""


def scaled_inputs(inputs: str, x_train: np.ndarray, x_test: np.ndarray):
    """(x_train, x_test) under the ``inputs`` setting (``INPUT_SCALINGS``); a constant
    training column keeps its scale."""
    if inputs == "as_given":
        return x_train, x_test
    mean, sd = x_train.mean(axis=0), x_train.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    return (x_train - mean) / sd, (x_test - mean) / sd


@dataclass(frozen=True)
class LTUSettings:
    """``hidden`` units and SVM ``penalty`` C are sweep axes; ``activation`` can only be
    ``sign`` (threshold units); the rest is the thesis's schedule (§3.7-3.8). ``update``: the
    T = 0 E-step update, ``printed`` (the thesis's eqs. 3.23-3.24 as printed, which its
    Table 3.1 ran; the default) or ``exact`` (the T -> 0 limit of the model's conditional,
    an ablation: it overfits, config/README.md)."""

    hidden: int = 10
    penalty: int = 1
    activation: str = "sign"
    outer: int = 7
    anneal: bool = True
    anneal_start: float = 1000.0
    anneal_rate: float = 0.8
    anneal_stop: float = 1e-3
    zero_passes: int = 70
    update: str = "printed"
    kkt_tol: float = 1e-4
    loosen: int = 4
    svm_max_iter: int = 100_000
    validation: int = 0
    validation_seed: int = 0
    inputs: str = "standardised"

    def validate(self) -> None:
        check_positive("hidden", self.hidden)
        check_choice("activation", self.activation, ("sign",))
        check_positive("penalty", self.penalty)
        check_positive("outer", self.outer)
        check_positive("anneal_start", self.anneal_start)
        check_positive("anneal_stop", self.anneal_stop)
        if not 0.0 < self.anneal_rate < 1.0:
            raise ValueError(f"setting 'anneal_rate' must lie in (0, 1), got {self.anneal_rate}")
        check_positive("zero_passes", self.zero_passes)
        check_choice("update", self.update, tuple(UPDATE_RULES))
        check_positive("kkt_tol", self.kkt_tol)
        check_positive("loosen", self.loosen, allow_zero=True)
        check_positive("svm_max_iter", self.svm_max_iter)
        check_positive("validation", self.validation, allow_zero=True)
        check_positive("validation_seed", self.validation_seed, allow_zero=True)
        check_choice("inputs", self.inputs, INPUT_SCALINGS)

    def temperatures(self) -> np.ndarray:
        if not self.anneal:
            return np.zeros(0)
        return annealing_temperatures(self.anneal_start, self.anneal_rate, self.anneal_stop)

    def schedule(self) -> LearningSchedule:
        return LearningSchedule(
            penalty=float(self.penalty),
            outer=self.outer,
            kkt_tol=self.kkt_tol,
            loosen=self.loosen,
            svm_max_iter=self.svm_max_iter,
            temperatures=self.temperatures(),
            zero_passes=self.zero_passes,
            rule=self.update,
        )


def validation_rows(labels: np.ndarray, n_validation: int, seed: int) -> np.ndarray:
    """Sorted indices of ``n_validation`` training points held out, stratified by label
    (each class gives its share, rounded; the largest class takes the remainder)."""
    if n_validation >= len(labels):
        raise ValueError(f"validation {n_validation} leaves no training points of {len(labels)}")
    rng = np.random.default_rng([VALIDATION_SEED, seed])
    classes, counts = np.unique(labels, return_counts=True)
    share = np.round(n_validation * counts / len(labels)).astype(int)
    share[np.argmax(counts)] += n_validation - share.sum()
    rows = [
        rng.choice(np.flatnonzero(labels == c), k, replace=False)
        for c, k in zip(classes, share, strict=True)
    ]
    return np.sort(np.concatenate(rows))


def _targets(y: np.ndarray) -> np.ndarray:
    labels = y[:, :1]
    if not np.all((labels == 0) | (labels == 1)):
        raise ValueError("method 'ltu' needs binary labels 0/1 in the first target column")
    return 2.0 * labels - 1.0


def _errors(net, x, t) -> int:
    _, out = forward(net, x)
    return int(np.sum(out[:, 0] != t[:, 0]))


def fit(split: Split, settings: LTUSettings, rng: np.random.Generator, log=print) -> FitResult:
    x, x_test = scaled_inputs(settings.inputs, split.x_train, split.x_test)
    t = _targets(split.y_train)
    held = np.zeros(len(x), bool)
    if settings.validation:
        held[validation_rows(t[:, 0], settings.validation, settings.validation_seed)] = True
    start = random_network(x.shape[1], settings.hidden, 1, rng)
    learned = learn(x[~held], t[~held], start, settings.schedule(), rng)
    net = learned.network
    _, out = forward(net, x_test)
    predicted = (out[:, 0] > 0).astype(float)
    test_errors = int(np.sum(predicted != split.y_test[:, 0]))
    train_errors = int(learned.train_errors[learned.best_iteration])
    log(
        f"H={settings.hidden} C={settings.penalty}: training errors {learned.train_errors.tolist()}"
        f" (best at iteration {learned.best_iteration}), test errors {test_errors}"
    )
    result = FitResult(
        pred_mean=predicted[:, None],
        pred_var=np.zeros((len(predicted), 1)),
        likelihood="probit",
        class_probs=np.column_stack([1.0 - predicted, predicted]),
        n_grad_evals=learned.smo_total,  # SMO steps, each updating the dual gradient
    )
    result.traces["outer_train_errors"] = (("outer_iteration",), learned.train_errors)
    result.coords["outer_iteration"] = np.arange(settings.outer + 1)
    result.diagnostics.update(
        test_errors=test_errors,
        train_errors=train_errors,
        n_fit=int(np.sum(~held)),
        n_validation=int(np.sum(held)),
        validation_errors=_errors(net, x[held], t[held]) if held.any() else -1,
        best_iteration=learned.best_iteration,
        unsettled_esteps=learned.unsettled,
        smo_capped=learned.smo_capped,
        max_smo_iterations=int(np.max(learned.smo_iterations)),
    )
    if learned.smo_capped:
        result.flag("ok", f"{learned.smo_capped} SVMs stopped at svm_max_iter")
    return result


def work(s: LTUSettings, n_train: int, n_test: int, n_out: int, n_weights: int) -> Work:
    """Cost model: ``outer`` E-steps of (temperatures + zero_passes) x hidden unit updates,
    and ``outer`` x (hidden + 1) SVMs of at most min(svm_max_iter, 100 n_train) SMO
    iterations each (libsvm needs far fewer than the thesis's cap here: < 1e5 measured on
    Pima at C = 100), priced in unit updates."""
    updates = s.outer * (len(s.temperatures()) + s.zero_passes) * s.hidden
    smo = s.outer * (s.hidden + 1) * min(s.svm_max_iter, 100 * n_train)
    return Work(
        updates + smo * SMO_ITERATION_S / UNIT_UPDATE_S,
        points=1,
        call_s=UNIT_UPDATE_S,
        typical=LTU_TYPICAL,
    )


def accepted_tasks(settings: LTUSettings) -> tuple[str, ...]:
    return ("binary",)


register(
    Method(
        "ltu",
        LTUSettings,
        fit,
        ("hidden", "penalty"),
        "linear threshold unit network: zero-temperature sigmoid belief net, annealed E-step "
        "and soft-margin SVM M-steps (thesis ch. 3)",
        tasks=accepted_tasks,
        work=work,
        imports=("sklearn.svm",),
    )
)
