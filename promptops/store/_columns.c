/* Optional speedup for the store's diagnostics batches (promptops/store/batch.py holds the reference,
 * python_diagnostics_table): the Arrow buffers of the Diagnostic objects' columns, built in one pass.
 *
 * diagnostic_columns(items, cls, code_type, fields) -> tuple | None
 *   `fields` are the member descriptors of cls's slots code, level, path, finding_index, finding_id, message.
 *   Returns one entry per field, in that order: (null_count, validity, offsets, data) for a string column,
 *   (null_count, validity, values) for finding_index; validity is None when there are no nulls. Offsets and
 *   values are little-endian int32 in bytes objects; data is a bytearray of UTF-8.
 * int32_column(values) -> bytes | None: the int32 values buffer of a list of ints.
 *
 * Both return None for anything pa.array might treat differently (or reject): an item that is not exactly
 * `cls`, a value other than None/str/code_type (or None/int for finding_index), an int outside int32, a string
 * without a UTF-8 form (lone surrogates), or more data than int32 offsets address. The caller then runs the
 * pure-Python path, which gives pyarrow's own result or its own exception.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#define NFIELDS 6
#define INDEX_FIELD 3 /* finding_index; the others are strings */
#define NSTRINGS (NFIELDS - 1)

typedef struct {
    PyObject *validity; /* bytes, zeroed; NULL until the column's first null */
    PyObject *offsets;  /* bytes of n + 1 int32 */
    PyObject *data;     /* bytearray, grown by doubling and cut to size at the end */
    Py_ssize_t used, capacity, nulls;
} StringColumn;

typedef struct {
    PyObject *validity, *values;
    Py_ssize_t nulls;
} IntColumn;

/* A validity bitmap with the first `upto` bits set (the rows before the first null). NULL on error. */
static PyObject *
new_validity(Py_ssize_t n, Py_ssize_t upto)
{
    PyObject *bitmap = PyBytes_FromStringAndSize(NULL, (n + 7) / 8);
    if (bitmap == NULL)
        return NULL;
    unsigned char *bits = (unsigned char *)PyBytes_AS_STRING(bitmap);
    memset(bits, 0, (size_t)(n + 7) / 8);
    memset(bits, 0xff, (size_t)(upto / 8));
    for (Py_ssize_t i = upto & ~(Py_ssize_t)7; i < upto; i++)
        bits[i >> 3] |= (unsigned char)(1u << (i & 7));
    return bitmap;
}

static inline void
set_valid(PyObject *validity, Py_ssize_t i)
{
    ((unsigned char *)PyBytes_AS_STRING(validity))[i >> 3] |= (unsigned char)(1u << (i & 7));
}

/* A ready str whose characters are its UTF-8 bytes. */
static inline int
ascii_str(PyObject *value)
{
#if PY_VERSION_HEX < 0x030C0000
    return PyUnicode_IS_READY(value) && PyUnicode_IS_ASCII(value);
#else
    return PyUnicode_IS_ASCII(value);
#endif
}

/* Appends `value` (None or an exact str / code_type) to the column at row i. 1 done, 0 not handled (no
 * exception set), -1 error. */
static inline int
append_string(StringColumn *column, PyObject *value, PyObject *code_type, Py_ssize_t i, Py_ssize_t n)
{
    int32_t *offsets = (int32_t *)PyBytes_AS_STRING(column->offsets);
    if (value == Py_None) {
        if (column->validity == NULL && (column->validity = new_validity(n, i)) == NULL)
            return -1;
        column->nulls++;
        offsets[i + 1] = (int32_t)column->used;
        return 1;
    }
    if (!PyUnicode_CheckExact(value) && (PyObject *)Py_TYPE(value) != code_type)
        return 0;
    const char *utf8;
    Py_ssize_t size;
    if (ascii_str(value)) {
        utf8 = (const char *)PyUnicode_DATA(value);
        size = PyUnicode_GET_LENGTH(value);
    }
    else if ((utf8 = PyUnicode_AsUTF8AndSize(value, &size)) == NULL) {
        PyErr_Clear(); /* no UTF-8 form: pa.array reports it, on the fallback path */
        return 0;
    }
    if (size > INT32_MAX - column->used)
        return 0; /* past int32 offsets: pa.array would chunk the column */
    if (column->used + size > column->capacity) {
        Py_ssize_t capacity = column->capacity * 2;
        if (capacity < column->used + size)
            capacity = column->used + size;
        if (PyByteArray_Resize(column->data, capacity) < 0)
            return -1;
        column->capacity = capacity;
    }
    memcpy(PyByteArray_AS_STRING(column->data) + column->used, utf8, (size_t)size);
    column->used += size;
    offsets[i + 1] = (int32_t)column->used;
    if (column->validity != NULL)
        set_valid(column->validity, i);
    return 1;
}

/* Like append_string for the int32 column. */
static inline int
append_int(IntColumn *column, PyObject *value, Py_ssize_t i, Py_ssize_t n)
{
    int32_t *values = (int32_t *)PyBytes_AS_STRING(column->values);
    if (value == Py_None) {
        if (column->validity == NULL && (column->validity = new_validity(n, i)) == NULL)
            return -1;
        column->nulls++;
        values[i] = 0;
        return 1;
    }
    if (!PyLong_CheckExact(value))
        return 0;
    int overflow;
    long number = PyLong_AsLongAndOverflow(value, &overflow);
    if (overflow || number < INT32_MIN || number > INT32_MAX)
        return 0;
    values[i] = (int32_t)number;
    if (column->validity != NULL)
        set_valid(column->validity, i);
    return 1;
}

/* The slots' offsets in cls, when every descriptor is an object slot of exactly cls. */
static int
slot_offsets(PyObject *cls, PyObject *fields, Py_ssize_t offsets[NFIELDS])
{
    if (!PyTuple_CheckExact(fields) || PyTuple_GET_SIZE(fields) != NFIELDS)
        return 0;
    for (int f = 0; f < NFIELDS; f++) {
        PyObject *field = PyTuple_GET_ITEM(fields, f);
        if (!Py_IS_TYPE(field, &PyMemberDescr_Type))
            return 0;
        PyMemberDescrObject *descr = (PyMemberDescrObject *)field;
        if (descr->d_member->type != T_OBJECT_EX || (PyObject *)descr->d_common.d_type != cls)
            return 0;
        offsets[f] = descr->d_member->offset;
    }
    return 1;
}

static PyObject *
string_entry(StringColumn *column)
{
    if (PyByteArray_Resize(column->data, column->used) < 0)
        return NULL;
    return Py_BuildValue("(nOOO)", column->nulls, column->validity ? column->validity : Py_None, column->offsets,
                         column->data);
}

static PyObject *
diagnostic_columns(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "diagnostic_columns(items, cls, code_type, fields)");
        return NULL;
    }
    PyObject *items = args[0], *cls = args[1], *code_type = args[2];
    Py_ssize_t slots[NFIELDS];
    if (!PyList_CheckExact(items) || !PyType_Check(cls) || !PyType_Check(code_type) ||
        !slot_offsets(cls, args[3], slots))
        Py_RETURN_NONE;
    Py_ssize_t n = PyList_GET_SIZE(items);
    if (n > INT32_MAX)
        Py_RETURN_NONE;
    StringColumn strings[NSTRINGS] = {{0}};
    IntColumn index = {0};
    PyObject *result = NULL;
    int done = 1;
    for (int s = 0; s < NSTRINGS; s++) {
        Py_ssize_t capacity = n * 16 > 64 ? n * 16 : 64; /* grown as needed: a first guess */
        if ((strings[s].offsets = PyBytes_FromStringAndSize(NULL, (n + 1) * 4)) == NULL ||
            (strings[s].data = PyByteArray_FromStringAndSize(NULL, capacity)) == NULL)
            goto finally;
        strings[s].capacity = capacity;
        ((int32_t *)PyBytes_AS_STRING(strings[s].offsets))[0] = 0;
    }
    if ((index.values = PyBytes_FromStringAndSize(NULL, n * 4)) == NULL)
        goto finally;
    /* No Python code runs in this loop (exact strs and ints only), so the list and its items stay put. */
    for (Py_ssize_t i = 0; i < n && done == 1; i++) {
        PyObject *item = PyList_GET_ITEM(items, i);
        if ((PyObject *)Py_TYPE(item) != cls) {
            done = 0;
            break;
        }
        for (int f = 0, s = 0; f < NFIELDS && done == 1; f++) {
            PyObject *value = *(PyObject **)((char *)item + slots[f]);
            if (value == NULL) /* an unset slot: the reference raises AttributeError */
                done = 0;
            else if (f == INDEX_FIELD)
                done = append_int(&index, value, i, n);
            else
                done = append_string(&strings[s++], value, code_type, i, n);
        }
    }
    if (done < 0)
        goto finally;
    if (done == 0) {
        result = Py_NewRef(Py_None);
        goto finally;
    }
    PyObject *entries[NFIELDS] = {NULL};
    for (int f = 0, s = 0; f < NFIELDS; f++) {
        entries[f] = f == INDEX_FIELD ? Py_BuildValue("(nOO)", index.nulls, index.validity ? index.validity : Py_None,
                                                      index.values)
                                      : string_entry(&strings[s++]);
        if (entries[f] == NULL) {
            for (int g = 0; g < f; g++)
                Py_DECREF(entries[g]);
            goto finally;
        }
    }
    result = PyTuple_New(NFIELDS);
    for (int f = 0; f < NFIELDS; f++) {
        if (result == NULL)
            Py_DECREF(entries[f]);
        else
            PyTuple_SET_ITEM(result, f, entries[f]);
    }
finally:
    for (int s = 0; s < NSTRINGS; s++) {
        Py_XDECREF(strings[s].validity);
        Py_XDECREF(strings[s].offsets);
        Py_XDECREF(strings[s].data);
    }
    Py_XDECREF(index.validity);
    Py_XDECREF(index.values);
    return result;
}

static PyObject *
int32_column(PyObject *module, PyObject *values)
{
    if (!PyList_CheckExact(values))
        Py_RETURN_NONE;
    Py_ssize_t n = PyList_GET_SIZE(values);
    PyObject *buffer = PyBytes_FromStringAndSize(NULL, n * 4);
    if (buffer == NULL)
        return NULL;
    int32_t *out = (int32_t *)PyBytes_AS_STRING(buffer);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *value = PyList_GET_ITEM(values, i);
        int overflow;
        long number = PyLong_CheckExact(value) ? PyLong_AsLongAndOverflow(value, &overflow) : (overflow = 1, 0);
        if (overflow || number < INT32_MIN || number > INT32_MAX) {
            Py_DECREF(buffer);
            Py_RETURN_NONE;
        }
        out[i] = (int32_t)number;
    }
    return buffer;
}

static PyMethodDef methods[] = {
    {"diagnostic_columns", (PyCFunction)(void (*)(void))diagnostic_columns, METH_FASTCALL,
     "Arrow buffers of Diagnostic objects' columns, or None when the pure-Python path must decide."},
    {"int32_column", int32_column, METH_O, "The int32 Arrow values buffer of a list of ints, or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_columns", NULL, 0, methods};

PyMODINIT_FUNC
PyInit__columns(void)
{
    return PyModule_Create(&module);
}
