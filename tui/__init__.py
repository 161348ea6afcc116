"""Provides the guided terminal UI of gpu-advisor (Textual): wizard, results, checklist and export."""
