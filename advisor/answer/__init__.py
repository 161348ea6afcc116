"""Provides the answers: recommend, predict, the report and its export, scenarios and checklist lookups."""
