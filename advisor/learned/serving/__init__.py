"""Serving learned from measured runs: speed-of-light physics, learned efficiencies, queueing, evaluation."""
