"""Provides the reusable widgets of the guided UI."""
