/* The answer keys' whitespace collapse in C: `genledger.parse.answer.collapsed_escaped`,
 * the definition, byte for byte at a byte scan's pace.
 *
 * An answer's text arrives escaped as orjson writes it inside a JSON string. Its whitespace
 * is a space or one of the escapes `\n`, `\t`, `\r`, `\f`, `\u000b` (a vertical tab: orjson
 * has no short escape for it). Each run of them becomes one space, and a run at either end
 * goes. Three cases, as in the definition:
 *   - no backslash and no double space: the input object itself (nothing to do, not even
 *     the ends: callers strip them first and test `body is inner`);
 *   - a backslash but no escaped backslash (`\\`): every backslash starts an escape, so the
 *     scan below reads the bytes exactly as the definition's regex does;
 *   - an escaped backslash: the definition decodes the JSON, collapses the text and writes
 *     it again. On orjson's spelling that is the same scan, with `\\` read as one unit (so
 *     the `n` of `\\n` is a letter). Text outside that spelling (a `\/`, a `\u0041`, an
 *     invalid UTF-8 byte...) is handed to the definition, `fallback`, which decides it (or
 *     raises) exactly as it would have; the scan never has to guess.
 * The result is the input object when nothing changed, else a new bytes object.
 *
 * No state lives outside a call: the module has no globals, and the only thing held across
 * the scan is the caller's buffer, released on every path.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h> /* x86-64's baseline: every such CPU has it */
#endif

#include "_cmodule.h"

/* The length of the whitespace (a space or a whitespace escape) at `at`, 0 if none. Every
 * read is checked against `size`: an escape cut by the buffer's end is no escape. */
static Py_ssize_t
space_at(const byte *data, Py_ssize_t at, Py_ssize_t size)
{
    if (data[at] == ' ')
        return 1;
    if (data[at] != '\\' || size - at < 2)
        return 0;
    switch (data[at + 1]) {
    case 'n': case 't': case 'r': case 'f':
        return 2;
    case 'u':
        return (size - at >= 6 && memcmp(data + at + 2, "000b", 4) == 0) ? 6 : 0;
    default:
        return 0;
    }
}

/* The length of the text unit at `at` that is not whitespace: an escaped backslash is one
 * unit of two bytes, so the letter after it never starts an escape; any other byte is one
 * unit (the rest of an escape such as `\"` or `\u0001` holds no whitespace to find). */
static Py_ssize_t
word_at(const byte *data, Py_ssize_t at, Py_ssize_t size)
{
    return (data[at] == '\\' && size - at >= 2 && data[at + 1] == '\\') ? 2 : 1;
}

/* The end of the run of whitespace starting at `at` (at `at` itself if none starts there). */
static Py_ssize_t
run_end(const byte *data, Py_ssize_t at, Py_ssize_t size)
{
    Py_ssize_t step;
    while (at < size && (step = space_at(data, at, size)) != 0)
        at += step;
    return at;
}

/* Whether data[at] is one space between two words (the usual case, tested before the
 * general run: the byte after it is neither a space nor a backslash, so no run goes on). */
static inline int
lone_space(const byte *data, Py_ssize_t at, Py_ssize_t size)
{
    return data[at] == ' ' && at > 0 && size - at >= 2 && data[at + 1] != ' '
           && data[at + 1] != '\\';
}

#if defined(__SSE2__)
/* Which of the 16 bytes `here` (at offset `at` of the text; `next` the same bytes moved on
 * by one) need work, as bits: a backslash, or a space before a space or a backslash, or a
 * space that starts the text. */
static inline unsigned
work_mask(__m128i here, __m128i next, Py_ssize_t at)
{
    const __m128i space = _mm_set1_epi8(' '), backslash = _mm_set1_epi8('\\');
    unsigned spaces = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(here, space));
    unsigned slashes = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(here, backslash));
    unsigned before = (unsigned)_mm_movemask_epi8(
        _mm_or_si128(_mm_cmpeq_epi8(next, space), _mm_cmpeq_epi8(next, backslash)));
    return slashes | (spaces & before) | (at == 0 ? spaces & 1u : 0u);
}
#endif

/* How many bytes from `at` need no work (words and lone spaces), found 16 at a time: a byte
 * needs work if it is a backslash, or a space before a space or a backslash, or a space
 * that starts the text. Stops at the first byte that needs work, so it never splits an
 * escape; the scalar step decides that byte (it may be a lone space after all). Each load
 * reads at + 1 ... at + 16, so the loop runs only while 17 bytes are left. */
static inline Py_ssize_t
plain_span(const byte *data, Py_ssize_t at, Py_ssize_t size)
{
    Py_ssize_t start = at;
#if defined(__SSE2__)
    while (size - at >= 17) {
        __m128i here = _mm_loadu_si128((const __m128i *)(data + at));
        __m128i next = _mm_loadu_si128((const __m128i *)(data + at + 1));
        unsigned work = work_mask(here, next, at);
        if (work)
            return at - start + __builtin_ctz(work);
        at += 16;
    }
#else
    (void)data;
    (void)size;
#endif
    return at - start;
}

enum { BACKSLASH = 1, ESCAPED_BACKSLASH = 2, DOUBLE_SPACE = 4 };

/* Which of a backslash, an escaped backslash (two backslashes in a row) and a double space
 * the text holds, 16 bytes at a time (the case to take; libc's memmem looks for two bytes
 * at ~1 byte a cycle, this at several). Reads at + 1 ... at + 16 while 17 bytes are left. */
static int
holds(const byte *data, Py_ssize_t size)
{
    int found = 0;
    Py_ssize_t at = 0;
#if defined(__SSE2__)
    const __m128i space = _mm_set1_epi8(' '), backslash = _mm_set1_epi8('\\');
    for (; size - at >= 17; at += 16) {
        __m128i here = _mm_loadu_si128((const __m128i *)(data + at));
        __m128i next = _mm_loadu_si128((const __m128i *)(data + at + 1));
        unsigned slashes = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(here, backslash));
        unsigned spaces = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(here, space));
        unsigned spaces_next = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(next, space));
        unsigned slashes_next = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(next, backslash));
        found |= (slashes ? BACKSLASH : 0) | ((slashes & slashes_next) ? ESCAPED_BACKSLASH : 0)
                 | ((spaces & spaces_next) ? DOUBLE_SPACE : 0);
        if (found == (BACKSLASH | ESCAPED_BACKSLASH | DOUBLE_SPACE))
            return found;
    }
#endif
    for (; at < size; at++) {
        byte next = at + 1 < size ? data[at + 1] : 0;
        if (data[at] == '\\')
            found |= BACKSLASH | (next == '\\' ? ESCAPED_BACKSLASH : 0);
        else if (data[at] == ' ' && next == ' ')
            found |= DOUBLE_SPACE;
    }
    return found;
}

/* Where the collapse first changes the text, -1 if it changes nothing: at a run of
 * whitespace other than one space between two words, or at a run at either end. Before
 * that point the result is the input, so nothing is allocated for the common text.
 * `*pair` is set where an escaped backslash was stepped over (every pair of backslashes
 * starts at a unit the scan steps over: no whitespace escape holds a second backslash). */
static Py_ssize_t
first_change(const byte *data, Py_ssize_t size, int *pair)
{
    Py_ssize_t at = 0;
    while (at < size) {
        at += plain_span(data, at, size);
        if (at >= size)
            break;
        byte c = data[at];
        if (c != ' ' && c != '\\') {
            at++;
            continue;
        }
        if (lone_space(data, at, size)) {
            at++;
            continue;
        }
        Py_ssize_t end = run_end(data, at, size);
        if (end == at) {
            Py_ssize_t step = word_at(data, at, size);
            *pair |= step == 2;
            at += step;
            continue;
        }
        if (at == 0 || end == size || end - at != 1 || c != ' ')
            return at;
        at = end;
    }
    return -1;
}

/* The collapse of data[from:] written at out[written:] (out holds `size` bytes, and the
 * result never grows: each run becomes at most one byte). Returns the result's length.
 * Words and lone spaces go 16 bytes at a time, each block stored whole and the length
 * moved on to the first byte that needs work (a byte at a time through libc's memcpy cost
 * more than the scan on texts with a line break every few words). The store never passes
 * the input's end: the output is never longer than the input read, and a block is read
 * only while 17 bytes are left. */
static Py_ssize_t
collapse_from(const byte *data, Py_ssize_t size, Py_ssize_t from, byte *out,
              Py_ssize_t written, int *pair)
{
    Py_ssize_t at = from;
    while (at < size) {
#if defined(__SSE2__)
        while (size - at >= 17) {
            __m128i here = _mm_loadu_si128((const __m128i *)(data + at));
            __m128i next = _mm_loadu_si128((const __m128i *)(data + at + 1));
            unsigned work = work_mask(here, next, at);
            _mm_storeu_si128((__m128i *)(out + written), here);
            if (work) {
                int plain = __builtin_ctz(work);
                written += plain;
                at += plain;
                break;
            }
            written += 16;
            at += 16;
        }
        if (at >= size)
            break;
#endif
        byte c = data[at];
        if ((c != ' ' && c != '\\') || lone_space(data, at, size)) {
            out[written++] = c;
            at++;
            continue;
        }
        Py_ssize_t end = run_end(data, at, size);
        if (end == at) {
            Py_ssize_t step = word_at(data, at, size);
            *pair |= step == 2;
            out[written] = c;
            if (step == 2)
                out[written + 1] = data[at + 1];
            written += step;
            at += step;
            continue;
        }
        /* one space between two words; none before the first or after the last */
        if (written > 0 && end < size)
            out[written++] = ' ';
        at = end;
    }
    return written;
}

static int
is_hex(byte c)
{
    /* lower case only: orjson writes `\u001f`, never `\u001F` */
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static int
hex_value(byte c)
{
    return c <= '9' ? c - '0' : c - 'a' + 10;
}

/* The length of the escape at data[at] (a backslash) if orjson writes it so, 0 if not:
 * `\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, and `\u00XX` for the other control characters
 * only (orjson writes every other character as its UTF-8 bytes, and never `\/`). */
static Py_ssize_t
orjson_escape(const byte *data, Py_ssize_t at, Py_ssize_t size)
{
    if (size - at < 2)
        return 0;
    switch (data[at + 1]) {
    case '"': case '\\': case 'b': case 'f': case 'n': case 'r': case 't':
        return 2;
    case 'u':
        break;
    default:
        return 0;
    }
    if (size - at < 6 || data[at + 2] != '0' || data[at + 3] != '0' || !is_hex(data[at + 4])
        || !is_hex(data[at + 5]))
        return 0;
    int code = hex_value(data[at + 4]) * 16 + hex_value(data[at + 5]);
    if (code >= 0x20 || code == '\b' || code == '\t' || code == '\n' || code == '\f'
        || code == '\r')
        return 0; /* a character orjson writes raw or with its short escape */
    return 6;
}

/* Whether the text is as orjson writes a string's inside: no raw quote or control
 * character, only orjson's escapes, well-formed UTF-8. */
static int
orjson_spelled(const byte *data, Py_ssize_t size)
{
    Py_ssize_t at = 0;
    while (at < size) {
        byte c = data[at];
        Py_ssize_t step = 1;
        if (c == '\\')
            step = orjson_escape(data, at, size);
        else if (c >= 0x80)
            step = utf8_length(data, at, size);
        else if (c < 0x20 || c == '"')
            step = 0;
        if (step == 0)
            return 0;
        at += step;
    }
    return 1;
}

/* collapsed_escaped(fallback, body): the definition's result for `body` (bytes or any
 * contiguous buffer); `fallback` is the definition, called for what only it can decide. */
static PyObject *
collapsed_escaped(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "collapsed_escaped(fallback, body) takes 2 arguments");
        return NULL;
    }
    PyObject *fallback = args[0], *body = args[1];
    Py_buffer view;
    if (PyObject_GetBuffer(body, &view, PyBUF_SIMPLE) < 0) {
        /* not a contiguous buffer: the definition copies it, or raises its own error */
        PyErr_Clear();
        return PyObject_CallOneArg(fallback, body);
    }
    const byte *data = (const byte *)view.buf;
    Py_ssize_t size = view.len;
    int found = holds(data, size);
    if (found == 0) { /* no backslash, no double space: the input, its ends as they are */
        PyBuffer_Release(&view);
        return Py_NewRef(body);
    }
    if ((found & ESCAPED_BACKSLASH) && !orjson_spelled(data, size)) {
        PyBuffer_Release(&view);
        return PyObject_CallOneArg(fallback, body);
    }
    int pair = 0; /* known already: `found` */
    Py_ssize_t from = first_change(data, size, &pair);
    if (from < 0) {
        PyBuffer_Release(&view);
        return Py_NewRef(body);
    }
    PyObject *result = PyBytes_FromStringAndSize(NULL, size);
    if (result == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    byte *out = (byte *)PyBytes_AS_STRING(result);
    memcpy(out, data, (size_t)from);
    Py_ssize_t length = collapse_from(data, size, from, out, from, &pair);
    PyBuffer_Release(&view);
    if (_PyBytes_Resize(&result, length) < 0)
        return NULL; /* it has released `result` */
    return result;
}

/* The key of the text at data[0:size] (its inside, without quotes) that needs no stripping:
 * `hash` (xxh3_64_intdigest) of its collapse, less 2^63; None when the collapse is empty;
 * NULL with `*undecided` set when only the definition can tell (the caller's fallback). */
static PyObject *
inner_key(PyObject *hash, const byte *data, Py_ssize_t size, int *undecided)
{
    /* No first pass for the case (`holds`): a text without a backslash or a double space,
     * whose ends are no space, changes nowhere, and an escaped backslash, which asks for
     * orjson's spelling, is noted by the scans themselves. */
    int pair = 0;
    Py_ssize_t from = first_change(data, size, &pair), length = size;
    PyObject *text = NULL;
    if (from >= 0) {
        text = PyBytes_FromStringAndSize(NULL, size);
        if (text == NULL)
            return NULL;
        byte *out = (byte *)PyBytes_AS_STRING(text);
        memcpy(out, data, (size_t)from);
        length = collapse_from(data, size, from, out, from, &pair);
    }
    if (pair && !orjson_spelled(data, size)) {
        Py_XDECREF(text);
        *undecided = 1;
        return NULL;
    }
    if (from < 0) /* nothing to collapse: hashed in place, through a view of the caller's bytes */
        text = PyMemoryView_FromMemory((char *)data, size, PyBUF_READ);
    else if (length == 0) {
        Py_DECREF(text);
        Py_RETURN_NONE;
    }
    else if (_PyBytes_Resize(&text, length) < 0)
        return NULL;
    if (text == NULL)
        return NULL;
    PyObject *digest = PyObject_CallOneArg(hash, text);
    Py_DECREF(text);
    if (digest == NULL)
        return NULL;
    unsigned long long unsigned_key = PyLong_AsUnsignedLongLong(digest);
    Py_DECREF(digest);
    if (unsigned_key == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    /* less 2^63: the signed value an Int64 column holds (`genledger.parse.answer.SIGN`) */
    return PyLong_FromLongLong((long long)(unsigned_key - (1ULL << 63)));
}

/* spelled_key(fallback, hash, data): `genledger.fast.answerkeys.key_of_spelled` in one
 * call, for a JSON string's bytes (quotes included) as orjson spells them: when neither end
 * of its inside is whitespace, its collapse is hashed without a slice, a Python step or a
 * bytes object where nothing collapses; `fallback` (the Python steps) takes the rest. */
static PyObject *
spelled_key(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "spelled_key(fallback, hash, data) takes 3 arguments");
        return NULL;
    }
    PyObject *fallback = args[0], *hash = args[1], *data = args[2];
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        return PyObject_CallOneArg(fallback, data);
    }
    const byte *bytes = (const byte *)view.buf;
    Py_ssize_t size = view.len;
    int undecided = 1;
    PyObject *key = NULL;
    /* as the definition: no space or backslash first, no space last, no escape ending it */
    if (size > 3 && bytes[1] != ' ' && bytes[1] != '\\' && bytes[size - 2] != ' '
        && bytes[size - 3] != '\\') {
        undecided = 0;
        key = inner_key(hash, bytes + 1, size - 2, &undecided);
    }
    PyBuffer_Release(&view);
    if (undecided)
        return PyObject_CallOneArg(fallback, data);
    return key;
}

static PyMethodDef methods[] = {
    {"collapsed_escaped", (PyCFunction)(void (*)(void))collapsed_escaped, METH_FASTCALL,
     "collapsed_escaped(fallback, body): genledger.parse.answer._collapsed_escaped in C; "
     "`fallback` (the definition) decides texts outside orjson's spelling."},
    {"spelled_key", (PyCFunction)(void (*)(void))spelled_key, METH_FASTCALL,
     "spelled_key(fallback, hash, data): genledger.fast.answerkeys.key_of_spelled in C; "
     "`fallback` (its Python steps) decides what the scan cannot."},
    {NULL, NULL, 0, NULL},
};

GENLEDGER_MODULE(_collapse, "The answer keys' whitespace collapse (genledger.parse.answer) in C.")
