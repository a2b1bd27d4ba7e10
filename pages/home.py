"""Home: what a Bayesian neural network is, and a link to every page of the lab."""

import streamlit as st

from app.main import PAGES

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
the weights). For comparison the lab also has a plain **MLP**, which gives one fixed answer,
and an **MC dropout** network, which samples networks by randomly switching off units.

Pick the models to compare and the number of samples in the sidebar; every page uses them.
"""
)

st.subheader("Pages")
for page in PAGES[1:]:
    st.page_link(page.path, label=page.title, icon=page.icon)
    st.caption(page.description)
