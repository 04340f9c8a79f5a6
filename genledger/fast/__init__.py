"""Speed only: typed decoders, text checks, vector counts, forked pieces.

Each lever is proven equal to `genledger.parse` (the definition of correct) by tests.
"""
