/* The duplicate rules in C: how many keys of a dataset's files were seen before, and the
 * first of them with where each one's key was first seen, as `genledger.rules.rows._repeats`
 * (the definition) and `_first_lines` derive them with Python sets.
 *
 * The keys are walked in the definition's order: file after file, each file in line order
 * (its keys' indices stably sorted by line where its lines go down: a streamed request is
 * listed when its stream settles). A key found already in the table repeats, and the first
 * `wanted` repeats are noted; the count is the keys less the distinct keys, whatever the
 * order. Where each noted key was first seen (the first file holding it, its earliest line
 * there) is found after the walk by a scan that stops at the last such file: a table that
 * kept every key's place was twice the size, and filling it cost more than the scan
 * (`benchmarks/repeats.py`).
 *
 * No Python object is made per key: the ids' bytes and the answer keys' int64s are read in
 * place from the caller's buffers. The table is open addressing (linear probing) sized to
 * the keys, allocated once per call, 8 bytes a slot: an answer key itself, or half an id's
 * hash and the id's index in an array of (start in the caller's buffer, length), so no key
 * is copied. The buffers are held (and so cannot be resized) for the whole walk, which runs
 * without the GIL; every buffer is released on every path.
 *
 * No state lives outside a call: the module has no globals.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_cmodule.h"

/* splitmix64's finaliser: every input bit moves every output bit (keys may be small ints,
 * and the table's index is the hash's low bits) */
static inline uint64_t
mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* A hash of `size` bytes, 8 at a time: the length is mixed in, so keys equal but for
 * trailing bytes of zero differ. */
static uint64_t
hash_bytes(const byte *data, Py_ssize_t size)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)size;
    Py_ssize_t at = 0;
    for (; size - at >= 8; at += 8) {
        uint64_t word;
        memcpy(&word, data + at, 8);
        h = mix64(h ^ word);
    }
    if (at < size) {
        uint64_t word = 0;
        memcpy(&word, data + at, (size_t)(size - at));
        h = mix64(h ^ word ^ 0xff51afd7ed558ccdULL);
    }
    return mix64(h);
}

/* The table's size: a power of two at least 1.5 times `keys` (so probes stay short), or 0
 * if that would overflow. */
static size_t
capacity_for(Py_ssize_t keys)
{
    size_t want = (size_t)keys + (size_t)keys / 2 + 1, capacity = 8;
    while (capacity < want) {
        if (capacity > SIZE_MAX / 64)
            return 0;
        capacity <<= 1;
    }
    return capacity;
}

/* Where a key is: its file's index in the call's sequence and its index in that file's
 * arrays (each below 2**32, checked when the buffers are held). */
typedef struct {
    uint32_t file, index;
} Place;

/* A repeat noted: where it is, where its key was first seen (with that place's line, while
 * the scan looks), and the key (an id's bytes in the caller's buffer, or an answer key). */
typedef struct {
    Place at, first;
    int64_t first_line;
    int found_first;
    const byte *start;
    Py_ssize_t size;
    uint64_t key;
} Repeat;

/* The walk's result: the count, and the first `wanted` repeats in `found`. */
typedef struct {
    Py_ssize_t count, wanted, n_found;
    Repeat *found;
} Walk;

static void
note(Walk *w, Place at, const byte *start, Py_ssize_t size, uint64_t key)
{
    w->count++;
    if (w->n_found < w->wanted)
        w->found[w->n_found++] = (Repeat){at, {0, 0}, 0, 0, start, size, key};
}

/* A key's line, its index in the file, and for ids where its bytes start: a file's keys are
 * sorted by (line, index), the definition's stable sort by line. */
typedef struct {
    int64_t line;
    Py_ssize_t start;
    uint32_t index;
} Sorted;

static int
by_line(const void *a, const void *b)
{
    const Sorted *x = a, *y = b;
    if (x->line != y->line)
        return x->line < y->line ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* The walk order of a file whose lines go down somewhere: its keys by (line, index), or NULL
 * if its lines never go down (index order) or the memory is lacking (`*failed` set). For ids
 * `lengths` gives each key's start; NULL for answer keys. */
static Sorted *
line_order(const int64_t *lines, const int64_t *lengths, Py_ssize_t n, int *failed)
{
    Py_ssize_t k = 1;
    while (k < n && lines[k] >= lines[k - 1])
        k++;
    if (k >= n)
        return NULL;
    Sorted *order = malloc((size_t)n * sizeof(Sorted));
    if (order == NULL) {
        *failed = 1;
        return NULL;
    }
    Py_ssize_t start = 0;
    for (k = 0; k < n; k++) {
        order[k] = (Sorted){lines[k], start, (uint32_t)k};
        start += lengths ? (Py_ssize_t)lengths[k] : 0;
    }
    qsort(order, (size_t)n, sizeof(Sorted), by_line);
    return order;
}

/* Hold `item`'s buffer in `view` if it is one of int64s, fewer than 2**32 (a file's keys are
 * indexed by 32 bits). Returns their number, -1 with an exception set (nothing held). */
static Py_ssize_t
hold_int64s(PyObject *item, Py_buffer *view, const char *what)
{
    if (PyObject_GetBuffer(item, view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    const char *format = view->format ? view->format : "B";
    if (view->itemsize != 8
        || !(strcmp(format, "q") == 0 || strcmp(format, "l") == 0 || strcmp(format, "=q") == 0)) {
        PyErr_Format(PyExc_ValueError, "the %s are no buffer of int64s", what);
        PyBuffer_Release(view);
        return -1;
    }
    if (view->len / 8 >= (Py_ssize_t)UINT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "too many keys in one file");
        PyBuffer_Release(view);
        return -1;
    }
    return view->len / 8;
}

/* One file: its keys (an id file's bytes in `data`, their int64 lengths in `keys`; or an
 * answer file's int64 keys in `keys`) and each key's int64 line. */
typedef struct {
    Py_buffer data, keys, lines;
    int has_data;
} File;

static void
release_files(File *files, Py_ssize_t held)
{
    for (Py_ssize_t k = 0; k < held; k++) {
        if (files[k].has_data)
            PyBuffer_Release(&files[k].data);
        PyBuffer_Release(&files[k].keys);
        PyBuffer_Release(&files[k].lines);
    }
}

/* Whether the lengths of an id file are none negative and add up to its data's size. */
static int
lengths_add_up(const File *file)
{
    const int64_t *sizes = (const int64_t *)file->keys.buf;
    Py_ssize_t n = file->keys.len / 8, total = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (sizes[k] < 0 || sizes[k] > file->data.len - total)
            return 0;
        total += (Py_ssize_t)sizes[k];
    }
    return total == file->data.len;
}

/* Hold one file's buffers and check them: `item` is (data, lengths, lines) for ids, (keys,
 * lines) for answer keys; as many lines as keys. Returns the number of keys, -1 with an
 * exception set (nothing then held). */
static Py_ssize_t
hold_file(PyObject *item, File *file, int ids)
{
    Py_ssize_t size = ids ? 3 : 2;
    if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != size) {
        PyErr_SetString(PyExc_TypeError, ids ? "each file is a (data, lengths, lines) tuple"
                                             : "each file is a (keys, lines) tuple");
        return -1;
    }
    file->has_data = 0;
    if (ids && PyObject_GetBuffer(PyTuple_GET_ITEM(item, 0), &file->data, PyBUF_SIMPLE) < 0)
        return -1;
    file->has_data = ids;
    Py_ssize_t n = hold_int64s(PyTuple_GET_ITEM(item, size - 2), &file->keys,
                               ids ? "lengths" : "keys");
    if (n < 0)
        goto no_keys;
    Py_ssize_t lines = hold_int64s(PyTuple_GET_ITEM(item, size - 1), &file->lines, "lines");
    if (lines < 0)
        goto no_lines;
    const char *problem = lines != n ? "a file has not as many lines as keys"
                          : ids && !lengths_add_up(file) ? "the lengths do not add up to the ids' bytes"
                                                        : NULL;
    if (problem == NULL)
        return n;
    PyErr_SetString(PyExc_ValueError, problem);
    PyBuffer_Release(&file->lines);
no_lines:
    PyBuffer_Release(&file->keys);
no_keys:
    if (file->has_data)
        PyBuffer_Release(&file->data);
    return -1;
}

/* An id: where its bytes start in the caller's buffer, and how many there are. */
typedef struct {
    const byte *start;
    Py_ssize_t size;
} Id;

/* Ids seen so far, at most 2**32 - 2 of them: each slot of the table is 8 bytes, the high
 * half of the id's hash and its index in `ids` plus one (0: empty), so the probes of a
 * million ids stay in 16 MB; an id's bytes are compared only when the halves match. */
typedef struct {
    uint64_t *table;
    size_t mask;
    Id *ids;
    uint32_t count;
} IdTable;

/* Whether ids[count] (just written) was seen before; if not, it is kept. */
static int
seen_id(IdTable *t, uint64_t hash)
{
    const Id *id = &t->ids[t->count];
    uint64_t tag = hash >> 32;
    size_t slot = (size_t)hash & t->mask;
    for (;;) {
        uint64_t held = t->table[slot];
        if (held == 0) {
            t->table[slot] = (tag << 32) | (uint64_t)(t->count + 1);
            t->count++;
            return 0;
        }
        if ((held >> 32) == tag) {
            const Id *other = &t->ids[(uint32_t)held - 1];
            if (other->size == id->size
                && memcmp(other->start, id->start, (size_t)id->size) == 0)
                return 1;
        }
        slot = (slot + 1) & t->mask;
    }
}

/* Keys hashed ahead of their probes: their slots are fetched from memory while the next
 * ones are hashed (a million keys' table is far larger than the caches, and each probe's
 * miss would otherwise wait alone). */
enum { AHEAD = 16 };

/* Walk the ids of file number `f` in `order` (NULL: index order). */
static void
walk_ids(const File *file, uint32_t f, const Sorted *order, IdTable *t, Walk *w)
{
    const byte *data = (const byte *)file->data.buf;
    const int64_t *lengths = (const int64_t *)file->keys.buf;
    Py_ssize_t n = file->keys.len / 8, at = 0;
    uint64_t hashes[AHEAD];
    Py_ssize_t starts[AHEAD];
    uint32_t indices[AHEAD];
    for (Py_ssize_t first = 0; first < n; first += AHEAD) {
        Py_ssize_t block = n - first < AHEAD ? n - first : AHEAD;
        for (Py_ssize_t k = 0; k < block; k++) {
            indices[k] = order ? order[first + k].index : (uint32_t)(first + k);
            starts[k] = order ? order[first + k].start : at;
            hashes[k] = hash_bytes(data + starts[k], (Py_ssize_t)lengths[indices[k]]);
            __builtin_prefetch(&t->table[(size_t)hashes[k] & t->mask]);
            at += (Py_ssize_t)lengths[indices[k]];
        }
        for (Py_ssize_t k = 0; k < block; k++) {
            Id *id = &t->ids[t->count];
            *id = (Id){data + starts[k], (Py_ssize_t)lengths[indices[k]]};
            if (seen_id(t, hashes[k]))
                note(w, (Place){f, indices[k]}, id->start, id->size, 0);
        }
    }
}

/* Whether `key` was seen before; if not, it is kept (8-byte slots holding the keys
 * themselves: 0 marks an empty slot, so the key 0 is kept aside in `zero`). */
static int
seen_int(uint64_t *table, size_t mask, int *zero, uint64_t key)
{
    if (key == 0) {
        int seen = *zero;
        *zero = 1;
        return seen;
    }
    size_t slot = (size_t)mix64(key) & mask;
    for (;;) {
        uint64_t held = table[slot];
        if (held == 0) {
            table[slot] = key;
            return 0;
        }
        if (held == key)
            return 1;
        slot = (slot + 1) & mask;
    }
}

/* Walk the answer keys of file number `f` in `order` (NULL: index order). */
static void
walk_ints(const File *file, uint32_t f, const Sorted *order, uint64_t *table, size_t mask,
          int *zero, Walk *w)
{
    const uint64_t *keys = (const uint64_t *)file->keys.buf;
    Py_ssize_t n = file->keys.len / 8;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (k + AHEAD < n) {
            uint64_t ahead = keys[order ? order[k + AHEAD].index : (uint32_t)(k + AHEAD)];
            __builtin_prefetch(&table[(size_t)mix64(ahead) & mask]);
        }
        uint32_t index = order ? order[k].index : (uint32_t)k;
        if (seen_int(table, mask, zero, keys[index]))
            note(w, (Place){f, index}, NULL, 0, keys[index]);
    }
}

/* Whether the key at `index` of `file` is the repeat `r`'s key. */
static inline int
same_key(const File *file, Py_ssize_t index, Py_ssize_t start, const Repeat *r, int ids)
{
    if (!ids)
        return ((const uint64_t *)file->keys.buf)[index] == r->key;
    Py_ssize_t size = (Py_ssize_t)((const int64_t *)file->keys.buf)[index];
    return size == r->size
           && memcmp((const byte *)file->data.buf + start, r->start, (size_t)size) == 0;
}

/* Note in each of `w`'s repeats the place of its key in `file` (number `f`) with the
 * earliest line, the first such index on ties (the walk's stable order). Returns how many
 * repeats' keys it holds. */
static Py_ssize_t
places_in(const File *file, uint32_t f, Walk *w, int ids)
{
    const int64_t *lines = (const int64_t *)file->lines.buf;
    const int64_t *lengths = (const int64_t *)file->keys.buf;
    Py_ssize_t n = file->keys.len / 8, start = 0, held = 0;
    for (Py_ssize_t k = 0; k < n; start += ids ? (Py_ssize_t)lengths[k] : 0, k++)
        for (Py_ssize_t e = 0; e < w->n_found; e++) {
            Repeat *r = &w->found[e];
            if (r->found_first && (r->first.file != f || lines[k] >= r->first_line))
                continue;
            if (same_key(file, k, start, r, ids)) {
                held += !r->found_first;
                *r = (Repeat){r->at, {f, (uint32_t)k}, lines[k], 1, r->start, r->size, r->key};
            }
        }
    return held;
}

/* Where each noted repeat's key was first seen: the first file holding it (which the walk
 * reached before the repeat), its earliest line there: `rows._first_lines`. Each key of the
 * files scanned is compared with every repeat not yet placed, so `wanted` stays small (the
 * rules want 5). */
static void
first_places(const File *files, Py_ssize_t n_files, Walk *w, int ids)
{
    Py_ssize_t placed = 0;
    for (uint32_t f = 0; placed < w->n_found && f < n_files; f++)
        placed += places_in(&files[f], f, w, ids);
}

/* The walk over every file, without the GIL: 0, or -1 if memory was lacking. */
static int
walk(File *files, Py_ssize_t n_files, Py_ssize_t keys, int ids, Walk *w)
{
    size_t capacity = capacity_for(keys);
    IdTable it = {calloc(capacity, sizeof(uint64_t)), capacity - 1, NULL, 0};
    int zero = 0, failed = it.table == NULL;
    if (ids && !failed) {
        it.ids = malloc((size_t)(keys ? keys : 1) * sizeof(Id));
        failed = it.ids == NULL;
    }
    for (Py_ssize_t f = 0; !failed && f < n_files; f++) {
        const File *file = &files[f];
        Sorted *order = line_order((const int64_t *)file->lines.buf,
                                   ids ? (const int64_t *)file->keys.buf : NULL,
                                   file->keys.len / 8, &failed);
        if (ids && !failed)
            walk_ids(file, (uint32_t)f, order, &it, w);
        else if (!failed)
            walk_ints(file, (uint32_t)f, order, it.table, it.mask, &zero, w);
        free(order);
    }
    free(it.table);
    free(it.ids);
    if (!failed)
        first_places(files, n_files, w, ids);
    return failed ? -1 : 0;
}

/* The walk's result as (count, [(file, index, key, first file, first index), ...]). */
static PyObject *
result(const Walk *w, int ids)
{
    PyObject *found = PyList_New(w->n_found);
    if (found == NULL)
        return NULL;
    for (Py_ssize_t k = 0; k < w->n_found; k++) {
        const Repeat *r = &w->found[k];
        PyObject *key = ids ? PyBytes_FromStringAndSize((const char *)r->start, r->size)
                            : PyLong_FromLongLong((long long)(int64_t)r->key);
        PyObject *item = key ? Py_BuildValue("(IINII)", r->at.file, r->at.index, key,
                                             r->first.file, r->first.index)
                             : NULL;
        if (item == NULL) {
            Py_DECREF(found);
            return NULL;
        }
        PyList_SET_ITEM(found, k, item);
    }
    return Py_BuildValue("(nN)", w->count, found);
}

/* The walk of `arg`, a sequence of files, noting the first `wanted` repeats. */
static PyObject *
first_repeats(PyObject *arg, Py_ssize_t wanted, int ids)
{
    if (wanted < 0) {
        PyErr_SetString(PyExc_ValueError, "the number of repeats wanted is negative");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(arg, "the files are a sequence");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n_files = PySequence_Fast_GET_SIZE(seq), held = 0, keys = 0;
    File *files = PyMem_Calloc((size_t)(n_files ? n_files : 1), sizeof(File));
    PyObject *out = NULL;
    Walk w = {0, 0, 0, NULL};
    if (files == NULL) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    if (n_files >= (Py_ssize_t)UINT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "too many files to walk at once");
        goto done;
    }
    for (; held < n_files; held++) {
        Py_ssize_t n = hold_file(PySequence_Fast_GET_ITEM(seq, held), &files[held], ids);
        if (n < 0)
            goto done;
        keys += n;
    }
    if (keys >= (Py_ssize_t)UINT32_MAX - 1 || capacity_for(keys) == 0) {
        PyErr_SetString(PyExc_OverflowError, "too many keys to walk at once");
        goto done;
    }
    w.wanted = wanted < keys ? wanted : keys;
    w.found = PyMem_Malloc((size_t)(w.wanted ? w.wanted : 1) * sizeof(Repeat));
    if (w.found == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int failed;
    Py_BEGIN_ALLOW_THREADS
    failed = walk(files, n_files, keys, ids, &w);
    Py_END_ALLOW_THREADS
    out = failed ? PyErr_NoMemory() : result(&w, ids);
done:
    PyMem_Free(w.found);
    release_files(files, held);
    PyMem_Free(files);
    Py_DECREF(seq);
    return out;
}

/* first_ids(files, wanted): over (data, lengths, lines) per file. */
static PyObject *
first_ids(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *files;
    Py_ssize_t wanted;
    if (!PyArg_ParseTuple(args, "On:first_ids", &files, &wanted))
        return NULL;
    return first_repeats(files, wanted, 1);
}

/* first_ints(files, wanted): over (keys, lines) per file. */
static PyObject *
first_ints(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *files;
    Py_ssize_t wanted;
    if (!PyArg_ParseTuple(args, "On:first_ints", &files, &wanted))
        return NULL;
    return first_repeats(files, wanted, 0);
}

static PyMethodDef methods[] = {
    {"first_ids", first_ids, METH_VARARGS,
     "first_ids(files, wanted): over (data, lengths, lines) per file (each file's ids' bytes "
     "one after another, their int64 lengths and lines), how many ids were seen before and the "
     "first `wanted` of them as (file, index, id, first file, first index): "
     "genledger.rules.rows._repeats in C."},
    {"first_ints", first_ints, METH_VARARGS,
     "first_ints(files, wanted): over (keys, lines) per file (int64 buffers), how many keys "
     "were seen before and the first `wanted` of them as (file, index, key, first file, first "
     "index): genledger.rules.rows._repeats and _first_lines in C."},
    {NULL, NULL, 0, NULL},
};

GENLEDGER_MODULE(_repeats, "The duplicate rules (genledger.rules.rows) in C.")
