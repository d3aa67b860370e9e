"""bnnsweep: Bayesian neural-network inference and model evidence, swept reproducibly."""

__version__ = "0.1.0"
