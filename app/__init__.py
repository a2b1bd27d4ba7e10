"""Streamlit front end: the entry point (:mod:`app.main`) and shared UI (:mod:`app.ui`)."""
