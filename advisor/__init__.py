"""Provides gpu-advisor's domain core: knowledge, memory, speed, cost, rules and ranked plans."""

__version__ = "0.1.0"
