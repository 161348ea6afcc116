"""Provides the search: candidate plans for training and serving, each priced, under the user's limits."""
