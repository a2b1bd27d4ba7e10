"""One-dimensional regression playground of the lab.

Train small Bayesian networks in seconds and compare their predictive bands with a
Hamiltonian Monte Carlo reference.

* :mod:`core.regression.data`: presets (Blundell's curve, a gap, heteroscedastic noise) and
  the student's own points;
* :mod:`core.regression.likelihood`: fixed, learned or heteroscedastic Gaussian noise;
* :mod:`core.regression.methods`: BBB (Gaussian or scale-mixture prior, LRT), MC dropout, a
  vmapped deep ensemble and a plain MLP, built from :mod:`core.engine`'s model kinds;
* :mod:`core.regression.hmc`: the NUTS reference posterior (pyro-ppl);
* :mod:`core.regression.metrics`: epistemic/aleatoric split and the numbers;
* :mod:`core.regression.study`: fits cached on disk by (data, method, settings).
"""

from core.regression.data import PRESETS, RegressionData, make_data, user_data
from core.regression.methods import METHODS, FitSettings
from core.regression.study import RegressionFit, fit_jobs, fit_method, load_fit

__all__ = [
    "METHODS",
    "PRESETS",
    "FitSettings",
    "RegressionData",
    "RegressionFit",
    "fit_jobs",
    "fit_method",
    "load_fit",
    "make_data",
    "user_data",
]
