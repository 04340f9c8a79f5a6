"""Synthetic records for the demo, the benchmarks and the tests: one generator of each format.

`records` writes one record of a format from the counts it is given; `corpus` draws realistic
sizes and texts and lays out whole corpora (`benchmarks/corpus.py`); `tree` writes the small
finished run the tests share.
"""
