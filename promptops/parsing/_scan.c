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
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define MAX_DEPTH 256
#define MAX_KEYS 128

typedef struct {
    const unsigned char *ptr;
    Py_ssize_t len;
    unsigned int hash;
} Key;

typedef struct {
    int is_object;
    int expect_key;
    int first_key;           /* index of the frame's first key in the shared key stack */
    unsigned long long seen; /* one bit per key hash: most objects never need a key comparison */
} Frame;

/* Bytes that end a run inside a string, and bytes that matter between strings. */
static unsigned char string_stop[256];
static unsigned char structural[256];

static void
init_tables(void)
{
    string_stop['"'] = string_stop['\\'] = 1;
    structural['"'] = structural['{'] = structural['}'] = 1;
    structural['['] = structural[']'] = structural[','] = 1;
}

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



/* First byte at or after p that is '"' or '\\' (end when none). SSE2 checks 16 bytes per step: string
 * bodies are most of a response, so this loop is where the time goes. */
static const unsigned char *
find_string_stop(const unsigned char *p, const unsigned char *end)
{
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), slash = _mm_set1_epi8('\\');
    while (end - p >= 16) {
        __m128i chunk = _mm_loadu_si128((const __m128i *)p);
        int mask = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(chunk, quote), _mm_cmpeq_epi8(chunk, slash)));
        if (mask)
            return p + __builtin_ctz((unsigned)mask);
        p += 16;
    }
#endif
    while (p < end && !string_stop[*p])
        p++;
    return p;
}

/* First byte at or after p that opens or closes a string, object or array, or separates members. */
static const unsigned char *
find_structural(const unsigned char *p, const unsigned char *end)
{
#ifdef __SSE2__
    const __m128i q = _mm_set1_epi8('"'), lb = _mm_set1_epi8('{'), rb = _mm_set1_epi8('}');
    const __m128i ls = _mm_set1_epi8('['), rs = _mm_set1_epi8(']'), comma = _mm_set1_epi8(',');
    while (end - p >= 16) {
        __m128i c = _mm_loadu_si128((const __m128i *)p);
        __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(c, q), _mm_cmpeq_epi8(c, comma)),
                                   _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(c, lb), _mm_cmpeq_epi8(c, rb)),
                                                _mm_or_si128(_mm_cmpeq_epi8(c, ls), _mm_cmpeq_epi8(c, rs))));
        int mask = _mm_movemask_epi8(hit);
        if (mask)
            return p + __builtin_ctz((unsigned)mask);
        p += 16;
    }
#endif
    while (p < end && !structural[*p])
        p++;
    return p;
}

static unsigned int
key_hash(const unsigned char *p, Py_ssize_t len)
{
    /* The first eight bytes and the length tell most keys apart; memcmp settles every hash match. */
    unsigned long long head = 0;
    if (len >= 8)
        memcpy(&head, p, 8); /* a constant size compiles to one load */
    else
        for (Py_ssize_t i = 0; i < len; i++)
            head |= (unsigned long long)p[i] << (8 * i);
    head ^= (unsigned long long)len * 0x9E3779B97F4A7C15ull;
    return (unsigned int)(head ^ (head >> 29) ^ (head >> 47));
}

static int
scan(const unsigned char *data, Py_ssize_t size)
{
    const unsigned char *p = data, *end = data + size;
    Frame frames[MAX_DEPTH];
    Key keys[MAX_KEYS];
    int depth = 0, nkeys = 0;

    for (;;) {
        p = find_structural(p, end); /* whitespace, digits, literals, colons: nothing to track */
        if (p >= end)
            break;
        unsigned char c = *p;
        if (c == '"') {
            const unsigned char *start = ++p;
            const unsigned char *last_escape = NULL; /* the escape ending the content, if any */
            if (p < end) {
                if (*p == '\\') {
                    if (escape_is_space(p, end) != 0)
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
                p = find_string_stop(p, end);
                if (p >= end)
                    return 0; /* unterminated string */
                if (*p == '"')
                    break;
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
            if (depth > 0 && frames[depth - 1].expect_key) {
                Frame *frame = &frames[depth - 1];
                Py_ssize_t len = q - start;
                if (last_escape != NULL || nkeys >= MAX_KEYS)
                    return 0; /* escaped spellings could alias: let the exact check decide */
                unsigned int hash = key_hash(start, len);
                unsigned long long bit = 1ull << (hash & 63);
                if (frame->seen & bit) /* a possible repeat: compare with the object's earlier keys */
                    for (int i = frame->first_key; i < nkeys; i++)
                        if (keys[i].hash == hash && keys[i].len == len &&
                            memcmp(keys[i].ptr, start, (size_t)len) == 0)
                            return 0;
                frame->seen |= bit;
                keys[nkeys].ptr = start;
                keys[nkeys].len = len;
                keys[nkeys].hash = hash;
                nkeys++;
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
            frames[depth].expect_key = (c == '{'); /* arrays never expect keys */
            frames[depth].is_object = (c == '{');
            frames[depth].first_key = nkeys;
            frames[depth].seen = 0;
            depth++;
            break;
        case '}':
        case ']':
            if (depth == 0)
                return 0;
            depth--;
            nkeys = frames[depth].first_key; /* the object's keys are done with */
            break;
        default: /* ',' */
            if (depth > 0 && frames[depth - 1].is_object)
                frames[depth - 1].expect_key = 1;
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
        /* Any other bytes-like object, such as a msgspec.Raw slice of a larger document. */
        Py_buffer view;
        if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) != 0)
            return NULL;
        int result = scan((const unsigned char *)view.buf, view.len);
        PyBuffer_Release(&view);
        return PyBool_FromLong(result);
    }
    return PyBool_FromLong(scan((const unsigned char *)data, size));
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
    {"clean", clean, METH_O,
     "True when no JSON string starts or ends with whitespace and no object repeats a key (conservative)."},
    {"span_end", (PyCFunction)(void (*)(void))span_end, METH_FASTCALL,
     "Index after the bracket closing the one at text[start], or -1 when the text ends first."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_scan", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__scan(void)
{
    init_tables();
    return PyModule_Create(&module);
}
