"""Variational building blocks: Gamma hyper-posteriors and NRD node removal."""
