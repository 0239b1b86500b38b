/* itemwise(bound, fields, envelope, items_of, decode, scan, data, repeats, max_depth) -> (top, items, outside) |
 * None: the itemwise reader's work between reading the versions and judging the top level, in one call (part of
 * the _place extension). itemwise._python_read is the reference; this makes the same calls in the same order, so
 * the same top, findings, `repeats` and exceptions.
 *
 * bound = (plain, failing, encode, outside_of, errors, unset), fixed per process (itemwise._BOUND). top is a dict
 * of name: getter(envelope) for each (name, getter) pair of the list `fields` whose value is not `unset`. Then the
 * findings raws = items_of(envelope), a list (msgspec decodes the envelope's findings as one). For each raw, in
 * order: clean is True when `scan` is None (the whole text scanned clean), else scan(raw). A clean finding is
 * decoded with decode(raw) and the result appended to the items; when the decoder raises one of `errors`
 * (typed.DECODE_ERRORS) that exception is dropped and the finding fails, as does one that is not clean. A failing
 * finding's value is plain(raw); then failing(items, raw, value, clean, index, repeats, max_depth) appends it
 * (noting a repeated key in `repeats`) and answers whether the reader goes on (no: the call returns None). What
 * failing would only append, it appends here: a finding with too few brackets to nest beyond max_depth that is
 * clean, or whose bytes hold no escaped colon-like sequence and as many colons as encode(value). After the loop,
 * outside is -1 when scan is None, else outside_of(data, raws): the colons of the text outside the findings (-1
 * when it holds an escaped "\u003"), counted here when `data` is bytes. Any other exception of a call made here
 * propagates.
 */
#include "_place.h"
#ifdef __SSE2__
#include <emmintrin.h>
#endif

enum { PLAIN, FAILING, ENCODE, OUTSIDE_OF, ERRORS, UNSET, NBOUND };

/* What failing's tests read of a finding's bytes. */
typedef struct {
    Py_ssize_t brackets, colons;
} Tally;

/* Bytes of at[0..len) equal to a, and (when b != a) to b. */
static Py_ssize_t
count2(const unsigned char *at, Py_ssize_t len, unsigned char a, unsigned char b)
{
    Py_ssize_t count = 0, i = 0;
#ifdef __SSE2__
    const __m128i va = _mm_set1_epi8((char)a), vb = _mm_set1_epi8((char)b), zero = _mm_setzero_si128();
    while (len - i >= 16) {
        /* per-lane counts in bytes (at most 255 blocks at a time), summed with one SAD */
        __m128i acc = zero;
        Py_ssize_t blocks = (len - i) / 16;
        if (blocks > 255)
            blocks = 255;
        for (Py_ssize_t k = 0; k < blocks; k++, i += 16) {
            __m128i block = _mm_loadu_si128((const __m128i *)(at + i));
            __m128i hit = _mm_cmpeq_epi8(block, va);
            if (b != a)
                hit = _mm_or_si128(hit, _mm_cmpeq_epi8(block, vb));
            acc = _mm_sub_epi8(acc, hit);
        }
        __m128i sums = _mm_sad_epu8(acc, zero);
        count += _mm_cvtsi128_si32(sums) + _mm_cvtsi128_si32(_mm_srli_si128(sums, 8));
    }
#endif
    for (; i < len; i++)
        count += (at[i] == a) | (at[i] == b);
    return count;
}

/* The bytes hold an escaped "\u003" (what the Python tests look for with `b"\\u003" in text`). */
static int
escaped_colon_like(const unsigned char *at, Py_ssize_t len)
{
    const unsigned char *end = at + len, *hit;
    while (end - at >= 5 && (hit = memchr(at, '\\', (size_t)(end - at - 4))) != NULL) {
        if (memcmp(hit + 1, "u003", 4) == 0)
            return 1;
        at = hit + 1;
    }
    return 0;
}

static PyObject *
call1(PyObject *callable, PyObject *arg)
{
    return PyObject_Vectorcall(callable, &arg, 1, NULL);
}

/* failing's answer for the finding at `index` with its plain value: 1 go on, 0 give up, -1 error. */
static int
ask_failing(PyObject *const *bound, PyObject *const *call, PyObject *value, PyObject *clean, Py_ssize_t index)
{
    PyObject *position = PyLong_FromSsize_t(index);
    if (position == NULL)
        return -1;
    /* call = (items, raw, repeats, max_depth) */
    PyObject *args[7] = {call[0], call[1], value, clean, position, call[2], call[3]};
    PyObject *kept = PyObject_Vectorcall(bound[FAILING], args, 7, NULL);
    Py_DECREF(position);
    if (kept == NULL)
        return -1;
    int go = PyObject_IsTrue(kept);
    Py_DECREF(kept);
    return go;
}

/* Colons in encode(value): -1 with an error set (also when it is not bytes: then failing says what it does). */
static Py_ssize_t
encoded_colons(PyObject *encode, PyObject *value)
{
    PyObject *encoded = call1(encode, value);
    if (encoded == NULL)
        return -1;
    Py_ssize_t colons = -2; /* not bytes: let failing decide */
    if (PyBytes_CheckExact(encoded))
        colons = count2((const unsigned char *)PyBytes_AS_STRING(encoded), PyBytes_GET_SIZE(encoded), ':', ':');
    Py_DECREF(encoded);
    return colons;
}

/* A failing finding: 1 go on, 0 give up, -1 error. `shallow`: fewer brackets than this cannot nest too deeply
 * (-1: unknown). call = (items, raw, repeats, max_depth). */
static int
failed(PyObject *const *bound, PyObject *const *call, PyObject *clean, int is_clean, Py_ssize_t index,
       Py_ssize_t shallow)
{
    PyObject *raw = call[1], *value = call1(bound[PLAIN], raw);
    if (value == NULL)
        return -1;
    int go = -2; /* -2: failing decides */
    Py_buffer view;
    if (shallow >= 0 && PyObject_GetBuffer(raw, &view, PyBUF_SIMPLE) == 0) {
        const unsigned char *at = view.buf;
        if (count2(at, view.len, '{', '[') < shallow) {
            if (is_clean)
                go = 1;
            else if (!escaped_colon_like(at, view.len)) {
                Py_ssize_t colons = count2(at, view.len, ':', ':');
                Py_ssize_t encoded = encoded_colons(bound[ENCODE], value);
                if (encoded == -1)
                    go = -1;
                else if (encoded == colons)
                    go = 1;
            }
        }
        PyBuffer_Release(&view);
    }
    else if (shallow >= 0)
        PyErr_Clear(); /* no buffer: failing reads it its own way */
    if (go == 1)
        go = PyList_Append(call[0], value) < 0 ? -1 : 1;
    else if (go == -2)
        go = ask_failing(bound, call, value, clean, index);
    Py_DECREF(value);
    return go;
}

/* outside_of(data, raws), counted here when data is bytes and every raw has a buffer. */
static PyObject *
outside(PyObject *const *bound, PyObject *data, PyObject *raws)
{
    if (!PyBytes_CheckExact(data)) {
        PyObject *args[2] = {data, raws};
        return PyObject_Vectorcall(bound[OUTSIDE_OF], args, 2, NULL);
    }
    const unsigned char *at = (const unsigned char *)PyBytes_AS_STRING(data);
    Py_ssize_t len = PyBytes_GET_SIZE(data);
    if (escaped_colon_like(at, len))
        return PyLong_FromLong(-1);
    Py_ssize_t colons = count2(at, len, ':', ':');
    for (Py_ssize_t index = 0; index < PyList_GET_SIZE(raws); index++) {
        Py_buffer view;
        if (PyObject_GetBuffer(PyList_GET_ITEM(raws, index), &view, PyBUF_SIMPLE) < 0) {
            PyErr_Clear(); /* no buffer: outside_of reads them its own way */
            PyObject *args[2] = {data, raws};
            return PyObject_Vectorcall(bound[OUTSIDE_OF], args, 2, NULL);
        }
        colons -= count2(view.buf, view.len, ':', ':');
        PyBuffer_Release(&view);
    }
    return PyLong_FromSsize_t(colons);
}

/* The set top-level fields: {name: getter(envelope)} without the unset ones; NULL with an error set. */
static PyObject *
top_of(PyObject *fields, PyObject *envelope, PyObject *unset)
{
    PyObject *top = PyDict_New();
    if (top == NULL)
        return NULL;
    for (Py_ssize_t index = 0; index < PyList_GET_SIZE(fields); index++) {
        PyObject *pair = PyList_GET_ITEM(fields, index);
        if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_SetString(PyExc_TypeError, "itemwise: fields must be (name, getter) pairs");
            goto error;
        }
        PyObject *value = call1(PyTuple_GET_ITEM(pair, 1), envelope);
        if (value == NULL)
            goto error;
        int stored = value == unset ? 0 : PyDict_SetItem(top, PyTuple_GET_ITEM(pair, 0), value);
        Py_DECREF(value);
        if (stored < 0)
            goto error;
    }
    return top;
error:
    Py_DECREF(top);
    return NULL;
}

/* The findings, typed or plain, and outside (see the top); NULL with an error set, None to give up. */
static PyObject *
read_items(PyObject *const *bound, PyObject *decode, PyObject *scan, PyObject *raws, PyObject *const *rest)
{
    /* rest = (data, repeats, max_depth). failing's depth test is brackets + 2 > max_depth: never true below
     * max_depth - 1 brackets. */
    Py_ssize_t shallow = -1;
    if (PyLong_CheckExact(rest[2])) {
        int overflow;
        long long depth = PyLong_AsLongLongAndOverflow(rest[2], &overflow);
        if (depth == -1 && PyErr_Occurred())
            return NULL;
        if (!overflow && depth >= 1 && depth <= PY_SSIZE_T_MAX / 2)
            shallow = (Py_ssize_t)depth - 1;
    }
    PyObject *items = PyList_New(0), *raw, *clean;
    if (items == NULL)
        return NULL;
    /* the size is read again each time: a callback could (absurdly) change the list, as it could under enumerate */
    for (Py_ssize_t index = 0; index < PyList_GET_SIZE(raws); index++) {
        raw = Py_NewRef(PyList_GET_ITEM(raws, index));
        clean = scan == Py_None ? Py_NewRef(Py_True) : call1(scan, raw);
        if (clean == NULL)
            goto error_raw;
        int is_clean = clean == Py_True ? 1 : PyObject_IsTrue(clean);
        if (is_clean < 0)
            goto error_clean;
        if (is_clean) {
            PyObject *item = call1(decode, raw);
            if (item != NULL) {
                int appended = PyList_Append(items, item);
                Py_DECREF(item);
                Py_DECREF(clean);
                Py_DECREF(raw);
                if (appended < 0)
                    goto error;
                continue;
            }
            if (!PyErr_ExceptionMatches(bound[ERRORS]))
                goto error_clean;
            PyErr_Clear();
        }
        PyObject *call[4] = {items, raw, rest[1], rest[2]};
        int go = failed(bound, call, clean, is_clean, index, shallow);
        Py_DECREF(clean);
        Py_DECREF(raw);
        if (go < 0)
            goto error;
        if (!go) {
            Py_DECREF(items);
            Py_RETURN_NONE;
        }
    }
    PyObject *colons = scan == Py_None ? PyLong_FromLong(-1) : outside(bound, rest[0], raws);
    if (colons == NULL)
        goto error;
    PyObject *read = PyTuple_Pack(2, items, colons);
    Py_DECREF(colons);
    Py_DECREF(items);
    return read;

error_clean:
    Py_DECREF(clean);
error_raw:
    Py_DECREF(raw);
error:
    Py_DECREF(items);
    return NULL;
}

PyObject *
itemwise_items(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 9 || !PyTuple_CheckExact(args[0]) || PyTuple_GET_SIZE(args[0]) != NBOUND ||
        !PyTuple_Check(PyTuple_GET_ITEM(args[0], ERRORS)) || !PyList_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "itemwise(bound, fields: list, envelope, items_of, decode, scan, data, "
                                         "repeats, max_depth)");
        return NULL;
    }
    PyObject *const *bound = &PyTuple_GET_ITEM(args[0], 0);
    PyObject *top = top_of(args[1], args[2], bound[UNSET]);
    if (top == NULL)
        return NULL;
    PyObject *raws = call1(args[3], args[2]);
    if (raws == NULL)
        goto error;
    if (!PyList_CheckExact(raws)) {
        PyErr_SetString(PyExc_TypeError, "itemwise: items_of must give a list");
        Py_DECREF(raws);
        goto error;
    }
    PyObject *read = read_items(bound, args[4], args[5], raws, args + 6);
    Py_DECREF(raws);
    if (read == NULL || read == Py_None) {
        Py_DECREF(top);
        return read;
    }
    PyObject *answer = PyTuple_Pack(3, top, PyTuple_GET_ITEM(read, 0), PyTuple_GET_ITEM(read, 1));
    Py_DECREF(read);
    Py_DECREF(top);
    return answer;
error:
    Py_DECREF(top);
    return NULL;
}
