"""Calibration, "I don't know" rejection and dataset shift of checkpoints, cached on disk.

Each checkpoint is rated on its own task, the dataset it was trained on
(:func:`core.storage.checkpoints.checkpoint_dataset`: MNIST for the shipped digit models). Three
parts, one module each, each computed once per checkpoint content and settings
(:func:`core.storage.cache.cache_entry`, study folder :data:`STUDY`):

* **Temperature** (:mod:`.temperature`): T fitted by NLL on a validation split of the task's
  *training* set (:mod:`.validation`: the last 5,000 images of the seeded
  permutation that ``python -m core train NAME --train-subset 55000`` trains on the first
  55,000 of), never on the test set. The fit acts on the predictive mean, so it applies to
  every model kind (:mod:`core.evaluation.calibration`).
* **Calibration and rejection on the test set** (:mod:`.rejection`): from the cached
  full test-set evaluation (:func:`core.studies.evaluations.evaluate_dataset`, for MNIST shared
  with the Draw page's "I don't know" thresholds): accuracy, ECE, MCE, NLL and Brier score
  before and after temperature scaling, reliability bins, and per uncertainty score the area
  under the accuracy–coverage curve and the operating point of the 99th-percentile rule.
* **Dataset shift** (:mod:`.shift`): a seeded test subset under each shift of
  :data:`core.evaluation.shift.SHIFTS` at each severity of its grid, one cache entry per
  (checkpoint, shift, severity, settings): accuracy, ECE, MCE, NLL, Brier, ECE and NLL after
  temperature scaling, the mean of every score, and the fraction rejected by the 99th-percentile
  rule fixed on the clean test set.

The shipped checkpoints learn from the first 55,000 training images
(:data:`core.catalogue.TRAIN_SUBSET`), so the validation split is unseen and the fit is a
held-out one. A model trained on all 60,000 (a user's, say) has seen it, and its fitted
temperature is not a held-out fit; :func:`.temperature.validation_seen` detects this (from the
checkpoint's recorded ``train_subset`` when there is one, else because the validation NLL is far
below the test NLL) and the page and CLI say so. :mod:`.summary` computes every part at once for the
command line.
"""

CACHE_VERSION = 1  # bump when what is computed or stored changes
STUDY = "calibration"
