"""Provides the screens of the guided UI."""
