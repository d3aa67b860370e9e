"""Assumed density filtering for ReLU networks (paper 004): moments of rectified Gaussians,
the forward and backward passes of moments, likelihood updates and prior refinement."""
