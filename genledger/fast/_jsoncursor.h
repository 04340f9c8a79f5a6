/* The JSON cursor the line scans share (`_chatline.c`, `_deltas.c`): where a scan is, space
 * skipped, a byte taken, and a `\u` escape read as orjson reads it. Included after
 * "_cmodule.h". */
#ifndef GENLEDGER_JSONCURSOR_H
#define GENLEDGER_JSONCURSOR_H

typedef struct {
    const byte *at;
    const byte *end;
} Cursor;

static inline void
skip_space(Cursor *c)
{
    while (c->at < c->end && (*c->at == ' ' || *c->at == '\t' || *c->at == '\n' || *c->at == '\r'))
        c->at++;
}

/* Takes the byte `b` after optional space; 0 when it is not next. */
static inline int
take(Cursor *c, byte b)
{
    skip_space(c);
    if (c->at < c->end && *c->at == b) {
        c->at++;
        return 1;
    }
    return 0;
}

/* The value of the 4 hex digits at `p`, -1 if one is not a hex digit. */
static long
hex4(const byte *p)
{
    long value = 0;
    for (int i = 0; i < 4; i++) {
        byte b = p[i];
        int digit = b >= '0' && b <= '9'   ? b - '0'
                    : b >= 'a' && b <= 'f' ? b - 'a' + 10
                    : b >= 'A' && b <= 'F' ? b - 'A' + 10
                                           : -1;
        if (digit < 0)
            return -1;
        value = value << 4 | digit;
    }
    return value;
}

/* The `\u` escape at `q` (its backslash) of a character from `lowest` up: its bytes (6, or 12
 * for a surrogate pair) and the character in `*code`; 0 for a lower character, bad hex or a
 * lone surrogate (orjson refuses the last two). */
static int
unicode_escape_from(const byte *q, const byte *end, long lowest, long *code)
{
    long high = end - q >= 6 ? hex4(q + 2) : -1;
    if (high < lowest || high < 0 || (high >= 0xDC00 && high <= 0xDFFF))
        return 0;
    if (high < 0xD800 || high > 0xDBFF) {
        *code = high;
        return 6;
    }
    if (end - q < 12 || q[6] != '\\' || q[7] != 'u')
        return 0;
    long low = hex4(q + 8);
    if (low < 0xDC00 || low > 0xDFFF)
        return 0;
    *code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
    return 12;
}

#endif
