"""``pbp`` and ``ebp``: assumed density filtering over the weights of a ReLU network
(paper 004; Hernandez-Lobato & Adams 2015), several replicates advanced as one batch.

Each epoch visits every training point once in a fresh random order; for each point the
output moments are propagated forward (eq. 7-8), ln Z of the observation and its gradients
with respect to the output moments come from the likelihood (eq. 9, 14-18, 22, 24, 25), are
propagated back to every weight's mean and variance, and the weights are updated by eq. 6.
PBP also moves the Gamma of the noise precision by moment matching at every point (Gaussian
likelihood) and refines the Gamma of the prior precision by EP after every epoch; EBP keeps
the weight variances at 1 and shrinks the means by the fixed prior after every epoch.

Replicates (data splits or seeds) share the architecture; each draws from its own random
stream, so its numbers do not depend on which replicates it is batched with.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...datasets.base import Split
from ...engines.adf import likelihoods as lik
from ...engines.adf.network import Architecture, backward, forward
from ...engines.adf.updates import PriorSites, adf_update, refine_prior
from ...method_base import FitResult
from .settings import ADFSettings, EBPSettings, PBPSettings


def n_classes_of(splits: list[Split]) -> int:
    """Number of classes: the largest label over the splits plus one (labels are 0..C-1)."""
    return int(max(max(s.y_train.max(), s.y_test.max()) for s in splits)) + 1


@dataclass
class ADFState:
    """Everything the filter carries between points, batched over R replicates."""

    means: list[np.ndarray]
    variances: list[np.ndarray]
    noise_a: np.ndarray
    noise_b: np.ndarray
    prior_a: np.ndarray
    prior_b: np.ndarray
    sites: PriorSites | None
    rejected_points: np.ndarray
    rejected_weights: np.ndarray
    rejected_noise: np.ndarray
    skipped_prior_sites: np.ndarray

    @property
    def noise_var(self) -> np.ndarray:
        return self.noise_b / (self.noise_a - 1.0)


class ADF:
    """One batched run of PBP or EBP over R replicates."""

    def __init__(self, splits: list[Split], settings: ADFSettings, rngs, log=print):
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
        self.ebp = isinstance(settings, EBPSettings)
        self.likelihood = settings.likelihood
        self.n_classes = n_classes_of(splits) if self.likelihood in ("probit", "softmax") else 0
        if self.likelihood == "probit" and self.n_classes > 2:
            raise ValueError(
                f"probit likelihood needs two classes (labels 0/1), found {self.n_classes}"
            )
        n_in, n_targets = shapes.pop()
        n_out = lik.n_outputs(self.likelihood, self.n_classes, n_targets)
        self.arch = Architecture((n_in, *settings.hidden_widths, n_out))
        R = len(splits)
        self.n_train = np.array([s.x_train.shape[0] for s in splits])
        n_max = int(self.n_train.max())
        self.x = np.zeros((R, n_max, n_in))
        self.y = np.zeros((R, n_max, n_targets))
        for r, s in enumerate(splits):
            self.x[r, : self.n_train[r]] = s.x_train
            self.y[r, : self.n_train[r]] = s.y_train
        self.state = self._initial_state(R)

    # ---- initial state ------------------------------------------------------------------
    def _initial_state(self, R: int) -> ADFState:
        s = self.settings
        means = self.arch.init_means(self.rngs)
        if self.ebp:
            variances = [np.ones_like(m) for m in means]
            prior_a = np.full(R, np.nan)
            prior_b = np.full(R, np.nan)
            sites = None
        else:
            assert isinstance(s, PBPSettings)
            prior_var = s.prior_rate / (s.prior_shape - 1.0)
            variances = [np.full_like(m, prior_var) for m in means]
            prior_a, prior_b = np.full(R, s.prior_shape), np.full(R, s.prior_rate)
            sites = PriorSites.initial(R, self.arch.n_weights, prior_var)
        zeros = np.zeros(R, dtype=np.int64)
        return ADFState(
            means, variances, np.full(R, s.noise_shape), np.full(R, s.noise_rate),
            prior_a, prior_b, sites, zeros.copy(), zeros.copy(), zeros.copy(), zeros.copy(),
        )  # fmt: skip

    # ---- one observation per replicate --------------------------------------------------
    def _log_z(self, nu, psi, y, active):
        """ln Z and gradients for this step's observations (R, P); only active replicates
        draw Monte Carlo samples, so a replicate's stream does not depend on its batch-mates."""
        name = self.likelihood
        if name == "gaussian":
            return lik.gaussian_log_z(nu, psi, y, self.state.noise_var)
        if name == "probit":
            return lik.probit_log_z(nu, psi, y)
        if name == "softmax":
            if self.settings.softmax_approximation == "bound":
                return lik.softmax_bound_log_z(nu, psi, y)
            S, C = self.settings.mc_samples, nu.shape[-1]
            eps = np.stack(
                [
                    rng.standard_normal((S, C)) if a else np.zeros((S, C))
                    for rng, a in zip(self.rngs, active, strict=True)
                ]
            )
            return lik.softmax_mc_log_z(nu, psi, y, eps)
        return lik.poisson_nb_log_z(nu, psi, y)

    def step(self, idx: np.ndarray, active: np.ndarray) -> None:
        """Incorporate training point ``idx[r]`` into replicate r where ``active[r]``."""
        st = self.state
        rows = np.arange(len(idx))
        x = self.x[rows, idx][:, None, :]
        y = self.y[rows, idx]
        nu, psi, cache = forward(st.means, st.variances, x, keep=True)
        nu, psi = nu[:, 0], psi[:, 0]
        with np.errstate(all="ignore"):
            log_z, g_nu, g_psi = self._log_z(nu, psi, y, active)
        finite = np.isfinite(log_z) & np.all(np.isfinite(g_nu) & np.isfinite(g_psi), axis=-1)
        st.rejected_points += active & ~finite
        use = (active & finite)[:, None]
        g_nu = np.where(use, g_nu, 0.0)[:, None, :]
        g_psi = np.where(use, g_psi, 0.0)[:, None, :]
        grads_m, grads_v = backward(st.means, st.variances, cache, g_nu, g_psi)
        for k in range(len(st.means)):
            m_new, v_new, ok = adf_update(
                st.means[k], st.variances[k], grads_m[k], grads_v[k], fixed_variance=self.ebp
            )
            st.rejected_weights += np.sum(~ok, axis=(1, 2))
            st.means[k], st.variances[k] = m_new, v_new
        if self.likelihood == "gaussian":
            with np.errstate(all="ignore"):
                a_new, b_new = lik.gamma_moment_match(y, nu, psi, st.noise_a, st.noise_b)
            good = (active & finite).copy()
            valid = np.isfinite(a_new) & np.isfinite(b_new) & (a_new > 1.0) & (b_new > 0.0)
            st.rejected_noise += good & ~valid
            good &= valid
            st.noise_a = np.where(good, a_new, st.noise_a)
            st.noise_b = np.where(good, b_new, st.noise_b)

    def epoch(self) -> None:
        """One pass over every replicate's training data in a fresh random order, then the
        prior step (EP refinement for PBP, fixed-precision shrinkage for EBP)."""
        n_max = self.x.shape[1]
        order = np.zeros((len(self.rngs), n_max), dtype=np.int64)
        for r, rng in enumerate(self.rngs):
            order[r, : self.n_train[r]] = rng.permutation(self.n_train[r])
        for t in range(n_max):
            self.step(order[:, t], t < self.n_train)
        self._prior_step()

    def _prior_step(self) -> None:
        st = self.state
        if self.ebp:
            # ADF with the prior factor N(w | 0, 1/lambda) on N(m, 1): m' = m / (1 + lambda)
            shrink = 1.0 / (1.0 + self.settings.prior_precision)
            st.means = [m * shrink for m in st.means]
            return
        R = len(self.rngs)
        flat_m = np.concatenate([m.reshape(R, -1) for m in st.means], axis=1)
        flat_v = np.concatenate([v.reshape(R, -1) for v in st.variances], axis=1)
        with np.errstate(all="ignore"):
            st.skipped_prior_sites += refine_prior(flat_m, flat_v, st.sites, st.prior_a, st.prior_b)
        start = 0
        for k, m in enumerate(st.means):
            size = m[0].size
            st.means[k] = flat_m[:, start : start + size].reshape(m.shape)
            st.variances[k] = flat_v[:, start : start + size].reshape(m.shape)
            start += size

    # ---- predictions ---------------------------------------------------------------------
    def output_moments(self, r: int, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        st = self.state
        means = [m[r : r + 1] for m in st.means]
        variances = [v[r : r + 1] for v in st.variances]
        nu, psi = forward(means, variances, x[None])
        return nu[0], psi[0]

    def predict(self, r: int, x: np.ndarray, y: np.ndarray, rng) -> dict:
        """Predictive summaries at inputs x for replicate r, with log p(y | x) per point."""
        nu, psi = self.output_moments(r, x)
        name = self.likelihood
        if name == "gaussian":
            var = psi + self.state.noise_var[r]
            logpred = -0.5 * (np.log(2 * np.pi * var) + (y - nu) ** 2 / var)
            return {"mean": nu, "var": var, "logpred": logpred.sum(axis=-1)}
        if name == "poisson":
            mode = lik.negative_binomial_mode(nu, psi)
            var = np.exp(nu) + psi * np.exp(2.0 * nu)
            logpred = lik.negative_binomial_logpmf(y, nu, psi).sum(axis=-1)
            return {"mean": mode, "var": var, "logpred": logpred}
        if name == "probit":
            probs = lik.probit_probs(nu, psi)
        else:
            probs = lik.softmax_mc_probs(nu, psi, rng, self.settings.predictive_samples)
        labels = y[:, 0].astype(int)
        logpred = np.log(np.maximum(probs[np.arange(len(labels)), labels], 1e-300))
        label = np.argmax(probs, axis=-1)[:, None].astype(float)
        return {
            "mean": label,
            "var": np.full_like(label, np.nan),
            "probs": probs,
            "logpred": logpred,
        }

    def test_scores(self, r: int, rng) -> tuple[float, float]:
        """(test error, test log-likelihood) in original units for the epoch trace, scored by
        :mod:`bnnsweep.results`: RMSE for gaussian, error rate for probit/softmax, mean
        absolute deviation for counts."""
        from ...results import discrete_metrics, regression_metrics, to_original_units

        split = self.splits[r]
        pred = self.predict(r, split.x_test, split.y_test, rng)
        if self.likelihood == "gaussian":
            mean, var = to_original_units(split, pred["mean"], pred["var"])
            y = split.y_test * split.y_scale + split.y_mean
            scores = regression_metrics(y, mean, var)
            return scores["test_rmse"], scores["test_loglik"]
        scored = FitResult(
            pred["mean"], pred["var"], likelihood=self.likelihood,
            class_probs=pred.get("probs"), test_logpred=pred["logpred"],
        )  # fmt: skip
        scores = discrete_metrics(scored, split.y_test)
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
                for r in range(R):
                    trace_err[r, e], trace_ll[r, e] = self.test_scores(r, self.rngs[r])
            scores = (
                f": test error {np.mean(trace_err[:, e]):.4g}, test loglik "
                f"{np.mean(trace_ll[:, e]):.4g} (mean over {R} replicates)"
                if s.trace_test
                else ""
            )
            self.log(f"epoch {e + 1}/{s.epochs}{scores}")
        return [self._result(r, trace_err[r], trace_ll[r]) for r in range(R)]

    def _result(self, r: int, trace_err, trace_ll) -> FitResult:
        st, s, split, rng = self.state, self.settings, self.splits[r], self.rngs[r]
        test = self.predict(r, split.x_test, split.y_test, rng)
        train = self.predict(r, split.x_train, split.y_train, rng)
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
            "rejected_points": int(st.rejected_points[r]),
            "rejected_weight_updates": int(st.rejected_weights[r]),
            "rejected_noise_updates": int(st.rejected_noise[r]),
            "skipped_prior_sites": int(st.skipped_prior_sites[r]),
        }
        result.diagnostics.update(counts)
        result.diagnostics.update(
            n_weights=self.arch.n_weights,
            n_hidden_layers=len(self.arch.widths) - 2,
            noise_shape=float(st.noise_a[r]),
            noise_rate=float(st.noise_b[r]),
            prior_shape=float(st.prior_a[r]) if not self.ebp else float("nan"),
            prior_rate=float(st.prior_b[r]) if not self.ebp else float("nan"),
        )
        rejected = {k: v for k, v in counts.items() if v and k != "skipped_prior_sites"}
        if rejected:
            result.flag(
                "ok", "rejected updates: " + ", ".join(f"{k} {v}" for k, v in rejected.items())
            )
        if not (np.all(np.isfinite(test["mean"])) and np.all(np.isfinite(test["logpred"]))):
            result.flag("diverged", "non-finite test predictions")
        return result


def fit_many(splits, settings: ADFSettings, rngs, log=print) -> list[FitResult]:
    """Fit R replicates (splits, each with its own generator) as one vectorised batch."""
    return ADF(list(splits), settings, list(rngs), log).run()


def fit(split: Split, settings: ADFSettings, rng: np.random.Generator, log=print) -> FitResult:
    """Fit one split: ``fit_many`` with a batch of one."""
    return fit_many([split], settings, [rng], log)[0]
