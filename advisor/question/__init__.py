"""Provides the question's vocabulary and how each input is checked: words, the field registry (each input's
kind, bound, words and parser, from which the CLI and the wizard are derived), units, errors.

The lowest stage: every other stage (the catalogue's own readers of user files included) checks input and
reports bad input with these, so nothing here imports another stage."""
