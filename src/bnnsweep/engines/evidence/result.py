"""What every evidence estimator returns: ln Z with an honest standard error, its cost, and
the diagnostics that decide whether the number can be trusted.

An estimator is a function ``estimate(target, settings, rng, log=None) -> EvidenceEstimate``
over a target of the chaining protocol (``engines.evidence.chaining``: ``phi_one``,
``potential``, ``gibbs``, ``sample_prior`` and, where available, ``prior_energy_one``), for
the tempered family p_lambda(w) propto exp(-lambda phi(w) - E_0(w)) with Z(0) = 1, so that
ln Z = ln Z(1) = ln p(D).

``log_z_se`` is the standard deviation of ``log_z`` over independent runs of the same
computation (different random streams), estimated from independent replicates within the
run; a status other than ``ok`` says the estimate or its error cannot be relied on, and
``reason`` says why in one line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

STATUSES = ("ok", "not_converged", "diverged")


@dataclass
class EvidenceEstimate:
    log_z: float
    log_z_se: float
    n_grad_evals: int
    status: str = "ok"
    reason: str = ""
    diagnostics: dict = field(default_factory=dict)

    def flag(self, status: str, reason: str) -> None:
        """Mark the estimate: the first non-ok status stays, reasons accumulate."""
        if status not in STATUSES:
            raise ValueError(f"unknown status {status!r}; valid: {STATUSES}")
        if self.status == "ok":
            self.status = status
        self.reason = f"{self.reason}; {reason}" if self.reason else reason
