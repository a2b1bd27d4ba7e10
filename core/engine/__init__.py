"""The engine: layers, priors, model kinds, the Monte-Carlo sampler, ELBO estimators, training."""
