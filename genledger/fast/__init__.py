"""Speed only, decoding only: typed decoders and their guards, text checks, vector counts.

Each lever is proven equal to `genledger.parse` (the definition of correct) by tests.
"""
