"""Building blocks shared by the registered methods, grouped by family (as BlackJAX's are):

- ``mcmc``: hybrid Monte Carlo over batches of chains, convergence diagnostics;
- ``evidence``: the Laplace evidence procedure, Monte Carlo chaining, its estimators and
  lambda schedules;
- ``variational``: Gamma hyper-posteriors and node removal for the variational methods;
- ``adf``: assumed density filtering (moments of ReLU layers, likelihood updates);
- ``ica``: variational Bayesian ICA with mixture-of-Gaussian sources and ARD (thesis §6.5);
- ``optimise``: quasi-Newton minimisation of the penalised error.

Nothing here registers a method; ``bnnsweep.methods`` holds one module per method and
imports from here, never the other way round.
"""
