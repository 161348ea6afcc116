"""Provides the gpu-advisor command line (argparse only at import: heavy modules load per command)."""
