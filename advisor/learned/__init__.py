"""Provides what is learned from measured runs: training and serving efficiency, their fits and runtime."""
