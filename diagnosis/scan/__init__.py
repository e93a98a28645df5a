"""Find the lines a pattern matches in a large text without walking every line in Python.

Every pattern has a set of literals, one of which any match must contain (literals.py). One pass over the text's
bytes tells which of them occur and in which chunks (presence.py); the scanner then looks for each distinct literal
with `str.find` (C speed) in those chunks only, remembers the lines it occurs on, and runs the regex on those lines
only (scanner.py). A pattern whose literals are absent costs one substring search; most patterns are absent from
most logs.

The modules import each other one way: scanner -> presence -> literals.
"""
