"""The node probe (`gpu-advisor probe`): measures this machine's operation table with PyTorch, which is
imported only inside the functions that measure (torch is an optional extra, never a dependency)."""
