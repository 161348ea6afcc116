"""Provides ownership and operations planning: TCO, buy versus rent, the operations plan and launch
artefacts."""
