"""`genledger monitor`: a live terminal dashboard of a stats JSON (state, render, loop)."""
