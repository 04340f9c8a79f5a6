"""Lines to record facts: formats, token counts and the token table.

This is the definition of correct; `genledger.fast` only makes it quicker.
"""
