"""The small exact examples of thesis ch. 1, computed (not typed in):

- §1.4 and Table 1.1: inference in the burglary networks B -> A and (B, C) -> A by
  enumeration (eqs. 1.4, 1.7);
- fig. 1.9: the variance of a spherical Gaussian N2 = N(0, s2 I) that minimises each form of
  the KL divergence to a correlated Gaussian N1, by 1-D minimisation of the Gaussian KL (the
  closed forms tr(S1)/d and d/tr(S1^-1) are what the tests check against);
- figs. 1.12-1.13: the Laplace approximation (global mode and -1/second derivative of ln p)
  and the variational Gaussian (minimum KL(q || p), Gaussian moments in closed form, ln Z by
  quadrature) to densities p(x) ∝ exp(c4 x^4 + c3 x^3 + c2 x^2).
"""

from __future__ import annotations

import itertools

import numpy as np


def posterior_two_node(prior_b: float, a_given_b: float, a_given_not_b: float) -> float:
    """P(B = yes | A = yes) in B -> A (eq. 1.4)."""
    yes = a_given_b * prior_b
    return yes / (yes + a_given_not_b * (1.0 - prior_b))


def posteriors_explaining_away(prior_b: float, prior_c: float, table: np.ndarray) -> dict:
    """(B, C) -> A with ``table[b, c]`` = P(A = yes | B = b, C = c) (Table 1.1), every joint
    state enumerated: P(B | A), P(C | A) (eq. 1.7) and P(B | A, C) (all "yes")."""
    joint = np.zeros((2, 2))
    for b, c in itertools.product((0, 1), repeat=2):
        pb = prior_b if b else 1.0 - prior_b
        pc = prior_c if c else 1.0 - prior_c
        joint[b, c] = table[b, c] * pb * pc  # P(A = yes, B = b, C = c)
    return {
        "p_b_given_a": joint[1].sum() / joint.sum(),
        "p_c_given_a": joint[:, 1].sum() / joint.sum(),
        "p_b_given_a_c": joint[1, 1] / joint[:, 1].sum(),
    }


def correlated_covariance(eigenvalues, angle_deg: float) -> np.ndarray:
    """A 2-D covariance with ``eigenvalues`` and its first eigenvector at ``angle_deg``."""
    a = np.deg2rad(angle_deg)
    rot = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
    return rot @ np.diag(eigenvalues) @ rot.T


def gaussian_kl(cov_p: np.ndarray, cov_q: np.ndarray) -> float:
    """KL(N(0, cov_p) || N(0, cov_q))."""
    d = cov_p.shape[0]
    solve = np.linalg.solve(cov_q, cov_p)
    return 0.5 * (np.trace(solve) - d + np.linalg.slogdet(cov_q)[1] - np.linalg.slogdet(cov_p)[1])


def optimal_spherical_variances(cov: np.ndarray) -> tuple[float, float]:
    """(s2 minimising KL(N1 || N2), s2 minimising KL(N2 || N1)) for N2 = N(0, s2 I), by
    bounded 1-D minimisation over ln s2 (fig. 1.9 (a), (b))."""
    eye = np.eye(cov.shape[0])

    def best(kl):
        from scipy import optimize

        res = optimize.minimize_scalar(
            kl, bounds=(-20.0, 10.0), method="bounded", options={"xatol": 1e-12}
        )
        return float(np.exp(res.x))

    forward = best(lambda ls2: gaussian_kl(cov, np.exp(ls2) * eye))
    reverse = best(lambda ls2: gaussian_kl(np.exp(ls2) * eye, cov))
    return forward, reverse


def _log_p(coef):
    c4, c3, c2 = coef
    return lambda x: c4 * x**4 + c3 * x**3 + c2 * x**2


def laplace_quartic(coef) -> tuple[float, float]:
    """(global mode, Laplace variance) of p(x) ∝ exp(c4 x^4 + c3 x^3 + c2 x^2), c4 < 0: the
    real root of d ln p/dx of largest ln p, and -1 / (d^2 ln p/dx^2) there (eqs. 1.19-1.20)."""
    c4, c3, c2 = coef
    roots = np.roots([4 * c4, 3 * c3, 2 * c2, 0.0])
    real = roots[np.abs(roots.imag) < 1e-12].real
    mode = float(real[np.argmax(_log_p(coef)(real))])
    return mode, float(-1.0 / (12 * c4 * mode**2 + 6 * c3 * mode + 2 * c2))


def log_normaliser(coef) -> float:
    """ln of the integral of exp(c4 x^4 + c3 x^3 + c2 x^2) over the real line (quadrature)."""
    from scipy import integrate

    value, _ = integrate.quad(lambda x: np.exp(_log_p(coef)(x)), -np.inf, np.inf, epsabs=1e-13)
    return float(np.log(value))


def variational_gaussian_quartic(coef) -> tuple[float, float, float]:
    """(mean, variance, KL(q || p)) of the Gaussian q minimising KL(q || p) for p as above
    (fig. 1.13): E_q[x^k] from Gaussian moments, best of several starts."""
    from scipy import optimize

    c4, c3, c2 = coef
    log_z = log_normaliser(coef)

    def kl(params):
        m, log_v = params
        v = np.exp(log_v)
        e2 = m**2 + v
        e3 = m**3 + 3 * m * v
        e4 = m**4 + 6 * m**2 * v + 3 * v**2
        entropy = 0.5 * np.log(2 * np.pi * np.e * v)
        return -entropy - (c4 * e4 + c3 * e3 + c2 * e2) + log_z

    starts = [(m, lv) for m in np.linspace(-2, 3, 11) for lv in (-3.0, -1.0, 1.0)]
    fits = [optimize.minimize(kl, s, method="BFGS", options={"gtol": 1e-12}) for s in starts]
    best = min(fits, key=lambda r: r.fun)
    return float(best.x[0]), float(np.exp(best.x[1])), float(best.fun)
