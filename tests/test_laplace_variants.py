"""The Hessian variants of the evidence framework (exact, clipped, Gauss-Newton) and the laplace
settings that choose them, the symmetry term and the modes summed."""

import numpy as np
import pytest

from bnnsweep.datasets.base import Split
from bnnsweep.engines.evidence.laplace import (
    HESSIANS,
    ModeHessians,
    symmetry_log_factor,
    well_determined,
)
from bnnsweep.methods import get_method

TANH = {"hidden": 3, "activation": "tanh", "prior": "grouped"}


def toy_split(seed: int, noise: float, n: int = 30, n_out: int = 2, teacher=None):
    """Inputs in [-2, 2]^2; targets from ``teacher`` (a weight vector of a TANH net) or a
    smooth function, plus Gaussian noise of s.d. ``noise``."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 2, size=(n, 2))
    if teacher is None:
        t = np.column_stack([np.sin(x[:, 0]) + 0.3 * x[:, 1], np.cos(x[:, 1])])[:, :n_out]
    else:
        net, w = teacher
        t = net.forward(w[None], x)[0]
    t = t + noise * rng.normal(size=t.shape)
    return Split("default", x, t, x[:5], t[:5], np.zeros(n_out), np.ones(n_out))


def objective_for(split, values=TANH):
    return get_method("laplace").settings(values).build(split)[0]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gauss_newton_hessian_is_beta_jtj_plus_alpha_from_finite_differences(seed):
    split = toy_split(seed, 0.1)
    objective = objective_for(split)
    net = objective.network
    rng = np.random.default_rng(seed)
    w = net.init_weights(rng, 1, 1.0)[0]
    alpha = rng.uniform(0.1, 3.0, size=objective.prior.n_groups)
    beta = 7.0
    eps = 1e-6
    columns = []
    for i in range(net.n_weights):
        step = np.zeros(net.n_weights)
        step[i] = eps
        up = net.forward((w + step)[None], split.x_train)[0]
        down = net.forward((w - step)[None], split.x_train)[0]
        columns.append(((up - down) / (2 * eps)).ravel())
    J = np.column_stack(columns)  # (N * P, W)
    expected = beta * J.T @ J + np.diag(objective.prior.per_weight(alpha))
    ours = objective.gauss_newton_hessian(w[None], alpha, beta)[0]
    np.testing.assert_allclose(ours, expected, rtol=1e-6, atol=1e-6)
    assert np.linalg.eigvalsh(ours)[0] > 0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_clipped_logdet_and_gamma_from_the_eigen_decomposition(seed):
    """ln|A+| = sum_i ln(max(lam_i, 0) + alpha) and gamma = sum_i lam_i+ / (lam_i+ + alpha)
    over the eigenvalues of beta grad grad E_D, at a point with negative data curvature; the
    Gauss-Newton gamma likewise over the eigenvalues of beta J^T J."""
    split = toy_split(seed, 0.1)
    objective = objective_for(split, {**TANH, "prior": "single"})
    w = objective.network.init_weights(np.random.default_rng(seed + 10), 1, 3.0)[0]
    beta = 5.0
    lam = np.linalg.eigvalsh(beta * objective.data_hessian(w[None])[0])
    assert lam[0] < 0
    alpha = np.array([-lam[0] * 1.5])
    hessians = ModeHessians.at(objective, w, alpha, beta)
    assert hessians.exact.positive_definite
    clipped = np.maximum(lam, 0.0)
    assert hessians.logdet("clipped") == pytest.approx(np.sum(np.log(clipped + alpha[0])))
    assert hessians.logdet("exact") == pytest.approx(np.sum(np.log(lam + alpha[0])))
    gamma = well_determined(hessians.matrix("clipped"), objective.prior, alpha)
    assert gamma[0] == pytest.approx(np.sum(clipped / (clipped + alpha[0])), rel=1e-9)
    lam_gn = np.linalg.eigvalsh(beta * objective.outer_product_data_hessian(w[None])[0])
    gamma_gn = well_determined(hessians.matrix("gauss_newton"), objective.prior, alpha)
    assert gamma_gn[0] == pytest.approx(np.sum(lam_gn / (lam_gn + alpha[0])), rel=1e-9)
    assert hessians.logdet("gauss_newton") == pytest.approx(np.sum(np.log(lam_gn + alpha[0])))
    # clipping raises every eigenvalue of the data term: ln|A+| > ln|A|
    assert hessians.logdet("clipped") > hessians.logdet("exact")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gauss_newton_equals_exact_where_the_residuals_vanish(seed):
    """Targets made by the network itself: the residual term of the Hessian is zero, so the
    exact Hessian is the (positive definite) Gauss-Newton one and the three variants agree."""
    rng = np.random.default_rng(seed)
    objective = objective_for(toy_split(seed, 0.0))
    net = objective.network
    w = net.init_weights(rng, 1, 1.0)[0]
    split = toy_split(seed, 0.0, teacher=(net, w))
    objective = objective_for(split)
    alpha, beta = np.array([0.5, 1.0, 2.0, 0.2]), 50.0
    hessians = ModeHessians.at(objective, w, alpha, beta)
    np.testing.assert_allclose(hessians.exact.A, hessians.gauss_newton, atol=1e-9)
    assert hessians.curvature.n_negative == 0
    logdets = [hessians.logdet(kind) for kind in HESSIANS]
    np.testing.assert_allclose(logdets, logdets[0], atol=1e-6)


def fit(split, values, seed=0):
    method = get_method("laplace")
    return method.fit(split, method.settings(values), np.random.default_rng(seed), lambda *_: None)


FAST = {**TANH, "restarts": 3, "cycles": 8, "max_iter": 200, "newton_steps": 20}


@pytest.mark.parametrize("seed", [0, 1])
def test_gauss_newton_evidence_near_exact_for_a_nearly_noiseless_teacher(seed):
    """Teacher data with noise s.d. 0.003: at the modes the residuals are tiny, the exact
    data Hessian is nearly J^T J, and the evidences with the two Hessians (in ln|A| and in
    gamma) differ by well under a nat (at noise s.d. 0.3 they differed by up to 1.9)."""
    net = objective_for(toy_split(seed, 0.0)).network
    w = net.init_weights(np.random.default_rng(seed + 5), 1, 1.0)[0]
    split = toy_split(seed, 0.003, n=40, teacher=(net, w))
    exact = fit(split, {**FAST, "evidence": "paper", "gamma_hessian": "exact"}, seed)
    gn = fit(
        split,
        {**FAST, "evidence": "paper", "hessian": "gauss_newton", "gamma_hessian": "gauss_newton"},
        seed,
    )
    assert np.isfinite(exact.log_evidence)
    assert abs(gn.log_evidence - exact.log_evidence) < 0.2
    logdets = {k: exact.traces[f"mode_logdet_{k}"][1] for k in HESSIANS}
    pd = exact.traces["mode_positive_definite"][1].astype(bool)
    np.testing.assert_allclose(logdets["gauss_newton"][pd], logdets["exact"][pd], rtol=0, atol=0.5)


def test_evidence_only_settings_shift_each_mode_by_their_term():
    """hessian, symmetry and modes change only the evaluation at the converged modes: the same
    fit (same random starts, same re-estimation) gives mode evidences shifted by exactly
    -1/2 (ln|A_variant| - ln|A|) and -ln h! 2^h, and 'all' sums every positive-definite mode."""
    split = toy_split(3, 0.1)
    base = fit(split, FAST)
    ev = base.traces["mode_log_evidence"][1]
    for kind in ("clipped", "gauss_newton"):
        other = fit(split, {**FAST, "hessian": kind})
        shift = -0.5 * (base.traces[f"mode_logdet_{kind}"][1] - base.traces["mode_logdet_exact"][1])
        np.testing.assert_allclose(other.traces["mode_log_evidence"][1], ev + shift, atol=1e-9)
    bare = fit(split, {**FAST, "symmetry": "none"})
    np.testing.assert_allclose(
        bare.traces["mode_log_evidence"][1], ev - symmetry_log_factor(3, True), atol=1e-9
    )
    every = fit(split, {**FAST, "modes": "all"})
    pd = base.traces["mode_positive_definite"][1].astype(bool)
    assert every.log_evidence == pytest.approx(np.logaddexp.reduce(ev[pd]))
    assert every.log_evidence >= base.log_evidence - 1e-9


@pytest.mark.parametrize(
    "key, value",
    [("hessian", "outer"), ("gamma_hessian", "full"), ("symmetry", "yes"), ("modes", "best")],
)
def test_unknown_variant_is_refused(key, value):
    with pytest.raises(ValueError, match=key):
        get_method("laplace").settings({**TANH, key: value})
