"""Provides the widgets the screens are built from; they render and collect input, nothing more."""
