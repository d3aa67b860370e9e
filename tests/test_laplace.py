"""The evidence procedure against closed forms on a Bayesian linear model."""

import numpy as np
import pytest
from scipy.optimize import minimize

from bnnsweep.datasets.base import Split
from bnnsweep.engines.evidence.laplace import (
    DataCurvature,
    HessianFactor,
    distinct_modes,
    log_evidence_fixed_hyper,
    symmetry_log_factor,
)
from bnnsweep.engines.optimise import minimise_weights
from bnnsweep.methods import get_method
from bnnsweep.methods.laplace import evidence_procedure
from bnnsweep.models.conjugate import linear_log_evidence, linear_log_evidence_integrated

LINEAR = {"hidden": 0, "activation": "linear", "prior": "grouped", "restarts": 1}


def linear_split(n_out=1, seed=1, n=40):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    w = rng.normal(size=(3, n_out))
    t = x @ w + 0.3 + 0.3 * rng.normal(size=(n, n_out))
    return Split("default", x, t, x[:7], t[:7], np.zeros(n_out), np.ones(n_out))


def closed_form_log_evidence(objective, alpha, beta):
    return linear_log_evidence(objective, alpha, beta)


@pytest.mark.parametrize("n_out", [1, 2])
def test_laplace_evidence_is_exact_for_a_linear_model(n_out):
    split = linear_split(n_out)
    settings = get_method("laplace").settings(LINEAR)
    objective, _ = settings.build(split)
    alpha, beta = np.array([0.7, 2.0]), 5.0
    w = minimise_weights(
        objective, np.zeros(objective.network.n_weights), alpha, beta, 1000, 1e-15, newton_polish=20
    ).w
    factor = HessianFactor.of(objective.hessian(w[None], alpha, beta)[0])
    ours = log_evidence_fixed_hyper(objective, w, factor.logdet(), alpha, beta)
    assert abs(ours - closed_form_log_evidence(objective, alpha, beta)) < 1e-8


def test_reestimation_reaches_type_ii_maximum_likelihood():
    split = linear_split()
    settings = get_method("laplace").settings(
        {**LINEAR, "evidence": "paper", "cycles": 3000, "hyper_tol": 1e-12, "tol": 1e-15}
    )
    objective, noise = settings.build(split)
    mode = evidence_procedure(
        objective, noise, np.zeros(objective.network.n_weights), settings, lambda *_: None
    )
    assert mode.converged

    def log_ev(theta):
        return closed_form_log_evidence(objective, np.exp(theta[:2]), np.exp(theta[2]))

    # the fixed point is a stationary point of the exact type-II likelihood ...
    theta = np.log(np.r_[mode.alpha, mode.beta])
    eps = 1e-5
    grad = [(log_ev(theta + e) - log_ev(theta - e)) / (2 * eps) for e in np.eye(3) * eps]
    assert np.max(np.abs(grad)) < 1e-5
    # ... and its maximum, found independently
    best = minimize(
        lambda th: -log_ev(th),
        np.zeros(3),
        method="Nelder-Mead",
        options={"xatol": 1e-9, "fatol": 1e-13, "maxiter": 20000},
    )
    np.testing.assert_allclose(theta, best.x, atol=1e-3)
    assert log_ev(theta) >= -best.fun - 1e-9


def test_full_evidence_matches_quadrature_over_hyperparameters():
    """With Gamma hyperpriors, 'full' approximates ln int p(D|a,b) p(a) p(b) da db; on a
    linear model that integral is a 3-D quadrature in (ln alpha_1, ln alpha_2, ln beta)."""
    split = linear_split(n=60)
    values = {
        **LINEAR,
        "prior": "single",
        "cycles": 500,
        "hyper_tol": 1e-10,
        "hyperpriors": {"weights": {"shape": 1.0, "rate": 1.0}},
        "noise_hyperprior": {"shape": 2.0, "rate": 0.1},
    }
    result = get_method("laplace").fit(
        split, get_method("laplace").settings(values), np.random.default_rng(0), log=lambda *_: None
    )
    objective, noise = get_method("laplace").settings(values).build(split)
    exact = linear_log_evidence_integrated(objective, noise)
    assert result.log_evidence_kind == "laplace"
    assert abs(result.log_evidence - exact) < 0.05


def test_symmetry_factor():
    assert symmetry_log_factor(3, True) == pytest.approx(np.log(6) + 3 * np.log(2))
    assert symmetry_log_factor(0, True) == 0.0


def test_symmetric_modes_are_not_counted_twice():
    settings = get_method("laplace").settings({"hidden": 3, "activation": "tanh"})
    split = linear_split()
    objective, _ = settings.build(split)
    net = objective.network
    w = net.init_weights(np.random.default_rng(0), 1)[0]
    p = {k: v[0].copy() for k, v in net.unpack(w[None]).items()}
    order = [2, 0, 1]
    flipped = np.concatenate(
        [(-p["W1"][order]).ravel(), -p["b1"][order], (-p["W2"][:, order]).ravel(), p["b2"]]
    )
    np.testing.assert_allclose(
        net.forward(w[None], split.x_train), net.forward(flipped[None], split.x_train)
    )
    other = w + 0.5
    assert distinct_modes(objective, [w, flipped, other], 1e-6).tolist() == [True, False, True]


def test_laplace_records_non_positive_definite_hessian_in_status(monkeypatch):
    from bnnsweep.engines.evidence import laplace as evidence

    original = evidence.HessianFactor.of

    def broken(A):
        factor = original(A)
        factor.chol = None
        return factor

    monkeypatch.setattr(evidence.HessianFactor, "of", staticmethod(broken))
    split = linear_split()
    settings = get_method("laplace").settings({**LINEAR, "cycles": 2, "restarts": 2})
    result = get_method("laplace").fit(
        split, settings, np.random.default_rng(0), log=lambda *_: None
    )
    assert result.status == "not_converged"
    assert "not positive definite" in result.status_message
    assert np.isnan(result.log_evidence)
    assert np.all(np.isfinite(result.pred_mean))


def test_well_determined_count_clips_negative_data_curvature():
    """gamma = sum_i lambda_i+ / (lambda_i+ + alpha) over the eigenvalues of beta grad grad E_D
    clipped at zero (MacKay 1992), even where a data eigenvalue sits just above -alpha: there
    the unclipped W - alpha Tr(A^{-1}) is far below zero although A is positive definite."""
    from bnnsweep.engines.evidence.laplace import well_determined

    settings = get_method("laplace").settings(
        {"hidden": 3, "activation": "tanh", "prior": "single"}
    )
    split = linear_split()
    objective, _ = settings.build(split)
    w = objective.network.init_weights(np.random.default_rng(3), 1, 3.0)[0]
    beta = 5.0
    lam = np.linalg.eigvalsh(beta * objective.data_hessian(w[None])[0])
    assert lam[0] < 0  # the point is not a minimum of E_D
    alpha = np.array([-lam[0] * 1.001])  # A = beta H_D + alpha I positive definite, barely
    factor = HessianFactor.of(objective.hessian(w[None], alpha, beta)[0])
    assert factor.positive_definite
    unclipped = len(w) - alpha[0] * np.trace(factor.inverse())
    assert unclipped < -10
    expected = np.sum(np.maximum(lam, 0) / (np.maximum(lam, 0) + alpha[0]))
    curvature = DataCurvature.of(factor, np.full(len(w), alpha[0]))
    gamma = well_determined(curvature.A_plus, objective.prior, alpha)
    assert gamma[0] == pytest.approx(expected, rel=1e-9)
    assert 0 < gamma[0] < len(w)
    # the shift in ln evidence that clipping the log-determinant would make
    assert curvature.n_negative == int(np.sum(lam < 0))
    clipped = np.sum(np.log(np.maximum(lam, 0) + alpha[0]))
    assert curvature.clipped_logdet_shift(factor) == pytest.approx(
        -0.5 * (clipped - np.sum(np.log(lam + alpha[0]))), rel=1e-8
    )
