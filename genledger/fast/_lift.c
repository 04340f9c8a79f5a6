/* The lift of a line's long id arrays in C: `genledger.fast.lift._key_arrays` and its
 * `_counts` / `_mask`, the definition, byte for byte without a Python step an array.
 *
 * `lift_keys(content, keys, min_span, max_looked)` finds the values of `keys` (JSON keys
 * with their quotes, all ending in the same five bytes, such as `_ids"`) by that ending,
 * and replaces each long flat integer array among them by its stand-in, as the definition
 * does; it returns the new line, or None when nothing was lifted or the line spells the
 * stand-in's mark `\u0001` itself.
 *
 * An array's bytes are checked in one pass, 64 at a time (SSE2, x86-64's baseline), by the
 * definition's rules rewritten so that each looks only backwards, at most two bytes: every
 * byte a digit, a comma, a space or a minus; with `, ` separators a space exactly after each
 * comma, with `,` none at all; no empty element (`,,` / `, ,`); a minus neither after a digit
 * or a minus nor before a comma, space or minus; no integer starting with `0` then a digit.
 * Each 64-byte block carries its last two bytes' classes into the next, the array's `[`
 * stands before its first byte, and a last short block is read from a zero-padded copy
 * whose padding is masked off. The count is the commas plus one. A 0/1 array written as a
 * mask template (`0,1,...` or `0, 1, ...`) is counted first with its ones, as `_mask` does.
 *
 * No state lives outside a call: the module has no globals; the caller's buffers are
 * released on every path.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h> /* x86-64's baseline: every such CPU has it */
#endif

#include "_cmodule.h"

enum { ENDING = 5, MAX_KEYS = 16, NO_ONES = -1 };
static const char MARK[] = "\\u0001"; /* how a JSON text spells a stand-in's first character */
#define MARK_SIZE 6

/* The set bits of a word without the `popcnt` instruction (not in x86-64's baseline: the
 * builtin would be a library call each block). */
static inline Py_ssize_t
ones_of(uint64_t x)
{
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return (Py_ssize_t)((x * 0x0101010101010101ULL) >> 56);
}

static int
is_digit(byte c)
{
    return c >= '0' && c <= '9';
}

/* `_mask`: (n, ones) when the array's `size` bytes at `p` are all `0` or `1` elements
 * written `0,1` or `0, 1` throughout; 0 if not. */
static int
mask_counts(const byte *p, Py_ssize_t size, Py_ssize_t *n, Py_ssize_t *ones)
{
    if (size < 3 || p[1] != ',' || (p[0] != '0' && p[0] != '1'))
        return 0;
    Py_ssize_t step = p[2] == ' ' ? 3 : 2;
    if ((size + step - 1) % step)
        return 0;
    static const byte pattern[3] = {'0', ',', ' '};
    Py_ssize_t found = 0;
    for (Py_ssize_t k = 0, phase = 0; k < size; k++) {
        byte c = p[k];
        if (phase == 0) {
            if (c != '0' && c != '1')
                return 0;
            found += c == '1';
        }
        else if (c != pattern[phase])
            return 0;
        if (++phase == step)
            phase = 0;
    }
    *n = (size + step - 1) / step;
    *ones = found;
    return 1;
}

/* The classes of 64 bytes as bit masks (bit k: byte k). */
typedef struct {
    uint64_t digit, comma, space, minus, zero, other;
} Classes;

#if defined(__SSE2__)
/* The classes of the 16 bytes at `at`, or'ed into `k` at bit `shift`. */
static inline void
classes_16(const byte *at, Classes *k, int shift)
{
    const __m128i block = _mm_loadu_si128((const __m128i *)at);
    const __m128i shifted = _mm_sub_epi8(block, _mm_set1_epi8('0'));
    /* unsigned: byte - '0' <= 9 */
    const __m128i digits = _mm_cmpeq_epi8(_mm_min_epu8(shifted, _mm_set1_epi8(9)), shifted);
    k->digit |= (uint64_t)(unsigned)_mm_movemask_epi8(digits) << shift;
    k->comma |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(block, _mm_set1_epi8(',')))
                << shift;
    k->space |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(block, _mm_set1_epi8(' ')))
                << shift;
    k->minus |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(block, _mm_set1_epi8('-')))
                << shift;
    k->zero |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(block, _mm_set1_epi8('0')))
               << shift;
}
#endif

static inline Classes
classes_of(const byte *at)
{
    Classes k = {0, 0, 0, 0, 0, 0};
#if defined(__SSE2__)
    for (int shift = 0; shift < 64; shift += 16)
        classes_16(at + shift, &k, shift);
#else
    for (int i = 0; i < 64; i++) {
        byte c = at[i];
        uint64_t bit = (uint64_t)1 << i;
        k.digit |= is_digit(c) ? bit : 0;
        k.comma |= c == ',' ? bit : 0;
        k.space |= c == ' ' ? bit : 0;
        k.minus |= c == '-' ? bit : 0;
        k.zero |= c == '0' ? bit : 0;
    }
#endif
    k.other = ~(k.digit | k.comma | k.space | k.minus);
    return k;
}

/* The classes of the two bytes before a block, in bits 0 and 1 (bit 1: the byte just
 * before), and whether each may start an integer. */
typedef struct {
    uint64_t digit, comma, minus, zero, start;
} Before;

/* Whether one block (its classes `k`, the `valid` bits of it) breaks a rule, given the two
 * bytes before it (`b`). `spaced`: the array's separator is `, `. */
static inline int
breaks(Classes k, Before b, int spaced, uint64_t valid)
{
    /* a mask shifted to "the byte before" (bit i: byte i - 1) and "two before" */
#define PREV(x, bx) (((x) << 1) | (((bx) >> 1) & 1u))
#define PREV2(x, bx) (((x) << 2) | ((bx) & 3u))
    uint64_t comma1 = PREV(k.comma, b.comma), comma2 = PREV2(k.comma, b.comma);
    uint64_t bad = k.other;
    if (spaced)
        bad |= (k.space ^ comma1) | (k.comma & comma2); /* a space after each comma; no `, ,` */
    else
        bad |= k.space | (k.comma & comma1); /* no space; no `,,` */
    uint64_t minus1 = PREV(k.minus, b.minus);
    bad |= k.minus & (PREV(k.digit, b.digit) | minus1);   /* `d-`, `--` */
    bad |= (k.comma | k.space | k.minus) & minus1;        /* `-,`, `- ` (and `--`) */
    /* `0` then a digit, the `0` starting an integer (after `[`, a separator or a sign) */
    uint64_t starts = k.comma | k.space | k.minus;
    bad |= k.digit & PREV(k.zero, b.zero) & PREV2(starts, b.start);
#undef PREV
#undef PREV2
    return (bad & valid) != 0;
}

/* The two bytes before the next block: the last two of this one. */
static inline Before
carried(Classes k)
{
    Before b;
    b.digit = k.digit >> 62;
    b.comma = k.comma >> 62;
    b.minus = k.minus >> 62;
    b.zero = k.zero >> 62;
    b.start = (k.comma | k.space | k.minus) >> 62;
    return b;
}

/* `_counts`: the length of the array whose `size` bytes (between its brackets) start at `p`,
 * and its ones when it is a 0/1 mask (else NO_ONES); 0 when the definition counts it not. */
static int
array_counts(const byte *p, Py_ssize_t size, Py_ssize_t *n, Py_ssize_t *ones)
{
    if (size <= 0 || !(is_digit(p[0]) || p[0] == '-') || !is_digit(p[size - 1]))
        return 0; /* empty, or an empty first or last element, or a trailing sign */
    if (mask_counts(p, size, n, ones))
        return 1;
    const byte *comma = memchr(p, ',', (size_t)size);
    /* the byte after a comma is in the array or its `]` (the last byte is a digit) */
    int spaced = comma != NULL && comma[1] == ' ';
    /* before the first byte: `[` (which starts an integer), and a byte of no class */
    Before b = {0, 0, 0, 0, 2u};
    Py_ssize_t commas = 0, at = 0;
    for (; size - at >= 64; at += 64) {
        Classes k = classes_of(p + at);
        if (breaks(k, b, spaced, ~(uint64_t)0))
            return 0;
        commas += ones_of(k.comma);
        b = carried(k);
    }
    if (at < size) {
        byte tail[64] = {0};
        int left = (int)(size - at);
        memcpy(tail, p + at, (size_t)left);
        Classes k = classes_of(tail);
        uint64_t valid = ((uint64_t)1 << left) - 1u;
        if (breaks(k, b, spaced, valid))
            return 0;
        commas += ones_of(k.comma & valid);
    }
    *n = commas + 1;
    *ones = NO_ONES;
    return 1;
}

/* Where `needle` (`size` bytes, at least 2) first occurs in data[from:end], -1 if not: the
 * first and last bytes compared 16 places at a time, candidates checked whole. */
static Py_ssize_t
find(const byte *data, Py_ssize_t from, Py_ssize_t end, const byte *needle, Py_ssize_t size)
{
    Py_ssize_t at = from, last = end - size; /* the last place a match may start */
#if defined(__SSE2__)
    const __m128i first = _mm_set1_epi8((char)needle[0]);
    const __m128i final = _mm_set1_epi8((char)needle[size - 1]);
    for (; last - at >= 15; at += 16) {
        __m128i head = _mm_loadu_si128((const __m128i *)(data + at));
        __m128i tail = _mm_loadu_si128((const __m128i *)(data + at + size - 1));
        unsigned hits = (unsigned)_mm_movemask_epi8(
            _mm_and_si128(_mm_cmpeq_epi8(head, first), _mm_cmpeq_epi8(tail, final)));
        while (hits) {
            int k = __builtin_ctz(hits);
            if (memcmp(data + at + k + 1, needle + 1, (size_t)(size - 2)) == 0)
                return at + k;
            hits &= hits - 1;
        }
    }
#endif
    for (; at <= last; at++)
        if (data[at] == needle[0] && memcmp(data + at + 1, needle + 1, (size_t)(size - 1)) == 0)
            return at;
    return -1;
}

/* `_value_after`: where the array after a key ending at `key_end` opens (`: [`, one space
 * allowed on each side of the colon), -1 if no array follows. */
static Py_ssize_t
value_after(const byte *data, Py_ssize_t size, Py_ssize_t key_end)
{
    static const struct {
        const char *spelling;
        Py_ssize_t length, offset;
    } starts[] = {{": [", 3, 2}, {":[", 2, 1}, {" : [", 4, 3}, {" :[", 3, 2}};
    for (int k = 0; k < 4; k++) {
        Py_ssize_t length = starts[k].length;
        if (size - key_end >= length && memcmp(data + key_end, starts[k].spelling, (size_t)length) == 0)
            return key_end + starts[k].offset;
    }
    return -1;
}

typedef struct {
    const byte *data[MAX_KEYS];
    Py_ssize_t size[MAX_KEYS];
    Py_ssize_t count, longest;
} Keys;

/* Whether data[quote:key_end] is one of `keys`, `quote` being the last `"` before `at`
 * (the definition's `content[content.rfind(b'"', 0, at) : key_end] in wanted`; where no
 * quote precedes, that slice starts at the line's last byte). */
static int
is_key(const byte *data, Py_ssize_t size, Py_ssize_t at, Py_ssize_t key_end, const Keys *keys)
{
    Py_ssize_t quote = at - 1;
    /* a quote further back than the longest key gives a longer slice than any key */
    Py_ssize_t stop = key_end - keys->longest - 1;
    while (quote >= 0 && quote > stop && data[quote] != '"')
        quote--;
    if (quote < 0)
        quote = size - 1;
    else if (data[quote] != '"')
        return 0;
    Py_ssize_t length = key_end > quote ? key_end - quote : 0;
    for (Py_ssize_t k = 0; k < keys->count; k++)
        if (keys->size[k] == length && memcmp(data + quote, keys->data[k], (size_t)length) == 0)
            return 1;
    return 0;
}

typedef struct {
    Py_ssize_t from, to, n, ones; /* data[from:to] replaced by the stand-in of (n, ones) */
} Lifted;

enum { MAX_LIFTED = 256 }; /* the most arrays a call may look at, and so lift */

static int
stand_in(char *out, Py_ssize_t n, Py_ssize_t ones)
{
    if (ones == NO_ONES)
        return sprintf(out, "\"%s%zd\"", MARK, n);
    return sprintf(out, "\"%s%zd:%zd\"", MARK, n, ones);
}

/* The line data[first:stop] with each lifted span replaced by its stand-in. */
static PyObject *
joined(const byte *data, Py_ssize_t first, Py_ssize_t stop, const Lifted *lifted, int count)
{
    char piece[64];
    Py_ssize_t total = stop - first;
    for (int k = 0; k < count; k++)
        total += stand_in(piece, lifted[k].n, lifted[k].ones) - (lifted[k].to - lifted[k].from);
    PyObject *result = PyBytes_FromStringAndSize(NULL, total);
    if (result == NULL)
        return NULL;
    char *out = PyBytes_AS_STRING(result);
    Py_ssize_t start = first;
    for (int k = 0; k < count; k++) {
        memcpy(out, data + start, (size_t)(lifted[k].from - start));
        out += lifted[k].from - start;
        out += stand_in(out, lifted[k].n, lifted[k].ones);
        start = lifted[k].to;
    }
    memcpy(out, data + start, (size_t)(stop - start));
    return result;
}

/* The lifted line, or None when nothing was lifted or the line data[first:stop] spells the
 * mark (never inside a lifted array, so the whole line is searched). */
static PyObject *
lifted_line(const byte *data, Py_ssize_t first, Py_ssize_t stop, const Lifted *lifted, int count)
{
    if (count == 0 || find(data, first, stop, (const byte *)MARK, MARK_SIZE) >= 0)
        Py_RETURN_NONE;
    return joined(data, first, stop, lifted, count);
}

/* The lift proper over a line's bytes; None when nothing was lifted or the line spells the
 * mark. */
static PyObject *
lift_line(const byte *data, Py_ssize_t size, const Keys *keys, Py_ssize_t min_span,
          Py_ssize_t max_looked)
{
    const byte *ending = keys->data[0] + keys->size[0] - ENDING;
    Lifted lifted[MAX_LIFTED];
    int count = 0;
    Py_ssize_t looked = 0, at = find(data, 0, size, ending, ENDING);
    while (at >= 0 && looked < max_looked) {
        looked++;
        Py_ssize_t key_end = at + ENDING;
        Py_ssize_t opens = value_after(data, size, key_end);
        if (opens >= 0 && is_key(data, size, at, key_end, keys)) {
            const byte *close = memchr(data + opens, ']', (size_t)(size - opens));
            if (close == NULL)
                break;
            Py_ssize_t end = close - data, n, ones;
            if (end - opens > min_span && array_counts(data + opens + 1, end - opens - 1, &n, &ones)) {
                lifted[count++] = (Lifted){opens, end + 1, n, ones};
                key_end = end + 1;
            }
        }
        at = find(data, key_end, size, ending, ENDING);
    }
    return lifted_line(data, 0, size, lifted, count);
}

/* `_opens_value`: whether the `[` at `at` follows `:`, `[` or `,` (one space allowed
 * between) within the line that starts at `first`. */
static int
opens_value(const byte *data, Py_ssize_t at, Py_ssize_t first)
{
    Py_ssize_t before = at - 1;
    if (before >= first && data[before] == ' ')
        before--;
    return before >= first && (data[before] == ':' || data[before] == '[' || data[before] == ',');
}

/* `_any_arrays`: the line data[first:stop] with each long flat integer array that is a
 * value (or a row of one) lifted; None when nothing was lifted or the line spells the mark. */
static PyObject *
lift_rows(const byte *data, Py_ssize_t first, Py_ssize_t stop, Py_ssize_t min_span,
          Py_ssize_t max_looked)
{
    Lifted lifted[MAX_LIFTED];
    int count = 0;
    Py_ssize_t looked = 0, n, ones;
    const byte *found = memchr(data + first, '[', (size_t)(stop - first));
    while (found != NULL && looked < max_looked) {
        looked++;
        Py_ssize_t at = found - data;
        if (!opens_value(data, at, first)) {
            found = memchr(data + at + 1, '[', (size_t)(stop - at - 1));
            continue;
        }
        const byte *close = memchr(data + at, ']', (size_t)(stop - at));
        if (close == NULL)
            break;
        Py_ssize_t end = close - data;
        if (end - at > min_span && array_counts(data + at + 1, end - at - 1, &n, &ones))
            lifted[count++] = (Lifted){at, end + 1, n, ones};
        else {
            const byte *inner = memchr(data + at + 1, '[', (size_t)(end - at - 1));
            if (inner != NULL) { /* rows of a tensor: each row is looked at on its own */
                found = inner;
                continue;
            }
        }
        found = memchr(data + end + 1, '[', (size_t)(stop - end - 1));
    }
    return lifted_line(data, first, stop, lifted, count);
}

/* lift_keys(content, keys, min_span, max_looked) -> bytes | None */
static PyObject *
lift_keys(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 4 || !PyTuple_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError,
                        "lift_keys(content, keys: tuple[bytes, ...], min_span, max_looked)");
        return NULL;
    }
    Py_ssize_t min_span = PyLong_AsSsize_t(args[2]), max_looked = PyLong_AsSsize_t(args[3]);
    if (PyErr_Occurred())
        return NULL;
    if (max_looked > MAX_LIFTED) {
        PyErr_SetString(PyExc_ValueError, "lift_keys: max_looked is at most 256");
        return NULL;
    }
    Keys keys = {.count = PyTuple_GET_SIZE(args[1]), .longest = 0};
    if (keys.count < 1 || keys.count > MAX_KEYS) {
        PyErr_SetString(PyExc_ValueError, "lift_keys: 1 to 16 keys");
        return NULL;
    }
    for (Py_ssize_t k = 0; k < keys.count; k++) {
        PyObject *key = PyTuple_GET_ITEM(args[1], k);
        if (!PyBytes_Check(key) || PyBytes_GET_SIZE(key) < ENDING + 1) {
            PyErr_SetString(PyExc_ValueError, "lift_keys: keys are bytes of 6 or more");
            return NULL;
        }
        keys.data[k] = (const byte *)PyBytes_AS_STRING(key);
        keys.size[k] = PyBytes_GET_SIZE(key);
        if (keys.size[k] > keys.longest)
            keys.longest = keys.size[k];
        if (memcmp(keys.data[k] + keys.size[k] - ENDING, keys.data[0] + keys.size[0] - ENDING,
                   ENDING) != 0) {
            PyErr_SetString(PyExc_ValueError, "lift_keys: keys end alike");
            return NULL;
        }
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *result = lift_line((const byte *)view.buf, view.len, &keys, min_span, max_looked);
    PyBuffer_Release(&view);
    return result;
}

/* lift_any(content, first, stop, min_span, max_looked) -> bytes | None */
static PyObject *
lift_any(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "lift_any(content, first, stop, min_span, max_looked)");
        return NULL;
    }
    Py_ssize_t first = PyLong_AsSsize_t(args[1]), stop = PyLong_AsSsize_t(args[2]);
    Py_ssize_t min_span = PyLong_AsSsize_t(args[3]), max_looked = PyLong_AsSsize_t(args[4]);
    if (PyErr_Occurred())
        return NULL;
    if (max_looked > MAX_LIFTED) {
        PyErr_SetString(PyExc_ValueError, "lift_any: max_looked is at most 256");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *result;
    if (first < 0 || stop > view.len || first > stop) {
        PyErr_SetString(PyExc_ValueError, "lift_any: 0 <= first <= stop <= len(content)");
        result = NULL;
    }
    else
        result = lift_rows((const byte *)view.buf, first, stop, min_span, max_looked);
    PyBuffer_Release(&view);
    return result;
}

/* counts(span) -> (n, ones | None) | None: `_counts` of one whole array `[...]` (tests). */
static PyObject *
counts(PyObject *module, PyObject *span)
{
    (void)module;
    Py_buffer view;
    if (PyObject_GetBuffer(span, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const byte *data = view.buf;
    Py_ssize_t n, ones;
    int found = view.len >= 2 && data[0] == '[' && data[view.len - 1] == ']'
                && array_counts(data + 1, view.len - 2, &n, &ones);
    PyBuffer_Release(&view);
    if (!found)
        Py_RETURN_NONE;
    if (ones == NO_ONES)
        return Py_BuildValue("(nO)", n, Py_None);
    return Py_BuildValue("(nn)", n, ones);
}

static PyMethodDef methods[] = {
    {"lift_keys", (PyCFunction)(void (*)(void))lift_keys, METH_FASTCALL,
     "lift_keys(content, keys, min_span, max_looked): genledger.fast.lift's lift of the "
     "values of `keys` in C; None when nothing was lifted."},
    {"lift_any", (PyCFunction)(void (*)(void))lift_any, METH_FASTCALL,
     "lift_any(content, first, stop, min_span, max_looked): genledger.fast.lift's lift of "
     "every array that is a value in the line content[first:stop], in C."},
    {"counts", (PyCFunction)counts, METH_O,
     "counts(span): genledger.fast.lift._counts of one whole array in C."},
    {NULL, NULL, 0, NULL},
};

GENLEDGER_MODULE(_lift, "The lift of long id arrays (genledger.fast.lift) in C.")
