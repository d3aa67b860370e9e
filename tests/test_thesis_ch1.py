"""Thesis ch. 1 exact examples (models.thesis_ch1, method ch1_checks, figure
chapter_one_checks): each computation against an independent reference (closed forms,
brute-force enumeration, finite differences, quadrature), then the printed values, then
the method and figure end to end from a sealed merged file."""

import itertools

import numpy as np
import pytest
from scipy import integrate

from bnnsweep import datasets
from bnnsweep.figures import draw, load_merged
from bnnsweep.figures.thesis_ch1 import thesis_ch1_frame
from bnnsweep.models import thesis_ch1 as ch1

TABLE = np.array([[1e-6, 0.7], [0.05, 0.2]])  # [b, c]: P(A = yes | B = b, C = c)


def test_explaining_away_matches_the_full_joint_enumerated():
    """Sum over every (A, B, C) state of the product of the net's factors."""
    rng = np.random.default_rng(0)
    for _ in range(5):
        pb, pc = rng.uniform(0.01, 0.99, 2)
        table = rng.uniform(0.01, 0.99, (2, 2))
        joint = {}
        for a, b, c in itertools.product((0, 1), repeat=3):
            pa = table[b, c] if a else 1 - table[b, c]
            joint[a, b, c] = pa * (pb if b else 1 - pb) * (pc if c else 1 - pc)
        p_a = sum(v for (a, _, _), v in joint.items() if a)
        got = ch1.posteriors_explaining_away(pb, pc, table)
        assert got["p_b_given_a"] == pytest.approx((joint[1, 1, 0] + joint[1, 1, 1]) / p_a)
        assert got["p_c_given_a"] == pytest.approx((joint[1, 0, 1] + joint[1, 1, 1]) / p_a)
        assert got["p_b_given_a_c"] == pytest.approx(
            joint[1, 1, 1] / (joint[1, 0, 1] + joint[1, 1, 1])
        )


def test_burglary_numbers_are_the_printed_ones():
    assert round(ch1.posterior_two_node(0.01, 0.05, 1e-6), 4) == 0.9980
    assert round(ch1.posterior_two_node(0.01, 0.05, 1e-5), 4) == 0.9806
    got = ch1.posteriors_explaining_away(0.01, 0.01, TABLE)
    assert round(100 * got["p_b_given_a"], 2) == 6.92
    assert round(100 * got["p_c_given_a"], 1) == 93.3
    # printed 0.287 %: the exact 0.28777 % truncated, not rounded
    assert 0.287 <= 100 * got["p_b_given_a_c"] < 0.288


@pytest.mark.parametrize("eigenvalues, angle", [((1.0, 0.01), 45.0), ((2.0, 0.3), 10.0)])
def test_kl_optimal_spherical_variances_are_the_closed_forms(eigenvalues, angle):
    cov = ch1.correlated_covariance(eigenvalues, angle)
    np.testing.assert_allclose(np.linalg.eigvalsh(cov), sorted(eigenvalues))
    forward, reverse = ch1.optimal_spherical_variances(cov)
    assert forward == pytest.approx(np.trace(cov) / 2, rel=1e-7)
    assert reverse == pytest.approx(2 / np.trace(np.linalg.inv(cov)), rel=1e-7)


def test_fig_1_9_values():
    forward, reverse = ch1.optimal_spherical_variances(ch1.correlated_covariance((1, 0.01), 45))
    assert round(forward, 3) == 0.505 and round(reverse, 4) == 0.0198


@pytest.mark.parametrize("coef", [(-1.0, 0.0, -0.1), (-0.7, 1.5, -0.1), (-0.3, -0.8, 0.5)])
def test_laplace_is_the_global_mode_and_its_curvature(coef):
    log_p = np.poly1d([coef[0], coef[1], coef[2], 0.0, 0.0])
    grid = np.linspace(-6, 6, 1_200_001)
    mode, variance = ch1.laplace_quartic(coef)
    assert mode == pytest.approx(grid[np.argmax(log_p(grid))], abs=2e-5)
    h = 1e-4
    second = (log_p(mode + h) - 2 * log_p(mode) + log_p(mode - h)) / h**2
    assert variance == pytest.approx(-1 / second, rel=1e-5)


def test_fig_1_12_values():
    assert ch1.laplace_quartic((-1.0, 0.0, -0.1)) == pytest.approx((0.0, 5.0))
    mode, variance = ch1.laplace_quartic((-0.7, 1.5, -0.1))
    assert round(mode, 4) == 1.5614 and round(variance, 4) == 0.1509


@pytest.mark.parametrize("coef", [(-1.0, 0.0, -0.1), (-0.7, 1.5, -0.1)])
def test_variational_gaussian_minimises_the_kl_computed_by_quadrature(coef):
    """KL(q || p) by quadrature at the optimum equals the closed-form value, and moving
    the mean or the variance raises it (fig. 1.13)."""
    mean, var, kl = ch1.variational_gaussian_quartic(coef)
    log_z = ch1.log_normaliser(coef)

    def kl_quad(m, v):
        def integrand(x):
            log_q = -0.5 * np.log(2 * np.pi * v) - 0.5 * (x - m) ** 2 / v
            log_p = coef[0] * x**4 + coef[1] * x**3 + coef[2] * x**2 - log_z
            return np.exp(log_q) * (log_q - log_p)

        return integrate.quad(integrand, m - 12 * np.sqrt(v), m + 12 * np.sqrt(v))[0]

    assert kl_quad(mean, var) == pytest.approx(kl, abs=1e-8)
    for dm, fv in [(0.02, 1.0), (-0.02, 1.0), (0.0, 1.05), (0.0, 0.95)]:
        assert kl_quad(mean + dm, var * fv) > kl
    if coef[1] == 0:
        assert abs(mean) < 1e-6  # symmetric density, symmetric approximation


def test_method_and_figure_end_to_end(ch1_merged_path, tmp_path):
    assert datasets.load("thesis_ch1").metadata["task"] == "analytic"
    frame = thesis_ch1_frame(load_merged(ch1_merged_path))
    printed = frame[frame["published"] != ""]
    assert len(printed) == 11
    mismatched = printed[printed["ours_rounded"] != printed["published"]]
    assert mismatched[["problem", "quantity"]].values.tolist() == [["burglary", "p_b_given_a_c"]]
    md, csv = draw("chapter_one_checks", ch1_merged_path, tmp_path / "checks.md")
    assert md.read_text().count("\n| ") == len(frame) + 1  # the header and a row per number
    assert len(csv.read_text().splitlines()) == len(frame) + 1
