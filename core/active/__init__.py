"""Pool-based active learning (Gal, Islam & Ghahramani 2017).

Acquisition functions (:mod:`.acquisition`), the resumable loop (:mod:`.loop`, a round's
optimiser terms in :mod:`.minibatch`), cached runs and curves over seeds (:mod:`.study`), the
live comparison (:mod:`.live`) and the papers' presets (:mod:`.protocols`).
"""
