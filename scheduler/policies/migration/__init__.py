"""Migration policies and the convergence schedule they describe."""
