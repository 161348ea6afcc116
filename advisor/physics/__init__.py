"""Provides the physical model: memory per GPU, the speed of light of a step, the network, goodput."""
