"""Pure-PyTorch engine of the Bayesian neural network lab (never imports streamlit)."""

__version__ = "0.1.0"
