"""The valley-sum evidence (engines/evidence/valleys.py): the symmetry group of the hidden
units, the merging of minima into valleys, and the estimate against known normalisers and
against importance sampling over every image on the robot arm."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bnnsweep import datasets
from bnnsweep.engines.evidence import valleys as V
from bnnsweep.methods import get_method
from bnnsweep.models.marginal import MarginalModel
from bnnsweep.runtime.jax_runtime import jax, jnp


def robot_arm_model(hidden: int) -> MarginalModel:
    split = datasets.load("robot_arm").split("default")
    settings = get_method("chaining").settings({"hidden": hidden, "activation": "tanh"})
    objective, noise = settings.build(split)
    return MarginalModel(objective, noise)


@pytest.fixture(scope="module")
def arm2():
    return robot_arm_model(2)


def test_group_elements_are_distinct_symmetries_of_the_energy(arm2):
    spec, sym = arm2.spec, arm2.symmetry
    elements = V.group_elements(sym)
    assert len(elements) == V.group_order(sym) == 2**2 * math.factorial(2)
    w = np.random.default_rng(0).normal(size=spec.n_weights)
    images = np.stack([sign * w[index] for index, sign in elements])
    assert len(np.unique(images.round(12), axis=0)) == len(elements)
    energy = jax.jit(jax.vmap(lambda v: arm2.phi_one(v) + arm2.prior_energy_one(v)))
    e = np.asarray(energy(jnp.asarray(images)))
    np.testing.assert_allclose(e, e[0], rtol=1e-12)
    # every image is at aligned distance 0 from w, a perturbed w is not
    for image in images:
        assert V.aligned_distance(sym, w, image) < 1e-12
    assert V.aligned_distance(sym, w, w + 0.1) > 0.05


def test_orbit_size_counts_the_stabiliser():
    model = robot_arm_model(4)
    spec, sym = model.spec, model.symmetry
    rng = np.random.default_rng(1)
    w = rng.normal(size=spec.n_weights)
    assert V.orbit_size(sym, w) == 2**4 * 24
    units, b2 = sym.blocks(w)
    dead = units.copy()
    dead[2] = 0.0  # a unit with no weights is fixed by its own sign flip

    def flat(u):
        return np.concatenate([u[:, :2].ravel(), u[:, 2], u[:, 3:].T.ravel(), b2])

    np.testing.assert_allclose(sym.blocks(flat(units))[0], units)
    assert V.orbit_size(sym, flat(dead)) == 2**4 * 24 // 2
    twins = units.copy()
    twins[3] = -twins[1]  # two units equal up to sign: their swap (with flips) fixes w
    assert V.orbit_size(sym, flat(twins)) == 2**4 * 24 // 2


class StudentMixture:
    """A target with a known normaliser and non-Gaussian valleys: exp(-E(w)) =
    sum_k c_k prod_i t_nu((w_i - mu_ki) / s_ki) / s_ki, so Z = sum_k c_k. The reference E_0 is
    a normalised Gaussian N(0, 10^2 I) and phi = E - E_0."""

    def __init__(self, dim=8, nu=5.0, seed=0):
        from scipy.special import gammaln

        rng = np.random.default_rng(seed)
        self.mu = np.stack([np.full(dim, -6.0), np.full(dim, 6.0), np.r_[np.full(dim // 2, 6.0),
                            np.full(dim - dim // 2, -6.0)]])  # fmt: skip
        self.s = rng.uniform(0.3, 0.6, size=self.mu.shape)
        self.log_c = np.log(np.array([2.0, 0.5, 0.05]))
        self.log_z = float(np.logaddexp.reduce(self.log_c))
        t_const = gammaln((nu + 1) / 2) - gammaln(nu / 2) - 0.5 * np.log(nu * np.pi)
        mu, s, log_c = jnp.asarray(self.mu), jnp.asarray(self.s), jnp.asarray(self.log_c)
        s0 = 10.0

        def energy(w):
            u = (w - mu) / s
            log_t = t_const - 0.5 * (nu + 1) * jnp.log1p(u * u / nu) - jnp.log(s)
            return -jax.scipy.special.logsumexp(log_c + jnp.sum(log_t, axis=1))

        def prior_energy_one(w):
            return 0.5 * jnp.dot(w, w) / s0**2 + 0.5 * dim * np.log(2 * np.pi * s0**2)

        self.phi_one = lambda w: energy(w) - prior_energy_one(w)
        self.prior_energy_one = prior_energy_one
        self.dim, self.s0 = dim, s0

    def sample_prior(self, n, rng):
        return self.s0 * rng.standard_normal((n, self.dim)), np.zeros((n, 1))


def test_valley_sum_recovers_a_known_normaliser_over_seeds():
    target = StudentMixture()
    settings = V.ValleySettings(starts=24, temperatures=300, particles=32, pilot_samples=100)
    hits = 0
    for seed in range(5):
        r = V.estimate(target, settings, np.random.default_rng(seed))
        assert r.diagnostics["n_valleys"] == 3
        assert r.log_z_se < 0.1
        hits += abs(r.log_z - target.log_z) <= 3 * r.log_z_se + 1e-3
    assert hits >= 4


def test_robot_arm_h1_valley_sum_agrees_with_importance_sampling_over_all_images():
    model = robot_arm_model(1)
    settings = V.ValleySettings(starts=12, temperatures=300, particles=32, pilot_samples=100)
    for seed in range(3):
        rng = np.random.default_rng(seed)
        r = V.estimate(model, settings, rng)
        assert r.status == "ok", r.reason
        w, e, g, a, _ = V.find_minima(model, settings, rng)
        valleys = V.distinct_valleys(model.symmetry, w, e, g, a, settings)
        value, se, ess = V.importance_reference(model, valleys, 100_000, rng)
        assert ess > 1000
        assert abs(r.log_z - value) <= 3 * np.hypot(r.log_z_se, se) + 0.02
