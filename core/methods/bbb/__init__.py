"""Bayes by Backprop (Blundell et al. 2015): a mean-field Gaussian posterior over every weight.

Trained by Adam on the negative ELBO, S weight draws per step, by one of the interchangeable
estimators of :mod:`core.engine.objective` (local reparameterisation, Kingma et al. 2015, as an
option); each pass at prediction draws fresh weights.
"""

from __future__ import annotations

from core.engine.objective import KL_SCHEDULES
from core.methods.base import PRIOR_SETTINGS, BanditRole, Method, Setting
from core.methods.bbb.model import BayesMLP

IMPL_TITLES = {
    "sequential": "one sampled network after another (slowest)",
    "vmap": "all sampled networks at once (vmap)",
    "vmap_lrt": "all at once, sampling each layer's outputs (local reparameterisation)",
    "fused": "one fused step per sample (fastest with one sample)",
}
SCHEDULE_TITLES = {"uniform": "uniform (1/M per minibatch)", "blundell": "Blundell (2^(M−i))"}


METHOD = Method(
    kind="bbb",
    order=1,
    title="Bayes by Backprop (BBB)",
    summary="A Gaussian for every weight, fitted by maximising the ELBO (Blundell et al. 2015).",
    model_class=BayesMLP,
    settings=(
        *PRIOR_SETTINGS,
        Setting(
            "beta",
            "KL weight β",
            "Multiplies the KL term of the ELBO. β = 1 is the full ELBO; the shipped BBB models "
            "use β = 0.1 (a tempered posterior): with β = 1 on a short budget the network "
            "under-fits.",
            0.1,
            options=(0.001, 0.01, 0.03, 0.1, 0.3, 1.0),
        ),
        Setting(
            "init_sigma",
            "Initial posterior σ",
            "Standard deviation every weight starts with. Too big and the network has a hard "
            "time starting: the weight noise drowns the signal.",
            1e-3,
            options=(1e-4, 1e-3, 1e-2, 0.05, 0.1, 0.3, 1.0),
        ),
        Setting(
            "n_samples",
            "Samples S per step",
            "Monte-Carlo samples of the weights per training step; the cost grows about "
            "linearly with S.",
            1,
            low=1,
            high=20,
        ),
        Setting(
            "impl",
            "Implementation",
            "How the S samples are computed (see the Training speed page). Local "
            "reparameterisation samples pre-activations instead of weights: less variance, "
            "faster for S > 1.",
            "fused",
            options=tuple(IMPL_TITLES),
            titles=IMPL_TITLES,
        ),
        Setting(
            "kl_schedule",
            "KL schedule",
            "How the KL term is spread over an epoch's M minibatches: equally, or Blundell's "
            "2^(M−i)/(2^M − 1), heavy on the first minibatches.",
            "uniform",
            options=KL_SCHEDULES,
            titles=SCHEDULE_TITLES,
        ),
    ),
    curve_kl=True,
    bandit=BanditRole(agent="BBB Thompson", draws=True, native=True),
)
