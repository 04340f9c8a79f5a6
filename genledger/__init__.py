"""genledger: the books of an LLM data-generation run (engine; imports no Dagster)."""

__version__ = "0.1.0"
