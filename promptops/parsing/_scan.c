/* Optional speedup for the parser's fast path (promptops/parsing/scan.py holds the reference version).
 *
 * clean(data) -> bool: True only when, in the JSON text `data`, no string (key or value) starts or ends with
 * a character Python's str.strip() would remove, and no object repeats a key. It is a conservative gate:
 * False means "let the diagnostic path look", never "invalid", so anything unusual (escaped keys, very deep
 * or very wide objects, malformed text) answers False. One pass, no allocation.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#define MAX_DEPTH 256
#define MAX_KEYS 128

typedef struct {
    const unsigned char *ptr;
    Py_ssize_t len;
} Key;

typedef struct {
    int is_object;
    int expect_key;
    int nkeys;
    int first_key; /* index of the frame's first key in the shared key stack */
} Frame;

/* Python's str.isspace() code points. */
static int
is_space_cp(unsigned long cp)
{
    return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
           cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
           cp == 0x205F || cp == 0x3000;
}

static int
hex4(const unsigned char *p, const unsigned char *end, unsigned long *out)
{
    unsigned long value = 0;
    if (end - p < 4)
        return 0;
    for (int i = 0; i < 4; i++) {
        unsigned char c = p[i];
        value <<= 4;
        if (c >= '0' && c <= '9')
            value |= (unsigned long)(c - '0');
        else if (c >= 'a' && c <= 'f')
            value |= (unsigned long)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            value |= (unsigned long)(c - 'A' + 10);
        else
            return 0;
    }
    *out = value;
    return 1;
}

/* Is the escape sequence at p (p[0] == '\\') a whitespace character? -1 when malformed. */
static int
escape_is_space(const unsigned char *p, const unsigned char *end)
{
    unsigned long cp;
    if (end - p < 2)
        return -1;
    switch (p[1]) {
    case 'n': case 't': case 'r': case 'f':
        return 1;
    case 'u':
        if (!hex4(p + 2, end, &cp))
            return -1;
        return is_space_cp(cp);
    default:
        return 0;
    }
}

/* Decode the UTF-8 character starting at p; its length goes to *len. Raw ASCII and malformed bytes give
 * their byte value. */
static unsigned long
utf8_at(const unsigned char *p, const unsigned char *end, int *len)
{
    unsigned char c = p[0];
    if (c < 0x80 || c < 0xC2) {
        *len = 1;
        return c;
    }
    if (c < 0xE0 && end - p >= 2) {
        *len = 2;
        return ((unsigned long)(c & 0x1F) << 6) | (p[1] & 0x3F);
    }
    if (c < 0xF0 && end - p >= 3) {
        *len = 3;
        return ((unsigned long)(c & 0x0F) << 12) | ((unsigned long)(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
    }
    *len = 1;
    return c; /* 4-byte characters are never whitespace */
}

/* Is the UTF-8 character ending right before q a whitespace character? */
static int
ends_with_space_utf8(const unsigned char *start, const unsigned char *q)
{
    const unsigned char *p = q - 1;
    int len;
    while (p > start && (*p & 0xC0) == 0x80 && q - p < 4)
        p--; /* back to the lead byte */
    unsigned long cp = utf8_at(p, q, &len);
    return p + len == q && is_space_cp(cp);
}

static int
keys_equal(const Key *a, const unsigned char *ptr, Py_ssize_t len)
{
    return a->len == len && memcmp(a->ptr, ptr, (size_t)len) == 0;
}

static int
scan(const unsigned char *data, Py_ssize_t size)
{
    const unsigned char *p = data, *end = data + size;
    Frame frames[MAX_DEPTH];
    Key keys[MAX_KEYS];
    int depth = 0, nkeys = 0;

    while (p < end) {
        unsigned char c = *p;
        if (c == '"') {
            const unsigned char *start = ++p;
            const unsigned char *last_escape = NULL; /* start of the escape ending the content, if any */
            int has_escape = 0;
            if (p < end) {
                if (*p == '\\') {
                    int space = escape_is_space(p, end);
                    if (space != 0)
                        return 0;
                }
                else if (*p >= 0x80) {
                    int len;
                    if (is_space_cp(utf8_at(p, end, &len)))
                        return 0;
                }
                else if (*p <= ' ')
                    return 0;
            }
            for (;;) {
                while (p < end && *p != '"' && *p != '\\')
                    p++;
                if (p >= end)
                    return 0; /* unterminated string */
                if (*p == '"')
                    break;
                has_escape = 1;
                last_escape = p;
                if (end - p < 2)
                    return 0;
                p += (p[1] == 'u') ? 6 : 2;
                if (p > end)
                    return 0;
            }
            const unsigned char *q = p; /* closing quote */
            if (q > start) {
                if (last_escape != NULL && last_escape + (last_escape[1] == 'u' ? 6 : 2) == q) {
                    if (escape_is_space(last_escape, q) != 0)
                        return 0;
                }
                else if (q[-1] >= 0x80) {
                    if (ends_with_space_utf8(start, q))
                        return 0;
                }
                else if (q[-1] <= ' ')
                    return 0;
            }
            if (depth > 0 && frames[depth - 1].is_object && frames[depth - 1].expect_key) {
                Frame *frame = &frames[depth - 1];
                Py_ssize_t len = q - start;
                if (has_escape || nkeys >= MAX_KEYS)
                    return 0; /* escaped spellings could alias: let the exact check decide */
                for (int i = frame->first_key; i < nkeys; i++)
                    if (keys_equal(&keys[i], start, len))
                        return 0;
                keys[nkeys].ptr = start;
                keys[nkeys].len = len;
                nkeys++;
                frame->nkeys++;
                frame->expect_key = 0;
            }
            p = q + 1;
            continue;
        }
        switch (c) {
        case '{':
        case '[':
            if (depth >= MAX_DEPTH)
                return 0;
            frames[depth].is_object = (c == '{');
            frames[depth].expect_key = (c == '{');
            frames[depth].nkeys = 0;
            frames[depth].first_key = nkeys;
            depth++;
            break;
        case '}':
        case ']':
            if (depth == 0)
                return 0;
            depth--;
            nkeys = frames[depth].first_key; /* the object's keys are done with */
            break;
        case ',':
            if (depth > 0 && frames[depth - 1].is_object)
                frames[depth - 1].expect_key = 1;
            break;
        default:
            break;
        }
        p++;
    }
    return depth == 0;
}

static PyObject *
clean(PyObject *module, PyObject *arg)
{
    const char *data;
    Py_ssize_t size;
    if (PyBytes_Check(arg)) {
        data = PyBytes_AS_STRING(arg);
        size = PyBytes_GET_SIZE(arg);
    }
    else if (PyUnicode_Check(arg)) {
        data = PyUnicode_AsUTF8AndSize(arg, &size);
        if (data == NULL) {
            PyErr_Clear(); /* lone surrogates: not for the fast path */
            Py_RETURN_FALSE;
        }
    }
    else {
        PyErr_SetString(PyExc_TypeError, "clean() expects bytes or str");
        return NULL;
    }
    return PyBool_FromLong(scan((const unsigned char *)data, size));
}

static PyMethodDef methods[] = {
    {"clean", clean, METH_O,
     "True when no JSON string starts or ends with whitespace and no object repeats a key (conservative)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_scan", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__scan(void)
{
    return PyModule_Create(&module);
}
