/* Optional speedup for the parser's fast path (promptops/parsing/scan.py holds the reference version).
 *
 * clean(data) -> bool: True only when, in the JSON text `data`, no string (key or value) starts or ends with
 * a character Python's str.strip() would remove, and no object repeats a key. It is a conservative gate:
 * False means "let the diagnostic path look", never "invalid", so anything unusual (escaped keys, very deep
 * or very wide objects, malformed text) answers False. One pass, no allocation.
 * members(data) -> int: the same edge checks, without the key bookkeeping: the number of colons outside strings
 * (the typed fast path compares it with the members it decoded), or -1 (_scan_count.c).
 * The string-edge helpers both share are in _scan.h.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "_scan.h"

#define MAX_DEPTH 256
#define MAX_KEYS 128

typedef struct {
    const unsigned char *ptr;
    Py_ssize_t len;
    unsigned int hash;
} Key;

typedef struct {
    int is_object;
    int first_key;           /* index of the frame's first key in the shared key stack */
    unsigned long long seen; /* one bit per key hash: most objects never need a key comparison */
} Frame;

/* Masks of one 64-byte block: bit i stands for base[i]. */
typedef struct {
    unsigned long long quote, backslash, bracket;
    unsigned long long colon, low; /* low: bytes <= 0x20 or >= 0x80 (as signed chars, below 0x21) */
} Block;

static void
load_block(Block *b, const unsigned char *base, const unsigned char *end)
{
    unsigned char padded[64];
    const unsigned char *src = base;
    if (end - base < 64) {
        memset(padded, 0, sizeof padded); /* NUL is in none of the sets */
        memcpy(padded, base, (size_t)(end - base));
        src = padded;
    }
    unsigned long long quote = 0, backslash = 0, bracket = 0, colon = 0, low = 0;
#ifdef __SSE2__
    const __m128i dq = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\'), fold = _mm_set1_epi8(0x20);
    const __m128i open = _mm_set1_epi8('{'), close = _mm_set1_epi8('}');
    const __m128i co = _mm_set1_epi8(':'), above_space = _mm_set1_epi8(0x21);
    for (int i = 0; i < 4; i++) {
        __m128i c = _mm_loadu_si128((const __m128i *)(src + 16 * i));
        /* '[' and ']' differ from '{' and '}' only in bit 0x20, and no other byte folds onto those two */
        __m128i folded = _mm_or_si128(c, fold);
        __m128i br = _mm_or_si128(_mm_cmpeq_epi8(folded, open), _mm_cmpeq_epi8(folded, close));
        quote |= (unsigned long long)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(c, dq)) << (16 * i);
        backslash |= (unsigned long long)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(c, bs)) << (16 * i);
        bracket |= (unsigned long long)(unsigned)_mm_movemask_epi8(br) << (16 * i);
        colon |= (unsigned long long)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(c, co)) << (16 * i);
        low |= (unsigned long long)(unsigned)_mm_movemask_epi8(_mm_cmplt_epi8(c, above_space)) << (16 * i);
    }
#else
    for (int i = 0; i < 64; i++) {
        quote |= (unsigned long long)(src[i] == '"') << i;
        backslash |= (unsigned long long)(src[i] == '\\') << i;
        bracket |= (unsigned long long)(src[i] == '{' || src[i] == '}' || src[i] == '[' || src[i] == ']') << i;
        colon |= (unsigned long long)(src[i] == ':') << i;
        low |= (unsigned long long)(src[i] <= ' ' || src[i] >= 0x80) << i;
    }
#endif
    b->quote = quote;
    b->backslash = backslash;
    b->bracket = bracket;
    b->colon = colon;
    b->low = low;
}


static unsigned int
key_hash(const unsigned char *p, Py_ssize_t len, const unsigned char *end)
{
    /* The first eight bytes and the length tell most keys apart; memcmp settles every hash match. */
    unsigned long long head = 0;
    if (len >= 8)
        memcpy(&head, p, 8); /* a constant size compiles to one load */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    else if (end - p >= 8) { /* a short key is followed by its quote and colon: load and mask, same value */
        memcpy(&head, p, 8);
        head &= (1ull << (8 * len)) - 1;
    }
#endif
    else
        for (Py_ssize_t i = 0; i < len; i++)
            head |= (unsigned long long)p[i] << (8 * i);
    head ^= (unsigned long long)len * 0x9E3779B97F4A7C15ull;
    return (unsigned int)(head ^ (head >> 29) ^ (head >> 47));
}

/* After a key's closing quote at p (its content starts at `start`): 1 when the string is a key (a colon follows)
 * and no earlier key of the innermost object repeats it, 0 when it is no key, -1 to reject. */
static ALWAYS_INLINE int
note_key(const unsigned char *start, const unsigned char *p, const unsigned char *end, int escapes, Frame *frames,
         int depth, Key *keys, int *nkeys)
{
    const unsigned char *r = p + 1; /* a key is the string followed by a colon */
    if (r < end && *r != ':') {
        while (r < end && (*r == ' ' || *r == '\n' || *r == '\r' || *r == '\t'))
            r++;
    }
    if (r >= end || *r != ':')
        return 0;
    if (depth == 0 || !frames[depth - 1].is_object || escapes || *nkeys >= MAX_KEYS)
        return -1; /* escaped spellings could alias: let the exact check decide */
    Frame *frame = &frames[depth - 1];
    Py_ssize_t len = p - start;
    unsigned int hash = key_hash(start, len, end);
    unsigned long long bit = 1ull << (hash & 63);
    if (frame->seen & bit) /* a possible repeat: compare with the object's earlier keys */
        for (int i = frame->first_key; i < *nkeys; i++)
            if (keys[i].hash == hash && keys[i].len == len && memcmp(keys[i].ptr, start, (size_t)len) == 0)
                return -1;
    frame->seen |= bit;
    keys[*nkeys].ptr = start;
    keys[*nkeys].len = len;
    keys[*nkeys].hash = hash;
    (*nkeys)++;
    return 1;
}

/* An opening or closing bracket outside strings: 0 to reject. */
static ALWAYS_INLINE int
note_bracket(unsigned char c, Frame *frames, int *depth, int *nkeys)
{
    if (c == '{' || c == '[') {
        if (*depth >= MAX_DEPTH)
            return 0;
        frames[*depth].is_object = (c == '{');
        frames[*depth].first_key = *nkeys;
        frames[*depth].seen = 0;
        (*depth)++;
        return 1;
    }
    if (*depth == 0)
        return 0;
    (*depth)--;
    *nkeys = frames[*depth].first_key; /* the object's keys are done with */
    return 1;
}

/* One pass over 64-byte blocks: vector compares give the quotes, backslashes and brackets of a block as bit
 * masks, and a prefix XOR of the unescaped quotes tells which bytes sit inside strings. A block without
 * backslashes whose string edges are all printable ASCII (masks tell) visits only brackets and the closing
 * quotes that may end a key; any other block visits every quote and checks its edges one by one.
 * 1 accepts. (_scan_count.c holds the member-count twin of this loop, without keys and brackets.) */
static int
scan(const unsigned char *data, Py_ssize_t size)
{
    const unsigned char *end = data + size;
    Frame frames[MAX_DEPTH];
    Key keys[MAX_KEYS];
    int depth = 0, nkeys = 0;
    unsigned long long carry = 0;     /* the next block's first byte is escaped */
    unsigned long long inside = 0;    /* all ones when the previous block ended inside a string */
    const unsigned char *last_backslash = NULL; /* the last one in earlier blocks */
    const unsigned char *start = data;          /* content of the string being read */

    for (const unsigned char *base = data; base < end; base += 64) {
        Block block;
        load_block(&block, base, end);
        unsigned long long escaped = 0;
        int may_escape = block.backslash != 0 || last_backslash != NULL;
        /* Whether this block can take the quick route: nothing escaped in it, and no open string with an
         * escape carried into it (its end would need the escape walk). */
        int quick = !(block.backslash | carry) && !(inside && last_backslash != NULL && last_backslash >= start);
        if (block.backslash | carry)
            escaped = escaped_bits(block.backslash, &carry);
        unsigned long long quote = block.quote & ~escaped;
        unsigned long long in_string = prefix_xor(quote) ^ inside; /* opening quotes in, closing ones out */
        inside = (unsigned long long)((long long)in_string >> 63);
        unsigned long long opening = quote & in_string, closing = quote & ~in_string;
        if (quick) {
            /* Every string edge in the block must be plain: the byte after each opening quote and the byte
             * before each closing one (bytes across the block boundary are looked at directly). */
            unsigned long long rough = ((opening << 1) & block.low) | ((closing >> 1) & block.low);
            if (rough || ((opening >> 63) && base + 64 < end && !plain_edge(base[64])) ||
                ((closing & 1) && base > data && !plain_edge(base[-1])))
                quick = 0;
        }
        if (quick) {
            unsigned long long keyish = closing & ((block.colon >> 1) | (block.low >> 1) | (1ull << 63));
            unsigned long long events = keyish | (block.bracket & ~in_string);
            while (events) {
                int k = __builtin_ctzll(events);
                events &= events - 1;
                const unsigned char *p = base + k;
                if (*p == '"') {
                    unsigned long long before = opening & ((1ull << k) - 1);
                    const unsigned char *from = before ? base + (63 - __builtin_clzll(before)) + 1 : start;
                    if (note_key(from, p, end, 0, frames, depth, keys, &nkeys) < 0)
                        return 0;
                }
                else if (!note_bracket(*p, frames, &depth, &nkeys))
                    return 0;
            }
            if (opening)
                start = base + (63 - __builtin_clzll(opening)) + 1;
            continue;
        }
        unsigned long long events = quote | (block.bracket & ~in_string);
        while (events) {
            int k = __builtin_ctzll(events);
            events &= events - 1;
            const unsigned char *p = base + k;
            if (*p == '"') {
                if (in_string >> k & 1) { /* opening quote: check the first character */
                    start = p + 1;
                    if (opening_edge_bad(start, end))
                        return 0;
                    continue;
                }
                /* closing quote at p: the string's content is [start, p) */
                int escapes = 0;
                if (may_escape) {
                    unsigned long long before = block.backslash & ((1ull << k) - 1);
                    const unsigned char *backslash = before ? base + (63 - __builtin_clzll(before)) : last_backslash;
                    escapes = backslash != NULL && backslash >= start;
                }
                if (closing_edge_bad(start, p, escapes) || note_key(start, p, end, escapes, frames, depth, keys, &nkeys) < 0)
                    return 0;
                continue;
            }
            if (!note_bracket(*p, frames, &depth, &nkeys))
                return 0;
        }
        if (block.backslash)
            last_backslash = base + (63 - __builtin_clzll(block.backslash));
    }
    return depth == 0 && !inside;
}

/* `arg`'s UTF-8 text: 1 for bytes or a str; -1 for a str with no UTF-8 form (lone surrogates; the error is
 * cleared: not for the fast path); 0 for anything else. */
static int
text_of(PyObject *arg, const char **data, Py_ssize_t *size)
{
    if (PyBytes_Check(arg)) {
        *data = PyBytes_AS_STRING(arg);
        *size = PyBytes_GET_SIZE(arg);
        return 1;
    }
    if (!PyUnicode_Check(arg))
        return 0;
    if ((*data = PyUnicode_AsUTF8AndSize(arg, size)) != NULL)
        return 1;
    PyErr_Clear();
    return -1;
}

/* The member count (_scan_count.c): the build chosen for this CPU at import, and the portable one. */
extern Py_ssize_t (*scan_count)(const unsigned char *, Py_ssize_t);
Py_ssize_t scan_count_portable(const unsigned char *data, Py_ssize_t size);
int scan_count_choose(void);

static PyObject *
count_with(PyObject *arg, Py_ssize_t (*count)(const unsigned char *, Py_ssize_t))
{
    const char *data;
    Py_ssize_t size;
    int text = text_of(arg, &data, &size);
    if (text == 0) {
        PyErr_SetString(PyExc_TypeError, "members(data: bytes | str)");
        return NULL;
    }
    return PyLong_FromSsize_t(text < 0 ? -1 : count((const unsigned char *)data, size));
}

/* members(data) -> int: the number of colons outside strings in the JSON text `data` (one per object member
 * when `data` is valid JSON), or -1 when some string starts or ends with whitespace (as for `clean`). */
static PyObject *
members(PyObject *module, PyObject *arg)
{
    return count_with(arg, scan_count);
}

/* members_portable(data) -> int: members without the CPU-specific build, for the tests that compare them. */
static PyObject *
members_portable(PyObject *module, PyObject *arg)
{
    return count_with(arg, scan_count_portable);
}

static PyObject *
clean(PyObject *module, PyObject *arg)
{
    const char *data;
    Py_ssize_t size;
    int text = text_of(arg, &data, &size);
    if (text < 0)
        Py_RETURN_FALSE;
    if (text == 0) {
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

static PyMethodDef methods[] = {
    {"members", members, METH_O, "Colons outside strings, or -1 when a string has whitespace at an edge."},
    {"members_portable", members_portable, METH_O, "members, never with the CPU-specific build."},
    {"clean", clean, METH_O,
     "True when no JSON string starts or ends with whitespace and no object repeats a key (conservative)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_scan", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__scan(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    /* members_build: which build members() runs on this CPU ("avx2" or "portable") */
    if (PyModule_AddStringConstant(m, "members_build", scan_count_choose() ? "avx2" : "portable") < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
