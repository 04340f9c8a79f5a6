"""The quality rules: each stated once as a column expression (`catalogue`).

Evaluated row by row (`rows`, every refresh) and as pandera models (`models`, the Dagster
layer's schemas); a property test proves the two agree.
"""
