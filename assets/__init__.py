"""Dagster assets: one per dataset file, and the stats JSON asset downstream of them."""
