"""Facts to numbers: mergeable tallies, ids, the stats JSON, rates and the stderr summary."""
