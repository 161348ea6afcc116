"""Provides the screens of the terminal UI: wizard, results, checklist, and the dialogs."""
