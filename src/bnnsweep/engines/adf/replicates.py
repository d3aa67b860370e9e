"""PBP and EBP over R replicates as one batch: the filter's state for every replicate, one
compiled epoch over all of them at a time, and each replicate's results and status
(paper 004 sec. 3-6; Hernandez-Lobato & Adams 2015). ``methods/adf.py`` holds the settings
(``settings``: a ``PBPSettings`` or, with ``fixed_variance``, an ``EBPSettings``)."""

from __future__ import annotations

import numpy as np

from ...datasets.base import Split
from ...method_base import FitResult
from ...metrics import discrete_metrics, regression_metrics, unstandardise
from ...runtime.jax_runtime import jax, jnp, key_from_rng
from . import likelihoods as lik
from .choices import filter_likelihood, n_outputs
from .filter import FilterConfig, FilterState, batched_output_moments, compiled_epoch
from .network import Architecture
from .updates import PriorSites


def n_classes_of(splits: list[Split]) -> int:
    """Number of classes: the largest label over the splits plus one (labels are 0..C-1)."""
    return int(max(max(s.y_train.max(), s.y_test.max()) for s in splits)) + 1


def _scale(y: np.ndarray) -> np.ndarray:
    """Standard deviation of each target column, 1 where a column does not vary."""
    sd = y.std(axis=0)
    return np.where(sd > 0, sd, 1.0)


# ---- the batched run ------------------------------------------------------------------------


class ADF:
    """One batched run of PBP or EBP over R replicates."""

    def __init__(self, splits: list[Split], settings, rngs, log=print, fixed_variance=False):
        if len(splits) != len(rngs) or not splits:
            raise ValueError(
                "fit_many needs one random generator per split, and at least one split"
            )
        shapes = {(s.n_inputs, s.n_outputs) for s in splits}
        if len(shapes) != 1:
            raise ValueError(
                f"replicates batched together must share input/output shapes, got {shapes}"
            )
        self.splits, self.settings, self.rngs, self.log = splits, settings, list(rngs), log
        self.ebp = bool(fixed_variance)
        self.likelihood = settings.likelihood
        self.n_classes = n_classes_of(splits) if self.likelihood in ("probit", "softmax") else 0
        if self.likelihood == "probit" and self.n_classes > 2:
            raise ValueError(
                f"probit likelihood needs two classes (labels 0/1), found {self.n_classes}"
            )
        n_in, n_targets = shapes.pop()
        n_out = n_outputs(self.likelihood, self.n_classes, n_targets)
        self.arch = Architecture((n_in, *settings.hidden_widths, n_out))
        self.config = FilterConfig(
            likelihood=filter_likelihood(self.likelihood),
            fixed_variance=self.ebp,
            softmax_bound=settings.softmax_approximation == "bound",
            poisson_nb=settings.poisson_approximation == "negative_binomial",
            mc_samples=int(settings.mc_samples),
            prior_precision=float(getattr(settings, "prior_precision", 0.0)),
        )
        self.monte_carlo = self.likelihood == "softmax" and not self.config.softmax_bound
        R = len(splits)
        self.n_train = np.array([s.x_train.shape[0] for s in splits])
        n_max = int(self.n_train.max())
        x = np.zeros((R, n_max, n_in))
        y = np.zeros((R, n_max, n_targets))
        # the Gaussian-rounded baseline regresses the counts standardised with the training
        # mean and s.d. (as PBP regresses every target, HL&A 2015 sec. 5)
        self.rounded = self.likelihood == "gaussian_rounded"
        self.count_mean = np.array([s.y_train.mean(axis=0) for s in splits])
        self.count_scale = np.array([_scale(s.y_train) for s in splits])
        for r, s in enumerate(splits):
            x[r, : self.n_train[r]] = s.x_train
            y[r, : self.n_train[r]] = (
                (s.y_train - self.count_mean[r]) / self.count_scale[r]
                if self.rounded
                else s.y_train
            )
        self.x, self.y = jnp.asarray(x), jnp.asarray(y)
        self.n_test = np.array([s.x_test.shape[0] for s in splits])
        x_test = np.zeros((R, int(self.n_test.max()), n_in))
        for r, s in enumerate(splits):
            x_test[r, : self.n_test[r]] = s.x_test
        self.x_test = jnp.asarray(x_test)
        self.state = self._initial_state(R)
        self._n_train = jnp.asarray(self.n_train)
        self._fixed_keys = jnp.stack([jax.random.key(0)] * R)  # no Monte Carlo: ignored
        self._host_copy: tuple | None = None

    def _initial_state(self, R: int) -> FilterState:
        """Means N(0, 1/D) per replicate stream (HL&A 2015 sec. 3.4); variances 1 (EBP) or the
        prior's b/(a-1) (PBP); the noise and prior Gammas at their settings."""
        s = self.settings
        means = self.arch.init_means(self.rngs, unit=s.mean_init == "unit")
        if self.ebp:
            variances = [np.ones_like(m) for m in means]
            prior_a = prior_b = np.full(R, np.nan)
            sites = PriorSites.initial(R, 0, 1.0)
        else:
            prior_var = s.prior_rate / (s.prior_shape - 1.0)
            variances = [np.full_like(m, prior_var) for m in means]
            prior_a, prior_b = np.full(R, s.prior_shape), np.full(R, s.prior_rate)
            sites = PriorSites.initial(R, self.arch.n_weights, prior_var)
        zeros = jnp.zeros(R, dtype=jnp.int64)
        return FilterState(
            means=tuple(jnp.asarray(m) for m in means),
            variances=tuple(jnp.asarray(v) for v in variances),
            # strongly typed float64, as the filter's outputs: see PriorSites.initial
            noise_a=jnp.full(R, float(s.noise_shape), jnp.float64),
            noise_b=jnp.full(R, float(s.noise_rate), jnp.float64),
            prior_a=jnp.asarray(prior_a),
            prior_b=jnp.asarray(prior_b),
            sites=sites,
            rejected_points=zeros,
            rejected_weights=zeros,
            rejected_noise=zeros,
            skipped_prior_sites=zeros,
        )

    def epoch(self) -> None:
        """One pass over every replicate's training data in a fresh random order, then the
        prior step; Monte Carlo draws come from a key drawn from each replicate's stream."""
        R, n_max = self.x.shape[:2]
        order = np.zeros((R, n_max), dtype=np.int64)
        for r, rng in enumerate(self.rngs):
            order[r, : self.n_train[r]] = rng.permutation(self.n_train[r])
        if self.monte_carlo:
            keys = jnp.stack([key_from_rng(rng) for rng in self.rngs])
        else:  # no draws: the program ignores the key
            keys = self._fixed_keys
        self.state = compiled_epoch(self.config)(
            self.state, self.x, self.y, jnp.asarray(order), self._n_train, keys
        )

    def host_state(self) -> FilterState:
        """The current state as numpy arrays, copied from the device once per state (each
        replicate's results then index it without a compiled call each)."""
        if self._host_copy is None or self._host_copy[0] is not self.state:
            self._host_copy = (self.state, jax.tree.map(np.asarray, self.state))
        return self._host_copy[1]

    # ---- predictions ---------------------------------------------------------------------
    def summarise(self, r: int, nu: np.ndarray, psi: np.ndarray, y: np.ndarray, rng) -> dict:
        """Predictive summaries of replicate r from its output moments (nu, psi) at the
        inputs of the targets y, with log p(y | x) per point."""
        name = self.likelihood
        if name == "gaussian":
            var = psi + float(self.host_state().noise_var[r])
            logpred = -0.5 * (np.log(2 * np.pi * var) + (y - nu) ** 2 / var)
            return {"mean": nu, "var": var, "logpred": logpred.sum(axis=-1)}
        if name == "gaussian_rounded":  # back to counts, then rounded (paper 004 sec. 6)
            m, scale = self.count_mean[r], self.count_scale[r]
            mean = nu * scale + m
            var = (psi + float(self.host_state().noise_var[r])) * scale**2
            logpred = np.asarray(lik.rounded_gaussian_logpmf(y, mean, var)).sum(axis=-1)
            return {"mean": np.asarray(lik.rounded_count(mean)), "var": var, "logpred": logpred}
        if name == "poisson":  # predicts the negative binomial's mode (paper 004 sec. 4)
            mode = np.asarray(lik.negative_binomial_mode(nu, psi))
            var = np.exp(nu) + psi * np.exp(2.0 * nu)
            if self.config.poisson_nb:
                logpred = np.asarray(lik.negative_binomial_logpmf(y, nu, psi)).sum(axis=-1)
            else:  # ln p(y) under the model's own predictive: eq. 20 by quadrature
                logpred = np.asarray(lik.poisson_quadrature_log_z(nu, psi, y)[0])
            return {"mean": mode, "var": var, "logpred": logpred}
        if name == "probit":
            probs = np.asarray(lik.probit_probs(nu, psi))
        else:
            key = key_from_rng(rng)
            probs = np.asarray(lik.softmax_mc_probs(nu, psi, key, self.settings.predictive_samples))
        labels = y[:, 0].astype(int)
        logpred = np.log(np.maximum(probs[np.arange(len(labels)), labels], 1e-300))
        label = np.argmax(probs, axis=-1)[:, None].astype(float)
        return {
            "mean": label,
            "var": np.full_like(label, np.nan),
            "probs": probs,
            "logpred": logpred,
        }

    def test_moments(self) -> tuple[np.ndarray, np.ndarray]:
        """Output moments (nu, psi) of every replicate at its own test inputs, (R, T, P)
        padded to the longest test set, in one compiled call."""
        return self._moments(self.x_test)

    def train_moments(self) -> tuple[np.ndarray, np.ndarray]:
        """Output moments (nu, psi) of every replicate at its own training inputs, (R, N, P)
        padded to the longest training set, in one compiled call."""
        return self._moments(self.x)

    def _moments(self, x) -> tuple[np.ndarray, np.ndarray]:
        st = self.state
        nu, psi = batched_output_moments(st.means, st.variances, x)
        return np.asarray(nu), np.asarray(psi)

    def test_scores(self, r: int, rng, nu: np.ndarray, psi: np.ndarray) -> tuple[float, float]:
        """(test error, test log-likelihood) in original units for the epoch trace, from
        replicate r's test moments (nu, psi) (``test_moments``), scored by
        :mod:`bnnsweep.metrics` as the cell's own metrics are: RMSE for gaussian, error rate
        for probit/softmax, mean absolute deviation for counts."""
        split = self.splits[r]
        T = self.n_test[r]
        pred = self.summarise(r, nu[:T], psi[:T], split.y_test, rng)
        if self.likelihood == "gaussian":
            mean, var = unstandardise(pred["mean"], pred["var"], split.y_mean, split.y_scale)
            y = split.y_test * split.y_scale + split.y_mean
            scores = regression_metrics(y, mean, var)
            return scores["test_rmse"], scores["test_loglik"]
        scores = discrete_metrics(
            split.y_test, pred.get("probs"), pred["mean"], pred["logpred"], None
        )
        return scores.get("test_error_rate", scores.get("test_mad")), scores["test_loglik"]

    # ---- the whole run -------------------------------------------------------------------
    def run(self) -> list[FitResult]:
        s = self.settings
        R = len(self.rngs)
        trace_err = np.full((R, s.epochs), np.nan)
        trace_ll = np.full((R, s.epochs), np.nan)
        for e in range(s.epochs):
            self.epoch()
            if s.trace_test:
                nu, psi = self.test_moments()
                for r in range(R):
                    scores = self.test_scores(r, self.rngs[r], nu[r], psi[r])
                    trace_err[r, e], trace_ll[r, e] = scores
            scores = (
                f": test error {np.mean(trace_err[:, e]):.4g}, test loglik "
                f"{np.mean(trace_ll[:, e]):.4g} (mean over {R} replicates)"
                if s.trace_test
                else ""
            )
            self.log(f"epoch {e + 1}/{s.epochs}{scores}")
        test, train = self.test_moments(), self.train_moments()
        return [self._result(r, trace_err[r], trace_ll[r], test, train) for r in range(R)]

    def _result(self, r: int, trace_err, trace_ll, test_moments, train_moments) -> FitResult:
        """Replicate r's result from every replicate's (nu, psi) at the test and training
        inputs (``test_moments``, ``train_moments``)."""
        s, split, rng = self.settings, self.splits[r], self.rngs[r]
        st = jax.tree.map(lambda leaf: leaf[r], self.host_state())
        T, N = self.n_test[r], self.n_train[r]
        nu, psi = test_moments
        test = self.summarise(r, nu[r, :T], psi[r, :T], split.y_test, rng)
        nu, psi = train_moments
        train = self.summarise(r, nu[r, :N], psi[r, :N], split.y_train, rng)
        gaussian = self.likelihood == "gaussian"
        result = FitResult(
            pred_mean=test["mean"],
            pred_var=test["var"],
            train_mean=train["mean"] if gaussian else None,
            train_var=train["var"] if gaussian else None,
            n_grad_evals=int(s.epochs * self.n_train[r]),
            likelihood=self.likelihood,
            class_probs=test.get("probs"),
            test_logpred=None if gaussian else test["logpred"],
            train_logpred=None if gaussian else train["logpred"],
        )
        if s.trace_test:
            result.traces["epoch_test_error"] = (("epoch",), trace_err)
            result.traces["epoch_test_loglik"] = (("epoch",), trace_ll)
            result.coords["epoch"] = np.arange(1, s.epochs + 1)
        counts = {
            "rejected_points": int(st.rejected_points),
            "rejected_weight_updates": int(st.rejected_weights),
            "rejected_noise_updates": int(st.rejected_noise),
            "skipped_prior_sites": int(st.skipped_prior_sites),
        }
        result.diagnostics.update(counts)
        result.diagnostics.update(
            n_weights=self.arch.n_weights,
            n_hidden_layers=len(self.arch.widths) - 2,
            noise_shape=float(st.noise_a),
            noise_rate=float(st.noise_b),
            prior_shape=float(st.prior_a) if not self.ebp else float("nan"),
            prior_rate=float(st.prior_b) if not self.ebp else float("nan"),
        )
        rejected = {k: v for k, v in counts.items() if v and k != "skipped_prior_sites"}
        if rejected:
            result.flag(
                "ok", "rejected updates: " + ", ".join(f"{k} {v}" for k, v in rejected.items())
            )
        visits = int(s.epochs * self.n_train[r])
        fits_mean = gaussian or self.rounded
        fit_ratio = train_rmse_ratio(train["mean"], split.y_train) if fits_mean else None
        result.diagnostics.update(
            rejected_weight_update_share=counts["rejected_weight_updates"] / visits,
            train_rmse_ratio=float("nan") if fit_ratio is None else fit_ratio,
        )
        flag_unstable(result, counts["rejected_weight_updates"], visits, fit_ratio)
        return result  # non-finite predictions are flagged by the runner, for every method


# Measured on uci_adf_deep_small.yaml (twice: 48 cells each) and on PBP with one hidden
# layer (75 runs: boston, energy, yacht x 20 splits; concrete, wine_red, kin8nm x 5) and two
# (35 more runs: splits 3-9 of boston, concrete, energy, yacht, wine_red). Healthy PBP runs
# reject 0 to 0.30% weight updates per point visit (the most: yacht split 8, two layers, test
# RMSE 0.75) and fit the training targets with RMSE 0.04 to 0.74 of their standard deviation
# (the most: wine_red). The troubled five-layer PBP runs reject 0.48% to 33% (one exploded run
# 0.036%) and either explode (ratio 4e6 to 4e9, test RMSE 1e8 to 4e12) or collapse to about
# the training mean (ratio 0.63 to 1.0); EBP rejects none.

REJECTED_SHARE_LIMIT = 1e-2
"""Rejected weight updates per point visit (epochs x training points) above which a run is
``not_converged``: three times the most a healthy run showed."""

NO_FIT_SHARE = 1e-3
NO_FIT_RATIO = 0.9
"""A run that rejects more than ``NO_FIT_SHARE`` weight updates per point visit (a third of
the healthy maximum) and fits the training targets hardly better than their mean
(``train_rmse_ratio`` above ``NO_FIT_RATIO``; no healthy run above 0.74) is
``not_converged`` too: the filter collapsed."""

TRAIN_RMSE_LIMIT = 3.0
"""``train_rmse_ratio`` above which a Gaussian run is ``diverged`` (its predictions exploded):
predicting the training mean scores 1, healthy runs at most 0.74, exploded runs 4e6 and more."""


def train_rmse_ratio(mean: np.ndarray, y: np.ndarray) -> float:
    """RMSE of the predictive mean ``mean`` at the training targets ``y`` (N, P) over the RMSE
    of predicting their mean (their standard deviation), pooled over outputs."""
    spread = float(np.sqrt(np.mean((y - y.mean(axis=0)) ** 2)))
    rmse = float(np.sqrt(np.mean((mean - y) ** 2)))
    return rmse / spread if spread > 0 else float("inf") if rmse > 0 else 0.0


def flag_unstable(result: FitResult, rejected: int, visits: int, fit_ratio: float | None) -> None:
    """The status of an ADF run in numerical trouble (the filter's own checks keep every
    value finite, so such a run would otherwise be ``ok``). ``rejected`` weight updates (eq. 6
    gave a non-positive variance or a non-finite value) in ``visits`` point visits;
    ``fit_ratio`` the ``train_rmse_ratio`` of the predictive mean (not finite counts as
    exploded; None for the likelihoods without a Gaussian predictive, which are judged by the
    rejections alone). ``not_converged`` when the share of rejections exceeds
    ``REJECTED_SHARE_LIMIT``, or ``NO_FIT_SHARE`` with a fit no better than ``NO_FIT_RATIO``;
    ``diverged`` when ``fit_ratio`` exceeds ``TRAIN_RMSE_LIMIT``."""
    share = rejected / visits if visits else 0.0
    no_fit = fit_ratio is not None and not fit_ratio <= NO_FIT_RATIO
    rejections = f"{rejected} weight updates rejected in {visits} point visits ({share:.2%}"
    if share > REJECTED_SHARE_LIMIT:
        result.flag(
            "not_converged",
            f"{rejections}, above {REJECTED_SHARE_LIMIT:.0%}): the filter was unstable",
        )
    elif share > NO_FIT_SHARE and no_fit:
        result.flag(
            "not_converged",
            f"{rejections}, above {NO_FIT_SHARE:.1%}) and a training RMSE {fit_ratio:.3g} "
            f"times the targets' standard deviation: the filter collapsed",
        )
    if fit_ratio is not None and not fit_ratio <= TRAIN_RMSE_LIMIT:
        result.flag(
            "diverged",
            f"training RMSE {fit_ratio:.3g} times the training targets' standard deviation "
            f"(above {TRAIN_RMSE_LIMIT:g}): the predictions exploded",
        )
