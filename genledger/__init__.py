"""genledger: the books of an LLM data-generation run (engine; imports no Dagster)."""

__version__ = "0.1.0"

from genledger import codecache

codecache.install()  # before any of the package's dataclasses is made
