"""The exact method against the function-space closed forms of models/conjugate.py and the
Gaussian posterior formulas (Bishop 2006 eqs. 3.53-3.59), computed here with explicit inverses."""

import numpy as np
import pytest

from bnnsweep import datasets
from bnnsweep.method_base import SettingsError
from bnnsweep.methods import exact, get_method
from bnnsweep.methods.laplace import mixture_moments
from bnnsweep.models.conjugate import linear_log_evidence, linear_log_evidence_integrated

METHOD = get_method("exact")


@pytest.fixture(scope="module")
def toy():
    return datasets.load("toy_sine").split("default")


@pytest.fixture(scope="module")
def arm():
    """Two outputs, two inputs; 40 training points keep the N x N reference cheap."""
    s = datasets.load("robot_arm").split("default")
    return type(s)(s.name, s.x_train[:40], s.y_train[:40], s.x_test[:50], s.y_test[:50],
                   s.y_mean, s.y_scale)  # fmt: skip


def fit(split, **values):
    settings = METHOD.settings(values)
    return settings, METHOD.fit(split, settings, np.random.default_rng(0), log=lambda *_: None)


def posterior_predictive(split, alpha, beta):
    """N(phi^T m, 1/beta + phi^T A^-1 phi) with A = beta Phi^T Phi + alpha I, m = beta A^-1
    Phi^T t (Bishop eqs. 3.53, 3.54, 3.58, 3.59), by explicit inversion."""
    phi, phi_test = exact.features(split.x_train), exact.features(split.x_test)
    a_inv = np.linalg.inv(beta * phi.T @ phi + alpha * np.eye(phi.shape[1]))
    mean = phi_test @ (beta * a_inv @ phi.T @ split.y_train)
    var = 1.0 / beta + np.einsum("td,de,te->t", phi_test, a_inv, phi_test)
    return mean, np.repeat(var[:, None], mean.shape[1], axis=1)


@pytest.mark.parametrize("name", ["toy", "arm"])
def test_likelihood_equals_function_space_closed_form(name, request):
    split = request.getfixturevalue(name)
    objective, _ = METHOD.settings({}).build(split)
    stats = exact.LinearStatistics.of(split.x_train, split.y_train)
    rng = np.random.default_rng(1)
    for la, lb in rng.uniform([-6, -4], [6, 6], size=(6, 2)):
        reference = linear_log_evidence(objective, np.array([np.exp(la)]), np.exp(lb))
        assert exact.log_likelihood(stats, la, lb) == pytest.approx(reference, rel=1e-9)


def test_likelihood_with_fewer_points_than_weights():
    """N = 2 < D = 4: Phi^T Phi is singular, the closed form still holds."""
    rng = np.random.default_rng(2)
    x, t = rng.normal(size=(2, 3)), rng.normal(size=(2, 1))
    split = datasets.base.Split("tiny", x, t, x, t, np.zeros(1), np.ones(1))
    objective, _ = METHOD.settings({}).build(split)
    stats = exact.LinearStatistics.of(x, t)
    reference = linear_log_evidence(objective, np.array([0.5]), 3.0)
    assert exact.log_likelihood(stats, np.log(0.5), np.log(3.0)) == pytest.approx(
        reference, abs=1e-10
    )


@pytest.mark.parametrize("name", ["toy", "arm"])
def test_integrated_evidence_equals_quadrature_reference(name, request):
    split = request.getfixturevalue(name)
    settings, result = fit(split)
    assert result.log_evidence_kind == "exact" and result.status == "ok"
    objective, noise_prior = settings.build(split)
    la = np.log(result.diagnostics["alpha_mode"])
    lb = np.log(result.diagnostics["beta_mode"])
    # an independent, wider and finer grid of the N x N closed form
    reference = linear_log_evidence_integrated(
        objective, noise_prior, (la - 45, la + 25), (lb - 6, lb + 6), n_grid=1401
    )
    assert result.log_evidence == pytest.approx(reference, abs=1e-5)


def test_grid_sum_is_the_reference_rule(toy):
    settings = METHOD.settings({})
    objective, noise_prior = settings.build(toy)
    stats = exact.LinearStatistics.of(toy.x_train, toy.y_train)
    alpha_prior = objective.prior.hyperpriors[0]
    grid = exact.evaluate(stats, alpha_prior, noise_prior, (-40, 30), (-10, 15), 151)
    reference = linear_log_evidence_integrated(objective, noise_prior, (-40, 30), (-10, 15), 151)
    assert grid.log_evidence == pytest.approx(reference, abs=1e-9)


@pytest.mark.parametrize("name", ["toy", "arm"])
def test_fixed_hyperparameters_give_the_gaussian_posterior_predictive(name, request):
    """Hyperpriors concentrated at alpha0, beta0 (relative s.d. 1e-5): the predictive is the
    Gaussian posterior predictive at alpha0, beta0."""
    split = request.getfixturevalue(name)
    alpha0, beta0 = 0.7, 4.0
    spec = lambda mean: {"mean": mean, "s": 2e10}  # noqa: E731 - shape 1e10
    _, result = fit(split, hyperpriors={"weights": spec(alpha0)}, noise_hyperprior=spec(beta0))
    mean, var = posterior_predictive(split, alpha0, beta0)
    np.testing.assert_allclose(result.pred_mean, mean, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(result.pred_var, var, rtol=1e-4)


def test_predictive_is_the_hyperposterior_mixture_of_gaussians(toy):
    """Mean and variance equal the mixture, over the method's own grid, of the explicit
    posterior predictives at each (alpha, beta)."""
    settings, result = fit(toy)
    objective, noise_prior = settings.build(toy)
    stats = exact.LinearStatistics.of(toy.x_train, toy.y_train)
    grid, _ = exact.integrate(stats, objective.prior.hyperpriors[0], noise_prior, settings.grid)
    keep = grid.values > grid.values.max() - 12  # the rest carries < e^-12 of the mass
    ia, ib = np.nonzero(keep)
    weights = np.exp(grid.values[keep] - np.logaddexp.reduce(grid.values[keep]))
    members = [
        posterior_predictive(toy, np.exp(grid.log_alpha[i]), np.exp(grid.log_beta[j]))
        for i, j in zip(ia, ib, strict=True)
    ]
    mean, var = mixture_moments(
        weights, np.array([m for m, _ in members]), np.array([v for _, v in members])
    )
    np.testing.assert_allclose(result.pred_mean, mean, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(result.pred_var, var, rtol=1e-4)


def test_function_draws_scatter_around_the_predictive_mean(toy):
    _, result = fit(toy)
    assert result.function_samples.shape == (10, *result.pred_mean.shape)
    spread = result.function_samples - result.pred_mean
    assert np.all(np.abs(spread) < 6 * np.sqrt(result.pred_var))


@pytest.mark.parametrize(
    "values, message",
    [
        ({"hidden": 2}, "setting 'hidden' must be 0"),
        ({"activation": "tanh"}, "setting 'activation' must be 'linear'"),
        ({"prior": "grouped"}, "setting 'prior' must be 'single'"),
        ({"grid": 5}, "setting 'grid' must be at least 21"),
    ],
)
def test_settings_outside_the_linear_model_are_refused(values, message):
    with pytest.raises(SettingsError, match=message):
        METHOD.settings(values)
