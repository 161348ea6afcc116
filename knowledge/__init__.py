"""Provides gpu-advisor's knowledge files as package data (read through importlib.resources)."""
