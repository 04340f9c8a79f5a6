/* The common stream events read in C: what `StreamState.extend` needs of one event line (its
 * family, request id, whether it names a model, its delta text, reasoning and tool call
 * text), or that it is neutral (a row alone), read from the line's bytes without decoding it
 * into Python objects (`fast.deltas`).
 *
 * Five kinds of line are read (`K_` below): an OpenAI-style chat chunk (one choice of index 0
 * whose delta holds a content, a reasoning text, tool calls or nothing), Anthropic's events but a start,
 * an end and a tool's start (`content_block_delta` of a text, thinking or `partial_json`
 * piece, a signature, a block's stop, a ping), Cohere v2's likewise (`content-delta`...),
 * Bedrock ConverseStream's `contentBlockDelta` of a text or reasoning and `contentBlockStop`
 * (each the event's only key), an OpenAI Responses
 * event but the ones that settle a request (`response.output_text.delta`...), and a legacy
 * text completion chunk (one choice of index 0, no finish, no usage). Which texts tell a kind
 * (`told`, `settled`), which keys it may not pass over (`names`: the dotted paths its family
 * reads, its error keys, the keys that tell a family) and which keys of a tool call are no
 * part of its text (`noise`, `parse.streams.TOOL_NOISE`) come from the caller, derived from
 * the families in `fast.deltas`; each is stated here nowhere.
 *
 * Everything else returns None and the caller reads the line as before (orjson, then the
 * generated readers): a line that is not exactly one JSON object orjson decodes (bad UTF-8, a
 * lone surrogate, a control character in a string, a number with an exponent, nesting deeper
 * than `MAX_DEPTH`), a key with an escape, a key the scan reads given twice (or one of a tool
 * call's objects), a finish reason or usage that is not null, a choice of another index or
 * not one choice, and every key of `names`. A key the family reads nothing below is passed over, its value still
 * checked as JSON.
 *
 * No state lives outside a call: the module has no globals.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "_cmodule.h"
#include "_jsoncursor.h"

enum { SURE = 0, UNSURE = -1 };
enum { MAX_DEPTH = 32, MAX_DIGITS = 300, MAX_KEYS = 32 };
enum { K_CHAT, K_ANTHROPIC, K_COHERE, K_CONVERSE, K_RESPONSES, K_COMPLETION, KINDS };

typedef struct {
    const byte *start; /* after the opening quote */
    Py_ssize_t size;   /* up to the closing quote */
    int escaped;       /* holds a backslash */
} Span;

/* A value the scan reads: absent, null, or a string's span. */
typedef struct {
    int state; /* 0 absent, 1 null, 2 string */
    Span span;
} Text;

/* The `\u` escape at `q` (its backslash): its bytes (6, or 12 for a surrogate pair) and the
 * character in `*code`; 0 for bad hex or a lone surrogate (orjson refuses both). */
static int
unicode_escape(const byte *q, const byte *end, long *code)
{
    return unicode_escape_from(q, end, 0, code);
}

/* How many bytes from `p` are plain ASCII (neither a quote, a backslash, a control character
 * nor a byte of a UTF-8 sequence), found 16 at a time: texts and signatures are most of an
 * event's bytes. */
static inline Py_ssize_t
plain_ascii(const byte *p, const byte *end)
{
    const byte *start = p;
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(0x20);
    while (end - p >= 16) {
        __m128i here = _mm_loadu_si128((const __m128i *)p);
        /* a byte >= 0x80 is negative as signed: below 0x20 too, so one compare finds both */
        __m128i stop = _mm_or_si128(
            _mm_or_si128(_mm_cmpeq_epi8(here, quote), _mm_cmpeq_epi8(here, backslash)),
            _mm_cmplt_epi8(here, space));
        unsigned found = (unsigned)_mm_movemask_epi8(stop);
        if (found)
            return p - start + __builtin_ctz(found);
        p += 16;
    }
#else
    (void)end;
#endif
    return p - start;
}

/* A JSON string at the cursor: its span, its escapes and UTF-8 checked as orjson checks them
 * (plain ASCII passed by `plain_ascii`). */
static int
scan_string(Cursor *c, Span *s)
{
    skip_space(c);
    if (c->at >= c->end || *c->at != '"')
        return UNSURE;
    const byte *p = ++c->at, *end = c->end;
    s->start = p;
    s->escaped = 0;
    while (p < end) {
        p += plain_ascii(p, end);
        if (p >= end)
            break;
        byte b = *p;
        if (b == '"') {
            s->size = p - s->start;
            c->at = p + 1;
            return SURE;
        }
        if (b < 0x20)
            return UNSURE;
        if (b == '\\') {
            s->escaped = 1;
            if (p + 1 >= end)
                return UNSURE;
            if (p[1] == 'u') {
                long code;
                int size = unicode_escape(p, end, &code);
                if (!size)
                    return UNSURE;
                p += size;
                continue;
            }
            if (!strchr("\"\\/bfnrt", p[1]) || p[1] == '\0')
                return UNSURE;
            p += 2;
            continue;
        }
        if (b >= 0x80) {
            Py_ssize_t size = utf8_length(p, 0, end - p);
            if (!size)
                return UNSURE;
            p += size;
            continue;
        }
        p++;
    }
    return UNSURE;
}

/* A JSON number at the cursor, checked: no exponent (which may overflow a double: orjson
 * refuses infinity), at most MAX_DIGITS integer digits (orjson reads a longer int as a
 * double, up to its range). */
static int
skip_number(Cursor *c)
{
    const byte *p = c->at, *end = c->end;
    if (p < end && *p == '-')
        p++;
    const byte *digits = p;
    if (p < end && *p == '0')
        p++;
    else
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    if (p == digits || p - digits > MAX_DIGITS)
        return UNSURE;
    if (p < end && *p == '.') {
        const byte *fraction = ++p;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
        if (p == fraction)
            return UNSURE;
    }
    if (p < end && (*p == 'e' || *p == 'E'))
        return UNSURE;
    c->at = p;
    return SURE;
}

static int
literal(Cursor *c, const char *word, size_t size)
{
    if ((size_t)(c->end - c->at) < size || memcmp(c->at, word, size) != 0)
        return UNSURE;
    c->at += size;
    return SURE;
}

/* Any JSON value at the cursor, checked and passed over. */
static int
skip_value(Cursor *c, int depth)
{
    Span s;
    skip_space(c);
    if (c->at >= c->end || depth > MAX_DEPTH)
        return UNSURE;
    switch (*c->at) {
    case '"':
        return scan_string(c, &s);
    case '{':
        c->at++;
        if (take(c, '}'))
            return SURE;
        for (;;) {
            if (scan_string(c, &s) || !take(c, ':') || skip_value(c, depth + 1))
                return UNSURE;
            if (take(c, ','))
                continue;
            return take(c, '}') ? SURE : UNSURE;
        }
    case '[':
        c->at++;
        if (take(c, ']'))
            return SURE;
        for (;;) {
            if (skip_value(c, depth + 1))
                return UNSURE;
            if (take(c, ','))
                continue;
            return take(c, ']') ? SURE : UNSURE;
        }
    case 't':
        return literal(c, "true", 4);
    case 'f':
        return literal(c, "false", 5);
    case 'n':
        return literal(c, "null", 4);
    default:
        return skip_number(c);
    }
}

static inline int
is_null(Cursor *c)
{
    skip_space(c);
    return literal(c, "null", 4) == SURE;
}

/* A string or null at the cursor into `t` (given twice: unsure). */
static int
text_value(Cursor *c, Text *t)
{
    if (t->state)
        return UNSURE;
    if (is_null(c)) {
        t->state = 1;
        return SURE;
    }
    t->state = 2;
    return scan_string(c, &t->span);
}

static inline int
key_is(const Span *k, const char *name)
{
    size_t size = strlen(name);
    return !k->escaped && (size_t)k->size == size && memcmp(k->start, name, size) == 0;
}

/* Whether the family reads a path through key `k` of the object at `level` (dotted, "" at
 * the top): `names` holds each such path's dotted prefixes, as bytes. */
static int
refused(PyObject *names, const char *level, const Span *k)
{
    size_t depth = strlen(level);
    Py_ssize_t want = (Py_ssize_t)(depth ? depth + 1 : 0) + k->size;
    Py_ssize_t count = PyTuple_GET_SIZE(names);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *name = PyTuple_GET_ITEM(names, i);
        const char *text = PyBytes_AS_STRING(name);
        if (PyBytes_GET_SIZE(name) != want)
            continue;
        if (depth && (memcmp(text, level, depth) != 0 || text[depth] != '.'))
            continue;
        if (memcmp(text + (depth ? depth + 1 : 0), k->start, (size_t)k->size) == 0)
            return 1;
    }
    return 0;
}

/* What one line gives: its kind, id, model, text and reasoning. */
typedef struct {
    int kind;
    Text id, model, text, reasoning, tools;
    const byte *calls; /* a chat delta's tool calls (not null): flattened by `tool_text` */
    unsigned seen;     /* the objects read below the top (`once`): each at most once */
} Delta;

/* The objects below the top a scan reads: one given twice (orjson keeps the last) is unsure. */
enum { O_DELTA = 1, O_MESSAGE = 2, O_CONTENT = 4, O_REASONING = 8, O_BLOCK = 16 };

static inline int
once(Delta *d, unsigned object)
{
    if (d->seen & object)
        return 0;
    d->seen |= object;
    return 1;
}

/* An unknown key of the object at `level`: skipped, unless the family reads below it. */
static int
other_key(Cursor *c, PyObject *names, const char *level, const Span *k)
{
    if (k->escaped || refused(names, level, k))
        return UNSURE;
    return skip_value(c, 2);
}

/* The members of an object at the cursor, each handed to `member` (its key, the cursor at its
 * value); an escaped key is unsure. */
typedef int (*Member)(Cursor *c, const Span *k, Delta *d, PyObject *names, const char *level);

static int
members(Cursor *c, Member member, Delta *d, PyObject *names, const char *level)
{
    if (!take(c, '{'))
        return UNSURE;
    if (take(c, '}'))
        return SURE;
    for (;;) {
        Span k;
        if (scan_string(c, &k) || k.escaped || !take(c, ':') || member(c, &k, d, names, level))
            return UNSURE;
        if (take(c, ','))
            continue;
        return take(c, '}') ? SURE : UNSURE;
    }
}

/* --- an OpenAI-style chat chunk ------------------------------------------------------------ */

static int
chat_delta(Cursor *c, const Span *k, Delta *d, PyObject *names, const char *level)
{
    if (key_is(k, "content"))
        return text_value(c, &d->text);
    if (key_is(k, "reasoning_content") || key_is(k, "reasoning")) {
        /* the first of the two giving a value is the reasoning: both given, unsure */
        return text_value(c, &d->reasoning);
    }
    if (key_is(k, "tool_calls")) {
        if (d->calls || is_null(c))
            return d->calls ? UNSURE : SURE;
        skip_space(c);
        d->calls = c->at;
        return skip_value(c, 3);
    }
    if (key_is(k, "role")) /* it tells an opener, which only `feed` asks */
        return skip_value(c, 3);
    return other_key(c, names, level, k);
}

static int
chat_choice(Cursor *c, const Span *k, Delta *d, PyObject *names, const char *level)
{
    (void)level;
    if (key_is(k, "index")) {
        skip_space(c);
        if (c->at >= c->end || *c->at != '0')
            return UNSURE;
        c->at++;
        return c->at < c->end && (*c->at == '.' || (*c->at >= '0' && *c->at <= '9') ||
                                  *c->at == 'e' || *c->at == 'E')
                   ? UNSURE
                   : SURE;
    }
    if (key_is(k, "delta"))
        return once(d, O_DELTA) ? members(c, chat_delta, d, names, "choices.delta") : UNSURE;
    if (key_is(k, "finish_reason"))
        return is_null(c) ? SURE : UNSURE;
    return other_key(c, names, "choices", k);
}

/* a legacy text completion chunk's one choice */
static int
completion_choice(Cursor *c, const Span *k, Delta *d, PyObject *names, const char *level)
{
    if (key_is(k, "text"))
        return text_value(c, &d->text);
    if (key_is(k, "index") || key_is(k, "finish_reason"))
        return chat_choice(c, k, d, names, level);
    return other_key(c, names, "choices", k);
}

/* --- Anthropic's and Cohere's deltas, Bedrock's contentBlockDelta ----------------------------- */

static int
anthropic_delta(Cursor *c, const Span *k, Delta *d, PyObject *names, const char *level)
{
    if (key_is(k, "text"))
        return text_value(c, &d->text);
    if (key_is(k, "thinking"))
        return text_value(c, &d->reasoning);
    if (key_is(k, "partial_json")) /* a tool call's piece, as text */
        return text_value(c, &d->tools);
    return other_key(c, names, level, k);
}

/* Anthropic's `content_block` of a block's start: none of its keys the family reads (a tool
 * call's `name`) may be there. */
static int
anthropic_block(Cursor *c, const Span *k, Delta *d, PyObject *names, const char *level)
{
    (void)d;
    return other_key(c, names, level, k);
}

static int
cohere_content(Cursor *c, const Span *k, Delta *d, PyObject *names, const char *level)
{
    if (key_is(k, "text"))
        return text_value(c, &d->text);
    if (key_is(k, "thinking"))
        return text_value(c, &d->reasoning);
    return other_key(c, names, level, k);
}

static int
cohere_message(Cursor *c, const Span *k, Delta *d, PyObject *names, const char *level)
{
    if (key_is(k, "content"))
        return once(d, O_CONTENT) ? members(c, cohere_content, d, names, "delta.message.content")
                                  : UNSURE;
    return other_key(c, names, level, k);
}

static int
cohere_delta(Cursor *c, const Span *k, Delta *d, PyObject *names, const char *level)
{
    if (key_is(k, "message"))
        return once(d, O_MESSAGE) ? members(c, cohere_message, d, names, "delta.message") : UNSURE;
    return other_key(c, names, level, k);
}

static int
converse_reasoning(Cursor *c, const Span *k, Delta *d, PyObject *names, const char *level)
{
    if (key_is(k, "text"))
        return text_value(c, &d->reasoning);
    return other_key(c, names, level, k);
}

static int
converse_delta(Cursor *c, const Span *k, Delta *d, PyObject *names, const char *level)
{
    if (key_is(k, "text"))
        return text_value(c, &d->text);
    if (key_is(k, "reasoningContent"))
        return once(d, O_REASONING) ? members(c, converse_reasoning, d, names,
                                              "contentBlockDelta.delta.reasoningContent")
                                    : UNSURE;
    return other_key(c, names, level, k);
}

static int
converse_block(Cursor *c, const Span *k, Delta *d, PyObject *names, const char *level)
{
    if (key_is(k, "delta"))
        return once(d, O_BLOCK) ? members(c, converse_delta, d, names, "contentBlockDelta.delta")
                                : UNSURE;
    return other_key(c, names, level, k);
}

/* --- the line ------------------------------------------------------------------------------ */

enum { T_TYPE, T_OBJECT, T_ID, T_MODEL, T_CHOICES, T_DELTA, T_BLOCK, T_USAGE, T_START, TOPS };
static const char *const TOP_KEYS[TOPS] = {
    "type", "object", "id", "model", "choices", "delta", "contentBlockDelta", "usage",
    "content_block",
};

/* The line's top-level members: the ones a kind reads kept (their keys, their values'
 * starts), the others checked as JSON and kept (their keys) for the kind's names. */
typedef struct {
    const byte *value[TOPS];
    Span key[TOPS];
    Span others[MAX_KEYS];
    int count;
} Tops;

static int
tops_of(Cursor *c, Tops *t)
{
    memset(t->value, 0, sizeof(t->value));
    t->count = 0;
    if (!take(c, '{') || take(c, '}'))
        return UNSURE;
    for (;;) {
        Span k;
        if (scan_string(c, &k) || k.escaped || !take(c, ':'))
            return UNSURE;
        skip_space(c);
        int found = -1;
        for (int i = 0; i < TOPS && found < 0; i++)
            if (key_is(&k, TOP_KEYS[i]))
                found = i;
        if (found >= 0) {
            if (t->value[found])
                return UNSURE;
            t->value[found] = c->at;
            t->key[found] = k;
        }
        else if (t->count >= MAX_KEYS)
            return UNSURE;
        else
            t->others[t->count++] = k;
        if (skip_value(c, 1))
            return UNSURE;
        if (take(c, ','))
            continue;
        if (!take(c, '}'))
            return UNSURE;
        skip_space(c);
        return c->at == c->end ? SURE : UNSURE;
    }
}

static inline int
bytes_are(PyObject *b, const byte *at, Py_ssize_t size)
{
    return PyBytes_GET_SIZE(b) == size && memcmp(PyBytes_AS_STRING(b), at, (size_t)size) == 0;
}

/* The kind the text of top-level key `key` (its value at `at`) tells: by `told`, tuples
 * (key, text, kind, exact) of bytes, bytes, int, bool (not exact: a prefix, then `settled`
 * holds the texts of that prefix left to the readers: a start's, an end's); -1 for none. */
static int
told_kind(const char *key, const byte *at, const byte *end, PyObject *told, PyObject *settled)
{
    Cursor c = {at, end};
    Span s;
    if (!at || scan_string(&c, &s) || s.escaped)
        return -1;
    size_t size = strlen(key);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(told); i++) {
        PyObject *entry = PyTuple_GET_ITEM(told, i);
        PyObject *name = PyTuple_GET_ITEM(entry, 0), *text = PyTuple_GET_ITEM(entry, 1);
        if (!bytes_are(name, (const byte *)key, (Py_ssize_t)size))
            continue;
        int exact = PyTuple_GET_ITEM(entry, 3) == Py_True;
        Py_ssize_t want = PyBytes_GET_SIZE(text);
        if (exact ? !bytes_are(text, s.start, s.size)
                  : s.size < want || memcmp(PyBytes_AS_STRING(text), s.start, (size_t)want) != 0)
            continue;
        if (!exact)
            for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(settled); j++)
                if (bytes_are(PyTuple_GET_ITEM(settled, j), s.start, s.size))
                    return -1;
        return (int)PyLong_AsLong(PyTuple_GET_ITEM(entry, 2));
    }
    return -1;
}

/* The kind's keys: those it reads itself (below); the others are passed over unless its
 * family reads below them. */
static const int READ[KINDS][TOPS] = {
    [K_CHAT] = {[T_OBJECT] = 1, [T_ID] = 1, [T_MODEL] = 1, [T_CHOICES] = 1, [T_USAGE] = 1},
    [K_ANTHROPIC] = {[T_TYPE] = 1, [T_DELTA] = 1, [T_START] = 1},
    [K_COHERE] = {[T_TYPE] = 1, [T_ID] = 1, [T_DELTA] = 1},
    [K_CONVERSE] = {[T_BLOCK] = 1},
    [K_RESPONSES] = {[T_TYPE] = 1},
    [K_COMPLETION] = {[T_OBJECT] = 1, [T_ID] = 1, [T_MODEL] = 1, [T_CHOICES] = 1, [T_USAGE] = 1},
};

static int
delta_of(const byte *data, Py_ssize_t size, PyObject *names, PyObject *told,
         PyObject *settled, Delta *d)
{
    Cursor c = {data, data + size};
    Tops t;
    memset(d, 0, sizeof(*d));
    d->kind = -1;
    if (tops_of(&c, &t))
        return UNSURE;
    const byte *end = data + size;
    int kind;
    /* as `parse.streams.event_family`: a told text first (type, then object), else the one
     * family the scan reads untold, Bedrock's (its block the event's only key) */
    if (t.value[T_TYPE])
        kind = told_kind("type", t.value[T_TYPE], end, told, settled);
    else if (t.value[T_OBJECT])
        kind = told_kind("object", t.value[T_OBJECT], end, told, settled);
    else if (t.value[T_BLOCK] && t.count == 0)
        kind = K_CONVERSE;
    else if (t.count == 1 && key_is(&t.others[0], "contentBlockStop")) {
        /* Bedrock's block stop, its only key: nothing of it is read (a row alone) */
        for (int i = 0; i < TOPS; i++)
            if (t.value[i])
                return UNSURE;
        d->kind = K_CONVERSE;
        return SURE;
    }
    else
        kind = -1;
    if (kind < 0 || kind >= KINDS)
        return UNSURE;
    PyObject *own = PyTuple_GET_ITEM(names, kind);
    for (int i = 0; i < TOPS; i++)
        if (t.value[i] && !READ[kind][i] && (kind == K_CONVERSE || refused(own, "", &t.key[i])))
            return UNSURE;
    for (int i = 0; i < t.count; i++)
        if (refused(own, "", &t.others[i]))
            return UNSURE;
    if (READ[kind][T_ID] && t.value[T_ID]) {
        c.at = t.value[T_ID];
        if (text_value(&c, &d->id))
            return UNSURE;
    }
    if (READ[kind][T_MODEL] && t.value[T_MODEL]) {
        c.at = t.value[T_MODEL];
        if (text_value(&c, &d->model))
            return UNSURE;
    }
    if (kind == K_CHAT || kind == K_COMPLETION) {
        if (t.value[T_USAGE]) {
            c.at = t.value[T_USAGE];
            if (!is_null(&c))
                return UNSURE;
        }
        /* exactly one choice: no trailing usage (`!choices[]`), no other index */
        c.at = t.value[T_CHOICES];
        Member choice = kind == K_CHAT ? chat_choice : completion_choice;
        if (!c.at || !take(&c, '[') || members(&c, choice, d, own, "choices") ||
            !take(&c, ']'))
            return UNSURE;
    }
    else if (kind != K_RESPONSES) {
        c.at = kind == K_CONVERSE ? t.value[T_BLOCK] : t.value[T_DELTA];
        Member read = kind == K_ANTHROPIC ? anthropic_delta
                      : kind == K_COHERE  ? cohere_delta
                                          : converse_block;
        const char *level = kind == K_CONVERSE ? "contentBlockDelta" : "delta";
        if (c.at && members(&c, read, d, own, level))
            return UNSURE;
        c.at = kind == K_ANTHROPIC ? t.value[T_START] : NULL;
        if (c.at && members(&c, anthropic_block, d, own, "content_block"))
            return UNSURE;
    }
    d->kind = kind;
    return SURE;
}

/* The bytes a JSON string's span spells, written at `out` (room for the span's size: a
 * spelling is never longer than its escapes); how many. Escapes checked by `scan_string`. */
static Py_ssize_t
spell(const Span *s, char *out)
{
    Py_ssize_t n = 0;
    const byte *p = s->start, *end = s->start + s->size;
    if (!s->escaped) {
        memcpy(out, p, (size_t)s->size);
        return s->size;
    }
    while (p < end) {
        if (*p != '\\') {
            out[n++] = (char)*p++;
            continue;
        }
        byte e = p[1];
        if (e != 'u') {
            out[n++] = e == 'b' ? '\b' : e == 'f' ? '\f' : e == 'n' ? '\n' : e == 'r' ? '\r'
                       : e == 't' ? '\t' : (char)e;
            p += 2;
            continue;
        }
        long code;
        p += unicode_escape(p, end, &code);
        if (code < 0x80)
            out[n++] = (char)code;
        else if (code < 0x800) {
            out[n++] = (char)(0xC0 | code >> 6);
            out[n++] = (char)(0x80 | (code & 0x3F));
        }
        else if (code < 0x10000) {
            out[n++] = (char)(0xE0 | code >> 12);
            out[n++] = (char)(0x80 | (code >> 6 & 0x3F));
            out[n++] = (char)(0x80 | (code & 0x3F));
        }
        else {
            out[n++] = (char)(0xF0 | code >> 18);
            out[n++] = (char)(0x80 | (code >> 12 & 0x3F));
            out[n++] = (char)(0x80 | (code >> 6 & 0x3F));
            out[n++] = (char)(0x80 | (code & 0x3F));
        }
    }
    return n;
}

/* The str a JSON string's span spells. */
static PyObject *
string_of(const Span *s)
{
    if (!s->escaped)
        return PyUnicode_DecodeUTF8((const char *)s->start, s->size, "strict");
    char *out = PyMem_Malloc(s->size ? (size_t)s->size : 1);
    if (!out)
        return PyErr_NoMemory();
    PyObject *text = PyUnicode_DecodeUTF8(out, spell(s, out), "strict");
    PyMem_Free(out);
    return text;
}

enum { TOOL_DEPTH = 8 }; /* `parse.streams._tool_text`'s: deeper objects and lists give "" */
enum { TOOL_KEYS = 16 };  /* keys of an object in a tool call (more: unsure) */

/* `parse.streams._tool_text` of the JSON value at the cursor, its bytes written at `*out`:
 * every string in order but under a key of `noise` (how a piece is sent), objects and lists
 * deeper than TOOL_DEPTH passed over; a key with an escape is unsure. */
static int
tool_text(Cursor *c, int depth, PyObject *noise, char **out)
{
    Span s;
    skip_space(c);
    if (c->at >= c->end)
        return UNSURE;
    byte b = *c->at;
    if (b == '"') {
        if (scan_string(c, &s))
            return UNSURE;
        *out += spell(&s, *out);
        return SURE;
    }
    if ((b != '{' && b != '[') || depth > TOOL_DEPTH)
        return skip_value(c, depth + 1);
    c->at++;
    if (take(c, b == '{' ? '}' : ']'))
        return SURE;
    Span keys[TOOL_KEYS]; /* an object's keys: one given twice is unsure (orjson keeps the last) */
    int count = 0;
    for (;;) {
        int passed = 0;
        if (b == '{') {
            if (scan_string(c, &s) || s.escaped || !take(c, ':') || count >= TOOL_KEYS)
                return UNSURE;
            for (int i = 0; i < count; i++)
                if (keys[i].size == s.size && memcmp(keys[i].start, s.start, (size_t)s.size) == 0)
                    return UNSURE;
            keys[count++] = s;
            for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(noise) && !passed; i++)
                passed = bytes_are(PyTuple_GET_ITEM(noise, i), s.start, s.size);
        }
        if (passed ? skip_value(c, depth + 1) : tool_text(c, depth + 1, noise, out))
            return UNSURE;
        if (take(c, ','))
            continue;
        return take(c, b == '{' ? '}' : ']') ? SURE : UNSURE;
    }
}

/* The str of a string value, None for null or absent (`keep_empty`: "" kept as "", else
 * None, as a fold keeps an id or a model). */
static PyObject *
value_of(const Text *t, int keep_empty)
{
    if (t->state != 2 || (!keep_empty && t->span.size == 0))
        Py_RETURN_NONE;
    return string_of(&t->span);
}

/* Whether `o` is a tuple of `size` items (any size: -1), each passing `check`. */
static int
tuple_of(PyObject *o, Py_ssize_t size, int (*check)(PyObject *))
{
    if (!PyTuple_Check(o) || (size >= 0 && PyTuple_GET_SIZE(o) != size))
        return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(o); i++)
        if (!check(PyTuple_GET_ITEM(o, i)))
            return 0;
    return 1;
}

static int
is_bytes(PyObject *o)
{
    return PyBytes_Check(o);
}

static int
is_names(PyObject *o)
{
    return tuple_of(o, -1, is_bytes);
}

static int
is_told(PyObject *o)
{
    return PyTuple_Check(o) && PyTuple_GET_SIZE(o) == 4 && PyBytes_Check(PyTuple_GET_ITEM(o, 0)) &&
           PyBytes_Check(PyTuple_GET_ITEM(o, 1)) && PyLong_Check(PyTuple_GET_ITEM(o, 2)) &&
           PyBool_Check(PyTuple_GET_ITEM(o, 3));
}

/* The text of a chat delta's tool calls (`tool_text`), None for "" (no call's text); NULL with
 * an error set, or with none when the calls hold what the scan is unsure of. */
static PyObject *
calls_of(const Delta *d, const byte *end, PyObject *noise)
{
    char *out = PyMem_Malloc((size_t)(end - d->calls) + 1), *at = out;
    if (!out)
        return PyErr_NoMemory();
    Cursor c = {d->calls, end};
    PyObject *text = NULL;
    if (tool_text(&c, 0, noise, &at) == SURE) {
        text = at == out ? Py_NewRef(Py_None) : PyUnicode_DecodeUTF8(out, at - out, "strict");
    }
    PyMem_Free(out);
    return text;
}

static PyObject *
result(const Delta *d, const byte *end, PyObject *noise)
{
    /* an id holding nothing (or "") and a model alike are none, as a fold keeps them */
    int model = d->model.state == 2 && d->model.span.size > 0;
    PyObject *id = value_of(&d->id, 0);
    PyObject *text = id ? value_of(&d->text, 1) : NULL;
    PyObject *reasoning = text ? value_of(&d->reasoning, 1) : NULL;
    PyObject *tools = !reasoning ? NULL
                      : d->calls ? calls_of(d, end, noise)
                                 : value_of(&d->tools, 0); /* "" is no call's text */
    if (!tools) {
        Py_XDECREF(id);
        Py_XDECREF(text);
        Py_XDECREF(reasoning);
        if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
            return NULL;
        PyErr_Clear(); /* not one the scan let through: the readers decide, as for any line */
        Py_RETURN_NONE;
    }
    return Py_BuildValue("(iNONNN)", d->kind, id, model ? Py_True : Py_False, text, reasoning,
                         tools);
}

static PyObject *
delta(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *names, *told, *settled, *noise;
    Py_buffer line;
    if (!PyArg_ParseTuple(args, "OOOOy*", &names, &told, &settled, &noise, &line))
        return NULL;
    PyObject *out;
    Delta d;
    if (!tuple_of(names, KINDS, is_names) || !tuple_of(told, -1, is_told) ||
        !tuple_of(settled, -1, is_bytes) || !tuple_of(noise, -1, is_bytes)) {
        PyErr_SetString(PyExc_TypeError, "delta(names, told, settled, noise, line): see fast.deltas");
        out = NULL;
    }
    else if (delta_of(line.buf, line.len, names, told, settled, &d) != SURE)
        out = Py_NewRef(Py_None);
    else
        out = result(&d, (const byte *)line.buf + line.len, noise);
    PyBuffer_Release(&line);
    return out;
}

static PyMethodDef methods[] = {
    {"delta", delta, METH_VARARGS,
     "delta(names, told, settled, noise, line) -> (kind, id, model named, text, reasoning, tools)"
     " or None"},
    {NULL, NULL, 0, NULL},
};

GENLEDGER_MODULE(_deltas, "The common stream delta events read in C (genledger.fast.deltas).")
