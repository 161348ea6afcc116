"""Provides calibration on the user's own runs: a multiplier on the base prediction per GPU and stack (or
engine), shrunk toward 1 as far as the number, spread and distance of the runs justify."""
