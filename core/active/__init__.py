"""Pool-based active learning (Gal, Islam & Ghahramani 2017).

Acquisition functions, the resumable loop and cached curves over seeds.
"""
