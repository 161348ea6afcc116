"""Provides the question's vocabulary and how each input is checked: words, fields, bounds, units, errors.

The lowest stage: every other stage (the catalogue's own readers of user files included) checks input and
reports bad input with these, so nothing here imports another stage."""
