/* The columns the books read, taken out of a chunk's row tuples in one C pass
 * (genledger.fast.columns; its Python definition is `taken`). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_cmodule.h"

/* One column being made: its kind and place, its values' and present bytes' buffers, and
 * for a coded column its distinct values (a list) and their codes (a dict). */
typedef struct {
    char kind;
    Py_ssize_t place;
    PyObject *values, *present, *distinct, *codes;
    PyObject *last; /* a coded column's last value (borrowed: the rows hold it) and its code */
    Py_ssize_t last_code;
} Made;

/* An int value: 1 (and `*out`) for null (0) or an int within int64 (a bool is an int to
 * the row pass too), 0 for anything else. */
static inline int
int_value(PyObject *v, int64_t *out, byte *present)
{
    if (v == Py_None) {
        *out = 0;
        *present = 0;
        return 1;
    }
    if (!PyLong_CheckExact(v) && !PyBool_Check(v))
        return 0;
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow)
        return 0;
    *out = (int64_t)x;
    *present = 1;
    return 1;
}

/* A text's code among the column's distinct values (a new one appended): >= 0, -2 for a
 * value that is no exact str nor None (not clean), -1 on an error. */
static inline Py_ssize_t
code_of(Made *m, PyObject *v)
{
    if (v == m->last) /* the same object as the row before's: the same code */
        return m->last_code;
    if (v != Py_None && !PyUnicode_CheckExact(v))
        return -2;
    m->last = v;
    m->last_code = -1;
    PyObject *found = PyDict_GetItemWithError(m->codes, v);
    if (found)
        return m->last_code = PyLong_AsSsize_t(found);
    if (PyErr_Occurred())
        return -1;
    Py_ssize_t code = PyList_GET_SIZE(m->distinct);
    PyObject *index = PyLong_FromSsize_t(code);
    if (!index || PyDict_SetItem(m->codes, v, index) < 0 || PyList_Append(m->distinct, v) < 0)
        code = -1;
    Py_XDECREF(index);
    return m->last_code = code;
}

/* The buffers of a column of `n` rows: 0, or -1 on an error. */
static int
begin(Made *m, Py_ssize_t n)
{
    Py_ssize_t width = m->kind == 'b' ? 1 : (Py_ssize_t)sizeof(int64_t);
    if (m->kind == 'o')
        m->values = PyList_New(n);
    else
        m->values = PyByteArray_FromStringAndSize(NULL, n * width);
    m->present = PyByteArray_FromStringAndSize(NULL, n);
    if (m->kind == 'c') {
        m->distinct = PyList_New(0);
        m->codes = PyDict_New();
    }
    if (!m->values || !m->present || (m->kind == 'c' && (!m->distinct || !m->codes)))
        return -1;
    return 0;
}

/* Row `i`'s value `v` into its column: 1, 0 when not clean, -1 on an error. */
static inline int
put(Made *m, Py_ssize_t i, PyObject *v)
{
    byte *present = (byte *)PyByteArray_AS_STRING(m->present) + i;
    switch (m->kind) {
    case 'i':
        return int_value(v, (int64_t *)(void *)PyByteArray_AS_STRING(m->values) + i, present);
    case 'b': /* read as a condition, a flag holds only where it is True itself */
        ((byte *)PyByteArray_AS_STRING(m->values))[i] = v == Py_True;
        *present = 1;
        return 1;
    case 'c': {
        Py_ssize_t code = code_of(m, v);
        if (code < 0)
            return code == -2 ? 0 : -1;
        ((int64_t *)(void *)PyByteArray_AS_STRING(m->values))[i] = code;
        *present = v != Py_None;
        return 1;
    }
    default:
        PyList_SET_ITEM(m->values, i, Py_NewRef(v));
        *present = v != Py_None;
        return 1;
    }
}

/* columns(rows, places, kinds): see the method's doc. */
static PyObject *
columns(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *rows, *places, *out = NULL;
    const char *kinds;
    Py_ssize_t n_kinds;
    if (!PyArg_ParseTuple(args, "O!O!y#:columns", &PyList_Type, &rows, &PyTuple_Type, &places,
                          &kinds, &n_kinds))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(rows), m = PyTuple_GET_SIZE(places), widest = -1;
    if (n_kinds != m) {
        PyErr_SetString(PyExc_ValueError, "columns: a kind for each place");
        return NULL;
    }
    Made *made = PyMem_Calloc(m ? (size_t)m : 1, sizeof(Made));
    if (!made)
        return PyErr_NoMemory();
    int status = 1;
    for (Py_ssize_t j = 0; j < m && status > 0; j++) {
        made[j].kind = kinds[j];
        made[j].place = PyLong_AsSsize_t(PyTuple_GET_ITEM(places, j));
        if (made[j].place < 0 || !kinds[j] || !strchr("ibco", kinds[j])) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "columns: places >= 0, kinds i, b, c or o");
            status = -1;
        } else if (begin(&made[j], n) < 0)
            status = -1;
        else if (made[j].place > widest)
            widest = made[j].place;
    }
    /* row by row, every column of a row while it is in cache */
    for (Py_ssize_t i = 0; i < n && status > 0; i++) {
        PyObject *row = PyList_GET_ITEM(rows, i);
        if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) <= widest) {
            status = 0; /* not a row of the table: the row pass reads them */
            break;
        }
        for (Py_ssize_t j = 0; j < m && status > 0; j++)
            status = put(&made[j], i, PyTuple_GET_ITEM(row, made[j].place));
    }
    if (status > 0 && (out = PyList_New(m)))
        for (Py_ssize_t j = 0; j < m; j++) {
            PyObject *third = made[j].distinct ? made[j].distinct : Py_None;
            PyObject *one = PyTuple_Pack(3, made[j].values, made[j].present, third);
            if (!one) {
                Py_CLEAR(out);
                break;
            }
            PyList_SET_ITEM(out, j, one);
        }
    for (Py_ssize_t j = 0; j < m; j++) {
        Py_XDECREF(made[j].values);
        Py_XDECREF(made[j].present);
        Py_XDECREF(made[j].distinct);
        Py_XDECREF(made[j].codes);
    }
    PyMem_Free(made);
    if (status == 0)
        Py_RETURN_NONE;
    return out;
}

static PyMethodDef methods[] = {
    {"columns", columns, METH_VARARGS,
     "columns(rows, places, kinds): the columns at `places` of a list of row tuples, in one "
     "pass over the rows, each as (values, present, distinct), present a byte a row (not "
     "None): kind 'i' int64 values in a bytearray (0 where null); 'b' a byte a row, 1 where "
     "the value is True itself; 'c' a text coded: each row's int64 index into `distinct`, "
     "the column's distinct values (None among them) in first-seen order; 'o' the values in "
     "a list. `distinct` is None but for 'c'. None when a row is no tuple holding every "
     "place, an 'i' value is neither null nor an int within int64, or a 'c' value neither "
     "null nor a str: genledger.fast.columns.taken in C."},
    {NULL, NULL, 0, NULL},
};

GENLEDGER_MODULE(_columns, "The books' columns out of row tuples (genledger.fast.columns).")
