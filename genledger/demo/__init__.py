"""`genledger demo`: a simulated generation run growing in a temp folder, with the Dagster UI."""
