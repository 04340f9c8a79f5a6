/* The duplicate rules' count in C: how many keys of a dataset's files were seen before, the
 * count `genledger.rules.rows._repeats` (the definition) derives with Python sets.
 *
 * That count is the number of keys less the number of distinct keys over all the files,
 * whatever their order, so one hash table over every key gives it: no Python object per key
 * (the definition slices each id into a bytes object and boxes each answer key as an int).
 * The table is open addressing (linear probing) sized to the keys, allocated once per call,
 * 8 bytes a slot: an answer key itself, or half an id's hash and the id's index in an array
 * of (start in the caller's buffer, length), so no key is copied. The caller's buffers are
 * held (and so cannot be resized) for the whole count, which runs without the GIL; every
 * buffer is released on every path.
 *
 * No state lives outside a call: the module has no globals.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef unsigned char byte;

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
        if (capacity > SIZE_MAX / 4)
            return 0;
        capacity <<= 1;
    }
    return capacity;
}

/* An id: where its bytes start in the caller's buffer, and how many there are. */
typedef struct {
    const byte *start;
    Py_ssize_t size;
} Id;

/* One file's ids: their bytes one after another, and each id's length (int64s). */
typedef struct {
    Py_buffer data, lengths;
} IdFile;

static void
release_ids(IdFile *files, Py_ssize_t held)
{
    for (Py_ssize_t k = 0; k < held; k++) {
        PyBuffer_Release(&files[k].data);
        PyBuffer_Release(&files[k].lengths);
    }
}

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

/* Add each id of `file` to the table; returns the ids seen before. The lengths were checked
 * to add up to the data's size. */
static Py_ssize_t
count_file_ids(const IdFile *file, IdTable *t)
{
    const byte *data = (const byte *)file->data.buf;
    const int64_t *lengths = (const int64_t *)file->lengths.buf;
    Py_ssize_t n = file->lengths.len / (Py_ssize_t)sizeof(int64_t), at = 0, repeats = 0;
    uint64_t hashes[AHEAD];
    Py_ssize_t starts[AHEAD];
    for (Py_ssize_t first = 0; first < n; first += AHEAD) {
        Py_ssize_t block = n - first < AHEAD ? n - first : AHEAD;
        for (Py_ssize_t k = 0; k < block; k++) {
            starts[k] = at;
            hashes[k] = hash_bytes(data + at, (Py_ssize_t)lengths[first + k]);
            __builtin_prefetch(&t->table[(size_t)hashes[k] & t->mask]);
            at += (Py_ssize_t)lengths[first + k];
        }
        for (Py_ssize_t k = 0; k < block; k++) {
            Id *id = &t->ids[t->count];
            id->size = (Py_ssize_t)lengths[first + k];
            id->start = data + starts[k];
            repeats += seen_id(t, hashes[k]);
        }
    }
    return repeats;
}

/* Hold one file's two buffers and check them: int64 lengths, none negative, adding up to
 * the data's size. Returns the number of ids, -1 with an exception set. */
static Py_ssize_t
hold_ids(PyObject *item, IdFile *file)
{
    PyObject *data, *lengths;
    if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2) {
        PyErr_SetString(PyExc_TypeError, "each file is a (data, lengths) tuple");
        return -1;
    }
    data = PyTuple_GET_ITEM(item, 0);
    lengths = PyTuple_GET_ITEM(item, 1);
    if (PyObject_GetBuffer(data, &file->data, PyBUF_SIMPLE) < 0)
        return -1;
    if (PyObject_GetBuffer(lengths, &file->lengths, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&file->data);
        return -1;
    }
    const char *format = file->lengths.format ? file->lengths.format : "B";
    int int64 = file->lengths.itemsize == 8 && (strcmp(format, "q") == 0 || strcmp(format, "l") == 0
                                                || strcmp(format, "=q") == 0);
    const char *problem = int64 ? NULL : "the lengths are no buffer of int64s";
    Py_ssize_t n = file->lengths.len / 8, total = 0;
    const int64_t *sizes = (const int64_t *)file->lengths.buf;
    for (Py_ssize_t k = 0; problem == NULL && k < n; k++) {
        if (sizes[k] < 0 || sizes[k] > file->data.len - total)
            problem = "the lengths do not add up to the ids' bytes";
        else
            total += (Py_ssize_t)sizes[k];
    }
    if (problem == NULL && total != file->data.len)
        problem = "the lengths do not add up to the ids' bytes";
    if (problem != NULL) {
        PyErr_SetString(PyExc_ValueError, problem);
        PyBuffer_Release(&file->data);
        PyBuffer_Release(&file->lengths);
        return -1;
    }
    return n;
}

/* repeated_ids(files): how many ids were seen before, over `files`, a sequence of
 * (data, lengths) pairs: each file's ids' bytes one after another and their int64 lengths. */
static PyObject *
repeated_ids(PyObject *module, PyObject *arg)
{
    (void)module;
    PyObject *seq = PySequence_Fast(arg, "repeated_ids takes a sequence of (data, lengths)");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n_files = PySequence_Fast_GET_SIZE(seq), held = 0, keys = 0;
    IdFile *files = PyMem_Calloc((size_t)(n_files ? n_files : 1), sizeof(IdFile));
    if (files == NULL) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    for (; held < n_files; held++) {
        Py_ssize_t n = hold_ids(PySequence_Fast_GET_ITEM(seq, held), &files[held]);
        if (n < 0)
            goto fail;
        keys += n;
    }
    size_t capacity = capacity_for(keys);
    if (keys >= (Py_ssize_t)UINT32_MAX - 1 || capacity == 0
        || capacity > SIZE_MAX / sizeof(uint64_t)) {
        PyErr_SetString(PyExc_OverflowError, "too many ids to count at once");
        goto fail;
    }
    IdTable t = {NULL, capacity - 1, NULL, 0};
    Py_ssize_t repeats = 0;
    Py_BEGIN_ALLOW_THREADS
    t.table = calloc(capacity, sizeof(uint64_t));
    t.ids = malloc((size_t)(keys ? keys : 1) * sizeof(Id));
    if (t.table != NULL && t.ids != NULL)
        for (Py_ssize_t k = 0; k < n_files; k++)
            repeats += count_file_ids(&files[k], &t);
    Py_END_ALLOW_THREADS
    int failed = t.table == NULL || t.ids == NULL;
    free(t.table);
    free(t.ids);
    if (failed) {
        PyErr_NoMemory();
        goto fail;
    }
    release_ids(files, held);
    PyMem_Free(files);
    Py_DECREF(seq);
    return PyLong_FromSsize_t(repeats);
fail:
    release_ids(files, held);
    PyMem_Free(files);
    Py_DECREF(seq);
    return NULL;
}

static void
release_views(Py_buffer *views, Py_ssize_t held)
{
    for (Py_ssize_t k = 0; k < held; k++)
        PyBuffer_Release(&views[k]);
}

/* Hold one file's keys, a contiguous buffer of int64s. Returns their number, -1 if not. */
static Py_ssize_t
hold_ints(PyObject *item, Py_buffer *view)
{
    if (PyObject_GetBuffer(item, view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    const char *format = view->format ? view->format : "B";
    if (view->itemsize != 8
        || !(strcmp(format, "q") == 0 || strcmp(format, "l") == 0 || strcmp(format, "=q") == 0)) {
        PyErr_SetString(PyExc_ValueError, "the keys are no buffer of int64s");
        PyBuffer_Release(view);
        return -1;
    }
    return view->len / 8;
}

/* Add each key of `view` to the table (8-byte slots holding the keys themselves: 0 marks an
 * empty slot, so the key 0 is kept aside in `zero`); returns the keys seen before. */
static Py_ssize_t
count_file_ints(const Py_buffer *view, uint64_t *table, size_t mask, int *zero)
{
    const uint64_t *keys = (const uint64_t *)view->buf;
    Py_ssize_t n = view->len / 8, repeats = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        uint64_t key = keys[k];
        if (k + AHEAD < n)
            __builtin_prefetch(&table[(size_t)mix64(keys[k + AHEAD]) & mask]);
        if (key == 0) {
            repeats += *zero;
            *zero = 1;
            continue;
        }
        size_t slot = (size_t)mix64(key) & mask;
        for (;;) {
            uint64_t held = table[slot];
            if (held == 0) {
                table[slot] = key;
                break;
            }
            if (held == key) {
                repeats++;
                break;
            }
            slot = (slot + 1) & mask;
        }
    }
    return repeats;
}

/* repeated_ints(files): how many keys were seen before, over `files`, a sequence of
 * contiguous buffers of int64s (array('q')). */
static PyObject *
repeated_ints(PyObject *module, PyObject *arg)
{
    (void)module;
    PyObject *seq = PySequence_Fast(arg, "repeated_ints takes a sequence of int64 buffers");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n_files = PySequence_Fast_GET_SIZE(seq), held = 0, keys = 0;
    Py_buffer *views = PyMem_Calloc((size_t)(n_files ? n_files : 1), sizeof(Py_buffer));
    if (views == NULL) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    for (; held < n_files; held++) {
        Py_ssize_t n = hold_ints(PySequence_Fast_GET_ITEM(seq, held), &views[held]);
        if (n < 0)
            goto fail;
        keys += n;
    }
    size_t capacity = capacity_for(keys);
    if (capacity == 0 || capacity > SIZE_MAX / sizeof(uint64_t)) {
        PyErr_NoMemory();
        goto fail;
    }
    Py_ssize_t repeats = 0;
    int zero = 0, failed = 0;
    Py_BEGIN_ALLOW_THREADS
    uint64_t *table = calloc(capacity, sizeof(uint64_t));
    failed = table == NULL;
    if (!failed)
        for (Py_ssize_t k = 0; k < n_files; k++)
            repeats += count_file_ints(&views[k], table, capacity - 1, &zero);
    free(table);
    Py_END_ALLOW_THREADS
    if (failed) {
        PyErr_NoMemory();
        goto fail;
    }
    release_views(views, held);
    PyMem_Free(views);
    Py_DECREF(seq);
    return PyLong_FromSsize_t(repeats);
fail:
    release_views(views, held);
    PyMem_Free(views);
    Py_DECREF(seq);
    return NULL;
}

static PyMethodDef methods[] = {
    {"repeated_ids", repeated_ids, METH_O,
     "repeated_ids(files): how many ids were seen before over (data, lengths) pairs, "
     "genledger.rules.rows._repeats's count in C."},
    {"repeated_ints", repeated_ints, METH_O,
     "repeated_ints(files): how many keys were seen before over int64 buffers, "
     "genledger.rules.rows._repeats's count in C."},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot slots[] = {
#ifdef Py_mod_multiple_interpreters
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
#endif
    {0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "genledger.fast._repeats",
    .m_doc = "The duplicate rules' count (genledger.rules.rows) in C.",
    .m_size = 0, /* no module state: every call reads only its arguments */
    .m_methods = methods,
    .m_slots = slots,
};

PyMODINIT_FUNC
PyInit__repeats(void)
{
    return PyModuleDef_Init(&module);
}
