"""Studies that combine the engine, evaluation and data, cached on disk.

The cache is :mod:`core.storage.cache`. Studies: dataset evaluations, OOD tables, robustness and
pruning curves, training and prediction speed.
"""
