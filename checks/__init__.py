"""The Dagster asset checks, built on the engine's rule catalogue and pandera models.

The rules themselves live in `genledger.rules` (no Dagster there): the CLI, the stats JSON and
these checks all count with the same code.
"""
