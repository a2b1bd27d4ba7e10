"""The bandits' compiled kernel: tiny reward networks trained a step per call (:mod:`.tiny`)."""
