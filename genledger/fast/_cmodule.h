/* What every C extension of genledger.fast shares: the UTF-8 rule a text's bytes are held to
 * and the module's definition (no module state, one interpreter or many). Included after
 * <Python.h>; each extension defines its `methods` table, then states GENLEDGER_MODULE. */
#ifndef GENLEDGER_CMODULE_H
#define GENLEDGER_CMODULE_H

typedef unsigned char byte;

/* The length of the well-formed UTF-8 sequence at data[at] (a byte >= 0x80), 0 if it is not
 * one (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF), as Python's strict
 * decoder and orjson's decode require. */
static inline Py_ssize_t
utf8_length(const byte *data, Py_ssize_t at, Py_ssize_t size)
{
    byte c = data[at];
    Py_ssize_t length;
    byte low = 0x80, high = 0xBF; /* the range of the second byte */
    if (c >= 0xC2 && c <= 0xDF)
        length = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        length = 3;
        if (c == 0xE0)
            low = 0xA0;
        else if (c == 0xED)
            high = 0x9F;
    }
    else if (c >= 0xF0 && c <= 0xF4) {
        length = 4;
        if (c == 0xF0)
            low = 0x90;
        else if (c == 0xF4)
            high = 0x8F;
    }
    else
        return 0;
    if (size - at < length || data[at + 1] < low || data[at + 1] > high)
        return 0;
    for (Py_ssize_t k = 2; k < length; k++)
        if (data[at + k] < 0x80 || data[at + k] > 0xBF)
            return 0;
    return length;
}

static PyModuleDef_Slot genledger_slots[] = {
#ifdef Py_mod_multiple_interpreters
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
#endif
    {0, NULL},
};

/* The module genledger.fast.NAME with the `methods` table above it and DOC; no module state:
 * every call reads only its arguments. */
#define GENLEDGER_MODULE(NAME, DOC)                                                          \
    static struct PyModuleDef genledger_module = {                                           \
        PyModuleDef_HEAD_INIT,                                                               \
        .m_name = "genledger.fast." #NAME,                                                   \
        .m_doc = DOC,                                                                        \
        .m_size = 0,                                                                         \
        .m_methods = methods,                                                                \
        .m_slots = genledger_slots,                                                          \
    };                                                                                       \
    PyMODINIT_FUNC PyInit_##NAME(void) { return PyModuleDef_Init(&genledger_module); }

#endif
