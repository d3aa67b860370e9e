"""Where each published claim stands: the registry of claims (:mod:`.registry`), their
declarations (:mod:`.declared`, one module per topic) and the table of ``bnnsweep claims``
(:mod:`.table`).

Layering: ``cli -> claims -> figures -> results``; the figures never import the claims.
"""

from .registry import Claim, Ours, declare, metric, registered, verdict

__all__ = ["Claim", "Ours", "declare", "metric", "registered", "verdict"]
