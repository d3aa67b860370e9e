"""Learning Boltzmann machines by F = L+ - L- (engines.boltzmann.objective, learning):
the gradient 4.15/4.25 against finite differences, Galland's error 4.27, and the two
learning experiments of §4.5.2 in small (the two-unit toy of figs. 4.5-4.6 and the
conditional start of fig. 4.4b)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bnnsweep.engines.boltzmann import mixture as mx
from bnnsweep.engines.boltzmann.learning import fit_boltzmann, fit_boltzmann_exact
from bnnsweep.engines.boltzmann.objective import (
    approximate_log_likelihood,
    output_cross_entropy,
    variational_gradient,
)
from bnnsweep.engines.boltzmann.phases import initial_state, phase_machine, run_phase
from bnnsweep.models import boltzmann as bm


def _bound_at(w, b, clamped, values, state):
    mach = phase_machine(w, b, clamped, values)
    return mx.mixture_bound(mach.weights, mach.biases, state) + mach.constant


@pytest.mark.parametrize("seed", [0, 1])
def test_variational_gradient_is_the_derivative_of_f_at_fixed_q(seed):
    """4.25 (4.15 for M = 1): d(L+ - L-)/dw_ij and d/db_i at fixed variational parameters,
    with a mixture in both phases and hidden units, by central differences."""
    rng = np.random.default_rng(seed)
    mask = bm.layered_mask([2, 3, 2])
    w, b = bm.random_machines(rng, 2, mask)
    plus_units, minus_units = np.array([0, 1, 5, 6]), np.array([0, 1])
    data = rng.choice([-1.0, 1.0], size=(3, 4))
    v_minus = data[:, :2]
    plus = run_phase(
        w,
        b,
        plus_units,
        data,
        initial_state(phase_machine(w, b, plus_units, data), 2, rng=rng),
        "mixture",
        max_sweeps=2,
    )
    minus = run_phase(
        w,
        b,
        minus_units,
        v_minus,
        initial_state(phase_machine(w, b, minus_units, v_minus), 3, rng=rng),
        "mixture",
        max_sweeps=2,
    )
    np.testing.assert_allclose(plus.bound, _bound_at(w, b, plus_units, data, plus.free_state))
    gw, gb = variational_gradient(plus, minus, mask)

    def f(w_, b_):
        return (
            _bound_at(w_, b_, plus_units, data, plus.free_state)
            - _bound_at(w_, b_, minus_units, v_minus, minus.free_state)
        ).sum(1)

    vec = bm.weights_to_vector(w, mask)
    iu = np.nonzero(np.triu(mask, 1))
    eps = 1e-6
    for p in range(vec.shape[1]):
        d = np.zeros_like(vec)
        d[:, p] = eps
        fd = (
            f(bm.vector_to_weights(vec + d, mask), b) - f(bm.vector_to_weights(vec - d, mask), b)
        ) / (2 * eps)
        np.testing.assert_allclose(fd, gw[:, iu[0][p], iu[1][p]], atol=1e-6)
    for i in range(7):
        d = np.zeros_like(b)
        d[:, i] = eps
        np.testing.assert_allclose((f(w, b + d) - f(w, b - d)) / (2 * eps), gb[:, i], atol=1e-6)
    assert np.all(gw[:, ~mask] == 0)


def test_output_cross_entropy_is_minus_log_probability_of_targets():
    """Corrected 4.27: -sum_i ln Q-(s_i = v_i) with Q-(s_i = v) = (1 + v <s_i>)/2."""
    rng = np.random.default_rng(3)
    means = rng.uniform(-0.99, 0.99, (4, 5, 3))
    targets = rng.choice([-1.0, 1.0], size=(5, 3))
    want = -np.log(0.5 * (1 + targets * means)).sum(axis=(-1, -2))
    np.testing.assert_allclose(output_cross_entropy(means, targets), want)
    assert np.all(output_cross_entropy(means, targets) > 0)
    np.testing.assert_allclose(output_cross_entropy(targets * (1 - 1e-12), targets), 0.0, atol=1e-9)


def _toy(seed, iterations=60):
    mask = bm.fully_connected_mask(2)
    data = np.array([[1.0, 1.0], [1.0, 1.0], [-1.0, -1.0]])
    rng = np.random.default_rng(seed)
    w0 = bm.symmetric_weights(rng.normal(0, 0.1, (4, 2, 2)), mask)
    b0 = rng.normal(0, 0.1, (4, 2))
    common = dict(learning_rate=0.25, iterations=iterations, keep_path=True)
    runs = {
        "mf": fit_boltzmann(w0, b0, mask, data, [0, 1], q_minus="mf", max_sweeps=20, **common),
        "mix": fit_boltzmann(
            w0,
            b0,
            mask,
            data,
            [0, 1],
            q_minus="mixture",
            components=2,
            max_sweeps=20,
            rng=rng,
            **common,
        ),
        "exact": fit_boltzmann_exact(w0, b0, mask, data, [0, 1], **common),
    }
    return {
        k: np.array(
            [
                bm.empirical_kl(h.weight_path[i], h.bias_path[i], [0, 1], data)
                for i in range(iterations)
            ]
        )
        for k, h in runs.items()
    }


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_two_unit_toy_mean_field_oscillates_and_two_components_track_exact(seed):
    """Figs. 4.5-4.6: data {(1,1),(1,1),(-1,-1)}, w ~ N(0, 0.1^2), rate 0.25, <= 20 sweeps,
    warm-started joint. Mean field's KL(data||model) jumps up again and again; M = 2 follows
    exact learning."""
    kl = _toy(seed)
    jumps = (np.diff(kl["mf"], axis=0) > 0.1).sum(0)
    assert np.all(jumps >= 10)
    assert np.all(np.diff(kl["exact"], axis=0) <= 1e-12)  # the exact run never rises
    np.testing.assert_allclose(kl["mix"][20:], kl["exact"][20:], atol=0.01)
    assert np.all(kl["mix"][-1] < 0.02)


def test_joint_started_from_the_conditional_learns_a_supervised_task():
    """Fig. 4.4b in small: 6-bit associations through one hidden layer; with the joint
    started from the conditional every machine gets its outputs within 0.2 of the targets
    and F never exceeds 0; with both phases from zero the joint goes inconsistent."""
    rng = np.random.default_rng(4)
    data = rng.choice([-1.0, 1.0], size=(6, 8))
    mask = bm.layered_mask([4, 4, 4])
    w, b = bm.random_machines(rng, 3, mask, -0.5, 0.5)
    plus_units, inputs = np.r_[0:4, 8:12], np.arange(4)
    common = dict(
        temperatures=np.geomspace(60, 1, 8), damping=0.5, max_sweeps=100, stop_within=0.2, rng=rng
    )
    cond = fit_boltzmann(
        w,
        b,
        mask,
        data,
        plus_units,
        inputs,
        joint_init="conditional",
        joint_temperatures=(1.0,),
        learning_rate=0.01,
        iterations=400,
        **common,
    )
    assert np.all(cond.converged_at > 0)
    assert cond.inconsistent.sum() == 0
    # the objective and the output error close in on each other as learning converges
    last = cond.objective[-1], cond.output_error[-1]
    assert np.all(np.abs(last[0] + last[1]) < 0.25 * last[1])
    zero = fit_boltzmann(
        w,
        b,
        mask,
        data,
        plus_units,
        inputs,
        joint_init="zero",
        learning_rate=0.01,
        iterations=150,
        **common,
    )
    assert zero.inconsistent.sum() > 0


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), damping=st.sampled_from([0.0, 0.5]))
def test_conditional_start_keeps_the_mean_field_joint_consistent(seed, damping):
    """Started from the clamped solution (outputs at their targets), the joint's L- begins at
    L+ and mean-field updates never lower it, so F = L+ - L- <= 0 for every pattern and any
    weights: the reason the conditional start removes the inconsistency of fig. 4.1b."""
    rng = np.random.default_rng(seed)
    sizes = [3, int(rng.integers(1, 4)), 2]
    mask = bm.layered_mask(sizes)
    w, b = bm.random_machines(rng, 3, mask, -3.0, 3.0)
    n = sum(sizes)
    data = rng.choice([-1.0, 1.0], size=(4, 5))
    h = fit_boltzmann(
        w,
        b,
        mask,
        data,
        np.r_[0:3, n - 2 : n],
        np.arange(3),
        joint_init="conditional",
        temperatures=(8.0, 3.0, 1.0),
        joint_temperatures=(1.0,),
        damping=damping,
        learning_rate=0.05,
        iterations=3,
    )
    assert h.inconsistent.sum() == 0


def test_exact_records_and_bad_settings():
    rng = np.random.default_rng(5)
    mask = bm.fully_connected_mask(4)
    w, b = bm.random_machines(rng, 2, mask)
    data = rng.choice([-1.0, 1.0], size=(3, 2))
    h = fit_boltzmann(w, b, mask, data, [0, 1], iterations=3, learning_rate=0.0, exact=True)
    want = bm.exact_log_likelihood(w, b, [0, 1], data).log_likelihood
    np.testing.assert_allclose(h.exact_log_likelihood, np.broadcast_to(want, (3, 2)))
    # joint shared by the patterns: F per pattern uses the one L-
    assert h.objective.shape == (3, 2)
    with pytest.raises(ValueError, match="joint_init"):
        fit_boltzmann(w, b, mask, data, [0, 1], joint_init="warm")
    with pytest.raises(ValueError, match="plus_init"):
        fit_boltzmann(w, b, mask, data, [0, 1], plus_init="warm")
    with pytest.raises(ValueError, match="conditional"):
        fit_boltzmann(w, b, mask, data, [0, 1], joint_init="conditional")
    plus = run_phase(w, b, [0, 1], data, initial_state(phase_machine(w, b, [0, 1], data), 1), "mf")
    minus = run_phase(w, b, None, None, initial_state(phase_machine(w, b, None, None), 1), "mf")
    assert approximate_log_likelihood(plus, minus).shape == (2, 3)
