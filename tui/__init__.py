"""Provides the guided Textual UI of gpu-advisor (rendering and input only; the core lives in advisor/)."""
