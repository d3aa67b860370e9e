"""``least_squares``: ordinary least squares on the inputs (``degree: 1``) or on the inputs
and all their squares and pairwise products (``degree: 2``): the linear and quadratic
regression rows of paper 000 Table 2 and thesis Table 5.2 (Tecator, after Thodberg 1996:
RMSE 2.78 and 0.80 on the ten principal components).

The weights are the least-squares solution with an intercept (scikit-learn's
``PolynomialFeatures`` and ``LinearRegression``). The predictive variance is the classical
one of a Gaussian linear model with the noise variance estimated from the residuals:
s^2 (1 + phi(x)^T (Phi^T Phi)^-1 phi(x)), s^2 = RSS / (N - p), Phi the centred features
with the intercept's column (p columns); with N <= p there is no residual estimate and the
variance is NaN.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..datasets.base import Split
from ..method_base import FitResult
from . import Method, Work, register


@dataclass(frozen=True)
class LeastSquaresSettings:
    degree: int = 1

    def validate(self) -> None:
        if self.degree not in (1, 2):
            raise ValueError(f"setting 'degree' must be 1 or 2; got {self.degree!r}")


def features(x: np.ndarray, degree: int) -> np.ndarray:
    """The inputs' monomials of degree 1 to ``degree`` (no constant column)."""
    from sklearn.preprocessing import PolynomialFeatures

    return PolynomialFeatures(degree, include_bias=False).fit_transform(x)


def fit(split: Split, settings: LeastSquaresSettings, rng: np.random.Generator, log=print):
    from sklearn.linear_model import LinearRegression

    phi_train = features(split.x_train, settings.degree)
    model = LinearRegression().fit(phi_train, split.y_train)
    design = np.column_stack([np.ones(len(phi_train)), phi_train])
    n, p = design.shape
    residual = split.y_train - model.predict(phi_train)
    noise = (residual**2).sum(axis=0) / (n - p) if n > p else np.full(residual.shape[1], np.nan)
    gram_inv = np.linalg.pinv(design.T @ design)

    def predict(x):
        phi = features(x, settings.degree)
        leverage = np.einsum("ti,ij,tj->t", np.column_stack([np.ones(len(phi)), phi]),
                             gram_inv, np.column_stack([np.ones(len(phi)), phi]))  # fmt: skip
        return model.predict(phi), (1.0 + leverage)[:, None] * noise[None, :]

    mean, var = predict(split.x_test)
    train_mean, train_var = predict(split.x_train)
    log(f"least squares, degree {settings.degree}: {p} coefficients, {n} training points")
    result = FitResult(pred_mean=mean, pred_var=var, train_mean=train_mean, train_var=train_var)
    result.diagnostics.update(n_coefficients=p, noise_variance=float(np.mean(noise)))
    return result


def work(s: LeastSquaresSettings, n_train: int, n_test: int, n_out: int, n_weights: int) -> Work:
    """Cost model: one least-squares solve, counted as one step; holds the design matrix
    (n_weights = inputs + 1 of a linear model: its square bounds the quadratic terms)."""
    return Work(1, floats_held=n_train * n_weights**s.degree)


register(
    Method(
        "least_squares",
        LeastSquaresSettings,
        fit,
        (),
        "ordinary least squares on the inputs (degree 1) or their quadratic terms (degree 2)",
        work=work,
        imports=("sklearn.linear_model", "sklearn.preprocessing"),
    )
)
