"""The fleet planner: a team's whole portfolio of jobs sized, simulated and priced on one cluster."""
