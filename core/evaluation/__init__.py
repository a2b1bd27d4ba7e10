"""Pure evaluation of models and predictions: uncertainty, metrics, attacks, pruning (no disk)."""
