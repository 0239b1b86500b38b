/* Optional speedup for the findings checks' duplicate-id test (the reference is findings._ids_repeat).
 *
 * repeats(kept_ids) -> bool: some id (the second of each (index, id) pair) occurs twice, None included.
 * keep_marked(items, marks, unset, kept, kept_ids, start) -> int: keeps the run of marked findings from start on
 * (the reference is findings._keep_marked).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* repeats(kept_ids) -> bool: some id (the second of each pair) occurs twice, None included; the reference is
 * findings._ids_repeat (len(set(ids)) != len(ids)). Equality is the set's for str and None, the only ids. */
static PyObject *
repeats(PyObject *module, PyObject *kept_ids)
{
    (void)module;
    if (!PyList_CheckExact(kept_ids)) {
        PyErr_SetString(PyExc_TypeError, "repeats(list of (index, id) pairs)");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(kept_ids);
    if (n > 64) {
        PyObject *ids = PySet_New(NULL);
        if (ids == NULL)
            return NULL;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *pair = PyList_GET_ITEM(kept_ids, i);
            if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2 || PySet_Add(ids, PyTuple_GET_ITEM(pair, 1)) < 0) {
                Py_DECREF(ids);
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_TypeError, "repeats(list of (index, id) pairs)");
                return NULL;
            }
        }
        int repeat = PySet_GET_SIZE(ids) != n;
        Py_DECREF(ids);
        return PyBool_FromLong(repeat);
    }
    PyObject *ids[64];
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PyList_GET_ITEM(kept_ids, i);
        if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_SetString(PyExc_TypeError, "repeats(list of (index, id) pairs)");
            return NULL;
        }
        PyObject *id = PyTuple_GET_ITEM(pair, 1);
        for (Py_ssize_t j = 0; j < i; j++) {
            PyObject *other = ids[j];
            int same;
            if (id == other) {
                same = 1;
            } else if (PyUnicode_CheckExact(id) && PyUnicode_CheckExact(other)) {
                Py_ssize_t len = PyUnicode_GET_LENGTH(id);
                same = PyUnicode_GET_LENGTH(other) == len && PyUnicode_KIND(id) == PyUnicode_KIND(other) &&
                       memcmp(PyUnicode_DATA(id), PyUnicode_DATA(other), (size_t)len * PyUnicode_KIND(id)) == 0;
            } else if ((id == Py_None || PyUnicode_CheckExact(id)) && (other == Py_None || PyUnicode_CheckExact(other))) {
                same = 0; /* None against a str (two Nones are the same object) */
            } else {
                Py_hash_t a = PyObject_Hash(id), b = a == -1 ? -1 : PyObject_Hash(other);
                if (b == -1)
                    return NULL;
                same = a == b ? PyObject_RichCompareBool(id, other, Py_EQ) : 0;
                if (same < 0)
                    return NULL;
            }
            if (same)
                Py_RETURN_TRUE;
        }
        ids[i] = id;
    }
    Py_RETURN_FALSE;
}

/* keep_marked(items, marks, unset, kept, kept_ids, start) -> int: from index start on, while marks[index] is not
 * unset, appends items[index] to kept and (index, marks[index]) to kept_ids; returns the first index marked unset,
 * else len(items). The reference is findings._keep_marked. */
static PyObject *
keep_marked(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    static const char usage[] = "keep_marked(items: list, marks: list, unset, kept: list, kept_ids: list, start: int)";
    if (nargs != 6 || !PyList_CheckExact(args[0]) || !PyList_CheckExact(args[1]) || !PyList_CheckExact(args[3]) ||
        !PyList_CheckExact(args[4]) || !PyLong_CheckExact(args[5])) {
        PyErr_SetString(PyExc_TypeError, usage);
        return NULL;
    }
    PyObject *items = args[0], *marks = args[1], *unset = args[2], *kept = args[3], *kept_ids = args[4];
    Py_ssize_t start = PyLong_AsSsize_t(args[5]);
    if (start == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(items);
    if (PyList_GET_SIZE(marks) != n || start < 0 || start > n) {
        PyErr_SetString(PyExc_ValueError, "keep_marked: one mark per item, and start within the items");
        return NULL;
    }
    Py_ssize_t index = start;
    for (; index < n; index++) {
        /* Appending to kept and kept_ids runs no Python code, so neither list changes under the loop. */
        PyObject *mark = PyList_GET_ITEM(marks, index);
        if (mark == unset)
            break;
        PyObject *pair = PyTuple_New(2);
        if (pair == NULL)
            return NULL;
        PyObject *position = PyLong_FromSsize_t(index);
        if (position == NULL) {
            Py_DECREF(pair);
            return NULL;
        }
        PyTuple_SET_ITEM(pair, 0, position);
        Py_INCREF(mark);
        PyTuple_SET_ITEM(pair, 1, mark);
        int failed = PyList_Append(kept, PyList_GET_ITEM(items, index)) < 0 || PyList_Append(kept_ids, pair) < 0;
        Py_DECREF(pair);
        if (failed)
            return NULL;
    }
    return PyLong_FromSsize_t(index);
}

static PyMethodDef methods[] = {
    {"repeats", (PyCFunction)repeats, METH_O, "Some id of the (index, id) pairs occurs twice."},
    {"keep_marked", (PyCFunction)(void (*)(void))keep_marked, METH_FASTCALL,
     "Keep the run of marked findings from start on; the next unmarked index."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ids", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__ids(void)
{
    return PyModule_Create(&module);
}
