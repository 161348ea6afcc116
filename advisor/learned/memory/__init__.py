"""Provides the memory model's validation against published and measured peaks
(benchmarks/memory_validation.csv)."""
