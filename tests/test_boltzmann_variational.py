"""Mean field and mixture inference for Boltzmann machines (engines.boltzmann) checked by
enumeration: every bound stays below the exact ln Z for arbitrary variational parameters,
each coordinate update is an exact maximiser (so none lowers the bound), one component is
mean field, and mixtures approach the exact correlations."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bnnsweep.engines.boltzmann import mean_field as mf
from bnnsweep.engines.boltzmann import mixture as mx
from bnnsweep.engines.boltzmann.objective import approximate_log_likelihood
from bnnsweep.engines.boltzmann.phases import initial_state, phase_machine, run_phase
from bnnsweep.models import boltzmann as bm
from bnnsweep.models.binary_states import all_states


def _machines(rng, k, n, span=1.0):
    return bm.random_machines(rng, k, bm.fully_connected_mask(n), -span, span)


def _random_state(rng, shape, mean_span=1.0, r_span=2.0, lam_span=2.0):
    """Arbitrary (not optimised) mixture parameters; shape = (..., M, f)."""
    means = np.clip(rng.uniform(-mean_span, mean_span, shape), -mx.MEAN_LIMIT, mx.MEAN_LIMIT)
    logits = rng.normal(0, 2, shape[:-1])
    log_mix = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    log_r = rng.uniform(-r_span, r_span, shape + (2,))
    log_lam = rng.uniform(-lam_span, lam_span, shape[:-1])
    return mx.MixtureState(means, log_mix, log_r, log_lam)


def _exact_mutual_information(state):
    """I(m, S) (4.18) by enumeration; state of shape (K, M, f)."""
    f = state.means.shape[-1]
    s = bm.all_states(f, bm.SPIN_VALUES)  # (S, f)
    q = 0.5 * (1 + s[None, None] * state.means[:, :, None, :])  # (K, M, S, f)
    log_qs = np.log(q).sum(-1)  # (K, M, S)
    mix = np.exp(state.log_mixing)
    qmix = np.einsum("km,kms->ks", mix, np.exp(log_qs))
    return np.einsum("km,kms,kms->k", mix, np.exp(log_qs), log_qs - np.log(qmix)[:, None])


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 7),
    span=st.floats(0.1, 3.0),
    temperature=st.floats(0.3, 5.0),
)
def test_mean_field_bound_below_log_partition_for_any_means(seed, n, span, temperature):
    rng = np.random.default_rng(seed)
    w, b = _machines(rng, 4, n, span)
    means = rng.uniform(-1, 1, (4, n))
    means[0] = np.sign(means[0])  # corners too
    exact = bm.exact_log_partition(w, b, temperature)
    assert np.all(mf.mean_field_bound(w, b, means, temperature) <= exact + 1e-10)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 6),
    m=st.integers(1, 5),
    span=st.floats(0.1, 3.0),
    r_span=st.floats(0.0, 6.0),
    lam_span=st.floats(0.0, 6.0),
    temperature=st.floats(0.3, 5.0),
)
def test_mixture_bound_below_log_partition_for_any_parameters(
    seed, n, m, span, r_span, lam_span, temperature
):
    """Bound 4.17 + 4.21 <= ln Z_T and I_lambda <= I for arbitrary means, Q(m), R, lambda."""
    rng = np.random.default_rng(seed)
    w, b = _machines(rng, 3, n, span)
    state = _random_state(rng, (3, m, n), 1.0, r_span, lam_span)
    exact = bm.exact_log_partition(w, b, temperature)
    assert np.all(mx.mixture_bound(w, b, state, temperature) <= exact + 1e-9)
    assert np.all(mx.mutual_information_bound(state) <= _exact_mutual_information(state) + 1e-9)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 6), m=st.integers(1, 4))
def test_clamped_phase_bounds_below_exact(seed, n, m):
    """L+ <= ln sum_H exp(-E(H, V)) for both families, arbitrary starting points."""
    rng = np.random.default_rng(seed)
    w, b = _machines(rng, 2, n, 1.5)
    clamped = rng.choice(n, size=rng.integers(1, n), replace=False)
    values = rng.choice([-1.0, 1.0], size=(3, clamped.size))
    exact = bm.exact_phase(w, b, clamped, values).log_partition
    mach = phase_machine(w, b, clamped, values)
    for q, comps in (("mf", 1), ("mixture", m)):
        state = initial_state(mach, comps, rng=rng, mean_spread=0.9)
        res = run_phase(w, b, clamped, values, state, q, max_sweeps=3)
        assert np.all(res.bound <= exact + 1e-9)
        # the clamped units sit at their values in the full-size means
        np.testing.assert_array_equal(
            res.means[..., clamped],
            np.broadcast_to(values[None, :, None, :], res.means[..., clamped].shape),
        )


def test_one_component_with_flat_smoothing_is_mean_field():
    rng = np.random.default_rng(0)
    w, b = _machines(rng, 5, 6)
    means = rng.uniform(-0.9, 0.9, (5, 6))
    state = mx.init_mixture(means[:, None, :])  # M = 1, ln R = 0, lambda optimal
    np.testing.assert_allclose(mx.mixture_bound(w, b, state), mf.mean_field_bound(w, b, means))
    swept = mx.update_means(w, b, state)
    np.testing.assert_allclose(swept.means[:, 0], mf.mean_field_sweep(w, b, means), atol=1e-12)
    res_mx = mx.mixture_anneal(w, b, state, (5.0, 2.0, 1.0), max_sweeps=300, tol=1e-12)
    res_mf = mf.mean_field_anneal(w, b, means, (5.0, 2.0, 1.0), max_sweeps=300, tol=1e-12)
    np.testing.assert_allclose(res_mx.bound, res_mf.bound, atol=1e-9)
    np.testing.assert_allclose(res_mx.state.means[:, 0], res_mf.means, atol=1e-6)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_mean_field_fixed_point_satisfies_tanh_and_is_stationary(seed):
    rng = np.random.default_rng(seed)
    w, b = _machines(rng, 10, 8)
    t = 1.3
    res = mf.mean_field_anneal(w, b, np.zeros((10, 8)), (20.0, 5.0, t), max_sweeps=2000, tol=0)
    m = res.means
    np.testing.assert_allclose(m, np.tanh((np.einsum("kij,kj->ki", w, m) + b) / t), atol=1e-9)
    eps = 1e-6
    for i in range(8):
        d = np.zeros_like(m)
        d[:, i] = eps
        g = (mf.mean_field_bound(w, b, m + d, t) - mf.mean_field_bound(w, b, m - d, t)) / (2 * eps)
        np.testing.assert_allclose(g, 0.0, atol=1e-6)


UPDATES = {
    "means": lambda w, b, s, t: mx.update_means(w, b, s, t),
    "damped_means": lambda w, b, s, t: mx.update_means(w, b, s, t, damping=0.6),
    "mixing": lambda w, b, s, t: mx.update_mixing(w, b, s, t),
    "smoothing": lambda w, b, s, t: mx.update_smoothing(s),
    "lambda": lambda w, b, s, t: mx.update_lambda(s),
    "sweep": lambda w, b, s, t: mx.mixture_sweep(w, b, s, t),
}


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 6),
    m=st.integers(1, 4),
    temperature=st.floats(0.3, 4.0),
)
def test_no_coordinate_update_lowers_the_mixture_bound(seed, n, m, temperature):
    rng = np.random.default_rng(seed)
    w, b = _machines(rng, 3, n, 1.5)
    state = _random_state(rng, (3, m, n), 0.95, 2.0, 2.0)
    for name, update in UPDATES.items():
        before = mx.mixture_bound(w, b, state, temperature)
        after = mx.mixture_bound(w, b, update(w, b, state, temperature), temperature)
        assert np.all(after >= before - 1e-9 * np.maximum(1, np.abs(before))), name
    m0 = state.means[..., 0, :]
    for damping in (0.0, 0.5):
        before = mf.mean_field_bound(w, b, m0, temperature)
        after = mf.mean_field_bound(
            w, b, mf.mean_field_sweep(w, b, m0, temperature, damping), temperature
        )
        assert np.all(after >= before - 1e-10)


def _fd(fun, x, idx, eps=1e-6):
    up, dn = x.copy(), x.copy()
    up[idx] += eps
    dn[idx] -= eps
    return (fun(up) - fun(dn)) / (2 * eps)


@pytest.mark.parametrize("seed", [5, 6, 7])
def test_updates_are_stationary_points_of_the_bound(seed):
    """The corrected 4.23 (1/2 factors, pi-weighted lambda sum, R+ - R-), 2.36 and 2.37
    zero the bound's derivative in the coordinate they set (central differences)."""
    rng = np.random.default_rng(seed)
    w, b = _machines(rng, 2, 5, 1.0)
    t = 1.7
    state = _random_state(rng, (2, 3, 5), 0.8, 1.5, 1.0)
    start = state
    state = mx.update_means(w, b, state, t)  # the last unit (4) was set last: exact for it

    def grad_unit4(st):  # dL/d atanh(mu_m4) for all m at once (finite at saturation)
        theta = np.arctanh(st.means)
        return _fd(
            lambda th: mx.mixture_bound(w, b, st._replace(means=np.tanh(th)), t),
            theta,
            (slice(None), slice(None), 4),
        )

    np.testing.assert_allclose(grad_unit4(state), 0.0, atol=1e-6)
    # the printed 4.23 (ln R+/R- without 1/2, lambda_m alone, R+ + R-) is not stationary
    mu = start.means.copy()
    mu[..., :4] = state.means[..., :4]
    lr = start.log_smoothing[..., 4, :]
    field = (np.einsum("kmj,kj->km", mu, w[:, 4, :]) + b[:, None, 4]) / t
    printed = field + (lr[..., 1] - lr[..., 0]) - np.exp(start.log_lambda) * np.exp(lr).sum(-1)
    mu[..., 4] = np.tanh(printed)
    assert np.max(np.abs(grad_unit4(start._replace(means=mu)))) > 1e-3
    state = mx.update_smoothing(state)
    for s in (0, 1):
        g = _fd(
            lambda lr: mx.mixture_bound(w, b, state._replace(log_smoothing=lr), t),
            state.log_smoothing,
            (slice(None), slice(None), 4, s),
        )
        np.testing.assert_allclose(g, 0.0, atol=1e-6)
    state = mx.update_lambda(state)
    g = _fd(
        lambda ll: mx.mixture_bound(w, b, state._replace(log_lambda=ll), t),
        state.log_lambda,
        (slice(None), slice(None)),
    )
    np.testing.assert_allclose(g, 0.0, atol=1e-6)
    # mixing: no direction in the simplex raises the bound after the update
    state = mx.update_mixing(w, b, state, t)
    best = mx.mixture_bound(w, b, state, t)
    for _ in range(20):
        pert = state.log_mixing + rng.normal(0, 0.3, state.log_mixing.shape)
        pert -= np.log(np.exp(pert).sum(-1, keepdims=True))
        assert np.all(mx.mixture_bound(w, b, state._replace(log_mixing=pert), t) <= best + 1e-12)


def test_point_masses_on_every_state_give_the_exact_log_partition():
    """2**n components at the states, weighted by P(s), with R nearly a point mass at its own
    state and optimal lambda: the bound reaches ln Z (the mixture code end to end)."""
    rng = np.random.default_rng(11)
    n = 4
    w, b = _machines(rng, 2, n, 1.0)
    s = bm.all_states(n, bm.SPIN_VALUES)
    ex = bm.exact_phase(w, b)
    logp = bm.log_potential(s[None], w, b) - ex.log_partition  # (K, S)
    means = np.broadcast_to(s * mx.MEAN_LIMIT, (2,) + s.shape)
    log_r = np.where(s[..., None] == np.array([-1.0, 1.0]), 0.0, -40.0)
    state = mx.MixtureState(
        np.array(means), logp, np.broadcast_to(log_r, (2,) + log_r.shape).copy(), np.zeros((2, 16))
    )
    state = mx.update_lambda(state)
    np.testing.assert_allclose(mx.mixture_bound(w, b, state), ex.log_partition[:, 0], atol=1e-8)


def _pair_sq_error(corr, exact):
    iu = np.triu_indices(corr.shape[-1], 1)
    return ((corr[..., iu[0], iu[1]] - exact[..., iu[0], iu[1]]) ** 2).sum(-1)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mixture_correlations_beat_mean_field_on_average(seed):
    """§4.5.1 in small: 8-unit machines, annealed 60 -> 1; the mean squared pair-correlation
    error (4.26) with M = 4 is below mean field's, and so is the gap to ln Z."""
    rng = np.random.default_rng(seed)
    w, b = _machines(rng, 30, 8)
    ex = bm.exact_phase(w, b)
    temps = mf.geometric_temperatures(60, 1, 8)
    res_mf = mf.mean_field_anneal(w, b, np.zeros((30, 8)), temps, max_sweeps=100)
    corr_mf = np.einsum("ki,kj->kij", res_mf.means, res_mf.means)
    state = mx.init_mixture(np.zeros((30, 4, 8)), rng)
    res_mx = mx.mixture_anneal(w, b, state, temps, max_sweeps=60)
    err_mf = _pair_sq_error(corr_mf, ex.correlations[:, 0]).mean()
    err_mx = _pair_sq_error(mx.mixture_correlations(res_mx.state), ex.correlations[:, 0]).mean()
    assert err_mx < 0.7 * err_mf
    lz = ex.log_partition[:, 0]
    assert np.mean(lz - res_mx.bound) < np.mean(lz - res_mf.bound)
    assert np.all(res_mx.bound <= lz + 1e-9) and np.all(res_mf.bound <= lz + 1e-9)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 6))
def test_objective_error_is_a_difference_of_kls(seed, n):
    """Eqs. 1.41-1.42 with the sign corrected: F - ln P(V) = KL(Q- || P(H, V)) - KL(Q+ || P(H|V))
    for any mean-field Q+ and Q- (the thesis prints KL+ - KL-); so F is not a bound."""
    rng = np.random.default_rng(seed)
    w, b = _machines(rng, 2, n, 1.5)
    vis = np.arange(n // 2 + 1)
    data = rng.choice([-1.0, 1.0], size=(2, vis.size))
    pm, mm = phase_machine(w, b, vis, data), phase_machine(w, b, None, None)
    plus = run_phase(
        w, b, vis, data, initial_state(pm, 1, rng=rng, mean_spread=0.9), "mf", max_sweeps=1
    )
    minus = run_phase(
        w, b, None, None, initial_state(mm, 1, rng=rng, mean_spread=0.9), "mf", max_sweeps=1
    )
    f = approximate_log_likelihood(plus, minus)
    exact = bm.exact_log_likelihood(w, b, vis, data).per_pattern

    def kl(means, states, logp):  # KL(prod_i (1 + m_i s_i)/2 || exp(logp))
        lq = np.log(0.5 * (1 + states * means[..., None, :])).sum(-1)
        return np.sum(np.exp(lq) * (lq - logp), -1)

    s_all = bm.all_states(n, bm.SPIN_VALUES)
    ex_joint = bm.exact_phase(w, b)
    logp_joint = bm.log_potential(s_all[None], w, b) - ex_joint.log_partition
    kl_minus = kl(minus.means[:, 0, 0], s_all, logp_joint)  # (K,)
    ex_cond = bm.exact_phase(w, b, vis, data)
    s_cond = bm.phase_states(n, vis, data)  # (P, S, n)
    free = np.setdiff1d(np.arange(n), vis)
    logp_cond = (
        bm.log_potential(s_cond[None], w[:, None], b[:, None]) - ex_cond.log_partition[..., None]
    )
    plus_free = plus.means[:, :, 0][..., free][:, :, None, :]  # (K, P, 1, f)
    lq = np.log(0.5 * (1 + s_cond[None][..., free] * plus_free)).sum(-1)
    kl_plus = np.sum(np.exp(lq) * (lq - logp_cond), -1)  # (K, P)
    np.testing.assert_allclose(f - exact, kl_minus[:, None] - kl_plus, atol=1e-9)


def test_joint_accuracy_scores_against_enumeration():
    """engines.boltzmann.ensemble: the 4.26 differences are the approximate minus the exact
    correlations; M = 1 is plain mean field; more components do better on average."""
    from bnnsweep.engines.boltzmann.ensemble import joint_accuracy

    rng = np.random.default_rng(12)
    w, b = _machines(rng, 20, 7)
    temps = mf.geometric_temperatures(60, 1, 8)
    one = joint_accuracy(w, b, 1, temps, max_sweeps=100)
    ref = mf.mean_field_anneal(w, b, np.zeros((20, 7)), temps, max_sweeps=100)
    ex = bm.exact_phase(w, b)
    iu = np.triu_indices(7, 1)
    want = (ref.means[:, iu[0]] * ref.means[:, iu[1]]) - ex.correlations[:, 0][:, iu[0], iu[1]]
    np.testing.assert_allclose(one.pair_errors, want, atol=1e-12)
    np.testing.assert_allclose(one.pair_sq_error, (want**2).sum(-1), atol=1e-12)
    np.testing.assert_allclose(one.log_partition, ex.log_partition[:, 0])
    three = joint_accuracy(w, b, 3, temps, rng=rng, max_sweeps=60)
    assert three.pair_sq_error.mean() < one.pair_sq_error.mean()
    assert np.all(three.bound <= three.log_partition + 1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mixture_keeps_both_modes_of_a_symmetric_machine(seed):
    """A ferromagnet without biases has two modes, all +1 and all -1, of equal weight: the
    annealed M = 2 mixture (smoothing U(-1, 1) its only symmetry breaking) keeps two live
    components, one on each mode, with Q(m) = 1/2, and its <s_i s_j> are those of
    enumeration; the mixing weights of the digits runs (figs. 4.8-4.9) are this update
    (2.35) on components whose bounds differ by nats."""
    n = 6
    weights = bm.symmetric_weights(np.full((n, n), 0.5), bm.fully_connected_mask(n))
    biases = np.zeros(n)
    rng = np.random.default_rng(seed)
    state = mx.init_mixture(np.zeros((2, n)), rng, smoothing_spread=1.0)
    temperatures = mf.geometric_temperatures(60.0, 1.0, 8)
    result = mx.mixture_anneal(weights, biases, state, temperatures, max_sweeps=200, tol=1e-10)
    q = np.exp(result.state.log_mixing)
    means = result.state.means
    np.testing.assert_allclose(q, 0.5, atol=1e-3)
    assert np.all(means[0] * means[1] < 0)  # opposite modes
    assert np.all(np.abs(means) > 0.9)
    states = all_states(n, (-1.0, 1.0))
    p = np.exp(bm.log_potential(states, weights, biases))
    exact = np.einsum("s,si,sj->ij", p / p.sum(), states, states)
    np.testing.assert_allclose(mx.mixture_correlations(result.state), exact, atol=0.05)
