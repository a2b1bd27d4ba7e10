"""One-dimensional regression playground of the lab.

Train small Bayesian networks in seconds and compare their predictive bands with a
Hamiltonian Monte Carlo reference.

* :mod:`core.regression.data`: presets (Blundell's curve, a gap, heteroscedastic noise) and
  the student's own points;
* :mod:`core.regression.likelihood`: fixed, learned or heteroscedastic Gaussian noise;
* :mod:`core.regression.variants`: the playground's methods, read from :mod:`core.methods`
  (BBB with a Gaussian or scale-mixture prior or LRT, MC dropout, a vmapped deep ensemble, a
  plain MLP, the samplers, SWAG, any new method package) and the HMC reference;
* :mod:`core.regression.settings`: the shared settings and each method's parameters;
* :mod:`core.regression.methods`: their networks, trained full-batch;
* :mod:`core.regression.hmc`: the NUTS reference posterior (pyro-ppl);
* :mod:`core.regression.metrics`: epistemic/aleatoric split and the numbers;
* :mod:`core.regression.study`: fits cached on disk by (data, method, settings).
"""

from core.regression.data import PRESETS, RegressionData, make_data, user_data
from core.regression.settings import FitSettings
from core.regression.study import RegressionFit, fit_jobs, fit_method, load_fit
from core.regression.variants import VARIANTS

__all__ = [
    "PRESETS",
    "FitSettings",
    "RegressionData",
    "RegressionFit",
    "fit_jobs",
    "fit_method",
    "load_fit",
    "make_data",
    "VARIANTS",
    "user_data",
]
