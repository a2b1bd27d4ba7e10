"""Studies that combine the engine, evaluation and data, cached on disk through
:mod:`core.storage.cache`: dataset evaluations, OOD tables, robustness and pruning curves,
training and prediction speed."""
