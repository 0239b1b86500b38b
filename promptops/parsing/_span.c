/* Optional speedup for the generic reader's bracket matching (promptops/parsing/walks.py holds the
 * references: _span_end, _span and brackets_at_most).
 *
 * span_end(text, start) -> int: index just after the bracket that closes the object or array opened at
 * text[start], skipping strings; -1 when the text ends first.
 * span(text, start) -> (int, int): that index, and the deepest nesting the walk reached (so the reader need
 * not walk the span again to check the depth limit).
 * brackets_at_most(data, limit) -> bool: data (str or bytes) holds at most limit '{' and '[' in all (the
 * reference counts them: data.count("{") + data.count("[") <= limit).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* The walk for one-byte text, with string bodies skipped by memchr. */
static Py_ssize_t
walk_1byte(const unsigned char *data, Py_ssize_t start, Py_ssize_t length, Py_ssize_t *deepest)
{
    Py_ssize_t depth = 0, most = 0, end = -1;
    for (Py_ssize_t i = start; i < length; i++) {
        unsigned char c = data[i];
        if (c == '"') {
            for (;;) { /* the closing quote is the first one not preceded by an odd run of backslashes */
                const unsigned char *q = memchr(data + i + 1, '"', (size_t)(length - i - 1));
                if (q == NULL)
                    goto done;
                Py_ssize_t j = q - data, k = j;
                while (k > i + 1 && data[k - 1] == '\\')
                    k--;
                i = j;
                if ((j - k) % 2 == 0)
                    break;
            }
        }
        else if (c == '{' || c == '[') {
            if (++depth > most)
                most = depth;
        }
        else if (c == '}' || c == ']') {
            if (--depth == 0) {
                end = i + 1;
                goto done;
            }
        }
    }
done:
    *deepest = most;
    return end;
}

/* The same walk for any kind of text. */
static Py_ssize_t
walk(PyObject *text, Py_ssize_t start, Py_ssize_t *deepest)
{
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t length = PyUnicode_GET_LENGTH(text);
    if (start < 0)
        start = 0; /* Python's reference searches from max(start, 0) too */
    if (kind == PyUnicode_1BYTE_KIND)
        return walk_1byte((const unsigned char *)data, start, length, deepest);
    Py_ssize_t depth = 0, most = 0, end = -1;
    for (Py_ssize_t i = start; i < length; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c == '"') {
            for (i++; i < length; i++) {
                Py_UCS4 d = PyUnicode_READ(kind, data, i);
                if (d == '\\')
                    i++;
                else if (d == '"')
                    break;
            }
            if (i >= length)
                break;
        }
        else if (c == '{' || c == '[') {
            if (++depth > most)
                most = depth;
        }
        else if (c == '}' || c == ']') {
            if (--depth == 0) {
                end = i + 1;
                break;
            }
        }
    }
    *deepest = most;
    return end;
}

static int
arguments(PyObject *const *args, Py_ssize_t nargs, const char *usage, Py_ssize_t *start)
{
    if (nargs != 2 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, usage);
        return -1;
    }
    *start = PyLong_AsSsize_t(args[1]);
    if (*start == -1 && PyErr_Occurred())
        return -1;
    return 0;
}

/* Brackets are matched by depth only: whether the span is valid JSON is for the strict decoder to say. */
static PyObject *
span_end(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t start, deepest;
    if (arguments(args, nargs, "span_end(text: str, start: int)", &start) < 0)
        return NULL;
    return PyLong_FromSsize_t(walk(args[0], start, &deepest));
}

static PyObject *
span(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t start, deepest;
    if (arguments(args, nargs, "span(text: str, start: int)", &start) < 0)
        return NULL;
    Py_ssize_t end = walk(args[0], start, &deepest);
    return Py_BuildValue("(nn)", end, deepest);
}

/* How many c in p[0:n], counting no further than limit + 1: memchr hops from one to the next. */
static Py_ssize_t
count_upto(const char *p, Py_ssize_t n, char c, Py_ssize_t limit)
{
    const char *end = p + n;
    Py_ssize_t count = 0;
    while (p < end && (p = memchr(p, c, (size_t)(end - p))) != NULL) {
        if (++count > limit)
            break;
        p++;
    }
    return count;
}

static PyObject *
brackets_at_most(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "brackets_at_most(data: str | bytes, limit: int)");
        return NULL;
    }
    PyObject *data = args[0];
    Py_ssize_t limit = PyLong_AsSsize_t(args[1]);
    if (limit == -1 && PyErr_Occurred())
        return NULL;
    if (limit < 0)
        Py_RETURN_FALSE;
    const char *bytes = NULL;
    Py_ssize_t length = 0;
    if (PyBytes_Check(data)) {
        bytes = PyBytes_AS_STRING(data);
        length = PyBytes_GET_SIZE(data);
    }
    else if (PyUnicode_Check(data)) {
        if (PyUnicode_KIND(data) == PyUnicode_1BYTE_KIND) {
            bytes = (const char *)PyUnicode_DATA(data);
            length = PyUnicode_GET_LENGTH(data);
        }
        else {
            int kind = PyUnicode_KIND(data);
            const void *chars = PyUnicode_DATA(data);
            Py_ssize_t count = 0, n = PyUnicode_GET_LENGTH(data);
            for (Py_ssize_t i = 0; i < n && count <= limit; i++) {
                Py_UCS4 c = PyUnicode_READ(kind, chars, i);
                count += c == '{' || c == '[';
            }
            return PyBool_FromLong(count <= limit);
        }
    }
    else {
        PyErr_SetString(PyExc_TypeError, "brackets_at_most: data must be str or bytes");
        return NULL;
    }
    Py_ssize_t braces = count_upto(bytes, length, '{', limit);
    if (braces > limit)
        Py_RETURN_FALSE;
    return PyBool_FromLong(braces + count_upto(bytes, length, '[', limit - braces) <= limit);
}

static PyMethodDef methods[] = {
    {"span_end", (PyCFunction)(void (*)(void))span_end, METH_FASTCALL,
     "Index after the bracket closing the one at text[start], or -1 when the text ends first."},
    {"span", (PyCFunction)(void (*)(void))span, METH_FASTCALL,
     "(span_end(text, start), the deepest nesting reached on the way)."},
    {"brackets_at_most", (PyCFunction)(void (*)(void))brackets_at_most, METH_FASTCALL,
     "Whether data holds at most limit '{' and '[' in all."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_span", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__span(void)
{
    return PyModule_Create(&module);
}
