"""Markov chain Monte Carlo: hybrid Monte Carlo kernels and their diagnostics."""
