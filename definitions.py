"""The composition root: the one place that assembles genledger's Dagster `Definitions`."""

import dagster as dg

defs = dg.Definitions()
