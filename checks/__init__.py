"""Quality rules: pandera schemas (`schemas`, `rules`) and the Dagster checks built on them.

`checks.rules` and `checks.schemas` import no Dagster: the engine uses them too, so the CLI,
the stats JSON and the Dagster asset checks all count with the same rules.
"""
