/* Value helpers of the C check of plain findings (_plain.c, the same extension module): the renderings and
 * tests of promptops/parsing/fields.py and reconcile.py it needs, exactly as Python computes them.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#define NOT_HANDLED ((PyObject *)1) /* as in _plain.c */

/* tuple.__new__(cls, items): a NamedTuple instance without running its Python-level __new__ (steals items). */
PyObject *
plain_named(PyObject *cls, PyObject *items)
{
    if (items == NULL)
        return NULL;
    PyObject *args = PyTuple_Pack(1, items);
    Py_DECREF(items);
    if (args == NULL)
        return NULL;
    PyObject *out = PyTuple_Type.tp_new((PyTypeObject *)cls, args, NULL);
    Py_DECREF(args);
    return out;
}

/* _show(value) of fields.py; NULL with an error, or NOT_HANDLED for a type it does not cover. */
PyObject *
plain_show(PyObject *value)
{
    if (PyUnicode_CheckExact(value)) {
        PyObject *r;
        if (PyUnicode_GET_LENGTH(value) <= 40) {
            r = PyObject_Repr(value);
        } else {
            PyObject *head = PyUnicode_Substring(value, 0, 37);
            if (head == NULL)
                return NULL;
            PyObject *cut = PyUnicode_FromFormat("%U...", head);
            Py_DECREF(head);
            if (cut == NULL)
                return NULL;
            r = PyObject_Repr(cut);
            Py_DECREF(cut);
        }
        if (r == NULL)
            return NULL;
        PyObject *out = PyUnicode_FromFormat("string %U", r);
        Py_DECREF(r);
        return out;
    }
    if (value == Py_True)
        return PyUnicode_FromString("true");
    if (value == Py_False)
        return PyUnicode_FromString("false");
    if (value == Py_None)
        return PyUnicode_FromString("null");
    if (PyLong_CheckExact(value) || PyFloat_CheckExact(value))
        return PyUnicode_FromFormat("number %R", value);
    if (PyList_CheckExact(value))
        return PyUnicode_FromString("an array");
    if (PyDict_CheckExact(value))
        return PyUnicode_FromString("an object");
    return NOT_HANDLED;
}

int
plain_is_space_edge(PyObject *s)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    if (n == 0)
        return 0;
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    return Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, 0)) ||
           Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, n - 1));
}

/* The integer of a string matching [+-]?[0-9]+(?:\.0+)?\Z (_INTEGRAL_STRING of fields.py), else Py_None
 * (a new reference either way, NULL on error). */
PyObject *
plain_integral_string(PyObject *s)
{
    if (!PyUnicode_IS_ASCII(s))
        Py_RETURN_NONE; /* every character the pattern accepts is ASCII */
    const char *c = (const char *)PyUnicode_DATA(s);
    Py_ssize_t n = PyUnicode_GET_LENGTH(s), i = 0;
    if (i < n && (c[i] == '+' || c[i] == '-'))
        i++;
    Py_ssize_t digits = i;
    while (i < n && c[i] >= '0' && c[i] <= '9')
        i++;
    if (i == digits)
        Py_RETURN_NONE;
    Py_ssize_t end = i;
    if (i < n) {
        if (c[i] != '.')
            Py_RETURN_NONE;
        i++;
        Py_ssize_t zeros = i;
        while (i < n && c[i] == '0')
            i++;
        if (i == zeros || i != n)
            Py_RETURN_NONE;
    }
    PyObject *head = PyUnicode_Substring(s, 0, end);
    if (head == NULL)
        return NULL;
    PyObject *number = PyLong_FromUnicodeObject(head, 10);
    Py_DECREF(head);
    return number;
}

/* 1 when `path` is an exact str among changed.listed (whose members are the normal changed files, so it is
 * then in `changed`), 0 when that does not say (ChangedFiles.__contains__ decides), -1 on error. */
int
plain_listed_has(PyObject *changed, PyObject *path)
{
    if (!PyUnicode_CheckExact(path))
        return 0;
    PyObject *listed = PyObject_GetAttrString(changed, "listed");
    if (listed == NULL) {
        PyErr_Clear();
        return 0;
    }
    int found = 0;
    if (PyTuple_CheckExact(listed)) {
        Py_ssize_t len = PyUnicode_GET_LENGTH(path);
        int kind = PyUnicode_KIND(path);
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(listed) && !found; i++) {
            PyObject *entry = PyTuple_GET_ITEM(listed, i);
            found = entry == path ||
                    (PyUnicode_CheckExact(entry) && PyUnicode_GET_LENGTH(entry) == len && PyUnicode_KIND(entry) == kind &&
                     memcmp(PyUnicode_DATA(entry), PyUnicode_DATA(path), (size_t)len * kind) == 0);
        }
    }
    Py_DECREF(listed);
    return found;
}

