"""Entry point: ``streamlit run app/main.py`` from the repository root (``bnn-lab serve`` runs it).

``core`` and ``app`` import from the lab's install (``pip install -e .``, which
``scripts/setup.sh`` does), since ``streamlit run`` puts only ``app/`` on the path.

Sets up the page, the shared sidebar (:func:`app.ui.render_sidebar`) and navigation over the
pages in :data:`PAGES`. Importing this module (e.g. ``from app.main import PAGES``) draws nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from core import settings

REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class PageInfo:
    """A page of the lab.

    Attributes:
        file: The page's file name under ``pages/``.
        title: Title in the navigation.
        icon: Streamlit icon, e.g. ``":material/home:"``.
        description: One line on what the page shows (listed on the home page).
        models: Whether the page compares the sidebar's models (then the sidebar shows the
            model picker and the number of Monte-Carlo samples).
    """

    file: str
    title: str
    icon: str
    description: str
    models: bool = False

    @property
    def path(self) -> Path:
        """Absolute path of the page's file."""
        return REPO_ROOT / "pages" / self.file


# The one list of pages, in navigation order; the first is the home page.
# To add a page: append a PageInfo here (the home page lists and links it automatically).
PAGES = [
    PageInfo(
        "home.py",
        "Home",
        ":material/home:",
        "What this lab is and what each page shows.",
        models=True,  # where a teacher picks the models before class
    ),
    PageInfo(
        "draw.py",
        "Draw a digit",
        ":material/draw:",
        "Draw, upload or pick a digit and watch each model's prediction, its spread across "
        'sampled networks, and whether it says "I don\'t know".',
        models=True,
    ),
    PageInfo(
        "timing.py",
        "Training speed",
        ":material/timer:",
        "Time per training epoch against the number of Monte-Carlo samples for the sequential, "
        "vmap and vmap + LRT implementations; compare saved runs across machines.",
    ),
    PageInfo(
        "pruning.py",
        "Pruning and weights",
        ":material/content_cut:",
        "Remove the weights with the lowest signal-to-noise ratio and watch the test error hold; "
        "densities of SNR values and of trained weights (Blundell et al. 2015).",
    ),
    PageInfo(
        "adversarial.py",
        "Adversarial examples",
        ":material/bolt:",
        "Slide the FGSM ε and compare how BNN, MLP and MC dropout lose accuracy and gain "
        "uncertainty; naive vs EOT gradients, transfer from the MLP, targeted attacks.",
        models=True,
    ),
    PageInfo(
        "ood.py",
        "Out-of-distribution explorer",
        ":material/travel_explore:",
        "Show the models clothes, Japanese characters, letters, other alphabets or noise and "
        "see whether their uncertainty rises; score histograms, ROC curves, AUROC per score.",
        models=True,
    ),
    PageInfo(
        "regression.py",
        "Regression playground",
        ":material/show_chart:",
        "Train BBB, MC dropout, a deep ensemble and an MLP on 1-D data in seconds (or on points "
        "you draw) and compare their uncertainty bands with an exact HMC posterior.",
    ),
    PageInfo(
        "train.py",
        "Train",
        ":material/model_training:",
        "Train a BBB, MLP, MC dropout, ensemble or Laplace network on MNIST or Fashion-MNIST "
        "from the browser: live ELBO, NLL, KL and error curves, cancel, a shared job queue; the "
        "result joins the model list.",
    ),
    PageInfo(
        "calibration.py",
        "Calibration and shift",
        ":material/balance:",
        "Reliability diagrams and temperature scaling, accuracy when the most uncertain inputs "
        "are rejected, and accuracy, calibration and uncertainty under rotation, noise, blur and "
        "low contrast.",
        models=True,
    ),
    PageInfo(
        "bandits.py",
        "Contextual bandits",
        ":material/casino:",
        "An agent that must decide: Thompson sampling with a BBB reward model against greedy "
        "and ε-greedy networks on the mushroom and wheel bandits; stored long runs and live ones.",
    ),
    PageInfo(
        "active.py",
        "Active learning",
        ":material/label:",
        "Let the network choose which digits to label: BALD, entropy, variation ratio and "
        "spread against random picking, stored curves and a live run.",
    ),
    PageInfo(
        "classroom.py",
        "Class drawings",
        ":material/groups:",
        "The drawings students sent from the Draw page, live: gallery, each model's accuracy, "
        'confusion matrix, reliability and "I don\'t know"s; export and clear the set.',
        models=True,
    ),
]


# On a touch screen every control is at least 44 px tall (a finger's width).
TOUCH_CSS = """<style>
@media (pointer: coarse) {
  .stButton button, .stDownloadButton button, .stFormSubmitButton button,
  [data-testid="stPopover"] button, [data-testid="stExpander"] summary,
  [data-baseweb="select"] > div, [data-testid="stNumberInputContainer"],
  [data-baseweb="input"] { min-height: 44px; }
  [data-testid="stRadio"] label, [data-testid="stCheckbox"] label { min-height: 44px; }
}
</style>"""
THREADS_ENV = "BNN_TORCH_THREADS"
DEFAULT_THREADS = 1


def thread_policy() -> int:
    """Apply torch's intra-op thread count chosen once at start-up to this script run.

    The value is decided once per server process (``BNN_TORCH_THREADS``, else
    :data:`DEFAULT_THREADS`) and every script run sets that same value before any model work:
    with OpenMP the setting belongs to the calling thread, and Streamlit runs sessions in their
    own threads. Since no page ever sets another value (or saves and restores one), overlapping
    sessions cannot leave the server on a wrong count. One thread per computation is the
    default: the pages' per-input work (one drawing, a few hundred passes) is too small to
    split, and sessions then run side by side on the cores instead of fighting over them
    (Draw-page rerun with 3 models × 100 passes on 2 busy cores: 44 ms median with 1 thread,
    339 ms with torch's default of 2). One-off cached evaluations take longer; a single-user
    machine can set ``BNN_TORCH_THREADS`` higher.

    Returns:
        The thread count applied.
    """
    import streamlit as st
    import torch

    @st.cache_resource
    def chosen(requested: str) -> int:
        return int(requested) if requested.isdigit() and int(requested) > 0 else DEFAULT_THREADS

    threads = chosen(settings.text(THREADS_ENV))
    torch.set_num_threads(threads)
    return threads


def main() -> None:
    """Draw the app: page setup, thread policy, navigation, the shared sidebar, then the page.

    Presenter mode (``?present=1``, :mod:`app.share`) starts with the sidebar collapsed; the
    "Link to this view" control is drawn in the sidebar after the page.
    """
    import streamlit as st

    from app import share
    from app.ui import render_sidebar
    from core.jobs import training_queue

    st.set_page_config(
        page_title="Bayesian neural network lab",
        page_icon="🧠",
        layout="wide",
        initial_sidebar_state="collapsed" if share.presenter() else "auto",
    )
    st.html(TOUCH_CSS)
    thread_policy()
    training_queue()  # this server's workers: jobs queued before a restart, or by any replica
    pages = [
        st.Page(p.path, title=p.title, icon=p.icon, default=i == 0) for i, p in enumerate(PAGES)
    ]
    page = st.navigation(pages)
    share.start_run(page.url_path)
    render_sidebar(pick_models=next(p.models for p in PAGES if p.title == page.title))
    link_slot = st.sidebar.container()
    try:
        page.run()
    finally:  # after the page's widgets have written the URL; skipped if the page stopped
        share.finish_run(link_slot)


if __name__ == "__main__":
    main()
