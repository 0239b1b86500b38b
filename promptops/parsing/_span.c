/* Optional speedup for the generic reader's bracket matching (promptops/parsing/jsontext.py holds the
 * reference, _span_end).
 *
 * span_end(text, start) -> int: index just after the bracket that closes the object or array opened at
 * text[start], skipping strings; -1 when the text ends first.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* span_end for one-byte text: the same walk, with string bodies skipped by memchr. */
static Py_ssize_t
span_end_1byte(const unsigned char *data, Py_ssize_t start, Py_ssize_t length)
{
    Py_ssize_t depth = 0;
    for (Py_ssize_t i = start; i < length; i++) {
        unsigned char c = data[i];
        if (c == '"') {
            for (;;) { /* the closing quote is the first one not preceded by an odd run of backslashes */
                const unsigned char *q = memchr(data + i + 1, '"', (size_t)(length - i - 1));
                if (q == NULL)
                    return -1;
                Py_ssize_t j = q - data, k = j;
                while (k > i + 1 && data[k - 1] == '\\')
                    k--;
                i = j;
                if ((j - k) % 2 == 0)
                    break;
            }
        }
        else if (c == '{' || c == '[')
            depth++;
        else if (c == '}' || c == ']') {
            if (--depth == 0)
                return i + 1;
        }
    }
    return -1;
}

/* span_end(text, start) -> int: index just after the bracket that closes the object or array opened at
 * text[start], skipping strings; -1 when the text ends first. Brackets are matched by depth only: whether
 * the span is valid JSON is for the strict decoder to say. */
static PyObject *
span_end(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "span_end(text: str, start: int)");
        return NULL;
    }
    PyObject *text = args[0];
    Py_ssize_t start = PyLong_AsSsize_t(args[1]);
    if (start == -1 && PyErr_Occurred())
        return NULL;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t length = PyUnicode_GET_LENGTH(text);
    Py_ssize_t depth = 0;
    if (kind == PyUnicode_1BYTE_KIND && start >= 0)
        return PyLong_FromSsize_t(span_end_1byte((const unsigned char *)data, start, length));
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
                return PyLong_FromSsize_t(-1);
        }
        else if (c == '{' || c == '[')
            depth++;
        else if (c == '}' || c == ']') {
            if (--depth == 0)
                return PyLong_FromSsize_t(i + 1);
        }
    }
    return PyLong_FromSsize_t(-1);
}

static PyMethodDef methods[] = {
    {"span_end", (PyCFunction)(void (*)(void))span_end, METH_FASTCALL,
     "Index after the bracket closing the one at text[start], or -1 when the text ends first."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_span", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__span(void)
{
    return PyModule_Create(&module);
}
