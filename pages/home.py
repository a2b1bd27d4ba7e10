"""Home: what a Bayesian neural network is, every method side by side, a link to every page."""

import pandas as pd
import streamlit as st

from app.figures import show_table
from app.main import PAGES
from core.studies.comparison import comparison_table, load_comparison, score_table, times_note

st.title("Bayesian neural network lab")

st.markdown(
    """
An ordinary neural network learns **one** value for each of its weights, so it always gives
one answer, and it gives it just as firmly for a scribble as for a clean digit.

A **Bayesian neural network** learns a whole *distribution* for each weight instead: a range of
values that all explain the training data reasonably well. The networks here are trained with
*Bayes by Backprop* (Blundell et al., 2015). To classify an image we draw many networks from
that distribution (the *Monte-Carlo samples* chosen in the sidebar), let each one vote, and
look at the spread of their answers:

- when the sampled networks **agree**, the model is confident;
- when they **disagree**, the model is telling us it does not know, which is exactly what we
  want on inputs unlike anything it was trained on.

Two summaries of this spread appear throughout the lab: the **predictive entropy** (how
uncertain the averaged prediction is) and the **mutual information** (how much the sampled
networks disagree with each other, the part of the uncertainty that comes from not knowing
the weights). For comparison the lab also has a plain **MLP**, which gives one fixed answer;
**MC dropout** networks, which sample networks by randomly switching off units (one trained
with the usual objective, one with the α-divergence energy of Li & Gal); a **deep ensemble**
of five independently trained networks, whose "samples" are its members; and a **Laplace
approximation**, a Gaussian around the trained MLP's last layer fitted after training.

Pick the models to compare and the number of samples in the sidebar; the pages that compare
models use them.
"""
)

st.subheader("Every method on one evaluation")
result = load_comparison()
if result is None:
    st.info("This copy of the lab has no stored comparison of the methods.")
else:
    table = comparison_table(result)
    show_table(pd.DataFrame.from_dict(table, orient="index").rename_axis("method"), grid=False)
    settings = result["settings"]
    st.caption(
        f"MNIST test set (10,000 images, {settings['n_samples']} passes). OOD: "
        f"{settings['ood_inputs']:,} images of each set and of MNIST, "
        f"{settings['ood_samples']} passes, split in two halves at random. Each method's "
        "uncertainty score for a set was chosen on the first half (the one that told that set "
        "from MNIST best there); the AUROC shown is measured on the other half, which the "
        "choice never saw, so a lucky score cannot flatter it. FGSM on "
        f"{settings['attack_inputs']:,} test images, EOT with k = {settings['eot_k']} passes "
        "per gradient for stochastic methods. Measured on "
        f"{result['device']}, {result['date'][:10]}{times_note(result)}."
    )
    with st.expander("Which uncertainty score each method used for the OOD columns"):
        show_table(
            pd.DataFrame.from_dict(score_table(result), orient="index").rename_axis("method"),
            grid=False,
        )
        st.caption(
            "Chosen on the first half of the images only, but still for each set: in practice "
            "nobody says in advance what the strange inputs will look like, so a method that "
            "needs a different score for each kind would not know which one to use."
        )

st.subheader("Pages")
for page in PAGES[1:]:
    st.page_link(page.path, label=page.title, icon=page.icon)
    st.caption(page.description)

st.subheader("Links for a lecture")
st.markdown(
    """
Every page keeps its settings in the address bar, so a link opens exactly the view it was
copied from ("Link to this view" at the bottom of the sidebar). Two flags help on a projector:
`present=1` collapses the sidebar and enlarges text and figures, and `hide=` followed by
control keys, comma-separated (e.g. `hide=sidebar_models,ood_dataset`), hides those controls
while their values from the link still apply. A value in a link that does not fit (an unknown
model, a number out of range) is ignored with a note and the default is used.
"""
)
