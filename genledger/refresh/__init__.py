"""One refresh: per-dataset state, atomic writes, scanning files, collecting the stats.

`scan` is the one place that chooses the fast or the general path.
"""
