"""Model evidence: the Laplace evidence procedure, Monte Carlo chaining along a lambda
schedule, and the ratio, thermodynamic-integration and AIS estimators."""
