/* Whether bytes are valid UTF-8, in C: `genledger.fast.utf8.by_decode` (Python's strict
 * decoder) at a vector scan's pace, for the raw-text flags of every read.
 *
 * The check is the lookup algorithm of Keiser and Lemire ("Validating UTF-8 in less than
 * one instruction per byte", 2021), as simdjson and simdutf run it, over 32 bytes at a time
 * with AVX2: three 16-entry tables, indexed by the high and low nibbles of each byte's
 * predecessor and the high nibble of the byte, flag every two-byte pattern that cannot
 * occur in UTF-8 (a lead without its continuation, a continuation without a lead, overlong
 * forms, surrogates, code points past U+10FFFF); a byte two or three places after a lead
 * of three or four bytes must be a continuation, which the flags of the pair before it
 * cannot see, so those places are worked out apart and XOR'ed in; a block of ASCII only
 * skips the tables. A block whose last bytes leave a character open is an error unless the
 * next block completes it, and so is the input's end. A short last block is read from a
 * zero-padded copy (NUL is ASCII).
 *
 * Where the CPU has no AVX2 (checked at run time; the build stays x86-64's baseline), or
 * on other CPUs, a byte-by-byte check of the same rules decides (RFC 3629, as the decoder).
 * No state lives outside a call; the caller's buffer is released on every path.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_cmodule.h"

/* The byte-by-byte check: every sequence well formed, no overlong form, no surrogate,
 * nothing past U+10FFFF. */
static int
valid_bytes(const byte *data, Py_ssize_t size)
{
    Py_ssize_t at = 0;
    while (at < size) {
        if (data[at] < 0x80)
            at++;
        else {
            Py_ssize_t length = utf8_length(data, at, size);
            if (length == 0)
                return 0;
            at += length;
        }
    }
    return 1;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_AVX2_PATH 1

/* The two-byte patterns each table entry rules out (bit flags). */
enum {
    TOO_SHORT = 1 << 0,  /* 11______ 0_______ / 11______ 11______ */
    TOO_LONG = 1 << 1,   /* 0_______ 10______ */
    OVERLONG_3 = 1 << 2, /* 11100000 100_____ */
    TOO_LARGE = 1 << 3,  /* 11110100 1001____ ... (past U+10FFFF) */
    SURROGATE = 1 << 4,  /* 11101101 101_____ */
    OVERLONG_2 = 1 << 5, /* 1100000_ 10______ */
    TOO_LARGE_1000 = 1 << 6,
    OVERLONG_4 = 1 << 6, /* 11110000 1000____ */
    TWO_CONTS = 1 << 7,  /* 10______ 10______ */
    CARRY = TOO_SHORT | TOO_LONG | TWO_CONTS,
};

#define TABLE(...) _mm256_setr_epi8(__VA_ARGS__, __VA_ARGS__)

__attribute__((target("avx2"))) static inline __m256i
before(__m256i input, __m256i previous, int n)
{
    /* the bytes n places back: the last n of `previous`, then `input` less its last n */
    __m256i joined = _mm256_permute2x128_si256(previous, input, 0x21);
    switch (n) {
    case 1:
        return _mm256_alignr_epi8(input, joined, 15);
    case 2:
        return _mm256_alignr_epi8(input, joined, 14);
    default:
        return _mm256_alignr_epi8(input, joined, 13);
    }
}

__attribute__((target("avx2"))) static inline __m256i
high_nibbles(__m256i bytes)
{
    return _mm256_and_si256(_mm256_srli_epi16(bytes, 4), _mm256_set1_epi8(0x0F));
}

/* The flags of the patterns each byte and its predecessor make. */
__attribute__((target("avx2"))) static inline __m256i
special_cases(__m256i input, __m256i prev1)
{
    const __m256i byte_1_high = TABLE(
        TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG,
        TWO_CONTS, TWO_CONTS, TWO_CONTS, TWO_CONTS, TOO_SHORT | OVERLONG_2, TOO_SHORT,
        TOO_SHORT | OVERLONG_3 | SURROGATE, TOO_SHORT | TOO_LARGE | TOO_LARGE_1000 | OVERLONG_4);
    const __m256i byte_1_low = TABLE(
        CARRY | OVERLONG_3 | OVERLONG_2 | OVERLONG_4, CARRY | OVERLONG_2, CARRY, CARRY,
        CARRY | TOO_LARGE, CARRY | TOO_LARGE | TOO_LARGE_1000,
        CARRY | TOO_LARGE | TOO_LARGE_1000, CARRY | TOO_LARGE | TOO_LARGE_1000,
        CARRY | TOO_LARGE | TOO_LARGE_1000, CARRY | TOO_LARGE | TOO_LARGE_1000,
        CARRY | TOO_LARGE | TOO_LARGE_1000, CARRY | TOO_LARGE | TOO_LARGE_1000,
        CARRY | TOO_LARGE | TOO_LARGE_1000, CARRY | TOO_LARGE | TOO_LARGE_1000 | SURROGATE,
        CARRY | TOO_LARGE | TOO_LARGE_1000, CARRY | TOO_LARGE | TOO_LARGE_1000);
    const __m256i byte_2_high = TABLE(
        TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT,
        TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 | TOO_LARGE_1000 | OVERLONG_4,
        TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 | TOO_LARGE,
        TOO_LONG | OVERLONG_2 | TWO_CONTS | SURROGATE | TOO_LARGE,
        TOO_LONG | OVERLONG_2 | TWO_CONTS | SURROGATE | TOO_LARGE,
        TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT);
    __m256i a = _mm256_shuffle_epi8(byte_1_high, high_nibbles(prev1));
    __m256i b = _mm256_shuffle_epi8(byte_1_low, _mm256_and_si256(prev1, _mm256_set1_epi8(0x0F)));
    __m256i c = _mm256_shuffle_epi8(byte_2_high, high_nibbles(input));
    return _mm256_and_si256(_mm256_and_si256(a, b), c);
}

/* The errors of one block given the block before it. */
__attribute__((target("avx2"))) static inline __m256i
block_errors(__m256i input, __m256i previous)
{
    __m256i prev1 = before(input, previous, 1);
    __m256i flags = special_cases(input, prev1);
    /* third bytes of three-byte characters and third and fourth of four-byte ones: only a
     * lead of 111_____ two back, or 1111____ three back, leaves a byte >= 0x80 here */
    __m256i third = _mm256_subs_epu8(before(input, previous, 2), _mm256_set1_epi8((char)(0xE0 - 0x80)));
    __m256i fourth = _mm256_subs_epu8(before(input, previous, 3), _mm256_set1_epi8((char)(0xF0 - 0x80)));
    __m256i must = _mm256_and_si256(_mm256_or_si256(third, fourth), _mm256_set1_epi8((char)0x80));
    return _mm256_xor_si256(must, flags);
}

/* Non-zero where the block's last bytes open a character it does not finish. */
__attribute__((target("avx2"))) static inline __m256i
incomplete(__m256i input)
{
    const __m256i limits = _mm256_setr_epi8(
        -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
        -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
        (char)(0xF0 - 1), (char)(0xE0 - 1), (char)(0xC0 - 1));
    return _mm256_subs_epu8(input, limits);
}

__attribute__((target("avx2"))) static int
valid_avx2(const byte *data, Py_ssize_t size)
{
    __m256i error = _mm256_setzero_si256(), previous = _mm256_setzero_si256();
    __m256i open = _mm256_setzero_si256();
    Py_ssize_t at = 0;
    for (;; at += 32) {
        __m256i input;
        if (size - at >= 32)
            input = _mm256_loadu_si256((const __m256i *)(data + at));
        else if (at < size) {
            byte tail[32] = {0};
            memcpy(tail, data + at, (size_t)(size - at));
            input = _mm256_loadu_si256((const __m256i *)tail);
        }
        else
            break;
        if (_mm256_movemask_epi8(input) == 0) /* ASCII only: nothing may be left open */
            error = _mm256_or_si256(error, open), open = _mm256_setzero_si256();
        else {
            error = _mm256_or_si256(error, block_errors(input, previous));
            open = incomplete(input);
        }
        previous = input;
        if ((at & 4095) == 0 && !_mm256_testz_si256(error, error))
            return 0; /* stop early, now and then, on a read already known bad */
    }
    error = _mm256_or_si256(error, open);
    return _mm256_testz_si256(error, error);
}
#endif

static int
has_avx2(void)
{
#if defined(HAVE_AVX2_PATH)
    return __builtin_cpu_supports("avx2");
#else
    return 0;
#endif
}

/* valid(data, vector=True) -> bool: whether the buffer is valid UTF-8 (`vector`: the AVX2
 * scan where the CPU has it, else byte by byte). */
static PyObject *
valid(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "valid(data, vector=True) takes 1 or 2 arguments");
        return NULL;
    }
    int vector = 1;
    if (nargs == 2 && (vector = PyObject_IsTrue(args[1])) < 0)
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    int ok;
    Py_BEGIN_ALLOW_THREADS
#if defined(HAVE_AVX2_PATH)
    if (vector && has_avx2())
        ok = valid_avx2((const byte *)view.buf, view.len);
    else
#endif
        ok = valid_bytes((const byte *)view.buf, view.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyBool_FromLong(ok);
}

static PyObject *
vectorised(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    return PyBool_FromLong(has_avx2());
}

static PyMethodDef methods[] = {
    {"valid", (PyCFunction)(void (*)(void))valid, METH_FASTCALL,
     "valid(data, vector=True): whether the buffer is valid UTF-8."},
    {"vectorised", vectorised, METH_NOARGS,
     "vectorised(): whether `valid` scans with AVX2 on this CPU."},
    {NULL, NULL, 0, NULL},
};

GENLEDGER_MODULE(_utf8, "Whether bytes are valid UTF-8 (genledger.fast.utf8) in C.")
