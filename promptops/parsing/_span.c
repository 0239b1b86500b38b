/* Optional speedup for the generic reader's bracket matching (promptops/parsing/walks.py holds the
 * references: _span_end, _span and brackets_at_most).
 *
 * span_end(text, start) -> int: index just after the bracket that closes the object or array opened at
 * text[start], skipping strings; -1 when the text ends first.
 * span(text, start) -> (int, int): that index, and the deepest nesting the walk reached (so the reader need
 * not walk the span again to check the depth limit).
 * brackets_at_most(data, limit) -> bool: data (str or bytes) holds at most limit '{' and '[' in all (the
 * reference counts them: data.count("{") + data.count("[") <= limit).
 * element_cut(data, key, index) -> (int, int, int, int) | None: where element index of the top-level member key
 * (an array) sits in the bytes data, and what to cut to remove it (the reference is splice.element_cut).
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

/* ---- element_cut: the reference is splice.element_cut; every step below mirrors one there ---- */

static Py_ssize_t
skip_space(const unsigned char *d, Py_ssize_t pos, Py_ssize_t size)
{
    while (pos < size && (d[pos] == ' ' || d[pos] == '\t' || d[pos] == '\n' || d[pos] == '\r'))
        pos++;
    return pos;
}

/* Index after the closing quote of a string whose body starts at pos, or -1: the first quote not preceded by an
 * odd run of backslashes within the body (what stepping over each backslash and the byte after it finds). */
static Py_ssize_t
string_end(const unsigned char *d, Py_ssize_t pos, Py_ssize_t size)
{
    Py_ssize_t from = pos;
    while (pos < size) {
        const unsigned char *q = memchr(d + pos, '"', (size_t)(size - pos));
        if (q == NULL)
            return -1;
        Py_ssize_t j = q - d, k = j;
        while (k > from && d[k - 1] == '\\')
            k--;
        if ((j - k) % 2 == 0)
            return j + 1;
        pos = j + 1;
    }
    return -1;
}

static Py_ssize_t
value_end(const unsigned char *d, Py_ssize_t pos, Py_ssize_t size)
{
    if (pos >= size)
        return -1;
    unsigned char c = d[pos];
    if (c == '"')
        return string_end(d, pos + 1, size);
    if (c == '{' || c == '[') {
        Py_ssize_t depth = 0;
        while (pos < size) {
            c = d[pos];
            if (c == '"') {
                pos = string_end(d, pos + 1, size);
                if (pos < 0)
                    return -1;
                continue;
            }
            if (c == '{' || c == '[')
                depth++;
            else if ((c == '}' || c == ']') && --depth == 0)
                return pos + 1;
            pos++;
        }
        return -1;
    }
    while (pos < size && !(c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == ']' || c == '}'))
        c = ++pos < size ? d[pos] : 0;
    return pos;
}

/* element_cut within the array that opens at pos; 1 with the four positions set, else 0. */
static int
element(const unsigned char *d, Py_ssize_t pos, Py_ssize_t size, Py_ssize_t index, Py_ssize_t place[4])
{
    if (pos >= size || d[pos] != '[')
        return 0;
    pos = skip_space(d, pos + 1, size);
    Py_ssize_t previous_end = -1;
    for (Py_ssize_t current = 0; current <= index; current++) {
        Py_ssize_t start = pos, end = value_end(d, pos, size);
        if (end < 0 || end == start)
            return 0;
        Py_ssize_t after = skip_space(d, end, size);
        if (after >= size)
            return 0;
        if (current == index) {
            place[2] = start;
            place[3] = end;
            if (d[after] == ',') {
                place[0] = start;
                place[1] = skip_space(d, after + 1, size);
                return 1;
            }
            if (d[after] != ']')
                return 0;
            place[0] = previous_end >= 0 ? previous_end : start;
            place[1] = end;
            return 1;
        }
        if (d[after] != ',')
            return 0;
        previous_end = end;
        pos = skip_space(d, after + 1, size);
    }
    return 0;
}

static PyObject *
element_cut(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 3 || !PyBytes_Check(args[0]) || !PyBytes_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "element_cut(data: bytes, key: bytes, index: int)");
        return NULL;
    }
    Py_ssize_t index = PyLong_AsSsize_t(args[2]);
    if (index == -1 && PyErr_Occurred())
        return NULL;
    const unsigned char *d = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    const char *key = PyBytes_AS_STRING(args[1]);
    Py_ssize_t size = PyBytes_GET_SIZE(args[0]), key_size = PyBytes_GET_SIZE(args[1]);
    Py_ssize_t place[4];
    Py_ssize_t pos = skip_space(d, 0, size);
    if (index < 0 || pos >= size || d[pos] != '{')
        Py_RETURN_NONE;
    pos = skip_space(d, pos + 1, size);
    while (pos < size && d[pos] == '"') {
        Py_ssize_t end = string_end(d, pos + 1, size);
        if (end < 0)
            Py_RETURN_NONE;
        int named = end - pos - 2 == key_size && memcmp(d + pos + 1, key, (size_t)key_size) == 0;
        pos = skip_space(d, end, size);
        if (pos >= size || d[pos] != ':')
            Py_RETURN_NONE;
        pos = skip_space(d, pos + 1, size);
        if (named) {
            if (!element(d, pos, size, index, place))
                Py_RETURN_NONE;
            return Py_BuildValue("(nnnn)", place[0], place[1], place[2], place[3]);
        }
        pos = value_end(d, pos, size);
        if (pos < 0)
            Py_RETURN_NONE;
        pos = skip_space(d, pos, size);
        if (pos >= size || d[pos] != ',')
            Py_RETURN_NONE;
        pos = skip_space(d, pos + 1, size);
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"span_end", (PyCFunction)(void (*)(void))span_end, METH_FASTCALL,
     "Index after the bracket closing the one at text[start], or -1 when the text ends first."},
    {"span", (PyCFunction)(void (*)(void))span, METH_FASTCALL,
     "(span_end(text, start), the deepest nesting reached on the way)."},
    {"brackets_at_most", (PyCFunction)(void (*)(void))brackets_at_most, METH_FASTCALL,
     "Whether data holds at most limit '{' and '[' in all."},
    {"element_cut", (PyCFunction)(void (*)(void))element_cut, METH_FASTCALL,
     "Where element index of the top-level array member key sits in data, and what to cut to remove it."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_span", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__span(void)
{
    return PyModule_Create(&module);
}
